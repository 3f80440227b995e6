//! `swarm retry TASK`: a parked or failed writer runs again on the current tip. In a run that
//! has not finished, the task (and what was skipped because of it) goes back to pending and
//! the run is resumed: it runs on the run's integration tip. In a run that ended, a new run of
//! that one task starts from the user's HEAD and lands as any run. Either way its earlier
//! branch is kept.

use anyhow::{Context as _, bail};

use crate::config::{Options, from_record, overlay};
use crate::error::Usage;
use crate::git::Repo;
use crate::plan::{Mode, Plan, Task};
use crate::store::{
    Board, GoalRecord, GoalStatus, Reopening, RunRecord, RunStatus, TaskRecord, TaskStatus,
};
use crate::ui::{self, Verb};

use super::context::{Globals, open_repo, open_run_board, refuse_when_nested};
use super::goal::Question;
use super::inspect::pick_run;
use super::layout::Lock;
use super::resume::{Held, resume_held};
use super::run::{GUARDED_FILE, NewRun, Reads, guard_files};
use super::settings::{Configured, settings};
use super::show::unknown_task;
use super::stored::stored_plan;

pub(super) fn retry(
    g: &Globals,
    task: &str,
    run: Option<&str>,
    newer: &Options,
    configured: &Configured,
) -> anyhow::Result<u8> {
    if let Some(code) = refuse_when_nested(g) {
        return Ok(code);
    }
    let repo = open_repo(g)?;
    let board = open_run_board(g, &repo)?;
    let record = pick_run(&board, run)?;
    let wanted = Wanted {
        task,
        run_given: run.is_some(),
    };
    let tasks = board.load_tasks(&record.id)?;
    let spec = wanted.writer(&board, &record, &tasks)?;
    if record.status == RunStatus::Finished {
        return in_new_run(g, &record, spec, newer, configured);
    }
    // The run's board changes only under the lock; another swarm holding it exits 4.
    let lock = Lock::acquire(&repo, &record.id)?;
    let record = board
        .load_run(&record.id)?
        .context("the run vanished from the board")?;
    let tasks = board.load_tasks(&record.id)?;
    let spec = wanted.writer(&board, &record, &tasks)?;
    if record.status == RunStatus::Finished {
        // It finished between the two looks.
        drop(lock);
        return in_new_run(g, &record, spec, newer, configured);
    }
    let mut held = Held { repo, board, lock };
    let kept = reopen(&mut held, &record, &tasks, task)?;
    let kept = kept.map_or_else(String::new, |k| {
        format!("; its earlier work is kept on {k}")
    });
    ui::say(
        g.quiet,
        Verb::Retrying,
        &format!("{task} of run {} on its integration tip{kept}", record.id),
    );
    resume_held(
        g,
        held,
        &record.id,
        newer,
        &configured.profiles,
        Question::Skip,
    )
}

/// The task asked for, and whether its run was named.
struct Wanted<'a> {
    task: &'a str,
    run_given: bool,
}

impl Wanted<'_> {
    /// The task as its run stored it, if it is a writer that was parked or failed; else the
    /// error that says why it cannot be retried, and what to do instead.
    fn writer(
        &self,
        board: &Board,
        record: &RunRecord,
        tasks: &[TaskRecord],
    ) -> anyhow::Result<Task> {
        let (id, run) = (self.task, &record.id);
        let Some(t) = tasks.iter().find(|t| t.id == id) else {
            return Err(unknown_task(board, id, run, tasks, self.run_given, "retry")?.into());
        };
        let (mut read, _) = Plan::read(&t.spec.to_string());
        let spec = read
            .pop()
            .with_context(|| format!("task {id} of run {run}: its stored spec does not read"))?;
        if spec.mode == Mode::Read {
            bail!(
                Usage::new(format!(
                    "task {id} of run {run} is a reader; swarm retry runs a parked or failed writer again"
                ))
                .hint(format!(
                    "a reader changes nothing to merge: run it again with `swarm run`; `swarm show {id} --run {run}` shows how it ended"
                ))
            );
        }
        match t.status {
            TaskStatus::Parked | TaskStatus::Failed => Ok(spec),
            TaskStatus::Done => bail!(
                Usage::new(format!(
                    "task {id} of run {run} is done; there is nothing to retry"
                ))
                .hint(format!("`swarm show {id} --run {run}` shows what it did"))
            ),
            TaskStatus::Skipped => bail!(
                Usage::new(format!(
                    "task {id} of run {run} was skipped ({}); it never ran",
                    t.error
                        .as_deref()
                        .unwrap_or("a dependency did not end well")
                ))
                .hint("retry the task it waited for: its skipped dependents go back with it")
            ),
            TaskStatus::Pending
            | TaskStatus::Running
            | TaskStatus::Committed
            | TaskStatus::Interrupted => bail!(
                Usage::new(format!("task {id} of run {run} has not ended"))
                    .hint(format!("`swarm resume {run}` runs what the run has left"))
            ),
        }
    }
}

/// Puts task `id` of the unfinished run back to pending: its branch moved aside to
/// `swarm/<run>-<task>@<n>` (n: the number of the attempt that made it, or the first free one
/// after; its resolver's branch likewise), its dependents skipped because of it pending too,
/// and the goals it reopens.
/// Returns the branch the earlier work is kept on, if there was any.
fn reopen(
    held: &mut Held,
    record: &RunRecord,
    tasks: &[TaskRecord],
    id: &str,
) -> anyhow::Result<Option<String>> {
    let run = &record.id;
    let (i, t) = tasks
        .iter()
        .enumerate()
        .find(|(_, t)| t.id == id)
        .context("the task vanished from the board")?;
    let mut attempts = t.attempts;
    let branch = format!("swarm/{run}-{id}");
    let kept = match held.repo.ref_target(&format!("refs/heads/{branch}"))? {
        Some(tip) => {
            let (name, n) = set_aside(&held.repo, &branch, &tip, attempts.max(1))?;
            attempts = attempts.max(n);
            Some(name)
        }
        None => None,
    };
    // What its conflict resolver made, if it tried: a new resolver would write over it.
    let resolver = format!("{branch}-resolve");
    if let Some(tip) = held.repo.ref_target(&format!("refs/heads/{resolver}"))? {
        set_aside(&held.repo, &resolver, &tip, attempts.max(1))?;
    }
    let plan = stored_plan(tasks)?;
    let dependents = skipped_below(&plan, tasks, i);
    let goals = reopened_goals(&held.board.goals().load(run)?, id);
    held.board.reopen_task(
        run,
        &Reopening {
            task: id,
            kept: kept.as_deref(),
            attempts,
            dependents: &dependents,
            goals: &goals,
        },
    )?;
    Ok(kept)
}

/// Moves `branch` (at `tip`) to `<branch>@<n>`, the first `n` from `from` whose name is free
/// or already holds `tip`; returns the name and `n`. The new name is made before the old one
/// goes, so the commit always has a branch.
fn set_aside(
    repo: &Repo,
    branch: &str,
    tip: &crate::git::CommitId,
    from: u32,
) -> anyhow::Result<(String, u32)> {
    let mut n = from;
    loop {
        let name = format!("{branch}@{n}");
        match repo.ref_target(&format!("refs/heads/{name}"))? {
            None => {
                repo.create_branch(&name, tip)?;
                break;
            }
            Some(there) if there == *tip => break,
            Some(_) => n += 1,
        }
    }
    let name = format!("{branch}@{n}");
    if !repo.delete_branch_at(branch, tip)? {
        bail!(
            Usage::new(format!(
                "could not move {branch} aside: it is checked out, or moved meanwhile (its work is kept on {name} too)"
            ))
            .hint(format!("check out another branch than {branch}, then retry"))
        );
    }
    Ok((name, n))
}

/// The tasks below task `i` that were skipped: they wait again (those that still wait on
/// another task that did not end well are skipped again when the run resumes).
fn skipped_below(plan: &Plan, tasks: &[TaskRecord], i: usize) -> Vec<String> {
    let mut seen = vec![false; tasks.len()];
    let mut stack: Vec<usize> = plan.dependents(i).collect();
    let mut out = Vec::new();
    while let Some(d) = stack.pop() {
        if seen[d] || tasks[d].status != TaskStatus::Skipped {
            continue;
        }
        seen[d] = true;
        out.push(tasks[d].id.clone());
        stack.extend(plan.dependents(d));
    }
    out
}

/// The goals a retry of task `id` opens again: its own goal, when it was parked or failed
/// (planned again, so the run judges it anew), and the goals skipped because they needed it,
/// directly or not (pending again, planned once what they need is done).
fn reopened_goals(goals: &[GoalRecord], id: &str) -> Vec<(String, GoalStatus)> {
    let Some(own) = goals
        .iter()
        .find(|g| id.starts_with(&format!("{}.", g.id)))
        .filter(|g| matches!(g.status, GoalStatus::Parked | GoalStatus::Failed))
    else {
        return Vec::new();
    };
    let mut out = vec![(own.id.clone(), GoalStatus::Planned)];
    let mut opened = vec![own.id.as_str()];
    while let Some(next) = goals.iter().find(|g| {
        g.status == GoalStatus::Skipped
            && !opened.contains(&g.id.as_str())
            && g.needs
                .iter()
                .flatten()
                .any(|n| opened.contains(&n.goal.as_str()))
    }) {
        opened.push(&next.id);
        out.push((next.id.clone(), GoalStatus::Pending));
    }
    out
}

/// A new run of the one task of an ended run: from the user's HEAD (which holds what the old
/// run landed), with the old run's options (but its base and report files) under those given
/// now, landed as any run. The task runs without its deps (their work is in HEAD when they
/// landed; their results are not given again).
fn in_new_run(
    g: &Globals,
    old: &RunRecord,
    spec: Task,
    newer: &Options,
    configured: &Configured,
) -> anyhow::Result<u8> {
    let mut options =
        from_record(&old.options).with_context(|| format!("run {} in the board", old.id))?;
    // Started afresh here: from HEAD, its reports its own, on this machine.
    options.base = None;
    options.final_out = None;
    options.final_out_dir = None;
    options.remote = None;
    let options = overlay(options, newer);
    let id = spec.id.to_string();
    let mut task = spec;
    task.deps.clear();
    task.parent = None;
    let plan = Plan::from_tasks(vec![task])?;
    let mut settings = settings(&options, &plan, &configured.profiles)?;
    let run = NewRun::begin(
        g,
        format!("retry of {id} from run {}", old.id),
        &options,
        Some(&plan),
        &Reads {
            plan_out: None,
            files: Vec::new(),
        },
    )?;
    let guarded =
        std::fs::read_to_string(run.board.run_dir(&old.id).join(GUARDED_FILE)).unwrap_or_default();
    for rel in guarded.lines().filter(|l| !l.is_empty()) {
        if !settings.guarded.iter().any(|g| g == rel) {
            settings.guarded.push(rel.to_owned());
        }
    }
    guard_files(&run.repo, &mut settings, configured.file.clone())?;
    ui::say(
        g.quiet,
        Verb::Retrying,
        &format!(
            "{id} of run {} in run {}, from {}; swarm/{}-{id} is kept",
            old.id,
            run.record.id,
            run.base.short(),
            old.id
        ),
    );
    run.launch(g, plan, &settings, &options, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Need;

    fn goal(id: &str, status: GoalStatus, needs: &[&str]) -> GoalRecord {
        GoalRecord {
            id: id.into(),
            text: String::new(),
            needs: Some(
                needs
                    .iter()
                    .map(|n| Need {
                        goal: (*n).into(),
                        reason: String::new(),
                    })
                    .collect(),
            ),
            status,
            reason: None,
            queue_id: None,
        }
    }

    #[test]
    fn a_retry_reopens_its_goal_and_the_goals_skipped_for_want_of_it() {
        let goals = [
            goal("g1", GoalStatus::Parked, &[]),
            goal("g2", GoalStatus::Skipped, &["g1"]),
            goal("g3", GoalStatus::Skipped, &["g2"]),
            goal("g4", GoalStatus::Done, &[]),
            goal("g5", GoalStatus::Skipped, &["g6"]),
            goal("g6", GoalStatus::Failed, &[]),
        ];
        assert_eq!(
            reopened_goals(&goals, "g1.edit"),
            [
                ("g1".to_owned(), GoalStatus::Planned),
                ("g2".to_owned(), GoalStatus::Pending),
                ("g3".to_owned(), GoalStatus::Pending),
            ]
        );
        assert_eq!(reopened_goals(&goals, "g4.edit"), []);
        assert_eq!(reopened_goals(&[], "edit"), []);
    }
}
