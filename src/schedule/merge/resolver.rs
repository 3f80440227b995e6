//! A conflicting writer's one resolver attempt: the job, in a fresh checkout holding the
//! conflicted merge at the integration tip, and what its report does (a resolved merge goes
//! through the queue once more, a failed one parks the writer).

use anyhow::Context as _;

use super::super::Checkout;
use super::super::dag::Transition;
use super::super::job::{Job, JobKind, Report, Verdict};
use super::super::prompt::resolver_prompt;
use super::super::run::Run;
use super::{Hold, park};
use crate::agent::openai::Builtin;
use crate::agent::tools::Access;
use crate::agent::{Agent, Invocation};
use crate::git::CommitId;
use crate::plan::Mode;
use crate::store::RunEvent;
use crate::ui::Verb;

/// One bounded attempt by the agent, in a fresh worktree at the integration tip holding the
/// conflicted merge, to resolve it; the result is a merge commit, checked like any writer.
pub(super) fn job(run: &mut Run<'_>, tip: &CommitId, i: usize) -> anyhow::Result<Job> {
    run.slots[i].resolver_tried = true;
    run.slots[i].resolving_from = Some(tip.clone());
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
    env.extend(super::super::attempt_env(&mut run.ports, i, &tmp));
    let (slot, id) = (&run.slots[i], id.as_str());
    let job = Job {
        task: i,
        attempt: slot.attempts,
        kind: JobKind::Resolver {
            branch: layout.branch(id, Checkout::Resolver),
            keep_as: layout.kept_branch(id, Checkout::Resolver, slot.attempts),
            tip: tip.clone(),
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
            transcript_cap: settings.transcript_cap,
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
        spawn_file: None,
    };
    let id = id.to_owned();
    run.record.task_event(
        &id,
        RunEvent::ResolverStarted {
            path: path.display().to_string(),
            tip: tip.to_string(),
        },
    )?;
    run.ui.task_started(&format!("{id} (resolving)"), 1);
    run.slots[i].started = Some(std::time::Instant::now());
    Ok(job)
}

/// Takes a resolver's report (its attempt started from `tip`, unless it says): a failed one
/// parks the task; a resolved merge is the task to go through the merge queue once more.
pub(super) fn finished(
    run: &mut Run<'_>,
    tip: &CommitId,
    report: Report,
) -> anyhow::Result<Option<usize>> {
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
        .unwrap_or_else(|| tip.clone());
    match report.verdict {
        Verdict::Succeeded {
            commit: Some(resolved),
            ..
        } => {
            run.record.resolved(&id, &resolved, &from, paths)?;
            run.slots[i].commit = Some(resolved);
            run.slots[i].start_commit = Some(from);
            run.dag.on(&run.plan, Transition::Committed(i));
            Ok(Some(i))
        }
        Verdict::Succeeded { commit: None, .. } => {
            let resolver = Some("the resolver produced no commit".to_owned());
            park(run, i, &Hold::Conflict { paths, resolver }).map(|()| None)
        }
        Verdict::Failed(why) => {
            let resolver = Some(why);
            park(run, i, &Hold::Conflict { paths, resolver }).map(|()| None)
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
            Ok(None)
        }
        Verdict::Interrupted | Verdict::Limited(_) => {
            // Still committed in the board: a resume merges it again.
            run.dag.on(&run.plan, Transition::Committed(i));
            Ok(None)
        }
    }
}

/// The agent that may resolve a task's conflict: the task's agent or the run's, if usable;
/// for a pool's task, the member that wrote it (outside the pool's caps and pauses: one
/// bounded attempt).
pub(super) fn resolver_agent(run: &Run<'_>, i: usize) -> Option<Agent> {
    let name = run.plan.tasks[i].agent.as_deref();
    let member = run.slots[i].member.as_deref().or_else(|| {
        let pool = run.settings.pool_for(name)?;
        run.settings.pools.get(pool)?.first().map(String::as_str)
    });
    run.settings
        .attempt_agent(name, member)
        .filter(|a| *a != Agent::OpenAi || run.settings.llm.is_some())
}
