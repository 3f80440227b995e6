//! The merge queue, on the owner thread: merging a committed writer into the integration
//! branch, parking and escalating a conflict, the optional resolver attempt, recovering merges
//! after a crash, and cleaning up merged writers. Owns the integration tip: nothing else moves
//! it. Starts no process but the escalation hook; a resolver's attempt goes back to the
//! dispatcher as a `Job`.

use std::time::Instant;

use anyhow::Context as _;
use serde_json::json;

use super::checkouts::Checkouts;
use super::dag::{State, Transition};
use super::gate::{self, GateState, Next, Probe};
use super::job::{Job, JobKind, Report, Verdict};
use super::prompt::resolver_prompt;
use super::run::Run;
use super::{Checkout, Message};
use crate::agent::openai::Builtin;
use crate::agent::tools::Access;
use crate::agent::{self, Agent, Invocation};
use crate::git::{CommitId, Merge};
use crate::plan::Mode;
use crate::store::{Moved, Parking, RunEvent};
use crate::ui::Verb;

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
    gate: Option<GateState>,
    /// What the gate's run going on tests, and when it started (for the live display).
    gate_shown: Option<(String, Instant)>,
}

impl MergeQueue {
    pub(super) fn new(tip: CommitId, gate: Option<GateState>) -> Self {
        Self {
            tip,
            to_resolve: Vec::new(),
            halted: None,
            gate,
            gate_shown: None,
        }
    }

    /// The gate's run going on: what it tests and when it started.
    pub(super) fn gate_running(&self) -> Option<(String, Instant)> {
        self.gate_shown.clone()
    }

    /// Whether the run waits for the gate before it ends.
    pub(super) fn gate_busy(&self) -> bool {
        self.halted.is_none() && self.gate.as_ref().is_some_and(GateState::busy)
    }

    pub(super) fn tip(&self) -> &CommitId {
        &self.tip
    }

    pub(super) fn into_tip(self) -> CommitId {
        match self.gate {
            Some(g) => g.green,
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
        if self.gate.is_some() && self.rewound_to(run, &f)? {
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
                    // Its dependents wait for the gate to pass on a tip holding it.
                    Some(g) => g.pending.push(gate::Merged {
                        task: i,
                        tip: after,
                    }),
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

    /// The next conflicting writer's one resolver attempt, recorded as started, if one waits.
    pub(super) fn next_resolver(&mut self, run: &mut Run<'_>) -> anyhow::Result<Option<Job>> {
        let Some(i) = self.to_resolve.pop() else {
            return Ok(None);
        };
        self.resolver_job(run, i).map(Some)
    }

    /// One bounded attempt by the agent, in a fresh worktree at the integration tip holding the
    /// conflicted merge, to resolve it; the result is a merge commit, checked like any writer.
    fn resolver_job(&self, run: &mut Run<'_>, i: usize) -> anyhow::Result<Job> {
        run.slots[i].resolver_tried = true;
        run.slots[i].resolving_from = Some(self.tip.clone());
        let agent = resolver_agent(run, i).context("a resolver needs an agent")?;
        let (task, slot, settings, layout) =
            (&run.plan.tasks[i], &run.slots[i], run.settings, run.layout);
        let id = task.id.as_str();
        let theirs = slot
            .commit
            .clone()
            .context("resolving a task without a commit")?;
        let base = slot
            .start_commit
            .clone()
            .context("resolving a task without a start")?;
        let prompt = resolver_prompt(&task.action, &slot.conflict);
        let mut argv = Vec::new();
        let mut cli = None;
        let mut acp = None;
        let (command, stdin, builtin) = match agent {
            Agent::Exec(cmd) => (cmd, Some(prompt), None),
            Agent::Cli(profile) => {
                let (program_and_args, shown) =
                    profile.argv(Mode::Write, crate::agent::cli::Session::New(None));
                argv = program_and_args;
                let stdin = if profile.kind == crate::agent::cli::Kind::Acp {
                    acp = Some(crate::agent::acp::Acp {
                        prompt,
                        access: Access::Write,
                        allowed_programs: settings.builtin.allowed_programs.clone(),
                        resume: None,
                    });
                    None
                } else {
                    Some(prompt)
                };
                cli = Some(profile);
                (shown, stdin, None)
            }
            Agent::OpenAi => (
                "(built-in agent)".to_owned(),
                None,
                Some(Builtin {
                    client: settings.llm.clone().context("no model client")?,
                    prompt,
                    access: Access::Write,
                    lane: "merge-conflict resolver".to_owned(),
                    max_turns: settings.builtin.max_turns,
                    max_tokens: settings.builtin.max_tokens,
                    allowed_programs: settings.builtin.allowed_programs.clone(),
                }),
            ),
        };
        let path = layout.worktree(id, Checkout::Resolver);
        let transcript = layout
            .run_dir
            .join("attempts")
            .join(format!("{id}.resolve.log"));
        let name = &layout.run;
        let tmp = run.scratch.acquire(i);
        let mut env: Vec<(String, String)> = cli
            .iter()
            .flat_map(|p| p.set_env.iter().cloned())
            .chain([
                ("SWARM_RUN_ID".to_owned(), name.clone()),
                ("SWARM_TASK_ID".to_owned(), id.to_owned()),
                ("SWARM_MODE".to_owned(), "write".to_owned()),
                ("SWARM_RESOLVING".to_owned(), "1".to_owned()),
                ("SWARM_ACTIVE".to_owned(), "1".to_owned()),
            ])
            .collect();
        let (id, timeout) = (id.to_owned(), task.timeout.unwrap_or(settings.task_timeout));
        let check = task.check.clone().or_else(|| settings.check.clone());
        env.extend(super::attempt_env(&mut run.ports, i, &tmp));
        let (slot, id) = (&run.slots[i], id.as_str());
        let job = Job {
            task: i,
            attempt: slot.attempts,
            kind: JobKind::Resolver {
                branch: layout.branch(id, Checkout::Resolver),
                keep_as: layout.kept_branch(id, Checkout::Resolver, slot.attempts),
                tip: self.tip.clone(),
                base,
                theirs,
                paths: slot.conflict.clone(),
                check,
                message: format!("Merge swarm task {id} of run {name}, conflicts resolved"),
            },
            invocation: Invocation {
                command,
                argv,
                env_drop: cli.as_ref().map(|p| p.drop_env.clone()).unwrap_or_default(),
                env_pass: cli.as_ref().map(|p| p.pass_env.clone()).unwrap_or_default(),
                stdin,
                cwd: path.clone(),
                env,
                timeout,
                stall: settings.stall_timeout,
                header: format!(
                    "swarm run {name} task {id}: resolving a merge conflict\ncwd: {}\n",
                    path.display()
                ),
                transcript,
                stdout_file: None,
            },
            builtin,
            parser: cli
                .filter(|p| p.kind == crate::agent::cli::Kind::Cli)
                .map(|p| p.parser),
            acp,
            deps_dir: None,
            user_checkout: run.repo.workdir().to_owned(),
            session: None,
            prepare: settings.prepare.clone(),
            tmp,
        };
        let id = id.to_owned();
        run.record.task_event(
            &id,
            RunEvent::ResolverStarted {
                path: path.display().to_string(),
                tip: self.tip.to_string(),
            },
        )?;
        run.ui.task_started(&format!("{id} (resolving)"), 1);
        run.slots[i].started = Some(std::time::Instant::now());
        Ok(job)
    }

    /// Takes a resolver's report: a resolved merge goes through the merge queue once more; a
    /// failed one parks the task.
    pub(super) fn finish_resolver(
        &mut self,
        run: &mut Run<'_>,
        checkouts: &mut Checkouts,
        report: Report,
    ) -> anyhow::Result<()> {
        let i = report.task;
        let id = run.plan.tasks[i].id.to_string();
        run.ui.task_finished(
            &format!("{id} (resolving)"),
            Verb::Resolved,
            report.elapsed,
            None,
        );
        let paths = std::mem::take(&mut run.slots[i].conflict);
        // Other merges, or the gate taking one out, may have moved the tip meanwhile: the
        // resolution is a change from the tip it started at.
        let from = run.slots[i]
            .resolving_from
            .take()
            .unwrap_or_else(|| self.tip.clone());
        match report.verdict {
            Verdict::Succeeded {
                commit: Some(resolved),
                ..
            } => {
                run.record.resolved(&id, &resolved, &from, paths)?;
                run.slots[i].commit = Some(resolved);
                run.slots[i].start_commit = Some(from);
                run.dag.on(&run.plan, Transition::Committed(i));
                self.merge(run, checkouts, i)
            }
            Verdict::Succeeded { commit: None, .. } => {
                let resolver = Some("the resolver produced no commit".to_owned());
                park(run, i, &Hold::Conflict { paths, resolver })
            }
            Verdict::Failed(why) => {
                let resolver = Some(why);
                park(run, i, &Hold::Conflict { paths, resolver })
            }
            Verdict::Fault(fault) => {
                run.record.task_event(
                    &id,
                    RunEvent::Fault {
                        kind: fault.kind.as_str().to_owned(),
                        why: fault.why,
                    },
                )?;
                // Still committed in the board: a resume merges it again.
                run.dag.on(&run.plan, Transition::Committed(i));
                Ok(())
            }
            Verdict::Interrupted | Verdict::Limited(_) => {
                // Still committed in the board: a resume merges it again.
                run.dag.on(&run.plan, Transition::Committed(i));
                Ok(())
            }
        }
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

/// The agent that may resolve a task's conflict: the task's agent or the run's, if usable.
fn resolver_agent(run: &Run<'_>, i: usize) -> Option<Agent> {
    run.settings
        .agent_for(run.plan.tasks[i].agent.as_deref())
        .filter(|a| *a != Agent::OpenAi || run.settings.llm.is_some())
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
    let (cwd, watchdog, tx) = (
        run.repo.workdir().to_owned(),
        run.watchdog.clone(),
        run.tx.clone(),
    );
    let task = task.map(str::to_owned);
    run.hooks_running += 1;
    std::thread::Builder::new()
        .name("swarm-escalate".into())
        .spawn(move || {
            let outcome = crate::panic::catch(|| {
                agent::run_hook(&cmd, &info.to_string(), &cwd, &log, &watchdog)
            })
            .unwrap_or_else(|why| format!("internal error in swarm: {why}"));
            let hook = json!({ "command": cmd, "outcome": outcome });
            let _ = tx.send(Message::Escalated { task, hook });
        })?;
    Ok(())
}

/// The gate: runs on the integration tip after merges, bisects a red batch, takes the culprit
/// out (see the README's "The gate").
impl MergeQueue {
    /// The gate run to start next, recorded as started, if one is due.
    pub(super) fn next_gate(&mut self, run: &mut Run<'_>) -> anyhow::Result<Option<Job>> {
        if self.halted.is_some() {
            return Ok(None);
        }
        let Some(g) = &mut self.gate else {
            return Ok(None);
        };
        let Some((probe, tip)) = g.next_run() else {
            return Ok(None);
        };
        g.runs += 1;
        let number = g.runs;
        let batch = batch_ids(run, g, &probe);
        let (settings, layout) = (run.settings, run.layout);
        let name = format!("gate-{number}");
        let transcript = layout.run_dir.join("attempts").join(format!("{name}.log"));
        let tmp = run.scratch.acquire(GATE_KEY);
        let cwd = gate_checkout_path(layout);
        let mut env = vec![
            ("SWARM_RUN_ID".to_owned(), layout.run.clone()),
            ("SWARM_ACTIVE".to_owned(), "1".to_owned()),
            ("SWARM_GATE_TIP".to_owned(), tip.to_string()),
        ];
        // Its own TMPDIR and block of ports, as an attempt's.
        env.extend(super::attempt_env(&mut run.ports, GATE_KEY, &tmp));
        let command = g.command.clone();
        let job = Job {
            task: 0,
            attempt: number,
            kind: JobKind::Gate { tip: tip.clone() },
            invocation: Invocation {
                command: command.clone(),
                argv: Vec::new(),
                env_drop: Vec::new(),
                env_pass: Vec::new(),
                stdin: None,
                cwd: cwd.clone(),
                env,
                timeout: settings.task_timeout,
                stall: None,
                header: format!(
                    "swarm run {} gate run {number} ({}) on {}\ncommand: {command}\ncwd: {}\n",
                    layout.run,
                    probe.as_str(),
                    tip,
                    cwd.display()
                ),
                transcript: transcript.clone(),
                stdout_file: None,
            },
            builtin: None,
            parser: None,
            acp: None,
            deps_dir: None,
            user_checkout: run.repo.workdir().to_owned(),
            session: None,
            prepare: settings.prepare.clone(),
            tmp,
        };
        run.record.run_event(RunEvent::GateStarted {
            run: number,
            probe: probe.as_str().to_owned(),
            tip: tip.to_string(),
            batch: batch.clone(),
            transcript: transcript.display().to_string(),
        })?;
        let what = match &probe {
            Probe::Base => format!("gate on the base {}", tip.short()),
            _ => format!("gate on {} ({})", tip.short(), batch.join(", ")),
        };
        run.ui.note(Verb::Started, &what);
        let shown = match &probe {
            Probe::Base => format!("the base {}", tip.short()),
            Probe::Batch { .. } => format!("{} on {}", batch.join(", "), tip.short()),
            Probe::Step { .. } => format!("bisecting: {} on {}", batch.join(", "), tip.short()),
        };
        g.running = Some((probe, tip));
        self.gate_shown = Some((shown, Instant::now()));
        Ok(Some(job))
    }

    /// Takes a gate run's report: a green tip releases the writers it holds, a red one is
    /// bisected, a culprit is taken out. A fault to stop the run with, if the gate fails on the
    /// base (or something outside it cut it short).
    pub(super) fn finish_gate(
        &mut self,
        run: &mut Run<'_>,
        checkouts: &mut Checkouts,
        report: Report,
    ) -> anyhow::Result<Option<crate::agent::Fault>> {
        let Some(g) = &mut self.gate else {
            return Ok(None);
        };
        let Some((probe, tip)) = g.running.clone() else {
            return Ok(None);
        };
        self.gate_shown = None;
        run.ports.release(GATE_KEY);
        run.scratch.release(GATE_KEY);
        let batch = batch_ids(run, g, &probe);
        let ms = i64::try_from(report.elapsed.as_millis()).unwrap_or(i64::MAX);
        let (verdict, green) = match &report.verdict {
            Verdict::Succeeded { .. } => ("green", Some(true)),
            Verdict::Failed(_) => ("red", Some(false)),
            Verdict::Interrupted | Verdict::Limited(_) | Verdict::Fault(_) => ("interrupted", None),
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
        let line = format!("gate on {}: {verdict}", tip.short());
        let tone = if green == Some(true) {
            Verb::Done
        } else {
            Verb::Failed
        };
        run.ui.task_finished(&line, tone, report.elapsed, None);
        let Some(green) = green else {
            // Not known: a resume runs it again.
            g.running = None;
            run.record.run_event(finished)?;
            return Ok(match report.verdict {
                Verdict::Fault(f) => Some(f),
                _ => None,
            });
        };
        if !green {
            run.ui.output_tail(&report.stderr_tail);
            g.red_tail.clone_from(&report.stderr_tail);
        }
        let next = g.finished(green);
        if green && matches!(probe, Probe::Batch { .. }) {
            run.record.gate_passed(&tip, finished)?;
        } else {
            run.record.run_event(finished)?;
        }
        match next {
            Next::Wait => Ok(None),
            Next::Passed(n) => {
                let passed = g.pass(n);
                for m in passed {
                    run.transition(Transition::Done(m.task))?;
                }
                Ok(None)
            }
            Next::Culprit(at) => {
                let tail = std::mem::take(&mut g.red_tail);
                self.take_out(run, checkouts, at, &tail)?;
                Ok(None)
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
                Ok(Some(crate::agent::Fault {
                    kind: crate::agent::FaultKind::Gate,
                    why,
                }))
            }
        }
    }

    /// Merge `at` (1-based) of those waiting for the gate fails it: the merges before it
    /// passed, the integration tip goes back to the tip before it, it is parked with the
    /// gate's last lines, and the merges after it are merged again (their own changes, from
    /// their start commits, as any merge).
    fn take_out(
        &mut self,
        run: &mut Run<'_>,
        checkouts: &mut Checkouts,
        at: usize,
        tail: &[String],
    ) -> anyhow::Result<()> {
        let g = self
            .gate
            .as_mut()
            .context("taking out a merge without a gate")?;
        let command = g.command.clone();
        let passed = g.pass(at - 1);
        let culprit = g.pending.remove(0);
        let later: Vec<gate::Merged> = g.pending.drain(..).collect();
        let back_to = g.green.clone();
        for m in &passed {
            run.transition(Transition::Done(m.task))?;
        }
        let ids: Vec<String> = later.iter().map(|m| run.id(m.task).to_owned()).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        // First the board: a crash from here on finds them to merge, the culprit parked.
        run.record.merge_again(&refs)?;
        let why = format!(
            "the gate fails on {}, the first tip that merges it (gate: {command})",
            culprit.tip.short()
        );
        let culprit_id = run.id(culprit.task).to_owned();
        let output = tail.to_vec();
        park(run, culprit.task, &Hold::Gate { why, output })?;
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
        let Some(g) = &mut self.gate else {
            return Ok(());
        };
        let mut chain = Vec::new();
        let mut at = self.tip.clone();
        while at != g.green {
            let parents = run.repo.parents(&at)?;
            let Some(first) = parents.first().cloned() else {
                break;
            };
            let task = run.slots.iter().position(|s| {
                s.commit
                    .as_ref()
                    .is_some_and(|c| *c == at || parents.get(1) == Some(c))
            });
            if let Some(task) = task {
                chain.push(gate::Merged {
                    task,
                    tip: at.clone(),
                });
            }
            at = first;
        }
        if at != g.green {
            // The green tip is not on the branch (it cannot be, but then): all is tested
            // again from the base.
            g.green = run.layout.base.clone();
            g.tested = false;
        }
        chain.reverse();
        for m in &chain {
            if run.dag.state(m.task) == State::Done {
                run.dag.on(&run.plan, Transition::Committed(m.task));
            }
        }
        g.pending = chain;
        Ok(())
    }

    /// Whether the integration ref at `found` is where the gate was moving it back to when
    /// swarm was killed: an earlier tip on the recorded tip's first-parent line, every merge
    /// after it one of a culprit (parked) or of a writer waiting to be merged again.
    fn rewound_to(&self, run: &Run<'_>, found: &CommitId) -> anyhow::Result<bool> {
        let mut at = self.tip.clone();
        for _ in 0..=run.slots.len() {
            if at == *found {
                return Ok(true);
            }
            let parents = run.repo.parents(&at)?;
            let ours = run.slots.iter().enumerate().any(|(i, s)| {
                matches!(run.dag.state(i), State::Parked | State::Committed)
                    && s.commit
                        .as_ref()
                        .is_some_and(|c| *c == at || parents.get(1) == Some(c))
            });
            let Some(first) = parents.first().filter(|_| ours) else {
                return Ok(false);
            };
            at = first.clone();
        }
        Ok(false)
    }

    /// Whether this writer's merge waits for the gate.
    pub(super) fn waits_for_gate(&self, i: usize) -> bool {
        self.gate
            .as_ref()
            .is_some_and(|g| g.pending.iter().any(|m| m.task == i))
    }
}

/// The gate's key for its block of ports and its temporary directory (tasks' keys are their
/// indices).
const GATE_KEY: usize = usize::MAX;

/// The ids of the writers whose merges a gate run tests.
fn batch_ids(run: &Run<'_>, g: &GateState, probe: &Probe) -> Vec<String> {
    let n = match probe {
        Probe::Batch { len } => *len,
        Probe::Step { at } => *at,
        Probe::Base => 0,
    };
    g.pending
        .iter()
        .take(n)
        .map(|m| run.id(m.task).to_owned())
        .collect()
}

/// The gate's own checkout: a name no task id can take.
pub(super) fn gate_checkout_path(layout: &super::Layout) -> std::path::PathBuf {
    layout.worktrees.join("(gate)")
}
