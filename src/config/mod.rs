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
//!
//! A problem does not stop the reading: every file and variable is read and checked, and all
//! their problems are returned together ([`ConfigError`]), each with its file and line or its
//! variable; unknown keys with the known key nearest them, types in plain words (`check`).

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize as _;
use toml::de::{DeTable, DeValue};

mod check;
mod key;
mod options;
mod pool;
mod record;
mod show;
#[cfg(test)]
mod tests;

use check::Shape;
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

/// Where a problem of the configuration is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    File(PathBuf),
    /// An environment variable, by name.
    Var(&'static str),
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::File(path) => write!(f, "{}", path.display()),
            Place::Var(var) => f.write_str(var),
        }
    }
}

/// One problem of the configuration: a file's line (none when the whole file is at fault), or
/// an environment variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub place: Place,
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.place, self.message),
            None => write!(f, "{}: {}", self.place, self.message),
        }
    }
}

/// A configuration swarm cannot use: every problem of every file and variable it read, in the
/// order it read them (the user's file or `--config FILE`, `.swarm.toml`, the environment), a
/// file's by line. Shown as task-file problems are: the place, how many, then one line each.
#[derive(Debug)]
pub struct ConfigError {
    pub problems: Vec<Problem>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.problems.len();
        let place = match self.problems.split_first() {
            Some((first, rest)) if rest.iter().all(|p| p.place == first.place) => {
                first.place.to_string()
            }
            _ => "the configuration".to_owned(),
        };
        let s = if n == 1 { "" } else { "s" };
        write!(f, "{place} has {n} problem{s}; nothing ran")?;
        for p in &self.problems {
            write!(f, "\n  {p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}

/// The kinds of agent profile.
const KINDS: [&str; 2] = ["cli", "acp"];
/// The parsers an agent profile may name.
const PARSERS: [&str; 3] = ["text", "claude-json", "codex-jsonl"];
/// The keys of an `[agents.NAME]` table, with what each must be.
const PROFILE_KEYS: [(&str, Shape); 10] = [
    ("command", Shape::Text),
    ("args", Shape::Strings),
    ("reader-args", Shape::Strings),
    ("writer-args", Shape::Strings),
    ("parser", Shape::OneOf(&PARSERS)),
    ("pass-env", Shape::Strings),
    ("drop-env", Shape::Strings),
    ("set-env", Shape::Variables),
    ("kind", Shape::OneOf(&KINDS)),
    ("max-concurrent", Shape::Count),
];
/// The profiles swarm has built in: a table of one of their names changes it, so it needs no
/// `command`.
const BUILT_IN_PROFILES: [&str; 2] = ["claude", "codex"];
pub(crate) const REPO_FILE: &str = ".swarm.toml";

/// What an attempt's transcript keeps of what it prints when nothing says otherwise: the
/// largest transcripts of real agent sessions are tens of MiB (a long Claude Code session's
/// JSON holds every file it read), which stay whole, while a runaway stops there.
pub(crate) const DEFAULT_TRANSCRIPT_CAP: &str = "64MiB";
/// The least `transcript-cap` may be: room for a failed attempt's last lines and some more.
const MIN_TRANSCRIPT_CAP: u64 = 64 << 10;

/// `transcript-cap`'s value in bytes, or why it is not one.
pub(crate) fn parse_transcript_cap(text: &str) -> Result<u64, String> {
    let bytes = parse_size(text)?;
    if bytes < MIN_TRANSCRIPT_CAP {
        return Err(format!("{text:?} is too small: use at least 64KiB"));
    }
    Ok(bytes)
}

/// A size: a whole number of bytes, or of `K`, `M` or `G` (also written `KiB`/`KB`, `MiB`/`MB`,
/// `GiB`/`GB`, in any case), each 1024 of the one before, as `docker` counts them: `64MiB`,
/// `64m` and `67108864` are the same.
pub(crate) fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let bad = || {
        format!("bad size {t:?}: use a whole number of bytes, or of KiB, MiB or GiB (as in 64MiB)")
    };
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(digits);
    let n: u64 = n.parse().map_err(|_| bad())?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return Err(bad()),
    };
    n.checked_mul(1 << shift).ok_or_else(bad)
}
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
    transcript_cap: Option<String>,
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
            transcript_cap: self.transcript_cap,
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
/// of the user config; unlike the default files, it must exist. Every file and variable is read
/// and checked before any problem is returned, so all of them are reported at once.
pub fn load(
    repo_root: Option<&Path>,
    flags: &Options,
    env: &dyn Fn(&str) -> Option<String>,
    explicit: Option<&Path>,
) -> Result<Config, ConfigError> {
    let home = env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let mut problems = Vec::new();
    let user = match explicit {
        Some(path) => {
            let path = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
            read_file(
                &path,
                home.as_deref(),
                Some("named by --config"),
                &mut problems,
            )
        }
        None => user_config_path(env, home.as_deref())
            .and_then(|path| read_file(&path, home.as_deref(), None, &mut problems)),
    };
    let repo = repo_root
        .and_then(|root| read_file(&root.join(REPO_FILE), home.as_deref(), None, &mut problems));
    let env = env_layer(env, &mut problems);
    if !problems.is_empty() {
        return Err(ConfigError { problems });
    }
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
    let mut layers = vec![flags, env];
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

/// The options the `SWARM_*` variables set; each variable that does not parse is a problem.
fn env_layer(env: &dyn Fn(&str) -> Option<String>, problems: &mut Vec<Problem>) -> Layer {
    let mut layer = Layer::default();
    for key in Key::ALL {
        let Some(var) = key.var() else { continue };
        let Some(text) = env(var).filter(|t| !t.trim().is_empty()) else {
            continue;
        };
        match key
            .parse_into(&text, &mut layer.options)
            .and_then(|()| key.check(&layer.options))
        {
            Ok(()) => layer.set.push((key, Source::Env(var.to_owned()))),
            Err(e) => problems.push(Problem {
                place: Place::Var(var),
                line: None,
                message: format!("invalid value for `{}`: {e}", key.name()),
            }),
        }
    }
    layer
}

/// Reads one config file, adding its problems to `problems`; `None` when there is no file or
/// it has problems. A missing file is a problem only when `named` says why it must exist.
fn read_file(
    path: &Path,
    home: Option<&Path>,
    named: Option<&str>,
    problems: &mut Vec<Problem>,
) -> Option<FileLayer> {
    let problem = |message: String| Problem {
        place: Place::File(path.to_owned()),
        line: None,
        message,
    };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(named) = named {
                problems.push(problem(format!("no such file ({named})")));
            }
            return None;
        }
        Err(e) => {
            problems.push(problem(format!("could not read the config file: {e}")));
            return None;
        }
    };
    let mut found = match parse_file(path, &text, home) {
        Ok(file) => return Some(file),
        Err(found) => found,
    };
    // A file's problems by line; those of the whole file first.
    found.sort_by_key(|(line, _)| *line);
    problems.extend(found.into_iter().map(|(line, message)| Problem {
        place: Place::File(path.to_owned()),
        line,
        message,
    }));
    None
}

/// Parses a config file's text, or finds every problem of it, each with its line: the syntax
/// (nothing more is checked when it is wrong), then every key and the type of every value,
/// then the values of what is left.
fn parse_file(
    path: &Path,
    text: &str,
    home: Option<&Path>,
) -> Result<FileLayer, Vec<(Option<usize>, String)>> {
    let line = |span: Option<Range<usize>>| span.map(|s| line_of(text, s.start));
    let (mut table, syntax) = DeTable::parse_recoverable(text);
    if !syntax.is_empty() {
        return Err(syntax
            .into_iter()
            .map(|e| (line(e.span()), e.message().to_owned()))
            .collect());
    }
    // As written, for what the checks take out.
    let written = table.get_ref().clone();
    let mut found = Vec::new();
    check::check(table.get_mut(), &PROFILE_KEYS, &pool::POOL_KEYS, &mut found);
    let mut problems: Vec<(Option<usize>, String)> = found
        .into_iter()
        .map(|(span, why)| (line(Some(span)), why))
        .collect();
    // What is left has the types the fields take, so this fails only on a bug in the checks.
    let parsed = match FileOptions::deserialize(toml::de::Deserializer::from(table.clone())) {
        Ok(parsed) => parsed,
        Err(e) => {
            problems.push((line(e.span()), e.message().to_owned()));
            return Err(problems);
        }
    };
    let table = table.get_ref();
    let line_at = |keys: &[&str]| line(value_span(table, keys));
    let mut at = |keys: &[&str], message: String| problems.push((line_at(keys), message));
    let (mut options, profiles, mut pools) = parsed.into_options();
    let mut set = Vec::new();
    for key in Key::ALL.into_iter().filter(|k| k.in_files()) {
        if value_span(table, &[key.name()]).is_none() {
            continue;
        }
        match key.check(&options) {
            Ok(()) => set.push((key, Source::File(path.to_owned()))),
            Err(e) => at(&[key.name()], format!("`{}`: {e}", key.name())),
        }
    }
    for (name, spec) in &profiles {
        if spec.max_concurrent == Some(0) {
            at(
                &["agents", name, "max-concurrent"],
                format!("agent `{name}`: `max-concurrent` must be at least 1"),
            );
        }
        if !meant(&written, &["agents", name], "command")
            && !BUILT_IN_PROFILES.contains(&name.as_str())
        {
            at(
                &["agents", name],
                format!(
                    "agent `{name}` has no `command`: name the program to run (only the built-in {} need none)",
                    BUILT_IN_PROFILES.join(" and ")
                ),
            );
        }
    }
    if let Some(dir) = options.worktree_dir.take() {
        options.worktree_dir = Some(resolve_path(&dir, path, home));
    }
    pools.retain(|name, _| {
        value_span(table, &["pools", name, "members"]).is_some()
            || !meant(&written, &["pools", name], "members")
    });
    let pools = pool::check(pools, path, line_at, &mut problems);
    if !problems.is_empty() {
        return Err(problems);
    }
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

/// Whether the table at `path` was written with `key` or with a key near it: when the checks
/// took that out (a value of the wrong type, a misspelt key), what they reported says why it is
/// missing, and its absence is not reported too.
fn meant(written: &DeTable<'_>, path: &[&str], key: &str) -> bool {
    table_at(written, path).is_some_and(|table| {
        table
            .iter()
            .any(|(k, _)| check::nearest(k.get_ref(), &[key]).is_some())
    })
}

/// The table at `path` (table keys from the top), if there is one.
fn table_at<'t, 'i>(table: &'t DeTable<'i>, path: &[&str]) -> Option<&'t DeTable<'i>> {
    let Some((first, rest)) = path.split_first() else {
        return Some(table);
    };
    let (_, value) = table.iter().find(|(k, _)| k.get_ref().as_ref() == *first)?;
    match value.get_ref() {
        DeValue::Table(inner) => table_at(inner, rest),
        _ => None,
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
