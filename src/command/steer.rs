//! `swarm steer TASK MESSAGE`: a message for a task's agent while its run goes, left in the
//! task's mailbox (`agent::steer`) and recorded in the run's log. The run's process is not
//! touched: its attempts take the message themselves.

use crate::error::Usage;
use crate::store::{Event, RunEvent, TaskStatus};
use crate::ui::{self, Verb};

use super::context::{Globals, open_repo, open_run_board};
use super::inspect::pick_run;
use super::show::unknown_task;

pub(super) fn steer(
    g: &Globals,
    task: &str,
    message: &str,
    run: Option<&str>,
) -> anyhow::Result<u8> {
    if message.trim().is_empty() {
        return Err(Usage::new("the message is empty: say what the task's agent should do").into());
    }
    let repo = open_repo(g)?;
    let mut board = open_run_board(g, &repo)?;
    let record = pick_run(&board, run)?;
    let tasks = board.load_tasks(&record.id)?;
    let Some(t) = tasks.iter().find(|t| t.id == task) else {
        return Err(unknown_task(&board, task, &record.id, &tasks, run.is_some(), "steer")?.into());
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
            "task {task} of run {} is {}: no agent of it will read a message",
            record.id,
            t.status.as_str()
        ))
        .hint(hint)
        .into());
    }
    let text = crate::secret::redact(message.trim()).into_owned();
    let mailbox = crate::agent::steer::mailbox(&board.run_dir(&record.id), task);
    crate::agent::steer::post(&mailbox, &text)?;
    board.event(
        &record.id,
        &Event::task(task, RunEvent::Steered { text: text.clone() }),
    )?;
    ui::say(
        g.quiet,
        Verb::Sent,
        &format!(
            "to {task} of run {}: the built-in agent reads it before its next request; another agent, first in its next attempt's prompt",
            record.id
        ),
    );
    Ok(crate::error::exit::OK)
}
