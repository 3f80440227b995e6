//! The subcommands and their arguments; a run's options are in `options`.
#![expect(
    clippy::doc_markdown,
    reason = "doc comments here are --help text for users, not rustdoc"
)]

use std::path::PathBuf;

use clap::{Subcommand, ValueEnum};
use clap_complete::engine::{ArgValueCandidates, ArgValueCompleter};

use super::RunOptions;

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a task file (JSONL, one task per line).
    ///
    /// The task file holds one JSON object a line (`man swarm-tasks` describes every field). It
    /// is checked whole before anything runs: every problem is reported at once with its line
    /// number, and swarm exits 2.
    Run {
        /// The task file.
        #[arg(value_name = "TASKS.jsonl")]
        tasks: PathBuf,
        #[command(flatten)]
        options: RunOptions,
    },
    /// Continue an interrupted run (the newest unfinished one by default).
    ///
    /// A run keeps the settings it started with; options given to resume replace them. Tasks
    /// that finished are not run again and merges already recorded are not repeated; attempts
    /// cut short are run again (a Claude or Codex attempt continues its session unless
    /// --fresh-retries); a landing cut short is finished.
    Resume {
        /// The run id.
        #[arg(add = ArgValueCandidates::new(crate::complete::unfinished_run_ids))]
        run: Option<String>,
        /// A goal stopped while it was planned is planned again, and on a terminal its plan
        /// shown and asked about as for `swarm --goal`: run it without asking.
        #[arg(short, long)]
        yes: bool,
        #[command(flatten)]
        options: RunOptions,
    },
    /// Run a parked or failed writer again, on the current tip.
    ///
    /// In a run that has not finished, the task goes back to pending and starts afresh on the
    /// run's integration tip, its earlier branch kept as swarm/<run>-<task>@<n>, and the run is
    /// resumed. In a run that ended, a new run of that one task starts from your HEAD. A reader,
    /// a task that is done, skipped or has not ended, or an unknown task is refused (exit 2).
    Retry {
        /// The task id: a writer of the run that was parked or failed.
        #[arg(add = ArgValueCandidates::new(crate::complete::retryable_tasks))]
        task: String,
        /// The run the task belongs to [default: the newest run].
        #[arg(long, value_name = "RUN", add = ArgValueCandidates::new(crate::complete::run_ids))]
        run: Option<String>,
        #[command(flatten)]
        options: RunOptions,
    },
    /// Send a message to a task while it runs: steer it without stopping the run.
    ///
    /// The built-in agent reads the message before its next request to the model, as the next
    /// thing the person said; every other agent finds it first in the prompt of the task's next
    /// attempt (a retry, a continued session after a pause or a resume), and an agent of your
    /// own can read it from the directory $SWARM_STEER names while it runs. Recorded in the
    /// run's log (`swarm logs`) and the attempt's transcript. A task that has ended, one that
    /// runs a command (no agent reads a message), or an unknown task is refused (exit 2).
    Steer {
        /// The task id, of a task that is running or has yet to run.
        #[arg(add = ArgValueCandidates::new(crate::complete::steerable_tasks))]
        task: String,
        /// What to tell the task's agent.
        message: String,
        /// The run the task belongs to [default: the newest run].
        #[arg(long, value_name = "RUN", add = ArgValueCandidates::new(crate::complete::run_ids))]
        run: Option<String>,
    },
    /// Drop an unfinished run (the newest by default), keeping the work no other branch has.
    ///
    /// For a start that failed (a refused key, a model endpoint that did not answer, Ctrl-C
    /// while planning) or a run given up on, so that `swarm resume` no longer picks it: it stops
    /// what the run's tasks left running, removes its checkouts and records, and deletes each of
    /// its branches whose commits are held elsewhere; a branch with work nowhere else is kept and
    /// named. At a terminal it lists what it will do and asks first; off a terminal it needs
    /// --yes.
    Drop {
        /// The run id [default: the newest unfinished run].
        #[arg(add = ArgValueCandidates::new(crate::complete::unfinished_run_ids))]
        run: Option<String>,
        /// Drop it without asking (needed off a terminal).
        #[arg(short, long)]
        yes: bool,
    },
    /// List the runs of this repository, newest first.
    ///
    /// One line per run: its id, when it started (local time), its status (running; stopped,
    /// when its process is gone and `swarm resume` continues it; interrupted; finished), its
    /// exit code, how long it took (so far, for a running one), its number of tasks, why it
    /// stands where it stands (interrupted, the model endpoint refused the key, the model
    /// endpoint did not answer, planned only, plan declined, done, …) and what it ran (a task
    /// file, a goal's text, several goals, the queue).
    Runs,
    /// Show one task of a run: its spec, status, attempts, result, changed files and transcript.
    ///
    /// The task's spec (id, title, lane, mode, deps, files, its prompt or command), its status
    /// (and why, for one that failed, was parked or was skipped), each attempt (its start, how
    /// long it took, how it ended and why; an attempt that continued an earlier attempt's agent
    /// session is marked), the task's result, for a writer its branch and the files it changed
    /// against the commit it started from, and the last 20 lines of its newest transcript
    /// (secrets hidden).
    Show {
        /// The task id.
        task: String,
        /// The run the task belongs to [default: the newest run].
        #[arg(long, value_name = "RUN", add = ArgValueCandidates::new(crate::complete::run_ids))]
        run: Option<String>,
    },
    /// Show the tasks of a run (the newest by default).
    ///
    /// The run (its status, exit code, how long it took, its base commit and what it ran), its
    /// goals, and one line per task: its status, id, attempts, how long it took (so far, for a
    /// running one), its title and why it failed, was parked or skipped; then the number of
    /// tasks in each status.
    Status {
        /// The run id.
        #[arg(add = ArgValueCandidates::new(crate::complete::run_ids))]
        run: Option<String>,
    },
    /// Show a run's event log (the newest run by default).
    ///
    /// Each event is a line: its time (UTC), its kind, its task and its details. --errors keeps
    /// the failures and errors and adds the transcripts of the failed attempts; --follow keeps
    /// printing until the run is no longer running.
    Logs {
        /// The run id.
        #[arg(add = ArgValueCandidates::new(crate::complete::run_ids))]
        run: Option<String>,
        /// Only failures and errors, with their transcript paths (when there are none, a line
        /// on stderr says so).
        #[arg(long)]
        errors: bool,
        /// Only the last N events.
        #[arg(long, value_name = "N")]
        tail: Option<usize>,
        /// Keep printing new events until the run ends.
        #[arg(long)]
        follow: bool,
        /// Print the paths of the event log and transcripts instead of their contents.
        #[arg(long)]
        path: bool,
    },
    /// Print a run's or a task file's DAG (as Mermaid, DOT, or a picture in SVG or HTML).
    ///
    /// For a run, each task is coloured by its status. A task file is checked first, as `swarm
    /// run` would. The pictures are drawn by swarm itself and need neither a browser nor
    /// Graphviz to make.
    Graph {
        /// A run id or a task file (the newest run by default).
        #[arg(add = ArgValueCompleter::new(crate::complete::run_ids_and_files))]
        source: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = GraphFormat::Mermaid, conflicts_with = "json")]
        format: GraphFormat,
    },
    /// Show the effective settings and where each came from, and the agent profiles.
    ///
    /// Settings come from, highest first: flags, SWARM_* variables, .swarm.toml at the top of
    /// the repository, the user's config file, the defaults. A resumed run keeps the settings it
    /// started with.
    Config {
        #[command(flatten)]
        options: RunOptions,
    },
    /// A durable queue of goals in the repository's board, drained as one multi-goal run.
    ///
    /// The queue lives in the board (.git/swarm/board.db), so it survives restarts and is shared
    /// by everyone using the clone. add, list and rm take no lock and work while a run is going.
    Queue {
        #[command(subcommand)]
        action: QueueAction,
    },
    /// The repository's memory of past goals, which planners are given.
    ///
    /// When a goal's run finishes, swarm keeps what it came to: the goal, its plan's skeleton
    /// (each task's id, lane, mode, files and first words), what became of each task and why,
    /// and what it cost, with secrets hidden. When a later goal shares at least two words with
    /// a past one, the planner is given the three most alike, as data. Memory lives in the
    /// board (.git/swarm/board.db) and never leaves it; --no-memory or SWARM_RECALL=0 turns it
    /// off for a run.
    Memory {
        #[command(subcommand)]
        action: MemoryAction,
    },
    /// Open the interactive interface (as `swarm` with no arguments does at a terminal).
    ///
    /// The runs of this repository, the selected run's goals and tasks as a tree with their
    /// status, the selected task's facts and transcript (following it as it grows), and a
    /// composer: a plain message is a goal, planned and shown with the question `--goal` asks
    /// ([Y/n/e]), then run; /goal TEXT queues a goal, /run runs the queue, /stop stops the
    /// selected run as Ctrl-C does, /resume and /retry TASK continue it, /help lists the keys,
    /// /quit leaves (the runs started here go on; `/quit stop` stops them first). Each run it
    /// starts is a swarm of its own in the background, its output in .git/swarm/tui/; a run
    /// started elsewhere is shown the same way.
    Tui,
    /// Remove the checkouts of finished tasks and the deps' files killed runs left behind; a branch
    /// with unmerged commits is never deleted.
    ///
    /// It takes the repository's lock, so it never runs during a run. A branch is deleted only
    /// when swarm made it (a name a run in the board gives: swarm/<run>, swarm/<run>-<task>, …)
    /// and another branch holds all of its commits; a branch of yours under swarm/ is listed as
    /// not swarm's and kept.
    Gc {
        /// List what would be removed, remove nothing.
        #[arg(long)]
        dry_run: bool,
        /// Also delete the refs that runs spread over machines left on this git remote (a
        /// name or a URL): those of every run that ended (the results of its failed and parked
        /// tasks). A run that has not ended keeps them.
        #[arg(long, value_name = "NAME|URL")]
        remote: Option<String>,
    },
    /// Serve a live page of a run (the newest by default) on this machine.
    ///
    /// The page shows the DAG coloured by status, counts and elapsed time, a timeline of the
    /// attempts, merges and parked writers, and each task's spec, attempts, result, changed files
    /// and transcript tail on a click; a running run's page follows it live. swarm web prints
    /// the page's URL on stdout, which holds an unguessable token, and serves the page until
    /// Ctrl-C.
    Web {
        /// The run id.
        #[arg(add = ArgValueCandidates::new(crate::complete::run_ids))]
        run: Option<String>,
        /// The address to listen on. Anything but 127.0.0.1 (or ::1) lets other machines reach
        /// the page: the token is then all that keeps them out, and it goes over the network
        /// unencrypted. The page answers requests for this address as given (a name or an IP
        /// address; any IP address when it is 0.0.0.0 or ::), besides 127.0.0.1, localhost and
        /// [::1].
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
        bind: String,
        /// The port to listen on; 0 takes a free one.
        #[arg(long, value_name = "PORT", default_value_t = 0)]
        port: u16,
    },
    /// Run the tasks of a run spread over machines (`swarm run … --remote`) on this machine.
    ///
    /// It claims published attempts, runs each as a local run would and pushes the results,
    /// until the run has no work left for it. Run it in a clone of the repository, with the
    /// agents' credentials in the environment (and, for a signed run, the coordinator's
    /// SWARM_REMOTE_KEY).
    Worker {
        /// The git remote the run is published on: a remote's name or a URL.
        #[arg(long, value_name = "NAME|URL")]
        remote: String,
        /// The run to work on [default: the newest one on the remote].
        #[arg(long, value_name = "RUN")]
        run: Option<String>,
        /// Run at most N tasks at once [default: 4].
        #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
        jobs: Option<u32>,
        /// Wait at most this long for a run to appear on the remote, e.g. 10m.
        #[arg(long, value_name = "DURATION", default_value = "10m")]
        wait: String,
        /// A lease this worker does not renew for this long is taken back by the coordinator
        /// and its attempt given to another worker, e.g. 60s; it is renewed every third of it.
        #[arg(long, value_name = "DURATION", default_value = "60s")]
        lease: String,
    },
    /// Print a shell completion script.
    ///
    /// The script asks swarm itself on each TAB, so completions know what only the repository
    /// knows: run ids, the tasks that can be retried, agents and profiles, queued goals.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the CI configuration that spreads one run over CI runners, coordinated through the
    /// git remote.
    ///
    /// A GitHub Actions workflow, a GitLab CI file or Kubernetes Jobs: a coordinator job runs
    /// `swarm --goal "…" --remote NAME` (or `swarm run PLAN --remote NAME` with --plan), merges
    /// what the workers push and pushes the run's branch swarm/<run> with its report; N worker
    /// jobs run `swarm worker --remote NAME`. The file starts with a comment naming the command
    /// that made it and what to set up.
    Ci {
        /// Where the runners are: github (a workflow for .github/workflows/), gitlab (a
        /// .gitlab-ci.yml) or k8s (a Job and an Indexed Job for `kubectl create -f`).
        #[arg(value_enum)]
        target: CiTarget,
        /// How many workers run the tasks, 1 to 256 (GitLab: 200) [default: 3].
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
        workers: Option<u16>,
        /// Write the file to PATH (its directories are made) instead of printing it; an
        /// existing file is kept unless --force.
        #[arg(long, value_name = "PATH")]
        out: Option<PathBuf>,
        /// Replace the file --out names.
        #[arg(long, requires = "out")]
        force: bool,
        /// Run this task file (a path in the repository) instead of asking for a goal when the
        /// run is started.
        #[arg(long, value_name = "PATH")]
        plan: Option<String>,
        /// How each runner gets swarm, a shell command [default: `cargo install --locked --git
        /// "$SWARM_CI_SOURCE" swarm`: built from swarm's source, whose git URL the CI variable
        /// SWARM_CI_SOURCE holds].
        #[arg(long, value_name = "CMD")]
        install: Option<String>,
        /// The git remote the run is coordinated through and its branches pushed to: a name or
        /// a URL; for github and gitlab, whose checkouts have one remote, origin or a URL
        /// [default: origin].
        #[arg(long, value_name = "NAME|URL")]
        remote: Option<String>,
    },
}

/// Where `swarm ci`'s runners are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CiTarget {
    /// GitHub Actions.
    Github,
    /// GitLab CI.
    Gitlab,
    /// Kubernetes.
    K8s,
}

#[derive(Debug, Subcommand)]
pub enum QueueAction {
    /// Add a goal to the queue (the words are joined with spaces) and print its number.
    Add {
        #[arg(required = true, value_name = "TEXT")]
        text: Vec<String>,
    },
    /// List the goals waiting in the queue and those a run has taken and not finished.
    ///
    /// A goal leaves the queue when the run that took it finishes.
    List,
    /// Remove a goal that no run has taken yet.
    Rm {
        /// The goal's number, as `swarm queue list` shows it.
        #[arg(add = ArgValueCandidates::new(crate::complete::queued_goals))]
        id: i64,
    },
    /// Run every queued goal as one multi-goal run; goals added while it runs join it (and
    /// the dependency pass) before it ends.
    Run {
        #[command(flatten)]
        options: Box<RunOptions>,
    },
}

#[derive(Debug, Subcommand)]
pub enum MemoryAction {
    /// List what memory keeps, newest first: each past goal's number, run, goal id and text,
    /// then each lesson's number, how many runs taught it, its files and what it says.
    List,
    /// Show one past goal as a planner is given it (its plan, its outcome, its cost), or one
    /// lesson.
    Show {
        /// A past goal's number, or a lesson's (`L` and its number), as `swarm memory list`
        /// shows them.
        id: String,
    },
    /// Curate the lessons now, as a run's end does once there are more than 100: two lessons
    /// about a file in common that say mostly the same are merged into the newer, and a lesson
    /// no planner or agent was given in the 20 runs kept since it was last taught is retired.
    Curate,
    /// Forget one past goal or lesson, or all of memory.
    Forget {
        /// A past goal's number, or a lesson's (`L` and its number), as `swarm memory list`
        /// shows them.
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        id: Option<String>,
        /// Forget every past goal and every lesson.
        #[arg(long)]
        all: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GraphFormat {
    /// A Mermaid flowchart.
    Mermaid,
    /// Graphviz DOT.
    Dot,
    /// A picture, drawn by swarm itself: left to right by dependency level, coloured by status
    /// for a run, the critical path heavier.
    Svg,
    /// The SVG in an HTML page of its own.
    Html,
}
