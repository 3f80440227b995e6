//! `swarm steer TASK MESSAGE` (and the interface's and the mirror's `/steer`): a message for a
//! task's agent while its run goes, left in the task's mailbox (`agent::steer`) and recorded in
//! the run's log. The run's process is not touched: its attempts take the message themselves.

use crate::error::Usage;
use crate::store::{Board, Event, RunEvent, TaskStatus};
use crate::ui::{self, Verb};

use super::context::{Globals, open_repo, open_run_board};
use super::inspect::pick_run;
use super::show::unknown_task;

/// What is said once a message is sent.
pub(super) const DELIVERY: &str = "the built-in agent reads it before its next request; another agent, first in its next attempt's prompt";

pub(super) fn steer(
    g: &Globals,
    task: &str,
    message: &str,
    run: Option<&str>,
) -> anyhow::Result<u8> {
    let repo = open_repo(g)?;
    let mut board = open_run_board(g, &repo)?;
    let record = pick_run(&board, run)?;
    send(&mut board, &record.id, task, message, run.is_some())?;
    ui::say(
        g.quiet,
        Verb::Sent,
        &format!("to {task} of run {}: {DELIVERY}", record.id),
    );
    Ok(crate::error::exit::OK)
}

/// Leaves `message` (secrets hidden) for task `task` of run `run` and records it; refused for
/// an empty message, an unknown task, or one that has ended.
pub(super) fn send(
    board: &mut Board,
    run: &str,
    task: &str,
    message: &str,
    run_given: bool,
) -> anyhow::Result<()> {
    if message.trim().is_empty() {
        return Err(Usage::new("the message is empty: say what the task's agent should do").into());
    }
    let tasks = board.load_tasks(run)?;
    let Some(t) = tasks.iter().find(|t| t.id == task) else {
        return Err(unknown_task(board, task, run, &tasks, run_given, "steer")?.into());
    };
    if matches!(
        t.status,
        TaskStatus::Done
            | TaskStatus::Failed
            | TaskStatus::Skipped
            | TaskStatus::Parked
            | TaskStatus::Committed
    ) {
        let hint = match t.status {
            TaskStatus::Parked | TaskStatus::Failed => {
                format!("`swarm retry {task}` runs it again")
            }
            _ => "steering reaches a task that is running or has yet to run".to_owned(),
        };
        return Err(Usage::new(format!(
            "task {task} of run {run} is {}: no agent of it will read a message",
            t.status.as_str()
        ))
        .hint(hint)
        .into());
    }
    if t.spec.get("run").is_some_and(|r| !r.is_null()) {
        return Err(Usage::new(format!(
            "task {task} of run {run} runs a command, not an agent: no message reaches it"
        ))
        .hint("steer a task that has a prompt")
        .into());
    }
    let text = crate::secret::redact(message.trim()).into_owned();
    let mailbox = crate::agent::steer::mailbox(&board.run_dir(run), task);
    crate::agent::steer::post(&mailbox, &text)?;
    board.event(run, &Event::task(task, RunEvent::Steered { text }))?;
    Ok(())
}
