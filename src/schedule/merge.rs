//! The merge queue, on the owner thread: merging a committed writer into the integration
//! branch, parking and escalating a conflict, the optional resolver attempt, recovering merges
//! after a crash, and cleaning up merged writers.

use std::time::Instant;

use anyhow::Context as _;
use serde_json::json;

use super::job::{Job, JobKind, Report, Verdict, Workers};
use super::prompt::resolver_prompt;
use super::{Checkout, Scheduler, State, Transition};
use crate::agent::openai::Builtin;
use crate::agent::tools::Access;
use crate::agent::{self, Agent, Invocation};
use crate::git::{CommitId, Merge};
use crate::plan::Mode;
use crate::store::{Event, Moved, Parking, RunEvent, TaskStatus, TaskUpdate};
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

impl Scheduler<'_> {
    /// The integration ref should be where swarm left it. A kill between moving it and
    /// recording the merge leaves it one merge ahead: that merge is swarm's own (its first
    /// parent is the recorded tip, and it merges, or is, the commit of a task waiting to be
    /// merged) and is taken. Anything else moved it.
    pub(super) fn settle_integration_ref(&mut self) -> anyhow::Result<()> {
        let found = self.repo.ref_target(&self.layout.integration_ref)?;
        let Some(f) = found.clone() else {
            let landed = match self.repo.resolve("HEAD") {
                Ok(head) => self.repo.contains(&head, &self.tip)?,
                Err(_) => false,
            };
            if self.tip == self.layout.base || landed {
                // The run was killed before its branch was made, or after its landing
                // deleted it.
                let integration = self
                    .layout
                    .integration_ref
                    .trim_start_matches("refs/heads/");
                return self.repo.create_branch(integration, &self.tip);
            }
            return self.integration_moved(None);
        };
        if f == self.tip {
            return Ok(());
        }
        let parents = self.repo.parents(&f)?;
        let waiting = |c: &CommitId| {
            self.slots
                .iter()
                .enumerate()
                .any(|(i, s)| self.dag.state(i) == State::Committed && s.commit.as_ref() == Some(c))
        };
        let own = parents.first() == Some(&self.tip)
            && (waiting(&f) || parents.get(1).is_some_and(waiting));
        if !own {
            return self.integration_moved(found.as_ref());
        }
        self.board.set_tip(
            &self.layout.run,
            f.as_str(),
            &Event::run(RunEvent::TipRecovered {
                before: self.tip.to_string(),
                after: f.to_string(),
            }),
        )?;
        self.tip = f;
        Ok(())
    }

    /// Writers committed before a crash: merged already if the integration branch contains
    /// their commit, else merged now. Finished writers lose the worktree and branch a crash
    /// between their merge and its cleanup left behind.
    pub(super) fn recover_committed(&mut self) -> anyhow::Result<()> {
        for i in 0..self.slots.len() {
            if self.dag.state(i) == State::Done && self.plan.tasks[i].mode == Mode::Write {
                let merged = self.slots[i].commit.is_some();
                self.remove_writer_worktree(i, merged)?;
                continue;
            }
            if self.dag.state(i) != State::Committed {
                continue;
            }
            let commit = self.slots[i]
                .commit
                .clone()
                .context("a committed task has no commit")?;
            if self.repo.contains(&self.tip, &commit)? {
                let id = self.plan.tasks[i].id.as_str();
                self.board.update_task(
                    &self.layout.run,
                    id,
                    &TaskUpdate {
                        status: Some(TaskStatus::Done),
                        ..TaskUpdate::default()
                    },
                    &Event::task(
                        id,
                        RunEvent::MergeRecovered {
                            commit: commit.to_string(),
                        },
                    ),
                )?;
                self.ui
                    .note(Verb::Merged, &format!("{id} (before the interruption)"));
                self.remove_writer_worktree(i, true)?;
                self.transition(Transition::Done(i))?;
            } else {
                self.merge(i)?;
            }
        }
        Ok(())
    }

    /// Merges a committed writer into the integration branch; parks it on a conflict, or
    /// when its change must be seen by a human first.
    pub(super) fn merge(&mut self, i: usize) -> anyhow::Result<()> {
        if self.halted.is_some() {
            // Still committed in the board: a resume merges it.
            return Ok(());
        }
        let id = self.plan.tasks[i].id.as_str();
        let run = self.layout.run.clone();
        let commit = self.slots[i]
            .commit
            .clone()
            .context("merging a task without a commit")?;
        let base = self.slots[i]
            .start_commit
            .clone()
            .context("merging a task without a start commit")?;
        if let Some(hold) = self.review(&base, &commit)? {
            return self.park(i, &hold);
        }
        let started = Instant::now();
        let message = format!("Merge swarm task {id} of run {run}");
        let outcome = if self.slots[i].resolver_tried && self.tip == base {
            // The resolver's commit is the merge of this very tip and the task: move onto it.
            self.repo
                .advance(&self.layout.integration_ref, &base, &commit, &message)?
        } else {
            self.repo.merge(
                &self.layout.integration_ref,
                &self.tip,
                &commit,
                &base,
                &message,
            )?
        };
        match outcome {
            Merge::Merged { before, after } => {
                self.board.record_merge(
                    &run,
                    id,
                    &TaskUpdate {
                        status: Some(TaskStatus::Done),
                        ..TaskUpdate::default()
                    },
                    after.as_str(),
                    &Event::task(
                        id,
                        RunEvent::Merged {
                            commit: commit.to_string(),
                            before: before.to_string(),
                            after: after.to_string(),
                            ms: started.elapsed().as_secs_f64() * 1000.0,
                        },
                    ),
                )?;
                self.tip = after;
                self.ui.note(Verb::Merged, id);
                self.remove_writer_worktree(i, true)?;
                self.transition(Transition::Done(i))?;
                self.checkouts.drop_stale_snapshots(&self.tip)?;
            }
            Merge::Conflicted { paths } => {
                if self.settings.resolve_conflicts
                    && !self.slots[i].resolver_tried
                    && self.resolver_agent(i).is_some()
                {
                    self.board.event(
                        &run,
                        &Event::task(
                            id,
                            RunEvent::Resolving {
                                paths: paths.clone(),
                            },
                        ),
                    )?;
                    self.ui.note(
                        Verb::Resolving,
                        &format!("{id}: conflict in {}", paths.join(", ")),
                    );
                    self.dag.on(&self.plan, Transition::Resolving(i));
                    self.slots[i].conflict = paths;
                    self.to_resolve.push(i);
                } else {
                    self.park(
                        i,
                        &Hold::Conflict {
                            paths,
                            resolver: None,
                        },
                    )?;
                }
            }
            Merge::Refused { why, paths } => self.park(i, &Hold::Review { why, paths })?,
            Merge::Moved { found } => self.integration_moved(found.as_ref())?,
        }
        Ok(())
    }

    /// Whether a writer's change must be seen by a human before it is merged: it changes a
    /// file swarm reads commands from, or holds the value of a secret swarm hides.
    fn review(&self, base: &CommitId, commit: &CommitId) -> anyhow::Result<Option<Hold>> {
        let secrets = crate::secret::named();
        let needles: Vec<&[u8]> = secrets.iter().map(|(_, v)| v.as_bytes()).collect();
        let scan = self
            .repo
            .scan_change(base, commit, &self.settings.guarded, &needles)?;
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

    /// The integration ref is not where swarm left it: someone else moved it. What they put
    /// there is kept on a branch of its own, the ref goes back to swarm's tip, nothing more is
    /// merged this run, and a human is told.
    fn integration_moved(&mut self, found: Option<&CommitId>) -> anyhow::Result<()> {
        let integration = self
            .layout
            .integration_ref
            .trim_start_matches("refs/heads/")
            .to_owned();
        let backup = found.map(|f| format!("{integration}@moved-{}", f.short()));
        if let (Some(f), Some(b)) = (found, &backup) {
            self.repo.set_branch(b, f)?;
            self.repo.move_ref(
                &self.layout.integration_ref,
                f,
                &self.tip,
                "swarm: put back where swarm left it",
            )?;
        } else {
            self.repo.create_branch(&integration, &self.tip)?;
        }
        let what = match &backup {
            Some(b) => format!("what it found there is kept as branch {b}"),
            None => "it had been deleted".to_owned(),
        };
        let why = format!(
            "the integration branch {integration} was moved by something other than swarm; swarm put it back at {} ({what}) and merges nothing more this run; look at it, then `swarm resume {}` merges the rest",
            self.tip.short(),
            self.layout.run
        );
        let moved = Moved {
            integration,
            found: found.map(CommitId::to_string),
            backup,
            tip: self.tip.to_string(),
            reason: why.clone(),
        };
        let info = serde_json::to_value(&moved)?;
        self.board.event(
            &self.layout.run,
            &Event::run(RunEvent::IntegrationMoved(moved)),
        )?;
        self.ui.note(Verb::Halted, &why);
        self.escalate(None, info)?;
        self.halted = Some(why);
        Ok(())
    }

    /// Parks a writer: its branch stays, its dependents are skipped, a human is told.
    fn park(&mut self, i: usize, hold: &Hold) -> anyhow::Result<()> {
        let plan = std::rc::Rc::clone(&self.plan);
        let id = plan.tasks[i].id.as_str();
        let run = self.layout.run.clone();
        let branch = self.layout.branch(id, Checkout::Task);
        let original = self.slots[i]
            .commit
            .clone()
            .unwrap_or_else(|| CommitId::new(""));
        let mut parking = Parking {
            branch,
            commit: original.to_string(),
            integration: self
                .layout
                .integration_ref
                .trim_start_matches("refs/heads/")
                .to_owned(),
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
        self.board.update_task(
            &run,
            id,
            &TaskUpdate {
                status: Some(TaskStatus::Parked),
                error: Some(Some(&error)),
                ..TaskUpdate::default()
            },
            &Event::task(id, RunEvent::Parked(parking)),
        )?;
        self.ui.note(Verb::Parked, &line);
        self.escalate(Some(id), info)?;
        self.transition(Transition::Parked(i))
    }

    /// The agent that may resolve a task's conflict: the task's agent or the run's, if usable.
    fn resolver_agent(&self, i: usize) -> Option<Agent> {
        self.settings
            .agent_for(self.plan.tasks[i].agent.as_deref())
            .filter(|a| *a != Agent::OpenAi || self.settings.llm.is_some())
    }

    pub(super) fn start_resolvers(&mut self, workers: &Workers) -> anyhow::Result<()> {
        while self.running < self.settings.jobs
            && self.writers_running < self.settings.max_writers
            && let Some(i) = self.to_resolve.pop()
        {
            self.start_resolver(i, workers)?;
        }
        Ok(())
    }

    /// One bounded attempt by the agent, in a fresh worktree at the integration tip holding the
    /// conflicted merge, to resolve it; the result is a merge commit, checked like any writer.
    fn start_resolver(&mut self, i: usize, workers: &Workers) -> anyhow::Result<()> {
        let plan = std::rc::Rc::clone(&self.plan);
        let task = &plan.tasks[i];
        let id = task.id.as_str();
        let run = &self.layout.run;
        let slot = &mut self.slots[i];
        slot.resolver_tried = true;
        let agent = self
            .resolver_agent(i)
            .context("a resolver needs an agent")?;
        let slot = &self.slots[i];
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
        let (command, stdin, builtin) = match agent {
            Agent::Exec(cmd) => (cmd, Some(prompt), None),
            Agent::Cli(profile) => {
                let (program_and_args, shown) = profile.argv(crate::plan::Mode::Write);
                argv = program_and_args;
                cli = Some(profile);
                (shown, Some(prompt), None)
            }
            Agent::OpenAi => (
                "(built-in agent)".to_owned(),
                None,
                Some(Builtin {
                    client: self.settings.llm.clone().context("no model client")?,
                    prompt,
                    access: Access::Write,
                    lane: "merge-conflict resolver".to_owned(),
                    max_turns: self.settings.builtin.max_turns,
                    max_tokens: self.settings.builtin.max_tokens,
                    allowed_programs: self.settings.builtin.allowed_programs.clone(),
                }),
            ),
        };
        let path = self.layout.worktree(id, Checkout::Resolver);
        let transcript = self
            .layout
            .run_dir
            .join("attempts")
            .join(format!("{id}.resolve.log"));
        let tip = self.tip.clone();
        self.board.event(
            run,
            &Event::task(
                id,
                RunEvent::ResolverStarted {
                    path: path.display().to_string(),
                    tip: tip.to_string(),
                },
            ),
        )?;
        let job = Job {
            task: i,
            attempt: self.slots[i].attempts,
            kind: JobKind::Resolver {
                branch: self.layout.branch(id, Checkout::Resolver),
                keep_as: self
                    .layout
                    .kept_branch(id, Checkout::Resolver, self.slots[i].attempts),
                tip,
                base,
                theirs,
                paths: self.slots[i].conflict.clone(),
                check: task.check.clone().or_else(|| self.settings.check.clone()),
                message: format!("Merge swarm task {id} of run {run}, conflicts resolved"),
            },
            invocation: Invocation {
                command,
                argv,
                env_drop: cli.as_ref().map(|p| p.drop_env.clone()).unwrap_or_default(),
                env_pass: cli.as_ref().map(|p| p.pass_env.clone()).unwrap_or_default(),
                stdin,
                cwd: path.clone(),
                env: vec![
                    ("SWARM_RUN_ID".to_owned(), run.clone()),
                    ("SWARM_TASK_ID".to_owned(), id.to_owned()),
                    ("SWARM_MODE".to_owned(), "write".to_owned()),
                    ("SWARM_RESOLVING".to_owned(), "1".to_owned()),
                    ("SWARM_ACTIVE".to_owned(), "1".to_owned()),
                ],
                timeout: task.timeout.unwrap_or(self.settings.task_timeout),
                stall: self.settings.stall_timeout,
                header: format!(
                    "swarm run {run} task {id}: resolving a merge conflict\ncwd: {}\n",
                    path.display()
                ),
                transcript,
            },
            builtin,
            parser: cli.map(|p| p.parser),
            deps_dir: None,
            user_checkout: self.repo.workdir().to_owned(),
        };
        self.running += 1;
        self.writers_running += 1;
        self.ui.task_started(&format!("{id} (resolving)"), 1);
        workers.spawn(job);
        Ok(())
    }

    /// Takes a resolver's report: a resolved merge goes through the merge queue once more; a
    /// failed one parks the task.
    pub(super) fn finish_resolver(&mut self, report: Report) -> anyhow::Result<()> {
        let i = report.task;
        let id = self.plan.tasks[i].id.to_string();
        self.running -= 1;
        self.writers_running -= 1;
        self.ui.task_finished(
            &format!("{id} (resolving)"),
            Verb::Resolved,
            report.elapsed,
            None,
        );
        let paths = std::mem::take(&mut self.slots[i].conflict);
        match report.verdict {
            Verdict::Succeeded {
                commit: Some(resolved),
                ..
            } => {
                let tip = self.tip.clone();
                self.board.update_task(
                    &self.layout.run,
                    &id,
                    &TaskUpdate {
                        commit_id: Some(resolved.as_str()),
                        start_commit: Some(tip.as_str()),
                        ..TaskUpdate::default()
                    },
                    &Event::task(
                        &id,
                        RunEvent::Resolved {
                            commit: resolved.to_string(),
                            paths,
                        },
                    ),
                )?;
                self.slots[i].commit = Some(resolved);
                self.slots[i].start_commit = Some(tip);
                self.dag.on(&self.plan, Transition::Committed(i));
                self.merge(i)
            }
            Verdict::Succeeded { commit: None, .. } => self.park(
                i,
                &Hold::Conflict {
                    paths,
                    resolver: Some("the resolver produced no commit".to_owned()),
                },
            ),
            Verdict::Failed(why) => self.park(
                i,
                &Hold::Conflict {
                    paths,
                    resolver: Some(why),
                },
            ),
            Verdict::Interrupted | Verdict::Limited(_) => {
                // Still committed in the board: a resume merges it again.
                self.dag.on(&self.plan, Transition::Committed(i));
                Ok(())
            }
        }
    }

    /// Tells a human, once: the event, and the `--on-escalate` hook. `task` is `None` for a
    /// problem of the run as a whole.
    fn escalate(&mut self, task: Option<&str>, mut info: serde_json::Value) -> anyhow::Result<()> {
        info["run"] = self.layout.run.clone().into();
        info["task"] = task.into();
        let hook = match &self.settings.on_escalate {
            Some(cmd) => {
                let log = self
                    .layout
                    .run_dir
                    .join("attempts")
                    .join(format!("{}.escalate.log", task.unwrap_or("(run)")));
                let outcome = agent::run_hook(cmd, &info.to_string(), self.repo.workdir(), &log);
                json!({ "command": cmd, "outcome": outcome })
            }
            None => serde_json::Value::Null,
        };
        let escalated = RunEvent::Escalated { hook };
        let event = match task {
            Some(id) => Event::task(id, escalated),
            None => Event::run(escalated),
        };
        self.board.event(&self.layout.run, &event)
    }

    /// Removes a writer's checkouts (its own and its resolver's) and the branches that hold
    /// nothing of value any more: merged ones whose tips the integration branch contains, or,
    /// for a writer with no changes, a branch still at its start. Its own checkout is set
    /// aside for the next writer when it holds a merged result.
    pub(super) fn remove_writer_worktree(&mut self, i: usize, merged: bool) -> anyhow::Result<()> {
        let plan = std::rc::Rc::clone(&self.plan);
        let id = plan.tasks[i].id.as_str();
        for checkout in [Checkout::Task, Checkout::Resolver] {
            let path = self.layout.worktree(id, checkout);
            let branch = self.layout.branch(id, checkout);
            let tip = self.repo.ref_target(&format!("refs/heads/{branch}"))?;
            match checkout {
                Checkout::Task => self.checkouts.retire(&path, tip.as_ref())?,
                Checkout::Resolver => self.checkouts.remove_later(&path)?,
            }
            let Some(at) = tip else {
                continue;
            };
            let worthless = if merged {
                self.repo.contains(&self.tip, &at)?
            } else {
                self.slots[i].start_commit.as_ref() == Some(&at)
            };
            if worthless {
                self.repo.delete_branch_at(&branch, &at)?;
            }
        }
        Ok(())
    }
}
