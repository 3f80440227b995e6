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
    #[command(long_about = concat!(
        "Run a task file (JSONL, one task per line).\n\n",
        summary_json!()
    ))]
    Run {
        /// The task file.
        #[arg(value_name = "TASKS.jsonl")]
        tasks: PathBuf,
        #[command(flatten)]
        options: RunOptions,
    },
    /// Continue an interrupted run (the newest unfinished one by default).
    #[command(long_about = concat!(
        "Continue an interrupted run (the newest unfinished one by default).\n\n",
        summary_json!()
    ))]
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
    #[command(long_about = concat!(
        "Run a parked or failed writer again, on the current tip.\n\n",
        "In a run that has not finished (interrupted, stopped): the task goes back to pending, \
its earlier branch swarm/<run>-<task> is kept as swarm/<run>-<task>@<n> (n: the number of the \
attempt that made it), the tasks skipped because of it wait again, and the run is resumed (as \
`swarm resume`): the task starts afresh on the run's integration tip. In a run that ended: a new \
run of that one task (its spec as the run stored it, without its dependencies) starts from your \
HEAD, which holds what the old run landed, with the old run's options (not its --base, report \
files or remote) and those given here, and merges and lands as any run; its old branch stays as \
it is, and its dependents are not run again. A reader, a task that is done, skipped or has not \
ended, or an unknown task is refused (exit 2).\n\n",
        summary_json!()
    ))]
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
    /// Drop an unfinished run (the newest by default), keeping the work no other branch has.
    ///
    /// For a start that failed (a refused key, a model endpoint that did not answer, Ctrl-C
    /// while planning) or a run given up on, so that `swarm resume` no longer picks it. It stops
    /// the processes the run's tasks left, removes the run's checkouts and its deps' files, deletes
    /// each of its branches (swarm/<run>, swarm/<run>-<task>, …) whose commits another branch,
    /// your HEAD or the run's kept integration branch holds, and keeps (and names) a branch with
    /// work nowhere else: dropping never loses a commit. Then it removes .git/swarm/runs/<run>/
    /// and the run's record (tasks, attempts, merges, events, goals) from the board; the goals it
    /// took from the queue go back to the queue. A finished run is refused (`swarm gc` tidies
    /// those), as is one that stopped while landing on your branch (`swarm resume` finishes the
    /// landing); a run another swarm holds exits 4.
    ///
    /// At a terminal (stdin and stderr) it lists what it will do and asks `Drop run R (…)?
    /// [y/N]`; y drops, anything else keeps the run (Ctrl-C exits 130). Off a terminal it needs
    /// --yes.
    ///
    /// With --json, one object: `run`, `dropped` (false when the question was answered no) and
    /// `actions`, each with `action` (stop-process, remove-worktree, remove, delete-branch,
    /// keep-branch, forget-run or requeue), `process`, `path`, `branch`, `run` (with `tasks`) or
    /// `goal` (the queue's number), `reason` for a branch, and `done`.
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
    ///
    /// With --json, an array of objects, newest first, each with `id`, `started_at` and
    /// `finished_at` (milliseconds since the Unix epoch; `finished_at` is null until the run
    /// finishes), `status`, `reason` (null while it runs), `exit_code` (null while it runs),
    /// `duration_ms`, `tasks` and `source`. No runs: an empty array.
    Runs,
    /// Show one task of a run: its spec, status, attempts, result, changed files and transcript.
    ///
    /// The task's spec (id, title, lane, mode, deps, files, its prompt or command), its status
    /// (and why, for one that failed, was parked or was skipped), each attempt (its start, how
    /// long it took, how it ended and why; an attempt that continued an earlier attempt's agent
    /// session is marked), the task's result, for a writer its branch and the files it changed
    /// against the commit it started from, and the last 20 lines of its newest transcript
    /// (secrets hidden).
    ///
    /// With --json, one object: `run`, `id`, `title`, `lane`, `mode`, `deps`, `files`, `prompt`
    /// and `run_command` (one of them null), `spec` (the task in the task-file format),
    /// `status`, `error`, `result`, `tokens`, `cost`, `branch` and `branch_exists` (a merged
    /// writer's branch is deleted once merged), `start_commit`, `commit`,
    /// `changed_files` (null for a reader), `merge` (null, or an object with `state` (merged,
    /// parked or no-changes), `commit` and `paths`), `attempts` (each with `number`,
    /// `started_at`, `finished_at`, `duration_ms`, `outcome`, `reason`, `continued`, `tokens`,
    /// `cost` and `transcript`) and `transcript` (null, or an object with `path` and `tail`, its
    /// last lines).
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
    ///
    /// With --json, one object: `run` (the run as recorded: `id`, `created_at`, `finished_at`,
    /// `status`, `exit_code`, `source`, `base_commit`, `integration_ref` and `options`), `goals`
    /// (each with `id`, `text`, `needs`, `status`, `reason` and `queue_id`), `tasks` (each as
    /// recorded: `id`, `spec` (the task in the task-file format), `status`, `attempts`,
    /// `failures`, `result`, `error`, `transcript`, `started_at`, `finished_at`, `elapsed_ms`
    /// (so far, for a running task), `branch`, `start_commit`, `commit_id`, `tokens`, `cost` and
    /// `session`) and `counts` (the number of tasks in each status). Times are milliseconds
    /// since the Unix epoch.
    Status {
        /// The run id.
        #[arg(add = ArgValueCandidates::new(crate::complete::run_ids))]
        run: Option<String>,
    },
    /// Show a run's event log (the newest run by default).
    ///
    /// With --json, one JSON object per line, as the log `events.jsonl` holds them: `seq`,
    /// `at` (milliseconds since the Unix epoch), `kind`, and `task` and `detail` where they
    /// apply. With --path and --json, one object: `events` (the log's path) and `transcripts`
    /// (with --errors, the paths of the failed attempts' transcripts; else empty).
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
    /// Print a run's or a task file's DAG (as Mermaid, DOT, or a picture in SVG or HTML that
    /// needs neither a browser nor Graphviz to make).
    ///
    /// With --json (instead of --format), one object: `nodes` (each with `id`, `title`, `lane`,
    /// `mode`, `parent`, the task that spawned it or null, and, for a run, `status`; null for a
    /// task file) and `edges` (each with `from`, a dependency, and `to`, the task that needs it).
    Graph {
        /// A run id or a task file (the newest run by default).
        #[arg(add = ArgValueCompleter::new(crate::complete::run_ids_and_files))]
        source: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = GraphFormat::Mermaid, conflicts_with = "json")]
        format: GraphFormat,
    },
    /// Show the effective settings and where each came from (flags, SWARM_* variables,
    /// .swarm.toml, the user's config file, defaults), and the agent profiles.
    ///
    /// With --json, one object: `options` (for each setting, an object with `value`, `default`
    /// and `source`, whose `kind` is flag, env, file or default, with the `flag`, `variable` or
    /// `path` it came from), `profiles` (each profile's fields and the `file` it is in) and
    /// `environment` (each SWARM_* variable and the setting it sets).
    Config {
        #[command(flatten)]
        options: RunOptions,
    },
    /// A durable queue of goals in the repository's board, drained as one multi-goal run.
    Queue {
        #[command(subcommand)]
        action: QueueAction,
    },
    /// Remove the checkouts of finished tasks and the deps' files killed runs left behind; a branch
    /// with unmerged commits is never deleted.
    ///
    /// With --json, one object: `dry_run`, and `actions`, each with `action` (remove-worktree,
    /// remove, delete-branch, keep-branch, delete-remote-refs or keep-remote-run), `path`,
    /// `branch` or `run` (and `refs`, how many), `reason` (why it is deleted or kept) and `done`
    /// (false with --dry-run).
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
    /// Serve a live page of a run (the newest by default) on this machine, for as long as swarm
    /// web runs: the DAG coloured by status, counts and elapsed time, a timeline of the
    /// attempts, merges and parked writers, and each task's spec, attempts, result, changed
    /// files and transcript tail on a click.
    ///
    /// It prints the page's URL on stdout. The URL holds an unguessable token; a request
    /// without it is refused (403), so other users of the machine cannot read the run. A
    /// request whose Host header is not the page's own address (127.0.0.1, localhost, [::1] or
    /// the --bind address, with the port) is refused (421), so a page of another site that
    /// makes its name point at this machine (DNS rebinding) reads nothing. The page is embedded
    /// in swarm and fetches nothing from elsewhere; a running run's page follows it live (its
    /// events are streamed as server-sent events), a finished run's shows how it ended. At
    /// most an eighth of the file descriptor limit of pages (128 at most) follow a run at once;
    /// one more is refused (503) and asks again a few seconds later. It has no JSON output:
    /// with --json, swarm says so and exits 2.
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
    /// Run the tasks of a run spread over machines (`swarm run … --remote`), on this machine:
    /// claim published attempts, run each as a local run would, push the results.
    ///
    /// Run it in a clone of the repository, with the agents' credentials in the environment
    /// (and, for a signed run, the coordinator's SWARM_REMOTE_KEY). It exits 0 once the run has no work left for it (the run ended, or none appeared on the
    /// remote within --wait), 75 when a signal stopped it (its attempts are given back to the
    /// run) or the remote did not answer within --wait, and 2 on bad input. See "Runs over
    /// many machines" in the README.
    ///
    /// It has no JSON output: with --json, swarm says so and exits 2.
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
    /// It has no JSON output: with --json, swarm says so and exits 2.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the CI configuration that spreads one run over CI runners, coordinated through the
    /// git remote: a GitHub Actions workflow, a GitLab CI file or Kubernetes Jobs.
    ///
    /// A coordinator job runs `swarm --goal "…" --remote NAME` (or `swarm run PLAN --remote
    /// NAME` with --plan), merges what the workers push and pushes the run's branch
    /// swarm/<run> with its report; N worker jobs run `swarm worker --remote NAME`. Every job
    /// has a full clone and can push. The file starts with a comment naming the command that
    /// made it and what to set up: the agents' secrets, the push token (GitLab, Kubernetes),
    /// how runners get swarm.
    ///
    /// It has no JSON output: with --json, swarm says so and exits 2.
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
    ///
    /// With --json, one object: `id` (the goal's number) and `text`.
    Add {
        #[arg(required = true, value_name = "TEXT")]
        text: Vec<String>,
    },
    /// List the goals waiting in the queue and those a run has taken and not finished. A goal
    /// leaves the queue when the run that took it finishes.
    ///
    /// With --json, an array in queue order, each with `id`, `text`, `added_at` (milliseconds
    /// since the Unix epoch), and `run_id`, `goal_id` and `goal_status` (null until a run takes
    /// it).
    List,
    /// Remove a goal that no run has taken yet.
    ///
    /// With --json, one object: `removed` (the goal's number).
    Rm {
        /// The goal's number, as `swarm queue list` shows it.
        #[arg(add = ArgValueCandidates::new(crate::complete::queued_goals))]
        id: i64,
    },
    /// Run every queued goal as one multi-goal run; goals added while it runs join it (and
    /// the dependency pass) before it ends.
    #[command(long_about = concat!(
        "Run every queued goal as one multi-goal run; goals added while it runs join it (and the \
dependency pass) before it ends.\n\n",
        summary_json!()
    ))]
    Run {
        #[command(flatten)]
        options: Box<RunOptions>,
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
