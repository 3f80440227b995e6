//! Preparing an attempt, on the owner thread: its directory (a shared snapshot for a reader, a
//! checkout of its own for a writer), its prompt or deps files, its environment, and the record
//! of its start. The dispatcher hands the job to the pool.

use anyhow::Context as _;

use super::Checkout;
use super::checkouts::Checkouts;
use super::dag::Transition;
use super::job::{Job, JobKind};
use super::prompt::compose_prompt;
use super::run::Run;
use crate::agent::openai::Builtin;
use crate::agent::tools::Access;
use crate::agent::{Agent, Invocation};
use crate::git::CommitId;
use crate::plan::{Action, Mode};

/// The deps directory of `run` tasks without deps: no task id can have this name.
pub(super) const NO_DEPS_DIR: &str = "(none)";

/// Task `i`'s next attempt, recorded as started, from the integration tip `tip`.
pub(super) fn prepare(
    run: &mut Run<'_>,
    checkouts: &mut Checkouts,
    tip: &CommitId,
    i: usize,
) -> anyhow::Result<Job> {
    let task = &run.plan.tasks[i];
    let (settings, layout) = (run.settings, run.layout);
    let id = task.id.as_str();
    let attempt = run.slots[i].attempts + 1;
    let transcript = layout
        .run_dir
        .join("attempts")
        .join(format!("{id}.{attempt}.log"));
    let (cwd, kind) = match task.mode {
        Mode::Read => {
            let path = checkouts.acquire_snapshot(run.repo, tip)?;
            run.slots[i].snapshot = Some(tip.clone());
            (
                path,
                JobKind::Reader {
                    commit: tip.clone(),
                },
            )
        }
        Mode::Write => {
            let path = layout.worktree(id, Checkout::Task);
            run.slots[i].start_commit = Some(tip.clone());
            (
                path.clone(),
                JobKind::Writer {
                    branch: layout.branch(id, Checkout::Task),
                    keep_as: layout.kept_branch(id, Checkout::Task, attempt),
                    start: tip.clone(),
                    check: task.check.clone().or_else(|| settings.check.clone()),
                    message: format!(
                        "{}\n\nswarm task {id} of run {}",
                        task.title.as_deref().unwrap_or(id),
                        layout.run
                    ),
                    reuse: checkouts.take_set_aside(),
                },
            )
        }
    };
    let mut env = vec![
        ("SWARM_RUN_ID".to_owned(), layout.run.clone()),
        ("SWARM_TASK_ID".to_owned(), id.to_owned()),
        ("SWARM_MODE".to_owned(), task.mode.as_str().to_owned()),
        ("SWARM_ATTEMPT".to_owned(), attempt.to_string()),
        ("SWARM_ACTIVE".to_owned(), "1".to_owned()),
        // The task's directory is a checkout of its own, named after nothing of the
        // user's: the repository's name, for tasks that report on it.
        (
            "SWARM_REPO_NAME".to_owned(),
            run.repo
                .workdir()
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        ),
    ];
    let deps: Vec<(String, String)> = run
        .plan
        .deps(i)
        .map(|d| {
            (
                run.plan.tasks[d].id.to_string(),
                run.slots[d].result.clone().unwrap_or_default(),
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
                layout.deps.join(NO_DEPS_DIR)
            } else {
                layout.deps.join(id)
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
            let agent = settings
                .agent_for(task.agent.as_deref())
                .with_context(|| format!("task {id} has a prompt but no agent is configured"))?;
            // Paths changed by the writers among its deps.
            let changes: Vec<(String, Vec<String>)> = run
                .plan
                .deps(i)
                .filter_map(|d| Some((run.plan.tasks[d].id.to_string(), run.changed_paths(d)?)))
                .collect();
            let prompt = compose_prompt(prompt, &deps, &changes);
            match agent {
                Agent::Exec(cmd) => (cmd, Some(prompt), None),
                Agent::Cli(profile) => {
                    let (argv, shown) = profile.argv(task.mode);
                    // swarm's own variables come last: no profile sets them.
                    env.splice(0..0, profile.set_env.iter().cloned());
                    cli = Some(profile);
                    argv_run = argv;
                    (shown, Some(prompt), None)
                }
                Agent::OpenAi => {
                    let client = settings.llm.clone().with_context(|| {
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
                        max_turns: settings.builtin.max_turns,
                        max_tokens: settings.builtin.max_tokens,
                        allowed_programs: settings.builtin.allowed_programs.clone(),
                    });
                    ("(built-in agent)".to_owned(), None, None)
                }
            }
        }
    };
    let timeout = task.timeout.unwrap_or(settings.task_timeout);
    let header = format!(
        "swarm run {} task {id} attempt {attempt}\nmode: {}\ncwd: {}\ncommand: {}\n",
        layout.run,
        task.mode.as_str(),
        cwd.display(),
        command
    );
    run.record.attempt_started(id, attempt, &transcript, &cwd)?;
    if let JobKind::Writer { start, reuse, .. } = &kind {
        let branch = layout.branch(id, Checkout::Task);
        run.record
            .writer_started(id, start, &branch, &cwd, reuse.as_deref())?;
    }
    run.dag.on(&run.plan, Transition::Started(i));
    run.slots[i].attempts = attempt;
    run.ui.task_started(id, attempt);
    Ok(Job {
        task: i,
        attempt,
        kind,
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
            stall: settings.stall_timeout.filter(|_| builtin.is_none()),
            transcript,
            header,
        },
        builtin,
        parser: cli.map(|p| p.parser),
        deps_dir: deps_dir.filter(|_| !deps.is_empty()).map(|d| (d, deps)),
        user_checkout: run.repo.workdir().to_owned(),
    })
}
