//! How a run is configured: the defaults, the layers of configuration (flags, `SWARM_*`,
//! `.swarm.toml`, the user's file), agent profiles, the model client, and the run's `Settings`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;

use crate::agent::Agent;
use crate::agent::cli::Profile;
use crate::agent::confine::Confiner;
use crate::config::{Defaults, Land, Options, pool_name};
use crate::error::Usage;
use crate::git::Repo;
use crate::llm::{Client, Endpoint, Limits};
use crate::plan::{Action, Plan};
use crate::schedule::{BuiltinLimits, Prepare, Settings};
use crate::schedule::{Rung, Structural};

use super::context::Globals;
use super::pools::Agents;

const RETRY_BACKOFF: Duration = Duration::from_secs(1);
/// Tries of one model request, and the longest wait between two.
const LLM_ATTEMPTS: u32 = 8;
const LLM_MAX_WAIT: Duration = Duration::from_secs(60);
/// The longest a provider's usage limit may pause a run before it stops (resumable).
const MAX_LIMIT_WAIT: Duration = Duration::from_secs(3600);
/// A reducer takes at most this many results: each may fill `DEP_RESULT_CAP` of its prompt.
pub(super) const MAX_FAN_IN: usize = 8;

/// Inside a git hook, landing defaults to `branch`: git is in the middle of changing the
/// checkout (a `pre-commit` holds the index and moves HEAD next), so swarm must not. The run
/// keeps the choice, so a resume outside the hook does not land either.
pub(super) fn land_from_hook(options: &mut Options, from_hook: bool) {
    if in_hook(from_hook) && options.land.is_none() {
        options.land = Some(Land::Branch);
    }
}

/// Whether swarm runs from a git hook: `--from-hook`, or git's hook variables are set.
pub(super) fn in_hook(from_hook: bool) -> bool {
    from_hook
        || ["GIT_INDEX_FILE", "GIT_DIR"]
            .iter()
            .any(|v| std::env::var_os(v).is_some())
}

/// Run options after the configuration layers, and the agent profiles.
pub(super) struct Configured {
    pub(super) options: Options,
    pub(super) profiles: Agents,
    /// The config file given with `--config`, which names commands too.
    pub(super) file: Option<std::path::PathBuf>,
}

/// The hint under configuration problems, for every command but `swarm config`.
const CONFIG_HINT: &str = "fix each problem where it says (a file's line or a variable); then `swarm config` shows every setting and where it comes from";
/// The hint under configuration problems for `swarm config`, which shows nothing until then.
pub(super) const CONFIG_SHOW_HINT: &str = "fix each problem where it says (a file's line or a variable): the settings are shown only when every file and variable reads";

/// The configuration, or every problem of it with `hint` ([`CONFIG_HINT`] unless the command
/// is `swarm config`).
pub(super) fn load_config(
    g: &Globals,
    flags: &Options,
    explicit: Option<&Path>,
    hint: &str,
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
    crate::config::load(root.as_deref(), flags, &env, explicit.as_deref())
        .map_err(|e| anyhow::Error::new(Usage::new(e.to_string()).hint(hint)))
}

/// Flags over `SWARM_*` variables over `.swarm.toml` over the user's config over defaults.
pub(super) fn configure(
    g: &Globals,
    flags: &Options,
    explicit: Option<&Path>,
) -> anyhow::Result<Configured> {
    let config = load_config(g, flags, explicit, CONFIG_HINT)?;
    let mut profiles = Agents {
        pools: config.pools.clone(),
        ..Agents::default()
    };
    for (name, (spec, file)) in &config.profiles {
        let profile = profile_from(name, spec).map_err(|e| {
            anyhow::Error::new(Usage::new(format!(
                "{}: [agents.{name}]: {e}",
                file.display()
            )))
        })?;
        profiles.profiles.insert(name.clone(), profile);
        if let Some(cap) = spec.max_concurrent {
            profiles.caps.insert(name.clone(), cap as usize);
        }
    }
    Ok(Configured {
        options: config.options,
        profiles,
        file: explicit.map(|p| g.dir.join(p)),
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
            kind: crate::agent::cli::Kind::Cli,
            command: spec.command.clone().ok_or("a profile needs a `command`")?,
            reader_args: Vec::new(),
            writer_args: Vec::new(),
            parser: Parser::Text,
            drop_env: Vec::new(),
            pass_env: Vec::new(),
            set_env: Vec::new(),
            sessions: crate::agent::cli::Sessions::None,
            writes: Vec::new(),
            confined_args: None,
        },
    };
    if let Some(c) = &spec.command {
        p.command.clone_from(c);
    }
    match spec.kind.as_deref() {
        None | Some("cli") => {}
        Some("acp") => {
            p.kind = crate::agent::cli::Kind::Acp;
            p.sessions = crate::agent::cli::Sessions::Acp;
        }
        Some(other) => return Err(format!("unknown kind {other:?} (known: cli, acp)")),
    }
    if spec.args.is_some() || spec.reader_args.is_some() || spec.writer_args.is_some() {
        // Arguments of the user's own are run as they are, confined or not.
        p.confined_args = None;
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
    if let Some(w) = &spec.writes {
        if let Some(bad) = w
            .iter()
            .find(|p| !(p.starts_with('/') || p.starts_with("~/") || p.starts_with('$')))
        {
            return Err(format!(
                "writes: `{bad}` is relative: name it from `/`, from your home as `~/…`, or from a variable as `$NAME/…`"
            ));
        }
        p.writes.extend(w.iter().cloned());
    }
    // Each variable of the table replaces the built-in profile's of that name, or joins them.
    for (name, value) in spec.set_env.iter().flatten() {
        p.set_env.retain(|(n, _)| n != name);
        p.set_env.push((name.clone(), value.clone()));
    }
    Ok(p)
}

/// The run's confinement as its options say, paths expanded.
pub(super) fn confine_setting(o: &Options) -> crate::agent::confine::Setting {
    use crate::agent::confine::{Setting, expand};
    use crate::config::{Confine, ConfineNet};
    let mode = o.confine.unwrap_or(Defaults::confine());
    let paths = |list: &[String]| list.iter().filter_map(|p| expand(p)).collect::<Vec<_>>();
    let connect = match o.confine_net.unwrap_or(Defaults::confine_net()) {
        ConfineNet::Open => None,
        ConfineNet::Endpoint => Some(
            endpoint(o)
                .map(|e| endpoint_port(&e.base))
                .into_iter()
                .collect(),
        ),
    };
    Setting {
        off: mode == Confine::Off,
        require: mode == Confine::Require,
        read_deny: paths(&o.read_deny),
        read_allow: paths(&o.read_allow),
        write_allow: paths(&o.write_allow),
        connect,
    }
}

/// What confines the run's tasks, from its options: an error, before anything runs, when
/// `confine = "require"` and the kernel cannot, or when `confine-net = "endpoint"` asks for
/// what the kernel cannot do.
pub(super) fn confinement(o: &Options) -> anyhow::Result<Arc<Confiner>> {
    use crate::agent::confine::InForce;
    // A mistyped cap must not leave tasks unconfined.
    crate::agent::confine::abi_cap().map_err(Usage::new)?;
    let setting = confine_setting(o);
    let (require, needs_ports) = (setting.require, setting.connect.is_some());
    let confiner = Confiner::new(setting);
    match &confiner.in_force {
        InForce::Unavailable(why) if require => Err(Usage::new(format!(
            "confine = \"require\", and the kernel cannot confine tasks here: {why}; nothing ran"
        ))
        .hint("run on Linux 5.13 or later with Landlock enabled, or set confine = \"auto\" (tasks then run unconfined where the kernel cannot confine them)")
        .into()),
        InForce::Landlock(abi) if needs_ports && *abi < 4 => Err(Usage::new(format!(
            "confine-net = \"endpoint\" needs Landlock ABI 4 (Linux 6.7) to confine TCP connects, and this kernel has ABI {abi}; nothing ran"
        ))
        .hint("set confine-net = \"open\"")
        .into()),
        _ => Ok(confiner),
    }
}

/// The TCP port of an endpoint's URL: the one it names, else its scheme's.
fn endpoint_port(base: &str) -> u16 {
    let (scheme, rest) = base.split_once("://").unwrap_or(("https", base));
    let authority = rest.split('/').next().unwrap_or_default();
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    let port = host_port
        .rsplit_once(':')
        .and_then(|(_, port)| port.parse().ok());
    port.unwrap_or(if scheme.eq_ignore_ascii_case("http") {
        80
    } else {
        443
    })
}

/// The model endpoint from flags and the environment, if one is configured.
fn endpoint(o: &Options) -> Option<Endpoint> {
    Endpoint::resolve(o.api_base.as_deref(), None, o.model.as_deref(), &|name| {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    })
}

/// The model client for the planner and the built-in agent, if an endpoint is configured.
pub(super) fn model_client(o: &Options, jobs: usize) -> anyhow::Result<Option<Client>> {
    // Checked with or without an endpoint: a bad value is an error wherever it is given.
    let read_timeout = crate::plan::parse_duration(
        o.request_timeout
            .as_deref()
            .unwrap_or(Defaults::request_timeout()),
    )
    .map_err(|e| Usage::new(format!("--request-timeout: {e}")))?;
    let price = o
        .price
        .as_deref()
        .map(crate::llm::Price::parse)
        .transpose()
        .map_err(|e| Usage::new(format!("--price: {e}")))?;
    let Some(endpoint) = endpoint(o) else {
        return Ok(None);
    };
    if let Some(key) = &endpoint.key {
        crate::secret::init(&[key.as_str()]);
    }
    Ok(Some(
        Client::new(
            endpoint,
            Limits {
                connect_timeout: Duration::from_secs(10),
                read_timeout,
                max_attempts: LLM_ATTEMPTS,
                max_wait: LLM_MAX_WAIT,
                max_in_flight: jobs,
                answers: crate::llm::AnswerCaps {
                    planning: o
                        .plan_answer_tokens
                        .unwrap_or(Defaults::plan_answer_tokens()),
                    turn: o
                        .turn_answer_tokens
                        .unwrap_or(Defaults::turn_answer_tokens()),
                },
            },
        )
        .priced(price),
    ))
}

/// What plans: only the built-in agent's model.
pub(super) const PLANNING_HINT: &str = "planning uses the built-in agent's model: set SWARM_API_BASE (an OpenAI-compatible endpoint such as http://localhost:11434/v1) and/or SWARM_API_KEY, and SWARM_MODEL to pick the model; claude, codex and exec: agents run tasks but do not plan (`swarm run TASKS` runs a task file with them)";

pub(super) const NO_MODEL_HINT: &str = "configure an agent: set SWARM_API_BASE (an OpenAI-compatible endpoint such as http://localhost:11434/v1) and/or SWARM_API_KEY for the built-in agent; or install the `claude` or `codex` CLI; or pass --agent exec:CMD (CMD reads the prompt on stdin and prints the result); or define a profile [agents.NAME] in .swarm.toml";

/// Resolves agent names: `auto`, `openai`, `exec:CMD`, and profiles (the built-in `claude` and
/// `codex`, and those of the configuration, which may replace them).
struct AgentNames<'a> {
    pub(super) llm: bool,
    pub(super) profiles: &'a BTreeMap<String, Profile>,
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
                    "unknown agent {name:?}: use auto, openai, exec:CMD, acp:CMD, or a profile ({})",
                    known.join(", ")
                ))
            }
        }
    }
}

/// The built-in profiles, replaced by configured ones of the same name.
pub(super) fn profiles(configured: &BTreeMap<String, Profile>) -> BTreeMap<String, Profile> {
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

pub(super) fn settings(o: &Options, plan: &Plan, configured: &Agents) -> anyhow::Result<Settings> {
    let jobs = o.jobs.unwrap_or(Defaults::jobs()) as usize;
    let llm = model_client(o, jobs)?;
    let all = profiles(&configured.profiles);
    let names = AgentNames {
        llm: llm.is_some(),
        profiles: &all,
    };
    let pool = o.agent.as_deref().and_then(pool_name);
    if let Some(p) = pool {
        configured
            .known_pool(p)
            .map_err(|e| Usage::new(format!("--agent: {e}")))?;
    }
    let agent = match pool {
        Some(_) => None,
        None => names
            .resolve(o.agent.as_deref())
            .map_err(|e| Usage::new(format!("--agent: {e}")).hint(NO_MODEL_HINT))?,
    };
    let mut problems = Vec::new();
    let mut named_agents = BTreeMap::new();
    // Continuations are tasks of the plan once their task has run.
    let mut tasks: Vec<&crate::plan::Task> = plan.tasks.iter().collect();
    let mut k = 0;
    while k < tasks.len() {
        if let Some(then) = tasks[k].then.as_deref() {
            tasks.push(then);
        }
        k += 1;
    }
    for t in tasks {
        let task_pool = t.agent.as_deref().and_then(pool_name);
        if let Some(p) = task_pool {
            if let Err(e) = configured.known_pool(p) {
                problems.push(format!("line {}: task {:?}: {e}", t.line, t.id.as_str()));
            }
            continue;
        }
        match t.agent.as_deref().map(|a| (a, names.resolve(Some(a)))) {
            Some((_, Err(e))) => {
                problems.push(format!("line {}: task {:?}: {e}", t.line, t.id.as_str()));
            }
            Some((a, Ok(Some(resolved)))) => {
                named_agents.insert(a.to_owned(), resolved);
            }
            Some((_, Ok(None))) | None
                if agent.is_none() && pool.is_none() && matches!(t.action, Action::Prompt(_)) =>
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
    let used = pool.into_iter().chain(
        plan.tasks
            .iter()
            .filter_map(|t| t.agent.as_deref().and_then(pool_name)),
    );
    let routed = configured
        .route(used, |member| names.resolve(Some(member)))
        .map_err(Usage::new)?;
    if o.remote.is_some() && !routed.pools.is_empty() {
        bail!(Usage::new(
            "--remote: a pool (`pool:NAME`) routes attempts among the agents of this machine; a run spread over machines cannot use one"
        ));
    }
    for (member, agent) in routed.members {
        named_agents.entry(member).or_insert(agent);
    }
    let timeout = crate::plan::parse_duration(
        o.task_timeout
            .as_deref()
            .unwrap_or(Defaults::task_timeout()),
    )
    .map_err(|e| Usage::new(format!("--task-timeout: {e}")))?;
    let stall_timeout = o
        .stall_timeout
        .as_deref()
        .map(crate::plan::parse_duration)
        .transpose()
        .map_err(|e| Usage::new(format!("--stall-timeout: {e}")))?;
    let endpoint_wait = crate::plan::parse_wait(
        o.endpoint_wait
            .as_deref()
            .unwrap_or(Defaults::endpoint_wait()),
    )
    .map_err(|e| Usage::new(format!("--endpoint-wait: {e}")))?;
    Ok(Settings {
        guarded: vec![crate::config::REPO_FILE.to_owned()],
        endpoint_wait,
        stall_timeout,
        jobs,
        max_writers: o.max_writers.map_or(jobs, |w| w as usize).min(jobs),
        retries: o.retries.unwrap_or(Defaults::retries()),
        task_timeout: timeout,
        kill_grace: crate::plan::parse_wait(
            o.kill_grace.as_deref().unwrap_or(Defaults::kill_grace()),
        )
        .map_err(|e| Usage::new(format!("--kill-grace: {e}")))?,
        transcript_cap: crate::config::parse_transcript_cap(
            o.transcript_cap
                .as_deref()
                .unwrap_or(Defaults::transcript_cap()),
        )
        .map_err(|e| Usage::new(format!("transcript-cap: {e}")))?,
        backoff: RETRY_BACKOFF,
        agent,
        check: o.check.clone(),
        on_escalate: o.on_escalate.clone(),
        mirror: None,
        trace: None,
        delivery: None,
        lessons: Vec::new(),
        ladder: ladder(o),
        structural: structural(o)?,
        forecast: o.forecast.unwrap_or(Defaults::forecast()),
        forecast_interval: crate::plan::parse_duration(
            o.forecast_interval
                .as_deref()
                .unwrap_or(Defaults::forecast_interval()),
        )
        .map_err(|e| Usage::new(format!("forecast-interval: {e}")))?,
        fresh_retries: o.fresh_retries,
        allow_no_change: o.allow_no_change,
        llm,
        named_agents,
        pool: pool.map(str::to_owned),
        pools: routed.pools,
        max_concurrent: configured.caps.clone(),
        max_limit_wait: MAX_LIMIT_WAIT,
        budget_tokens: o.budget_tokens,
        prepare: Prepare {
            include: o.include.clone(),
            setup: o.setup.clone(),
            cache: o.cache.clone(),
            cache_key: o.cache_key.clone(),
        },
        gate: o.gate.clone(),
        spawn: crate::config::SpawnLimits::of(o),
        // Spread over machines, the run's own process runs only the tasks --jobs asks for.
        confine: confinement(o)?,
        candidates: candidates_of(o),
        local_jobs: if o.remote.is_some() {
            o.jobs.map_or(0, |j| j as usize)
        } else {
            jobs
        },
        remote: o
            .remote
            .as_ref()
            .map(|name| -> anyhow::Result<_> {
                Ok(crate::schedule::Remote {
                    name: name.clone(),
                    poll: crate::remote::poll()?,
                    key: crate::remote::Key::from_env()?,
                })
            })
            .transpose()?,
        builtin: BuiltinLimits {
            max_turns: o.max_turns.unwrap_or(Defaults::max_turns()),
            max_tokens: o.max_task_tokens.unwrap_or(Defaults::max_task_tokens()),
            allowed_programs: o.allow_program.clone(),
        },
    })
}

/// The rungs a conflicting merge climbs after git's merge: `conflicts` (or the structural
/// merge and the redo), and the resolver too with `resolve-conflicts`.
fn ladder(o: &Options) -> Vec<Rung> {
    let mut ladder: Vec<Rung> = if o.conflicts.is_empty() {
        vec![Rung::Structural, Rung::Redo]
    } else {
        o.conflicts.iter().filter_map(|r| Rung::named(r)).collect()
    };
    if o.resolve_conflicts && !ladder.contains(&Rung::Resolve) {
        ladder.push(Rung::Resolve);
    }
    ladder
}

/// The structural rung's program, when the ladder has that rung: the `mergiraf` key's, which
/// must run (exit 2 when it does not), or `mergiraf` on `PATH`, when it is there.
fn structural(o: &Options) -> anyhow::Result<Option<Structural>> {
    if !ladder(o).contains(&Rung::Structural) {
        return Ok(None);
    }
    let (program, named) = match &o.mergiraf {
        Some(p) => (p.clone(), true),
        None => match crate::agent::find_on_path("mergiraf") {
            Some(p) => (p, false),
            None => return Ok(None),
        },
    };
    let version = std::process::Command::new(&program)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned());
    match version {
        Some(version) => Ok(Some(Structural { program, version })),
        None if named => Err(Usage::new(format!(
            "mergiraf: {} does not run (`{} --version` failed); name the syntax-aware merge program, or leave the key out to use mergiraf from PATH",
            program.display(),
            program.display()
        ))
        .into()),
        None => Ok(None),
    }
}

/// The candidates `--candidates` and `--select` give every writer without its own, when more
/// than one.
pub(super) fn candidates_of(o: &Options) -> Option<crate::plan::candidates::Candidates> {
    use crate::config::Pick;
    use crate::plan::candidates::{Candidates, Select};
    let n = o.candidates.filter(|&n| n >= 2)?;
    let select = match o.select.unwrap_or_default() {
        Pick::FirstGreen => Select::FirstGreen,
        Pick::SmallestGreen => Select::SmallestGreen,
        Pick::Judge => Select::Judge,
    };
    Some(Candidates { n, select })
}
