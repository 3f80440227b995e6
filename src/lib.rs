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
pub(crate) mod disk;
pub(crate) mod git;
pub(crate) mod llm;
pub mod manual;
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
pub(crate) mod signal;
pub(crate) mod store;
pub mod time;
pub(crate) mod ui;

use std::fmt;
use std::process::ExitCode;

/// Exit codes (SPEC §9).
pub mod exit {
    pub const OK: u8 = 0;
    pub const FAILED: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const NEEDS_HUMAN: u8 = 3;
    pub const BUSY: u8 = 4;
    pub const RESUMABLE: u8 = 75;
}

/// Bad input from the user: exit 2, nothing ran.
#[derive(Debug)]
pub struct Usage {
    pub message: String,
    pub hint: Option<String>,
}

impl Usage {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hint: None,
        }
    }

    #[must_use]
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Usage {}

/// Another run holds the repository: exit 4.
#[derive(Debug)]
pub struct Busy {
    pub holder: String,
}

impl fmt::Display for Busy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "another swarm run holds this repository: {}",
            self.holder
        )
    }
}

impl std::error::Error for Busy {}

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

/// A panic of the owner thread: a bug in swarm. What ran is recorded as far as it got, so a
/// run it cut short is resumable.
#[derive(Debug)]
struct Internal(String);

impl fmt::Display for Internal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "internal error: {}", self.0)
    }
}

impl std::error::Error for Internal {}

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
        if cause.downcast_ref::<plan::Invalid>().is_some() {
            return (exit::USAGE, None);
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
