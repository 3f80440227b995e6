//! The repository's memory of past goals, for planners: what a goal's run came to is kept
//! when the run ends (its plan's skeleton, what became of each task and why, what it cost,
//! secrets hidden), found again when a later goal like it is planned and given to the planner
//! as data, bounded; and `swarm memory list|show|forget`. Off with `--no-memory` (the
//! `no-memory` key) or `SWARM_RECALL=0`: then nothing is recalled and nothing kept.

use std::fmt::Write as _;

use crate::config::Options;
use crate::error::{Usage, exit};
use crate::plan::{Action, Plan};
use crate::report::{GoalFacts, Parked};
use crate::store::{Board, Event, Lesson, Memory, RunEvent, TaskRecord, TaskStatus};
use crate::ui;

use super::context::{Globals, open_board, open_repo};

/// Past goals given to one planning, at most.
const RECALLED: usize = 3;
/// Characters of one past goal given to a planner, at most.
const ONE_CAP: usize = 1_500;
/// Lessons of the recalled runs given to a planner, at most.
const LESSONS_TO_PLANNER: usize = 10;
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
/// log (`recalled`) when it is anything; nothing when memory is off, or when it cannot be read
/// (memory is a help: the goal is planned without it, and swarm says so).
pub(super) fn recall(
    g: &Globals,
    board: &mut Board,
    options: &Options,
    run: &str,
    goal_id: Option<&str>,
    goal: &str,
) -> anyhow::Result<Recalled> {
    if !enabled(options) {
        return Ok(Recalled::default());
    }
    soft(
        g,
        "planning without it",
        recalled(board, run, goal_id, goal),
    )
}

/// `found`, or, when memory could not be read for a reason other than a full disk (which
/// stops the run as anywhere), nothing, with a note saying so and what the run does instead.
fn soft<T: Default>(g: &Globals, instead: &str, found: anyhow::Result<T>) -> anyhow::Result<T> {
    match found {
        Ok(found) => Ok(found),
        Err(e) if crate::store::is_full(&e) => Err(e),
        Err(e) => {
            ui::say(
                g.quiet,
                ui::Verb::Note,
                &format!("memory could not be read; {instead}: {e:#}"),
            );
            Ok(T::default())
        }
    }
}

/// The lessons to tell a run's agents: none when memory is off, or when it cannot be read
/// (swarm says so and the run goes on without them).
pub(super) fn lessons(
    g: &Globals,
    board: &Board,
    options: &Options,
) -> anyhow::Result<Vec<Lesson>> {
    if !enabled(options) {
        return Ok(Vec::new());
    }
    soft(g, "agents are told no lesson", board.memory().lessons())
}

fn recalled(
    board: &mut Board,
    run: &str,
    goal_id: Option<&str>,
    goal: &str,
) -> anyhow::Result<Recalled> {
    let found = board.memory().recall(goal, run, RECALLED)?;
    if found.is_empty() {
        return Ok(Recalled::default());
    }
    let mut text = found.iter().map(shown).collect::<Vec<_>>().join("\n");
    let runs: Vec<String> = found.iter().map(|m| m.run_id.clone()).collect();
    let taught: Vec<Lesson> = board
        .memory()
        .lessons()?
        .into_iter()
        .filter(|l| runs.contains(&l.run_id))
        .take(LESSONS_TO_PLANNER)
        .collect();
    if !taught.is_empty() {
        let lines: Vec<String> = taught.iter().map(|l| format!("- {}", l.text)).collect();
        let _ = write!(text, "\nWhat those runs taught:\n{}", lines.join("\n"));
    }
    board.event(
        run,
        &Event::run(RunEvent::Recalled {
            goal: goal_id.map(str::to_owned),
            runs: runs.clone(),
            lessons: taught.iter().map(|l| l.id).collect(),
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
    parked: &[Parked],
    elapsed_ms: i64,
) -> anyhow::Result<()> {
    if !enabled(options) {
        return Ok(());
    }
    if !goals.is_empty() || single.is_some() {
        learn(board, options, run, plan, tasks, parked)?;
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

/// What the run teaches, with no model call: a check that failed on a writer's files (the
/// check's last line with it), and writers whose changes conflicted on some files. Lessons
/// that a check passing on the same files now contradicts are retired.
fn learn(
    board: &mut Board,
    options: &Options,
    run: &str,
    plan: &Plan,
    tasks: &[TaskRecord],
    parked: &[Parked],
) -> anyhow::Result<()> {
    let mut taught: Vec<Lesson> = Vec::new();
    let mut passed: Vec<(String, Vec<String>)> = Vec::new();
    for t in &plan.tasks {
        let Some(record) = tasks.iter().find(|r| r.id == t.id.as_str()) else {
            continue;
        };
        let check = t.check.clone().or_else(|| options.check.clone());
        match (record.status, check, t.files.is_empty()) {
            // The board keeps the error with secrets hidden, the check's command included.
            (TaskStatus::Failed, Some(check), false)
                if record.error.as_deref().is_some_and(|e| {
                    e.starts_with(&format!("check `{}` failed", hidden(&check)))
                }) =>
            {
                let said = check_said(record);
                taught.push(lesson(
                    run,
                    &format!(
                        "The check `{check}` failed on a change to {}: {said}",
                        t.files.join(", ")
                    ),
                    &t.files,
                    t.lane.as_str(),
                ));
            }
            (TaskStatus::Done, Some(check), false) => passed.push((check, t.files.clone())),
            _ => {}
        }
    }
    for p in parked
        .iter()
        .filter(|p| !p.paths.is_empty() && p.reason.is_none())
    {
        let lane = plan
            .tasks
            .iter()
            .find(|t| t.id.as_str() == p.task)
            .map_or("worker", |t| t.lane.as_str());
        taught.push(lesson(
            run,
            &format!(
                "Writers changing {} conflicted when merged: plan such writers one after the other, or as one task.",
                p.paths.join(", ")
            ),
            &p.paths,
            lane,
        ));
    }
    board.memory_mut().retire(&|l: &Lesson| {
        passed.iter().any(|(check, files)| {
            l.text.starts_with(&format!("The check `{check}` failed"))
                && files.iter().any(|f| l.paths.contains(f))
        })
    })?;
    for l in &taught {
        board.memory_mut().learn(l)?;
    }
    Ok(())
}

fn lesson(run: &str, text: &str, paths: &[String], lane: &str) -> Lesson {
    Lesson {
        id: 0,
        run_id: run.to_owned(),
        at: 0,
        text: hidden(text),
        paths: paths.iter().map(|p| hidden(p)).collect(),
        lanes: vec![lane.to_owned()],
        taught: 1,
    }
}

/// The last line a failed check printed (from the log beside its attempt's transcript), or
/// that it printed nothing.
fn check_said(record: &TaskRecord) -> String {
    let log = record
        .transcript
        .as_deref()
        .map(|t| std::path::Path::new(t).with_extension("check.log"));
    let text = log
        .and_then(|log| std::fs::read_to_string(log).ok())
        .unwrap_or_default();
    // The log's first two lines are swarm's (where the check ran, its command), and so are
    // its `--- … ---` marks (how it ended).
    text.lines()
        .skip(2)
        .map(str::trim)
        .filter(|l| !(l.is_empty() || (l.starts_with("--- ") && l.ends_with(" ---"))))
        .last()
        .map_or_else(
            || "it printed nothing".to_owned(),
            |l| format!("it said `{}`", ui::one_line(l, 200)),
        )
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
    /// A past goal's number, or a lesson's (`L3`).
    Show(String),
    /// One past goal or lesson, or all of memory.
    Forget(Option<String>),
}

/// What a number names: a past goal (`3`) or a lesson (`L3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    Goal(i64),
    Lesson(i64),
}

fn which(id: &str) -> anyhow::Result<Which> {
    let id = id.trim();
    let lesson = id.strip_prefix(['L', 'l']);
    lesson
        .unwrap_or(id)
        .parse::<i64>()
        .ok()
        .map(|n| {
            if lesson.is_some() {
                Which::Lesson(n)
            } else {
                Which::Goal(n)
            }
        })
        .ok_or_else(|| {
            Usage::new(format!(
                "`{id}` is neither a past goal's number (3) nor a lesson's (L3)"
            ))
            .hint("`swarm memory list` lists them")
            .into()
        })
}

fn no_such(id: &str) -> anyhow::Error {
    Usage::new(format!("memory {id}: there is no such memory"))
        .hint("`swarm memory list` lists them")
        .into()
}

/// `swarm memory list|show|forget`.
pub(super) fn memory(g: &Globals, action: &MemoryCommand) -> anyhow::Result<u8> {
    let repo = open_repo(g)?;
    let mut board = open_board(&repo)?;
    match action {
        MemoryCommand::List => {
            let goals = board.memory().list()?;
            let lessons = board.memory().lessons()?;
            if g.json {
                ui::out(&serde_json::to_string_pretty(
                    &serde_json::json!({ "goals": goals, "lessons": lessons }),
                )?)?;
                return Ok(exit::OK);
            }
            if goals.is_empty() && lessons.is_empty() {
                ui::out("memory is empty: no goal's run has finished with memory on\n")?;
                return Ok(exit::OK);
            }
            let mut out = String::new();
            if !goals.is_empty() {
                out.push_str("past goals:\n");
            }
            for m in &goals {
                let _ = writeln!(
                    out,
                    "{:>5}  {}  {:<6} {}",
                    m.id,
                    m.run_id,
                    m.goal_id,
                    ui::one_line(&m.goal, 80)
                );
            }
            if !lessons.is_empty() {
                out.push_str("lessons:\n");
            }
            for l in &lessons {
                let _ = writeln!(
                    out,
                    "{:>5}  taught {}×  {}",
                    format!("L{}", l.id),
                    l.taught,
                    ui::one_line(&l.text, 120)
                );
            }
            ui::out(&out)?;
        }
        MemoryCommand::Show(id) => match which(id)? {
            Which::Goal(n) => {
                let m = board.memory().get(n)?.ok_or_else(|| no_such(id))?;
                if g.json {
                    ui::out(&serde_json::to_string_pretty(&m)?)?;
                } else {
                    ui::out(&format!("past goal {}\n{}\n", m.id, shown(&m)))?;
                }
            }
            Which::Lesson(n) => {
                let lessons = board.memory().lessons()?;
                let l = lessons
                    .iter()
                    .find(|l| l.id == n)
                    .ok_or_else(|| no_such(id))?;
                if g.json {
                    ui::out(&serde_json::to_string_pretty(l)?)?;
                } else {
                    ui::out(&format!(
                        "lesson L{} (taught by {} run{}, the newest {})\nabout: {}\n{}\n",
                        l.id,
                        l.taught,
                        if l.taught == 1 { "" } else { "s" },
                        l.run_id,
                        l.paths.join(", "),
                        l.text
                    ))?;
                }
            }
        },
        MemoryCommand::Forget(id) => {
            let gone = match id.as_deref().map(which).transpose()? {
                None => {
                    board.memory_mut().forget(None)? + board.memory_mut().forget_lessons(None)?
                }
                Some(Which::Goal(n)) => board.memory_mut().forget(Some(n))?,
                Some(Which::Lesson(n)) => board.memory_mut().forget_lessons(Some(n))?,
            };
            if let (Some(id), 0) = (id, gone) {
                return Err(no_such(id));
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
