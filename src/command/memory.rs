//! The repository's memory of past goals, for planners: what a goal's run came to is kept
//! when the run ends (its plan's skeleton, what became of each task and why, what it cost,
//! secrets hidden), found again when a later goal like it is planned and given to the planner
//! as data, bounded; and `swarm memory list|show|forget`. Off with `--no-memory` (the
//! `no-memory` key) or `SWARM_RECALL=0`: then nothing is recalled and nothing kept.

use std::fmt::Write as _;

use crate::config::Options;
use crate::error::{Usage, exit};
use crate::plan::{Action, Plan};
use crate::report::GoalFacts;
use crate::store::{Board, Event, Memory, RunEvent, TaskRecord, TaskStatus};
use crate::ui;

use super::context::{Globals, open_board, open_repo};

/// Past goals given to one planning, at most.
const RECALLED: usize = 3;
/// Characters of one past goal given to a planner, at most.
const ONE_CAP: usize = 1_500;
/// Lines of a past plan given to a planner, at most.
const PLAN_LINES: usize = 12;

/// Whether memory is on for a run with `options`: not with `--no-memory`, nor with
/// `SWARM_RECALL=0`.
pub(super) fn enabled(options: &Options) -> bool {
    !options.no_memory && std::env::var("SWARM_RECALL").map_or(true, |v| v.trim() != "0")
}

/// What memory gives the planning of one goal: the text for the planner, and the past runs
/// it comes from.
#[derive(Debug, Clone, Default)]
pub(crate) struct Recalled {
    pub(crate) text: String,
    pub(crate) runs: Vec<String>,
}

/// What memory recalls for `goal` of run `run` (none of the run's own), recorded in the run's
/// log (`recalled`) when it is anything; nothing when memory is off.
pub(super) fn recall(
    board: &mut Board,
    options: &Options,
    run: &str,
    goal_id: Option<&str>,
    goal: &str,
) -> anyhow::Result<Recalled> {
    if !enabled(options) {
        return Ok(Recalled::default());
    }
    let found = board.memory().recall(goal, run, RECALLED)?;
    if found.is_empty() {
        return Ok(Recalled::default());
    }
    let text = found.iter().map(shown).collect::<Vec<_>>().join("\n");
    let runs: Vec<String> = found.iter().map(|m| m.run_id.clone()).collect();
    board.event(
        run,
        &Event::run(RunEvent::Recalled {
            goal: goal_id.map(str::to_owned),
            runs: runs.clone(),
        }),
    )?;
    Ok(Recalled { text, runs })
}

/// A past goal as a planner is given it, at most `ONE_CAP` characters.
fn shown(m: &Memory) -> String {
    let mut plan: Vec<&str> = m.skeleton.lines().take(PLAN_LINES).collect();
    let more = m.skeleton.lines().count().saturating_sub(PLAN_LINES);
    let more_line = format!("… and {more} more tasks");
    if more > 0 {
        plan.push(&more_line);
    }
    let text = format!(
        "- run {} (goal {}): {}\n  plan:\n    {}\n  outcome: {}\n  cost: {} tokens, {}",
        m.run_id,
        m.goal_id,
        ui::one_line(&m.goal, 200),
        plan.join("\n    "),
        m.outcome,
        m.tokens,
        ui::duration(std::time::Duration::from_millis(
            u64::try_from(m.elapsed_ms).unwrap_or(0)
        )),
    );
    match text.char_indices().nth(ONE_CAP) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    }
}

/// Keeps what each goal of the finished run came to: a run of several goals, each of
/// `goals`; a single goal's run (`single`), its whole plan. Nothing when memory is off, or
/// for a task file's run (no goal was planned).
#[expect(
    clippy::too_many_arguments,
    reason = "the pieces of a run's end that memory keeps"
)]
pub(super) fn remember(
    board: &mut Board,
    options: &Options,
    run: &str,
    plan: &Plan,
    tasks: &[TaskRecord],
    goals: &[GoalFacts],
    single: Option<&str>,
    elapsed_ms: i64,
) -> anyhow::Result<()> {
    if !enabled(options) {
        return Ok(());
    }
    let mut kept: Vec<(String, String, Vec<usize>)> = goals
        .iter()
        .map(|g| (g.record.id.clone(), g.record.text.clone(), g.tasks.clone()))
        .collect();
    if let Some(goal) = single.filter(|_| goals.is_empty()) {
        kept.push((
            "goal".to_owned(),
            goal.to_owned(),
            (0..plan.len()).collect(),
        ));
    }
    for (goal_id, text, of) in kept {
        if of.is_empty() {
            continue;
        }
        let records: Vec<&TaskRecord> = of
            .iter()
            .filter_map(|&i| plan.tasks.get(i))
            .filter_map(|t| tasks.iter().find(|r| r.id == t.id.as_str()))
            .collect();
        let memory = Memory {
            id: 0,
            run_id: run.to_owned(),
            goal_id,
            at: 0,
            goal: hidden(&text),
            skeleton: hidden(&skeleton(plan, &of)),
            outcome: hidden(&outcome(&records)),
            tokens: records.iter().map(|r| r.tokens).sum(),
            elapsed_ms,
        };
        board.memory_mut().remember(&memory)?;
    }
    Ok(())
}

/// `text` with every secret's value hidden.
fn hidden(text: &str) -> String {
    crate::secret::redact(text).into_owned()
}

/// The plan of tasks `of`, a task a line: `id (lane, mode; files a, b) after x, y: first words`.
fn skeleton(plan: &Plan, of: &[usize]) -> String {
    let mut out = String::new();
    for &i in of {
        let Some(t) = plan.tasks.get(i) else {
            continue;
        };
        let files = if t.files.is_empty() {
            String::new()
        } else {
            format!("; files {}", t.files.join(", "))
        };
        let deps = if t.deps.is_empty() {
            String::new()
        } else {
            let deps: Vec<&str> = t.deps.iter().map(crate::plan::TaskId::as_str).collect();
            format!(" after {}", deps.join(", "))
        };
        let words = t.title.clone().unwrap_or_else(|| match &t.action {
            Action::Prompt(p) | Action::Run(p) => p.clone(),
        });
        let _ = writeln!(
            out,
            "{} ({}, {}{files}){deps}: {}",
            t.id.as_str(),
            t.lane.as_str(),
            t.mode.as_str(),
            ui::one_line(&words, 100)
        );
    }
    out
}

/// What became of each task: merged writers and done readers named together; each parked,
/// failed or skipped task with why.
fn outcome(records: &[&TaskRecord]) -> String {
    let with =
        |s: TaskStatus| -> Vec<&&TaskRecord> { records.iter().filter(|r| r.status == s).collect() };
    let mut parts = Vec::new();
    let done: Vec<&str> = with(TaskStatus::Done)
        .iter()
        .map(|r| r.id.as_str())
        .collect();
    if !done.is_empty() {
        parts.push(format!("done (writers merged): {}", done.join(", ")));
    }
    for (status, word) in [
        (TaskStatus::Parked, "parked"),
        (TaskStatus::Failed, "failed"),
        (TaskStatus::Skipped, "skipped"),
    ] {
        for r in with(status) {
            let why = r
                .error
                .as_deref()
                .map(|e| format!(" ({})", ui::one_line(e, 200)))
                .unwrap_or_default();
            parts.push(format!("{word} {}{why}", r.id));
        }
    }
    let unfinished = records
        .iter()
        .filter(|r| {
            !matches!(
                r.status,
                TaskStatus::Done | TaskStatus::Parked | TaskStatus::Failed | TaskStatus::Skipped
            )
        })
        .count();
    if unfinished > 0 {
        parts.push(format!("{unfinished} not finished"));
    }
    parts.join("; ")
}

/// What `swarm memory` does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MemoryCommand {
    List,
    Show(i64),
    /// One memory, or all of it.
    Forget(Option<i64>),
}

/// `swarm memory list|show|forget`.
pub(super) fn memory(g: &Globals, action: &MemoryCommand) -> anyhow::Result<u8> {
    let repo = open_repo(g)?;
    let mut board = open_board(&repo)?;
    match action {
        MemoryCommand::List => {
            let all = board.memory().list()?;
            if g.json {
                ui::out(&serde_json::to_string_pretty(&all)?)?;
                return Ok(exit::OK);
            }
            if all.is_empty() {
                ui::out("memory is empty: no goal's run has ended with memory on\n")?;
                return Ok(exit::OK);
            }
            let mut out = String::new();
            for m in &all {
                let _ = writeln!(
                    out,
                    "{:>4}  {}  {:<6} {}",
                    m.id,
                    m.run_id,
                    m.goal_id,
                    ui::one_line(&m.goal, 80)
                );
            }
            ui::out(&out)?;
        }
        MemoryCommand::Show(id) => {
            let Some(m) = board.memory().get(*id)? else {
                anyhow::bail!(
                    Usage::new(format!("memory {id}: there is no such memory"))
                        .hint("`swarm memory list` lists them")
                );
            };
            if g.json {
                ui::out(&serde_json::to_string_pretty(&m)?)?;
            } else {
                ui::out(&format!(
                    "memory {} of run {} (goal {})\ngoal: {}\nplan:\n{}outcome: {}\ncost: {} tokens, {}\n",
                    m.id,
                    m.run_id,
                    m.goal_id,
                    m.goal,
                    m.skeleton,
                    m.outcome,
                    m.tokens,
                    ui::duration(std::time::Duration::from_millis(
                        u64::try_from(m.elapsed_ms).unwrap_or(0)
                    ))
                ))?;
            }
        }
        MemoryCommand::Forget(id) => {
            let gone = board.memory_mut().forget(*id)?;
            if let (Some(id), 0) = (id, gone) {
                anyhow::bail!(
                    Usage::new(format!("memory {id}: there is no such memory"))
                        .hint("`swarm memory list` lists them")
                );
            }
            if g.json {
                ui::out(&serde_json::json!({ "forgotten": gone }).to_string())?;
            } else {
                ui::out(&format!(
                    "forgot {}\n",
                    ui::count(gone, "memory", "memories")
                ))?;
            }
        }
    }
    Ok(exit::OK)
}
