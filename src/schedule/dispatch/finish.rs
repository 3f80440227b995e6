//! An attempt's report, taken on the owner thread: recorded, then the writer merged, the
//! task retried after its backoff, held for a resume, or failed with its dependents skipped.

use std::time::Instant;

use super::super::dag::{State, Transition};
use super::super::job::{Report, Verdict};
use super::super::record::Failure;
use super::super::{Checkout, backoff};
use super::Dispatcher;
use crate::agent::FaultKind;
use crate::plan::Mode;
use crate::store::TaskStatus;
use crate::ui::Verb;

impl Dispatcher<'_> {
    /// The slot of task `i`'s attempt in this process's pool is free again.
    pub(super) fn release(&mut self, i: usize) {
        self.run.ports.release(i);
        self.run.scratch.release(i);
        self.running -= 1;
        if self.run.plan.tasks[i].mode == Mode::Write {
            self.writers_running -= 1;
        }
    }

    /// Takes an attempt's report (from this process's pool or a worker on another machine):
    /// records it, then merges, retries, or releases dependents.
    pub(super) fn finish(&mut self, report: Report) -> anyhow::Result<()> {
        let i = report.task;
        let mode = self.run.plan.tasks[i].mode;
        self.run.slots[i].started = None;
        if self.run.dag.state(i) == State::Resolving {
            // A fault outside the resolver stops the run as it stops any attempt's.
            if let Verdict::Fault(fault) = &report.verdict {
                self.fault.get_or_insert_with(|| fault.clone());
            }
            return self
                .merges
                .finish_resolver(&mut self.run, &mut self.checkouts, report);
        }
        if let Some(commit) = self.run.slots[i].snapshot.take() {
            self.checkouts
                .release_snapshot(&commit, self.merges.tip())?;
        }
        let slot = &mut self.run.slots[i];
        // The session the next attempt continues, or none: the board knows the same.
        if slot.session != report.session {
            slot.session.clone_from(&report.session);
            let id = self.run.plan.tasks[i].id.as_str();
            self.run.record.session(id, report.session.as_deref())?;
        }
        let slot = &mut self.run.slots[i];
        slot.tokens += report.tokens;
        self.tokens_used += report.tokens;
        if let Some(c) = report.cost {
            slot.cost = Some(slot.cost.unwrap_or(0.0) + c);
        }
        let totals = slot.totals();
        let id = self.run.plan.tasks[i].id.to_string();
        match report.verdict {
            Verdict::Succeeded {
                ref result,
                ref commit,
            } => {
                let writes = mode == Mode::Write;
                let run = &mut self.run;
                run.record.attempt_succeeded(
                    &id,
                    &report,
                    totals,
                    result,
                    commit.as_ref(),
                    writes,
                )?;
                run.slots[i].result = Some(result.clone());
                run.slots[i].took = Some(report.elapsed);
                if let Some(c) = commit {
                    run.slots[i].commit = Some(c.clone());
                    run.dag.on(&run.plan, Transition::Committed(i));
                    self.merges.merge(run, &mut self.checkouts, i)?;
                } else {
                    if writes {
                        self.merges.clean_up(run, &mut self.checkouts, i, false)?;
                    }
                    let text = writes.then_some("no changes");
                    run.ui
                        .task_finished(&id, Verb::Finished, report.elapsed, text);
                    run.transition(Transition::Done(i))?;
                }
            }
            Verdict::Limited(ref limit) => self.pause_for_limit(&id, &report, limit, totals)?,
            Verdict::Interrupted => {
                let run = &mut self.run;
                run.record.attempt_interrupted(&id, &report, totals)?;
                run.dag.on(&run.plan, Transition::Interrupted(i));
                run.ui
                    .task_finished(&id, Verb::Interrupted, report.elapsed, None);
            }
            Verdict::Failed(ref why) => self.failed(&id, &report, why, totals)?,
            Verdict::Fault(ref fault) if fault.kind == FaultKind::Unreachable => {
                self.endpoint_away(&id, &report, fault, totals)?;
            }
            Verdict::Fault(ref fault) => {
                let run = &mut self.run;
                run.record.attempt_faulted(
                    &id,
                    &report,
                    totals,
                    fault.kind.as_str(),
                    &fault.why,
                )?;
                run.dag.on(&run.plan, Transition::Interrupted(i));
                run.ui
                    .task_finished(&id, Verb::Interrupted, report.elapsed, Some(&fault.why));
                self.fault.get_or_insert_with(|| fault.clone());
            }
        }
        Ok(())
    }

    /// An attempt failed: the task is retried after a backoff, waits for a resume (the run
    /// is stopping), or has failed and its dependents are skipped.
    fn failed(
        &mut self,
        id: &str,
        report: &Report,
        why: &str,
        totals: super::super::record::Totals,
    ) -> anyhow::Result<()> {
        let i = report.task;
        let run = &mut self.run;
        let failures = run.slots[i].failures + 1;
        run.slots[i].failures = failures;
        let retries_left = failures <= run.settings.retries;
        let retry = retries_left && !self.stopping;
        let status = match (retries_left, self.stopping) {
            (true, false) => TaskStatus::Pending,
            // A resume gives it the retry it has left.
            (true, true) => TaskStatus::Interrupted,
            (false, _) => TaskStatus::Failed,
        };
        let failure = Failure {
            failures,
            status,
            why,
            retry,
        };
        run.record.attempt_failed(id, report, totals, &failure)?;
        if retry {
            let wait = backoff(run.settings.backoff, failures);
            run.dag.on(
                &run.plan,
                Transition::Delayed(i, crate::time::deadline(Instant::now(), wait)),
            );
            // The failure, what it left on stderr, then the retry: one line each, so a time
            // taken and a time to wait never share one.
            run.ui
                .task_finished(id, Verb::Failed, report.elapsed, Some(why));
            run.ui.output_tail(&report.stderr_tail);
            run.ui.note(
                Verb::Retrying,
                &format!(
                    "{id}: attempt {} in {} (retry {failures} of {})",
                    report.attempt + 1,
                    crate::ui::duration(wait),
                    run.settings.retries,
                ),
            );
        } else if retries_left {
            run.dag.on(&run.plan, Transition::Interrupted(i));
            run.ui
                .task_finished(id, Verb::Interrupted, report.elapsed, Some(why));
            run.ui.output_tail(&report.stderr_tail);
        } else {
            run.ui
                .task_finished(id, Verb::Failed, report.elapsed, Some(why));
            run.ui.output_tail(&report.stderr_tail);
            if run.plan.tasks[i].mode == Mode::Write {
                // Kept for inspection until `swarm gc`.
                let path = run.layout.worktree(id, Checkout::Task);
                run.ui.note(
                    Verb::Kept,
                    &format!("worktree of {id} at {}", path.display()),
                );
            }
            run.transition(Transition::Failed(i))?;
        }
        Ok(())
    }
}
