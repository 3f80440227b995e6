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
}

/// The merge queue's own state.
pub(super) struct MergeQueue {
    /// Where swarm left the integration branch.
    tip: CommitId,
    /// Conflicting writers whose resolver attempt has yet to start.
    to_resolve: Vec<usize>,
    /// Merging stopped for this reason, for a human to settle; the run winds down.
    halted: Option<String>,
}

impl MergeQueue {
    pub(super) fn new(tip: CommitId) -> Self {
        Self {
            tip,
            to_resolve: Vec::new(),
            halted: None,
        }
    }

    pub(super) fn tip(&self) -> &CommitId {
        &self.tip
    }

    pub(super) fn into_tip(self) -> CommitId {
        self.tip
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
                self.tip = after;
                self.clean_up(run, checkouts, i, true)?;
                run.transition(Transition::Done(i))?;
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
        match report.verdict {
            Verdict::Succeeded {
                commit: Some(resolved),
                ..
            } => {
                run.record.resolved(&id, &resolved, &self.tip, paths)?;
                run.slots[i].commit = Some(resolved);
                run.slots[i].start_commit = Some(self.tip.clone());
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
    };
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
