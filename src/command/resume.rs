//! `swarm resume`: a run stopped short (a signal, a kill, a spent budget, a fault of the
//! machine) goes on from its board, with the options it was started with and any given now; a
//! single goal stopped while it was planned is planned again.

use anyhow::{Context as _, bail};

use crate::config::{Options, from_record, overlay, to_record};
use crate::error::{Usage, exit};
use crate::git::CommitId;
use crate::plan::Mode;
use crate::schedule::Layout;
use crate::store::{Board, Event, RunEvent, RunRecord, RunStatus, TaskStatus};

use super::context::{Globals, START_A_RUN, open_repo, open_run_board, refuse_when_nested};
use super::goal;
use super::layout::{Lock, deps_root, worktree_root};
use super::run::{GUARDED_FILE, NewRun, Reads, check_before_run, execute};
use super::settings::settings;
use super::stored::stored_plan;

pub(super) fn resume(
    g: &Globals,
    run: Option<&str>,
    newer: &Options,
    profiles: &super::pools::Agents,
    asked: goal::Question,
) -> anyhow::Result<u8> {
    if let Some(code) = refuse_when_nested(g) {
        return Ok(code);
    }
    let repo = open_repo(g)?;
    let board = open_run_board(g, &repo)?;
    let run_id = match run {
        Some(r) => r.to_owned(),
        None => match board.latest_run(true)? {
            Some(run) => run,
            None => bail!(no_unfinished_run(&board)?),
        },
    };
    let lock = Lock::acquire(&repo, &run_id)?;
    let held = Held { repo, board, lock };
    resume_held(g, held, &run_id, newer, profiles, asked)
}

/// There is no run to resume: what to do instead.
fn no_unfinished_run(board: &Board) -> anyhow::Result<Usage> {
    let error = Usage::new("there is no unfinished run to resume");
    Ok(if board.latest_run(false)?.is_some() {
        error.hint(format!(
            "every run of this repository finished; `swarm runs` lists them, and {START_A_RUN} starts a new one"
        ))
    } else {
        error.hint(format!(
            "there are no runs in this repository yet; {START_A_RUN} starts one"
        ))
    })
}

/// `run` finished: nothing of it is left to resume. What can go on is a writer of it that was
/// parked or failed, by `swarm retry`; else a new run.
fn finished_already(board: &Board, run: &RunRecord) -> anyhow::Result<Usage> {
    let error = Usage::new(format!(
        "run {} finished already (exit code {}); nothing to resume",
        run.id,
        run.exit_code.unwrap_or_default()
    ));
    let records = board.load_tasks(&run.id)?;
    let plan = stored_plan(&records)?;
    let again: Vec<(&str, TaskStatus)> = records
        .iter()
        .zip(&plan.tasks)
        .filter(|(r, t)| {
            matches!(r.status, TaskStatus::Parked | TaskStatus::Failed) && t.mode == Mode::Write
        })
        .map(|(r, _)| (r.id.as_str(), r.status))
        .collect();
    let shows = format!("`swarm status {}` shows how it ended", run.id);
    Ok(match again.as_slice() {
        [] => error.hint(format!("{shows}; {START_A_RUN} starts a new run")),
        [(one, status)] => error.hint(format!(
            "`swarm retry {one} --run {}` runs its {} writer again; {shows}",
            run.id,
            status.as_str()
        )),
        more => {
            let ids: Vec<&str> = more.iter().map(|(id, _)| *id).collect();
            error.hint(format!(
                "`swarm retry TASK --run {}` runs one of its parked or failed writers ({}) again; {shows}",
                run.id,
                ids.join(", ")
            ))
        }
    })
}

/// The repository, its board and its lock, taken for a run.
pub(super) struct Held {
    pub(super) repo: crate::git::Repo,
    pub(super) board: Board,
    pub(super) lock: Lock,
}

/// `resume` of `run_id` once its caller holds the repository (`swarm retry` does, having
/// put a task back first).
pub(super) fn resume_held(
    g: &Globals,
    held: Held,
    run_id: &str,
    newer: &Options,
    profiles: &super::pools::Agents,
    asked: goal::Question,
) -> anyhow::Result<u8> {
    let Held {
        repo,
        mut board,
        lock,
    } = held;
    let run_id = run_id.to_owned();
    let record = board.load_run(&run_id)?.ok_or_else(|| {
        Usage::new(format!("no run {run_id:?} in this repository"))
            .hint("`swarm runs` lists the runs of this repository")
    })?;
    if record.status == RunStatus::Finished {
        bail!(finished_already(&board, &record)?);
    }
    let stored = from_record(&record.options)
        .with_context(|| format!("run {run_id} in the board {}", board.path().display()))?;
    let options = overlay(stored, newer);
    let plan_only = goal::plan_only_of(&board.run_dir(&run_id));
    let plan_out = plan_only.as_ref().and_then(|p| p.plan_out.as_deref());
    check_before_run(
        g,
        &repo,
        &options,
        &Reads {
            plan_out,
            files: Vec::new(),
        },
    )?;
    // Before the resume is recorded: the trace goes on from it.
    let trace = super::trace::start(&mut board, &run_id, &options)?;
    let records = board.load_tasks(&run_id)?;
    let goal_records = board.goals().load(&run_id)?;
    let goal_file = board.run_dir(&run_id).join(super::goal::GOAL_FILE);
    if records.is_empty()
        && goal_records.is_empty()
        && let Ok(goal) = std::fs::read_to_string(&goal_file)
    {
        // A single goal stopped while it was planned: plan it again, then run it.
        let jobs = options.jobs.unwrap_or(crate::config::Defaults::jobs()) as usize;
        let client = super::settings::model_client(&options, jobs)?.ok_or_else(|| {
            Usage::new("planning a goal needs a model, and none is configured")
                .hint(super::settings::PLANNING_HINT)
        })?;
        mark_resumed(&mut board, &run_id, &options)?;
        let run = NewRun {
            base: CommitId::new(&record.base_commit),
            repo,
            lock,
            board,
            record,
            tasks_stored: false,
            trace,
        };
        // A `--plan-only` run is planned only, again.
        let goal = super::goal::Goal {
            text: &goal,
            // A `--plan` run's plan is in its directory, where `plan_and_launch` finds it.
            output: goal::PlanOutput {
                file: plan_out,
                only: plan_only.is_some(),
                given: None,
            },
            asked,
            client: &client,
        };
        return super::goal::plan_and_launch(g, run, &goal, &options, profiles, None);
    }
    if records.is_empty() && goal_records.is_empty() {
        // Stopped while planning, before any task was stored: there is nothing to continue.
        board.set_run_status(
            &run_id,
            RunStatus::Finished,
            Some(i32::from(exit::FAILED)),
            &Event::run(RunEvent::RunAbandoned {
                reason: "stopped before its plan was stored".to_owned(),
            }),
        )?;
        bail!(
            Usage::new(format!(
                "run {run_id} was stopped before its plan was stored; there is nothing to resume"
            ))
            .hint("start it again")
        );
    }
    let plan = stored_plan(&records)?;
    let mut settings = settings(&options, &plan, profiles)?;
    let guarded =
        std::fs::read_to_string(board.run_dir(&run_id).join(GUARDED_FILE)).unwrap_or_default();
    for rel in guarded.lines().filter(|l| !l.is_empty()) {
        if !settings.guarded.iter().any(|g| g == rel) {
            settings.guarded.push(rel.to_owned());
        }
    }
    let goals = if goal_records.is_empty() {
        None
    } else {
        Some(goal::goal_run(
            g,
            &repo,
            &mut board,
            &options,
            &settings,
            &run_id,
            goal_records,
        )?)
    };
    let base = CommitId::new(&record.base_commit);
    mark_resumed(&mut board, &run_id, &options)?;
    let layout = Layout {
        run: run_id.clone(),
        base,
        integration_ref: record.integration_ref.clone(),
        worktrees: worktree_root(&repo, options.worktree_dir.as_deref())?.join(&run_id),
        deps: deps_root(&board.run_dir(&run_id), &run_id),
        run_dir: board.run_dir(&run_id),
    };
    execute(
        g, &repo, &mut board, plan, &settings, &layout, &options, lock, goals, trace,
    )
}

/// The run is running again, with the options this resume runs it with.
fn mark_resumed(board: &mut Board, run_id: &str, options: &Options) -> anyhow::Result<()> {
    board.set_run_options(run_id, &to_record(options)?)?;
    board.set_run_status(
        run_id,
        RunStatus::Running,
        None,
        &Event::run(RunEvent::RunResumed {
            pid: std::process::id(),
        }),
    )
}
