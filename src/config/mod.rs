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
//! Every run option is declared once, in `options`: its key in files (kebab-case TOML), its
//! `SWARM_*` variable (an empty one counts as unset; lists are comma-separated, switches
//! 1/true/yes or 0/false/no), its flag, its default; `swarm config` lists them all. Options that
//! belong to one run (`final-out`, `base`, …) are flags only. Beside the options, files hold
//! `[agents.NAME]` tables, agent profiles ([`ProfileSpec`]; a repository profile replaces a user
//! profile of the same name), and `[pools.NAME]` tables (`members = [...]`, see `pool`), which
//! `pool:NAME` names wherever an agent is named. There is no `api-key`: keys come from
//! `SWARM_API_KEY` only, so they stay out of repositories.
//!
//! A problem does not stop the reading: every file and variable is read and checked, and all
//! their problems are returned together ([`ConfigError`]), each with its file and line or its
//! variable; unknown keys with the known key nearest them, types in plain words (`check`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

mod check;
mod choice;
mod file;
mod key;
mod layer;
mod options;
mod pool;
mod record;
mod setting;
mod show;
mod spawn;
#[cfg(test)]
mod tests;

use check::Shape;
pub(crate) use choice::Choice;
pub use choice::{
    Confine, ConfineNet, Deliver, Forecast, ForgeKind, Land, Lessons, Pick, ReportFormat, Spawning,
};
use file::read_file;
#[cfg(test)]
use key::Key;
pub(crate) use key::MAX_SLOTS;
use layer::{Layer, merge};
pub(crate) use options::{Defaults, Options, overlay, run_options};
pub use pool::{POOL_PREFIX, PoolDef, pool_name};
pub(crate) use record::{from_record, to_record};
pub use show::{describe, to_json};
pub use spawn::SpawnLimits;

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
    /// Directories (or files) the agent writes besides its checkout and TMPDIR, confined (`~/`
    /// for the home): its own state.
    pub writes: Option<Vec<String>>,
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
const PROFILE_KEYS: [(&str, Shape); 11] = [
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
    ("writes", Shape::Strings),
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
    let env = Layer::env(env, &mut problems);
    if !problems.is_empty() {
        return Err(ConfigError { problems });
    }
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
    let mut layers = vec![Layer::flags(flags), env];
    layers.extend([repo, user].into_iter().flatten().map(|f| f.layer));
    let (options, sources) = merge(&layers);
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
