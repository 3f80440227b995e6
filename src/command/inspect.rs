//! Looking at runs without changing them (`status`, `logs`, `graph`) and `gc`.

use std::fmt::Write as _;
use std::io::Read as _;
use std::time::Duration;

use anyhow::Context as _;
use serde_json::json;

use super::layout::{Lock, deps_root};
use super::run::{read_events, stored_plan};
use super::{Globals, open_board, open_repo};
use crate::cli::GraphFormat;
use crate::git::Repo;
use crate::plan::Plan;
use crate::report;
use crate::store::{Board, Logged, RunRecord, RunStatus};
use crate::ui;
use crate::{Usage, exit};

/// Who holds the repository's run lock, if anyone; takes nothing.
fn lock_holder(repo: &Repo) -> Option<String> {
    let path = repo.common_dir().join("swarm").join("lock");
    let mut file = std::fs::OpenOptions::new().read(true).open(path).ok()?;
    if file.try_lock_shared().is_ok() {
        return None;
    }
    let mut holder = String::new();
    let _ = file.read_to_string(&mut holder);
    Some(holder.trim().to_owned())
}

fn pick_run(board: &Board, run: Option<&str>) -> anyhow::Result<RunRecord> {
    let id = match run {
        Some(r) => r.to_owned(),
        None => board
            .latest_run(false)?
            .ok_or_else(|| Usage::new("there are no runs in this repository yet"))?,
    };
    board
        .load_run(&id)?
        .ok_or_else(|| Usage::new(format!("no run {id:?} in this repository")).into())
}

pub(super) fn status(g: &Globals, run: Option<&str>) -> anyhow::Result<u8> {
    let repo = open_repo(g)?;
    let board = open_board(&repo)?;
    let run = pick_run(&board, run)?;
    let tasks = board.load_tasks(&run.id)?;
    let goals = board.load_goals(&run.id)?;
    if g.json {
        let mut run = run;
        // The options as they read, without the record's version; a record this swarm cannot
        // read is shown as stored.
        if let Ok(options) = crate::config::from_record(&run.options) {
            run.options = serde_json::to_value(options)?;
        }
        ui::out(&serde_json::to_string_pretty(
            &json!({ "run": run, "goals": goals, "tasks": tasks }),
        )?)?;
        return Ok(exit::OK);
    }
    let holder = lock_holder(&repo);
    let alive = holder
        .as_deref()
        .is_some_and(|h| h.contains(run.id.as_str()));
    let state = match run.status {
        RunStatus::Running if !alive => {
            "stopped (its process is gone; `swarm resume` continues it)".to_owned()
        }
        s => s.as_str().to_owned(),
    };
    let mut out = format!(
        "run {}  {}{}  base {}  from {}\n",
        run.id,
        state,
        run.exit_code
            .map(|c| format!(" (exit {c})"))
            .unwrap_or_default(),
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
    for t in &tasks {
        let _ = writeln!(
            out,
            "  {:<11} {:<width$}  {} attempt{}  {}{}",
            t.status.as_str(),
            t.id,
            t.attempts,
            if t.attempts == 1 { " " } else { "s" },
            ui::duration(Duration::from_millis(t.elapsed_ms.max(0) as u64)),
            t.error
                .as_deref()
                .map(|e| format!("  {e}"))
                .unwrap_or_default()
        );
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
        let mut out = format!("{}\n", events_path.display());
        if errors {
            for (_, _, _, transcript) in board.failed_attempts(&run.id)? {
                out.push_str(&transcript);
                out.push('\n');
            }
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
        let run = pick_run(&board, source)?;
        let records = board.load_tasks(&run.id)?;
        (stored_plan(&records)?, Some(records))
    };
    let text = match format {
        GraphFormat::Mermaid => report::mermaid(&plan, records.as_deref()),
        GraphFormat::Dot => report::dot(&plan, records.as_deref()),
    };
    ui::out(&text)?;
    Ok(exit::OK)
}

pub(super) fn gc(g: &Globals, dry_run: bool) -> anyhow::Result<u8> {
    let repo = open_repo(g)?;
    let _lock = Lock::acquire(&repo, "gc")?;
    let mut actions = Vec::new();
    // Linked worktrees, as swarm made them before each task had a repository of its own.
    for (name, path) in repo.worktrees_with_prefix("swarm-")? {
        actions.push(format!("remove worktree {}", path.display()));
        if !dry_run {
            repo.remove_worktree(&name, &path)?;
        }
    }
    let board = open_board(&repo)?;
    for run in board.run_ids()? {
        // The checkouts of the run's tasks, named in its directory.
        let named = board.run_dir(&run).join(crate::schedule::CHECKOUTS_FILE);
        if let Ok(bytes) = std::fs::read(&named) {
            use std::os::unix::ffi::OsStringExt as _;
            let dir = std::path::PathBuf::from(std::ffi::OsString::from_vec(bytes));
            if dir.is_dir() {
                for entry in std::fs::read_dir(&dir)? {
                    let path = entry?.path();
                    actions.push(format!("remove worktree {}", path.display()));
                    if !dry_run {
                        crate::git::remove_checkout(&path)?;
                    }
                }
                if !dry_run {
                    crate::git::remove_checkout(&dir)?;
                }
            }
        }
        // Deps' files left by runs that were killed and never resumed (a run removes its own).
        let deps = deps_root(&board.run_dir(&run), &run);
        if deps.exists() {
            actions.push(format!("remove {}", deps.display()));
            if !dry_run {
                std::fs::remove_dir_all(&deps)
                    .with_context(|| format!("could not remove {}", deps.display()))?;
            }
        }
    }
    // A branch swarm made goes only when another branch holds every commit of it; one swarm
    // did not make (a name of the user's under `swarm/`) is never touched.
    let mut made = Vec::new();
    for run in board.run_ids()? {
        let tasks: Vec<String> = board.load_tasks(&run)?.into_iter().map(|t| t.id).collect();
        made.push((run, tasks));
    }
    let branches = repo.branches_with_prefix("")?;
    for (name, tip) in repo.branches_with_prefix("swarm/")? {
        let ours = made.iter().any(|(run, tasks)| {
            let tasks: Vec<&str> = tasks.iter().map(String::as_str).collect();
            crate::schedule::made_by_run(&name, run, &tasks)
        });
        if !ours {
            actions.push(format!("keep branch {name} (not swarm's)"));
            continue;
        }
        let held = branches
            .iter()
            .filter(|(other, _)| *other != name && !other.starts_with(&format!("{name}-")))
            .try_fold(false, |found, (_, other_tip)| {
                anyhow::Ok(found || repo.contains(other_tip, &tip)?)
            })?;
        if held {
            actions.push(format!("delete branch {name} (merged)"));
            if !dry_run {
                repo.delete_branch_at(&name, &tip)?;
            }
        } else {
            actions.push(format!(
                "keep branch {name} (has commits no other branch has)"
            ));
        }
    }
    let verb = if dry_run { "would " } else { "" };
    let mut out = String::new();
    for a in &actions {
        let _ = writeln!(out, "{verb}{a}");
    }
    if actions.is_empty() {
        out.push_str("nothing to clean\n");
    }
    ui::out(&out)?;
    Ok(exit::OK)
}
