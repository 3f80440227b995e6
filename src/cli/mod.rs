//! The command line: clap definitions and `command()`. Holds no logic; every value is handed on
//! as parsed (run options as `config::Options`), and defaults that depend on configuration are
//! applied by the caller.
#![expect(
    clippy::doc_markdown,
    reason = "doc comments here are --help text for users, not rustdoc"
)]

use std::path::PathBuf;

use clap::{CommandFactory, Parser, ValueEnum};

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

mod command;
mod options;

pub use command::{CiTarget, Command, GraphFormat, QueueAction};
pub use options::{Declared, RunOptions, declared};

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

/// The clap command, for parsing, completions and man pages.
pub fn command() -> clap::Command {
    Cli::command()
}

pub fn parse() -> Cli {
    Cli::parse()
}
