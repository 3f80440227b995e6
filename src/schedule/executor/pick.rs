//! Preparing a task's pick among its candidates, for the executor: what each candidate came
//! to (green with its change, or why not, in the order they finished), recorded as the task's
//! attempt. The pool decides (`job::pick`).

use super::super::Checkout;
use super::super::core::Core;
use super::super::core::dag::State;
use super::super::job::pick::{Candidate, Green, Pick};
use super::super::job::{Job, JobKind};
use super::Exec;
use super::attempt::Started;
use crate::agent::Invocation;
use crate::plan::Action;
use crate::plan::candidates::Select;

/// Task `i`'s pick, attempt `attempt`, recorded as started.
pub(super) fn job(
    core: &mut Core<'_>,
    ex: &mut Exec<'_>,
    i: usize,
    attempt: u32,
) -> anyhow::Result<Job> {
    let (settings, layout, repo) = (ex.out.settings, ex.out.layout, ex.out.repo);
    let task = &core.plan.tasks[i];
    let id = task.id.to_string();
    let select = task.candidates.map(|c| c.select).unwrap_or_default();
    let records = ex.out.record.board().load_tasks(&layout.run)?;
    let mut candidates: Vec<(Option<i64>, Candidate)> = Vec::new();
    for d in core.plan.deps(i) {
        let cid = core.id(d).to_owned();
        let record = records.iter().find(|r| r.id == cid);
        let slot = &core.slots[d];
        let green = match (core.dag.state(d), &slot.start_commit, &slot.commit) {
            (State::Done, Some(start), Some(commit)) => {
                let (added, removed) = crate::git::change_size(repo, start, commit)?;
                let patch = if select == Select::Judge {
                    crate::git::patch(repo, start, commit)?
                } else {
                    String::new()
                };
                Some(Green {
                    start: start.clone(),
                    commit: commit.clone(),
                    result: slot.result.clone().unwrap_or_default(),
                    added,
                    removed,
                    patch,
                })
            }
            _ => None,
        };
        let why = match (core.dag.state(d), record.and_then(|r| r.error.as_deref())) {
            _ if green.is_some() => String::new(),
            (State::Done, _) => "changed nothing".to_owned(),
            (State::Skipped, _) => "was skipped".to_owned(),
            (_, Some(error)) => format!("failed: {}", crate::ui::cut(error, 200)),
            (state, None) => format!("ended {state:?}").to_lowercase(),
        };
        candidates.push((
            record.and_then(|r| r.finished_at),
            Candidate {
                id: cid,
                green,
                why,
            },
        ));
    }
    // In the order they finished (the order of the plan on a tie, or where unknown).
    candidates.sort_by_key(|(at, _)| at.unwrap_or(i64::MAX));
    let transcript = layout
        .run_dir
        .join("attempts")
        .join(format!("{id}.{attempt}.log"));
    let cwd = layout.run_dir.clone();
    super::attempt::record_start(
        core,
        &mut ex.out,
        i,
        &Started {
            attempt,
            transcript: &transcript,
            cwd: &cwd,
            session: None,
            continued: false,
        },
        None,
    )?;
    let task = &core.plan.tasks[i];
    let text = match &task.action {
        Action::Prompt(p) => p.clone(),
        Action::Run(r) => r.clone(),
    };
    let pick = Pick {
        task: id.clone(),
        text,
        select,
        branch: layout.branch(&id, Checkout::Task),
        candidates: candidates.into_iter().map(|(_, c)| c).collect(),
        llm: settings.llm.clone(),
    };
    let invocation = Invocation::shell(
        "",
        cwd,
        settings.task_timeout,
        transcript,
        settings.transcript_cap,
        String::new(),
    );
    Ok(Job {
        task: i,
        attempt,
        kind: JobKind::Pick(Box::new(pick)),
        invocation,
        builtin: None,
        parser: None,
        acp: None,
        deps_dir: None,
        user_checkout: repo.workdir().to_owned(),
        session: None,
        prepare: settings.prepare.clone(),
        tmp: ex.scratch.acquire(i),
        spawn_file: None,
        confined: None,
    })
}
