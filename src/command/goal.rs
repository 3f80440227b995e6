//! `swarm --goal TEXT`: summarise the repository, have the model plan the goal, record the
//! plan and its repairs, then run it like a task file.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::json;

use super::{
    Configured, Globals, MAX_FAN_IN, NO_MODEL_HINT, NewRun, model_client, refuse_when_nested,
    settings,
};
use crate::git::Repo;
use crate::planner;
use crate::store::{Event, RunStatus};
use crate::{Usage, exit, ui};

/// Lines of the README the planner sees.
const README_LINES: usize = 40;
/// Entries of the top-level tree the planner sees.
const TREE_ENTRIES: usize = 60;

pub(super) fn run_goal(
    g: &Globals,
    goal: &str,
    plan_out: Option<&Path>,
    plan_only: bool,
    configured: &Configured,
) -> anyhow::Result<u8> {
    let options = &configured.options;
    if let Some(code) = refuse_when_nested(g) {
        return Ok(code);
    }
    if goal.trim().is_empty() {
        anyhow::bail!(Usage::new("--goal is empty"));
    }
    let jobs = options.jobs.unwrap_or(super::DEFAULT_JOBS) as usize;
    let client = model_client(options, jobs)?.ok_or_else(|| {
        Usage::new("planning a goal needs a model, and none is configured").hint(NO_MODEL_HINT)
    })?;
    let mut run = NewRun::begin(g, format!("goal: {}", one_line(goal)), options, None)?;
    let run_id = run.record.id.clone();
    let summary = summarize(&run.repo)?;
    ui::say(g.quiet, "Planning", &one_line(goal));
    let board = &mut run.board;
    let mut notes = Vec::new();
    let planned = planner::plan(&client, goal, &summary, MAX_FAN_IN, &|| false, &mut |n| {
        notes.push(n);
    });
    for n in &notes {
        let (kind, detail) = crate::schedule::notice_event(n);
        board.event(&run_id, &Event::run(kind, detail))?;
    }
    let planned = match planned {
        Ok(p) => p,
        Err(e) => {
            board.set_run_status(
                &run_id,
                RunStatus::Finished,
                Some(i32::from(exit::FAILED)),
                &Event::run("planning_failed", json!({ "error": format!("{e:#}") })),
            )?;
            return Err(e);
        }
    };
    for r in &planned.repairs {
        board.event(
            &run_id,
            &Event::run(
                "plan_repair",
                json!({ "kind": r.kind, "message": r.message }),
            ),
        )?;
    }
    board.event(
        &run_id,
        &Event::run(
            "planned",
            json!({
                "tasks": planned.plan.len(),
                "requests": planned.requests,
                "tokens": planned.usage.total_tokens,
                "repairs": planned.repairs.len(),
            }),
        ),
    )?;
    let text = planned.plan.to_jsonl();
    if let Some(out) = plan_out {
        let out = if out.is_absolute() {
            out.to_owned()
        } else {
            g.dir.join(out)
        };
        std::fs::write(&out, &text)
            .map_err(|e| anyhow::anyhow!("could not write the plan to {}: {e}", out.display()))?;
    }
    ui::say(
        g.quiet,
        "Planned",
        &format!(
            "{} tasks ({} repairs, {} tokens)",
            planned.plan.len(),
            planned.repairs.len(),
            planned.usage.total_tokens
        ),
    );
    if plan_only {
        std::fs::write(board.run_dir(&run_id).join("plan.jsonl"), &text)?;
        board.set_run_status(
            &run_id,
            RunStatus::Finished,
            Some(i32::from(exit::OK)),
            &Event::run("plan_only", serde_json::Value::Null),
        )?;
        if plan_out.is_none() {
            ui::out(&text);
        }
        return Ok(exit::OK);
    }
    let settings = settings(options, &planned.plan, &configured.profiles)?;
    run.launch(g, &planned.plan, &settings, options)
}

fn one_line(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > 100 {
        format!("{}…", line.chars().take(99).collect::<String>())
    } else {
        line
    }
}

/// What the planner is told about the repository: the top of its file tree, the head of its
/// README, and its languages by file count.
fn summarize(repo: &Repo) -> anyhow::Result<String> {
    let root = repo.workdir();
    let files = crate::git::list_files(root)?;
    let mut top: BTreeMap<String, usize> = BTreeMap::new();
    let mut languages: BTreeMap<String, usize> = BTreeMap::new();
    for f in &files {
        let first = match f.split_once('/') {
            Some((dir, _)) => format!("{dir}/"),
            None => f.clone(),
        };
        *top.entry(first).or_default() += 1;
        if let Some(ext) = Path::new(f).extension().and_then(|e| e.to_str()) {
            *languages.entry(ext.to_ascii_lowercase()).or_default() += 1;
        }
    }
    let mut out = format!("{} files.\n\nTop level:\n", files.len());
    for (name, n) in top.iter().take(TREE_ENTRIES) {
        if name.ends_with('/') {
            let _ = writeln!(out, "- {name} ({n} files)");
        } else {
            let _ = writeln!(out, "- {name}");
        }
    }
    if top.len() > TREE_ENTRIES {
        let _ = writeln!(out, "- … and {} more", top.len() - TREE_ENTRIES);
    }
    let mut by_count: Vec<(&String, &usize)> = languages.iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let langs: Vec<String> = by_count
        .iter()
        .take(10)
        .map(|(ext, n)| format!(".{ext} ({n})"))
        .collect();
    if !langs.is_empty() {
        let _ = writeln!(out, "\nFile types: {}", langs.join(", "));
    }
    let readme = files
        .iter()
        .find(|f| !f.contains('/') && f.to_ascii_lowercase().starts_with("readme"));
    if let Some(name) = readme
        && let Ok(text) = std::fs::read_to_string(root.join(name))
    {
        let head: Vec<&str> = text.lines().take(README_LINES).collect();
        let _ = write!(out, "\n{name} (first lines):\n{}\n", head.join("\n"));
    }
    Ok(out)
}
