//! An attempt's end, as the core takes it: a success joins what the attempt spawned and sends
//! a writer to the merge queue; a failure is retried after its backoff, held for a resume or
//! final; a usage limit pauses the run or the pool's member; an endpoint gone pauses every
//! attempt while it is checked; any other fault stops the run.

use std::time::{Duration, Instant};

use crate::agent::FaultKind;
use crate::plan::{Mode, Task};
use crate::store::TaskStatus;
use crate::ui::{Ended, Told};

use super::dag::{State, Transition};
use super::{Core, Effect, Rec, backoff, told_end};
use crate::schedule::job::{Report, Verdict};

impl Core<'_> {
    /// Takes an attempt's report: records it, then merges, retries, or releases dependents.
    pub(super) fn ended(
        &mut self,
        report: Report,
        limit_wait: Duration,
        now: Instant,
        fx: &mut Vec<Effect>,
    ) {
        let i = report.task;
        if self.dag.state(i) == State::Resolving {
            self.release(i);
            self.slots[i].started = None;
            // A rung's agent spends from the run's budget as any attempt does, and the board
            // knows it, so that a resumed run's budget counts it too.
            self.slots[i].spent.add(report.used);
            self.budget.used += report.used.tokens;
            if report.used.any() {
                fx.push(Effect::Record(Rec::Spent {
                    id: self.id(i).to_owned(),
                    totals: self.slots[i].totals(),
                }));
            }
            // A fault outside the resolver stops the run as it stops any attempt's.
            if let Verdict::Fault(fault) = &report.verdict {
                self.stop.fault.get_or_insert_with(|| fault.clone());
            }
            if !self.broken() {
                self.resolved(report, fx);
            }
            return;
        }
        if !self.runs(i, &report) {
            return;
        }
        if self.counts.remote.remove(&i) {
            // A worker's attempt: no slot of this process to free.
        } else {
            self.release(i);
        }
        self.slots[i].started = None;
        if self.broken() {
            self.cut_short_while_broken(report, fx);
            return;
        }
        let id = self.id(i).to_owned();
        let slot = &mut self.slots[i];
        // The session the next attempt continues, or none: the board knows the same.
        if slot.session != report.session {
            slot.session.clone_from(&report.session);
            fx.push(Effect::Record(Rec::Session(
                id.clone(),
                report.session.clone(),
            )));
        }
        let slot = &mut self.slots[i];
        slot.spent.add(report.used);
        self.budget.used += report.used.tokens;
        let totals = slot.totals();
        match report.verdict {
            Verdict::Succeeded {
                ref result,
                ref commit,
            } => {
                let (result, commit) = (result.clone(), commit.clone());
                self.succeeded(&id, report, result, commit, totals, now, fx);
            }
            Verdict::Picked(ref picked) => {
                // The task's change is its winner's: merged from where the winner started.
                let (result, commit) = (picked.result.clone(), picked.commit.clone());
                self.slots[i].start_commit = Some(picked.start.clone());
                fx.push(Effect::Record(Rec::Task(id.clone(), picked.event.clone())));
                self.succeeded(&id, report, result, Some(commit), totals, now, fx);
            }
            Verdict::Limited(ref limit) => {
                let limit = limit.clone();
                if let Some(report) =
                    self.member_limited(&id, report, &limit, limit_wait, totals, now, fx)
                {
                    self.run_limited(&id, report, &limit, limit_wait, totals, now, fx);
                }
            }
            Verdict::Interrupted => {
                let told = told_end(&id, Ended::Interrupted, &report, None);
                fx.push(Effect::Record(Rec::Interrupted { id, report, totals }));
                self.transition(Transition::Interrupted(i), fx);
                fx.push(told);
            }
            Verdict::Failed(ref why) => {
                let why = why.clone();
                self.members.failed(self.slots[i].member.as_deref(), now);
                self.failed(&id, report, &why, totals, now, fx);
            }
            Verdict::Fault(ref fault) if fault.kind == FaultKind::Unreachable => {
                let fault = fault.clone();
                self.endpoint_away(&id, report, &fault, totals, now, fx);
            }
            Verdict::Fault(ref fault) => {
                let fault = fault.clone();
                let told = told_end(&id, Ended::Interrupted, &report, Some(fault.why.clone()));
                fx.push(Effect::Record(Rec::Faulted {
                    id,
                    report,
                    totals,
                    kind: fault.kind.as_str(),
                    why: fault.why.clone(),
                }));
                self.transition(Transition::Interrupted(i), fx);
                fx.push(told);
                self.stop.fault.get_or_insert(fault);
            }
        }
    }

    /// Whether task `i` has the attempt `report` ends running: anything else is an impossible
    /// input, refused and counted.
    pub(super) fn runs(&mut self, i: usize, report: &Report) -> bool {
        let state = self.dag.state(i);
        if state != State::Running || report.attempt != self.slots[i].attempts {
            self.refused.push(format!(
                "the end of attempt {} of {} came while it was {state:?} at attempt {}",
                report.attempt,
                self.id(i),
                self.slots[i].attempts
            ));
            return false;
        }
        true
    }

    /// An attempt that ended after swarm met a fault itself: recorded as cut short (if the
    /// board takes it), nothing else.
    fn cut_short_while_broken(&mut self, report: Report, fx: &mut Vec<Effect>) {
        let i = report.task;
        let slot = &mut self.slots[i];
        slot.spent.add(report.used);
        let totals = slot.totals();
        let id = self.id(i).to_owned();
        let told = told_end(&id, Ended::Interrupted, &report, None);
        fx.push(Effect::Record(match &report.verdict {
            Verdict::Fault(f) => Rec::Faulted {
                id,
                kind: f.kind.as_str(),
                why: f.why.clone(),
                report,
                totals,
            },
            _ => Rec::Interrupted { id, report, totals },
        }));
        self.transition(Transition::Interrupted(i), fx);
        fx.push(told);
    }

    #[expect(
        clippy::too_many_arguments,
        reason = "an attempt's success and everything it brings"
    )]
    fn succeeded(
        &mut self,
        id: &str,
        report: Report,
        result: String,
        commit: Option<crate::git::CommitId>,
        totals: super::Totals,
        now: Instant,
        fx: &mut Vec<Effect>,
    ) {
        let i = report.task;
        let writes = self.plan.tasks[i].mode == Mode::Write;
        let settings = self.settings;
        let runnable = |t: &Task| super::spawn::runnable(settings, t);
        let joined = self
            .spawns
            .join(&mut self.plan, i, report.spawn.as_ref(), now, &runnable);
        let elapsed = report.elapsed;
        let (added, children, refused, grew) = (
            joined.added.clone(),
            joined.children.len(),
            joined.refused.clone(),
            !joined.specs.is_empty(),
        );
        let then = joined.specs.len() > children;
        let task = &self.plan.tasks[i];
        let candidate = task.candidate_of.clone();
        fx.push(Effect::Record(Rec::Succeeded {
            id: id.to_owned(),
            totals,
            result: result.clone(),
            commit: commit.clone(),
            writes,
            joined,
            report,
            kept: candidate.is_some(),
            start: task
                .picks()
                .then(|| self.slots[i].start_commit.clone())
                .flatten(),
        }));
        if grew {
            fx.push(Effect::WritePlan);
            fx.push(Effect::Tell(Told::Spawned {
                id: id.to_owned(),
                children,
                then,
            }));
            self.grow(added, fx);
        }
        if let Some(why) = refused {
            fx.push(Effect::Tell(Told::SpawnRefused {
                id: id.to_owned(),
                why,
            }));
        }
        self.slots[i].result = Some(result);
        self.slots[i].took = Some(elapsed);
        if let (Some(c), Some(of)) = (&commit, candidate) {
            // A candidate is never merged itself: its branch is kept for its task's pick.
            self.slots[i].commit = Some(c.clone());
            let detail = format!("a candidate of {of}, kept for its pick");
            self.done_unmerged(i, id, elapsed, Some(detail), fx);
        } else if let Some(c) = commit {
            self.slots[i].commit = Some(c);
            self.transition(Transition::Committed(i), fx);
            self.merge_when_due(i, fx);
        } else if writes {
            self.done_unmerged(i, id, elapsed, Some("no changes".to_owned()), fx);
        } else {
            fx.push(Effect::Tell(Told::Ended {
                id: id.to_owned(),
                how: Ended::Finished,
                elapsed,
                detail: None,
            }));
            self.transition(Transition::Done(i), fx);
        }
    }

    /// Writer `i` is done with nothing to merge (no change, or a candidate's kept commit): its
    /// checkout goes (its branch stays when it holds a commit), the terminal is told.
    fn done_unmerged(
        &mut self,
        i: usize,
        id: &str,
        elapsed: std::time::Duration,
        detail: Option<String>,
        fx: &mut Vec<Effect>,
    ) {
        fx.push(Effect::CleanUp {
            task: i,
            merged: false,
            tip: self.tip().clone(),
        });
        fx.push(Effect::Tell(Told::Ended {
            id: id.to_owned(),
            how: Ended::Finished,
            elapsed,
            detail,
        }));
        self.transition(Transition::Done(i), fx);
    }

    /// An attempt failed: the task is retried after a backoff, waits for a resume (the run
    /// is stopping), or has failed and its dependents are skipped.
    fn failed(
        &mut self,
        id: &str,
        report: Report,
        why: &str,
        totals: super::Totals,
        now: Instant,
        fx: &mut Vec<Effect>,
    ) {
        let i = report.task;
        let failures = self.slots[i].failures + 1;
        self.slots[i].failures = failures;
        // A pick done again would pick the same: it is never retried.
        let retries = if self.plan.tasks[i].picks() {
            0
        } else {
            self.settings.retries
        };
        let retries_left = failures <= retries;
        let stopping = self.stopping();
        let retry = retries_left && !stopping;
        let status = match (retries_left, stopping) {
            (true, false) => TaskStatus::Pending,
            // A resume gives it the retry it has left.
            (true, true) => TaskStatus::Interrupted,
            (false, _) => TaskStatus::Failed,
        };
        // The failure, what it left on stderr, then what follows: one line each, so a time
        // taken and a time to wait never share one.
        let how = if retry || !retries_left {
            Ended::Failed
        } else {
            Ended::Interrupted
        };
        let told = [
            told_end(id, how, &report, Some(why.to_owned())),
            Effect::Tell(Told::Tail(report.stderr_tail.clone())),
        ];
        let attempt = report.attempt;
        fx.push(Effect::Record(Rec::Failed {
            id: id.to_owned(),
            report,
            totals,
            failures,
            status,
            why: why.to_owned(),
            retry,
        }));
        fx.extend(told);
        if retry {
            let wait = backoff(self.settings.backoff, failures, &mut self.rng);
            self.transition(Transition::Delayed(i, crate::time::deadline(now, wait)), fx);
            fx.push(Effect::Tell(Told::Retry {
                id: id.to_owned(),
                attempt: attempt + 1,
                wait,
                retry: failures,
                retries,
            }));
        } else if retries_left {
            self.transition(Transition::Interrupted(i), fx);
        } else {
            if self.plan.tasks[i].mode == Mode::Write && !self.plan.tasks[i].picks() {
                // Kept for inspection until `swarm gc` (a pick has none).
                fx.push(Effect::KeptCheckout(i));
            }
            self.transition(Transition::Failed(i), fx);
        }
    }
}
