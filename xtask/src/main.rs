//! `cargo xtask`: swarm's development tasks (see the crate's `lib.rs`). Parses the command
//! line, runs the task, prints its text on stdout and its failure on stderr.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "swarm's development tasks")]
struct Args {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Rewrite the completions (completions/), the man pages (man/), the reference
    /// (docs/src/reference/) and the CI examples (examples/ci/) from swarm's definitions
    Generate {
        /// Change nothing: list the files that differ and fail if any does
        #[arg(long)]
        check: bool,
    },
    /// Show which top-level module of swarm refers to which, the references that go back up
    /// the floors of the architecture, and the circles
    Structure {
        /// The sources to read (another checkout's src/, say)
        #[arg(long, value_name = "DIR")]
        src: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let args = Args::parse();
    let root = xtask_root();
    let result = match args.task {
        Task::Generate { check: false } => xtask::generated::write(&root).map(|()| String::new()),
        Task::Generate { check: true } => xtask::generated::drift(&root).and_then(|drift| {
            if drift.is_empty() {
                Ok(String::new())
            } else {
                anyhow::bail!(
                    "generated files are out of date:\n  {}\nto fix: run `cargo xtask generate` and commit completions/, man/, docs/src/reference/ and examples/ci/",
                    drift.join("\n  ")
                )
            }
        }),
        Task::Structure { src } => {
            xtask::structure::report(&src.unwrap_or_else(|| root.join("src")))
        }
    };
    match result {
        Ok(text) => {
            let mut out = std::io::stdout().lock();
            if out.write_all(text.as_bytes()).is_err() {
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The repository's root: the directory above this crate's.
fn xtask_root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.parent().map(PathBuf::from).unwrap_or(here)
}
