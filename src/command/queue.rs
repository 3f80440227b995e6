//! `swarm queue add | list | rm | run`: a durable queue of goals in the board. Adding and
//! listing take no run lock, so they work while a run drains the queue; the drain takes new
//! goals as it goes.

use std::fmt::Write as _;

use serde_json::json;

use super::context::{Globals, open_board, open_repo};
use super::goal;
use super::settings::Configured;
use crate::error::{Usage, exit};
use crate::store::QueueRemoval;
use crate::ui;
use crate::ui::Verb;

pub(super) fn add(g: &Globals, text: &str) -> anyhow::Result<u8> {
    let text = goal::without_secrets(g, text.trim());
    let text = text.as_str();
    if text.is_empty() {
        anyhow::bail!(Usage::new("the goal is empty"));
    }
    let repo = open_repo(g)?;
    let mut board = open_board(&repo)?;
    let id = board.queue_mut().add(text)?;
    if g.json {
        ui::out(&json!({ "id": id, "text": text }).to_string())?;
    } else {
        // The number alone on stdout, for scripts (`id=$(swarm queue add …)`).
        ui::out(&id.to_string())?;
        ui::say(g.quiet, Verb::Queued, &format!("goal {id}: {text}"));
    }
    Ok(exit::OK)
}

pub(super) fn list(g: &Globals) -> anyhow::Result<u8> {
    let repo = open_repo(g)?;
    let board = open_board(&repo)?;
    let items = board.queue().items()?;
    if g.json {
        ui::out(&serde_json::to_string_pretty(&items)?)?;
        return Ok(exit::OK);
    }
    let mut out = String::new();
    for item in &items {
        let state = match (&item.run_id, &item.goal_id, item.goal_status) {
            (Some(run), Some(goal), Some(status)) => {
                format!("{} in run {run} as {goal}", status.as_str())
            }
            (Some(run), _, _) => format!("taken by run {run}"),
            _ => "queued".to_owned(),
        };
        let _ = writeln!(out, "{:>4}  {:<32}  {}", item.id, state, item.text);
    }
    if items.is_empty() {
        ui::say(g.quiet, Verb::Empty, "no goal is queued");
    } else {
        ui::out(out.trim_end())?;
    }
    Ok(exit::OK)
}

pub(super) fn remove(g: &Globals, id: i64) -> anyhow::Result<u8> {
    let repo = open_repo(g)?;
    let mut board = open_board(&repo)?;
    match board.queue_mut().remove(id)? {
        QueueRemoval::Removed => {
            if g.json {
                ui::out(&json!({ "removed": id }).to_string())?;
            } else {
                ui::say(g.quiet, Verb::Removed, &format!("goal {id} from the queue"));
            }
            Ok(exit::OK)
        }
        QueueRemoval::NotFound => Err(Usage::new(format!("no goal {id} in the queue"))
            .hint("`swarm queue list` shows the queue")
            .into()),
        QueueRemoval::Taken { run, goal } => Err(Usage::new(format!(
            "goal {id} was taken by run {run} (as {goal}) and can no longer be removed"
        ))
        .hint(format!(
            "stop the run with Ctrl-C, or let it finish; `swarm status {run}` shows it"
        ))
        .into()),
    }
}

pub(super) fn run(g: &Globals, configured: &Configured) -> anyhow::Result<u8> {
    let repo = open_repo(g)?;
    let board = open_board(&repo)?;
    let waiting = board
        .queue()
        .items()?
        .iter()
        .filter(|i| i.run_id.is_none())
        .count();
    drop(board);
    if waiting == 0 {
        ui::say(g.quiet, Verb::Empty, "no goal is queued; nothing ran");
        if g.json {
            // No run, so no summary: a reader of stdout still gets an answer it can parse.
            ui::out(&serde_json::json!({ "run": null, "goals": 0 }).to_string())?;
        }
        return Ok(exit::OK);
    }
    goal::run_goals(g, &[], true, configured)
}
