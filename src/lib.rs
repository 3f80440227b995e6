//! swarm: run a DAG of tasks with coding agents, readers in a shared snapshot and writers in
//! their own worktrees, merged back one at a time. `main` is the whole program; the binary calls
//! it, and it is the one place that prints errors and picks the exit code.

// A panic is no way to report bad input or a fault of the environment. Set here rather than in
// Cargo.toml's [lints], which would reach the integration tests' helpers too; unit tests may
// unwrap (clippy.toml).
#![warn(clippy::unwrap_used, clippy::expect_used)]

pub mod agent;
pub mod ci;
pub mod cli;
mod command;
pub mod complete;
pub(crate) mod config;
pub(crate) mod deliver;
pub(crate) mod disk;
pub mod error;
pub mod forge;
pub(crate) mod git;
pub(crate) mod llm;
pub(crate) mod mirror;
pub(crate) mod near;
pub(crate) mod panic;
pub(crate) mod plan;
pub(crate) mod planner;
pub(crate) mod planted;
pub(crate) mod preview;
pub(crate) mod remote;
pub(crate) mod report;
pub(crate) mod schedule;
pub(crate) mod secret;
pub(crate) mod shell;
pub(crate) mod signal;
pub(crate) mod store;
pub mod time;
pub(crate) mod trace;
pub(crate) mod ui;

use std::process::ExitCode;

use error::{Busy, Internal, Usage, exit};

/// The whole program.
pub fn main() -> ExitCode {
    // Before anything prints: a TAB in the shell runs `COMPLETE=bash swarm -- …`.
    complete::answer_if_asked();
    panic::install();
    let cli = cli::parse();
    ui::set_colors(match cli.color {
        cli::ColorWhen::Auto => ui::Colors::Auto,
        cli::ColorWhen::Always => ui::Colors::Always,
        cli::ColorWhen::Never => ui::Colors::Never,
    });
    if let Err(e) = signal::install() {
        ui::error(&e.context("could not watch for signals"), None);
        return ExitCode::from(exit::FAILED);
    }
    let outcome = panic::catch(|| command::dispatch(cli))
        .unwrap_or_else(|why| Err(anyhow::Error::new(Internal(why))));
    match outcome {
        Ok(code) => ExitCode::from(code),
        // Whoever read stdout went away (`swarm logs | head -1`): nothing more to say.
        Err(err) if is_broken_pipe(&err) => ExitCode::from(exit::OK),
        Err(err) => {
            let (code, hint) = classify(&err);
            ui::error(&err, hint.as_deref());
            ExitCode::from(code)
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn classify(err: &anyhow::Error) -> (u8, Option<String>) {
    for cause in err.chain() {
        if let Some(u) = cause.downcast_ref::<Usage>() {
            return (exit::USAGE, u.hint.clone());
        }
        if let Some(invalid) = cause.downcast_ref::<plan::Invalid>() {
            return (exit::USAGE, invalid.hint.clone());
        }
        if cause.downcast_ref::<Internal>().is_some() {
            return (
                exit::FAILED,
                Some("this is a bug in swarm; `swarm status` shows where the run got to, and `swarm resume` goes on from there".into()),
            );
        }
        if cause.downcast_ref::<Busy>().is_some() {
            return (
                exit::BUSY,
                Some("wait for it to finish, or stop it with Ctrl-C (then `swarm resume`)".into()),
            );
        }
    }
    if let Some(hint) = store::damage_hint(err) {
        return (exit::FAILED, Some(hint));
    }
    if agent::Fault::of_error(err).is_some() {
        return (
            exit::RESUMABLE,
            Some("a fault of the machine, not of a task; once it is fixed, `swarm resume` goes on from where the run stopped".into()),
        );
    }
    (exit::FAILED, None)
}
