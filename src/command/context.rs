//! What every subcommand shares: the global flags (`Globals`), the refusal to run nested in a
//! swarm task or hook, and opening the repository and its board. Knows no subcommand; the
//! dispatch in `mod.rs` decides which one runs.

use std::path::PathBuf;

use crate::error::{Usage, exit};
use crate::git::Repo;
use crate::store::Board;
use crate::ui;
use crate::ui::Verb;

/// The commands that start a run, as hints name them.
pub(super) const START_A_RUN: &str = "`swarm run TASKS.jsonl` or `swarm --goal TEXT`";

/// Global flags every subcommand sees.
pub(super) struct Globals {
    pub(super) dir: PathBuf,
    pub(super) quiet: bool,
    pub(super) json: bool,
    pub(super) progress: ui::Progress,
}

/// A nested swarm started by one of swarm's own agents or hooks does nothing.
pub(super) fn refuse_when_nested(g: &Globals) -> Option<u8> {
    if std::env::var_os("SWARM_ACTIVE").is_some_and(|v| !v.is_empty() && v != "0") {
        ui::say(
            g.quiet,
            Verb::Skipping,
            "swarm is running inside a swarm task or hook (SWARM_ACTIVE is set); doing nothing",
        );
        return Some(exit::OK);
    }
    None
}

pub(super) fn open_repo(g: &Globals) -> anyhow::Result<Repo> {
    Repo::discover(&g.dir).map_err(|e| {
        anyhow::Error::new(
            Usage::new(format!("{e:#}")).hint("run swarm inside a git checkout, or pass -C DIR"),
        )
    })
}

pub(super) fn open_board(repo: &Repo) -> anyhow::Result<Board> {
    Board::open(&repo.common_dir().join("swarm"))
}

/// The board of a command that runs tasks: with `--progress json`, every event it records is
/// printed on stderr too.
pub(super) fn open_run_board(g: &Globals, repo: &Repo) -> anyhow::Result<Board> {
    let mut board = open_board(repo)?;
    if g.progress == ui::Progress::Json && !g.quiet {
        board.echo_events(Box::new(ui::event_line));
    }
    Ok(board)
}
