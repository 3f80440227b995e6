//! Confinement by the kernel: every process swarm starts for a task (agents of every kind, `run`
//! tasks, checks, setups, the gate, resolvers, the built-in agent's allowed programs) runs under
//! Landlock rules that let it write only its own checkout, its `TMPDIR`, its spawn file and what
//! its profile or the configuration declares, and read everything but the user's secret stores,
//! the user's git directory (beyond the objects its checkout borrows) and other tasks'
//! checkouts. The rules are made in swarm, kept for the attempts that share them, and put in
//! force on a thread of swarm's that then starts those attempts' processes (see
//! `rules::Starter`); see the manual's "What an agent can and cannot do to your machine" (docs/src/checkouts.md).
//!
//! Landlock allows by path and cannot deny one, so a denied path is made by allowing its
//! siblings, and theirs up to `/` (see `walk`); the directories on the way are only listable.

#[cfg(target_os = "linux")]
mod rules;
#[cfg(target_os = "linux")]
mod sys;
mod walk;

use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{Arc, OnceLock};

/// The secret stores no task reads, under the user's home: keys, cloud and registry
/// credentials, keyrings.
pub(crate) const SECRET_STORES: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gh",
    ".netrc",
    ".docker/config.json",
    ".local/share/keyrings",
    ".git-credentials",
    ".config/git/credentials",
    ".kube",
    ".password-store",
    ".config/gcloud",
    ".azure",
    ".pypirc",
    ".cargo/credentials.toml",
    ".cargo/credentials",
];

/// Device files every process may write: the sinks and sources of bytes programs open by name,
/// and the terminal.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// The variable that caps the Landlock ABI swarm uses: `0` behaves as a kernel without
/// Landlock (to see what `confine = "require"` does there, or to compare).
pub(crate) const ABI_VAR: &str = "SWARM_LANDLOCK_ABI";

/// The run's confinement as configured (`confine`, `read-deny`, `read-allow`, `write-allow`,
/// `confine-net`), paths with `~` expanded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Setting {
    /// `confine = "off"`: nothing is confined.
    pub off: bool,
    /// `confine = "require"`: a run that cannot be confined does not start.
    pub require: bool,
    pub read_deny: Vec<PathBuf>,
    pub read_allow: Vec<PathBuf>,
    pub write_allow: Vec<PathBuf>,
    /// TCP connects only to these ports (and the task's own block), where the kernel can.
    pub connect: Option<Vec<u16>>,
}

/// What confines the run's tasks, as `swarm config` and the report say it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum InForce {
    /// `confine = "off"`.
    Off,
    /// The kernel cannot; why.
    Unavailable(String),
    /// Landlock, at this ABI.
    Landlock(i32),
}

impl fmt::Display for InForce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Off => f.write_str("off (confine = \"off\"): tasks run with all of your access"),
            Self::Unavailable(why) => write!(f, "unavailable ({why}): tasks run unconfined"),
            Self::Landlock(abi) => write!(
                f,
                "Landlock (ABI {abi}): tasks write only their checkout and TMPDIR and read none of your secret stores"
            ),
        }
    }
}

impl InForce {
    /// As `swarm config --json` shows it: `{"kind": "landlock", "abi": 7}`, `{"kind": "off"}`,
    /// `{"kind": "unavailable", "why": …}`.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        match self {
            Self::Off => serde_json::json!({ "kind": "off" }),
            Self::Unavailable(why) => serde_json::json!({ "kind": "unavailable", "why": why }),
            Self::Landlock(abi) => serde_json::json!({ "kind": "landlock", "abi": abi }),
        }
    }

    /// The report's sentence on it.
    pub(crate) fn summary(&self) -> String {
        match self {
            Self::Off => "Tasks ran unconfined (confine = \"off\").".to_owned(),
            Self::Unavailable(why) => format!("Tasks ran unconfined: {why}."),
            Self::Landlock(_) => "Tasks ran confined by the kernel (Landlock): each wrote only its own directory and TMPDIR and read none of your secret stores.".to_owned(),
        }
    }
}

/// The cap `SWARM_LANDLOCK_ABI` sets, if any; an error that says what is wrong with its value.
pub(crate) fn abi_cap() -> Result<Option<i32>, String> {
    let Some(v) = std::env::var_os(ABI_VAR) else {
        return Ok(None);
    };
    let v = v.to_string_lossy();
    v.trim()
        .parse::<u8>()
        .map(|n| Some(i32::from(n)))
        .map_err(|_| {
            format!(
                "{ABI_VAR}={v:?} is not a Landlock ABI: give a whole number, 0 to behave as a kernel without Landlock"
            )
        })
}

/// What the kernel can do here: its Landlock ABI (capped by `SWARM_LANDLOCK_ABI`), or why
/// there is none.
pub(crate) fn kernel() -> Result<i32, String> {
    let cap = abi_cap()?;
    if cap == Some(0) {
        return Err(format!(
            "{ABI_VAR}=0 says to behave as a kernel without Landlock"
        ));
    }
    #[cfg(target_os = "linux")]
    let abi = sys::abi()?;
    #[cfg(not(target_os = "linux"))]
    let abi: i32 = return Err("Landlock is a Linux feature; this system has none".to_owned());
    Ok(cap.map_or(abi, |c| c.min(abi)))
}

impl Setting {
    /// What will confine tasks under this setting on this machine.
    pub(crate) fn in_force(&self) -> InForce {
        if self.off {
            return InForce::Off;
        }
        match kernel() {
            Ok(abi) => InForce::Landlock(abi),
            Err(why) => InForce::Unavailable(why),
        }
    }
}

/// The run's confiner: its setting, what the kernel can do, and the run-wide rules, made once
/// when the first attempt needs them.
#[derive(Debug)]
pub(crate) struct Confiner {
    pub setting: Setting,
    pub in_force: InForce,
    #[cfg(target_os = "linux")]
    policy: OnceLock<rules::Policy>,
    #[cfg(not(target_os = "linux"))]
    policy: OnceLock<()>,
}

/// What one attempt may do beyond the run's rules.
#[derive(Debug, Clone, Default)]
pub(crate) struct Own {
    /// Its directory: a writer's checkout, a reader's snapshot, the gate's checkout.
    pub checkout: PathBuf,
    /// Whether it may write its directory: a reader may not write its snapshot.
    pub writes_checkout: bool,
    /// Readable and writable: its `TMPDIR`.
    pub tmp: Option<PathBuf>,
    /// Writable besides: its spawn file, the directories its agent's profile declares.
    pub writes: Vec<PathBuf>,
    /// Readable besides: its `$SWARM_DEPS_DIR`.
    pub reads: Vec<PathBuf>,
    /// TCP ports it may connect to besides the run's (its `SWARM_PORTS`).
    pub ports: Vec<u16>,
}

/// Where the run's own files are, which are denied to every task but for each one's share.
#[derive(Debug, Clone)]
pub(crate) struct Places {
    /// The user's git directory (the common one).
    pub git_dir: PathBuf,
    /// Where the repository's runs keep their checkouts.
    pub checkouts: PathBuf,
}

/// One attempt's confinement, made: put in force in each process it starts.
#[derive(Clone)]
pub(crate) struct Confinement {
    /// What starts its processes.
    #[cfg(target_os = "linux")]
    starter: rules::Starter,
    /// The paths no task reads, for telling what a refusal was.
    denied: Arc<[PathBuf]>,
    /// What this attempt may write.
    writable: Vec<PathBuf>,
    /// What this attempt may read although it is under a denied path (its own share).
    readable: Vec<PathBuf>,
}

impl fmt::Debug for Confinement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Confinement")
            .field("writable", &self.writable)
            .finish_non_exhaustive()
    }
}

impl Confiner {
    pub(crate) fn new(setting: Setting) -> Arc<Self> {
        let in_force = setting.in_force();
        Arc::new(Self {
            setting,
            in_force,
            policy: OnceLock::new(),
        })
    }

    /// A confiner whose kernel is taken to do `in_force` (the simulation of the run loop).
    #[cfg(test)]
    pub(crate) fn as_if(in_force: InForce) -> Arc<Self> {
        Arc::new(Self {
            setting: Setting::default(),
            in_force,
            policy: OnceLock::new(),
        })
    }

    /// Whether the run's tasks run confined.
    pub(crate) fn confines(&self) -> bool {
        matches!(self.in_force, InForce::Landlock(_))
    }

    /// The confinement of one attempt, or `None` when tasks run unconfined (off, or a kernel
    /// that cannot). An error when the rules cannot be made: the attempt must not run then.
    pub(crate) fn attempt(
        &self,
        places: &Places,
        own: &Own,
    ) -> anyhow::Result<Option<Confinement>> {
        let InForce::Landlock(abi) = self.in_force else {
            return Ok(None);
        };
        #[cfg(target_os = "linux")]
        {
            let policy = self
                .policy
                .get_or_init(|| rules::Policy::new(&self.setting, abi, places));
            policy.attempt(own).map(Some)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (abi, places, own, &self.policy);
            Ok(None)
        }
    }
}

/// Starts `cmd`, confined by `confine` when given; the command goes with it (its ends of the
/// process's pipes closed).
pub(crate) fn spawn(mut cmd: Command, confine: Option<&Confinement>) -> std::io::Result<Child> {
    #[cfg(target_os = "linux")]
    if let Some(confine) = confine {
        return confine.starter.start(cmd);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = confine;
    cmd.spawn()
}

impl Confinement {
    /// Whether the kernel lets this attempt's processes write anything at or under `dir`:
    /// a writable path inside it, or one that holds it.
    pub(crate) fn may_write_in(&self, dir: &Path) -> bool {
        let dir = real(dir);
        self.writable
            .iter()
            .any(|w| w.starts_with(&dir) || dir.starts_with(w))
    }

    /// The paths the kernel refused in `text` (what an attempt printed), as lines for its
    /// transcript: a line that says a permission was denied, naming a path this confinement
    /// denies (a secret store, another task's checkout) or may not write. Relative paths are
    /// read from `cwd`. At most 20, each once.
    pub(crate) fn refusals(&self, text: &str, cwd: &Path) -> Vec<String> {
        let mut found: Vec<String> = Vec::new();
        let under = |path: &Path, list: &[PathBuf]| list.iter().any(|p| path.starts_with(p));
        for path in text.lines().flat_map(|line| refused_paths(line, cwd)) {
            let why = if under(&path, &self.writable) {
                // Not refused by these rules.
                continue;
            } else if under(&path, &self.denied) && !under(&path, &self.readable) {
                "no task may read it (a secret store, your git directory or another task's checkout; see read-allow)"
            } else {
                "outside what this task may write (its TMPDIR, and a writer's checkout; see write-allow)"
            };
            let said = format!("{}: {why}", path.display());
            if !found.contains(&said) && found.len() < 20 {
                found.push(said);
            }
        }
        found
    }
}

/// The start of each line `refusals` finds, in a transcript.
pub(crate) const REFUSED: &str = "swarm: the kernel refused ";

/// The words programs say `EACCES` with.
const DENIED: [&str; 3] = ["Permission denied", "permission denied", "EACCES"];

/// The paths a line of output says a permission was denied on: for each time it says so, the
/// last path before the words since the last time (`cat: /x: Permission denied`), else the
/// first after them (`EACCES: permission denied, open '/x'`). A line may say it many times
/// (an agent's whole answer as one line of JSON).
fn refused_paths(line: &str, cwd: &Path) -> Vec<PathBuf> {
    let mut at: Vec<usize> = DENIED
        .iter()
        .flat_map(|w| line.match_indices(w).map(|(i, _)| i))
        .collect();
    at.sort_unstable();
    // "EACCES: permission denied" says it once.
    at.dedup_by(|b, a| *b - *a < 32);
    let split = |text: &str| -> Vec<String> {
        text.split(|c: char| {
            c.is_whitespace()
                || matches!(
                    c,
                    '\'' | '"' | '`' | ',' | ';' | '(' | ')' | '[' | ']' | '{' | '}' | '<' | '>'
                )
        })
        .map(|w| {
            w.trim_end_matches([':', '.'])
                .trim_end_matches("\\n")
                .to_owned()
        })
        .filter(|w| !w.is_empty())
        .collect()
    };
    let words = |text: &str| -> Vec<PathBuf> {
        split(text).iter().filter_map(|w| as_path(w, cwd)).collect()
    };
    let mut found = Vec::new();
    for (k, &i) in at.iter().enumerate() {
        let from = if k == 0 { 0 } else { at[k - 1] };
        let to = at.get(k + 1).copied().unwrap_or(line.len());
        // Right before the words, a file's name alone (`sneaky.txt: Permission denied`).
        let named = split(&line[from..i])
            .pop()
            .filter(|w| w.contains('.') && !w.contains(['/', ':', '=']) && !w.starts_with('.'))
            .map(|w| cwd.join(w));
        let before = words(&line[from..i]).pop().or(named);
        if let Some(path) = before.or_else(|| words(&line[i..to]).into_iter().next()) {
            found.push(path);
        }
    }
    found
}

/// `word` as a path, when it reads as one: absolute, `~/…`, or relative with a `/` in it
/// (read from `cwd`); `.` and `..` taken away as the words say.
fn as_path(word: &str, cwd: &Path) -> Option<PathBuf> {
    let path = if let Some(rest) = word.strip_prefix("~/") {
        home()?.join(rest)
    } else if word.starts_with('/') {
        PathBuf::from(word)
    } else if word.contains('/') && !word.contains("://") {
        cwd.join(word)
    } else {
        return None;
    };
    let mut clean = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                clean.pop();
            }
            Component::CurDir => {}
            c => clean.push(c),
        }
    }
    (clean.components().count() > 1).then_some(clean)
}

/// The user's home, as swarm's own process has it.
pub(crate) fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// `path` with a leading `~/` read as the user's home and a leading `$NAME` as that variable;
/// `None` when what it starts with is not set.
pub(crate) fn expand(path: &str) -> Option<PathBuf> {
    if let Some(rest) = path.strip_prefix("~/") {
        return Some(home()?.join(rest));
    }
    if let Some(named) = path.strip_prefix('$') {
        let (name, rest) = named.split_once('/').unwrap_or((named, ""));
        let value = std::env::var_os(name).filter(|v| !v.is_empty())?;
        return Some(PathBuf::from(value).join(rest));
    }
    Some(PathBuf::from(path))
}

/// `path` with its links resolved, when it exists; else as given.
fn real(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_owned())
}

#[cfg(test)]
mod tests;
