//! Preparing an attempt, for the executor: its directory (a shared snapshot for a reader, a
//! checkout of its own for a writer), its prompt or deps files, its environment, and the record
//! of its start. The executor hands the job to the pool.

use anyhow::Context as _;

use super::super::Checkout;
use super::super::core::Core;
use super::super::job::{DepsDir, Job, JobKind};
use super::super::prompt::{compose_prompt, with_lessons};
use super::{Exec, Outlets, changed_paths, missing_deps};
use crate::agent::acp::{Acp, Resume};
use crate::agent::cli::{Kind, Session, Sessions};
use crate::agent::openai::Builtin;
use crate::agent::tools::Access;
use crate::agent::{Agent, Invocation};
use crate::git::CommitId;
use crate::plan::{Action, Mode};
use crate::ui::Told;

/// The deps directory of `run` tasks without deps: no task id can have this name.
pub(in crate::schedule) const NO_DEPS_DIR: &str = "(none)";

/// Task `i`'s attempt `attempt`, recorded as started, from the integration tip `tip`, with
/// `running` attempts in this process's slots (this one included).
pub(super) fn prepare(
    core: &mut Core<'_>,
    ex: &mut Exec<'_>,
    i: usize,
    attempt: u32,
    tip: &CommitId,
    running: usize,
) -> anyhow::Result<Job> {
    let (settings, layout, repo) = (ex.out.settings, ex.out.layout, ex.out.repo);
    let task = &core.plan.tasks[i];
    let id = task.id.as_str();
    let continuing = continued_session(core, layout, i, attempt - 1);
    if attempt > 1 {
        file_left_stdout(layout, id, attempt - 1, settings.transcript_cap);
    }
    let transcript = layout
        .run_dir
        .join("attempts")
        .join(format!("{id}.{attempt}.log"));
    let mut notes = String::new();
    let mut start_commit = None;
    let (cwd, kind) = match task.mode {
        Mode::Read => {
            let (path, missing) = ex.checkouts.acquire_snapshot(repo, tip)?;
            notes = super::super::included_note(&settings.prepare.include, &missing);
            ex.hold_snapshot(i, tip.clone());
            (
                path,
                JobKind::Reader {
                    commit: tip.clone(),
                },
            )
        }
        Mode::Write => {
            let path = layout.worktree(id, Checkout::Task);
            // A continued writer goes on from where its checkout started.
            let start = match (&continuing, &core.slots[i].start_commit) {
                (Some(_), Some(start)) => start.clone(),
                _ => tip.clone(),
            };
            start_commit = Some(start.clone());
            (
                path.clone(),
                JobKind::Writer {
                    branch: layout.branch(id, Checkout::Task),
                    keep_as: layout.kept_branch(id, Checkout::Task, attempt),
                    start,
                    check: task.check.clone().or_else(|| settings.check.clone()),
                    message: format!(
                        "{}\n\nswarm task {id} of run {}",
                        task.title.as_deref().unwrap_or(id),
                        layout.run
                    ),
                    reuse: if continuing.is_some() {
                        None
                    } else {
                        ex.checkouts.take_set_aside()
                    },
                    in_place: continuing.is_some(),
                    must_change: must_change(task, settings),
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
            repo.workdir()
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        ),
    ];
    if let Some(trace) = &settings.trace {
        // The attempt's span in the run's trace, for an agent that exports its own; the
        // trace is told what runs it.
        env.push((
            "TRACEPARENT".to_owned(),
            crate::trace::traceparent(&layout.run, id, attempt),
        ));
        let member = core.slots[i].member.as_deref();
        let doer = match &task.action {
            Action::Run(_) => Some(crate::trace::AgentInfo {
                doer: crate::trace::Doer::Command,
                name: "run".to_owned(),
                ..crate::trace::AgentInfo::default()
            }),
            Action::Prompt(_) => settings
                .attempt_agent(task.agent.as_deref(), member)
                .map(|a| {
                    let name = member.or(task.agent.as_deref());
                    crate::trace::agent_info(name, &a, settings.llm.as_ref())
                }),
        };
        if let Some(doer) = doer {
            trace.doer(id, attempt, doer);
        }
    }
    let tmp = ex.scratch.acquire(i);
    env.extend(super::super::attempt_env(&mut ex.ports, i, &tmp));
    let mailbox = crate::agent::steer::mailbox(&layout.run_dir, id);
    env.push((
        crate::agent::steer::VAR.to_owned(),
        mailbox.display().to_string(),
    ));
    // What the agent may spawn, and where it writes it, when it may spawn at all: else it
    // is told of no spawn file, and the built-in agent gets no tool to add tasks. No earlier
    // attempt had this number (each is recorded before it starts), so no file an earlier one
    // wrote is taken for it.
    let capacity = core.spawns.capacity(
        &core.plan.tasks[i].id,
        running,
        settings.jobs,
        std::time::Instant::now(),
    );
    let spawn_file = capacity
        .may_spawn(&settings.spawn)
        .then(|| transcript.with_extension("spawn.jsonl"));
    if let Some(file) = &spawn_file {
        env.push(("SWARM_SPAWN".to_owned(), file.display().to_string()));
        env.push((
            "SWARM_CAPACITY".to_owned(),
            serde_json::to_string(&capacity).unwrap_or_default(),
        ));
    }
    let task = &core.plan.tasks[i];
    // A task that runs on what finished (a reducer) is told which of its deps have no result
    // for it, and why; the others' results it gets as any task does.
    let missing = if task.lane.runs_on_what_finished() {
        missing_deps(core, &ex.out.record, i)?
    } else {
        Vec::new()
    };
    let deps: Vec<(String, String)> = core
        .plan
        .deps(i)
        .filter(|&d| !missing.iter().any(|(id, _)| id == core.id(d)))
        .map(|d| {
            (
                core.plan.tasks[d].id.to_string(),
                core.slots[d].result.clone().unwrap_or_default(),
            )
        })
        .collect();
    let mut builtin = None;
    let mut cli: Option<crate::agent::cli::Profile> = None;
    let mut session = None;
    let mut acp = None;
    let mut argv_run = Vec::new();
    // The lessons its agent is told, recorded with its start.
    let mut told: Vec<i64> = Vec::new();
    let (command, stdin, deps_dir) = match &task.action {
        Action::Run(cmd) => {
            // A task without deps shares one empty directory: a directory per task
            // costs more than a trivial task itself on some file systems.
            let dir = if deps.is_empty() && missing.is_empty() {
                layout.deps.join(NO_DEPS_DIR)
            } else {
                layout.deps.join(id)
            };
            env.push(("SWARM_DEPS_DIR".to_owned(), dir.display().to_string()));
            let ids = |list: &[(String, String)]| {
                list.iter()
                    .map(|(d, _)| d.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            env.push(("SWARM_DEPS".to_owned(), ids(&deps)));
            if !missing.is_empty() {
                env.push(("SWARM_DEPS_MISSING".to_owned(), ids(&missing)));
            }
            (cmd.clone(), None, Some(dir))
        }
        Action::Prompt(prompt) => {
            let agent = settings
                .attempt_agent(task.agent.as_deref(), core.slots[i].member.as_deref())
                .with_context(|| format!("task {id} has a prompt but no agent is configured"))?;
            // Paths changed by the writers among its deps.
            let changes: Vec<(String, Vec<String>)> = core
                .plan
                .deps(i)
                .filter_map(|d| {
                    Some((
                        core.plan.tasks[d].id.to_string(),
                        changed_paths(core, repo, d)?,
                    ))
                })
                .collect();
            let prompt = compose_prompt(prompt, &deps, &missing, &changes);
            let taught: Vec<&crate::store::Lesson> = settings
                .lessons
                .iter()
                .filter(|l| task.mode == crate::plan::Mode::Write && l.about(&task.files))
                .collect();
            told = taught.iter().map(|l| l.id).collect();
            let prompt = with_lessons(prompt, &taught);
            // What a person sent the task since its last attempt comes first; the built-in
            // agent takes it from the mailbox itself, before each request.
            let prompt = if matches!(agent, Agent::OpenAi) {
                prompt
            } else {
                let mut steered: Vec<String> = crate::agent::steer::take(&mailbox)
                    .iter()
                    .map(|t| crate::agent::steer::framed(t))
                    .collect();
                steered.push(prompt);
                steered.join("\n\n")
            };
            match agent {
                Agent::Exec(cmd) => (cmd, Some(prompt), None),
                Agent::Cli(profile) => {
                    let profile = if settings.confine.confines() {
                        profile.under_confinement()
                    } else {
                        profile
                    };
                    let named = (profile.sessions == Sessions::Claude).then(new_session_id);
                    let (argv, shown) = match (&continuing, &named) {
                        (Some(s), _) => profile.argv(task.mode, Session::Continue(s)),
                        (None, named) => profile.argv(task.mode, Session::New(named.as_deref())),
                    };
                    session = continuing.clone().or(named);
                    // swarm's own variables come last: no profile sets them.
                    env.splice(0..0, profile.set_env.iter().cloned());
                    argv_run = argv;
                    if profile.kind == Kind::Acp {
                        // The agent says only once started whether it can continue the
                        // session: it gets both prompts.
                        acp = Some(Acp {
                            prompt,
                            access: match task.mode {
                                Mode::Read => Access::Read,
                                Mode::Write => Access::Write,
                            },
                            allowed_programs: settings.builtin.allowed_programs.clone(),
                            resume: continuing.clone().map(|session| Resume {
                                session,
                                prompt: CONTINUE_PROMPT.to_owned(),
                            }),
                        });
                        cli = Some(profile);
                        (shown, None, None)
                    } else {
                        // The session has the task already: it is told what happened instead.
                        let prompt = if continuing.is_some() {
                            CONTINUE_PROMPT.to_owned()
                        } else {
                            prompt
                        };
                        cli = Some(profile);
                        (shown, Some(prompt), None)
                    }
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
                        must_change: must_change(task, settings),
                    });
                    ("(built-in agent)".to_owned(), None, None)
                }
            }
        }
    };
    let timeout = task.timeout.unwrap_or(settings.task_timeout);
    let writes_checkout = task.mode == Mode::Write;
    let header = format!(
        "swarm run {} task {id} attempt {attempt}\nmode: {}\ncwd: {}\ncommand: {}\n{notes}",
        layout.run,
        task.mode.as_str(),
        cwd.display(),
        command
    );
    let stdout_file = cli
        .as_ref()
        .filter(|p| p.sessions == Sessions::Codex)
        .map(|_| codex_stdout(layout, id, attempt));
    let started = Started {
        attempt,
        transcript: &transcript,
        cwd: &cwd,
        session: session.as_deref(),
        continued: continuing.is_some(),
    };
    let writer = match &kind {
        JobKind::Writer { start, reuse, .. } => Some((start, reuse.as_deref())),
        _ => None,
    };
    record_start(core, &mut ex.out, i, &started, writer)?;
    if !told.is_empty() {
        ex.out
            .record
            .task_event(id, crate::store::RunEvent::Told { lessons: told })?;
    }
    core.prepared(i, start_commit, session.clone());
    let mut invocation = Invocation::shell(
        &command,
        cwd,
        timeout,
        transcript,
        settings.transcript_cap,
        header,
    );
    // A command's stdout is its result, on the board; a coding agent's is its events.
    invocation.result_on_board = cli.is_none() && acp.is_none() && builtin.is_none();
    invocation.header_notes = !notes.is_empty();
    let confined = settings.confine.confines().then(|| {
        let may_write = spawn_file
            .iter()
            .cloned()
            .chain(cli.iter().flat_map(profile_writes))
            .collect();
        // The run's deps directories, all of them: one rule for every task, so that tasks
        // share their read rules (what a task's deps left is the run's, not a secret). It is
        // made now: a rule names only what is there, and the rules are kept for the run.
        let may_read = deps_dir
            .iter()
            .filter(|_| std::fs::create_dir_all(&layout.deps).is_ok())
            .map(|_| layout.deps.clone())
            .collect();
        super::confined(
            &ex.out,
            writes_checkout,
            &invocation.cwd,
            &tmp,
            &env,
            may_write,
            may_read,
        )
    });
    invocation.argv = argv_run;
    invocation.stdin = stdin;
    invocation.env = env;
    // The built-in agent runs in swarm; its requests have their own timeout.
    invocation.stall = settings.stall_timeout.filter(|_| builtin.is_none());
    invocation.stdout_file = stdout_file;
    if let Some(p) = &cli {
        invocation.env_drop.clone_from(&p.drop_env);
        invocation.env_pass.clone_from(&p.pass_env);
    }
    Ok(Job {
        task: i,
        attempt,
        kind,
        invocation,
        builtin,
        parser: cli.filter(|p| p.kind == Kind::Cli).map(|p| p.parser),
        acp,
        deps_dir: deps_dir
            .filter(|_| !deps.is_empty() || !missing.is_empty())
            .map(|dir| DepsDir {
                dir,
                results: deps,
                missing,
            }),
        user_checkout: repo.workdir().to_owned(),
        session,
        prepare: settings.prepare.clone(),
        tmp,
        spawn_file,
        confined,
    })
}

/// What an agent's profile says it writes besides its checkout and TMPDIR, as paths of this
/// machine (those whose variable is not set left out), for a confined attempt. A directory
/// (named with a trailing `/`) that is not there yet is made, as the agent would make it: a
/// rule can name only what is there.
pub(super) fn profile_writes(profile: &crate::agent::cli::Profile) -> Vec<std::path::PathBuf> {
    profile
        .writes
        .iter()
        .filter_map(|p| {
            let path = crate::agent::confine::expand(p)?;
            if p.ends_with('/') {
                let _ = std::fs::create_dir_all(&path);
            }
            Some(path)
        })
        .collect()
}

/// An attempt as its start is recorded.
pub(super) struct Started<'p> {
    pub(super) attempt: u32,
    pub(super) transcript: &'p std::path::Path,
    pub(super) cwd: &'p std::path::Path,
    pub(super) session: Option<&'p str>,
    pub(super) continued: bool,
}

/// Records task `i`'s attempt as started (a writer's with its start commit and the checkout it
/// reuses), on the board and the terminal.
pub(super) fn record_start(
    core: &Core<'_>,
    out: &mut Outlets<'_>,
    i: usize,
    a: &Started<'_>,
    writer: Option<(&CommitId, Option<&std::path::Path>)>,
) -> anyhow::Result<()> {
    let id = core.id(i);
    let member = core.slots[i].member.as_deref();
    out.record.attempt_started(id, a, member)?;
    if let Some((start, reuse)) = writer {
        let branch = out.layout.branch(id, Checkout::Task);
        out.record
            .writer_started(id, start, &branch, a.cwd, reuse)?;
    }
    out.ui.tell(&Told::Started {
        id: id.to_owned(),
        attempt: a.attempt,
    });
    Ok(())
}

/// Task `i`'s attempt `attempt`, from the integration tip `tip`, recorded as started for a
/// worker on another machine to run (see `remote`): the worker makes its directory, prompt and
/// environment.
pub(super) fn start_remote(
    core: &mut Core<'_>,
    out: &mut Outlets<'_>,
    i: usize,
    attempt: u32,
    tip: &CommitId,
) -> anyhow::Result<()> {
    let layout = out.layout;
    let task = &core.plan.tasks[i];
    let id = task.id.as_str();
    let transcript = layout
        .run_dir
        .join("attempts")
        .join(format!("{id}.{attempt}.log"));
    // The checkout is the worker's; the board names where this machine would have it.
    let cwd = layout.worktree(id, Checkout::Task);
    let writes = task.mode == Mode::Write;
    let started = Started {
        attempt,
        transcript: &transcript,
        cwd: &cwd,
        session: None,
        continued: false,
    };
    record_start(core, out, i, &started, writes.then_some((tip, None)))?;
    core.prepared(i, writes.then(|| tip.clone()), None);
    Ok(())
}

/// What a continued session is told: the task itself is in it already.
const CONTINUE_PROMPT: &str = "Your work on this task was cut short before you finished (a timeout, a usage limit, or swarm was stopped). Everything you did is still here: the files you changed are in this directory as you left them. Go on from where you stopped, finish the task, and then give your final answer as the task asks.";

/// The session of task `i`'s last attempt (`last`), when this attempt is to continue it:
/// that attempt was cut short, its agent keeps sessions swarm can continue, retries are not to
/// start afresh, and a writer's checkout is still as it left it.
fn continued_session(
    core: &Core<'_>,
    layout: &super::Layout,
    i: usize,
    last: u32,
) -> Option<String> {
    let (task, slot, settings) = (&core.plan.tasks[i], &core.slots[i], core.settings);
    if settings.fresh_retries || !matches!(task.action, Action::Prompt(_)) {
        return None;
    }
    let Some(Agent::Cli(profile)) =
        settings.attempt_agent(task.agent.as_deref(), slot.member.as_deref())
    else {
        return None;
    };
    // A Codex attempt a killed swarm never saw end left its stdout, and its thread in it.
    let left = || {
        let out = codex_stdout(layout, task.id.as_str(), last);
        // Codex names its thread in its first event; the agent may have put anything there.
        let text = crate::planted::read_start(&out, crate::agent::RESULT_CAP as u64).ok()?;
        let text = String::from_utf8_lossy(&text);
        crate::agent::cli::parse(profile.parser, &text, &crate::agent::cli::Now::here()).session
    };
    let session = slot.session.clone().or_else(|| {
        (profile.sessions == Sessions::Codex && last > 0)
            .then(left)
            .flatten()
    })?;
    let here = match task.mode {
        Mode::Read => true,
        Mode::Write => {
            slot.start_commit.is_some()
                && layout
                    .worktree(task.id.as_str(), Checkout::Task)
                    .join(".git")
                    .exists()
        }
    };
    (profile.sessions != Sessions::None && here).then_some(session)
}

/// Where a Codex attempt's stdout is while it runs: a swarm killed meanwhile finds the thread
/// to continue there (Codex names it only in its first event).
fn codex_stdout(layout: &super::super::Layout, id: &str, attempt: u32) -> std::path::PathBuf {
    layout
        .run_dir
        .join("attempts")
        .join(format!("{id}.{attempt}.stdout"))
}

/// What an attempt a killed swarm never saw end printed goes into its transcript, once the next
/// attempt has read it.
fn file_left_stdout(layout: &super::super::Layout, id: &str, attempt: u32, cap: u64) {
    use crate::agent::transcript::Transcript;
    let left = codex_stdout(layout, id, attempt);
    let Ok(mut text) = crate::planted::open(&left) else {
        return;
    };
    let transcript = layout
        .run_dir
        .join("attempts")
        .join(format!("{id}.{attempt}.log"));
    // Within what the cap leaves of the transcript, as the attempt's own stdout would be.
    let kept = Transcript::reopen(&transcript, cap).and_then(|mut t| {
        t.note("--- stdout (the attempt was cut short by the end of swarm) ---\n")?;
        let mut stdout = t.stream(t.room());
        stdout.copy_from(&mut text)?;
        t.end(stdout)?;
        t.redact()
    });
    if kept.is_ok() {
        let _ = std::fs::remove_file(left);
    }
}

/// A new session id, as Claude Code takes it: a random (version 4) UUID.
fn new_session_id() -> String {
    use std::io::Read as _;
    let mut b = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b));
    if read.is_err() {
        // Unique enough for one machine's sessions: the time and this process.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        b = (now ^ (u128::from(std::process::id()) << 96)).to_le_bytes();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex = b.iter().fold(String::new(), |mut s, x| {
        use std::fmt::Write as _;
        let _ = write!(s, "{x:02x}");
        s
    });
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// Whether `task`'s agent changing nothing fails its attempt: a writer's does, unless the task
/// may be empty or the run allows it.
fn must_change(task: &crate::plan::Task, settings: &crate::schedule::Settings) -> bool {
    task.mode == Mode::Write && !task.may_be_empty && !settings.allow_no_change
}
