//! A conflicting writer's one resolver attempt as a job: a fresh checkout holding the
//! conflicted merge at the integration tip, its agent told which paths conflict; the result is
//! a merge commit, checked like any writer's. What its end means is the core's.

use anyhow::Context as _;

use super::super::Checkout;
use super::super::core::Core;
use super::super::job::{Job, JobKind, ResolvedBy};
use super::super::prompt::{redo_prompt, resolver_prompt};
use super::Exec;
use crate::agent::openai::Builtin;
use crate::agent::tools::Access;
use crate::agent::{Agent, Invocation};
use crate::git::CommitId;
use crate::plan::Mode;
use crate::schedule::Rung;
use crate::store::RunEvent;
use crate::ui::Told;

/// Writer `i`'s rung of the conflict ladder at the integration tip `tip`: the structural
/// merge, or its one bounded resolver attempt by its agent.
pub(super) fn job(
    core: &Core<'_>,
    ex: &mut Exec<'_>,
    i: usize,
    tip: &CommitId,
) -> anyhow::Result<Job> {
    match core.slots[i].rung {
        Some(Rung::Structural) => structural(core, ex, i, tip),
        Some(Rung::Redo) => resolver(core, ex, i, tip, true),
        Some(Rung::Resolve) | None => resolver(core, ex, i, tip, false),
    }
}

/// The structural rung as a job: in a fresh worktree at `tip` holding the conflicted merge,
/// the merge program (`mergiraf`) writes each conflicted file from its three sides; the result
/// is taken as the resolver's is, when no conflict is left and no line a side added is lost,
/// and checked as any writer is.
fn structural(core: &Core<'_>, ex: &mut Exec<'_>, i: usize, tip: &CommitId) -> anyhow::Result<Job> {
    let (task, slot, settings, layout) = (
        &core.plan.tasks[i],
        &core.slots[i],
        ex.out.settings,
        ex.out.layout,
    );
    let tool = settings
        .structural
        .clone()
        .context("the structural rung needs its merge program")?;
    let id = task.id.as_str();
    let theirs = slot
        .commit
        .clone()
        .context("resolving a task without a commit")?;
    let base = slot
        .start_commit
        .clone()
        .context("resolving a task without a start")?;
    let path = layout.worktree(id, Checkout::Resolver);
    let tmp = ex.scratch.acquire(i);
    let sides = crate::git::write_sides(
        ex.out.repo,
        &base,
        tip,
        &theirs,
        &slot.conflict,
        &tmp.join("swarm-sides"),
    )?;
    let program = sh_quote(&tool.program.to_string_lossy());
    // Each file merged on its own; what the program could not merge keeps its conflict
    // markers, which refuse the result.
    let command = match &sides {
        Ok(sides) => sides
            .iter()
            .map(|s| {
                format!(
                    "{program} merge -p {p} -s base -x integration -y 'this task' -o {p} {b} {o} {t} || echo \"swarm: {tool} left conflicts in \"{p}",
                    p = sh_quote(&s.path),
                    b = sh_quote(&s.base.to_string_lossy()),
                    o = sh_quote(&s.ours.to_string_lossy()),
                    t = sh_quote(&s.theirs.to_string_lossy()),
                    tool = tool.version,
                )
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Err(_) => "true".to_owned(),
    };
    let name = &layout.run;
    let transcript = layout
        .run_dir
        .join("attempts")
        .join(format!("{id}.structural.log"));
    let header = format!(
        "swarm run {name} task {id}: a syntax-aware merge ({}) of {}\ncwd: {}\n",
        tool.version,
        slot.conflict.join(", "),
        path.display()
    );
    let timeout = task.timeout.unwrap_or(settings.task_timeout);
    let mut invocation = Invocation::shell(
        &command,
        path.clone(),
        timeout,
        transcript,
        settings.transcript_cap,
        header,
    );
    let mut env: Vec<(String, String)> = vec![
        ("SWARM_RUN_ID".to_owned(), name.clone()),
        ("SWARM_TASK_ID".to_owned(), id.to_owned()),
        ("SWARM_RESOLVING".to_owned(), "1".to_owned()),
        ("SWARM_ACTIVE".to_owned(), "1".to_owned()),
    ];
    env.extend(super::super::attempt_env(&mut ex.ports, i, &tmp));
    let confined = settings
        .confine
        .confines()
        .then(|| super::confined(&ex.out, true, &path, &tmp, &env, Vec::new(), Vec::new()));
    invocation.env = env;
    let check = task.check.clone().or_else(|| settings.check.clone());
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
            message: format!(
                "Merge swarm task {id} of run {name}, conflicts resolved by a syntax-aware merge ({})",
                tool.version
            ),
            by: ResolvedBy::Structural(sides.map(drop)),
        },
        invocation,
        builtin: None,
        parser: None,
        acp: None,
        deps_dir: None,
        user_checkout: ex.out.repo.workdir().to_owned(),
        session: None,
        prepare: settings.prepare.clone(),
        tmp,
        spawn_file: None,
        confined,
    };
    started(ex, id, &path, tip, job)
}

/// A rung's `job` in the checkout at `path`, from `tip`, recorded and said as started.
fn started(
    ex: &mut Exec<'_>,
    id: &str,
    path: &std::path::Path,
    tip: &CommitId,
    job: Job,
) -> anyhow::Result<Job> {
    ex.out.record.task_event(
        id,
        RunEvent::ResolverStarted {
            path: path.display().to_string(),
            tip: tip.to_string(),
        },
    )?;
    ex.tell(&Told::ResolverStarted(id.to_owned()));
    Ok(job)
}

/// `s` as one word of a shell command.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Writer `i`'s one bounded resolver attempt by its agent, in a fresh worktree at the
/// integration tip `tip` holding the conflicted merge, recorded as started; or, to `redo`, its
/// task done again there by its agent (the worktree at the tip as it is), told what its
/// earlier attempt changed and where that conflicted.
fn resolver(
    core: &Core<'_>,
    ex: &mut Exec<'_>,
    i: usize,
    tip: &CommitId,
    redo: bool,
) -> anyhow::Result<Job> {
    let (task, slot, settings, layout) = (
        &core.plan.tasks[i],
        &core.slots[i],
        ex.out.settings,
        ex.out.layout,
    );
    // A `run` task marked `repeat` is done again by running its command.
    let rerun = match &task.action {
        crate::plan::Action::Run(cmd) if redo => Some(cmd.clone()),
        _ => None,
    };
    let agent = match &rerun {
        Some(cmd) => Agent::Exec(cmd.clone()),
        None => settings
            .resolver_agent(task.agent.as_deref(), slot.member.as_deref())
            .context("a resolver needs an agent")?,
    };
    let id = task.id.as_str();
    let theirs = slot
        .commit
        .clone()
        .context("resolving a task without a commit")?;
    let base = slot
        .start_commit
        .clone()
        .context("resolving a task without a start")?;
    let prompt = match &task.action {
        crate::plan::Action::Prompt(p) if redo => {
            let earlier = crate::git::patch(ex.out.repo, &base, &theirs)?;
            redo_prompt(p, &earlier, &slot.conflict)
        }
        _ => resolver_prompt(&task.action, &slot.conflict),
    };
    let mut argv = Vec::new();
    let mut cli = None;
    let mut acp = None;
    let (command, stdin, builtin) = match agent {
        Agent::Exec(cmd) => (cmd, Some(prompt).filter(|_| rerun.is_none()), None),
        Agent::Cli(profile) => {
            let profile = if settings.confine.confines() {
                profile.under_confinement()
            } else {
                profile
            };
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
                must_change: false,
            }),
        ),
    };
    let path = layout.worktree(id, Checkout::Resolver);
    let transcript = layout.run_dir.join("attempts").join(if redo {
        format!("{id}.redo.log")
    } else {
        format!("{id}.resolve.log")
    });
    let name = &layout.run;
    let tmp = ex.scratch.acquire(i);
    let mut env: Vec<(String, String)> = cli
        .iter()
        .flat_map(|p| p.set_env.iter().cloned())
        .chain([
            ("SWARM_RUN_ID".to_owned(), name.clone()),
            ("SWARM_TASK_ID".to_owned(), id.to_owned()),
            ("SWARM_MODE".to_owned(), "write".to_owned()),
            (
                if redo {
                    "SWARM_REDO"
                } else {
                    "SWARM_RESOLVING"
                }
                .to_owned(),
                "1".to_owned(),
            ),
            ("SWARM_ACTIVE".to_owned(), "1".to_owned()),
        ])
        .collect();
    let (id, timeout) = (id.to_owned(), task.timeout.unwrap_or(settings.task_timeout));
    let check = task.check.clone().or_else(|| settings.check.clone());
    env.extend(super::super::attempt_env(&mut ex.ports, i, &tmp));
    let (slot, id) = (&core.slots[i], id.as_str());
    let doing = if redo {
        "its task done again on the integration tip after a merge conflict"
    } else {
        "resolving a merge conflict"
    };
    let header = format!(
        "swarm run {name} task {id}: {doing}\ncwd: {}\n",
        path.display()
    );
    let mut invocation = Invocation::shell(
        &command,
        path.clone(),
        timeout,
        transcript,
        settings.transcript_cap,
        header,
    );
    invocation.argv = argv;
    invocation.stdin = stdin;
    let confined = settings.confine.confines().then(|| {
        let writes = cli
            .iter()
            .flat_map(super::attempt::profile_writes)
            .collect();
        super::confined(&ex.out, true, &path, &tmp, &env, writes, Vec::new())
    });
    invocation.env = env;
    invocation.stall = settings.stall_timeout;
    if let Some(p) = &cli {
        invocation.env_drop.clone_from(&p.drop_env);
        invocation.env_pass.clone_from(&p.pass_env);
    }
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
            message: if redo {
                format!("swarm task {id} of run {name}, done again on the integration tip")
            } else {
                format!("Merge swarm task {id} of run {name}, conflicts resolved")
            },
            by: if redo {
                ResolvedBy::Redo
            } else {
                ResolvedBy::Agent
            },
        },
        invocation,
        builtin,
        parser: cli
            .filter(|p| p.kind == crate::agent::cli::Kind::Cli)
            .map(|p| p.parser),
        acp,
        deps_dir: None,
        user_checkout: ex.out.repo.workdir().to_owned(),
        session: None,
        prepare: settings.prepare.clone(),
        tmp,
        spawn_file: None,
        confined,
    };
    started(ex, id, &path, tip, job)
}
