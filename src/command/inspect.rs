//! Looking at runs without changing them: `status`, `logs` and `graph`; `runs`, `show` and `gc`
//! have files of their own beside this one.

use std::fmt::Write as _;
use std::io::Read as _;
use std::time::Duration;

use serde_json::{Value, json};

use super::context::{Globals, START_A_RUN, open_board, open_repo};
use super::stored::{read_events, stored_plan};
use crate::cli::GraphFormat;
use crate::error::{Usage, exit};
use crate::git::Repo;
use crate::plan::Plan;
use crate::report;
use crate::store::{Board, Logged, RunRecord, RunStatus, TaskRecord, TaskStatus, now_ms};
use crate::ui::{self, Verb};

/// Who holds the repository's run lock, if anyone; takes nothing.
pub(super) fn lock_holder(repo: &Repo) -> Option<String> {
    let path = repo.common_dir().join("swarm").join("lock");
    let mut file = std::fs::OpenOptions::new().read(true).open(path).ok()?;
    if file.try_lock_shared().is_ok() {
        return None;
    }
    let mut holder = String::new();
    let _ = file.read_to_string(&mut holder);
    Some(holder.trim().to_owned())
}

/// Where a run stands as a person looking at it sees it: a run the board says is running
/// whose process is gone is stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RunState {
    Running,
    Stopped,
    Interrupted,
    Finished,
}

impl RunState {
    /// `status` of a run whose lock, if anyone holds it, is held by `holder`.
    pub(super) fn of(run: &str, status: RunStatus, holder: Option<&str>) -> Self {
        match status {
            RunStatus::Running if holder.is_some_and(|h| holds(h, run)) => Self::Running,
            RunStatus::Running => Self::Stopped,
            RunStatus::Interrupted => Self::Interrupted,
            RunStatus::Finished => Self::Finished,
        }
    }

    pub(super) fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Stopped => "stopped",
            Self::Interrupted => "interrupted",
            Self::Finished => "finished",
        }
    }
}

/// Whether the lock's holder line (`pid 12, run 20261129-071300-ab12`) names `run`.
fn holds(holder: &str, run: &str) -> bool {
    holder.rsplit_once("run ").is_some_and(|(_, r)| r == run)
}

/// How long a run has taken (see `facts::run_time`): its swarms' spans, the last one to now
/// while it runs.
pub(super) fn run_duration(
    board: &Board,
    run: &str,
    state: RunState,
    (created_at, last_event_at): (i64, Option<i64>),
    now: i64,
) -> anyhow::Result<Duration> {
    Ok(super::facts::run_time(
        created_at,
        &board.history().time_marks(run)?,
        last_event_at,
        (state == RunState::Running).then_some(now),
    ))
}

/// How long a task has taken: for a running task of a live run, since its attempt started.
pub(super) fn task_elapsed_ms(task: &TaskRecord, live: bool, now: i64) -> i64 {
    match (task.status, task.started_at) {
        (TaskStatus::Running, Some(start)) if live => (now - start).max(0),
        _ => task.elapsed_ms.max(0),
    }
}

pub(super) fn pick_run(board: &Board, run: Option<&str>) -> anyhow::Result<RunRecord> {
    let id = match run {
        Some(r) => r.to_owned(),
        None => board.latest_run(false)?.ok_or_else(|| {
            Usage::new("there are no runs in this repository yet")
                .hint(format!("{START_A_RUN} starts one"))
        })?,
    };
    if let Some(record) = board.load_run(&id)? {
        return Ok(record);
    }
    let mut error = Usage::new(format!("no run {id:?} in this repository"));
    // A task's id where a run's was expected: say whose task it is.
    if let Some(newest) = board.latest_run(false)?
        && board.load_tasks(&newest)?.iter().any(|t| t.id == id)
    {
        error = error.hint(format!("{id} is a task of run {newest}: swarm show {id}"));
    } else {
        error = error.hint("`swarm runs` lists the runs of this repository");
    }
    Err(error.into())
}

/// The number of tasks in each status, as JSON.
fn counts_json(tasks: &[TaskRecord]) -> Value {
    report::counts(tasks)
        .into_iter()
        .map(|(s, n)| (s.as_str().to_owned(), Value::from(n)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// `20 tasks: 12 done, 3 running, 1 parked`.
pub(super) fn counts_line(tasks: &[TaskRecord]) -> String {
    let parts: Vec<String> = report::counts(tasks)
        .iter()
        .map(|(s, n)| format!("{n} {}", s.as_str()))
        .collect();
    let total = ui::count(tasks.len(), "task", "tasks");
    if parts.is_empty() {
        total
    } else {
        format!("{total}: {}", parts.join(", "))
    }
}

pub(super) fn status(g: &Globals, run: Option<&str>) -> anyhow::Result<u8> {
    let repo = open_repo(g)?;
    let board = open_board(&repo)?;
    let run = pick_run(&board, run)?;
    let tasks = board.load_tasks(&run.id)?;
    let goals = board.goals().load(&run.id)?;
    let holder = lock_holder(&repo);
    let state = RunState::of(&run.id, run.status, holder.as_deref());
    let alive = state == RunState::Running;
    let now = now_ms();
    let pull_requests =
        super::deliver::recorded(&super::stored::read_events(&board.events_path(&run.id))?);
    if g.json {
        let mut run = run;
        // The options as they read, without the record's version; a record this swarm cannot
        // read is shown as stored.
        if let Ok(options) = crate::config::from_record(&run.options) {
            run.options = serde_json::to_value(options)?;
        }
        let mut shown = Vec::with_capacity(tasks.len());
        for t in &tasks {
            let mut v = serde_json::to_value(t)?;
            v["elapsed_ms"] = task_elapsed_ms(t, alive, now).into();
            shown.push(v);
        }
        ui::out(&serde_json::to_string_pretty(&json!({
            "run": run,
            "goals": goals,
            "tasks": shown,
            "counts": counts_json(&tasks),
            "pull_requests": pull_requests,
        }))?)?;
        return Ok(exit::OK);
    }
    let shown_state = match state {
        RunState::Stopped => {
            "stopped (its process is gone; `swarm resume` continues it)".to_owned()
        }
        s => s.as_str().to_owned(),
    };
    let last = board.history().last_event_at(&run.id)?;
    let took = run_duration(&board, &run.id, state, (run.created_at, last), now)?;
    let mut out = format!(
        "run {}  {}{}  {}  base {}  from {}\n",
        run.id,
        shown_state,
        run.exit_code
            .map(|c| format!(" (exit {c})"))
            .unwrap_or_default(),
        ui::duration(took),
        &run.base_commit[..run.base_commit.len().min(12)],
        run.source
    );
    for goal in &goals {
        let needs = match goal.needs.as_deref() {
            None => " (needs not inferred yet)".to_owned(),
            Some([]) => String::new(),
            Some(n) => format!(
                " (needs {})",
                n.iter()
                    .map(|n| n.goal.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let _ = writeln!(
            out,
            "  goal {:<4} {:<8} {}{needs}{}",
            goal.id,
            goal.status.as_str(),
            goal.text.split_whitespace().collect::<Vec<_>>().join(" "),
            goal.reason
                .as_deref()
                .map(|r| format!("  {r}"))
                .unwrap_or_default()
        );
    }
    let width = tasks.iter().map(|t| t.id.len()).max().unwrap_or(4);
    let titles: Vec<String> = tasks
        .iter()
        .map(|t| {
            t.spec["title"]
                .as_str()
                .map(|s| ui::one_line(s, 50))
                .unwrap_or_default()
        })
        .collect();
    let title_width = titles.iter().map(|t| t.chars().count()).max().unwrap_or(0);
    for (t, title) in tasks.iter().zip(&titles) {
        let elapsed = Duration::from_millis(task_elapsed_ms(t, alive, now) as u64);
        let mut line = format!(
            "  {:<11} {:<width$}  {} attempt{}  {:>5}",
            t.status.as_str(),
            t.id,
            t.attempts,
            if t.attempts == 1 { " " } else { "s" },
            ui::duration(elapsed),
        );
        if title_width > 0 {
            let _ = write!(line, "  {title:<title_width$}");
        }
        if let Some(e) = &t.error {
            let _ = write!(line, "  {e}");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(&counts_line(&tasks));
    out.push('\n');
    for pr in &pull_requests {
        let _ = writeln!(out, "pull request {}", pr.line());
    }
    ui::out(&out)?;
    Ok(exit::OK)
}

pub(super) fn logs(
    g: &Globals,
    run: Option<&str>,
    errors: bool,
    tail: Option<usize>,
    follow: bool,
    path: bool,
) -> anyhow::Result<u8> {
    let repo = open_repo(g)?;
    let board = open_board(&repo)?;
    let run = pick_run(&board, run)?;
    let events_path = board.events_path(&run.id);
    let is_error = |e: &serde_json::Value| {
        serde_json::from_value::<Logged>(e.clone()).is_ok_and(|l| l.event.is_error())
    };
    if path {
        let transcripts: Vec<String> = if errors {
            board
                .failed_attempts(&run.id)?
                .into_iter()
                .map(|(_, _, _, transcript)| transcript)
                .collect()
        } else {
            Vec::new()
        };
        if g.json {
            let paths = json!({ "events": events_path, "transcripts": transcripts });
            ui::out(&serde_json::to_string_pretty(&paths)?)?;
            return Ok(exit::OK);
        }
        let mut out = format!("{}\n", events_path.display());
        for transcript in transcripts {
            out.push_str(&transcript);
            out.push('\n');
        }
        ui::out(&out)?;
        return Ok(exit::OK);
    }
    let show = |e: &serde_json::Value| -> String {
        if g.json {
            return e.to_string();
        }
        let at = e["at"].as_i64().unwrap_or_default();
        let secs = at / 1000;
        let mut line = format!(
            "{:02}:{:02}:{:02}.{:03} {:<16} {}",
            (secs / 3600) % 24,
            (secs / 60) % 60,
            secs % 60,
            at % 1000,
            e["kind"].as_str().unwrap_or("?"),
            e["task"].as_str().unwrap_or("-")
        );
        if !e["detail"].is_null() {
            line.push(' ');
            line.push_str(&e["detail"].to_string());
        }
        line
    };
    let events: Vec<serde_json::Value> = read_events(&events_path)?;
    let selected: Vec<&serde_json::Value> =
        events.iter().filter(|e| !errors || is_error(e)).collect();
    let start = tail.map_or(0, |n| selected.len().saturating_sub(n));
    let mut out = String::new();
    for e in &selected[start..] {
        out.push_str(&show(e));
        out.push('\n');
    }
    if !out.is_empty() {
        ui::out(&out)?;
    }
    if errors && !g.json {
        let transcripts = board.failed_attempts(&run.id)?;
        if !transcripts.is_empty() {
            let mut t = String::from("transcripts of failed attempts:\n");
            for (task, n, outcome, path) in transcripts {
                let _ = writeln!(t, "  {task} attempt {n} ({outcome}): {path}");
            }
            ui::out(&t)?;
        } else if selected.is_empty() {
            // Said on stderr, as `swarm runs` says it has none: stdout holds events only.
            let yet = if run.status == RunStatus::Running {
                " so far"
            } else {
                ""
            };
            ui::say(
                g.quiet,
                Verb::Empty,
                &format!("no errors in run {}{yet}", run.id),
            );
        }
    }
    if follow {
        let mut seen = events.len();
        loop {
            std::thread::sleep(Duration::from_millis(200));
            let events: Vec<serde_json::Value> = read_events(&events_path)?;
            for e in events.iter().skip(seen).filter(|e| !errors || is_error(e)) {
                ui::out(&show(e))?;
            }
            seen = events.len();
            let status = board.load_run(&run.id)?.map(|r| r.status);
            if status != Some(RunStatus::Running) {
                break;
            }
        }
    }
    Ok(exit::OK)
}

pub(super) fn graph(g: &Globals, source: Option<&str>, format: GraphFormat) -> anyhow::Result<u8> {
    let file = source.map(|s| g.dir.join(s)).filter(|p| p.is_file());
    let (plan, records) = if let Some(path) = file {
        (Plan::load(&path)?, None)
    } else {
        let repo = open_repo(g)?;
        let board = open_board(&repo)?;
        let run = match (pick_run(&board, source), source) {
            (Ok(run), _) => run,
            // Named like a file: the file is what is missing.
            (Err(_), Some(s))
                if s.contains('/')
                    || std::path::Path::new(s)
                        .extension()
                        .is_some_and(|e| e.eq_ignore_ascii_case("jsonl")) =>
            {
                return Err(
                    Usage::new(format!("no task file {s:?}, and no run of that name"))
                        .hint("`swarm runs` lists the runs of this repository")
                        .into(),
                );
            }
            (Err(e), _) => return Err(e),
        };
        let records = board.load_tasks(&run.id)?;
        (stored_plan(&records)?, Some(records))
    };
    if g.json {
        ui::out(&serde_json::to_string_pretty(&graph_json(
            &plan,
            records.as_deref(),
        ))?)?;
        return Ok(exit::OK);
    }
    let text = match format {
        GraphFormat::Mermaid => report::mermaid(&plan, records.as_deref()),
        GraphFormat::Dot => report::dot(&plan, records.as_deref()),
        GraphFormat::Svg => report::svg(&plan, records.as_deref()),
        GraphFormat::Html => {
            let title = match source {
                Some(s) => format!("swarm graph of {s}"),
                None => "swarm graph".to_owned(),
            };
            report::graph_html(&plan, records.as_deref(), &title)
        }
    };
    ui::out(&text)?;
    Ok(exit::OK)
}

/// The DAG as `nodes` and `edges` (from a dep to the task that needs it), with each task's
/// status when the plan is a run's.
fn graph_json(plan: &Plan, records: Option<&[TaskRecord]>) -> Value {
    let nodes: Vec<Value> = plan
        .tasks
        .iter()
        .map(|t| {
            let status = records
                .and_then(|r| r.iter().find(|r| r.id == t.id.as_str()))
                .map(|r| r.status.as_str());
            json!({
                "id": t.id.as_str(),
                "title": t.title,
                "lane": t.lane.as_str(),
                "mode": t.mode.as_str(),
                "status": status,
                "parent": t.parent.as_ref().map(crate::plan::TaskId::as_str),
            })
        })
        .collect();
    let edges: Vec<Value> = plan
        .tasks
        .iter()
        .flat_map(|t| {
            t.deps
                .iter()
                .map(|d| json!({ "from": d.as_str(), "to": t.id.as_str() }))
        })
        .collect();
    json!({ "nodes": nodes, "edges": edges })
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::{RunState, task_elapsed_ms};
    use crate::store::{RunStatus, TaskRecord, TaskStatus};

    fn task(status: TaskStatus, started_at: Option<i64>, elapsed_ms: i64) -> TaskRecord {
        TaskRecord {
            id: "t".to_owned(),
            spec: Value::Null,
            status,
            attempts: 1,
            failures: 0,
            result: None,
            error: None,
            transcript: None,
            started_at,
            finished_at: None,
            elapsed_ms,
            branch: None,
            start_commit: None,
            commit_id: None,
            tokens: 0,
            prompt_tokens: 0,
            cached_tokens: 0,
            cost: None,
            session: None,
        }
    }

    #[test]
    fn a_running_task_of_a_live_run_has_taken_the_time_since_its_attempt_started() {
        let now = 100_000;
        let cases = [
            (TaskStatus::Running, Some(95_000), 0, true, 5_000),
            // Its run's process is gone: what the board has.
            (TaskStatus::Running, Some(95_000), 0, false, 0),
            (TaskStatus::Done, Some(95_000), 1_200, true, 1_200),
            (TaskStatus::Running, None, 0, true, 0),
        ];
        for (status, started, stored, live, expected) in cases {
            let t = task(status, started, stored);
            assert_eq!(
                task_elapsed_ms(&t, live, now),
                expected,
                "{status:?} {live}"
            );
        }
    }

    #[test]
    fn a_running_run_is_running_only_while_its_process_holds_the_lock() {
        let run = "20261129-071300-ab12";
        let holder = "pid 12, run 20261129-071300-ab12";
        let cases = [
            (RunStatus::Running, Some(holder), RunState::Running),
            (RunStatus::Running, None, RunState::Stopped),
            (RunStatus::Running, Some("pid 9, run gc"), RunState::Stopped),
            (
                RunStatus::Running,
                Some("pid 9, run 20261129-071300-ab1"),
                RunState::Stopped,
            ),
            (RunStatus::Interrupted, Some(holder), RunState::Interrupted),
            (RunStatus::Finished, None, RunState::Finished),
        ];
        for (status, holder, expected) in cases {
            assert_eq!(RunState::of(run, status, holder), expected, "{holder:?}");
        }
    }
}
