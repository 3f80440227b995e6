//! The command line: clap definitions and `command()`. Holds no logic; every value is handed on
//! as parsed (run options as `config::Options`), and defaults that depend on configuration are
//! applied by the caller.
#![expect(
    clippy::doc_markdown,
    reason = "doc comments here are --help text for users, not rustdoc"
)]

use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use clap_complete::engine::{ArgValueCandidates, ArgValueCompleter};

const EXIT_CODES: &str = "\
Exit codes:
  0   every task done and merged
  1   some tasks or goals failed or were skipped (a deadlock too), or swarm itself failed
  2   usage or input error; nothing ran
  3   needs a human: parked conflicts, work parked for review, a moved integration branch
  4   another run holds the repository
  75  stopped early and resumable (interrupt, budget); continue with `swarm resume`
  130 Ctrl-C at the question before a goal's plan runs; nothing ran";

/// The summary a run prints with `--json` (`swarm --goal`, `run`, `resume`, `queue run`).
macro_rules! summary_json {
    () => {
        "With --json, the summary is one JSON object on stdout: `run` (its id), `status`, \
`exit_code`, `base`, `integration_branch`, `counts` (the number of tasks in each status), `tasks` \
(each with `id`, `status`, `attempts`, `continued` (the numbers of the attempts that continued an \
agent's session), `elapsed_ms`, `error` and `transcript`), `goals` (each with `id`, `text`, \
`status`, `reason`, `needs` and `tasks`), `parked` (each with `task`, `branch`, `paths` and \
`reason`), `landing` and `report` (the path of the report). `landing` says what became of the \
merged work: `action` (fast-forwarded, kept, nothing-merged, interrupted, stopped, halted or \
over-budget), `branch` (the branch that holds the work; null when nothing was merged), `commit`, \
`reason` (why it was not landed), `command` (what to run next: the `git merge` that takes the \
work, or the `swarm resume` that continues the run) and `message` (the sentence the text \
summary prints; null with --land none)."
    };
}

/// Turn a goal into finished, merged work: a model plans it into a DAG of tasks, coding agents
/// run them many at a time (readers in a shared snapshot, writers in checkouts of their own), and
/// the writers are merged back one at a time.
#[derive(Debug, Parser)]
#[command(
    name = "swarm",
    version,
    long_about = concat!(
        "Turn a goal into finished, merged work: a model plans it into a DAG of tasks, coding \
agents run them many at a time (readers in a shared snapshot, writers in checkouts of their own), \
and the writers are merged back one at a time.\n\n",
        summary_json!(),
        "\n\nEvery command takes --json; each one's help says what it prints then. `swarm \
completions` and `swarm worker` have no JSON output and say so."
    ),
    after_help = EXIT_CODES,
    max_term_width = 100,
    subcommand_negates_reqs = true,
    arg_required_else_help = true
)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "command-line switches, each independent of the others"
)]
pub struct Cli {
    /// Run as if started in DIR.
    #[arg(short = 'C', long = "directory", value_name = "DIR", global = true)]
    pub directory: Option<PathBuf>,

    /// Print nothing on stderr but errors.
    #[arg(short, long, global = true)]
    pub quiet: bool,

    /// Print JSON on stdout instead of text (each command's --help says what).
    #[arg(long, global = true)]
    pub json: bool,

    /// Colour what swarm prints on stderr: auto (on a terminal, unless NO_COLOR is set;
    /// CLICOLOR_FORCE forces colours), always or never.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ColorWhen::Auto, global = true)]
    pub color: ColorWhen,

    /// How a run shows its progress on stderr: auto (a live display on a terminal, plain
    /// lines otherwise), plain, or json (each event of the run's log as one JSON line, as
    /// `swarm logs --json` prints them).
    #[arg(long, value_enum, value_name = "HOW", default_value_t = ProgressHow::Auto, global = true)]
    pub progress: ProgressHow,

    /// Read this configuration file instead of the user's (~/.config/swarm/config.toml).
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,

    /// Run as from a git hook: landing defaults to `branch`, so the checkout git is working on
    /// is never touched. Also the case when git's hook variables (GIT_INDEX_FILE, GIT_DIR) are
    /// set.
    #[arg(long, global = true)]
    pub from_hook: bool,

    /// What to do, in prose: planned by the model, then run. Give it several times for
    /// several goals: the model infers which goal needs which; independent goals run at once,
    /// a goal that needs others is planned once they are done and merged.
    #[arg(long, value_name = "TEXT", required_unless_present = "goals_file")]
    pub goal: Vec<String>,

    /// Read goals from FILE, one a line (blank lines and lines starting with # are skipped),
    /// as if each were given with --goal.
    #[arg(long, value_name = "FILE")]
    pub goals_file: Option<PathBuf>,

    /// Write the (repaired) plan to FILE in the task-file format (`swarm run FILE` runs it).
    #[arg(long, value_name = "FILE")]
    pub plan_out: Option<PathBuf>,

    /// Plan only, run nothing: print the plan as a tree and the command that runs it (`swarm
    /// run FILE`, FILE being --plan-out or the run's copy); with --json, the plan as JSONL.
    #[arg(long)]
    pub plan_only: bool,

    /// Run the plan without asking. On a terminal (stdin and stderr), a single goal's plan is
    /// shown as a tree and swarm asks `Run N tasks (M writers)? [Y/n/e]`: Enter or y runs it, n
    /// runs nothing (the plan is kept in a file), e edits it in $VISUAL or $EDITOR first. Off a
    /// terminal (hooks, CI), in a git hook, and for several goals or the queue, nothing is
    /// asked.
    #[arg(short, long)]
    pub yes: bool,

    #[command(flatten)]
    pub options: RunOptions,

    #[command(subcommand)]
    pub command: Option<Command>,
}

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
        #[arg(add = ArgValueCandidates::new(crate::complete::run_ids))]
        run: Option<String>,
        /// A goal stopped while it was planned is planned again, and on a terminal its plan
        /// shown and asked about as for `swarm --goal`: run it without asking.
        #[arg(short, long)]
        yes: bool,
        #[command(flatten)]
        options: RunOptions,
    },
    /// List the runs of this repository, newest first.
    ///
    /// One line per run: its id, when it started (local time), its status (running; stopped,
    /// when its process is gone and `swarm resume` continues it; interrupted; finished), its
    /// exit code, how long it took (so far, for a running one), its number of tasks and what it
    /// ran (a task file, a goal's text, several goals, the queue).
    ///
    /// With --json, an array of objects, newest first, each with `id`, `started_at` and
    /// `finished_at` (milliseconds since the Unix epoch; `finished_at` is null until the run
    /// finishes), `status`, `exit_code` (null while it runs), `duration_ms`, `tasks` and
    /// `source`. No runs: an empty array.
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
        /// Only failures and errors, with their transcript paths.
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
    /// `mode` and, for a run, `status`; null for a task file) and `edges` (each with `from`, a
    /// dependency, and `to`, the task that needs it).
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
    /// without it is refused (403), so other users of the machine cannot read the run. The
    /// page is embedded in swarm and fetches nothing from elsewhere; a running run's page
    /// follows it live (its events are streamed as server-sent events), a finished run's shows
    /// how it ended. It has no JSON output: with --json, swarm says so and exits 2.
    Web {
        /// The run id.
        #[arg(add = ArgValueCandidates::new(crate::complete::run_ids))]
        run: Option<String>,
        /// The address to listen on. Anything but 127.0.0.1 (or ::1) lets other machines reach
        /// the page: the token is then all that keeps them out, and it goes over the network
        /// unencrypted.
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
        bind: String,
        /// The port to listen on; 0 takes a free one.
        #[arg(long, value_name = "PORT", default_value_t = 0)]
        port: u16,
    },
    /// Run the tasks of a run spread over machines (`swarm run … --remote`), on this machine:
    /// claim published attempts, run each as a local run would, push the results.
    ///
    /// Run it in a clone of the repository, with the agents' credentials in the environment.
    /// It exits 0 once the run has no work left for it (the run ended, or none appeared on the
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

/// Options of a run. Unset options come from the run being resumed, then from the defaults.
#[derive(Debug, Clone, Default, Args)]
pub struct RunOptions {
    /// Run at most N tasks at once [default: 4].
    #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: Option<u32>,

    /// Run at most N writers at once [default: the value of --jobs].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub max_writers: Option<u32>,

    /// The agent for prompt tasks: auto, openai (built in), claude, codex, a profile from the
    /// configuration, exec:CMD (CMD run with `sh -c`, prompt on stdin, result on stdout), or
    /// acp:CMD (CMD run with `sh -c`, spoken to in the Agent Client Protocol), or pool:NAME
    /// (each attempt to the member of `[pools.NAME]` with room) [default: auto].
    #[arg(long, value_name = "NAME", add = ArgValueCandidates::new(crate::complete::agents))]
    pub agent: Option<String>,

    /// The model of the built-in agent and the planner (else SWARM_MODEL) [default: gpt-4o-mini].
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,

    /// The OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 (else SWARM_API_BASE,
    /// OPENAI_BASE_URL) [default: https://api.openai.com/v1]. The key comes from SWARM_API_KEY or
    /// OPENAI_API_KEY only.
    #[arg(long, value_name = "URL")]
    pub api_base: Option<String>,

    /// Give up on a model request that has not answered after this long, and retry it
    /// [default: 5m].
    #[arg(long, value_name = "DURATION")]
    pub request_timeout: Option<String>,

    /// When the model endpoint stops answering (connections refused or timing out, several in
    /// a row): how long new attempts wait while swarm checks it every few seconds, before the
    /// run stops, resumable (exit 75); 0 stops at once [default: 5m].
    #[arg(long, value_name = "DURATION")]
    pub endpoint_wait: Option<String>,

    /// The built-in agent's cap on model turns per attempt [default: 40].
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,

    /// The built-in agent's cap on tokens per attempt [default: 400000].
    #[arg(long, value_name = "N")]
    pub max_task_tokens: Option<u64>,

    /// Once the run's tasks have used N tokens in all, start nothing new: running tasks finish
    /// and finished writers are merged, then the run stops, resumable (exit 75); resume it
    /// with a larger --budget-tokens [default: no budget].
    #[arg(long, value_name = "N")]
    pub budget_tokens: Option<u64>,

    /// Let the built-in agent run PROGRAM (no shell; repeat for several).
    #[arg(long, value_name = "PROGRAM")]
    pub allow_program: Vec<String>,

    /// Stop an attempt after this long (e.g. 90s, 20m, 1h) [default: 30m].
    #[arg(long, value_name = "DURATION")]
    pub task_timeout: Option<String>,

    /// Stop an attempt as hung when it writes nothing (stdout or stderr) for DURATION; it
    /// counts as a failed attempt, like a timeout. For agents that show progress as they go
    /// (codex --json, scripts that log); Claude's JSON output, for one, comes only at the end
    /// [default: off].
    #[arg(long, value_name = "DURATION")]
    pub stall_timeout: Option<String>,

    /// How long a stopped attempt (a timeout, a hang, Ctrl-C) has between SIGTERM and SIGKILL
    /// to clean up; 0 kills at once [default: 2s].
    #[arg(long, value_name = "DURATION")]
    pub kill_grace: Option<String>,

    /// Retry a failed attempt up to N times, with backoff [default: 1].
    #[arg(long, value_name = "N")]
    pub retries: Option<u32>,

    /// Verify each writer with CMD (run with `sh -c` in its checkout) before it is merged.
    #[arg(long, value_name = "CMD")]
    pub check: Option<String>,

    /// Prepare each new writer's checkout with CMD (run with `sh -c` there before its agent
    /// starts, e.g. `npm ci`; its output and time go into the attempt's transcript); not again
    /// in a reused checkout whose lockfiles did not change. A failing setup stops the run,
    /// resumable (exit 75). The `.swarm.toml` keys `include`, `cache` and `cache-key` prepare
    /// checkouts further; every attempt gets its own TMPDIR and ports (SWARM_PORT, SWARM_PORTS).
    #[arg(long, value_name = "CMD")]
    pub setup: Option<String>,

    /// Test what is merged with CMD (run with `sh -c` on the integration tip after merges);
    /// only a passing tip lands.
    ///
    /// It runs in a checkout of its own, prepared as a writer's, taking a job slot; when merges
    /// come faster than it runs, one run tests the batch of them. A failing batch is bisected
    /// to the first merge that fails it, which is taken out, parked (exit 3) and its dependents
    /// skipped; the merges after it are merged again. A writer's dependents start once the
    /// gate passed on a tip holding it. A gate failing on the base stops the run (exit 2). See
    /// "The gate" in the README.
    #[arg(long, value_name = "CMD")]
    pub gate: Option<String>,

    /// Serve the run's live page while it runs, as `swarm web` does: its URL (with its token)
    /// is printed on stderr when the run starts, and the page goes when swarm exits.
    #[arg(long)]
    pub web: bool,

    /// The form of the report --final-out writes: markdown, or html (one self-contained page
    /// with the task graph drawn and a timeline of the attempts) [default: by FILE's
    /// extension: html for .html and .htm, else markdown].
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub report_format: Option<ReportFormat>,

    /// Spread the run over machines through the git remote NAME (or URL): the run is published
    /// under refs/swarm/<run>/ there, `swarm worker --remote` on other machines runs its tasks,
    /// and this swarm merges their results and lands as a local run does. It runs no task
    /// itself unless --jobs says how many. See "Runs over many machines" in the README.
    #[arg(long, value_name = "NAME|URL")]
    pub remote: Option<String>,

    /// Write the reducer's result and the run summary to FILE. With several goals: one
    /// section per goal (its reducer's result), then one run summary with the goal graph and
    /// the task graph.
    #[arg(long, value_name = "FILE")]
    pub final_out: Option<PathBuf>,

    /// With several goals, also write one report per goal to DIR/<goal id>.md (its section
    /// and its tasks); DIR is created if needed.
    #[arg(long, value_name = "DIR")]
    pub final_out_dir: Option<PathBuf>,

    /// Start the run from REV [default: HEAD].
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,

    /// What to do with the finished integration branch [default: auto].
    #[arg(long, value_enum, value_name = "HOW")]
    pub land: Option<Land>,

    /// Put task checkouts and snapshots under DIR [default: the user cache dir].
    #[arg(long, value_name = "DIR")]
    pub worktree_dir: Option<PathBuf>,

    /// Before parking a conflicting writer, give its agent one attempt at resolving the conflict
    /// (in a fresh checkout holding the conflicted merge; checked like any writer).
    #[arg(long)]
    pub resolve_conflicts: bool,

    /// Start every retry afresh. Without it, a retry after a timeout, a usage-limit pause, an
    /// interruption or a crash continues the Claude or Codex session of the attempt it follows,
    /// in the same checkout, so the work already paid for is not redone.
    #[arg(long)]
    pub fresh_retries: bool,

    /// Run CMD once per escalation (parked branch), with the details as JSON on stdin.
    #[arg(long, value_name = "CMD")]
    pub on_escalate: Option<String>,
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
pub enum ColorWhen {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProgressHow {
    Auto,
    Plain,
    Json,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Markdown,
    Html,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Land {
    /// Fast-forward the user's branch when it is clean and still at the base; else keep the branch.
    Auto,
    /// Always keep the integration branch and say how to take it.
    Branch,
    /// Keep the integration branch and say nothing about it.
    None,
}

/// The flags as swarm's own options: the one place flags become configuration, so a flag's
/// name is free to change without touching config files or what the board stores. A flag that
/// is left out here fails `every_run_flag_reaches_the_options`.
impl From<RunOptions> for crate::config::Options {
    fn from(flags: RunOptions) -> Self {
        Self {
            jobs: flags.jobs,
            max_writers: flags.max_writers,
            agent: flags.agent,
            model: flags.model,
            api_base: flags.api_base,
            request_timeout: flags.request_timeout,
            endpoint_wait: flags.endpoint_wait,
            max_turns: flags.max_turns,
            max_task_tokens: flags.max_task_tokens,
            budget_tokens: flags.budget_tokens,
            allow_program: flags.allow_program,
            task_timeout: flags.task_timeout,
            stall_timeout: flags.stall_timeout,
            kill_grace: flags.kill_grace,
            retries: flags.retries,
            check: flags.check,
            final_out: flags.final_out,
            final_out_dir: flags.final_out_dir,
            base: flags.base,
            land: flags.land.map(|land| match land {
                Land::Auto => crate::config::Land::Auto,
                Land::Branch => crate::config::Land::Branch,
                Land::None => crate::config::Land::None,
            }),
            worktree_dir: flags.worktree_dir,
            resolve_conflicts: flags.resolve_conflicts,
            fresh_retries: flags.fresh_retries,
            on_escalate: flags.on_escalate,
            setup: flags.setup,
            gate: flags.gate,
            remote: flags.remote,
            web: flags.web,
            report_format: flags.report_format.map(|f| match f {
                ReportFormat::Markdown => crate::config::ReportFormat::Markdown,
                ReportFormat::Html => crate::config::ReportFormat::Html,
            }),
            // Lists of paths of the repository: `.swarm.toml` keys, not flags.
            include: Vec::new(),
            cache: Vec::new(),
            cache_key: Vec::new(),
        }
    }
}

/// The clap command, for parsing, completions and man pages.
pub fn command() -> clap::Command {
    Cli::command()
}

pub fn parse() -> Cli {
    Cli::parse()
}

#[cfg(test)]
mod tests {
    use clap::{Args as _, FromArgMatches as _, Parser as _};

    use super::{Cli, Command, RunOptions};
    use crate::config::{Land, Options};

    #[test]
    fn flags_become_the_options_they_name() {
        let cli = Cli::try_parse_from([
            "swarm",
            "run",
            "t.jsonl",
            "-j",
            "3",
            "--land",
            "none",
            "--allow-program",
            "cargo",
            "--resolve-conflicts",
            "--final-out",
            "out.md",
            "--base",
            "main",
        ])
        .unwrap();
        let Some(Command::Run { options, .. }) = cli.command else {
            panic!("not a run: {:?}", cli.command);
        };
        let expected = Options {
            jobs: Some(3),
            land: Some(Land::None),
            allow_program: vec!["cargo".into()],
            resolve_conflicts: true,
            final_out: Some("out.md".into()),
            base: Some("main".into()),
            ..Options::default()
        };
        assert_eq!(Options::from(options), expected);
        assert_eq!(Options::from(RunOptions::default()), Options::default());
    }

    #[test]
    fn every_run_flag_reaches_the_options() {
        let command = RunOptions::augment_args(clap::Command::new("swarm"));
        for arg in command.get_arguments() {
            let flag = format!("--{}", arg.get_long().unwrap());
            let mut line = vec!["swarm".to_owned(), flag.clone()];
            if arg.get_action().takes_values() {
                let value = arg
                    .get_possible_values()
                    .first()
                    .map(|v| v.get_name().to_owned());
                line.push(value.unwrap_or_else(|| "1".to_owned()));
            }
            let matches = command.clone().try_get_matches_from(&line).unwrap();
            let flags = RunOptions::from_arg_matches(&matches).unwrap();
            assert_ne!(Options::from(flags), Options::default(), "{flag}");
        }
    }
}
