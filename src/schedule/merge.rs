//! The merge queue, on the owner thread: merging a committed writer into the integration
//! branch, parking and escalating a conflict, the optional resolver attempt, recovering merges
//! after a crash, and cleaning up merged writers.

use std::time::Instant;

use anyhow::Context as _;
use serde_json::json;

use super::job::{Job, JobKind, Report, Verdict, Workers};
use super::prompt::resolver_prompt;
use super::{Checkout, Scheduler, State};
use crate::agent::openai::Builtin;
use crate::agent::tools::Access;
use crate::agent::{self, Agent, Invocation};
use crate::git::{CommitId, Merge};
use crate::plan::Mode;
use crate::store::{Event, TaskStatus, TaskUpdate};

impl Scheduler<'_> {
    /// Writers committed before a crash: merged already if the integration branch contains
    /// their commit, else merged now. Finished writers lose the worktree and branch a crash
    /// between their merge and its cleanup left behind.
    pub(super) fn recover_committed(&mut self) -> anyhow::Result<()> {
        for i in 0..self.slots.len() {
            if self.slots[i].state == State::Done && self.plan.tasks[i].mode == Mode::Write {
                let merged = self.slots[i].commit.is_some();
                self.remove_writer_worktree(i, merged)?;
                continue;
            }
            if self.slots[i].state != State::Committed {
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
                    &Event::task("merge_recovered", id, json!({ "commit": commit.as_str() })),
                )?;
                self.slots[i].state = State::Done;
                self.ui
                    .note("Merged", &format!("{id} (before the interruption)"));
                self.remove_writer_worktree(i, true)?;
                self.release_dependents(i);
            } else {
                self.merge(i)?;
            }
        }
        Ok(())
    }

    /// Merges a committed writer into the integration branch; parks it on a conflict.
    pub(super) fn merge(&mut self, i: usize) -> anyhow::Result<()> {
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
        let started = Instant::now();
        let message = format!("Merge swarm task {id} of run {run}");
        let outcome = if self.slots[i].resolver_tried && self.tip == base {
            // The resolver's commit is the merge of this very tip and the task: move onto it.
            self.repo
                .move_ref(&self.layout.integration_ref, &base, &commit, &message)?;
            Merge::Merged {
                before: base,
                after: commit.clone(),
            }
        } else {
            self.repo
                .merge(&self.layout.integration_ref, &commit, &base, &message)?
        };
        match outcome {
            Merge::Merged { before, after } => {
                self.board.update_task(
                    &run,
                    id,
                    &TaskUpdate {
                        status: Some(TaskStatus::Done),
                        ..TaskUpdate::default()
                    },
                    &Event::task(
                        "merged",
                        id,
                        json!({
                            "commit": commit.as_str(),
                            "before": before.as_str(),
                            "after": after.as_str(),
                            "ms": started.elapsed().as_secs_f64() * 1000.0,
                        }),
                    ),
                )?;
                self.tip = after;
                self.slots[i].state = State::Done;
                self.ui.note("Merged", id);
                self.remove_writer_worktree(i, true)?;
                self.release_dependents(i);
                self.drop_stale_snapshots()?;
            }
            Merge::Conflicted { paths } => {
                if self.settings.resolve_conflicts
                    && !self.slots[i].resolver_tried
                    && self.resolver_agent(i).is_some()
                {
                    self.board.event(
                        &run,
                        &Event::task("resolving", id, json!({ "paths": paths })),
                    )?;
                    self.ui.note(
                        "Resolving",
                        &format!("{id}: conflict in {}", paths.join(", ")),
                    );
                    self.slots[i].state = State::Resolving;
                    self.slots[i].conflict = paths;
                    self.to_resolve.push(i);
                } else {
                    self.park(i, &paths, None)?;
                }
            }
        }
        Ok(())
    }

    /// Parks a conflicting writer: its branch stays, its dependents are skipped, a human is told.
    fn park(&mut self, i: usize, paths: &[String], resolver: Option<&str>) -> anyhow::Result<()> {
        let plan = std::rc::Rc::clone(&self.plan);
        let id = plan.tasks[i].id.as_str();
        let run = self.layout.run.clone();
        let branch = self.layout.branch(id, Checkout::Task);
        let original = self.slots[i]
            .commit
            .clone()
            .unwrap_or_else(|| CommitId::new(""));
        let mut detail = json!({
            "branch": branch,
            "commit": original.as_str(),
            "paths": paths,
            "integration": self.layout.integration_ref.trim_start_matches("refs/heads/"),
        });
        if let Some(why) = resolver {
            detail["resolver"] = why.into();
        }
        self.board.update_task(
            &run,
            id,
            &TaskUpdate {
                status: Some(TaskStatus::Parked),
                error: Some(Some(&format!("merge conflict in {}", paths.join(", ")))),
                ..TaskUpdate::default()
            },
            &Event::task("parked", id, detail.clone()),
        )?;
        self.slots[i].state = State::Parked;
        self.ui
            .note("Parked", &format!("{id}: conflict in {}", paths.join(", ")));
        self.escalate(id, &detail)?;
        self.skip_dependents_of(i)
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
        let (name, path) = self.layout.worktree(id, Checkout::Resolver);
        let transcript = self
            .layout
            .run_dir
            .join("attempts")
            .join(format!("{id}.resolve.log"));
        let tip = self.tip.clone();
        self.board.event(
            run,
            &Event::task(
                "resolver_started",
                id,
                json!({ "path": path.display().to_string(), "tip": tip.as_str() }),
            ),
        )?;
        let job = Job {
            task: i,
            attempt: self.slots[i].attempts,
            kind: JobKind::Resolver {
                name,
                branch: self.layout.branch(id, Checkout::Resolver),
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
            "Resolved",
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
                        "resolved",
                        &id,
                        json!({ "commit": resolved.as_str(), "paths": paths }),
                    ),
                )?;
                self.slots[i].commit = Some(resolved);
                self.slots[i].start_commit = Some(tip);
                self.slots[i].state = State::Committed;
                self.merge(i)
            }
            Verdict::Succeeded { commit: None, .. } => {
                self.park(i, &paths, Some("the resolver produced no commit"))
            }
            Verdict::Failed(why) => self.park(i, &paths, Some(&why)),
            Verdict::Interrupted | Verdict::Limited(_) => {
                // Still committed in the board: a resume merges it again.
                self.slots[i].state = State::Committed;
                Ok(())
            }
        }
    }

    /// Tells a human, once: the event, and the `--on-escalate` hook.
    fn escalate(&mut self, id: &str, detail: &serde_json::Value) -> anyhow::Result<()> {
        let mut info = detail.clone();
        info["run"] = self.layout.run.clone().into();
        info["task"] = id.into();
        let hook = match &self.settings.on_escalate {
            Some(cmd) => {
                let log = self
                    .layout
                    .run_dir
                    .join("attempts")
                    .join(format!("{id}.escalate.log"));
                let outcome = agent::run_hook(cmd, &info.to_string(), self.repo.workdir(), &log);
                json!({ "command": cmd, "outcome": outcome })
            }
            None => serde_json::Value::Null,
        };
        self.board.event(
            &self.layout.run,
            &Event::task("escalated", id, json!({ "hook": hook })),
        )
    }

    /// Removes a writer's worktrees (its own and its resolver's) and the branches that hold
    /// nothing of value any more: merged ones whose tips the integration branch contains, or,
    /// for a writer with no changes, a branch still at its start.
    pub(super) fn remove_writer_worktree(&mut self, i: usize, merged: bool) -> anyhow::Result<()> {
        let plan = std::rc::Rc::clone(&self.plan);
        let id = plan.tasks[i].id.as_str();
        for checkout in [Checkout::Task, Checkout::Resolver] {
            let (name, path) = self.layout.worktree(id, checkout);
            let branch = self.layout.branch(id, checkout);
            let tip = self.repo.ref_target(&format!("refs/heads/{branch}"))?;
            let reusable = checkout == Checkout::Task
                && self.set_aside.len() < self.settings.max_writers
                && path.exists();
            let set_aside = match (&tip, reusable) {
                (Some(at), true) => {
                    let to = self
                        .layout
                        .set_aside_dir()
                        .join(self.set_aside_count.to_string());
                    self.set_aside_count += 1;
                    let moved = self.repo.set_worktree_aside(&name, &path, at, &to).is_ok();
                    if moved {
                        self.set_aside.push((name.clone(), to));
                    }
                    moved
                }
                _ => false,
            };
            if !set_aside && let Some(deleting) = self.repo.remove_worktree_later(&name, &path)? {
                self.cleanup.push(deleting);
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

    /// Worktrees a killed run had set aside are removed before this one starts.
    pub(super) fn remove_stale_set_aside(&mut self) -> anyhow::Result<()> {
        let dir = self.layout.set_aside_dir();
        // Admin files hold canonical paths.
        let canonical = std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
        let prefix = format!("swarm-{}-", self.layout.run);
        for (name, path) in self.repo.worktrees_with_prefix(&prefix)? {
            if path.starts_with(&canonical) {
                self.repo.remove_worktree(&name, &path)?;
            }
        }
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        Ok(())
    }
}
