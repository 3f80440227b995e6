//! Layered configuration: which value each run option takes, and where it came from. Owns
//! swarm's run options ([`Options`]; the command line's flags are converted into them in `cli`),
//! the config file format, the `SWARM_*` variables, and the versioned record of a run's options
//! the board keeps (`record`); must not run anything or print.
//!
//! Precedence, highest first: command-line flags, `SWARM_*` environment variables, the
//! repository's `.swarm.toml` (in the checkout's top directory), the user config
//! (`$XDG_CONFIG_HOME/swarm/config.toml`, else `~/.config/swarm/config.toml`; `--config FILE` is
//! read in its place), then the built-in defaults.
//!
//! Files are TOML with kebab-case keys. The top level holds run options: `jobs`, `max-writers`,
//! `agent`, `model`, `api-base`, `request-timeout`, `endpoint-wait`, `max-turns`, `max-task-tokens`,
//! `allow-program`, `task-timeout`, `retries`, `check`, `land`, `worktree-dir` (a relative path
//! is taken from the file's directory), `resolve-conflicts`, `on-escalate`, and the checkout
//! preparation `include`, `setup`, `cache` and `cache-key` (paths in the repository). `[agents.NAME]`
//! tables define agent profiles ([`ProfileSpec`]); a repository profile replaces a user profile
//! of the same name. `[pools.NAME]` tables (`members = [...]`, see `pool`) define pools, which
//! `pool:NAME` names wherever an agent is named. There is no `api-key`: keys come from `SWARM_API_KEY` only, so they stay out
//! of repositories. `final-out` and `base` belong to one run and are flags only.
//!
//! Environment variables, one per option: `SWARM_JOBS`, `SWARM_MAX_WRITERS`, `SWARM_AGENT`,
//! `SWARM_MODEL`, `SWARM_API_BASE`, `SWARM_REQUEST_TIMEOUT`, `SWARM_MAX_TURNS`,
//! `SWARM_MAX_TASK_TOKENS`, `SWARM_ALLOW_PROGRAMS` (comma-separated), `SWARM_TASK_TIMEOUT`,
//! `SWARM_RETRIES`, `SWARM_CHECK`, `SWARM_LAND`, `SWARM_WORKTREE_DIR`, `SWARM_RESOLVE_CONFLICTS`
//! (1/true/yes or 0/false/no), `SWARM_ON_ESCALATE`, `SWARM_INCLUDE`, `SWARM_SETUP`, `SWARM_GATE`,
//! `SWARM_CACHE` and `SWARM_CACHE_KEY` (comma-separated). An empty variable counts as unset.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::de::{DeTable, DeValue};

mod key;
mod options;
mod pool;
mod record;
mod show;
#[cfg(test)]
mod tests;

use key::Key;
pub use options::Spawning;
pub(crate) use options::{Land, Options, ReportFormat, overlay};
use pool::PoolSpec;
pub use pool::{POOL_PREFIX, PoolDef, pool_name};
pub(crate) use record::{from_record, to_record};
pub use show::{describe, to_json};

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Flag,
    /// The environment variable that set it.
    Env(String),
    /// The config file that set it.
    File(PathBuf),
    Default,
}

/// An agent profile as written in a config file: `[agents.NAME]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ProfileSpec {
    /// How swarm speaks with the agent: `cli` (prompt on stdin, output parsed) or `acp` (the
    /// Agent Client Protocol over stdio).
    pub kind: Option<String>,
    pub command: Option<String>,
    /// Arguments for both readers and writers.
    pub args: Option<Vec<String>>,
    pub reader_args: Option<Vec<String>>,
    pub writer_args: Option<Vec<String>>,
    /// How to read the agent's output: `text`, `claude-json` or `codex-jsonl`.
    pub parser: Option<String>,
    pub pass_env: Option<Vec<String>>,
    pub drop_env: Option<Vec<String>>,
    /// Variables set for the agent (`set-env = { NAME = "value" }`).
    pub set_env: Option<BTreeMap<String, String>>,
    /// Attempts of this profile that may run at once in a run; no cap when unset.
    pub max_concurrent: Option<u32>,
}

/// The effective configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub options: Options,
    /// For every option key (kebab-case, as in files), where its value came from.
    pub sources: BTreeMap<&'static str, Source>,
    /// Profiles by name; a repository profile replaces a user profile of the same name.
    pub profiles: BTreeMap<String, (ProfileSpec, PathBuf)>,
    /// Pools by name (`[pools.NAME]`); a repository pool replaces a user pool of the same name.
    pub pools: BTreeMap<String, PoolDef>,
}

/// An error in a config file (or, with no line, in the environment variable named by `file`).
#[derive(Debug)]
pub struct ConfigError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file.display(), self.message),
            None => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

/// The kinds of agent profile.
const KINDS: [&str; 2] = ["cli", "acp"];
/// The parsers an agent profile may name.
const PARSERS: [&str; 3] = ["text", "claude-json", "codex-jsonl"];
/// The keys of an `[agents.NAME]` table.
const PROFILE_KEYS: [&str; 10] = [
    "command",
    "args",
    "reader-args",
    "writer-args",
    "parser",
    "pass-env",
    "drop-env",
    "set-env",
    "kind",
    "max-concurrent",
];
pub(crate) const REPO_FILE: &str = ".swarm.toml";
/// The run options and profiles of one config file, with the keys it sets.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct FileOptions {
    jobs: Option<u32>,
    max_writers: Option<u32>,
    agent: Option<String>,
    model: Option<String>,
    api_base: Option<String>,
    request_timeout: Option<String>,
    endpoint_wait: Option<String>,
    max_turns: Option<u32>,
    max_task_tokens: Option<u64>,
    budget_tokens: Option<u64>,
    allow_program: Option<Vec<String>>,
    task_timeout: Option<String>,
    stall_timeout: Option<String>,
    kill_grace: Option<String>,
    retries: Option<u32>,
    check: Option<String>,
    land: Option<Land>,
    worktree_dir: Option<PathBuf>,
    resolve_conflicts: Option<bool>,
    fresh_retries: Option<bool>,
    on_escalate: Option<String>,
    include: Option<Vec<String>>,
    setup: Option<String>,
    gate: Option<String>,
    cache: Option<Vec<String>>,
    cache_key: Option<Vec<String>>,
    max_children: Option<u32>,
    max_depth: Option<u32>,
    max_spawned: Option<u32>,
    spawns_per_minute: Option<u32>,
    spawning: Option<Spawning>,
    #[serde(default)]
    agents: BTreeMap<String, ProfileSpec>,
    #[serde(default)]
    pools: BTreeMap<String, PoolSpec>,
}

impl FileOptions {
    fn into_options(
        self,
    ) -> (
        Options,
        BTreeMap<String, ProfileSpec>,
        BTreeMap<String, PoolSpec>,
    ) {
        let options = Options {
            jobs: self.jobs,
            max_writers: self.max_writers,
            agent: self.agent,
            model: self.model,
            api_base: self.api_base,
            request_timeout: self.request_timeout,
            endpoint_wait: self.endpoint_wait,
            max_turns: self.max_turns,
            max_task_tokens: self.max_task_tokens,
            budget_tokens: self.budget_tokens,
            allow_program: self.allow_program.unwrap_or_default(),
            task_timeout: self.task_timeout,
            stall_timeout: self.stall_timeout,
            kill_grace: self.kill_grace,
            retries: self.retries,
            check: self.check,
            land: self.land,
            worktree_dir: self.worktree_dir,
            resolve_conflicts: self.resolve_conflicts.unwrap_or_default(),
            fresh_retries: self.fresh_retries.unwrap_or_default(),
            on_escalate: self.on_escalate,
            include: self.include.unwrap_or_default(),
            setup: self.setup,
            gate: self.gate,
            cache: self.cache.unwrap_or_default(),
            cache_key: self.cache_key.unwrap_or_default(),
            max_children: self.max_children,
            max_depth: self.max_depth,
            max_spawned: self.max_spawned,
            spawns_per_minute: self.spawns_per_minute,
            spawning: self.spawning,
            // Per-run options (and any new ones, until they get a key) are not read from files.
            ..Options::default()
        };
        (options, self.agents, self.pools)
    }
}

/// A config file that was read.
struct FileLayer {
    path: PathBuf,
    layer: Layer,
    profiles: BTreeMap<String, ProfileSpec>,
    pools: BTreeMap<String, PoolDef>,
}

/// One layer of settings: the options it sets and where each came from.
#[derive(Default)]
struct Layer {
    options: Options,
    set: Vec<(Key, Source)>,
}

impl Layer {
    fn source(&self, key: Key) -> Option<&Source> {
        self.set.iter().find(|(k, _)| *k == key).map(|(_, s)| s)
    }
}

/// `repo_root`: the checkout's top directory, if any. `flags`: the options given on the command
/// line. `env`: variable lookup (injectable for tests). `explicit`: `--config FILE`, read instead
/// of the user config; unlike the default files, it must exist.
pub fn load(
    repo_root: Option<&Path>,
    flags: &Options,
    env: &dyn Fn(&str) -> Option<String>,
    explicit: Option<&Path>,
) -> Result<Config, ConfigError> {
    let home = env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let user = match explicit {
        Some(path) => {
            let path = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
            let file = read_file(&path, home.as_deref())?;
            Some(file.ok_or_else(|| ConfigError {
                file: path,
                line: None,
                message: "no such file (named by --config)".to_owned(),
            })?)
        }
        None => match user_config_path(env, home.as_deref()) {
            Some(path) => read_file(&path, home.as_deref())?,
            None => None,
        },
    };
    let repo = match repo_root {
        Some(root) => read_file(&root.join(REPO_FILE), home.as_deref())?,
        None => None,
    };
    let flags = Layer {
        options: flags.clone(),
        set: Key::ALL
            .into_iter()
            .filter(|k| k.is_set(flags))
            .map(|k| (k, Source::Flag))
            .collect(),
    };
    let mut profiles = BTreeMap::new();
    let mut pools = BTreeMap::new();
    // User first, so a repository profile replaces a user profile of the same name.
    for file in [&user, &repo].into_iter().flatten() {
        for (name, spec) in &file.profiles {
            profiles.insert(name.clone(), (spec.clone(), file.path.clone()));
        }
        pools.extend(file.pools.iter().map(|(n, p)| (n.clone(), p.clone())));
    }
    // Highest precedence first.
    let mut layers = vec![flags, env_layer(env)?];
    layers.extend([repo, user].into_iter().flatten().map(|f| f.layer));
    let mut options = Options::default();
    let mut sources = BTreeMap::new();
    for key in Key::ALL {
        let source = match layers
            .iter()
            .find_map(|layer| Some((layer, layer.source(key)?)))
        {
            Some((layer, source)) => {
                key.copy(&layer.options, &mut options);
                source.clone()
            }
            None => Source::Default,
        };
        sources.insert(key.name(), source);
    }
    Ok(Config {
        options,
        sources,
        profiles,
        pools,
    })
}

/// `$XDG_CONFIG_HOME/swarm/config.toml`, else `~/.config/swarm/config.toml`.
fn user_config_path(env: &dyn Fn(&str) -> Option<String>, home: Option<&Path>) -> Option<PathBuf> {
    let base = env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        // The XDG spec says to ignore a relative value.
        .filter(|p| p.is_absolute())
        .or_else(|| home.map(|h| h.join(".config")))?;
    Some(base.join("swarm").join("config.toml"))
}

fn env_layer(env: &dyn Fn(&str) -> Option<String>) -> Result<Layer, ConfigError> {
    let mut layer = Layer::default();
    for key in Key::ALL {
        let Some(var) = key.var() else { continue };
        let Some(text) = env(var).filter(|t| !t.trim().is_empty()) else {
            continue;
        };
        key.parse_into(&text, &mut layer.options)
            .and_then(|()| key.check(&layer.options))
            .map_err(|e| ConfigError {
                file: PathBuf::from(var),
                line: None,
                message: format!("invalid environment variable (for `{}`): {e}", key.name()),
            })?;
        layer.set.push((key, Source::Env(var.to_owned())));
    }
    Ok(layer)
}

/// Reads one config file; a missing file is `None`.
fn read_file(path: &Path, home: Option<&Path>) -> Result<Option<FileLayer>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(ConfigError {
                file: path.to_owned(),
                line: None,
                message: format!("could not read the config file: {e}"),
            });
        }
    };
    parse_file(path, &text, home).map(Some)
}

/// Parses a config file's text: syntax, then keys, then types, then values, each error with the
/// line it is on.
fn parse_file(path: &Path, text: &str, home: Option<&Path>) -> Result<FileLayer, ConfigError> {
    let at = |span: Option<Range<usize>>, message: String| ConfigError {
        file: path.to_owned(),
        line: span.map(|s| line_of(text, s.start)),
        message,
    };
    let toml_error = |e: toml::de::Error| at(e.span(), e.message().to_owned());
    let table = DeTable::parse(text).map_err(toml_error)?;
    let table = table.get_ref();
    check_keys(table).map_err(|(span, message)| at(Some(span), message))?;
    let parsed: FileOptions = toml::from_str(text).map_err(toml_error)?;
    let (mut options, profiles, pools) = parsed.into_options();
    let mut set = Vec::new();
    for key in Key::ALL.into_iter().filter(|k| k.in_files()) {
        let Some(span) = value_span(table, &[key.name()]) else {
            continue;
        };
        key.check(&options)
            .map_err(|e| at(Some(span), format!("`{}`: {e}", key.name())))?;
        set.push((key, Source::File(path.to_owned())));
    }
    for (name, spec) in &profiles {
        if let Some(kind) = spec.kind.as_deref().filter(|k| !KINDS.contains(k)) {
            return Err(at(
                value_span(table, &["agents", name, "kind"]),
                format!(
                    "agent `{name}`: unknown kind `{kind}` (known: {})",
                    KINDS.join(", ")
                ),
            ));
        }
        if spec.max_concurrent == Some(0) {
            return Err(at(
                value_span(table, &["agents", name, "max-concurrent"]),
                format!("agent `{name}`: `max-concurrent` must be at least 1"),
            ));
        }
        if let Some(parser) = spec.parser.as_deref().filter(|p| !PARSERS.contains(p)) {
            return Err(at(
                value_span(table, &["agents", name, "parser"]),
                format!(
                    "agent `{name}`: unknown parser `{parser}` (known: {})",
                    PARSERS.join(", ")
                ),
            ));
        }
    }
    if let Some(dir) = options.worktree_dir.take() {
        options.worktree_dir = Some(resolve_path(&dir, path, home));
    }
    let pools = pool::check(pools, path, |keys| {
        value_span(table, keys).map(|s| line_of(text, s.start))
    })
    .map_err(|(line, message)| ConfigError {
        file: path.to_owned(),
        line,
        message,
    })?;
    Ok(FileLayer {
        path: path.to_owned(),
        layer: Layer { options, set },
        profiles,
        pools,
    })
}

/// A path written in a file: `~/` is the home directory, a relative path is taken from the
/// file's directory (not from wherever swarm was started).
fn resolve_path(dir: &Path, file: &Path, home: Option<&Path>) -> PathBuf {
    if let (Ok(rest), Some(home)) = (dir.strip_prefix("~"), home) {
        return home.join(rest);
    }
    file.parent().unwrap_or(Path::new("")).join(dir)
}

/// Refuses unknown keys, with the key's span; serde would say "unknown field" and list keys that
/// are refused for other reasons.
fn check_keys(table: &DeTable<'_>) -> Result<(), (Range<usize>, String)> {
    let top: Vec<&str> = Key::ALL
        .into_iter()
        .filter(|k| k.in_files())
        .map(Key::name)
        .chain(["agents", "pools"])
        .collect();
    for (key, value) in table {
        let name = key.get_ref().as_ref();
        if name == "agents" {
            check_named_tables(value.get_ref(), "agent", &PROFILE_KEYS)?;
            continue;
        }
        if name == "pools" {
            check_named_tables(value.get_ref(), "pool", &pool::POOL_KEYS)?;
            continue;
        }
        if top.contains(&name) {
            continue;
        }
        let message = match name {
            "api-key" | "api_key" => "`api-key` is not read from config files, so keys stay out \
                of repositories; set SWARM_API_KEY in the environment instead"
                .to_owned(),
            "final-out" | "base" => format!(
                "unknown key `{name}`: it belongs to one run, so pass --{name} on the command line"
            ),
            _ => unknown(name, &top),
        };
        return Err((key.span(), message));
    }
    Ok(())
}

/// Refuses unknown keys in the tables under `[agents]` or `[pools]` (`what` names one of them
/// in the message: "agent `claude`: unknown key …"), with the key's span.
fn check_named_tables(
    tables: &DeValue<'_>,
    what: &str,
    keys: &[&str],
) -> Result<(), (Range<usize>, String)> {
    // Shapes that are not tables are left to serde, which names the expected type.
    let DeValue::Table(tables) = tables else {
        return Ok(());
    };
    for (name, table) in tables {
        let DeValue::Table(table) = table.get_ref() else {
            continue;
        };
        for (key, _) in table {
            let key_name = key.get_ref().as_ref();
            if !keys.contains(&key_name) {
                let message = format!("{what} `{}`: {}", name.get_ref(), unknown(key_name, keys));
                return Err((key.span(), message));
            }
        }
    }
    Ok(())
}

/// "unknown key `jbos` (known: …)", with a suggestion for a near miss.
fn unknown(name: &str, known: &[&str]) -> String {
    let kebab = name.replace('_', "-");
    let near = [
        kebab.clone(),
        format!("{kebab}s"),
        kebab.trim_end_matches('s').to_owned(),
    ]
    .into_iter()
    .find(|c| c != name && known.contains(&c.as_str()));
    let known = known.join(", ");
    match near {
        Some(near) => format!("unknown key `{name}` (known: {known}); did you mean `{near}`?"),
        None => format!("unknown key `{name}` (known: {known})"),
    }
}

/// The span of the value at `path` (table keys from the top).
fn value_span(table: &DeTable<'_>, path: &[&str]) -> Option<Range<usize>> {
    let (first, rest) = path.split_first()?;
    let value = table
        .iter()
        .find(|(k, _)| k.get_ref().as_ref() == *first)
        .map(|(_, v)| v)?;
    match (rest.is_empty(), value.get_ref()) {
        (true, _) => Some(value.span()),
        (false, DeValue::Table(inner)) => value_span(inner, rest),
        (false, _) => None,
    }
}

/// The 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text.char_indices()
        .take_while(|&(i, _)| i < offset)
        .filter(|&(_, c)| c == '\n')
        .count()
        + 1
}
