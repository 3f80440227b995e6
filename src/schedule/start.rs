//! Starting attempts, on the owner thread: picking ready tasks for free slots, preparing what
//! each attempt needs (its directory, prompt or deps files, environment) and recording the start
//! before handing it to the pool.

use anyhow::Context as _;

use super::job::{Job, JobKind, Workers};
use super::prompt::compose_prompt;
use super::{Checkout, Scheduler, Transition};
use crate::agent::openai::Builtin;
use crate::agent::tools::Access;
use crate::agent::{Agent, Invocation};
use crate::git::{self};
use crate::plan::{Action, Mode};
use crate::store::{Event, RunEvent, TaskUpdate};

/// The deps directory of `run` tasks without deps: no task id can have this name.
pub(super) const NO_DEPS_DIR: &str = "(none)";

impl Scheduler<'_> {
    pub(super) fn start_ready(&mut self, workers: &Workers) -> anyhow::Result<()> {
        let mut held = Vec::new();
        while self.running < self.settings.jobs {
            let Some(i) = self.dag.pop_ready() else {
                break;
            };
            if self.plan.tasks[i].mode == Mode::Write
                && self.writers_running >= self.settings.max_writers
            {
                held.push(i);
                continue;
            }
            self.start(i, workers)?;
        }
        self.dag.requeue(held);
        Ok(())
    }

    fn start(&mut self, i: usize, workers: &Workers) -> anyhow::Result<()> {
        let plan = std::rc::Rc::clone(&self.plan);
        let task = &plan.tasks[i];
        let id = task.id.as_str();
        let attempt = self.slots[i].attempts + 1;
        let transcript = self
            .layout
            .run_dir
            .join("attempts")
            .join(format!("{id}.{attempt}.log"));
        let (cwd, job_kind) = match task.mode {
            Mode::Read => {
                let path = self.checkouts.acquire_snapshot(self.repo, &self.tip)?;
                self.slots[i].snapshot = Some(self.tip.clone());
                (
                    path,
                    JobKind::Reader {
                        commit: self.tip.clone(),
                    },
                )
            }
            Mode::Write => {
                let path = self.layout.worktree(id, Checkout::Task);
                self.slots[i].start_commit = Some(self.tip.clone());
                (
                    path.clone(),
                    JobKind::Writer {
                        branch: self.layout.branch(id, Checkout::Task),
                        keep_as: self.layout.kept_branch(id, Checkout::Task, attempt),
                        start: self.tip.clone(),
                        check: task.check.clone().or_else(|| self.settings.check.clone()),
                        message: format!(
                            "{}\n\nswarm task {id} of run {}",
                            task.title.as_deref().unwrap_or(id),
                            self.layout.run
                        ),
                        reuse: self.checkouts.take_set_aside(),
                    },
                )
            }
        };
        let mut env = vec![
            ("SWARM_RUN_ID".to_owned(), self.layout.run.clone()),
            ("SWARM_TASK_ID".to_owned(), id.to_owned()),
            ("SWARM_MODE".to_owned(), task.mode.as_str().to_owned()),
            ("SWARM_ATTEMPT".to_owned(), attempt.to_string()),
            ("SWARM_ACTIVE".to_owned(), "1".to_owned()),
            // The task's directory is a checkout of its own, named after nothing of the
            // user's: the repository's name, for tasks that report on it.
            (
                "SWARM_REPO_NAME".to_owned(),
                self.repo
                    .workdir()
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            ),
        ];
        let deps: Vec<(String, String)> = self
            .plan
            .deps(i)
            .map(|d| {
                (
                    self.plan.tasks[d].id.to_string(),
                    self.slots[d].result.clone().unwrap_or_default(),
                )
            })
            .collect();
        let mut builtin = None;
        let mut cli: Option<crate::agent::cli::Profile> = None;
        let mut argv_run = Vec::new();
        let (command, stdin, deps_dir) = match &task.action {
            Action::Run(cmd) => {
                // A task without deps shares one empty directory: a directory per task
                // costs more than a trivial task itself on some file systems.
                let dir = if deps.is_empty() {
                    self.layout.deps.join(NO_DEPS_DIR)
                } else {
                    self.layout.deps.join(id)
                };
                env.push(("SWARM_DEPS_DIR".to_owned(), dir.display().to_string()));
                env.push((
                    "SWARM_DEPS".to_owned(),
                    deps.iter()
                        .map(|(d, _)| d.as_str())
                        .collect::<Vec<_>>()
                        .join(" "),
                ));
                (cmd.clone(), None, Some(dir))
            }
            Action::Prompt(prompt) => {
                let agent = self
                    .settings
                    .agent_for(task.agent.as_deref())
                    .with_context(|| {
                        format!("task {id} has a prompt but no agent is configured")
                    })?;
                let changes = self.dep_changes(i);
                let prompt = compose_prompt(prompt, &deps, &changes);
                match agent {
                    Agent::Exec(cmd) => (cmd, Some(prompt), None),
                    Agent::Cli(profile) => {
                        let (argv, shown) = profile.argv(task.mode);
                        cli = Some(profile);
                        argv_run = argv;
                        (shown, Some(prompt), None)
                    }
                    Agent::OpenAi => {
                        let client = self.settings.llm.clone().with_context(|| {
                            format!("task {id} needs the built-in agent, which is not configured")
                        })?;
                        builtin = Some(Builtin {
                            client,
                            prompt,
                            access: match task.mode {
                                Mode::Read => Access::Read,
                                Mode::Write => Access::Write,
                            },
                            lane: task.lane.as_str().to_owned(),
                            max_turns: self.settings.builtin.max_turns,
                            max_tokens: self.settings.builtin.max_tokens,
                            allowed_programs: self.settings.builtin.allowed_programs.clone(),
                        });
                        ("(built-in agent)".to_owned(), None, None)
                    }
                }
            }
        };
        let timeout = task.timeout.unwrap_or(self.settings.task_timeout);
        let header = format!(
            "swarm run {} task {id} attempt {attempt}\nmode: {}\ncwd: {}\ncommand: {}\n",
            self.layout.run,
            task.mode.as_str(),
            cwd.display(),
            command
        );
        self.board.start_attempt(
            &self.layout.run,
            id,
            attempt,
            &transcript.display().to_string(),
            &Event::task(
                id,
                RunEvent::TaskStarted {
                    attempt,
                    cwd: cwd.display().to_string(),
                },
            ),
        )?;
        if let JobKind::Writer { start, reuse, .. } = &job_kind {
            self.board.update_task(
                &self.layout.run,
                id,
                &TaskUpdate {
                    start_commit: Some(start.as_str()),
                    branch: Some(&self.layout.branch(id, Checkout::Task)),
                    ..TaskUpdate::default()
                },
                &Event::task(
                    id,
                    RunEvent::Worktree {
                        path: cwd.display().to_string(),
                        start: start.to_string(),
                        reuses: reuse.as_ref().map(|p| p.display().to_string()),
                    },
                ),
            )?;
            self.writers_running += 1;
        }
        self.dag.on(&plan, Transition::Started(i));
        self.slots[i].attempts = attempt;
        self.running += 1;
        self.ui.task_started(id, attempt);

        let job = Job {
            task: i,
            attempt,
            kind: job_kind,
            invocation: Invocation {
                command,
                argv: argv_run,
                env_drop: cli.as_ref().map(|p| p.drop_env.clone()).unwrap_or_default(),
                env_pass: cli.as_ref().map(|p| p.pass_env.clone()).unwrap_or_default(),
                stdin,
                cwd,
                env,
                timeout,
                // The built-in agent runs in swarm; its requests have their own timeout.
                stall: self.settings.stall_timeout.filter(|_| builtin.is_none()),
                transcript,
                header,
            },
            builtin,
            parser: cli.map(|p| p.parser),
            deps_dir: deps_dir.filter(|_| !deps.is_empty()).map(|d| (d, deps)),
            user_checkout: self.repo.workdir().to_owned(),
        };
        workers.spawn(job);
        Ok(())
    }

    /// Paths changed by the writers among a task's deps, for its prompt.
    fn dep_changes(&self, i: usize) -> Vec<(String, Vec<String>)> {
        self.plan
            .deps(i)
            .filter_map(|d| {
                let s = &self.slots[d];
                let (Some(from), Some(to)) = (&s.start_commit, &s.commit) else {
                    return None;
                };
                let paths = git::changed_paths(self.repo.common_dir(), from, to).ok()?;
                Some((self.plan.tasks[d].id.to_string(), paths))
            })
            .collect()
    }
}
