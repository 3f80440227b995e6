//! `swarm show TASK`: one task of a run, whole: its spec, status, attempts with their reasons,
//! result, branch and changed files, and the tail of its newest transcript. Reads the board,
//! the repository and the transcript; changes nothing.

use std::fmt::Write as _;
use std::io::{Read as _, Seek as _};
use std::path::Path;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::context::{Globals, open_board, open_repo};
use super::inspect::{RunState, lock_holder, pick_run};
use crate::error::{Usage, exit};
use crate::git::{CommitId, Repo};
use crate::store::{AttemptRecord, Board, RunEvent, TaskRecord, TaskStatus, now_ms};
use crate::{near, ui};

/// How many of the transcript's last lines are shown.
const TAIL_LINES: usize = 20;

/// How much of the transcript's end is read to find them.
const TAIL_BYTES: u64 = 64 * 1024;

/// Everything `show` shows, as its JSON has it.
#[derive(Debug, Serialize)]
struct Shown {
    run: String,
    id: String,
    title: Option<String>,
    lane: Option<String>,
    mode: Option<String>,
    deps: Vec<String>,
    files: Vec<String>,
    prompt: Option<String>,
    run_command: Option<String>,
    spec: Value,
    status: TaskStatus,
    error: Option<String>,
    result: Option<String>,
    tokens: u64,
    /// Of the tokens, the prompts' (0 where the agent does not say).
    prompt_tokens: u64,
    /// Of the prompts' tokens, those the provider had cached.
    cached_tokens: u64,
    cost: Option<f64>,
    branch: Option<String>,
    /// Whether the branch is still there (a merged writer's goes once merged).
    branch_exists: Option<bool>,
    start_commit: Option<String>,
    commit: Option<String>,
    changed_files: Option<Vec<String>>,
    merge: Option<Merge>,
    /// For a task with candidates, its pick: the rule, the winner, each candidate.
    #[serde(skip_serializing_if = "Option::is_none")]
    picked: Option<Value>,
    attempts: Vec<Attempt>,
    transcript: Option<Transcript>,
}

#[derive(Debug, Serialize)]
struct Attempt {
    number: u32,
    started_at: i64,
    finished_at: Option<i64>,
    /// Until it finished; so far while it runs; `None` for one whose process was killed.
    duration_ms: Option<i64>,
    outcome: Option<String>,
    reason: Option<String>,
    continued: bool,
    /// The member of its pool it went to, for a task whose agent is a pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: Option<String>,
    tokens: u64,
    prompt_tokens: u64,
    cached_tokens: u64,
    cost: Option<f64>,
    transcript: String,
}

/// What became of a writer's commit.
#[derive(Debug, Serialize)]
struct Merge {
    state: MergeState,
    /// The merge commit, or the parked commit.
    commit: Option<String>,
    /// The conflicting paths of a parked writer.
    paths: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum MergeState {
    Merged,
    Parked,
    NoChanges,
}

#[derive(Debug, Serialize)]
struct Transcript {
    path: String,
    tail: Vec<String>,
    /// The paths the kernel refused the attempt, as its transcript's end says (see
    /// `agent::confine`).
    refused: Vec<String>,
}

pub(super) fn show(g: &Globals, task: &str, run: Option<&str>) -> anyhow::Result<u8> {
    let repo = open_repo(g)?;
    let board = open_board(&repo)?;
    let record = pick_run(&board, run)?;
    let tasks = board.load_tasks(&record.id)?;
    let Some(t) = tasks.iter().find(|t| t.id == task) else {
        return Err(unknown_task(&board, task, &record.id, &tasks, run.is_some(), "show")?.into());
    };
    let holder = lock_holder(&repo);
    let live = RunState::of(&record.id, record.status, holder.as_deref()) == RunState::Running;
    let shown = gather(&repo, &board, &record.id, t, live)?;
    if g.json {
        ui::out(&serde_json::to_string_pretty(&shown)?)?;
    } else {
        ui::out(&text(&shown))?;
    }
    Ok(exit::OK)
}

/// Task `task` of run `run` as `swarm show --json` prints it; `None` when the run has no such
/// task.
pub(super) fn task_json(
    repo: &Repo,
    board: &Board,
    run: &str,
    task: &str,
) -> anyhow::Result<Option<Value>> {
    let Some(record) = board.load_run(run)? else {
        return Ok(None);
    };
    let tasks = board.load_tasks(run)?;
    let Some(t) = tasks.iter().find(|t| t.id == task) else {
        return Ok(None);
    };
    let holder = lock_holder(repo);
    let live = RunState::of(run, record.status, holder.as_deref()) == RunState::Running;
    Ok(Some(serde_json::to_value(gather(
        repo, board, run, t, live,
    )?)?))
}

/// The error for a task the run does not have, with the hint most likely to help: the run
/// that has it (for `swarm <command> TASK --run RUN`), the names it is close to, or the run's
/// tasks.
pub(super) fn unknown_task(
    board: &Board,
    task: &str,
    run: &str,
    tasks: &[TaskRecord],
    run_given: bool,
    command: &str,
) -> anyhow::Result<Usage> {
    let error = Usage::new(format!("no task {task:?} in run {run}"));
    if board.load_run(task)?.is_some() {
        return Ok(error.hint(format!(
            "{task} is a run: `swarm status {task}` shows its tasks"
        )));
    }
    if !run_given && let Some(other) = board.history().runs_with_task(task)?.first() {
        return Ok(error.hint(format!(
            "{task} is a task of run {other}: swarm {command} {task} --run {other}"
        )));
    }
    let ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
    if ids.is_empty() {
        return Ok(error.hint("the run has no tasks yet"));
    }
    let mut close: Vec<(usize, &str)> = ids
        .iter()
        .filter(|id| near::is_near(task, id))
        .map(|id| (near::distance(task, id), *id))
        .collect();
    close.sort_unstable();
    if close.is_empty() {
        let shown: Vec<&str> = ids.iter().take(12).copied().collect();
        let more = if ids.len() > shown.len() { ", …" } else { "" };
        return Ok(error.hint(format!("its tasks: {}{more}", shown.join(", "))));
    }
    let close: Vec<&str> = close.iter().take(5).map(|(_, id)| *id).collect();
    Ok(error.hint(format!("did you mean {}?", close.join(", "))))
}

fn gather(
    repo: &Repo,
    board: &Board,
    run: &str,
    t: &TaskRecord,
    live: bool,
) -> anyhow::Result<Shown> {
    let spec = &t.spec;
    let text = |key: &str| spec[key].as_str().map(str::to_owned);
    let list = |key: &str| -> Vec<String> {
        spec[key]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let events = board.history().task_events(run, &t.id)?;
    let records = board.history().attempts(run, &t.id)?;
    let now = now_ms();
    let newest = records.last().map(|a| a.number);
    let attempts: Vec<Attempt> = records
        .iter()
        .map(|a| {
            let running = live && a.finished_at.is_none() && Some(a.number) == newest;
            attempt(a, &events, running.then_some(now))
        })
        .collect();
    let merge = merge(&events);
    let picked = events.iter().rev().find_map(|(_, e)| match e {
        RunEvent::Picked { .. } => serde_json::to_value(e).ok().map(|v| v["detail"].clone()),
        _ => None,
    });
    let writes = text("mode").as_deref() == Some("write");
    let changed_files = if !writes {
        None
    } else if merge
        .as_ref()
        .is_some_and(|m| m.state == MergeState::NoChanges)
    {
        Some(Vec::new())
    } else {
        match (&t.start_commit, &t.commit_id) {
            (Some(from), Some(to)) => crate::git::changed_paths(
                repo.common_dir(),
                &CommitId::new(from),
                &CommitId::new(to),
            )
            .ok(),
            _ => None,
        }
    };
    let transcript = records
        .last()
        .map(|a| a.transcript.clone())
        .or_else(|| t.transcript.clone())
        .map(|path| {
            let end = end_of(Path::new(&path));
            Transcript {
                tail: tail(&end, TAIL_LINES),
                refused: end
                    .lines()
                    .filter_map(|l| l.strip_prefix(crate::agent::confine::REFUSED))
                    .map(|l| crate::secret::redact(l).into_owned())
                    .collect(),
                path,
            }
        });
    Ok(Shown {
        run: run.to_owned(),
        id: t.id.clone(),
        title: text("title"),
        lane: text("lane"),
        mode: text("mode"),
        deps: list("deps"),
        files: list("files"),
        prompt: text("prompt"),
        run_command: text("run"),
        spec: spec.clone(),
        status: t.status,
        error: t.error.clone(),
        result: t.result.clone(),
        tokens: t.tokens,
        prompt_tokens: t.prompt_tokens,
        cached_tokens: t.cached_tokens,
        cost: t.cost,
        branch: t.branch.clone(),
        branch_exists: t
            .branch
            .as_ref()
            .map(|b| repo.ref_target(&format!("refs/heads/{b}")))
            .transpose()?
            .map(|tip| tip.is_some()),
        start_commit: t.start_commit.clone(),
        commit: t.commit_id.clone(),
        changed_files,
        merge,
        picked,
        attempts,
        transcript,
    })
}

/// An attempt with why it ended as it did, from the task's events; `now` for one running.
fn attempt(a: &AttemptRecord, events: &[(i64, RunEvent)], now: Option<i64>) -> Attempt {
    // The events of this attempt: from its start to the next attempt's.
    let mut current = None;
    let mut reason = None;
    let mut member = None;
    for (_, event) in events {
        match event {
            RunEvent::TaskStarted { attempt, agent, .. } => {
                current = Some(*attempt);
                if *attempt == a.number {
                    member.clone_from(agent);
                }
            }
            RunEvent::TaskFailed { attempt, error, .. } if *attempt == a.number => {
                reason = Some(error.clone());
            }
            RunEvent::UsageLimit { message, .. } if current == Some(a.number) => {
                reason = Some(message.clone());
            }
            RunEvent::Fault { why, .. } if current == Some(a.number) => {
                reason = Some(why.clone());
            }
            _ => {}
        }
    }
    let duration_ms = match (a.finished_at, now) {
        (Some(end), _) | (None, Some(end)) => Some((end - a.started_at).max(0)),
        (None, None) => None,
    };
    Attempt {
        number: a.number,
        started_at: a.started_at,
        finished_at: a.finished_at,
        duration_ms,
        outcome: a.outcome.clone(),
        reason: reason.map(|r| crate::secret::redact(&r).into_owned()),
        continued: a.continued,
        agent: member,
        tokens: a.tokens,
        prompt_tokens: a.prompt_tokens,
        cached_tokens: a.cached_tokens,
        cost: a.cost,
        transcript: a.transcript.clone(),
    }
}

/// What became of a writer's commit, from its last merge event.
fn merge(events: &[(i64, RunEvent)]) -> Option<Merge> {
    events.iter().rev().find_map(|(_, e)| match e {
        RunEvent::Merged { after, .. } => Some(Merge {
            state: MergeState::Merged,
            commit: Some(after.clone()),
            paths: Vec::new(),
        }),
        RunEvent::MergeRecovered { commit } => Some(Merge {
            state: MergeState::Merged,
            commit: Some(commit.clone()),
            paths: Vec::new(),
        }),
        RunEvent::Parked(p) => Some(Merge {
            state: MergeState::Parked,
            commit: Some(p.commit.clone()),
            paths: p.paths.clone(),
        }),
        RunEvent::NoChanges => Some(Merge {
            state: MergeState::NoChanges,
            commit: None,
            paths: Vec::new(),
        }),
        _ => None,
    })
}

/// The end of the file at `path` (`TAIL_BYTES` of it, from a whole line); empty when it cannot
/// be read.
fn end_of(path: &Path) -> String {
    let read = || -> std::io::Result<String> {
        let mut file = crate::planted::open(path)?;
        let len = file.metadata()?.len();
        let from = len.saturating_sub(TAIL_BYTES);
        file.seek(std::io::SeekFrom::Start(from))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        // Read from the middle of the file: its first line may be cut.
        if from > 0
            && let Some(i) = text.find('\n')
        {
            text.drain(..=i);
        }
        Ok(text)
    };
    read().unwrap_or_default()
}

/// The last `n` lines of `text`, secrets hidden.
fn tail(text: &str, n: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| crate::agent::shown_line(&crate::secret::redact(l)))
        .collect()
}

/// ` (900 of 1000 prompt tokens cached: 90 %)`, or nothing where no prompt token is known.
fn cached(cached: u64, prompt: u64) -> String {
    ui::cached_share(cached, prompt)
        .map(|share| format!(" ({cached} of {prompt} prompt tokens cached: {share})"))
        .unwrap_or_default()
}

/// A short commit id, as the rest of swarm shows them.
fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// `text` under a label: the first line beside it, the others below it, aligned.
/// A pick's candidates: each with its change's size, its branch and why it lost.
fn candidates(out: &mut String, run: &str, picked: &Value) {
    let s = |v: &Value, key: &str| v[key].as_str().unwrap_or_default().to_owned();
    let _ = writeln!(out, "\nCandidates ({}):", s(picked, "select"));
    for c in picked["candidates"].as_array().into_iter().flatten() {
        let id = s(c, "id");
        let size = match (c["added"].as_u64(), c["removed"].as_u64()) {
            (Some(a), Some(r)) => format!("+{a} -{r}"),
            _ => "-".to_owned(),
        };
        let branch = if c["green"] == true {
            format!("swarm/{run}-{id}")
        } else {
            "-".to_owned()
        };
        let _ = writeln!(out, "  {id:<16} {size:<12} {branch}  {}", s(c, "why"));
    }
    let reasons = s(picked, "reasons");
    if !reasons.is_empty() {
        let _ = writeln!(out, "  reasons: {reasons}");
    }
}

fn field(out: &mut String, label: &str, text: &str) {
    let mut lines = text.lines();
    let _ = writeln!(out, "  {label:<9} {}", lines.next().unwrap_or_default());
    for line in lines {
        let _ = writeln!(out, "  {:<9} {line}", "");
    }
}

/// A line of a section, indented, without trailing blanks.
fn indented(out: &mut String, line: &str) {
    let _ = writeln!(out, "{}", format!("  {line}").trim_end());
}

fn text(s: &Shown) -> String {
    let mut out = match &s.title {
        Some(title) => format!("{} — {}\n", s.id, ui::one_line(title, 100)),
        None => format!("{}\n", s.id),
    };
    field(&mut out, "run", &s.run);
    let mut status = s.status.as_str().to_owned();
    if let Some(e) = &s.error {
        let _ = write!(status, ": {e}");
    }
    match &s.merge {
        Some(Merge {
            state: MergeState::Merged,
            commit: Some(c),
            ..
        }) => {
            let _ = write!(status, " (merged as {})", short(c));
        }
        Some(Merge {
            state: MergeState::NoChanges,
            ..
        }) => status.push_str(" (no changes)"),
        _ => {}
    }
    field(&mut out, "status", &status);
    if let (Some(lane), Some(mode)) = (&s.lane, &s.mode) {
        field(&mut out, "lane", &format!("{lane} ({mode})"));
    }
    if !s.deps.is_empty() {
        field(&mut out, "deps", &s.deps.join(", "));
    }
    if !s.files.is_empty() {
        field(&mut out, "files", &s.files.join(", "));
    }
    for key in ["agent", "check"] {
        if let Some(v) = s.spec[key].as_str() {
            field(&mut out, key, v);
        }
    }
    // The stored spec was checked when it was stored, but a board is a file anyone can edit.
    if let Some(t) = s.spec["timeout"]
        .as_f64()
        .and_then(|v| Duration::try_from_secs_f64(v).ok())
    {
        field(&mut out, "timeout", &ui::duration(t));
    }
    if let Some(p) = &s.prompt {
        field(&mut out, "prompt", p);
    }
    if let Some(r) = &s.run_command {
        field(&mut out, "command", r);
    }
    if let Some(b) = &s.branch {
        let gone = if s.branch_exists == Some(false) {
            " (no longer there)"
        } else {
            ""
        };
        field(&mut out, "branch", &format!("{b}{gone}"));
    }
    if let (Some(from), Some(to)) = (&s.start_commit, &s.commit) {
        field(
            &mut out,
            "commits",
            &format!("{}..{}", short(from), short(to)),
        );
    }
    if s.tokens > 0 || s.cost.is_some() {
        let cost = s.cost.map(|c| format!(", ${c:.4}")).unwrap_or_default();
        let cached = cached(s.cached_tokens, s.prompt_tokens);
        field(&mut out, "tokens", &format!("{}{cached}{cost}", s.tokens));
    }
    out.push_str("\nAttempts:\n");
    if s.attempts.is_empty() {
        out.push_str("  none yet\n");
    }
    for a in &s.attempts {
        let took = a.duration_ms.map_or_else(
            || "-".to_owned(),
            |ms| ui::duration(Duration::from_millis(ms as u64)),
        );
        let mut how = a.outcome.clone().unwrap_or_else(|| {
            if a.duration_ms.is_some() {
                "running".to_owned()
            } else {
                "cut short (its process was killed)".to_owned()
            }
        });
        if let Some(r) = &a.reason {
            let _ = write!(how, ": {}", ui::one_line(r, 200));
        }
        if let Some(member) = &a.agent {
            let _ = write!(how, " (on {member})");
        }
        if a.continued {
            how.push_str(" (continued the session of the attempt before)");
        }
        if a.tokens > 0 {
            let cached = cached(a.cached_tokens, a.prompt_tokens);
            let _ = write!(how, "; {} tokens{cached}", a.tokens);
        }
        let _ = writeln!(
            out,
            "  {:>2}  {}  {took:>5}  {how}",
            a.number,
            crate::time::local_second(a.started_at),
        );
    }
    if let Some(p) = &s.picked {
        candidates(&mut out, &s.run, p);
    }
    if let Some(r) = &s.result {
        out.push_str("\nResult:\n");
        if r.trim().is_empty() {
            out.push_str("  (empty)\n");
        }
        for line in r.lines() {
            indented(&mut out, line);
        }
    }
    if let Some(files) = &s.changed_files {
        let against = s
            .start_commit
            .as_deref()
            .map(|c| format!(" (against {}, where it started)", short(c)))
            .unwrap_or_default();
        let _ = writeln!(out, "\nChanged files{against}:");
        if files.is_empty() {
            out.push_str("  none\n");
        }
        for f in files {
            let _ = writeln!(out, "  {f}");
        }
    }
    if let Some(Merge {
        state: MergeState::Parked,
        paths,
        ..
    }) = &s.merge
        && !paths.is_empty()
    {
        out.push_str("\nConflicting paths:\n");
        for p in paths {
            let _ = writeln!(out, "  {p}");
        }
    }
    if let Some(t) = s.transcript.as_ref().filter(|t| !t.refused.is_empty()) {
        out.push_str("\nRefused by the confinement:\n");
        for r in &t.refused {
            indented(&mut out, r);
        }
    }
    if let Some(t) = &s.transcript {
        if !Path::new(&t.path).exists() {
            // An attempt that succeeded with nothing on stderr and its whole result on the
            // board writes none.
            let _ = writeln!(
                out,
                "\nTranscript: none ({} was not written: the attempt printed nothing but its result; or it was removed since)",
                t.path
            );
            return out;
        }
        let _ = writeln!(out, "\nTranscript (last {TAIL_LINES} lines of {}):", t.path);
        if t.tail.is_empty() {
            out.push_str("  (empty)\n");
        }
        for line in &t.tail {
            indented(&mut out, line);
        }
    }
    out
}
