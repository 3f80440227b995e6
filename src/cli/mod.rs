//! The command line: clap definitions and `command()`, which lays out every command's help with
//! the examples and exit codes its manual page gives too (`examples`, `exit_status`). Holds no
//! logic; every value is handed on as parsed (run options as `config::Options`), and defaults
//! that depend on configuration are applied by the caller.
#![expect(
    clippy::doc_markdown,
    reason = "doc comments here are --help text for users, not rustdoc"
)]

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::builder::StyledStr;
use clap::{CommandFactory, FromArgMatches as _, Parser, ValueEnum};

mod command;
pub mod examples;
pub mod exit_status;
mod options;

pub use command::{CiTarget, Command, GraphFormat, MemoryAction, QueueAction};
pub use options::{Declared, RunOptions, declared};

/// Turn a goal into finished, merged work: a model plans it into a DAG of tasks, coding agents
/// run them many at a time (readers in a shared snapshot, writers in checkouts of their own), and
/// the writers are merged back one at a time.
#[derive(Debug, Parser)]
#[command(
    name = "swarm",
    version,
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

    /// Print JSON on stdout instead of text (each command's manual page says what).
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

    /// Run the goal with the plan in FILE (as --plan-only --plan-out wrote it, edited or not)
    /// instead of asking the model for one: the run is the goal's (its report, its memory), and
    /// nothing is asked.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["plan_only", "plan_out", "goals_file"])]
    pub plan: Option<PathBuf>,

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

/// The clap command, for parsing, completions and man pages: the definition above, with each
/// command's help laid out as `help_layout` says.
pub fn command() -> clap::Command {
    help_layout(Cli::command(), "swarm")
}

pub fn parse() -> Cli {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // `swarm` alone at a terminal opens the interface; elsewhere (a pipe, a hook) it prints
    // the help as before.
    if args.len() == 1 && at_terminal() {
        args.push("tui".into());
    }
    let mut matches = command().get_matches_from(args);
    Cli::from_arg_matches_mut(&mut matches).unwrap_or_else(|e| e.format(&mut command()).exit())
}

/// Whether swarm was started at a terminal (its stdin and stdout), outside a git hook.
fn at_terminal() -> bool {
    use std::io::IsTerminal as _;
    std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal()
        && std::env::var_os("GIT_DIR").is_none()
        && std::env::var_os("GIT_INDEX_FILE").is_none()
}

/// Every command's help: the usage first, then what it does, then its examples (`examples`),
/// then its commands and options; last, the top command's exit codes (`exit_status`) with
/// `--help`, and where its manual page is.
const TEMPLATE: &str =
    "{usage-heading} {usage}\n\n{about-with-newline}\n{before-help}{all-args}{after-help}";

/// The top command's usage in its help. What clap makes of the definition (`swarm [OPTIONS]`)
/// does not say that a run needs --goal, --goals-file or a command; errors keep clap's, which
/// names the arguments the error is about.
const TOP_USAGE: &str = "\
swarm [OPTIONS] --goal <TEXT>...
       swarm [OPTIONS] --goals-file <FILE>
       swarm [OPTIONS] <COMMAND>";

/// `cmd`, named by `words` (`swarm queue add`), and its subcommands, with their help laid out.
fn help_layout(cmd: clap::Command, words: &str) -> clap::Command {
    let header = *cmd.get_styles().get_header();
    let heading = |title: &str| format!("{}{title}:{}", header.render(), header.render_reset());
    let mut examples = heading("Examples");
    for example in examples::of(words)
        .iter()
        .filter(|e| e.shown == examples::Shown::InHelp)
    {
        let _ = write!(examples, "\n  # {}", example.text);
        for line in example.line.lines() {
            let _ = write!(examples, "\n  {}", line.trim());
        }
        examples.push('\n');
    }
    let page = words.replace(' ', "-");
    // A sentence, not under a styled heading: clap_builder 4.6 takes a blank line followed by a
    // change of style for the indentation of what it wraps after it, which would put blank lines
    // into the text.
    let manual = format!(
        "Manual page: `man {page}`, or docs/src/reference/{page}.md in swarm's source (what \
         --json prints, the exit status, environment and files)."
    );
    let template = if words == "swarm" {
        TEMPLATE.replace("{usage}", TOP_USAGE)
    } else {
        TEMPLATE.to_owned()
    };
    let mut cmd = cmd
        .help_template(template)
        .before_help(StyledStr::from(examples.trim_end().to_owned()))
        .after_help(StyledStr::from(manual.clone()));
    if words == "swarm" {
        let codes = exit_status::of(words);
        let width = codes.iter().map(|c| c.code.len()).max().unwrap_or(0);
        let mut list = heading("Exit codes");
        for exit in codes {
            let _ = write!(list, "\n  {:width$}  {}", exit.code, exit.summary);
        }
        cmd = cmd.after_long_help(StyledStr::from(format!("{list}\n\n{manual}")));
    }
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    for name in names {
        let inner = format!("{words} {name}");
        cmd = cmd.mut_subcommand(&name, |sub| help_layout(sub, &inner));
    }
    cmd
}
