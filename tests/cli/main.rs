//! The one integration-test binary: the real `swarm` binary against real temporary git
//! repositories with a fixed identity and fixed dates, and scriptable fake agents.

mod acp;
mod agents;
mod browser;
mod cache;
mod candidates;
mod ci_templates;
mod completions;
mod confine;
pub mod deliver;
mod display;
mod engine;
mod examples;
pub mod fake_agents;
pub mod fake_forge;
pub mod fake_llm;
mod faults;
pub mod forge;
pub mod gate;
mod generated;
pub mod goal;
mod goals;
pub mod graph_svg;
mod landing;
pub mod lifeline;
mod manual;
mod memory;
mod merge_gate;
mod mirror;
pub mod model_server;
mod outputs;
mod pools;
mod prepare;
pub mod pty;
mod real_agents;
pub mod remote;
mod report;
mod resume;
mod snapshots;
mod steer;
mod terminal;
mod tidy;
mod traces;
mod tui;
mod untrusted;
pub mod web;
mod writers;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A temporary git repository with one commit, plus a private cache dir for worktrees, and a
/// directory beside it for the files a test and its tasks share (see `outside`).
pub struct TestRepo {
    _tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub cache: PathBuf,
    _shared: tempfile::TempDir,
    /// Where the test and its tasks share files: under `shared_dir`, which tasks may write.
    pub shared: PathBuf,
}

impl Default for TestRepo {
    fn default() -> Self {
        Self::new()
    }
}

impl TestRepo {
    /// A repository holding `README.md` and `src/lib.rs`, committed once.
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().join("repo");
        Self::make(tmp, root)
    }

    /// The same repository at `root` (its cache and task files in a temporary directory).
    pub fn at(root: &Path) -> Self {
        Self::make(tempfile::tempdir().expect("tempdir"), root.to_owned())
    }

    fn make(tmp: tempfile::TempDir, root: PathBuf) -> Self {
        let cache = tmp.path().join("cache");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(&cache).unwrap();
        let shared = shared_tempdir();
        let repo = Self {
            _tmp: tmp,
            root,
            cache,
            shared: shared.path().to_owned(),
            _shared: shared,
        };
        repo.git(&["init", "-q", "-b", "main"]);
        repo.write("README.md", "# demo\n");
        repo.write("src/lib.rs", "pub fn one() -> u32 {\n    1\n}\n");
        repo.commit_all("initial");
        repo
    }

    /// Runs git in the repository with a fixed identity and date; panics on failure.
    pub fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(&self.root)
            .env_clear()
            .env("PATH", search_path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "Test User")
            .env("GIT_AUTHOR_EMAIL", "test@example.com")
            .env("GIT_COMMITTER_NAME", "Test User")
            .env("GIT_COMMITTER_EMAIL", "test@example.com")
            .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", self.cache.parent().unwrap())
            .output()
            .expect("running git");
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    pub fn commit_all(&self, message: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", message]);
    }

    pub fn write(&self, rel: &str, text: &str) {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel)).unwrap()
    }

    /// Writes a task file outside the checkout and returns its path.
    pub fn tasks(&self, lines: &[&str]) -> PathBuf {
        let p = self.cache.parent().unwrap().join("tasks.jsonl");
        std::fs::write(&p, lines.join("\n") + "\n").unwrap();
        p
    }

    /// The swarm command for this repository, with a clean environment.
    pub fn swarm_cmd(&self) -> Command {
        self.command(env!("CARGO_BIN_EXE_swarm"))
    }

    /// `program` in this repository with swarm's clean environment (to wrap swarm in a shell).
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        // Nothing of the environment the tests run in (a git hook's GIT_DIR, the user's
        // SWARM_* settings, API keys) reaches swarm.
        cmd.current_dir(&self.root)
            .env_clear()
            .env("PATH", search_path())
            .env("XDG_CACHE_HOME", &self.cache)
            .env("HOME", self.cache.parent().unwrap())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("NO_COLOR", "1")
            // Reset times an agent prints without a zone are read in the machine's zone.
            .env("TZ", "UTC")
            // Tasks run confined: what they share with the test (logs, fakes' state) is where
            // they may write, and nothing else of the test's (the repository, its home).
            .env("SWARM_WRITE_ALLOW", shared_dir())
            // ...and the run's event log is what `after_event` tasks wait on.
            .env("SWARM_READ_ALLOW", self.swarm_dir().join("runs"))
            .stdin(std::process::Stdio::null());
        cmd
    }

    /// Starts swarm with `args`, its output captured, without waiting for it.
    pub fn spawn(&self, args: &[&str]) -> std::process::Child {
        self.swarm_cmd()
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("starting swarm")
    }

    pub fn swarm(&self, args: &[&str]) -> Output {
        self.swarm_cmd().args(args).output().expect("running swarm")
    }

    /// The board directory: `<git common dir>/swarm`.
    pub fn swarm_dir(&self) -> PathBuf {
        self.root.join(".git").join("swarm")
    }

    /// Every byte a user could lose: HEAD, the index and every file outside `.git`.
    pub fn state(&self) -> BTreeMap<String, Vec<u8>> {
        let mut out = BTreeMap::new();
        out.insert(
            "HEAD".into(),
            std::fs::read(self.root.join(".git/HEAD")).unwrap(),
        );
        out.insert(
            "HEAD commit".into(),
            self.git(&["rev-parse", "HEAD"]).into_bytes(),
        );
        out.insert(
            "index".into(),
            std::fs::read(self.root.join(".git/index")).unwrap_or_default(),
        );
        collect_files(&self.root, &self.root, &mut out);
        out
    }
}

fn collect_files(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        if path == root.join(".git") {
            continue;
        }
        if path.is_dir() {
            collect_files(root, &path, out);
        } else {
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            out.insert(rel, std::fs::read(&path).unwrap());
        }
    }
}

/// The `PATH` the tests' processes get: the one the tests run with.
pub fn search_path() -> std::ffi::OsString {
    std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into())
}

/// Every checkout swarm left: worktrees git knows of besides the user's checkout, and the
/// task checkouts (readers' snapshots, writers' repositories) under the cache directory.
pub fn extra_worktrees(repo: &TestRepo) -> Vec<String> {
    let mut out: Vec<String> = repo
        .git(&["worktree", "list", "--porcelain"])
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .filter(|p| std::fs::canonicalize(p).ok() != std::fs::canonicalize(&repo.root).ok())
        .map(str::to_owned)
        .collect();
    let children = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .map(|entries| entries.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default()
    };
    for per_repo in children(&repo.cache.join("swarm/worktrees")) {
        for run in children(&per_repo) {
            // A writer's checkout: its task's name, a link into `(checkouts)/`; what is there
            // without a name is listed too.
            let names = children(&run);
            let linked: Vec<PathBuf> = names
                .iter()
                .filter_map(|p| std::fs::read_link(p).ok().map(|t| run.join(t)))
                .collect();
            let places = run.join("(checkouts)");
            out.extend(
                names
                    .iter()
                    .filter(|p| **p != places)
                    .chain(children(&places).iter().filter(|p| !linked.contains(p)))
                    .map(|p| p.display().to_string()),
            );
        }
    }
    out.sort();
    out
}

/// A path beside the repository (not in it), for files a test and its tasks share: tasks may
/// write there (see `shared_dir`).
pub fn outside(repo: &TestRepo, name: &str) -> PathBuf {
    repo.shared.join(name)
}

/// A shell script `text` at `path`, made executable: an agent of one's own for a test.
pub fn executable(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    let chmod = Command::new("chmod").arg("+x").arg(path).status().unwrap();
    assert!(chmod.success(), "chmod +x {}", path.display());
}

/// The directory, kept for the test process's life, under which tests keep what their tasks
/// may write although it is outside their checkouts (`SWARM_WRITE_ALLOW`): fakes' state, logs
/// the tests read. The repositories and their homes are elsewhere, out of the tasks' reach.
pub fn shared_dir() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        tempfile::Builder::new()
            .prefix("swarm-tests-shared")
            .tempdir()
            .expect("tempdir")
            .keep()
    })
}

/// A new temporary directory under `shared_dir`.
pub fn shared_tempdir() -> tempfile::TempDir {
    tempfile::tempdir_in(shared_dir()).expect("tempdir")
}

/// `swarm status --json` of the newest run.
pub fn status_json(repo: &TestRepo) -> serde_json::Value {
    let out = repo.swarm(&["status", "--json"]);
    assert_exit(&out, 0);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("status --json: {e}\n{}", stdout(&out)))
}

/// The id of the repository's newest run.
pub fn run_id(repo: &TestRepo) -> String {
    let status = status_json(repo);
    status["run"]["id"].as_str().expect("a run id").to_owned()
}

/// The object id `git rev-parse` gives for `name`.
pub fn rev(repo: &TestRepo, name: &str) -> String {
    repo.git(&["rev-parse", name]).trim().to_owned()
}

/// The ids of the tasks with `status` in a `status --json` answer.
pub fn tasks_with_status(status: &serde_json::Value, wanted: &str) -> Vec<String> {
    status["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .filter(|t| t["status"] == wanted)
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The exit code, with stdout and stderr in the panic message when it is not `expected`.
#[track_caller]
pub fn assert_exit(o: &Output, expected: i32) {
    assert_eq!(
        o.status.code(),
        Some(expected),
        "exit status {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        o.status,
        stdout(o),
        stderr(o)
    );
}

/// Reads `swarm`'s output (its stderr or stdout pipe) line by line until a line containing
/// `text`, and returns every line read; panics if the output ends first (swarm exited).
pub fn read_until(output: &mut impl std::io::BufRead, text: &str) -> String {
    let mut read = String::new();
    loop {
        let start = read.len();
        let n = output.read_line(&mut read).unwrap();
        assert!(n > 0, "swarm's output ended before {text:?}:\n{read}");
        if read[start..].contains(text) {
            return read;
        }
    }
}

/// A file system of a test's own, small enough to fill: a tmpfs, unmounted when dropped.
pub struct SmallDisk(PathBuf);

impl SmallDisk {
    /// Mounts a tmpfs of `size` (as `mount` takes it: `6m`) at `dir`. Mounting needs root (or
    /// `CAP_SYS_ADMIN`): where it is not held the tests that come here are ignored (build.rs),
    /// but under CI, so a mount refused fails the test.
    pub fn mount(dir: &Path, size: &str) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output();
        assert!(
            mounted.as_ref().is_ok_and(|o| o.status.success()),
            "mounting a tmpfs failed (it needs root): {mounted:?}"
        );
        Self(dir.to_owned())
    }

    /// Makes the file system `size` large, keeping what it holds.
    pub fn grow(&self, size: &str) {
        let grown = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .unwrap();
        assert!(grown.success());
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Shell words for a `run` task that waits until the run's event log shows an event of `kind`
/// for `task` (a merge, a failure), so tasks are ordered by what happened, not by sleeps. The
/// wait gives up after about 30 s and the task goes on, so a run that never gets there fails
/// the test's assertions instead of hanging it.
pub fn after_event(repo: &TestRepo, kind: &str, task: &str) -> String {
    let log = repo.swarm_dir().join("runs");
    format!(
        "for _ in $(seq 3000); do grep -q '\"kind\":\"{kind}\",\"seq\":[0-9]*,\"task\":\"{task}\"' '{}'/\"$SWARM_RUN_ID\"/events.jsonl && break; sleep 0.01; done",
        log.display()
    )
}

/// The report of the repository's run (`report.md` in its run directory).
pub fn run_report(repo: &TestRepo) -> String {
    let dir = repo.swarm_dir().join("runs").join(run_id(repo));
    std::fs::read_to_string(dir.join("report.md")).expect("the run's report")
}

/// The JSON schema in the file at `path`, compiled, and the index of the part `fragment` names
/// (`#/$defs/NAME`; empty: the whole).
pub fn compiled_schema(path: &Path, fragment: &str) -> (boon::Schemas, boon::SchemaIndex) {
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let url = format!("file://{}", path.display());
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler.add_resource(&url, json).unwrap();
    let index = compiler
        .compile(&format!("{url}{fragment}"), &mut schemas)
        .unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
    (schemas, index)
}

/// Waits until `found` finds something another process makes (a file, an event in a log),
/// looking every 10 ms for about 60 s, then fails the test saying what never came.
pub fn wait_until<T>(what: &str, found: impl Fn() -> Option<T>) -> T {
    for _ in 0..6000 {
        if let Some(t) = found() {
            return t;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("{what} never came");
}
