//! The merge queue's decisions: committed writers merged one at a time onto the integration
//! tip, a conflict given to its one resolver attempt or parked, a change that must be seen by
//! a human parked, a moved integration branch halting the merges, and the gate's batches, their
//! bisection and the culprit it takes out. The executor makes each merge and says how it went
//! (`Input::Merge`); nothing starts while one is out, since the tip is about to move.

use std::collections::VecDeque;

use crate::agent::{Fault, FaultKind};
use crate::git::CommitId;
use crate::store::{Moved, RunEvent};
use crate::ui::{Parked, Told};

use super::dag::{State, Transition};
use super::gate::{self, GateState, Next, Probe};
use super::{Core, Effect, Rec};
use crate::schedule::Rung;
use crate::schedule::job::{Report, Verdict};

/// Why a writer is parked.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::schedule) enum Hold {
    /// Its merge conflicts in these paths; `climbed` says which rungs of the ladder were tried
    /// and why each failed.
    Conflict {
        paths: Vec<String>,
        climbed: Vec<(Rung, String)>,
    },
    /// Its change must be seen by a human before it is merged.
    Review { why: String, paths: Vec<String> },
    /// The gate fails on the first tip that merges it, with these last lines.
    Gate { why: String, output: Vec<String> },
}

impl Hold {
    /// What the terminal says of it.
    fn told(&self) -> Parked {
        match self {
            Hold::Conflict { paths, .. } => Parked::Conflict(paths.clone()),
            Hold::Review { why, .. } | Hold::Gate { why, .. } => Parked::Held(why.clone()),
        }
    }
}

/// How a merge the core asked for went.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::schedule) enum MergeOutcome {
    /// The integration branch moved from `before` to `after` in `ms`.
    Merged {
        before: CommitId,
        after: CommitId,
        ms: f64,
    },
    /// It conflicts in these paths.
    Conflicted { paths: Vec<String> },
    /// It is not merged without a human: it changes a file swarm reads commands from, holds a
    /// secret's value, or git refused it.
    Held(Hold),
    /// Something other than swarm moved the integration branch; swarm put it back.
    Moved(Box<Moved>),
}

/// The merge queue and the gate.
pub(super) struct Merges {
    /// Where swarm left the integration branch.
    tip: CommitId,
    /// Committed writers waiting for their merge, in order.
    queue: VecDeque<usize>,
    /// The writer whose merge is out with the executor.
    merging: Option<usize>,
    /// Conflicting writers whose resolver attempt has yet to start.
    to_resolve: Vec<usize>,
    /// Merging stopped for this reason, for a human to settle; the run winds down.
    halted: Option<String>,
    /// With a gate: what it knows of the merges since the last green tip.
    gate: Option<GateState>,
    /// A gate run's verdict that came while a merge was out, taken once the merge is back: a
    /// culprit taken out moves the branch the merge is moving.
    verdict: Option<Report>,
}

impl Merges {
    pub(super) fn new(tip: CommitId, gate: Option<GateState>) -> Self {
        Self {
            tip,
            queue: VecDeque::new(),
            merging: None,
            to_resolve: Vec::new(),
            halted: None,
            gate,
            verdict: None,
        }
    }

    pub(super) fn tip(&self) -> &CommitId {
        &self.tip
    }

    /// The integration branch is at `tip`, as found on a resume.
    pub(super) fn set_tip(&mut self, tip: CommitId) {
        self.tip = tip;
    }

    /// The tip the run ends at: the newest green one with a gate.
    pub(super) fn final_tip(&self) -> CommitId {
        match &self.gate {
            Some(g) => g.green.clone(),
            None => self.tip.clone(),
        }
    }

    /// Why merging stopped, if it did.
    pub(super) fn halted(&self) -> Option<&str> {
        self.halted.as_deref()
    }

    /// Whether a merge is out with the executor: nothing starts until it is back.
    pub(super) fn in_flight(&self) -> bool {
        self.merging.is_some()
    }

    /// Whether the run must wait for the merge queue (a merge, a resolver to start, the gate)
    /// before it ends.
    pub(super) fn busy(&self) -> bool {
        self.merging.is_some()
            || !self.queue.is_empty()
            || !self.to_resolve.is_empty()
            || (self.halted.is_none() && self.gate.as_ref().is_some_and(GateState::busy))
    }

    /// Whether this writer's merge waits for the gate.
    pub(super) fn waits_for_gate(&self, i: usize) -> bool {
        self.gate
            .as_ref()
            .is_some_and(|g| g.pending.iter().any(|m| m.task == i))
    }

    /// On a resume: the green tip is not on the branch, so all is tested again from the base.
    pub(super) fn gate_from_base(&mut self, base: &CommitId) {
        if let Some(g) = &mut self.gate {
            g.green = base.clone();
            g.tested = false;
        }
    }

    /// On a resume: these merges since the last green tip wait for the gate again, oldest
    /// first.
    pub(super) fn gate_pending(&mut self, chain: Vec<(usize, CommitId)>) {
        if let Some(g) = &mut self.gate {
            g.pending = chain
                .into_iter()
                .map(|(task, tip)| gate::Merged { task, tip })
                .collect();
        }
    }

    /// The merge of writer `i` the core asked for was not made.
    pub(super) fn not_merged(&mut self, i: usize) {
        if self.merging == Some(i) {
            self.merging = None;
        }
    }

    /// Whether a gate run is going on.
    pub(super) fn gate_runs_now(&self) -> bool {
        self.gate.as_ref().is_some_and(|g| g.running.is_some())
    }

    /// The gate's run the core asked for never started.
    pub(super) fn gate_not_run(&mut self) {
        if let Some(g) = &mut self.gate {
            g.running = None;
        }
    }

    /// With a gate, the newest tip it passed on.
    pub(super) fn gate_green(&self) -> Option<CommitId> {
        self.gate.as_ref().map(|g| g.green.clone())
    }

    /// Whether writer `i` waits in the queue.
    pub(super) fn queued(&self, i: usize) -> bool {
        self.queue.contains(&i)
    }

    /// Writer `i` joins the queue, to be merged when the core asks for the next merge.
    pub(super) fn queue_up(&mut self, i: usize) {
        self.queue.push_back(i);
    }

    /// The next conflicting writer whose resolver attempt is to start.
    pub(super) fn next_resolver(&mut self) -> Option<usize> {
        self.to_resolve.pop()
    }
}

impl Core<'_> {
    /// Writer `i` is committed: it joins the merge queue.
    pub(super) fn enqueue(&mut self, i: usize, fx: &mut Vec<Effect>) {
        self.merges.queue_up(i);
        self.merge_next(fx);
    }

    /// Asks for the next merge, unless one is out or merging stopped.
    pub(super) fn merge_next(&mut self, fx: &mut Vec<Effect>) {
        if self.merges.merging.is_some() || self.merges.halted.is_some() {
            return;
        }
        let Some(i) = self.merges.queue.pop_front() else {
            return;
        };
        let slot = &self.slots[i];
        let (Some(_), Some(start)) = (&slot.commit, &slot.start_commit) else {
            self.refused.push(format!(
                "{} was to be merged without its commits",
                self.id(i)
            ));
            return;
        };
        let tip = self.merges.tip.clone();
        // The resolver's commit is the merge of this very tip and the task: the branch moves
        // onto it.
        let onto = slot.resolver_tried && tip == *start;
        self.merges.merging = Some(i);
        fx.push(Effect::Merge { task: i, tip, onto });
    }

    /// The merge of writer `task` came back.
    pub(super) fn merged(&mut self, task: usize, outcome: MergeOutcome, fx: &mut Vec<Effect>) {
        if self.merges.merging != Some(task) {
            self.refused.push(format!(
                "a merge of {} came back while {:?} was being merged",
                self.id(task),
                self.merges.merging.map(|i| self.id(i).to_owned())
            ));
            return;
        }
        self.merges.merging = None;
        let verdict = self.merges.verdict.take();
        if self.broken() {
            // Not recorded: a resume finds the merge on the branch, as after a kill, and runs
            // the gate again.
            if verdict.is_some()
                && let Some(g) = &mut self.merges.gate
            {
                g.running = None;
            }
            return;
        }
        let id = self.id(task).to_owned();
        match outcome {
            MergeOutcome::Merged { before, after, ms } => {
                let commit = self.slots[task]
                    .commit
                    .clone()
                    .unwrap_or_else(|| after.clone());
                fx.push(Effect::Record(Rec::Merged {
                    id: id.clone(),
                    commit,
                    before,
                    after: after.clone(),
                    ms,
                }));
                fx.push(Effect::Tell(Told::Merged { id, before: false }));
                self.merges.tip = after.clone();
                fx.push(Effect::CleanUp {
                    task,
                    merged: true,
                    tip: after.clone(),
                });
                match &mut self.merges.gate {
                    Some(g) => g.pending.push(gate::Merged { task, tip: after }),
                    None => self.transition(Transition::Done(task), fx),
                }
                fx.push(Effect::DropSnapshots(self.merges.tip.clone()));
            }
            MergeOutcome::Conflicted { paths } => self.climb(task, paths, fx),
            MergeOutcome::Held(hold) => self.park(task, hold, fx),
            MergeOutcome::Moved(moved) => self.halted(*moved, fx),
        }
        if let Some(report) = verdict {
            self.take_verdict(&report, fx);
        }
        self.merge_next(fx);
    }

    /// Writer `task`'s merge conflicts in `paths`: it climbs to the next rung of the ladder
    /// it has not tried, or is parked with what each rung it tried said.
    fn climb(&mut self, task: usize, paths: Vec<String>, fx: &mut Vec<Effect>) {
        let id = self.id(task).to_owned();
        let Some(rung) = self.next_rung(task) else {
            let climbed = self.slots[task].climbed.clone();
            self.park(task, Hold::Conflict { paths, climbed }, fx);
            return;
        };
        fx.push(Effect::Record(Rec::Task(
            id.clone(),
            RunEvent::Resolving {
                paths: paths.clone(),
                rung: Some(rung.as_str().to_owned()),
            },
        )));
        fx.push(Effect::Tell(Told::Resolving {
            id,
            paths: paths.clone(),
            rung: rung.as_str(),
        }));
        self.transition(Transition::Resolving(task), fx);
        self.slots[task].conflict = paths;
        self.slots[task].rung = Some(rung);
        self.merges.to_resolve.push(task);
    }

    /// The next rung of the ladder writer `i` has not climbed and can: a rung it cannot (no
    /// structural merge program, no agent to resolve with) is passed over, and said so.
    fn next_rung(&mut self, i: usize) -> Option<Rung> {
        for &rung in &self.settings.ladder {
            if self.slots[i].climbed.iter().any(|(r, _)| *r == rung) {
                continue;
            }
            let cannot = match rung {
                Rung::Structural if self.settings.structural.is_none() => Some(
                    "no structural merge tool: mergiraf is not on PATH (install it, or name it with the `mergiraf` key)",
                ),
                Rung::Redo => match self.plan.tasks[i].action {
                    crate::plan::Action::Run(_) if !self.plan.tasks[i].repeat => {
                        Some("a `run` task is run again only when it is marked `\"repeat\": true`")
                    }
                    crate::plan::Action::Prompt(_) if !self.resolvable(i) => {
                        Some("no agent to redo it with")
                    }
                    crate::plan::Action::Run(_) | crate::plan::Action::Prompt(_) => None,
                },
                Rung::Resolve if !self.resolvable(i) => Some("no agent to resolve it with"),
                Rung::Structural | Rung::Resolve => None,
            };
            match cannot {
                Some(why) => self.slots[i].climbed.push((rung, why.to_owned())),
                None => return Some(rung),
            }
        }
        None
    }

    /// A gate run ended, now or while a merge was out: its verdict is taken.
    pub(super) fn take_verdict(&mut self, report: &Report, fx: &mut Vec<Effect>) {
        if let Some(fault) = self.gated(report, fx) {
            self.stop.fault.get_or_insert(fault);
        }
    }

    /// A gate run ended while a merge is out: its verdict waits for the merge.
    pub(super) fn verdict_later(&mut self, report: Report) {
        self.merges.verdict = Some(report);
    }

    /// Whether writer `i`'s conflict has an agent to try resolving it: the task's agent or
    /// the run's, if usable; for a pool's task, the member that wrote it.
    pub(in crate::schedule) fn resolvable(&self, i: usize) -> bool {
        self.settings
            .resolver_agent(
                self.plan.tasks[i].agent.as_deref(),
                self.slots[i].member.as_deref(),
            )
            .is_some()
    }

    /// Parks a writer: its branch stays, a human is told once, its dependents are skipped.
    pub(super) fn park(&mut self, i: usize, hold: Hold, fx: &mut Vec<Effect>) {
        let told = hold.told();
        if self.settings.on_escalate.is_some() {
            self.counts.hooks += 1;
        }
        fx.push(Effect::Park { task: i, hold });
        fx.push(Effect::Tell(Told::Parked {
            id: self.id(i).to_owned(),
            why: told,
        }));
        self.transition(Transition::Parked(i), fx);
    }

    /// Something other than swarm moved the integration branch (the executor put it back):
    /// merging stops for a human, who is told once; the run winds down.
    pub(super) fn halted(&mut self, moved: Moved, fx: &mut Vec<Effect>) {
        let why = moved.reason.clone();
        let info = serde_json::to_value(&moved).unwrap_or_default();
        fx.push(Effect::Record(Rec::Run(RunEvent::IntegrationMoved(moved))));
        fx.push(Effect::Tell(Told::Halted(why.clone())));
        if self.settings.on_escalate.is_some() {
            self.counts.hooks += 1;
        }
        fx.push(Effect::Escalate(info));
        self.merges.halted = Some(why);
    }

    /// A rung's resolution ended: a resolved merge goes through the queue once more; a failed
    /// one is said and the writer's own commit is merged again (the tip may have moved), to
    /// climb on when it conflicts still; one cut short leaves it committed for a resume.
    pub(super) fn resolved(&mut self, report: Report, fx: &mut Vec<Effect>) {
        let i = report.task;
        let id = self.id(i).to_owned();
        fx.push(Effect::Tell(Told::ResolverEnded {
            id: id.clone(),
            elapsed: report.elapsed,
        }));
        let paths = std::mem::take(&mut self.slots[i].conflict);
        // Other merges, or the gate taking one out, may have moved the tip meanwhile: the
        // resolution is a change from the tip it started at.
        let from = self.slots[i]
            .resolving_from
            .take()
            .unwrap_or_else(|| self.merges.tip.clone());
        match report.verdict {
            Verdict::Succeeded {
                commit: Some(resolved),
                ..
            } => {
                let rung = self.slots[i].rung.take().unwrap_or(Rung::Resolve);
                fx.push(Effect::Record(Rec::Resolved {
                    id,
                    commit: resolved.clone(),
                    from: from.clone(),
                    paths,
                    rung,
                }));
                // A redo's commit is the task's on the tip, not a merge: it is merged as any
                // writer's is, never moved onto.
                self.slots[i].resolver_tried = rung != Rung::Redo;
                self.slots[i].commit = Some(resolved);
                self.slots[i].start_commit = Some(from);
                self.transition(Transition::Committed(i), fx);
                self.enqueue(i, fx);
            }
            Verdict::Succeeded { commit: None, .. } | Verdict::Picked(_) => {
                self.rung_failed(i, "it produced no commit".to_owned(), paths, fx);
            }
            Verdict::Failed(why) => self.rung_failed(i, why, paths, fx),
            Verdict::Fault(fault) => {
                fx.push(Effect::Record(Rec::Task(
                    id,
                    RunEvent::Fault {
                        kind: fault.kind.as_str().to_owned(),
                        why: fault.why,
                    },
                )));
                // Still committed in the board: a resume merges it again.
                self.transition(Transition::Committed(i), fx);
            }
            Verdict::Interrupted | Verdict::Limited(_) => {
                self.transition(Transition::Committed(i), fx);
            }
        }
    }

    /// The rung writer `i` climbed failed for `why`: said, then its own commit is merged again.
    fn rung_failed(&mut self, i: usize, why: String, paths: Vec<String>, fx: &mut Vec<Effect>) {
        let rung = self.slots[i].rung.take().unwrap_or(Rung::Resolve);
        fx.push(Effect::Record(Rec::Task(
            self.id(i).to_owned(),
            RunEvent::RungFailed {
                rung: rung.as_str().to_owned(),
                why: why.clone(),
                paths,
            },
        )));
        self.slots[i].climbed.push((rung, why));
        self.transition(Transition::Committed(i), fx);
        self.enqueue(i, fx);
    }

    /// The gate's next run, when one is due: it takes a slot before any task does.
    pub(super) fn next_gate(&mut self) -> Option<Effect> {
        if self.merges.halted.is_some() {
            return None;
        }
        let g = self.merges.gate.as_mut()?;
        let (probe, tip) = g.next_run()?;
        g.runs += 1;
        let batch = batch_of(g, &probe);
        g.running = Some((probe.clone(), tip.clone()));
        Some(Effect::StartGate {
            number: g.runs,
            probe,
            tip,
            batch,
        })
    }

    /// A gate run ended: a green tip releases the writers it holds, a red one is bisected, a
    /// culprit is taken out. A fault to stop the run with, if the gate fails on the base (or
    /// something outside it cut it short).
    pub(super) fn gated(&mut self, report: &Report, fx: &mut Vec<Effect>) -> Option<Fault> {
        let g = self.merges.gate.as_mut()?;
        let Some((probe, tip)) = g.running.clone() else {
            self.refused
                .push("a gate run ended while none was running".to_owned());
            return None;
        };
        let batch: Vec<String> = batch_of(g, &probe)
            .into_iter()
            .map(|i| self.plan.tasks[i].id.to_string())
            .collect();
        let ms = i64::try_from(report.elapsed.as_millis()).unwrap_or(i64::MAX);
        let (verdict, green) = match &report.verdict {
            Verdict::Succeeded { .. } => ("green", Some(true)),
            Verdict::Failed(_) => ("red", Some(false)),
            Verdict::Interrupted | Verdict::Limited(_) | Verdict::Fault(_) | Verdict::Picked(_) => {
                ("interrupted", None)
            }
        };
        let finished = RunEvent::GateFinished {
            run: report.attempt,
            probe: probe.as_str().to_owned(),
            tip: tip.to_string(),
            batch,
            verdict: verdict.to_owned(),
            ms,
            tail: report.stderr_tail.clone(),
        };
        fx.push(Effect::Tell(Told::GateEnded {
            tip: tip.short().to_owned(),
            verdict: verdict.to_owned(),
            green: green == Some(true),
            elapsed: report.elapsed,
        }));
        let Some(green) = green else {
            // Not known: a resume runs it again.
            g.running = None;
            fx.push(Effect::Record(Rec::Run(finished)));
            return match &report.verdict {
                Verdict::Fault(f) => Some(f.clone()),
                _ => None,
            };
        };
        if !green {
            fx.push(Effect::Tell(Told::Tail(report.stderr_tail.clone())));
            g.red_tail.clone_from(&report.stderr_tail);
        }
        let next = g.finished(green);
        if green && matches!(probe, Probe::Batch { .. }) {
            fx.push(Effect::Record(Rec::GatePassed {
                tip: tip.clone(),
                event: finished,
            }));
        } else {
            fx.push(Effect::Record(Rec::Run(finished)));
        }
        match next {
            Next::Wait => None,
            Next::Passed(n) => {
                for m in g.pass(n) {
                    self.transition(Transition::Done(m.task), fx);
                }
                None
            }
            Next::Culprit(at) => {
                let tail = std::mem::take(&mut g.red_tail);
                self.take_out(at, tail, fx);
                None
            }
            Next::BaseFails => {
                let mut why = format!(
                    "the gate fails before any change: `{}` fails on the base {}",
                    g.command,
                    tip.short()
                );
                let tail = &report.stderr_tail;
                if !tail.is_empty() {
                    let from = tail.len().saturating_sub(5);
                    why.push_str("; its last lines: ");
                    why.push_str(&tail[from..].join(" | "));
                }
                Some(Fault {
                    kind: FaultKind::Gate,
                    why,
                })
            }
        }
    }

    /// Merge `at` (1-based) of those waiting for the gate fails it: the merges before it
    /// passed; the integration tip goes back to the tip before it, it is parked with the
    /// gate's last lines, and the merges after it are merged again (their own changes, from
    /// their start commits, as any merge).
    fn take_out(&mut self, at: usize, tail: Vec<String>, fx: &mut Vec<Effect>) {
        let Some(g) = self.merges.gate.as_mut() else {
            return;
        };
        let passed = g.pass(at - 1);
        let culprit = g.pending.remove(0);
        let later: Vec<gate::Merged> = g.pending.drain(..).collect();
        let (command, back_to) = (g.command.clone(), g.green.clone());
        for m in &passed {
            self.transition(Transition::Done(m.task), fx);
        }
        let ids: Vec<String> = later.iter().map(|m| self.id(m.task).to_owned()).collect();
        // First the board: a crash from here on finds them to merge, the culprit parked.
        fx.push(Effect::Record(Rec::MergeAgain(ids.clone())));
        let why = format!(
            "the gate fails on {}, the first tip that merges it (gate: {command})",
            culprit.tip.short()
        );
        self.park(culprit.task, Hold::Gate { why, output: tail }, fx);
        self.move_back(culprit.task, &culprit.tip, back_to, ids, fx);
        for m in later {
            self.merges.queue_up(m.task);
        }
        self.merge_next(fx);
    }

    /// On a resume: `culprit` (a writer and the tip its merge made) was taken out by the gate
    /// and parked, but the branch still holds it. The merges before it passed; the branch goes
    /// back to the last of them (or the green tip) and the merges after it are made again, as
    /// the take-out would have done.
    pub(super) fn finish_take_out(
        &mut self,
        culprit: &(usize, CommitId),
        passed: &[(usize, CommitId)],
        later: &[(usize, CommitId)],
        fx: &mut Vec<Effect>,
    ) {
        let Some(g) = self.merges.gate.as_mut() else {
            return;
        };
        if let Some((_, tip)) = passed.last() {
            g.green = tip.clone();
            g.tested = true;
        }
        g.pending.clear();
        let back_to = g.green.clone();
        for (task, _) in passed {
            if self.dag.state(*task) == State::Committed {
                self.merge_recovered(*task, fx);
                self.transition(Transition::Done(*task), fx);
            }
        }
        let ids: Vec<String> = later.iter().map(|(t, _)| self.id(*t).to_owned()).collect();
        fx.push(Effect::Record(Rec::MergeAgain(ids.clone())));
        for (task, _) in later {
            if self.dag.state(*task) == State::Done {
                self.transition(Transition::Committed(*task), fx);
            }
            self.merges.queue_up(*task);
        }
        self.move_back(culprit.0, &culprit.1, back_to, ids, fx);
    }

    /// The integration branch goes back to `back_to`, before `culprit`'s merge at `tip`, and
    /// `again` are to be merged again.
    fn move_back(
        &mut self,
        culprit: usize,
        tip: &CommitId,
        back_to: CommitId,
        again: Vec<String>,
        fx: &mut Vec<Effect>,
    ) {
        let from = std::mem::replace(&mut self.merges.tip, back_to.clone());
        let culprit = self.id(culprit).to_owned();
        fx.push(Effect::Rewind {
            event: RunEvent::GateCulprit {
                task: culprit.clone(),
                tip: tip.to_string(),
                from: from.to_string(),
                to: back_to.to_string(),
                remerge: again.clone(),
            },
            from,
            to: back_to.clone(),
        });
        fx.push(Effect::Tell(Told::TakenOut {
            culprit,
            tip: back_to.short().to_owned(),
            again,
        }));
        fx.push(Effect::DropSnapshots(back_to));
    }
}

/// The writers whose merges a gate run tests.
fn batch_of(g: &GateState, probe: &Probe) -> Vec<usize> {
    let n = match probe {
        Probe::Batch { len } => *len,
        Probe::Step { at } => *at,
        Probe::Base => 0,
    };
    g.pending.iter().take(n).map(|m| m.task).collect()
}
