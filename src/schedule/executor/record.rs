//! The run loop's writes to the board: every one goes through `Recorder`, as a typed
//! `RunEvent` with the task update it belongs to, in one transaction. Decides nothing: the
//! dispatcher and the owners say what happened, this says it to the board.

use std::path::Path;

use crate::git::CommitId;
use crate::store::{
    AttemptEnd, AttemptStart, Board, Event, GoalRecord, GoalStatus, Need, Parking, RunEvent,
    TaskStatus, TaskUpdate, now_ms,
};

use super::super::core::slot::Totals;
use super::super::core::spawn::Joined;
use super::super::job::Report;

/// How a failed attempt leaves its task.
pub(super) struct Failure<'a> {
    pub(super) failures: u32,
    pub(super) status: TaskStatus,
    pub(super) why: &'a str,
    pub(super) retry: bool,
}

/// The board of one run, as the loop writes it.
pub(super) struct Recorder<'a> {
    board: &'a mut Board,
    run: String,
}

impl<'a> Recorder<'a> {
    pub(super) fn new(board: &'a mut Board, run: &str) -> Self {
        Self {
            board,
            run: run.to_owned(),
        }
    }

    /// `e`, met writing the board: when the disk was full, it names the board and its disk.
    pub(super) fn name_full(&self, e: anyhow::Error) -> anyhow::Error {
        crate::store::name_full_board(e, &self.board.path())
    }

    /// Opens a batch of records: they are committed together by `commit_batch`.
    pub(super) fn begin_batch(&mut self) -> anyhow::Result<()> {
        self.board.begin_batch()
    }

    /// Commits the open batch of records, if any: from now on they survive a `kill -9`.
    pub(super) fn commit_batch(&mut self) -> anyhow::Result<()> {
        self.board.commit_batch().map_err(|e| self.name_full(e))
    }

    /// Commits what an open batch holds so far and opens the next: what follows depends on
    /// it.
    pub(super) fn make_durable(&mut self) -> anyhow::Result<()> {
        if self.board.batching() {
            self.commit_batch()?;
            self.board.begin_batch()?;
        }
        Ok(())
    }

    /// The integration tip swarm recorded (`None` for runs recorded before swarm kept it).
    pub(super) fn tip(&self) -> anyhow::Result<Option<CommitId>> {
        Ok(self.board.tip(&self.run)?.as_deref().map(CommitId::new))
    }

    /// Something that happened to the run as a whole.
    /// The options the run started with, as the board stores them.
    pub(super) fn options(&self) -> anyhow::Result<serde_json::Value> {
        Ok(self
            .board
            .load_run(&self.run)?
            .map(|r| r.options)
            .unwrap_or_default())
    }

    /// Why a task ended as it did, as the board has it.
    pub(super) fn task_error(&self, task: &str) -> anyhow::Result<Option<String>> {
        self.board.task_error(&self.run, task)
    }

    pub(super) fn run_event(&mut self, what: RunEvent) -> anyhow::Result<()> {
        self.board.event(&self.run, &Event::run(what))
    }

    /// Something that happened to one task.
    pub(super) fn task_event(&mut self, task: &str, what: RunEvent) -> anyhow::Result<()> {
        self.board.event(&self.run, &Event::task(task, what))
    }

    /// An attempt starts in `cwd`; its transcript goes to `transcript`.
    pub(super) fn attempt_started(
        &mut self,
        task: &str,
        a: &super::attempt::Started<'_>,
        agent: Option<&str>,
    ) -> anyhow::Result<()> {
        self.board.start_attempt(
            &self.run,
            task,
            &AttemptStart {
                number: a.attempt,
                transcript: &a.transcript.display().to_string(),
                session: a.session,
                continued: a.continued,
            },
            &Event::task(
                task,
                RunEvent::TaskStarted {
                    attempt: a.attempt,
                    cwd: a.cwd.display().to_string(),
                    agent: agent.map(str::to_owned),
                },
            ),
        )
    }

    /// The member of its pool task `task`'s last attempt went to, as its start recorded it.
    pub(super) fn last_member(&self, task: &str) -> anyhow::Result<Option<String>> {
        let events = self.board.history().task_events(&self.run, task)?;
        Ok(events
            .into_iter()
            .rev()
            .find_map(|(_, e)| match e {
                RunEvent::TaskStarted { agent, .. } => Some(agent),
                _ => None,
            })
            .flatten())
    }

    /// The agent's session task `task`'s next attempt continues, or none.
    pub(super) fn session(&mut self, task: &str, session: Option<&str>) -> anyhow::Result<()> {
        self.board.update_task_quietly(
            &self.run,
            task,
            &TaskUpdate {
                session: Some(session),
                ..TaskUpdate::default()
            },
        )
    }

    /// What a task has used in all, after a rung of the conflict ladder spent more.
    pub(super) fn spent(&mut self, task: &str, totals: Totals) -> anyhow::Result<()> {
        self.board
            .update_task_quietly(&self.run, task, &spending(totals))
    }

    /// A writer's attempt starts from `start` in its checkout `cwd` on `branch`.
    pub(super) fn writer_started(
        &mut self,
        task: &str,
        start: &CommitId,
        branch: &str,
        cwd: &Path,
        reuses: Option<&Path>,
    ) -> anyhow::Result<()> {
        self.board.update_task(
            &self.run,
            task,
            &TaskUpdate {
                start_commit: Some(start.as_str()),
                branch: Some(branch),
                ..TaskUpdate::default()
            },
            &Event::task(
                task,
                RunEvent::Worktree {
                    path: cwd.display().to_string(),
                    start: start.to_string(),
                    reuses: reuses.map(|p| p.display().to_string()),
                },
            ),
        )
    }

    fn finish_attempt(
        &mut self,
        task: &str,
        report: &Report,
        outcome: &str,
        update: &TaskUpdate<'_>,
        events: &[Event<'_>],
        added: &[(String, serde_json::Value)],
    ) -> anyhow::Result<()> {
        self.board.finish_attempt(
            &self.run,
            task,
            report.attempt,
            &AttemptEnd {
                outcome,
                tokens: report.used.tokens,
                prompt_tokens: report.used.prompt_tokens,
                cached_tokens: report.used.cached_tokens,
                cost: report.used.cost,
                spawned: added,
            },
            update,
            events,
        )
    }

    /// An attempt succeeded with `result`; a writer's `commit` waits to be merged. The tasks
    /// it spawned join the board with it.
    #[expect(
        clippy::too_many_arguments,
        reason = "one attempt's end and everything it brings, recorded at once"
    )]
    pub(super) fn attempt_succeeded(
        &mut self,
        task: &str,
        report: &Report,
        totals: Totals,
        result: &str,
        commit: Option<&CommitId>,
        writes: bool,
        spawned: &Joined,
        kept: bool,
        start: Option<&CommitId>,
    ) -> anyhow::Result<()> {
        let elapsed_ms = report.elapsed.as_millis() as i64;
        let mut events = vec![Event::task(
            task,
            RunEvent::TaskSucceeded {
                attempt: report.attempt,
                elapsed_ms,
            },
        )];
        if let Some(c) = commit {
            events.push(Event::task(
                task,
                RunEvent::Committed {
                    commit: c.to_string(),
                },
            ));
        } else if writes {
            events.push(Event::task(task, RunEvent::NoChanges));
        }
        if !spawned.specs.is_empty() {
            events.push(Event::task(
                task,
                RunEvent::Spawned {
                    tasks: spawned.specs.iter().map(|(id, _)| id.clone()).collect(),
                    children: spawned.children.len(),
                },
            ));
        }
        if let Some(why) = &spawned.refused {
            events.push(Event::task(
                task,
                RunEvent::SpawnRefused { why: why.clone() },
            ));
        }
        let update = TaskUpdate {
            // A candidate's commit waits for its task's pick, not for the merge queue.
            status: Some(if commit.is_some() && !kept {
                TaskStatus::Committed
            } else {
                TaskStatus::Done
            }),
            result: Some(result),
            error: Some(None),
            finished_at: Some(now_ms()),
            elapsed_ms: Some(elapsed_ms),
            commit_id: commit.map(CommitId::as_str),
            start_commit: start.map(CommitId::as_str),
            ..spending(totals)
        };
        self.finish_attempt(task, report, "succeeded", &update, &events, &spawned.specs)
    }

    /// An attempt failed; the task retries, waits for a resume, or has failed.
    pub(super) fn attempt_failed(
        &mut self,
        task: &str,
        report: &Report,
        totals: Totals,
        failure: &Failure<'_>,
    ) -> anyhow::Result<()> {
        let update = TaskUpdate {
            status: Some(failure.status),
            failures: Some(failure.failures),
            error: Some(Some(failure.why)),
            finished_at: Some(now_ms()),
            elapsed_ms: Some(report.elapsed.as_millis() as i64),
            ..spending(totals)
        };
        let event = Event::task(
            task,
            RunEvent::TaskFailed {
                attempt: report.attempt,
                error: failure.why.to_owned(),
                retry: failure.retry,
                stderr_tail: report.stderr_tail.clone(),
            },
        );
        self.finish_attempt(task, report, "failed", &update, &[event], &[])
    }

    /// An attempt was stopped; a resume runs the task again.
    pub(super) fn attempt_interrupted(
        &mut self,
        task: &str,
        report: &Report,
        totals: Totals,
    ) -> anyhow::Result<()> {
        let what = RunEvent::TaskInterrupted {
            attempt: Some(report.attempt),
        };
        self.cut_short(task, report, totals, "interrupted", what)
    }

    /// An attempt that ended before its end, counting no failure: the task waits for a resume.
    fn cut_short(
        &mut self,
        task: &str,
        report: &Report,
        totals: Totals,
        outcome: &str,
        what: RunEvent,
    ) -> anyhow::Result<()> {
        let update = TaskUpdate {
            status: Some(TaskStatus::Interrupted),
            ..spending(totals)
        };
        self.finish_attempt(
            task,
            report,
            outcome,
            &update,
            &[Event::task(task, what)],
            &[],
        )
    }

    /// An attempt met its provider's usage limit: the task waits `wait_ms`, or, when that is
    /// too long, the run stops and a resume runs it.
    pub(super) fn attempt_limited(
        &mut self,
        task: &str,
        report: &Report,
        totals: Totals,
        message: &str,
        wait_ms: u64,
        stops_run: bool,
    ) -> anyhow::Result<()> {
        let update = TaskUpdate {
            status: Some(if stops_run {
                TaskStatus::Interrupted
            } else {
                TaskStatus::Pending
            }),
            ..spending(totals)
        };
        let event = Event::task(
            task,
            RunEvent::UsageLimit {
                message: message.to_owned(),
                wait_ms,
                stops_run,
            },
        );
        self.finish_attempt(task, report, "usage_limit", &update, &[event], &[])
    }

    /// An attempt cut short by a fault outside the task: a resume runs it again, no failure
    /// counted.
    pub(super) fn attempt_faulted(
        &mut self,
        task: &str,
        report: &Report,
        totals: Totals,
        kind: &str,
        why: &str,
    ) -> anyhow::Result<()> {
        let what = RunEvent::Fault {
            kind: kind.to_owned(),
            why: why.to_owned(),
        };
        self.cut_short(task, report, totals, "fault", what)
    }

    /// Tasks that had run and wait for a resume to run again.
    pub(super) fn interrupted(&mut self, tasks: &[&str]) -> anyhow::Result<()> {
        let marks: Vec<_> = tasks
            .iter()
            .map(|&t| (t, TaskStatus::Interrupted, None))
            .collect();
        self.board
            .mark_tasks(&self.run, &marks, |_| RunEvent::TaskInterrupted {
                attempt: None,
            })
    }

    /// Tasks skipped, each with its reason, in one transaction.
    pub(super) fn skipped(&mut self, skips: &[(&str, &str)]) -> anyhow::Result<()> {
        let marks: Vec<_> = skips
            .iter()
            .map(|&(t, why)| (t, TaskStatus::Skipped, Some(why)))
            .collect();
        self.board
            .mark_tasks(&self.run, &marks, |reason| RunEvent::TaskSkipped { reason })
    }

    /// A writer's commit was merged: the integration tip moved from `before` to `after`.
    pub(super) fn merged(
        &mut self,
        task: &str,
        commit: &CommitId,
        before: &CommitId,
        after: &CommitId,
        ms: f64,
    ) -> anyhow::Result<()> {
        self.board.record_merge(
            &self.run,
            task,
            &TaskUpdate {
                status: Some(TaskStatus::Done),
                ..TaskUpdate::default()
            },
            after.as_str(),
            &Event::task(
                task,
                RunEvent::Merged {
                    commit: commit.to_string(),
                    before: before.to_string(),
                    after: after.to_string(),
                    ms,
                },
            ),
        )
    }

    /// A writer's merge made before a crash was found on the integration branch.
    pub(super) fn merge_recovered(&mut self, task: &str, commit: &CommitId) -> anyhow::Result<()> {
        self.board.update_task(
            &self.run,
            task,
            &TaskUpdate {
                status: Some(TaskStatus::Done),
                ..TaskUpdate::default()
            },
            &Event::task(
                task,
                RunEvent::MergeRecovered {
                    commit: commit.to_string(),
                },
            ),
        )
    }

    /// The integration ref was one merge of swarm's ahead of the recorded tip.
    pub(super) fn tip_recovered(
        &mut self,
        before: &CommitId,
        after: &CommitId,
    ) -> anyhow::Result<()> {
        self.board.set_tip(
            &self.run,
            after.as_str(),
            &Event::run(RunEvent::TipRecovered {
                before: before.to_string(),
                after: after.to_string(),
            }),
        )
    }

    /// The newest tip the gate passed on.
    pub(super) fn green(&self) -> anyhow::Result<Option<CommitId>> {
        Ok(self.board.green(&self.run)?.as_deref().map(CommitId::new))
    }

    /// The gate passed on `tip`: `what` says how.
    pub(super) fn gate_passed(&mut self, tip: &CommitId, what: RunEvent) -> anyhow::Result<()> {
        self.board
            .set_green(&self.run, tip.as_str(), &Event::run(what))
    }

    /// The integration tip went back to `tip`, green (the gate took a merge out).
    pub(super) fn tip_rewound(&mut self, tip: &CommitId, what: RunEvent) -> anyhow::Result<()> {
        self.board
            .set_tip_and_green(&self.run, tip.as_str(), &Event::run(what))
    }

    /// Writers merged before a culprit was taken out are to be merged again.
    pub(super) fn merge_again(&mut self, tasks: &[&str]) -> anyhow::Result<()> {
        let changes: Vec<(&str, TaskStatus, Option<&str>)> = tasks
            .iter()
            .map(|t| (*t, TaskStatus::Committed, None))
            .collect();
        self.board
            .mark_tasks(&self.run, &changes, |_| RunEvent::GateRemerge)
    }

    /// A writer is parked with `error`.
    pub(super) fn parked(
        &mut self,
        task: &str,
        error: &str,
        parking: Parking,
    ) -> anyhow::Result<()> {
        self.board.update_task(
            &self.run,
            task,
            &TaskUpdate {
                status: Some(TaskStatus::Parked),
                error: Some(Some(error)),
                ..TaskUpdate::default()
            },
            &Event::task(task, RunEvent::Parked(parking)),
        )
    }

    /// A resolver made `commit`, the merge of the writer onto `tip`; it is merged next.
    pub(super) fn resolved(
        &mut self,
        task: &str,
        commit: &CommitId,
        tip: &CommitId,
        paths: Vec<String>,
        rung: crate::schedule::Rung,
        tool: Option<String>,
    ) -> anyhow::Result<()> {
        self.board.update_task(
            &self.run,
            task,
            &TaskUpdate {
                commit_id: Some(commit.as_str()),
                start_commit: Some(tip.as_str()),
                ..TaskUpdate::default()
            },
            &Event::task(
                task,
                RunEvent::Resolved {
                    commit: commit.to_string(),
                    paths,
                    rung: Some(rung.as_str().to_owned()),
                    tool,
                },
            ),
        )
    }

    /// Goals added to the queue since the run started, now the run's.
    pub(super) fn take_queue(&mut self) -> anyhow::Result<Vec<GoalRecord>> {
        self.board.queue_mut().take(&self.run)
    }

    /// The board, for memory's recall of a goal joining from the queue.
    pub(super) fn board(&mut self) -> &mut Board {
        self.board
    }

    pub(super) fn goal_status(
        &mut self,
        goal: &str,
        status: GoalStatus,
        reason: Option<&str>,
        what: RunEvent,
    ) -> anyhow::Result<()> {
        self.board
            .goals_mut()
            .set_status(&self.run, goal, status, reason, &Event::run(what))
    }

    /// The dependency pass decided these goals' needs.
    pub(super) fn goal_needs(
        &mut self,
        rows: &[(String, Vec<Need>)],
        events: Vec<RunEvent>,
    ) -> anyhow::Result<()> {
        let events: Vec<Event<'_>> = events.into_iter().map(Event::run).collect();
        self.board.goals_mut().set_needs(&self.run, rows, &events)
    }

    /// A planned goal's tasks join the run.
    pub(super) fn tasks_added(
        &mut self,
        specs: &[(String, serde_json::Value)],
    ) -> anyhow::Result<()> {
        self.board.add_tasks(&self.run, specs)
    }
}

/// The change to a task's record that says what it has used in all.
fn spending<'a>(totals: Totals) -> TaskUpdate<'a> {
    TaskUpdate {
        tokens: Some(totals.tokens),
        prompt_tokens: Some(totals.prompt_tokens),
        cached_tokens: Some(totals.cached_tokens),
        cost: totals.cost,
        ..TaskUpdate::default()
    }
}
