//! The repository's memory of past goals, for planners: what a goal's run came to is kept
//! when the run ends (its plan's skeleton, what became of each task and why, what it cost,
//! secrets hidden), found again when a later goal like it is planned and given to the planner
//! as data, bounded; and `swarm memory list|show|forget`. Off with `--no-memory` (the
//! `no-memory` key) or `SWARM_RECALL=0`: then nothing is recalled and nothing kept.

use std::fmt::Write as _;

use crate::config::{Lessons, Options};
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
/// Lessons past which a run's end curates them.
const CURATE_PAST: usize = 100;
/// Runs after a lesson was taught in which it was never used, for the curator to retire it.
const UNUSED_RUNS: u32 = 20;
/// Of two lessons about a file, the share of their words in common that makes them one.
const SAME_WORDS: f64 = 0.6;

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
        g.quiet,
        "planning without it",
        recalled(board, run, goal_id, goal),
    )
}

/// Memory's recall for the goals that join run `run` from the queue while it goes, as
/// `recall` does for the goals it starts with; none when memory is off.
pub(super) fn recall_joining(
    g: &Globals,
    options: &Options,
    run: &str,
) -> Option<crate::schedule::Recall> {
    if !enabled(options) {
        return None;
    }
    let (quiet, run) = (g.quiet, run.to_owned());
    Some(Box::new(
        move |board: &mut Board, goal_id: &str, goal: &str| {
            let found = soft(
                quiet,
                "planning without it",
                recalled(board, &run, Some(goal_id), goal),
            )?;
            Ok(found.text)
        },
    ))
}

/// `found`, or, when memory could not be read for a reason other than a full disk (which
/// stops the run as anywhere), nothing, with a note saying so and what the run does instead.
fn soft<T: Default>(quiet: bool, instead: &str, found: anyhow::Result<T>) -> anyhow::Result<T> {
    match found {
        Ok(found) => Ok(found),
        Err(e) if crate::store::is_full(&e) => Err(e),
        Err(e) => {
            ui::say(
                quiet,
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
    soft(
        g.quiet,
        "agents are told no lesson",
        board.memory().lessons(),
    )
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

/// A finished run's end, as memory sees it.
pub(super) struct RunEnd<'a> {
    pub(super) run: &'a str,
    pub(super) plan: &'a Plan,
    pub(super) tasks: &'a [TaskRecord],
    pub(super) goals: &'a [GoalFacts],
    /// A single goal's run: its goal.
    pub(super) single: Option<&'a str>,
    pub(super) parked: &'a [Parked],
    pub(super) events: &'a [crate::store::Logged],
    pub(super) elapsed_ms: i64,
    /// The planner's model, for `lessons = "model"`.
    pub(super) client: Option<&'a crate::llm::Client>,
}

/// What keeping a run's end cost: the lessons the planner's model distilled and its tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Kept {
    pub(super) distilled: Vec<i64>,
    pub(super) tokens: u64,
}

/// Keeps what each goal of the finished run came to: a run of several goals, each of its
/// goals; a single goal's run, its whole plan. Counts the lessons the run gave to its planners
/// and agents as used, learns what it teaches (with `lessons = "model"`, the planner's model
/// too, a note saying when it could not), and curates the lessons once there are more than
/// `CURATE_PAST`. Nothing when memory is off, or for a task file's run (no goal was planned).
pub(super) fn remember(
    g: &Globals,
    board: &mut Board,
    options: &Options,
    end: &RunEnd<'_>,
) -> anyhow::Result<Kept> {
    if !enabled(options) || (end.goals.is_empty() && end.single.is_none()) {
        return Ok(Kept::default());
    }
    let mut used: Vec<i64> = end
        .events
        .iter()
        .flat_map(|e| match &e.event {
            RunEvent::Recalled { lessons, .. } | RunEvent::Told { lessons } => lessons.clone(),
            _ => Vec::new(),
        })
        .collect();
    used.sort_unstable();
    used.dedup();
    board.memory_mut().used(&used)?;
    let taught = learn(board, options, end)?;
    let mut kept: Vec<(String, String, Vec<usize>)> = end
        .goals
        .iter()
        .map(|g| (g.record.id.clone(), g.record.text.clone(), g.tasks.clone()))
        .collect();
    if let Some(goal) = end.single.filter(|_| end.goals.is_empty()) {
        kept.push((
            "goal".to_owned(),
            goal.to_owned(),
            (0..end.plan.len()).collect(),
        ));
    }
    let mut memories = Vec::new();
    for (goal_id, text, of) in kept {
        if of.is_empty() {
            continue;
        }
        let records: Vec<&TaskRecord> = of
            .iter()
            .filter_map(|&i| end.plan.tasks.get(i))
            .filter_map(|t| end.tasks.iter().find(|r| r.id == t.id.as_str()))
            .collect();
        let memory = Memory {
            id: 0,
            run_id: end.run.to_owned(),
            goal_id,
            at: 0,
            goal: hidden(&text),
            skeleton: hidden(&skeleton(end.plan, &of)),
            outcome: hidden(&outcome(&records)),
            tokens: records.iter().map(|r| r.tokens).sum(),
            elapsed_ms: end.elapsed_ms,
        };
        board.memory_mut().remember(&memory)?;
        memories.push(memory);
    }
    let kept = match (options.lessons.unwrap_or_default(), end.client) {
        (Lessons::Model, Some(client)) => distil(g, board, end, client, &memories, &taught)?,
        _ => Kept::default(),
    };
    if board.memory().lessons()?.len() > CURATE_PAST {
        curate(board)?;
    }
    Ok(kept)
}

/// One short call to the planner's model for the lessons of the run whose goals came to
/// `memories` (swarm's own lessons of it, `taught`, with them): those it gives are kept as the
/// run's lessons, about the files they name. Recorded in the run's log (`distilled`) with
/// its tokens; a call that fails or an answer that cannot be read is said in a note and
/// teaches nothing, and the run ends as it would have.
fn distil(
    g: &Globals,
    board: &mut Board,
    end: &RunEnd<'_>,
    client: &crate::llm::Client,
    memories: &[Memory],
    taught: &[Lesson],
) -> anyhow::Result<Kept> {
    let mut facts = String::new();
    for m in memories {
        let _ = writeln!(
            facts,
            "Goal: {}\nPlan, a task a line:\n{}Outcome: {}",
            m.goal, m.skeleton, m.outcome
        );
    }
    if !taught.is_empty() {
        let lines: Vec<String> = taught.iter().map(|l| format!("- {}", l.text)).collect();
        let _ = writeln!(
            facts,
            "Lessons swarm kept of it already (do not repeat them):\n{}",
            lines.join("\n")
        );
    }
    let stop = crate::signal::requested;
    let answer = crate::planner::lessons::distil(client, &hidden(&facts), &stop, &mut |_| {});
    let (found, tokens) = match answer {
        Ok(answer) => (answer.lessons, answer.usage.total_tokens),
        Err(e) => (Err(format!("{e:#}")), 0),
    };
    let mut kept = Kept {
        distilled: Vec::new(),
        tokens,
    };
    let error = match found {
        Ok(lessons) => {
            for d in lessons {
                // Its lanes: those of the tasks that declared the files it is about.
                let mut l = lesson(end.run, &d.text, &d.paths, "");
                let mut lanes: Vec<String> = Vec::new();
                for t in end.plan.tasks.iter().filter(|t| l.about(&t.files)) {
                    if !lanes.iter().any(|lane| lane == t.lane.as_str()) {
                        lanes.push(t.lane.as_str().to_owned());
                    }
                }
                l.lanes = lanes;
                kept.distilled.push(board.memory_mut().learn(&l)?);
            }
            None
        }
        Err(e) => {
            ui::say(
                g.quiet,
                ui::Verb::Note,
                &format!("the planner's model distilled no lesson from this run: {e}"),
            );
            Some(e)
        }
    };
    board.event(
        end.run,
        &Event::run(RunEvent::Distilled {
            lessons: kept.distilled.clone(),
            tokens,
            error,
        }),
    )?;
    Ok(kept)
}

/// What the run teaches with no model call, its lessons: a check that failed on a writer's
/// files (the check's last line with it), and writers whose changes conflicted on some files.
/// Lessons that a check passing on the same files now contradicts are retired.
fn learn(board: &mut Board, options: &Options, end: &RunEnd<'_>) -> anyhow::Result<Vec<Lesson>> {
    let (run, plan, tasks, parked) = (end.run, end.plan, end.tasks, end.parked);
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
    Ok(taught)
}

/// What the curator does to the lessons: merges each group of duplicates into its newest
/// (`into`, `merged`), and retires the lessons never used.
#[derive(Debug, Default, PartialEq, Eq)]
struct Curation {
    merges: Vec<(i64, Vec<i64>)>,
    retired: Vec<i64>,
}

/// What the curator would do to `lessons` (newest first): two lessons about a file in common
/// whose words are mostly the same (`SAME_WORDS`) are one, kept as the newer; a lesson no
/// planner or agent was given in the `UNUSED_RUNS` runs kept since it was last taught
/// (`runs_since` its time) is retired.
fn curation(lessons: &[Lesson], runs_since: &dyn Fn(i64) -> u32) -> Curation {
    let words: Vec<Vec<String>> = lessons
        .iter()
        .map(|l| crate::store::words(&l.text))
        .collect();
    let mut gone = vec![false; lessons.len()];
    let mut out = Curation::default();
    for (i, l) in lessons.iter().enumerate() {
        if gone[i] {
            continue;
        }
        let mut merged = Vec::new();
        for (j, other) in lessons.iter().enumerate().skip(i + 1) {
            if gone[j] || !l.about(&other.paths) && !other.about(&l.paths) {
                continue;
            }
            if alike(&words[i], &words[j]) {
                gone[j] = true;
                merged.push(other.id);
            }
        }
        let used = l.used
            + lessons
                .iter()
                .filter(|o| merged.contains(&o.id))
                .map(|o| o.used)
                .sum::<u32>();
        if used == 0 && runs_since(l.at) >= UNUSED_RUNS {
            out.retired.push(l.id);
            out.retired.extend(&merged);
        } else if !merged.is_empty() {
            out.merges.push((l.id, merged));
        }
    }
    out
}

/// Whether two lessons' words are mostly the same: the share of all their words that both
/// have is at least `SAME_WORDS`.
fn alike(a: &[String], b: &[String]) -> bool {
    let both = a.iter().filter(|w| b.contains(w)).count();
    let all = a.len() + b.len() - both;
    all > 0 && both as f64 / all as f64 >= SAME_WORDS
}

/// Curates the lessons on the board (see `curation`): how many were merged into others, and
/// how many retired.
fn curate(board: &mut Board) -> anyhow::Result<(usize, usize)> {
    let lessons = board.memory().lessons()?;
    let found = {
        let memories = board.memory();
        let since = |at: i64| memories.runs_since(at).unwrap_or(0);
        curation(&lessons, &since)
    };
    let by_id = |id: i64| lessons.iter().find(|l| l.id == id);
    let mut merged = 0;
    for (into, others) in &found.merges {
        let Some(into) = by_id(*into) else { continue };
        let others: Vec<&Lesson> = others.iter().filter_map(|&id| by_id(id)).collect();
        merged += others.len();
        board.memory_mut().merge(into, &others)?;
    }
    let retired = board
        .memory_mut()
        .retire(&|l: &Lesson| found.retired.contains(&l.id))?;
    Ok((merged, retired))
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
        used: 0,
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
    /// Merge the duplicate lessons and retire those never used.
    Curate,
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
                    "{:>5}  taught {}×  used {}×  {}",
                    format!("L{}", l.id),
                    l.taught,
                    l.used,
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
                        "lesson L{} (taught by {} run{}, the newest {}; used by {})\nabout: {}\n{}\n",
                        l.id,
                        l.taught,
                        if l.taught == 1 { "" } else { "s" },
                        l.run_id,
                        ui::count(l.used as usize, "run", "runs"),
                        l.paths.join(", "),
                        l.text
                    ))?;
                }
            }
        },
        MemoryCommand::Curate => {
            let (merged, retired) = curate(&mut board)?;
            let left = board.memory().lessons()?.len();
            if g.json {
                ui::out(
                    &serde_json::json!({ "merged": merged, "retired": retired, "lessons": left })
                        .to_string(),
                )?;
            } else {
                ui::out(&format!(
                    "merged {} into others, retired {} never used in {UNUSED_RUNS} runs; {} kept\n",
                    ui::count(merged, "duplicate lesson", "duplicate lessons"),
                    ui::count(retired, "lesson", "lessons"),
                    ui::count(left, "lesson", "lessons"),
                ))?;
            }
        }
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

#[cfg(test)]
mod tests {
    use super::{Curation, UNUSED_RUNS, curation};
    use crate::store::Lesson;

    fn lesson(id: i64, at: i64, text: &str, paths: &[&str], used: u32) -> Lesson {
        Lesson {
            id,
            run_id: format!("r{id}"),
            at,
            text: text.to_owned(),
            paths: paths.iter().map(|p| (*p).to_owned()).collect(),
            lanes: vec!["coder".to_owned()],
            taught: 1,
            used,
        }
    }

    #[test]
    fn the_curator_merges_alike_lessons_about_a_file_and_retires_the_unused_after_enough_runs() {
        let check = |said: &str| {
            format!("The check `cargo test` failed on a change to src/a.rs: it said `{said}`")
        };
        // Newest first, as the board lists them.
        let lessons = [
            lesson(
                5,
                50,
                &check("error: the tests need --offline"),
                &["src/a.rs"],
                0,
            ),
            lesson(
                4,
                40,
                &check("error: the tests need network"),
                &["src/a.rs"],
                1,
            ),
            // The same words about another file: not the same lesson.
            lesson(
                3,
                30,
                &check("error: the tests need --offline"),
                &["src/b.rs"],
                0,
            ),
            // About a directory holding the file, in other words.
            lesson(
                2,
                20,
                "Writers changing src/ conflicted when merged",
                &["src/"],
                0,
            ),
            lesson(
                1,
                10,
                "Nothing in this repository needs the network.",
                &[],
                0,
            ),
        ];
        // Few runs since: nothing is retired.
        assert_eq!(
            curation(&lessons, &|_| UNUSED_RUNS - 1),
            Curation {
                merges: vec![(5, vec![4])],
                retired: vec![],
            }
        );
        // Enough runs since each: those never used go; a merged one used counts for both.
        assert_eq!(
            curation(&lessons, &|_| UNUSED_RUNS),
            Curation {
                merges: vec![(5, vec![4])],
                retired: vec![3, 2, 1],
            }
        );
        // Runs counted from each lesson's own time.
        assert_eq!(
            curation(&lessons, &|at| if at <= 20 { UNUSED_RUNS } else { 0 }).retired,
            vec![2, 1]
        );
    }
}
