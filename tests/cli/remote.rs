//! Runs spread over machines through a git remote: a bare repository on disk is the remote,
//! the user's repository runs the coordinator, and each worker runs in its own clone with its
//! own HOME, as on separate CI runners.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use crate::{TestRepo, assert_exit, search_path, status_json, stderr, tasks_with_status};

/// How often coordinator and workers look at the remote in these tests, in seconds.
const POLL: &str = "0.05";

/// A remote, the user's repository (the coordinator's) and a place for files the tasks of
/// every machine share.
struct Cluster {
    tmp: tempfile::TempDir,
    user: TestRepo,
    remote: PathBuf,
}

/// A worker's machine: a clone of the remote with its own HOME.
struct Runner {
    root: PathBuf,
    home: PathBuf,
}

impl Cluster {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let remote = tmp.path().join("remote.git");
        let user = TestRepo::at(&tmp.path().join("user"));
        git(tmp.path(), &["init", "-q", "--bare", "-b", "main", "remote.git"]);
        user.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
        user.git(&["push", "-q", "origin", "main"]);
        std::fs::create_dir_all(tmp.path().join("shared")).unwrap();
        Self { tmp, user, remote }
    }

    /// A file beside the repositories that every machine's tasks can reach.
    fn shared(&self, name: &str) -> PathBuf {
        self.tmp.path().join("shared").join(name)
    }

    fn runner(&self, name: &str) -> Runner {
        let home = self.tmp.path().join(format!("{name}-home"));
        std::fs::create_dir_all(&home).unwrap();
        git(
            self.tmp.path(),
            &["clone", "-q", self.remote.to_str().unwrap(), name],
        );
        Runner {
            root: self.tmp.path().join(name),
            home,
        }
    }

    /// The coordinator: `swarm` in the user's repository.
    fn swarm(&self, args: &[&str]) -> Command {
        let mut cmd = self.user.swarm_cmd();
        cmd.env("SWARM_REMOTE_POLL", POLL).args(args);
        cmd
    }

    /// The refs the remote has under `refs/swarm/`.
    fn remote_refs(&self) -> Vec<String> {
        git(&self.remote, &["for-each-ref", "--format=%(refname)", "refs/swarm/"])
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The task file `lines` beside the repositories.
    fn tasks(&self, lines: &[String]) -> PathBuf {
        let path = self.tmp.path().join("tasks.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    }
}

impl Runner {
    fn swarm(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_swarm"));
        cmd.current_dir(&self.root)
            .env_clear()
            .env("PATH", search_path())
            .env("HOME", &self.home)
            .env("XDG_CACHE_HOME", self.home.join("cache"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("NO_COLOR", "1")
            .env("TZ", "UTC")
            .env("SWARM_REMOTE_POLL", POLL)
            .args(args)
            .stdin(Stdio::null());
        cmd
    }

    /// `swarm worker --remote origin` with `args`, started.
    fn start(&self, args: &[&str]) -> Child {
        let mut all = vec!["worker", "--remote", "origin", "--wait", "60s"];
        all.extend_from_slice(args);
        self.swarm(&all)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", search_path())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Test User")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test User")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Waits for a worker and returns its output.
fn finish(mut child: Child) -> Output {
    let status = child.wait().unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    child.stderr.take().unwrap().read_to_end(&mut err).unwrap();
    Output {
        status,
        stdout: out,
        stderr: err,
    }
}

/// The lines of a file the tasks append their ids to, sorted.
fn ran(path: &Path) -> Vec<String> {
    let mut lines: Vec<String> = std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

/// The events of kind `kind` in the coordinator's newest run's log, as (task, detail).
fn events(repo: &TestRepo, kind: &str) -> Vec<(String, serde_json::Value)> {
    let run = crate::run_id(repo);
    let log = repo.swarm_dir().join("runs").join(run).join("events.jsonl");
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["kind"] == kind)
        .map(|e| {
            (
                e["task"].as_str().unwrap_or_default().to_owned(),
                e["detail"].clone(),
            )
        })
        .collect()
}

/// The plan of the first test: 15 writers, 14 readers each after one writer (and seeing its
/// file), and a reducer after every reader; each task appends its id to `log`.
fn thirty_tasks(log: &Path) -> Vec<String> {
    let log = log.display();
    let mut lines = Vec::new();
    for i in 0..15 {
        lines.push(format!(
            r#"{{"id":"w{i}","title":"write {i}","mode":"write","run":"echo w{i} >> {log}; echo {i} > w{i}.txt"}}"#
        ));
    }
    for i in 0..14 {
        lines.push(format!(
            r#"{{"id":"r{i}","title":"read {i}","deps":["w{i}"],"run":"echo r{i} >> {log}; cat w{i}.txt"}}"#
        ));
    }
    let readers: Vec<String> = (0..14).map(|i| format!("\"r{i}\"")).collect();
    lines.push(format!(
        r#"{{"id":"sum","title":"reduce","deps":[{}],"run":"echo sum >> {log}; cat \"$SWARM_DEPS_DIR\"/* | awk '{{s+=$1}} END {{print s}}' "}}"#,
        readers.join(",")
    ));
    lines
}

#[test]
fn thirty_tasks_over_three_workers_run_once_each_merge_once_and_land() {
    let c = Cluster::new();
    let log = c.shared("ran");
    let tasks = c.tasks(&thirty_tasks(&log));
    let workers: Vec<Child> = (1..=3)
        .map(|k| c.runner(&format!("w{k}")).start(&["-j", "3"]))
        .collect();
    let report = c.tmp.path().join("report.md");
    let out = c
        .swarm(&[
            "run",
            tasks.to_str().unwrap(),
            "--remote",
            "origin",
            "--final-out",
            report.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    for w in workers {
        let w = finish(w);
        assert_exit(&w, 0);
        assert!(stderr(&w).contains("has no work left"), "{}", stderr(&w));
    }
    // Every task ran once, on some worker; the coordinator ran none itself.
    let mut expected: Vec<String> = (0..15)
        .map(|i| format!("w{i}"))
        .chain((0..14).map(|i| format!("r{i}")))
        .chain(["sum".to_owned()])
        .collect();
    expected.sort();
    assert_eq!(ran(&log), expected);
    assert!(!stderr(&out).contains("result pushed"));
    // Each writer merged once, and the user's branch holds them all.
    let merged: Vec<String> = events(&c.user, "merged").into_iter().map(|(t, _)| t).collect();
    assert_eq!(merged.len(), 15, "{merged:?}");
    for i in 0..15 {
        assert_eq!(c.user.read(&format!("w{i}.txt")), format!("{i}\n"));
    }
    let status = status_json(&c.user);
    assert_eq!(tasks_with_status(&status, "done").len(), 30);
    // The reducer saw what the readers saw: 0 + 1 + … + 13.
    let report = std::fs::read_to_string(report).unwrap();
    assert!(report.contains("91"), "{report}");
    assert!(c.remote_refs().is_empty(), "{:?}", c.remote_refs());
}
