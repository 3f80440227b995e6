//! The subcommands: each gathers its inputs, then hands the work to plan, schedule, git, store
//! and report, and returns the exit code.

use std::fs::File;
use std::io::{Read as _, Seek as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde_json::json;

use std::collections::BTreeMap;

use crate::agent::Agent;
use crate::agent::cli::Profile;
use crate::cli::{Cli, Command, Land, QueueAction, RunOptions};
use crate::git::{CommitId, Landing, Repo};
use crate::llm::{Client, Endpoint, Limits};
use crate::plan::{Action, Plan};
use crate::report::{self, Facts, GoalFacts, Parked};
use crate::schedule::{BuiltinLimits, Ending, GoalRun, Layout, Scheduler, Settings};
use crate::store::{
    Board, Event, GoalRecord, GoalStatus, RunRecord, RunStatus, TaskRecord, TaskStatus,
};
use crate::ui::{self, Ui};
use crate::{Busy, Usage, exit};

mod goal;
mod inspect;
mod output;
mod queue;

use inspect::{gc, graph, logs, status};

/// Defaults of run options, as `--help` states them.
const DEFAULT_JOBS: u32 = 4;
const DEFAULT_RETRIES: u32 = 1;
const DEFAULT_TIMEOUT: &str = "30m";
const KILL_GRACE: Duration = Duration::from_secs(2);
const RETRY_BACKOFF: Duration = Duration::from_secs(1);
const DEFAULT_REQUEST_TIMEOUT: &str = "5m";
const DEFAULT_MAX_TURNS: u32 = 40;
const DEFAULT_MAX_TASK_TOKENS: u64 = 400_000;
/// Tries of one model request, and the longest wait between two.
const LLM_ATTEMPTS: u32 = 8;
const LLM_MAX_WAIT: Duration = Duration::from_secs(60);
/// The longest a provider's usage limit may pause a run before it stops (resumable).
const MAX_LIMIT_WAIT: Duration = Duration::from_secs(3600);
/// A reducer takes at most this many results: each may fill `DEP_RESULT_CAP` of its prompt.
const MAX_FAN_IN: usize = 8;

/// Global flags every subcommand sees.
struct Globals {
    dir: PathBuf,
    quiet: bool,
    json: bool,
}

pub fn dispatch(cli: Cli) -> anyhow::Result<u8> {
    let dir = match cli.directory {
        Some(d) => d,
        None => std::env::current_dir().context("could not read the current directory")?,
    };
    let g = Globals {
        dir,
        quiet: cli.quiet,
        json: cli.json,
    };
    let explicit = cli.config.as_deref();
    if cli.command.is_some()
        && (!cli.goal.is_empty()
            || cli.goals_file.is_some()
            || cli.plan_out.is_some()
            || cli.plan_only
            || serde_json::to_value(&cli.options)? != serde_json::to_value(RunOptions::default())?)
    {
        bail!(Usage::new(
            "--goal, --plan-out, --plan-only and run options go without a subcommand; a subcommand's options go after it"
        )
        .hint("e.g. `swarm run tasks.jsonl -j 8`, or `swarm --goal \"…\" -j 8`"));
    }
    let Some(command) = cli.command else {
        let mut goals = cli.goal;
        if let Some(file) = &cli.goals_file {
            goals.extend(goal::read_goals_file(&g.dir.join(file))?);
        }
        let mut configured = configure(&g, &cli.options, explicit)?;
        land_from_hook(&mut configured.options, cli.from_hook);
        if let [one] = goals.as_slice()
            && cli.goals_file.is_none()
        {
            return goal::run_goal(&g, one, cli.plan_out.as_deref(), cli.plan_only, &configured);
        }
        if cli.plan_out.is_some() || cli.plan_only {
            bail!(Usage::new("--plan-out and --plan-only take one goal").hint(
                "with several goals, a goal that needs others is planned only once they are merged"
            ));
        }
        return goal::run_goals(&g, &goals, false, &configured);
    };
    match command {
        Command::Run { tasks, options } => {
            let mut configured = configure(&g, &options, explicit)?;
            land_from_hook(&mut configured.options, cli.from_hook);
            run_file(&g, &tasks, &configured)
        }
        Command::Resume { run, options } => {
            // A run keeps the options it started with; only the profiles are read anew.
            let configured = configure(&g, &RunOptions::default(), explicit)?;
            resume(&g, run.as_deref(), options, &configured.profiles)
        }
        Command::Config { options } => {
            let config = load_config(&g, &options, explicit)?;
            if g.json {
                ui::out(&serde_json::to_string_pretty(&crate::config::to_json(
                    &config,
                ))?);
            } else {
                ui::out(&crate::config::describe(&config));
            }
            Ok(exit::OK)
        }
        Command::Status { run } => status(&g, run.as_deref()),
        Command::Logs {
            run,
            errors,
            tail,
            follow,
            path,
        } => logs(&g, run.as_deref(), errors, tail, follow, path),
        Command::Graph { source, format } => graph(&g, source.as_deref(), format),
        Command::Gc { dry_run } => gc(&g, dry_run),
        Command::Queue { action } => match action {
            QueueAction::Add { text } => queue::add(&g, &text.join(" ")),
            QueueAction::List => queue::list(&g),
            QueueAction::Rm { id } => queue::remove(&g, id),
            QueueAction::Run { options } => {
                let mut configured = configure(&g, &options, explicit)?;
                land_from_hook(&mut configured.options, cli.from_hook);
                queue::run(&g, &configured)
            }
        },
        Command::Completions { shell } => {
            let mut cmd = crate::cli::command();
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut cmd, "swarm", &mut buf);
            ui::out(&String::from_utf8_lossy(&buf));
            Ok(exit::OK)
        }
    }
}

/// Inside a git hook, landing defaults to `branch`: git is in the middle of changing the
/// checkout (a `pre-commit` holds the index and moves HEAD next), so swarm must not. The run
/// keeps the choice, so a resume outside the hook does not land either.
fn land_from_hook(options: &mut RunOptions, from_hook: bool) {
    let in_hook = from_hook
        || ["GIT_INDEX_FILE", "GIT_DIR"]
            .iter()
            .any(|v| std::env::var_os(v).is_some());
    if in_hook && options.land.is_none() {
        options.land = Some(Land::Branch);
    }
}

/// What a run checks before anything is recorded: that it could land, and that every output
/// path is good (see `output::check`).
fn check_before_run(
    g: &Globals,
    repo: &Repo,
    options: &RunOptions,
    reads: &Reads<'_>,
) -> anyhow::Result<()> {
    check_open_operation(repo, options)?;
    output::check_all(
        repo,
        &g.dir,
        g.quiet,
        &[
            (
                "--final-out",
                options.final_out.as_deref(),
                output::Kind::File,
            ),
            (
                "--final-out-dir",
                options.final_out_dir.as_deref(),
                output::Kind::Dir,
            ),
            ("--plan-out", reads.plan_out, output::Kind::File),
        ],
        &reads.files,
    )
}

/// Refuses a run that would land while git has an operation open in the checkout.
fn check_open_operation(repo: &Repo, options: &RunOptions) -> anyhow::Result<()> {
    if !matches!(options.land, None | Some(Land::Auto)) {
        return Ok(());
    }
    if let Some(op) = repo.open_operation() {
        bail!(
            Usage::new(format!(
                "a {op} is in progress in {}; a run that lands would change the checkout under it",
                repo.workdir().display()
            ))
            .hint(format!(
                "finish or abort the {op} first, or pass --land branch (the work then waits on its branch)"
            ))
        );
    }
    Ok(())
}

/// Run options after the configuration layers, and the agent profiles.
struct Configured {
    options: RunOptions,
    profiles: BTreeMap<String, Profile>,
}

fn load_config(
    g: &Globals,
    flags: &RunOptions,
    explicit: Option<&Path>,
) -> anyhow::Result<crate::config::Config> {
    let root = Repo::discover(&g.dir).ok().map(|r| r.workdir().to_owned());
    let env = |name: &str| std::env::var(name).ok();
    let explicit = explicit.map(|p| {
        if p.is_absolute() {
            p.to_owned()
        } else {
            g.dir.join(p)
        }
    });
    crate::config::load(root.as_deref(), flags, &env, explicit.as_deref()).map_err(|e| {
        anyhow::Error::new(
            Usage::new(e.to_string())
                .hint("`swarm config` shows the settings and where they come from"),
        )
    })
}

/// Flags over `SWARM_*` variables over `.swarm.toml` over the user's config over defaults.
fn configure(
    g: &Globals,
    flags: &RunOptions,
    explicit: Option<&Path>,
) -> anyhow::Result<Configured> {
    let config = load_config(g, flags, explicit)?;
    let mut profiles = BTreeMap::new();
    for (name, (spec, file)) in &config.profiles {
        let profile = profile_from(name, spec).map_err(|e| {
            anyhow::Error::new(Usage::new(format!(
                "{}: [agents.{name}]: {e}",
                file.display()
            )))
        })?;
        profiles.insert(name.clone(), profile);
    }
    Ok(Configured {
        options: config.options,
        profiles,
    })
}

/// A profile from its `[agents.NAME]` table, over the built-in one of that name if any.
fn profile_from(name: &str, spec: &crate::config::ProfileSpec) -> Result<Profile, String> {
    use crate::agent::cli::{Parser, claude_profile, codex_profile};
    let mut p = match name {
        "claude" => claude_profile(),
        "codex" => codex_profile(),
        _ => Profile {
            name: name.to_owned(),
            command: spec.command.clone().ok_or("a profile needs a `command`")?,
            reader_args: Vec::new(),
            writer_args: Vec::new(),
            parser: Parser::Text,
            drop_env: Vec::new(),
            pass_env: Vec::new(),
        },
    };
    if let Some(c) = &spec.command {
        p.command.clone_from(c);
    }
    if let Some(a) = &spec.args {
        p.reader_args.clone_from(a);
        p.writer_args.clone_from(a);
    }
    if let Some(a) = &spec.reader_args {
        p.reader_args.clone_from(a);
    }
    if let Some(a) = &spec.writer_args {
        p.writer_args.clone_from(a);
    }
    if let Some(parser) = &spec.parser {
        p.parser =
            Parser::parse_name(parser).ok_or_else(|| format!("unknown parser {parser:?}"))?;
    }
    if let Some(e) = &spec.pass_env {
        p.pass_env.clone_from(e);
    }
    if let Some(e) = &spec.drop_env {
        p.drop_env.clone_from(e);
    }
    Ok(p)
}

/// A nested swarm started by one of swarm's own agents or hooks does nothing.
fn refuse_when_nested(g: &Globals) -> Option<u8> {
    if std::env::var_os("SWARM_ACTIVE").is_some_and(|v| !v.is_empty() && v != "0") {
        ui::say(
            g.quiet,
            "Skipping",
            "swarm is running inside a swarm task or hook (SWARM_ACTIVE is set); doing nothing",
        );
        return Some(exit::OK);
    }
    None
}

fn open_repo(g: &Globals) -> anyhow::Result<Repo> {
    Repo::discover(&g.dir).map_err(|e| {
        anyhow::Error::new(
            Usage::new(format!("{e:#}")).hint("run swarm inside a git checkout, or pass -C DIR"),
        )
    })
}

fn open_board(repo: &Repo) -> anyhow::Result<Board> {
    Board::open(&repo.common_dir().join("swarm"))
}

/// The repository's run lock: held for the life of the process, released by the OS when the
/// process ends however it ends, so a holder that died never blocks.
struct Lock {
    _file: File,
}

impl Lock {
    fn acquire(repo: &Repo, run: &str) -> anyhow::Result<Self> {
        let dir = repo.common_dir().join("swarm");
        std::fs::create_dir_all(&dir)?;
        let path = dir.join("lock");
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("could not open {}", path.display()))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(Busy {
                    holder: if holder.is_empty() {
                        "a process that has not yet said which run".to_owned()
                    } else {
                        holder.to_owned()
                    },
                }
                .into());
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("could not lock {}", path.display()));
            }
        }
        file.set_len(0)?;
        file.rewind()?;
        writeln!(file, "pid {}, run {run}", std::process::id())?;
        Ok(Self { _file: file })
    }
}

/// Run ids: UTC time and four hex digits, `20261129-071300-ab12`.
fn new_run_id() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs();
    let (y, mo, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    let salt = (now.subsec_nanos() ^ std::process::id().rotate_left(16)) & 0xffff;
    format!(
        "{y:04}{mo:02}{d:02}-{:02}{:02}{:02}-{salt:04x}",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Where worktrees go by default: the user cache dir.
fn cache_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(x);
    }
    match std::env::var_os("HOME") {
        Some(h) if cfg!(target_os = "macos") => PathBuf::from(h).join("Library/Caches"),
        Some(h) => PathBuf::from(h).join(".cache"),
        None => std::env::temp_dir(),
    }
}

/// `<root>/<repo name>-<hash of its git dir>`: one folder per repository.
fn worktree_root(repo: &Repo, configured: Option<&Path>) -> anyhow::Result<PathBuf> {
    let root = match configured {
        Some(d) => std::path::absolute(d)?,
        None => cache_dir().join("swarm").join("worktrees"),
    };
    let name = repo
        .workdir()
        .file_name()
        .map_or_else(|| "repo".into(), |n| n.to_string_lossy().into_owned());
    // FNV-1a: stable across versions, unlike the std hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in repo.common_dir().as_os_str().as_encoded_bytes() {
        hash = (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    let dir = root.join(format!("{name}-{:08x}", hash as u32));
    let workdir = std::fs::canonicalize(repo.workdir())?;
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("could not create the worktree directory {}", dir.display()))?;
    if std::fs::canonicalize(&dir)?.starts_with(&workdir) {
        bail!(
            Usage::new(format!(
                "the worktree directory {} is inside your checkout {}",
                dir.display(),
                workdir.display()
            ))
            .hint("point --worktree-dir (or SWARM_WORKTREE_DIR) outside the repository")
        );
    }
    Ok(dir)
}

/// Where `run` tasks find their deps' results (`$SWARM_DEPS_DIR`): a directory of the user's
/// own in memory (`/dev/shm/swarm-<uid>/<run>`) where the system has one, since thousands of
/// small files cost far more to create on a disk file system than a trivial task costs to run;
/// else `deps/` in the run's directory. Either way it is only a view of results the board
/// holds, rewritten for every attempt and removed when the run stops.
fn deps_root(run_dir: &Path, run: &str) -> PathBuf {
    use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
    let on_disk = run_dir.join("deps");
    let shm = Path::new("/dev/shm");
    let Ok(me) = std::fs::metadata(run_dir).map(|m| m.uid()) else {
        return on_disk;
    };
    if !shm.is_dir() {
        return on_disk;
    }
    let mine = shm.join(format!("swarm-{me}"));
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&mine);
    // Anyone can create names in /dev/shm: use the directory only if it is ours and private.
    match std::fs::symlink_metadata(&mine) {
        Ok(m) if m.is_dir() && m.uid() == me && !has_any(m.mode(), 0o077) => mine.join(run),
        _ => on_disk,
    }
}

/// Whether any of the permission bits in `bits` are set in `mode`.
fn has_any(mode: u32, bits: u32) -> bool {
    mode & bits != 0
}

/// Later options win where they are set.
fn overlay(base: RunOptions, newer: RunOptions) -> RunOptions {
    RunOptions {
        jobs: newer.jobs.or(base.jobs),
        max_writers: newer.max_writers.or(base.max_writers),
        agent: newer.agent.or(base.agent),
        task_timeout: newer.task_timeout.or(base.task_timeout),
        stall_timeout: newer.stall_timeout.or(base.stall_timeout),
        retries: newer.retries.or(base.retries),
        check: newer.check.or(base.check),
        final_out: newer.final_out.or(base.final_out),
        final_out_dir: newer.final_out_dir.or(base.final_out_dir),
        base: newer.base.or(base.base),
        land: newer.land.or(base.land),
        worktree_dir: newer.worktree_dir.or(base.worktree_dir),
        on_escalate: newer.on_escalate.or(base.on_escalate),
        resolve_conflicts: newer.resolve_conflicts || base.resolve_conflicts,
        model: newer.model.or(base.model),
        api_base: newer.api_base.or(base.api_base),
        request_timeout: newer.request_timeout.or(base.request_timeout),
        max_turns: newer.max_turns.or(base.max_turns),
        max_task_tokens: newer.max_task_tokens.or(base.max_task_tokens),
        budget_tokens: newer.budget_tokens.or(base.budget_tokens),
        allow_program: if newer.allow_program.is_empty() {
            base.allow_program
        } else {
            newer.allow_program
        },
    }
}

/// The model endpoint from flags and the environment, if one is configured.
fn endpoint(o: &RunOptions) -> Option<Endpoint> {
    Endpoint::resolve(o.api_base.as_deref(), None, o.model.as_deref(), &|name| {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    })
}

/// The model client for the planner and the built-in agent, if an endpoint is configured.
fn model_client(o: &RunOptions, jobs: usize) -> anyhow::Result<Option<Client>> {
    let Some(endpoint) = endpoint(o) else {
        return Ok(None);
    };
    if let Some(key) = &endpoint.key {
        crate::secret::init(&[key.as_str()]);
    }
    let read_timeout = crate::plan::parse_duration(
        o.request_timeout
            .as_deref()
            .unwrap_or(DEFAULT_REQUEST_TIMEOUT),
    )
    .map_err(|e| Usage::new(format!("--request-timeout: {e}")))?;
    Ok(Some(Client::new(
        endpoint,
        Limits {
            connect_timeout: Duration::from_secs(10),
            read_timeout,
            max_attempts: LLM_ATTEMPTS,
            max_wait: LLM_MAX_WAIT,
            max_in_flight: jobs,
        },
    )))
}

const NO_MODEL_HINT: &str = "configure an agent: set SWARM_API_BASE (an OpenAI-compatible endpoint such as http://localhost:11434/v1) and/or SWARM_API_KEY for the built-in agent; or install the `claude` or `codex` CLI; or pass --agent exec:CMD (CMD reads the prompt on stdin and prints the result); or define a profile [agents.NAME] in .swarm.toml";

/// Resolves agent names: `auto`, `openai`, `exec:CMD`, and profiles (the built-in `claude` and
/// `codex`, and those of the configuration, which may replace them).
struct AgentNames<'a> {
    llm: bool,
    profiles: &'a BTreeMap<String, Profile>,
}

impl AgentNames<'_> {
    /// `auto`: the built-in agent when a model is configured, else `claude`, else `codex`
    /// when found on PATH, else none.
    fn auto(&self) -> Option<Agent> {
        if self.llm {
            return Some(Agent::OpenAi);
        }
        ["claude", "codex"].iter().find_map(|name| {
            let p = self.profiles.get(*name)?;
            crate::agent::on_path(&p.command).then(|| Agent::Cli(p.clone()))
        })
    }

    fn resolve(&self, name: Option<&str>) -> Result<Option<Agent>, String> {
        let name = match name {
            None | Some("auto") => return Ok(self.auto()),
            Some(n) => n,
        };
        if let Some(p) = self.profiles.get(name) {
            return Ok(Some(Agent::Cli(p.clone())));
        }
        match Agent::parse(name) {
            Ok(Agent::OpenAi) if !self.llm => Err(
                "the built-in agent (openai) needs a model endpoint, and none is configured"
                    .to_owned(),
            ),
            Ok(a) => Ok(Some(a)),
            Err(_) => {
                let known: Vec<&str> = self.profiles.keys().map(String::as_str).collect();
                Err(format!(
                    "unknown agent {name:?}: use auto, openai, exec:CMD, or a profile ({})",
                    known.join(", ")
                ))
            }
        }
    }
}

/// The built-in profiles, replaced by configured ones of the same name.
fn profiles(configured: &BTreeMap<String, Profile>) -> BTreeMap<String, Profile> {
    let mut all = BTreeMap::new();
    for p in [
        crate::agent::cli::claude_profile(),
        crate::agent::cli::codex_profile(),
    ] {
        all.insert(p.name.clone(), p);
    }
    all.extend(configured.iter().map(|(k, v)| (k.clone(), v.clone())));
    all
}

fn settings(
    o: &RunOptions,
    plan: &Plan,
    configured: &BTreeMap<String, Profile>,
) -> anyhow::Result<Settings> {
    let jobs = o.jobs.unwrap_or(DEFAULT_JOBS) as usize;
    let llm = model_client(o, jobs)?;
    let all = profiles(configured);
    let names = AgentNames {
        llm: llm.is_some(),
        profiles: &all,
    };
    let agent = names
        .resolve(o.agent.as_deref())
        .map_err(|e| Usage::new(format!("--agent: {e}")).hint(NO_MODEL_HINT))?;
    let mut problems = Vec::new();
    let mut named_agents = BTreeMap::new();
    for t in &plan.tasks {
        match t.agent.as_deref().map(|a| (a, names.resolve(Some(a)))) {
            Some((_, Err(e))) => {
                problems.push(format!("line {}: task {:?}: {e}", t.line, t.id.as_str()));
            }
            Some((a, Ok(Some(resolved)))) => {
                named_agents.insert(a.to_owned(), resolved);
            }
            Some((_, Ok(None))) | None
                if agent.is_none() && matches!(t.action, Action::Prompt(_)) =>
            {
                problems.push(format!(
                    "line {}: task {:?} has a prompt but no agent is configured",
                    t.line,
                    t.id.as_str()
                ));
            }
            _ => {}
        }
    }
    if !problems.is_empty() {
        bail!(Usage::new(format!("nothing ran:\n  {}", problems.join("\n  "))).hint(NO_MODEL_HINT));
    }
    let timeout = crate::plan::parse_duration(o.task_timeout.as_deref().unwrap_or(DEFAULT_TIMEOUT))
        .map_err(|e| Usage::new(format!("--task-timeout: {e}")))?;
    let stall_timeout = o
        .stall_timeout
        .as_deref()
        .map(crate::plan::parse_duration)
        .transpose()
        .map_err(|e| Usage::new(format!("--stall-timeout: {e}")))?;
    Ok(Settings {
        stall_timeout,
        jobs,
        max_writers: o.max_writers.map_or(jobs, |w| w as usize).min(jobs),
        retries: o.retries.unwrap_or(DEFAULT_RETRIES),
        task_timeout: timeout,
        kill_grace: KILL_GRACE,
        backoff: RETRY_BACKOFF,
        agent,
        check: o.check.clone(),
        on_escalate: o.on_escalate.clone(),
        resolve_conflicts: o.resolve_conflicts,
        llm,
        named_agents,
        max_limit_wait: MAX_LIMIT_WAIT,
        budget_tokens: o.budget_tokens,
        builtin: BuiltinLimits {
            max_turns: o.max_turns.unwrap_or(DEFAULT_MAX_TURNS),
            max_tokens: o.max_task_tokens.unwrap_or(DEFAULT_MAX_TASK_TOKENS),
            allowed_programs: o.allow_program.clone(),
        },
    })
}

fn run_file(g: &Globals, tasks: &Path, configured: &Configured) -> anyhow::Result<u8> {
    let options = &configured.options;
    if let Some(code) = refuse_when_nested(g) {
        return Ok(code);
    }
    let path = if tasks.is_absolute() {
        tasks.to_owned()
    } else {
        g.dir.join(tasks)
    };
    let plan = Plan::load(&path).map_err(|e| match e.downcast::<crate::plan::Invalid>() {
        Ok(invalid) => anyhow::Error::new(invalid),
        Err(e) => anyhow::Error::new(Usage::new(format!("{e:#}"))),
    })?;
    let settings = settings(options, &plan, &configured.profiles)?;
    let run = NewRun::begin(
        g,
        tasks.display().to_string(),
        options,
        Some(&plan),
        &Reads {
            plan_out: None,
            files: vec![path.clone()],
        },
    )?;
    run.launch(g, plan, &settings, options, None)
}

fn task_specs(plan: &Plan) -> Vec<(String, serde_json::Value)> {
    plan.tasks
        .iter()
        .map(|t| (t.id.to_string(), t.to_json()))
        .collect()
}

/// What a new run reads, which its outputs must not overwrite, and where its plan goes.
struct Reads<'a> {
    plan_out: Option<&'a Path>,
    files: Vec<PathBuf>,
}

/// A run recorded in the board and holding the lock, not yet started.
struct NewRun {
    repo: Repo,
    lock: Lock,
    board: Board,
    record: RunRecord,
    base: CommitId,
    /// Whether the plan's tasks went into the board with the run.
    tasks_stored: bool,
}

impl NewRun {
    /// Takes the repository's lock and records the run, with its tasks when the plan is known
    /// (in one transaction, so a kill never leaves a task file's run without its tasks).
    fn begin(
        g: &Globals,
        source: String,
        options: &RunOptions,
        plan: Option<&Plan>,
        reads: &Reads<'_>,
    ) -> anyhow::Result<Self> {
        let repo = open_repo(g)?;
        check_before_run(g, &repo, options, reads)?;
        let run_id = new_run_id();
        let lock = Lock::acquire(&repo, &run_id)?;
        let base_rev = options.base.clone().unwrap_or_else(|| "HEAD".to_owned());
        let base = repo.resolve(&base_rev).map_err(|e| {
            anyhow::Error::new(
                Usage::new(format!("--base {base_rev}: {e:#}"))
                    .hint("a run starts from a commit; make one first"),
            )
        })?;
        // Checked before anything is written: a bad --worktree-dir is an input error.
        worktree_root(&repo, options.worktree_dir.as_deref())?;
        let mut board = open_board(&repo)?;
        let record = RunRecord {
            id: run_id.clone(),
            created_at: crate::store::now_ms(),
            finished_at: None,
            status: RunStatus::Running,
            exit_code: None,
            source,
            base_commit: base.to_string(),
            integration_ref: format!("refs/heads/swarm/{run_id}"),
            options: serde_json::to_value(options)?,
        };
        board.create_run(&record, &plan.map(task_specs).unwrap_or_default())?;
        Ok(Self {
            repo,
            lock,
            board,
            record,
            base,
            tasks_stored: plan.is_some(),
        })
    }

    /// Stores the plan, makes the integration branch and runs it.
    fn launch(
        mut self,
        g: &Globals,
        plan: Plan,
        settings: &Settings,
        options: &RunOptions,
        goals: Option<GoalRun>,
    ) -> anyhow::Result<u8> {
        let run_id = self.record.id.clone();
        if !self.tasks_stored {
            self.board.add_tasks(&run_id, &task_specs(&plan))?;
        }
        // After the board knows the run, so a kill in between leaves a run that resume can finish.
        self.repo
            .create_branch(&format!("swarm/{run_id}"), &self.base)?;
        std::fs::write(
            self.board.run_dir(&run_id).join("plan.jsonl"),
            plan.to_jsonl(),
        )?;
        let layout = Layout {
            worktrees: worktree_root(&self.repo, options.worktree_dir.as_deref())?.join(&run_id),
            deps: deps_root(&self.board.run_dir(&run_id), &run_id),
            run_dir: self.board.run_dir(&run_id),
            run: run_id,
            base: self.base,
            integration_ref: self.record.integration_ref,
        };
        execute(
            g,
            &self.repo,
            &mut self.board,
            plan,
            settings,
            &layout,
            options,
            self.lock,
            goals,
        )
    }
}

fn resume(
    g: &Globals,
    run: Option<&str>,
    newer: RunOptions,
    profiles: &BTreeMap<String, Profile>,
) -> anyhow::Result<u8> {
    if let Some(code) = refuse_when_nested(g) {
        return Ok(code);
    }
    let repo = open_repo(g)?;
    let mut board = open_board(&repo)?;
    let run_id = match run {
        Some(r) => r.to_owned(),
        None => board
            .latest_run(true)?
            .ok_or_else(|| Usage::new("there is no unfinished run to resume"))?,
    };
    let lock = Lock::acquire(&repo, &run_id)?;
    let record = board.load_run(&run_id)?.ok_or_else(|| {
        Usage::new(format!("no run {run_id:?} in this repository"))
            .hint("`swarm status` shows the newest run")
    })?;
    if record.status == RunStatus::Finished {
        bail!(Usage::new(format!(
            "run {run_id} finished already (exit code {}); nothing to resume",
            record.exit_code.unwrap_or_default()
        )));
    }
    let stored: RunOptions =
        serde_json::from_value(record.options.clone()).context("stored run options")?;
    let options = overlay(stored, newer);
    check_before_run(
        g,
        &repo,
        &options,
        &Reads {
            plan_out: None,
            files: Vec::new(),
        },
    )?;
    let records = board.load_tasks(&run_id)?;
    let goal_records = board.load_goals(&run_id)?;
    if records.is_empty() && goal_records.is_empty() {
        // Stopped while planning, before any task was stored: there is nothing to continue.
        board.set_run_status(
            &run_id,
            RunStatus::Finished,
            Some(i32::from(exit::FAILED)),
            &Event::run(
                "run_abandoned",
                json!({ "reason": "stopped before its plan was stored" }),
            ),
        )?;
        bail!(
            Usage::new(format!(
                "run {run_id} was stopped before its plan was stored; there is nothing to resume"
            ))
            .hint("start it again")
        );
    }
    let plan = stored_plan(&records)?;
    let settings = settings(&options, &plan, profiles)?;
    let goals = if goal_records.is_empty() {
        None
    } else {
        Some(goal::goal_run(&repo, &settings, goal_records)?)
    };
    let base = CommitId::new(&record.base_commit);
    let leftovers = crate::agent::kill_leftovers(&run_id);
    if leftovers > 0 {
        ui::say(
            g.quiet,
            "Stopped",
            &format!("{leftovers} process group(s) left running by the interrupted run"),
        );
    }
    board.set_run_options(&run_id, &serde_json::to_value(&options)?)?;
    board.set_run_status(
        &run_id,
        RunStatus::Running,
        None,
        &Event::run("run_resumed", json!({ "pid": std::process::id() })),
    )?;
    let layout = Layout {
        run: run_id.clone(),
        base,
        integration_ref: record.integration_ref.clone(),
        worktrees: worktree_root(&repo, options.worktree_dir.as_deref())?.join(&run_id),
        deps: deps_root(&board.run_dir(&run_id), &run_id),
        run_dir: board.run_dir(&run_id),
    };
    execute(
        g, &repo, &mut board, plan, &settings, &layout, &options, lock, goals,
    )
}

/// The plan of a stored run, from its tasks' specs.
fn stored_plan(records: &[TaskRecord]) -> anyhow::Result<Plan> {
    if records.is_empty() {
        // A multi-goal run stopped before any goal was planned.
        return Plan::from_tasks(Vec::new());
    }
    let text: String = records
        .iter()
        .flat_map(|r| [r.spec.to_string(), "\n".to_owned()])
        .collect();
    Plan::parse(&text, "the stored plan").map_err(anyhow::Error::new)
}

#[expect(
    clippy::too_many_arguments,
    reason = "the pieces of one run, gathered by two callers"
)]
fn execute(
    g: &Globals,
    repo: &Repo,
    board: &mut Board,
    plan: Plan,
    settings: &Settings,
    layout: &Layout,
    options: &RunOptions,
    lock: Lock,
    goals: Option<GoalRun>,
) -> anyhow::Result<u8> {
    let mut ui = Ui::new(g.quiet);
    let records = board.load_tasks(&layout.run)?;
    let outcome = Scheduler::new(
        plan, repo, board, &mut ui, settings, layout, &records, goals,
    )?
    .run();
    ui.finish();
    let (ending, plan, tip) = outcome?;
    let plan = &plan;
    let records = board.load_tasks(&layout.run)?;
    let goals = goal_facts(plan, board.load_goals(&layout.run)?);
    // Read once: a long run's log holds tens of thousands of events.
    let events = read_events(&board.events_path(&layout.run))?;
    let parked = parked_tasks(&events, &records);
    let halted = (ending == Ending::Halted)
        .then(|| {
            events
                .iter()
                .rev()
                .find(|e| e["kind"] == "integration_moved")
                .and_then(|e| e["detail"]["reason"].as_str())
        })
        .flatten();
    let any = |s: TaskStatus| records.iter().any(|t| t.status == s);
    let goal_unfinished = goals.iter().any(|g| {
        matches!(
            g.record.status,
            GoalStatus::Failed | GoalStatus::Skipped | GoalStatus::Pending
        )
    });
    let code = match ending {
        Ending::Interrupted | Ending::OverBudget => exit::RESUMABLE,
        Ending::Halted => exit::NEEDS_HUMAN,
        Ending::Finished if !parked.is_empty() => exit::NEEDS_HUMAN,
        Ending::Finished
            if any(TaskStatus::Failed) || any(TaskStatus::Skipped) || goal_unfinished =>
        {
            exit::FAILED
        }
        Ending::Finished => exit::OK,
    };
    let integration = layout.integration_ref.trim_start_matches("refs/heads/");
    let landing = if ending == Ending::Interrupted {
        Some(format!(
            "Interrupted: `swarm resume {}` continues the run; merged work so far is on `{integration}`.",
            layout.run
        ))
    } else if let Some(why) = halted.filter(|_| ending == Ending::Halted) {
        Some(format!("Not landed: {why}."))
    } else if ending == Ending::OverBudget {
        Some(format!(
            "Stopped at the token budget ({} tokens): `swarm resume {} --budget-tokens N` with a larger N continues the run; merged work so far is on `{integration}`.",
            options.budget_tokens.unwrap_or_default(),
            layout.run
        ))
    } else {
        let how = options.land.unwrap_or(Land::Auto);
        if how == Land::Auto && tip != layout.base {
            board.event(
                &layout.run,
                &Event::run(
                    "landing",
                    json!({ "from": layout.base.as_str(), "to": tip.as_str() }),
                ),
            )?;
        }
        land(repo, layout, &tip, how, parked.is_empty())?
    };
    let status = match ending {
        Ending::Interrupted | Ending::OverBudget | Ending::Halted => RunStatus::Interrupted,
        Ending::Finished => RunStatus::Finished,
    };
    board.set_run_status(
        &layout.run,
        status,
        Some(i32::from(code)),
        &Event::run(
            "run_ended",
            json!({ "status": status.as_str(), "exit_code": code, "landing": landing }),
        ),
    )?;
    let run = board
        .load_run(&layout.run)?
        .context("the run vanished from the board")?;
    let failed_attempts = board.failed_attempts(&layout.run)?;
    let merges = merges(&events);
    let repairs = repairs(&events);
    let goal_notes = if goals.is_empty() {
        Vec::new()
    } else {
        goal_notes(&events)
    };
    let facts = Facts {
        run: &run,
        plan,
        tasks: &records,
        failed_attempts: &failed_attempts,
        parked: &parked,
        merges: &merges,
        repairs: &repairs,
        landing: landing.as_deref(),
        halted,
        exit_code: i32::from(code),
        goals: &goals,
        goal_notes: &goal_notes,
    };
    let text = report::markdown(&facts);
    let report_path = layout.run_dir.join("report.md");
    output::write_atomic(&report_path, text.as_bytes())?;
    let mut shown = report_path.display().to_string();
    if let Some(out) = &options.final_out {
        let out = if out.is_absolute() {
            out.clone()
        } else {
            g.dir.join(out)
        };
        output::write_atomic(&out, text.as_bytes())
            .with_context(|| format!("could not write the report to {}", out.display()))?;
        shown = out.display().to_string();
    }
    if let Some(dir) = &options.final_out_dir
        && !goals.is_empty()
    {
        let dir = if dir.is_absolute() {
            dir.clone()
        } else {
            g.dir.join(dir)
        };
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("could not create {}", dir.display()))?;
        for goal in &goals {
            let path = dir.join(format!("{}.md", goal.record.id));
            output::write_atomic(&path, report::goal_markdown(&facts, goal).as_bytes())
                .with_context(|| format!("could not write the report to {}", path.display()))?;
        }
    }
    drop(lock);
    if g.json {
        ui::out(&serde_json::to_string_pretty(&report::json(
            &facts, &shown,
        ))?);
    } else {
        ui::out(&report::summary(&facts, &shown));
    }
    Ok(code)
}

/// Parked tasks with their branches and conflicting paths, from the event log of the board.
fn parked_tasks(events: &[serde_json::Value], records: &[TaskRecord]) -> Vec<Parked> {
    records
        .iter()
        .filter(|t| t.status == TaskStatus::Parked)
        .map(|t| {
            let detail = events
                .iter()
                .rev()
                .find(|e| e["kind"] == "parked" && e["task"] == t.id.as_str())
                .map(|e| e["detail"].clone())
                .unwrap_or_default();
            Parked {
                task: t.id.clone(),
                branch: detail["branch"].as_str().unwrap_or_default().to_owned(),
                paths: detail["paths"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|p| p.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default(),
                resolver: detail["resolver"].as_str().map(str::to_owned),
                reason: detail["reason"].as_str().map(str::to_owned),
            }
        })
        .collect()
}

/// Each goal with its tasks and the task holding its deliverable.
fn goal_facts(plan: &Plan, records: Vec<GoalRecord>) -> Vec<GoalFacts> {
    records
        .into_iter()
        .map(|record| {
            let tasks = plan.goal_tasks(&record.id);
            GoalFacts {
                deliverable: plan.deliverable_among(&tasks),
                record,
                tasks,
            }
        })
        .collect()
}

/// What the event log says about the goals as a whole, one line each.
fn goal_notes(events: &[serde_json::Value]) -> Vec<String> {
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
    events
        .iter()
        .filter_map(|e| {
            let d = &e["detail"];
            match e["kind"].as_str()? {
                "goal_needs_failed" => Some(format!(
                    "The dependency pass failed ({}), so goals {} ran as independent.",
                    text(&d["error"]),
                    d["goals"]
                        .as_array()
                        .map(|a| a.iter().map(text).collect::<Vec<_>>().join(", "))
                        .unwrap_or_default()
                )),
                "goal_need_dropped" => Some(format!(
                    "Dropped the inferred dependency of goal {} on goal {} ({}): {}.",
                    text(&d["goal"]),
                    text(&d["needs"]),
                    text(&d["reason"]),
                    text(&d["why"])
                )),
                "deadlock" => Some(format!(
                    "Deadlock: nothing was running and nothing could become ready; stuck: {}.",
                    d["stuck"]
                        .as_array()
                        .map(|a| a.iter().map(text).collect::<Vec<_>>().join("; "))
                        .unwrap_or_default()
                )),
                _ => None,
            }
        })
        .collect()
}

fn merges(events: &[serde_json::Value]) -> Vec<(String, String)> {
    events
        .iter()
        .filter(|e| e["kind"] == "merged")
        .map(|e| {
            (
                e["task"].as_str().unwrap_or_default().to_owned(),
                e["detail"]["after"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn repairs(events: &[serde_json::Value]) -> Vec<(String, String)> {
    events
        .iter()
        .filter(|e| e["kind"] == "plan_repair")
        .map(|e| {
            (
                e["detail"]["kind"].as_str().unwrap_or_default().to_owned(),
                e["detail"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect()
}

fn read_events(path: &Path) -> anyhow::Result<Vec<serde_json::Value>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("could not read {}", path.display())),
    };
    // A line cut short by a kill is skipped, not fatal.
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

/// Takes the integration branch to the user per `--land`; returns the line to show. The
/// integration branch is deleted once the user's branch holds all of it, if `drop_branch`
/// (parked tasks name it in their instructions, so then it stays).
fn land(
    repo: &Repo,
    layout: &Layout,
    tip: &CommitId,
    how: Land,
    drop_branch: bool,
) -> anyhow::Result<Option<String>> {
    let integration = layout.integration_ref.trim_start_matches("refs/heads/");
    if *tip == layout.base {
        // Nothing was merged: the branch would only repeat the base.
        repo.delete_branch_at(integration, tip)?;
        return Ok(Some(
            "Nothing was merged; your branch is as it was.".to_owned(),
        ));
    }
    let take = format!("git merge --ff-only {integration}");
    match how {
        Land::None => Ok(None),
        Land::Branch => Ok(Some(format!(
            "The merged work is on `{integration}`; take it with `{take}`."
        ))),
        Land::Auto => match repo.land(&layout.base, tip, &layout.run_dir.join("landing"))? {
            Landing::FastForwarded { branch } => {
                let kept = if drop_branch {
                    repo.delete_branch_at(integration, tip)?;
                    String::new()
                } else {
                    format!("; `{integration}` is kept for the parked tasks")
                };
                Ok(Some(format!(
                    "Landed: `{branch}` fast-forwarded to {} and the checkout updated{kept}.",
                    tip.short()
                )))
            }
            Landing::Kept { reason } => Ok(Some(format!(
                "Not landed ({reason}): the merged work is on `{integration}`; take it with `{take}`."
            ))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_are_right() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_786), (2026, 11, 29));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
