//! The merge queue, on the owner thread: merging a committed writer into the integration
//! branch, parking and escalating a conflict, recovering merges after a crash, and cleaning up
//! merged writers; the optional resolver attempt (`resolver`) and the gate (`gating`) beside
//! it. Owns the integration tip: nothing else moves it. Starts no process but the escalation
//! hook; a resolver's attempt and a gate run go back to the dispatcher as `Job`s.

use std::time::Instant;

use anyhow::Context as _;
use serde_json::json;

use super::checkouts::Checkouts;
use super::dag::{State, Transition};
use super::job::{Job, Report};
use super::run::Run;
use super::{Checkout, Message};
use crate::agent;
use crate::git::{CommitId, Merge};
use crate::plan::Mode;
use crate::store::{Moved, Parking, RunEvent};
use crate::ui::Verb;

mod gating;
mod resolver;

use resolver::resolver_agent;

pub(super) use gating::{Gate, gate_checkout_path};

/// Why a writer is parked.
enum Hold {
    /// Its merge conflicts in these paths; `resolver` says why the one resolver attempt failed.
    Conflict {
        paths: Vec<String>,
        resolver: Option<String>,
    },
    /// Its change must be seen by a human before it is merged.
    Review { why: String, paths: Vec<String> },
    /// The gate fails on the first tip that merges it, with these last lines.
    Gate { why: String, output: Vec<String> },
}

/// The merge queue's own state.
pub(super) struct MergeQueue {
    /// Where swarm left the integration branch.
    tip: CommitId,
    /// Conflicting writers whose resolver attempt has yet to start.
    to_resolve: Vec<usize>,
    /// Merging stopped for this reason, for a human to settle; the run winds down.
    halted: Option<String>,
    /// With a gate: what it knows of the merges since the last green tip.
    gate: Option<Gate>,
}

impl MergeQueue {
    pub(super) fn new(tip: CommitId, gate: Option<Gate>) -> Self {
        Self {
            tip,
            to_resolve: Vec::new(),
            halted: None,
            gate,
        }
    }

    /// The gate's run going on: what it tests and when it started.
    pub(super) fn gate_running(&self) -> Option<(String, Instant)> {
        self.gate.as_ref().and_then(Gate::running)
    }

    /// Whether the run waits for the gate before it ends.
    pub(super) fn gate_busy(&self) -> bool {
        self.halted.is_none() && self.gate.as_ref().is_some_and(Gate::busy)
    }

    pub(super) fn tip(&self) -> &CommitId {
        &self.tip
    }

    pub(super) fn into_tip(self) -> CommitId {
        match self.gate {
            Some(g) => g.green(),
            None => self.tip,
        }
    }

    /// Why merging stopped, if it did.
    pub(super) fn halted(&self) -> Option<&str> {
        self.halted.as_deref()
    }

    /// A conflicting writer waits for its resolver to start.
    pub(super) fn has_resolvers_waiting(&self) -> bool {
        !self.to_resolve.is_empty()
    }

    /// The integration ref should be where swarm left it. A kill between moving it and
    /// recording the merge leaves it one merge ahead: that merge is swarm's own (its first
    /// parent is the recorded tip, and it merges, or is, the commit of a task waiting to be
    /// merged) and is taken. Anything else moved it.
    pub(super) fn settle_integration_ref(&mut self, run: &mut Run<'_>) -> anyhow::Result<()> {
        let found = run.repo.ref_target(&run.layout.integration_ref)?;
        let Some(f) = found.clone() else {
            let landed = match run.repo.resolve("HEAD") {
                Ok(head) => run.repo.contains(&head, &self.tip)?,
                Err(_) => false,
            };
            if self.tip == run.layout.base || landed {
                // The run was killed before its branch was made, or after its landing
                // deleted it.
                return run.repo.create_branch(integration_branch(run), &self.tip);
            }
            return self.integration_moved(run, None);
        };
        if f == self.tip {
            return Ok(());
        }
        if self.gate.is_some() && gating::rewound_to(run, &self.tip, &f)? {
            run.record.tip_recovered(&self.tip, &f)?;
            self.tip = f;
            return Ok(());
        }
        let parents = run.repo.parents(&f)?;
        let waiting = |c: &CommitId| {
            run.slots
                .iter()
                .enumerate()
                .any(|(i, s)| run.dag.state(i) == State::Committed && s.commit.as_ref() == Some(c))
        };
        let own = parents.first() == Some(&self.tip)
            && (waiting(&f) || parents.get(1).is_some_and(waiting));
        if !own {
            return self.integration_moved(run, found.as_ref());
        }
        run.record.tip_recovered(&self.tip, &f)?;
        self.tip = f;
        Ok(())
    }

    /// Writers committed before a crash: merged already if the integration branch contains
    /// their commit, else merged now. Finished writers lose the worktree and branch a crash
    /// between their merge and its cleanup left behind.
    pub(super) fn recover_committed(
        &mut self,
        run: &mut Run<'_>,
        checkouts: &mut Checkouts,
    ) -> anyhow::Result<()> {
        for i in 0..run.slots.len() {
            if run.dag.state(i) == State::Done && run.plan.tasks[i].mode == Mode::Write {
                let merged = run.slots[i].commit.is_some();
                self.clean_up(run, checkouts, i, merged)?;
                continue;
            }
            if run.dag.state(i) != State::Committed {
                continue;
            }
            let commit = run.slots[i]
                .commit
                .clone()
                .context("a committed task has no commit")?;
            if self.waits_for_gate(i) {
                // Merged, and tested by the gate again before it counts.
                continue;
            }
            if run.repo.contains(&self.tip, &commit)? {
                let id = run.plan.tasks[i].id.as_str();
                run.record.merge_recovered(id, &commit)?;
                run.ui
                    .note(Verb::Merged, &format!("{id} (before the interruption)"));
                self.clean_up(run, checkouts, i, true)?;
                run.transition(Transition::Done(i))?;
            } else {
                self.merge(run, checkouts, i)?;
            }
        }
        Ok(())
    }

    /// Merges a committed writer into the integration branch; parks it on a conflict, or
    /// when its change must be seen by a human first.
    /// The gate run to start next, recorded as started, if one is due.
    pub(super) fn next_gate(&mut self, run: &mut Run<'_>) -> anyhow::Result<Option<Job>> {
        match &mut self.gate {
            Some(g) if self.halted.is_none() => g.next(run),
            _ => Ok(None),
        }
    }

    /// Takes a gate run's report: a green tip releases the writers it holds, a red one is
    /// bisected, a culprit is taken out. A fault to stop the run with, if the gate fails on the
    /// base (or something outside it cut it short).
    pub(super) fn finish_gate(
        &mut self,
        run: &mut Run<'_>,
        checkouts: &mut Checkouts,
        report: Report,
    ) -> anyhow::Result<Option<agent::Fault>> {
        let Some(g) = &mut self.gate else {
            return Ok(None);
        };
        match g.finish(run, report)? {
            gating::Finished::Nothing => Ok(None),
            gating::Finished::Fault(fault) => Ok(Some(fault)),
            gating::Finished::Culprit(out) => self.take_out(run, checkouts, out).map(|()| None),
        }
    }

    /// A merge fails the gate: the integration tip goes back to the tip before it, it is
    /// parked with the gate's last lines, and the merges after it are merged again (their own
    /// changes, from their start commits, as any merge).
    fn take_out(
        &mut self,
        run: &mut Run<'_>,
        checkouts: &mut Checkouts,
        out: gating::TakeOut,
    ) -> anyhow::Result<()> {
        let gating::TakeOut {
            command,
            culprit,
            later,
            back_to,
            tail,
        } = out;
        let ids: Vec<String> = later.iter().map(|m| run.id(m.task).to_owned()).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        // First the board: a crash from here on finds them to merge, the culprit parked.
        run.record.merge_again(&refs)?;
        let why = format!(
            "the gate fails on {}, the first tip that merges it (gate: {command})",
            culprit.tip.short()
        );
        let culprit_id = run.id(culprit.task).to_owned();
        park(run, culprit.task, &Hold::Gate { why, output: tail })?;
        let from = self.tip.clone();
        run.repo.move_ref(
            &run.layout.integration_ref,
            &from,
            &back_to,
            "swarm: the gate took a merge out",
        )?;
        run.record.tip_rewound(
            &back_to,
            RunEvent::GateCulprit {
                task: culprit_id.clone(),
                tip: culprit.tip.to_string(),
                from: from.to_string(),
                to: back_to.to_string(),
                remerge: ids.clone(),
            },
        )?;
        self.tip = back_to;
        let again = if ids.is_empty() {
            String::new()
        } else {
            format!("; merging {} again", ids.join(", "))
        };
        run.ui.note(
            Verb::Note,
            &format!(
                "the gate took {culprit_id} out: the integration branch is back at {}{again}",
                self.tip.short()
            ),
        );
        checkouts.drop_stale_snapshots(&self.tip)?;
        for m in later {
            self.merge(run, checkouts, m.task)?;
        }
        Ok(())
    }

    /// On a resume: the merges since the last green tip wait for the gate again, oldest
    /// first, their writers not done (their dependents wait). Before the dag settles.
    pub(super) fn recover_gate(&mut self, run: &mut Run<'_>) -> anyhow::Result<()> {
        match &mut self.gate {
            Some(g) => g.recover(run, &self.tip),
            None => Ok(()),
        }
    }

    /// The next conflicting writer's one resolver attempt, recorded as started, if one waits.
    pub(super) fn next_resolver(&mut self, run: &mut Run<'_>) -> anyhow::Result<Option<Job>> {
        match self.to_resolve.pop() {
            Some(i) => resolver::job(run, &self.tip, i).map(Some),
            None => Ok(None),
        }
    }

    /// Takes a resolver's report: a resolved merge goes through the merge queue once more; a
    /// failed one parks the task.
    pub(super) fn finish_resolver(
        &mut self,
        run: &mut Run<'_>,
        checkouts: &mut Checkouts,
        report: Report,
    ) -> anyhow::Result<()> {
        match resolver::finished(run, &self.tip, report)? {
            Some(i) => self.merge(run, checkouts, i),
            None => Ok(()),
        }
    }

    /// Whether this writer's merge waits for the gate.
    pub(super) fn waits_for_gate(&self, i: usize) -> bool {
        self.gate.as_ref().is_some_and(|g| g.waits_for(i))
    }

    pub(super) fn merge(
        &mut self,
        run: &mut Run<'_>,
        checkouts: &mut Checkouts,
        i: usize,
    ) -> anyhow::Result<()> {
        if self.halted.is_some() {
            // Still committed in the board: a resume merges it.
            return Ok(());
        }
        let slot = &run.slots[i];
        let commit = slot
            .commit
            .clone()
            .context("merging a task without a commit")?;
        let base = slot
            .start_commit
            .clone()
            .context("merging a task without a start commit")?;
        if let Some(hold) = review(run, &base, &commit)? {
            return park(run, i, &hold);
        }
        let started = Instant::now();
        let id = run.plan.tasks[i].id.as_str();
        let message = format!("Merge swarm task {id} of run {}", run.layout.run);
        let outcome = if slot.resolver_tried && self.tip == base {
            // The resolver's commit is the merge of this very tip and the task: move onto it.
            run.repo
                .advance(&run.layout.integration_ref, &base, &commit, &message)?
        } else {
            crate::git::merge(
                run.repo,
                &run.layout.integration_ref,
                &self.tip,
                &commit,
                &base,
                &message,
            )?
        };
        match outcome {
            Merge::Merged { before, after } => {
                let ms = started.elapsed().as_secs_f64() * 1000.0;
                run.record.merged(id, &commit, &before, &after, ms)?;
                run.ui.note(Verb::Merged, id);
                self.tip = after.clone();
                self.clean_up(run, checkouts, i, true)?;
                match &mut self.gate {
                    Some(g) => g.merged(i, after),
                    None => run.transition(Transition::Done(i))?,
                }
                checkouts.drop_stale_snapshots(&self.tip)?;
            }
            Merge::Conflicted { paths } => {
                if run.settings.resolve_conflicts
                    && !slot.resolver_tried
                    && resolver_agent(run, i).is_some()
                {
                    run.record.task_event(
                        id,
                        RunEvent::Resolving {
                            paths: paths.clone(),
                        },
                    )?;
                    let line = format!("{id}: conflict in {}", paths.join(", "));
                    run.ui.note(Verb::Resolving, &line);
                    run.dag.on(&run.plan, Transition::Resolving(i));
                    run.slots[i].conflict = paths;
                    self.to_resolve.push(i);
                } else {
                    let hold = Hold::Conflict {
                        paths,
                        resolver: None,
                    };
                    park(run, i, &hold)?;
                }
            }
            Merge::Refused { why, paths } => park(run, i, &Hold::Review { why, paths })?,
            Merge::Moved { found } => self.integration_moved(run, found.as_ref())?,
        }
        Ok(())
    }

    /// The integration ref is not where swarm left it: someone else moved it. What they put
    /// there is kept on a branch of its own, the ref goes back to swarm's tip, nothing more is
    /// merged this run, and a human is told.
    fn integration_moved(
        &mut self,
        run: &mut Run<'_>,
        found: Option<&CommitId>,
    ) -> anyhow::Result<()> {
        let integration = integration_branch(run).to_owned();
        let backup = found.map(|f| format!("{integration}@moved-{}", f.short()));
        if let (Some(f), Some(b)) = (found, &backup) {
            run.repo.set_branch(b, f)?;
            run.repo.move_ref(
                &run.layout.integration_ref,
                f,
                &self.tip,
                "swarm: put back where swarm left it",
            )?;
        } else {
            run.repo.create_branch(&integration, &self.tip)?;
        }
        let what = match &backup {
            Some(b) => format!("what it found there is kept as branch {b}"),
            None => "it had been deleted".to_owned(),
        };
        let why = format!(
            "the integration branch {integration} was moved by something other than swarm; swarm put it back at {} ({what}) and merges nothing more this run; look at it, then `swarm resume {}` merges the rest",
            self.tip.short(),
            run.layout.run
        );
        let moved = Moved {
            integration,
            found: found.map(CommitId::to_string),
            backup,
            tip: self.tip.to_string(),
            reason: why.clone(),
        };
        let info = serde_json::to_value(&moved)?;
        run.record.run_event(RunEvent::IntegrationMoved(moved))?;
        run.ui.note(Verb::Halted, &why);
        escalate(run, None, info)?;
        self.halted = Some(why);
        Ok(())
    }

    /// Removes a writer's checkouts (its own and its resolver's) and the branches that hold
    /// nothing of value any more: merged ones whose tips the integration branch contains, or,
    /// for a writer with no changes, a branch still at its start. Its own checkout is set
    /// aside for the next writer when it holds a merged result.
    pub(super) fn clean_up(
        &self,
        run: &Run<'_>,
        checkouts: &mut Checkouts,
        i: usize,
        merged: bool,
    ) -> anyhow::Result<()> {
        let id = run.id(i);
        for checkout in [Checkout::Task, Checkout::Resolver] {
            let path = run.layout.worktree(id, checkout);
            let branch = run.layout.branch(id, checkout);
            let tip = run.repo.ref_target(&format!("refs/heads/{branch}"))?;
            match checkout {
                Checkout::Task => checkouts.retire(&path, tip.as_ref())?,
                Checkout::Resolver => checkouts.remove_later(&path)?,
            }
            let Some(at) = tip else {
                continue;
            };
            let worthless = if merged {
                run.repo.contains(&self.tip, &at)?
            } else {
                run.slots[i].start_commit.as_ref() == Some(&at)
            };
            if worthless {
                run.repo.delete_branch_at(&branch, &at)?;
            }
        }
        Ok(())
    }
}

/// Parks a writer: its branch stays, its dependents are skipped, a human is told.
fn park(run: &mut Run<'_>, i: usize, hold: &Hold) -> anyhow::Result<()> {
    let id = run.plan.tasks[i].id.to_string();
    let mut parking = Parking {
        branch: run.layout.branch(&id, Checkout::Task),
        commit: run.slots[i]
            .commit
            .as_ref()
            .map(CommitId::to_string)
            .unwrap_or_default(),
        integration: integration_branch(run).to_owned(),
        paths: Vec::new(),
        resolver: None,
        reason: None,
        gate_output: Vec::new(),
    };
    let (error, line) = match hold {
        Hold::Conflict { paths, resolver } => {
            parking.paths.clone_from(paths);
            parking.resolver.clone_from(resolver);
            let error = format!("merge conflict in {}", paths.join(", "));
            let line = format!("{id}: conflict in {}", paths.join(", "));
            (error, line)
        }
        Hold::Review { why, paths } => {
            parking.paths.clone_from(paths);
            parking.reason = Some(why.clone());
            (why.clone(), format!("{id}: {why}"))
        }
        Hold::Gate { why, output } => {
            parking.reason = Some(why.clone());
            parking.gate_output.clone_from(output);
            (why.clone(), format!("{id}: {why}"))
        }
    };
    // A writer parked after its merge was taken out (by the gate) lost its branch when it was
    // merged: it is made again for a look.
    if let Some(commit) = &run.slots[i].commit
        && run
            .repo
            .ref_target(&format!("refs/heads/{}", parking.branch))?
            .is_none()
    {
        run.repo.set_branch(&parking.branch, commit)?;
    }
    let info = serde_json::to_value(&parking)?;
    run.record.parked(&id, &error, parking)?;
    run.ui.note(Verb::Parked, &line);
    escalate(run, Some(&id), info)?;
    run.transition(Transition::Parked(i))
}

/// The integration branch's short name, `swarm/<run>`.
fn integration_branch<'a>(run: &Run<'a>) -> &'a str {
    run.layout.integration_ref.trim_start_matches("refs/heads/")
}

/// Whether a writer's change must be seen by a human before it is merged: it changes a file
/// swarm reads commands from, or holds the value of a secret swarm hides.
fn review(run: &Run<'_>, base: &CommitId, commit: &CommitId) -> anyhow::Result<Option<Hold>> {
    let secrets = crate::secret::named();
    let needles: Vec<&[u8]> = secrets.iter().map(|(_, v)| v.as_bytes()).collect();
    let scan = crate::git::scan_change(run.repo, base, commit, &run.settings.guarded, &needles)?;
    if !scan.guarded.is_empty() {
        return Ok(Some(Hold::Review {
            why: format!(
                "it changes {}, which names commands swarm runs; swarm merges no such change without you",
                scan.guarded.join(", ")
            ),
            paths: scan.guarded,
        }));
    }
    if scan.found.is_empty() {
        return Ok(None);
    }
    let mut names: Vec<&str> = scan
        .found
        .iter()
        .map(|(_, n)| secrets[*n].0.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    let paths: Vec<String> = scan.found.into_iter().map(|(p, _)| p).collect();
    Ok(Some(Hold::Review {
        why: format!(
            "{} holds the value of {}, a secret swarm hides; swarm merges no such change without you",
            paths.join(", "),
            names.join(", ")
        ),
        paths,
    }))
}

/// Tells a human, once: the event, and the `--on-escalate` hook. `task` is `None` for a
/// problem of the run as a whole.
fn escalate(
    run: &mut Run<'_>,
    task: Option<&str>,
    mut info: serde_json::Value,
) -> anyhow::Result<()> {
    info["run"] = run.layout.run.clone().into();
    info["task"] = task.into();
    let Some(cmd) = run.settings.on_escalate.clone() else {
        let escalated = RunEvent::Escalated {
            hook: serde_json::Value::Null,
        };
        return match task {
            Some(id) => run.record.task_event(id, escalated),
            None => run.record.run_event(escalated),
        };
    };
    // The hook runs on a thread of its own, under the run's watchdog (Ctrl-C stops it like any
    // attempt), so merges and messages go on meanwhile; its end comes back as a message, and
    // the loop waits for it before the run ends.
    let log = run
        .layout
        .run_dir
        .join("attempts")
        .join(format!("{}.escalate.log", task.unwrap_or("(run)")));
    let (cwd, watchdog, tx, cap) = (
        run.repo.workdir().to_owned(),
        run.watchdog.clone(),
        run.tx.clone(),
        run.settings.transcript_cap,
    );
    let task = task.map(str::to_owned);
    run.hooks_running += 1;
    std::thread::Builder::new()
        .name("swarm-escalate".into())
        .spawn(move || {
            let outcome = crate::panic::catch(|| {
                agent::run_hook(&cmd, &info.to_string(), &cwd, &log, cap, &watchdog)
            })
            .unwrap_or_else(|why| format!("internal error in swarm: {why}"));
            let hook = json!({ "command": cmd, "outcome": outcome });
            let _ = tx.send(Message::Escalated { task, hook });
        })?;
    Ok(())
}
