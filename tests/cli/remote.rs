//! Runs spread over machines through a git remote: a bare repository on disk is the remote,
//! the user's repository runs the coordinator, and each worker runs in its own clone with its
//! own HOME, as on separate CI runners.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use crate::{
    TestRepo, assert_exit, search_path, status_json, stderr, stdout, tasks_with_status, wait_until,
};

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
        git(
            tmp.path(),
            &["init", "-q", "--bare", "-b", "main", "remote.git"],
        );
        user.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
        user.git(&["push", "-q", "origin", "main"]);
        Self { tmp, user, remote }
    }

    /// A file beside the repositories that every machine's tasks can reach (and write).
    fn shared(&self, name: &str) -> PathBuf {
        self.user.shared.join(name)
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

    /// The coordinator `swarm` with `args`, started, its output captured.
    fn start(&self, args: &[&str]) -> Child {
        self.swarm(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// The refs the remote has under `refs/swarm/`.
    fn remote_refs(&self) -> Vec<String> {
        git(
            &self.remote,
            &["for-each-ref", "--format=%(refname)", "refs/swarm/"],
        )
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
            .env("SWARM_WRITE_ALLOW", crate::shared_dir())
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

/// Runs git in `dir` with a fixed identity and no user configuration; panics on failure.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
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

/// Waits for a started swarm and returns its output.
fn finish(child: Child) -> Output {
    child.wait_with_output().unwrap()
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
/// file), and a reducer after every reader and the last writer; each task appends its id to `log`.
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
    let mut readers: Vec<String> = (0..14).map(|i| format!("\"r{i}\"")).collect();
    readers.push("\"w14\"".to_owned());
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
    let merged: Vec<String> = events(&c.user, "merged")
        .into_iter()
        .map(|(t, _)| t)
        .collect();
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
    // The report's table of tasks is the one the same plan run here gives, but for times.
    let local = TestRepo::new();
    let local_log = crate::outside(&local, "ran");
    let local_tasks = local.tasks(
        &thirty_tasks(&local_log)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    let local_report = local.cache.parent().unwrap().join("report.md");
    let out = local.swarm(&[
        "run",
        local_tasks.to_str().unwrap(),
        "--final-out",
        local_report.to_str().unwrap(),
    ]);
    assert_exit(&out, 0);
    let local_report = std::fs::read_to_string(local_report).unwrap();
    assert_eq!(task_table(&report), task_table(&local_report));
    assert_eq!(task_table(&report).len(), 30);
}

/// The rows of a report's table of tasks, without their times.
fn task_table(report: &str) -> Vec<String> {
    report
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let mut cells: Vec<&str> = l.split('|').collect();
            cells.remove(6);
            cells.join("|")
        })
        .collect()
}

/// Waits until the newest run's log in `repo` has an event of `kind` for `task`.
fn wait_for_event(repo: &TestRepo, kind: &str, task: &str) -> serde_json::Value {
    wait_until(&format!("a {kind} event for {task:?}"), || {
        let log = repo
            .swarm_dir()
            .join("runs")
            .join(newest_run(repo)?)
            .join("events.jsonl");
        std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|e| e["kind"] == kind && e["task"].as_str().unwrap_or_default() == task)
    })
}

/// Waits until `path` exists.
fn wait_for_file(path: &Path) {
    wait_until(&path.display().to_string(), || path.exists().then_some(()));
}

fn newest_run(repo: &TestRepo) -> Option<String> {
    let mut runs: Vec<String> = std::fs::read_dir(repo.swarm_dir().join("runs"))
        .ok()?
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    runs.sort();
    runs.pop()
}

fn kill9(pid: u32) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    );
}

#[test]
fn two_workers_racing_for_each_of_100_tasks_run_each_once() {
    let c = Cluster::new();
    let log = c.shared("ran");
    let lines: Vec<String> = (0..100)
        .map(|i| {
            format!(
                r#"{{"id":"t{i:03}","title":"race {i}","mode":"read","run":"echo t{i:03} >> {}"}}"#,
                log.display()
            )
        })
        .collect();
    let tasks = c.tasks(&lines);
    // Both want every task at once, and take them in the same order: each is raced for.
    let workers: Vec<Child> = ["a", "b"]
        .iter()
        .map(|k| c.runner(k).start(&["-j", "100"]))
        .collect();
    let out = c
        .swarm(&["run", tasks.to_str().unwrap(), "--remote", "origin"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let mut refused = 0;
    for w in workers {
        let w = finish(w);
        assert_exit(&w, 0);
        refused += stderr(&w).matches("refused").count();
    }
    let expected: Vec<String> = (0..100).map(|i| format!("t{i:03}")).collect();
    assert_eq!(ran(&log), expected);
    // One claim and one result taken per task; no result was ever refused.
    assert_eq!(events(&c.user, "claimed").len(), 100);
    assert_eq!(events(&c.user, "result_arrived").len(), 100);
    assert_eq!(refused, 0);
    assert!(c.remote_refs().is_empty(), "{:?}", c.remote_refs());
}

#[test]
fn a_worker_killed_mid_task_loses_its_lease_and_its_late_result_is_refused() {
    let c = Cluster::new();
    let (lock, pid) = (c.shared("x.lock"), c.shared("x.pid"));
    // The first attempt takes the lock and hangs; the one after it finishes.
    let x = format!(
        r#"{{"id":"x","title":"write x","mode":"write","run":"if mkdir {lock} 2>/dev/null; then echo $$ > {pid}; exec sleep 600; fi; echo done > x.txt"}}"#,
        lock = lock.display(),
        pid = pid.display()
    );
    let tasks = c.tasks(&[x]);
    let first = c.runner("first");
    let doomed = first.start(&["--lease", "1s"]);
    let coordinator = c.start(&["run", tasks.to_str().unwrap(), "--remote", "origin"]);
    wait_for_file(&pid);
    let claimed = wait_for_event(&c.user, "claimed", "x");
    let run = newest_run(&c.user).unwrap();
    let lease_ref = format!("refs/swarm/{run}/lease/x");
    let lease = git(&c.remote, &["rev-parse", &lease_ref]).trim().to_owned();
    kill9(doomed.id());
    let sleeper: u32 = std::fs::read_to_string(&pid)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    kill9(sleeper);
    finish(doomed);
    let ready_ref = format!("refs/swarm/{run}/ready/x");
    let first_ready = git(&c.remote, &["rev-parse", &ready_ref]).trim().to_owned();
    let expired = wait_for_event(&c.user, "lease_expired", "x");
    assert_eq!(expired["detail"]["worker"], claimed["detail"]["worker"]);
    // Once the attempt is published anew, the dead worker's lease is gone from the remote.
    wait_until("the attempt published anew", || {
        (git(&c.remote, &["rev-parse", &ready_ref]).trim() != first_ready).then_some(())
    });
    assert!(!c.remote_refs().contains(&lease_ref));
    // The dead worker's result, pushed late as it would have pushed it: refused.
    let late = git(
        &first.root,
        &[
            "commit-tree",
            "-m",
            "late",
            "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
        ],
    );
    let late = late.trim();
    let push = Command::new("git")
        .current_dir(&first.root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args([
            "push",
            "--atomic",
            &format!("--force-with-lease={lease_ref}:{lease}"),
            &format!("--force-with-lease=refs/swarm/{run}/result/x:"),
            "origin",
            &format!("{late}:refs/swarm/{run}/result/x"),
            &format!("{late}:{lease_ref}"),
        ])
        .output()
        .unwrap();
    assert!(!push.status.success(), "the late push was taken");
    let second = c.runner("second").start(&[]);
    assert_exit(&finish(coordinator), 0);
    let second = finish(second);
    assert_exit(&second, 0);
    let second_out = stderr(&second);
    assert!(second_out.contains("x: result pushed"), "{second_out}");
    assert_eq!(events(&c.user, "merged").len(), 1);
    assert_eq!(c.user.read("x.txt"), "done\n");
    assert!(c.remote_refs().is_empty(), "{:?}", c.remote_refs());
}

/// A writer `a`, a writer `b` that waits for `go` and then leaves `b.done`, and a reader
/// after both; each appends its id to `log`.
fn waiting_plan(c: &Cluster) -> PathBuf {
    let (log, go, done) = (c.shared("ran"), c.shared("go"), c.shared("b.done"));
    let (log, go, done) = (log.display(), go.display(), done.display());
    c.tasks(&[
        format!(r#"{{"id":"a","title":"a","mode":"write","run":"echo a >> {log}; echo a > a.txt"}}"#),
        format!(
            r#"{{"id":"b","title":"b","mode":"write","run":"while [ ! -e {go} ]; do sleep 0.01; done; echo b >> {log}; echo b > b.txt; touch {done}"}}"#
        ),
        format!(
            r#"{{"id":"c","title":"c","mode":"read","deps":["a","b"],"run":"echo c >> {log}; cat a.txt b.txt"}}"#
        ),
    ])
}

#[test]
fn a_remote_away_for_a_while_loses_nothing_and_the_run_completes() {
    let c = Cluster::new();
    let tasks = waiting_plan(&c);
    let worker = c.runner("w").start(&["-j", "2"]);
    let coordinator = c.start(&["run", tasks.to_str().unwrap(), "--remote", "origin"]);
    wait_for_event(&c.user, "merged", "a");
    wait_for_event(&c.user, "claimed", "b");
    // Away once the coordinator's last push (taking a's refs) is in, so that no git process
    // is inside the remote as it goes: one there would leave its locks behind.
    let run = newest_run(&c.user).unwrap();
    let ready = format!("refs/swarm/{run}/ready/a");
    wait_until("a's refs off the remote", || {
        (!c.remote_refs().contains(&ready)).then_some(())
    });
    let moved = c.tmp.path().join("remote.moved");
    std::fs::rename(&c.remote, &moved).unwrap();
    // b ends while the remote is away: its result waits on the worker.
    std::fs::write(c.shared("go"), "").unwrap();
    wait_for_file(&c.shared("b.done"));
    let away = wait_for_event(&c.user, "remote_away", "");
    assert!(away["detail"]["why"].is_string(), "{away}");
    // Away for 20 s in all, as an outage of the network would be: both sides back off to
    // their longest wait between tries meanwhile.
    let gone_at =
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(away["at"].as_u64().unwrap());
    let outage = std::time::Duration::from_secs(20);
    let elapsed = std::time::SystemTime::now()
        .duration_since(gone_at)
        .unwrap_or_default();
    std::thread::sleep(outage.saturating_sub(elapsed));
    std::fs::rename(&moved, &c.remote).unwrap();
    let out = finish(coordinator);
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(
        err.contains("does not answer") && err.contains("answers again"),
        "{err}"
    );
    assert_exit(&finish(worker), 0);
    assert_eq!(ran(&c.shared("ran")), ["a", "b", "c"]);
    assert_eq!(events(&c.user, "merged").len(), 2);
    assert_eq!(c.user.read("b.txt"), "b\n");
    assert!(c.remote_refs().is_empty(), "{:?}", c.remote_refs());
}

#[test]
fn a_coordinator_killed_and_resumed_takes_up_its_workers_results_once() {
    let c = Cluster::new();
    let tasks = waiting_plan(&c);
    let worker = c.runner("w").start(&["-j", "2"]);
    let coordinator = c.start(&["run", tasks.to_str().unwrap(), "--remote", "origin"]);
    wait_for_event(&c.user, "merged", "a");
    wait_for_event(&c.user, "claimed", "b");
    kill9(coordinator.id());
    finish(coordinator);
    // b ends with nobody to take its result: it waits on the remote.
    std::fs::write(c.shared("go"), "").unwrap();
    wait_for_file(&c.shared("b.done"));
    let resumed = c.swarm(&["resume"]).output().unwrap();
    assert_exit(&resumed, 0);
    assert_exit(&finish(worker), 0);
    assert_eq!(ran(&c.shared("ran")), ["a", "b", "c"]);
    let merged: Vec<String> = events(&c.user, "merged")
        .into_iter()
        .map(|(t, _)| t)
        .collect();
    assert_eq!(merged, ["a", "b"]);
    assert_eq!(events(&c.user, "published").len(), 3);
    assert_eq!(c.user.read("b.txt"), "b\n");
    assert!(c.remote_refs().is_empty(), "{:?}", c.remote_refs());
}

#[test]
fn a_worker_without_a_run_or_a_remote_says_so() {
    let c = Cluster::new();
    let w = c.runner("w");
    let cases: [(&[&str], i32, &str); 4] = [
        (
            &["--remote", "origin", "--wait", "0"],
            0,
            "no run appeared on origin",
        ),
        (
            &["--remote", "origin", "--run", "20260101-000000-abcd"],
            0,
            "is not on origin",
        ),
        (
            &["--remote", "/nowhere/remote.git", "--wait", "0"],
            75,
            "did not answer",
        ),
        (&["--remote", "origin", "--lease", "soon"], 2, "--lease"),
    ];
    for (args, code, says) in cases {
        let out = w.swarm(&[&["worker"], args].concat()).output().unwrap();
        assert_exit(&out, code);
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn a_failed_task_keeps_its_result_on_the_remote_until_gc_removes_it() {
    let c = Cluster::new();
    let tasks = c.tasks(&[
        r#"{"id":"bad","title":"fails","mode":"read","run":"echo broken >&2; exit 3"}"#.to_owned(),
        r#"{"id":"fine","title":"works","mode":"read","run":"echo fine"}"#.to_owned(),
    ]);
    let runner = c.runner("w");
    let worker = runner.start(&[]);
    let out = c
        .swarm(&[
            "run",
            tasks.to_str().unwrap(),
            "--remote",
            "origin",
            "--retries",
            "0",
        ])
        .output()
        .unwrap();
    assert_exit(&out, 1);
    assert!(stderr(&out).contains("Failed bad"), "{}", stderr(&out));
    assert_exit(&finish(worker), 0);
    // The worker's own board says what its attempts did.
    let there = runner.swarm(&["status", "--json"]).output().unwrap();
    assert_exit(&there, 0);
    let there: serde_json::Value = serde_json::from_slice(&there.stdout).unwrap();
    assert_eq!(tasks_with_status(&there, "failed"), ["bad"]);
    assert_eq!(tasks_with_status(&there, "done"), ["fine"]);
    assert_eq!(there["run"]["status"], "finished");
    let run = newest_run(&c.user).unwrap();
    assert_eq!(c.remote_refs(), [format!("refs/swarm/{run}/result/bad")]);
    // The failed attempt's transcript came back with its result.
    let shown = c.swarm(&["show", "bad"]).output().unwrap();
    assert!(stdout(&shown).contains("broken"), "{}", stdout(&shown));
    let dry = c
        .swarm(&["gc", "--dry-run", "--remote", "origin"])
        .output()
        .unwrap();
    assert_exit(&dry, 0);
    assert!(
        stdout(&dry).contains(&format!(
            "would delete 1 ref(s) of ended run {run} on the remote"
        )),
        "{}",
        stdout(&dry)
    );
    assert_eq!(c.remote_refs().len(), 1);
    assert_exit(&c.swarm(&["gc", "--remote", "origin"]).output().unwrap(), 0);
    assert!(c.remote_refs().is_empty(), "{:?}", c.remote_refs());
}

/// Every object of the remote, as `git cat-file --batch` prints them.
fn remote_objects(c: &Cluster) -> String {
    let objects = Command::new("git")
        .args(["cat-file", "--batch-all-objects", "--batch"])
        .current_dir(&c.remote)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    String::from_utf8_lossy(&objects.stdout).into_owned()
}

#[test]
fn a_goal_planned_by_the_coordinator_is_run_by_a_worker_with_the_built_in_agent() {
    let c = Cluster::new();
    let llm = crate::goal::good_server();
    let runner = c.runner("w");
    let worker = runner
        .swarm(&["worker", "--remote", "origin", "--wait", "60s"])
        .env("SWARM_API_KEY", "sk-canary-key-0123456789")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let report = c.tmp.path().join("report.md");
    let out = c
        .swarm(&[
            "--goal",
            "Survey the repository and write notes",
            "--remote",
            "origin",
            "--yes",
            "--final-out",
            report.to_str().unwrap(),
        ])
        .env("SWARM_API_BASE", llm.base_url())
        .env("SWARM_API_KEY", "sk-canary-key-0123456789")
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let worker = finish(worker);
    assert_exit(&worker, 0);
    assert_eq!(
        stderr(&worker).matches("result pushed (succeeded)").count(),
        4
    );
    assert_eq!(c.user.read("NOTES.md"), "notes from the agent\n");
    let report = std::fs::read_to_string(report).unwrap();
    assert!(report.contains("# Final report"), "{report}");
    assert!(c.remote_refs().is_empty(), "{:?}", c.remote_refs());
    // The key went to neither the remote nor anything pushed there.
    let objects = remote_objects(&c);
    assert!(objects.contains("notes from the agent"));
    assert!(!objects.contains("sk-canary-key"));
}

#[test]
fn a_run_on_a_remote_git_cannot_reach_is_refused_before_anything_runs() {
    let c = Cluster::new();
    let tasks = c.tasks(&[r#"{"id":"a","title":"a","run":"true"}"#.to_owned()]);
    let out = c
        .swarm(&["run", tasks.to_str().unwrap(), "--remote", "orgin"])
        .output()
        .unwrap();
    assert_exit(&out, 2);
    assert_eq!(
        stderr(&out),
        "error: --remote orgin: git cannot reach it: 'orgin' does not appear to be a git repository\n\
         hint: check that orgin is a remote's name (`git remote -v` lists them) or a URL git can fetch from, that the repository there exists, and that this machine may read it\n"
    );
    assert!(newest_run(&c.user).is_none());
}

#[test]
fn a_failed_attempt_is_published_again_and_its_retry_merged_once() {
    let c = Cluster::new();
    let marker = c.shared("failed-once");
    let tasks = c.tasks(&[format!(
        r#"{{"id":"flaky","title":"flaky","mode":"write","run":"if [ ! -e {m} ]; then touch {m}; echo first >&2; exit 1; fi; echo ok > flaky.txt"}}"#,
        m = marker.display()
    )]);
    let worker = c.runner("w").start(&[]);
    let out = c
        .swarm(&[
            "run",
            tasks.to_str().unwrap(),
            "--remote",
            "origin",
            "--retries",
            "1",
        ])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert_exit(&finish(worker), 0);
    let published: Vec<serde_json::Value> = events(&c.user, "published")
        .into_iter()
        .map(|(_, d)| d)
        .collect();
    assert_eq!(
        published,
        [
            serde_json::json!({"attempt": 1, "generation": 1}),
            serde_json::json!({"attempt": 2, "generation": 2})
        ]
    );
    assert_eq!(events(&c.user, "merged").len(), 1);
    assert_eq!(c.user.read("flaky.txt"), "ok\n");
    let status = status_json(&c.user);
    assert_eq!(status["tasks"][0]["attempts"], 2);
    assert!(c.remote_refs().is_empty(), "{:?}", c.remote_refs());
}

#[test]
fn a_worker_stopped_by_a_signal_gives_its_attempt_back_to_another() {
    let c = Cluster::new();
    let (lock, started) = (c.shared("lock"), c.shared("started"));
    let tasks = c.tasks(&[format!(
        r#"{{"id":"x","title":"x","mode":"write","run":"if mkdir {lock} 2>/dev/null; then touch {started}; exec sleep 600; fi; echo second > x.txt"}}"#,
        lock = lock.display(),
        started = started.display()
    )]);
    let first = c.runner("first").start(&[]);
    let coordinator = c.start(&["run", tasks.to_str().unwrap(), "--remote", "origin"]);
    wait_for_file(&started);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(first.id()).unwrap()),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let first = finish(first);
    assert_exit(&first, 75);
    assert!(stderr(&first).contains("given back"), "{}", stderr(&first));
    // Its lease is gone at once, not after its time: the next worker takes the attempt.
    let run = newest_run(&c.user).unwrap();
    assert!(
        !c.remote_refs()
            .contains(&format!("refs/swarm/{run}/lease/x"))
    );
    let second = c.runner("second").start(&[]);
    assert_exit(&finish(coordinator), 0);
    assert_exit(&finish(second), 0);
    assert!(events(&c.user, "lease_expired").is_empty());
    assert_eq!(events(&c.user, "merged").len(), 1);
    assert_eq!(c.user.read("x.txt"), "second\n");
}

/// A commit in the repository `dir` holding `record.json` with `json`, on `parents`.
fn record_commit(dir: &Path, json: &serde_json::Value, parents: &[&str]) -> String {
    let json = serde_json::to_vec(json).unwrap();
    files_commit(dir, &[("record.json", &json)], parents)
}

/// A commit in the repository `dir` holding `files`, on `parents`.
fn files_commit(dir: &Path, files: &[(&str, &[u8])], parents: &[&str]) -> String {
    let mut entries = String::new();
    for (name, bytes) in files {
        let blob_file = dir.join("blob.tmp");
        std::fs::write(&blob_file, bytes).unwrap();
        let blob = git(dir, &["hash-object", "-w", blob_file.to_str().unwrap()]);
        std::fs::remove_file(&blob_file).unwrap();
        let _ = writeln!(entries, "100644 blob {}\t{name}", blob.trim());
    }
    let tree_file = dir.join("tree.tmp");
    std::fs::write(&tree_file, entries).unwrap();
    let tree = Command::new("git")
        .args(["mktree"])
        .current_dir(dir)
        .stdin(std::fs::File::open(&tree_file).unwrap())
        .output()
        .unwrap();
    std::fs::remove_file(&tree_file).unwrap();
    let tree = String::from_utf8(tree.stdout).unwrap();
    let mut args = vec!["commit-tree", tree.trim(), "-m", "record"];
    for p in parents {
        args.extend(["-p", p]);
    }
    git(dir, &args).trim().to_owned()
}

/// Sets the refs `refs` of the bare repository `dir` in one transaction.
fn set_refs(dir: &Path, refs: &[(&str, &str)]) {
    let mut child = Command::new("git")
        .args(["update-ref", "--stdin"])
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = refs.iter().fold(String::new(), |mut lines, (name, oid)| {
        let _ = writeln!(lines, "update {name} {oid}");
        lines
    });
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), lines.as_bytes()).unwrap();
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_writers_commit_that_does_not_descend_from_its_start_is_not_merged() {
    let c = Cluster::new();
    let tasks =
        c.tasks(&[r#"{"id":"w","title":"w","mode":"write","run":"echo w > w.txt"}"#.to_owned()]);
    let coordinator = c.start(&[
        "run",
        tasks.to_str().unwrap(),
        "--remote",
        "origin",
        "--retries",
        "0",
    ]);
    // The test is the worker, a broken one: it claims w and sends a commit from nowhere.
    let run = wait_until("a run on the remote", || newest_run(&c.user));
    let ready = format!("refs/swarm/{run}/ready/w");
    wait_until("w published", || {
        c.remote_refs().contains(&ready).then_some(())
    });
    let job = git(
        &c.remote,
        &["cat-file", "-p", &format!("{ready}:record.json")],
    );
    let job: serde_json::Value = serde_json::from_str(&job).unwrap();
    let generation = job["generation"].clone();
    let lease = serde_json::json!({"task": "w", "generation": generation, "worker": "rogue",
        "renewal": 0, "ttl_ms": 60000, "expires_at_ms": 0});
    let lease = record_commit(&c.remote, &lease, &[]);
    git(
        &c.remote,
        &["update-ref", &format!("refs/swarm/{run}/lease/w"), &lease],
    );
    let empty = git(&c.remote, &["mktree"]);
    let nowhere = git(&c.remote, &["commit-tree", empty.trim(), "-m", "unrelated"]);
    let nowhere = nowhere.trim();
    // First a result that holds no record at all: taken off as stale, and the run goes on.
    let result_ref = format!("refs/swarm/{run}/result/w");
    git(&c.remote, &["update-ref", &result_ref, nowhere]);
    wait_until("the unreadable result taken off", || {
        (!c.remote_refs().contains(&result_ref)).then_some(())
    });
    let result = serde_json::json!({"task": "w", "attempt": 1, "generation": generation,
        "worker": "rogue", "status": "succeeded", "result": "", "commit": nowhere, "why": null,
        "fault": null, "limit": null, "tokens": 0, "cost": null, "elapsed_ms": 1,
        "stderr_tail": []});
    let result = record_commit(&c.remote, &result, &[nowhere]);
    // As a worker pushes a result: with its lease marked ended, at once.
    let ended = serde_json::json!({"task": "w", "generation": generation, "worker": "rogue",
        "renewal": 1, "ttl_ms": 60000, "expires_at_ms": 0, "ended": true});
    let ended = record_commit(&c.remote, &ended, &[]);
    set_refs(
        &c.remote,
        &[
            (&format!("refs/swarm/{run}/result/w"), &result),
            (&format!("refs/swarm/{run}/lease/w"), &ended),
        ],
    );
    let out = finish(coordinator);
    assert_exit(&out, 1);
    assert!(
        stderr(&out).contains("does not descend from the commit the task started from"),
        "{}",
        stderr(&out)
    );
    assert!(events(&c.user, "merged").is_empty());
    assert!(!c.user.root.join("w.txt").exists());
    let branches = c.user.git(&["branch", "--list", "swarm/*"]);
    assert!(!branches.contains(&format!("swarm/{run}-w")), "{branches}");
}

#[test]
fn tasks_spawned_on_a_worker_are_published_and_run_by_the_workers_within_the_limits() {
    let c = Cluster::new();
    let log = c.shared("ran");
    let spawn = c.shared("spawn.jsonl");
    let deeper = c.shared("deeper.jsonl");
    let unoffered = c.shared("unoffered");
    // Each child spawns `deeper` when it is given a spawn file; at max-depth 1 none is.
    let child = |id: &str| {
        serde_json::json!({
            "id": id, "mode": "read", "spawn": 5,
            "run": format!(
                "echo $SWARM_TASK_ID >> {log}; if [ -n \"${{SWARM_SPAWN:-}}\" ]; then cp {deeper} \"$SWARM_SPAWN\"; else echo $SWARM_TASK_ID >> {unoffered}; fi; echo result of $SWARM_TASK_ID",
                log = log.display(), deeper = deeper.display(), unoffered = unoffered.display()
            ),
        })
    };
    let lines =
        |ls: &[serde_json::Value]| ls.iter().map(|l| l.to_string() + "\n").collect::<String>();
    std::fs::write(&spawn, lines(&[child("c1"), child("c2"), child("c3")])).unwrap();
    std::fs::write(&deeper, lines(&[child("d1")])).unwrap();
    let sum = c.shared("sum");
    let fan = serde_json::json!({
        "id": "fan", "mode": "read", "spawn": 10,
        "run": format!("cp {} \"$SWARM_SPAWN\"", spawn.display()),
        "then": {"id": "sum", "mode": "read", "run": format!("cat \"$SWARM_DEPS_DIR\"/* > {}", sum.display())},
    });
    let tasks = c.tasks(&[fan.to_string()]);
    let worker = c.runner("w").start(&[]);
    let out = c
        .swarm(&["run", tasks.to_str().unwrap(), "--remote", "origin"])
        .env("SWARM_MAX_DEPTH", "1")
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert_exit(&finish(worker), 0);
    assert_eq!(ran(&log), ["fan.c1", "fan.c2", "fan.c3"]);
    // The worker ran the children under the coordinator's limits: none was given a spawn file.
    assert_eq!(ran(&unoffered), ["fan.c1", "fan.c2", "fan.c3"]);
    let summed = std::fs::read_to_string(&sum).unwrap();
    for k in 1..=3 {
        assert!(summed.contains(&format!("result of fan.c{k}")), "{summed}");
    }
    let status = status_json(&c.user);
    assert_eq!(
        tasks_with_status(&status, "done"),
        ["fan", "fan.c1", "fan.c2", "fan.c3", "fan.sum"]
    );
    assert_eq!(events(&c.user, "spawned").len(), 1);
    assert!(c.remote_refs().is_empty(), "{:?}", c.remote_refs());
}

#[test]
fn a_reducer_run_by_a_worker_is_told_which_deps_failed_and_why() {
    let c = Cluster::new();
    let report = c.shared("report");
    let tasks = c.tasks(&[
        serde_json::json!({"id": "ok", "mode": "read", "run": "echo fine"}).to_string(),
        serde_json::json!({"id": "bad", "mode": "read", "run": "echo broken >&2; exit 4"}).to_string(),
        serde_json::json!({
            "id": "sum", "mode": "read", "lane": "reducer", "deps": ["ok", "bad"],
            "run": format!(
                "{{ echo \"have: $SWARM_DEPS\"; echo \"missing: $SWARM_DEPS_MISSING\"; cat \"$SWARM_DEPS_DIR\"/bad.missing; }} > {}",
                report.display()
            ),
        })
        .to_string(),
    ]);
    let worker = c.runner("w").start(&[]);
    let out = c
        .swarm(&[
            "run",
            tasks.to_str().unwrap(),
            "--remote",
            "origin",
            "--retries",
            "0",
        ])
        .output()
        .unwrap();
    assert_exit(&out, 1);
    assert_exit(&finish(worker), 0);
    let said = std::fs::read_to_string(&report).unwrap();
    assert!(
        said.starts_with("have: ok\nmissing: bad\nfailed: exit code 4"),
        "{said}"
    );
    let status = status_json(&c.user);
    assert_eq!(tasks_with_status(&status, "done"), ["ok", "sum"]);
}

/// Someone who can push to the remote and nothing more: a clone of it, with the runs' refs.
struct Intruder {
    dir: PathBuf,
}

impl Cluster {
    fn intruder(&self) -> Intruder {
        git(
            self.tmp.path(),
            &["clone", "-q", self.remote.to_str().unwrap(), "intruder"],
        );
        Intruder {
            dir: self.tmp.path().join("intruder"),
        }
    }
}

impl Intruder {
    /// The record of the remote's ref `name` (fetched first), as JSON.
    fn record(&self, name: &str) -> serde_json::Value {
        git(
            &self.dir,
            &["fetch", "-q", "origin", "+refs/swarm/*:refs/swarm/*"],
        );
        let text = git(
            &self.dir,
            &["cat-file", "-p", &format!("{name}:record.json")],
        );
        serde_json::from_str(&text).unwrap()
    }

    /// A commit on `start` that adds `forged.txt`: what a forged result would land.
    fn change_on(&self, start: &str) -> String {
        git(&self.dir, &["checkout", "-q", "--detach", start]);
        std::fs::write(self.dir.join("forged.txt"), "forged\n").unwrap();
        git(&self.dir, &["add", "forged.txt"]);
        git(&self.dir, &["commit", "-q", "-m", "forged"]);
        git(&self.dir, &["rev-parse", "HEAD"]).trim().to_owned()
    }

    /// A result of task `task` for `job` (its `ready` record) naming `worker`, with the writer's
    /// commit `commit` and the files `extra` beside its record.
    fn result(
        &self,
        job: &serde_json::Value,
        worker: &str,
        commit: &str,
        extra: &[(&str, &[u8])],
    ) -> String {
        let record = serde_json::json!({"task": job["task"], "attempt": job["attempt"],
            "generation": job["generation"], "worker": worker, "status": "succeeded",
            "result": "done", "commit": commit, "why": null, "fault": null, "limit": null,
            "tokens": 0, "cost": null, "elapsed_ms": 1, "stderr_tail": []});
        let record = serde_json::to_vec(&record).unwrap();
        let mut files = vec![("record.json", record.as_slice())];
        files.extend_from_slice(extra);
        files_commit(&self.dir, &files, &[commit])
    }

    /// A lease of `job` by `worker`, ended as a worker's is when it pushes its result.
    fn ended_lease(
        &self,
        job: &serde_json::Value,
        worker: &str,
        extra: &[(&str, &[u8])],
    ) -> String {
        let record = serde_json::json!({"task": job["task"], "generation": job["generation"],
            "worker": worker, "renewal": 1, "ttl_ms": 600_000, "expires_at_ms": 0,
            "ended": true});
        let record = serde_json::to_vec(&record).unwrap();
        let mut files = vec![("record.json", record.as_slice())];
        files.extend_from_slice(extra);
        files_commit(&self.dir, &files, &[])
    }

    /// Pushes each commit to its ref on the remote, in one atomic push, as `git push` does.
    fn push(&self, refs: &[(&str, &str)]) {
        let mut args = vec!["push".to_owned(), "-q".to_owned(), "--atomic".to_owned()];
        args.push("origin".to_owned());
        args.extend(refs.iter().map(|(oid, name)| format!("{oid}:{name}")));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        git(&self.dir, &args);
    }
}

/// Waits until the newest run's log in `repo` has `n` events of `kind`, and returns them.
fn wait_for_events(repo: &TestRepo, kind: &str, n: usize) -> Vec<(String, serde_json::Value)> {
    wait_until(&format!("{n} {kind} event(s)"), || {
        let found = events(repo, kind);
        (found.len() >= n).then_some(found)
    })
}

/// Waits until the remote no longer has the ref `name`.
fn wait_gone(c: &Cluster, name: &str) {
    wait_until(&format!("{name} off the remote"), || {
        (!c.remote_refs().contains(&name.to_owned())).then_some(())
    });
}

/// What the user's repository and the remote must hold after a run whose writer `w` wrote
/// `w.txt` and a forged result for it was refused: the real change landed on `main`, nothing of
/// `forged` anywhere on a branch, the remote's branches as they were, and no ref of the run left.
fn assert_only_the_real_change_landed(c: &Cluster, forged: &str, remote_main: &str) {
    assert_eq!(c.user.read("w.txt"), "real\n");
    assert!(!c.user.root.join("forged.txt").exists());
    let log = c.user.git(&["log", "--format=%H", "main"]);
    assert!(!log.contains(forged), "{log}");
    let tree = c.user.git(&["ls-tree", "-r", "--name-only", "main"]);
    assert!(!tree.contains("forged.txt"), "{tree}");
    // The coordinator fetched the forged commit with the run's refs: no branch holds it.
    let branches = c
        .user
        .git(&["for-each-ref", "--format=%(refname)", "refs/heads/"]);
    for branch in branches.lines() {
        let out = Command::new("git")
            .args(["merge-base", "--is-ancestor", forged, branch])
            .current_dir(&c.user.root)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(!out.status.success(), "{branch} holds the forged commit");
    }
    assert_eq!(
        git(
            &c.remote,
            &[
                "for-each-ref",
                "--format=%(refname) %(objectname)",
                "refs/heads/"
            ]
        ),
        format!("refs/heads/main {remote_main}\n")
    );
    assert!(c.remote_refs().is_empty(), "{:?}", c.remote_refs());
    let merged: Vec<String> = events(&c.user, "merged")
        .into_iter()
        .map(|(t, _)| t)
        .collect();
    assert_eq!(merged, ["w"]);
}

/// A coordinator running one writer, `w` (`echo real > w.txt`), spread over the remote: once
/// `w` is published and nobody has leased it yet, the coordinator, the run and `w`'s ready ref.
fn one_writer_published(c: &Cluster) -> (Child, String, String) {
    let tasks =
        c.tasks(&[r#"{"id":"w","title":"w","mode":"write","run":"echo real > w.txt"}"#.to_owned()]);
    let coordinator = c.start(&["run", tasks.to_str().unwrap(), "--remote", "origin"]);
    let run = wait_until("a run on the remote", || newest_run(&c.user));
    let ready = format!("refs/swarm/{run}/ready/w");
    wait_until("w published", || {
        c.remote_refs().contains(&ready).then_some(())
    });
    (coordinator, run, ready)
}

#[test]
fn a_forged_result_for_a_task_nobody_leased_is_refused_and_the_task_still_runs_and_lands() {
    let c = Cluster::new();
    let remote_main = git(&c.remote, &["rev-parse", "main"]).trim().to_owned();
    let (coordinator, run, ready) = one_writer_published(&c);
    // Nobody leased w: the intruder pushes a result for it, by a worker nobody saw, with a
    // commit on top of the task's start, as a real writer's would be.
    let intruder = c.intruder();
    let job = intruder.record(&ready);
    let forged = intruder.change_on(job["start"].as_str().unwrap());
    let result = intruder.result(&job, "mallory", &forged, &[]);
    let result_ref = format!("refs/swarm/{run}/result/w");
    intruder.push(&[(&result, &result_ref)]);
    let refused = wait_for_event(&c.user, "result_refused", "w");
    assert_eq!(refused["detail"]["worker"], "mallory", "{refused}");
    assert_eq!(
        refused["detail"]["generation"], job["generation"],
        "{refused}"
    );
    assert_eq!(
        refused["detail"]["why"], "no worker holds a lease on the attempt",
        "{refused}"
    );
    wait_gone(&c, &result_ref);
    // The attempt is still published: a worker claims it and runs it.
    let worker = c.runner("w").start(&[]);
    let out = finish(coordinator);
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains(
            "Refused w: a result from worker mallory refused: no worker holds a lease on the attempt; removed from the remote"
        ),
        "{}",
        stderr(&out)
    );
    assert_exit(&finish(worker), 0);
    assert_only_the_real_change_landed(&c, &forged, &remote_main);
    let arrived = events(&c.user, "result_arrived");
    assert_eq!(arrived.len(), 1);
    assert_ne!(arrived[0].1["worker"], "mallory");
    assert_eq!(events(&c.user, "result_refused").len(), 1);
    assert_eq!(tasks_with_status(&status_json(&c.user), "done"), ["w"]);
}

#[test]
fn a_result_under_the_lease_of_another_worker_is_refused_and_the_holder_lands_its_own() {
    let c = Cluster::new();
    let remote_main = git(&c.remote, &["rev-parse", "main"]).trim().to_owned();
    let go = c.shared("go");
    let tasks = c.tasks(&[format!(
        r#"{{"id":"w","title":"w","mode":"write","run":"while [ ! -e {go} ]; do sleep 0.01; done; echo real > w.txt"}}"#,
        go = go.display()
    )]);
    let worker = c.runner("w").start(&[]);
    let coordinator = c.start(&["run", tasks.to_str().unwrap(), "--remote", "origin"]);
    let claimed = wait_for_event(&c.user, "claimed", "w");
    let holder = claimed["detail"]["worker"].as_str().unwrap().to_owned();
    let run = newest_run(&c.user).unwrap();
    let intruder = c.intruder();
    let job = intruder.record(&format!("refs/swarm/{run}/ready/w"));
    let forged = intruder.change_on(job["start"].as_str().unwrap());
    let result_ref = format!("refs/swarm/{run}/result/w");
    // A result naming a worker other than the lease's holder.
    let result = intruder.result(&job, "mallory", &forged, &[]);
    intruder.push(&[(&result, &result_ref)]);
    let refused = wait_for_events(&c.user, "result_refused", 1);
    assert_eq!(refused[0].1["worker"], "mallory");
    assert_eq!(
        refused[0].1["why"],
        format!("the attempt's lease is worker {holder}'s")
    );
    wait_gone(&c, &result_ref);
    // The holder was never disturbed: it finishes, and its result is the one taken.
    std::fs::write(&go, "").unwrap();
    assert_exit(&finish(coordinator), 0);
    let worker = finish(worker);
    assert_exit(&worker, 0);
    assert!(
        stderr(&worker).contains("w: result pushed (succeeded)"),
        "{}",
        stderr(&worker)
    );
    assert_only_the_real_change_landed(&c, &forged, &remote_main);
    let arrived = events(&c.user, "result_arrived");
    assert_eq!(arrived.len(), 1);
    assert_eq!(arrived[0].1["worker"], holder.as_str());
    assert!(events(&c.user, "lease_expired").is_empty());
}

/// Files of a commit, by name.
type Files<'a> = &'a [(&'a str, &'a [u8])];

/// A key the coordinator and its workers share, as a CI's secret store gives it.
const KEY: &str = "5f0c8a7e1d2b4c6a9e8f7d6c5b4a3928";

/// Every file under `dir`, as bytes, with its path.
fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push((path, bytes));
        }
    }
    out
}

/// Whether `haystack` holds `needle`.
fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn with_a_shared_key_a_run_works_and_unsigned_or_wrongly_signed_records_are_refused() {
    let c = Cluster::new();
    let remote_main = git(&c.remote, &["rev-parse", "main"]).trim().to_owned();
    let tasks = c.tasks(&[
        r#"{"id":"w","title":"w","mode":"write","run":"echo real > w.txt; echo \"${SWARM_REMOTE_KEY:-unset}\" > key.txt"}"#
            .to_owned(),
        r#"{"id":"r","title":"r","mode":"read","deps":["w"],"run":"echo \"key: ${SWARM_REMOTE_KEY:-unset}\""}"#
            .to_owned(),
    ]);
    let coordinator = c
        .swarm(&["run", tasks.to_str().unwrap(), "--remote", "origin"])
        .env("SWARM_REMOTE_KEY", KEY)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let run = wait_until("a run on the remote", || newest_run(&c.user));
    let ready = format!("refs/swarm/{run}/ready/w");
    wait_until("w published", || {
        c.remote_refs().contains(&ready).then_some(())
    });
    let intruder = c.intruder();
    let job = intruder.record(&ready);
    // The coordinator signs what it publishes.
    let signature = git(
        &intruder.dir,
        &["cat-file", "-p", &format!("{ready}:signature")],
    );
    assert_eq!(signature.trim().len(), 64, "{signature}");
    let forged = intruder.change_on(job["start"].as_str().unwrap());
    let (lease_ref, result_ref) = (
        format!("refs/swarm/{run}/lease/w"),
        format!("refs/swarm/{run}/result/w"),
    );
    // A lease and a result that look right, pushed together as a worker pushes them: first
    // unsigned, then signed with a signature taken from another record.
    let attempts: [(Files, &str); 2] = [
        (&[], "it is not signed, and SWARM_REMOTE_KEY is set here"),
        (
            &[("signature", signature.as_bytes())],
            "its signature was not made with SWARM_REMOTE_KEY",
        ),
    ];
    for (n, (extra, why)) in attempts.into_iter().enumerate() {
        let lease = intruder.ended_lease(&job, "mallory", extra);
        let result = intruder.result(&job, "mallory", &forged, extra);
        intruder.push(&[(&lease, &lease_ref), (&result, &result_ref)]);
        let leases = wait_for_events(&c.user, "lease_refused", n + 1);
        let results = wait_for_events(&c.user, "result_refused", n + 1);
        for (task, detail) in [&leases[n], &results[n]] {
            assert_eq!(task, "w");
            assert_eq!(detail["worker"], "mallory", "{detail}");
            assert_eq!(detail["why"], why, "{detail}");
        }
        wait_gone(&c, &lease_ref);
        wait_gone(&c, &result_ref);
    }
    let runner = c.runner("w");
    let worker = runner
        .swarm(&["worker", "--remote", "origin", "--wait", "60s"])
        .env("SWARM_REMOTE_KEY", KEY)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = finish(coordinator);
    assert_exit(&out, 0);
    let worker = finish(worker);
    assert_exit(&worker, 0);
    assert_eq!(
        stderr(&worker).matches("result pushed (succeeded)").count(),
        2
    );
    assert_only_the_real_change_landed(&c, &forged, &remote_main);
    // No process of a task saw the key, and it is written nowhere: not in the run's state on
    // either machine, not on the remote, not on a terminal.
    assert_eq!(c.user.read("key.txt"), "unset\n");
    let shown = c.swarm(&["show", "r"]).output().unwrap();
    assert!(stdout(&shown).contains("key: unset"), "{}", stdout(&shown));
    for dir in [c.user.swarm_dir(), runner.root.join(".git/swarm")] {
        let files = files_under(&dir);
        assert!(!files.is_empty(), "{}", dir.display());
        for (path, bytes) in files {
            assert!(!holds(&bytes, KEY), "the key is in {}", path.display());
        }
    }
    let objects = remote_objects(&c);
    assert!(objects.contains("real"));
    assert!(!objects.contains(KEY));
    for output in [&out, &worker] {
        assert!(!holds(&output.stdout, KEY) && !holds(&output.stderr, KEY));
    }
}

#[test]
fn a_worker_works_only_on_runs_signed_with_its_key() {
    let c = Cluster::new();
    let tasks = c.tasks(&[r#"{"id":"a","title":"a","mode":"read","run":"echo a"}"#.to_owned()]);
    let w = c.runner("w");
    let worker = |key: Option<&str>, args: &[&str]| {
        let mut cmd = w.swarm(&[&["worker", "--remote", "origin"], args].concat());
        if let Some(key) = key {
            cmd.env("SWARM_REMOTE_KEY", key);
        }
        cmd
    };
    // A signed run.
    let coordinator = c
        .swarm(&["run", tasks.to_str().unwrap(), "--remote", "origin"])
        .env("SWARM_REMOTE_KEY", KEY)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let run = wait_until("a run on the remote", || newest_run(&c.user));
    wait_until("the run published", || {
        c.remote_refs()
            .contains(&format!("refs/swarm/{run}/run"))
            .then_some(())
    });
    let other = "0000000000000000ffffffffffffffff";
    let out = worker(None, &["--wait", "0"]).output().unwrap();
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains(&format!(
            "run {run} on origin is signed: a worker on it needs SWARM_REMOTE_KEY, the key its coordinator has"
        )),
        "{}",
        stderr(&out)
    );
    let out = worker(Some(other), &["--run", &run]).output().unwrap();
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("its signature was not made with SWARM_REMOTE_KEY"),
        "{}",
        stderr(&out)
    );
    let out = worker(Some(other), &["--wait", "0"]).output().unwrap();
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains(&format!("run {run} on origin: its signature was not made with SWARM_REMOTE_KEY; this worker runs only runs signed with its SWARM_REMOTE_KEY")),
        "{}",
        stderr(&out)
    );
    let out = worker(Some("sEcr3t"), &["--wait", "0"]).output().unwrap();
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("SWARM_REMOTE_KEY is too short (6 bytes)"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("sEcr3t"), "{}", stderr(&out));
    // The coordinator's key, with the newline a secret read from a file ends with.
    let out = worker(Some(&format!("{KEY}\n")), &["--wait", "60s"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert_exit(&finish(coordinator), 0);
    // An unsigned run: a worker with a key leaves it alone (anyone who can push could have
    // published it), one without works on it.
    let coordinator = c.start(&["run", tasks.to_str().unwrap(), "--remote", "origin"]);
    let second = wait_until("a second run", || {
        std::fs::read_dir(c.user.swarm_dir().join("runs"))
            .ok()?
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .find(|r| *r != run)
    });
    wait_until("the second run published", || {
        c.remote_refs()
            .contains(&format!("refs/swarm/{second}/run"))
            .then_some(())
    });
    let out = worker(Some(KEY), &["--wait", "0"]).output().unwrap();
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains(&format!(
            "run {second} on origin: it is not signed, and SWARM_REMOTE_KEY is set here"
        )),
        "{}",
        stderr(&out)
    );
    assert_exit(&worker(None, &["--wait", "60s"]).output().unwrap(), 0);
    assert_exit(&finish(coordinator), 0);
}

#[test]
fn a_bad_poll_or_key_is_a_usage_error_before_anything_runs() {
    let c = Cluster::new();
    let tasks = c.tasks(&[r#"{"id":"a","title":"a","run":"true"}"#.to_owned()]);
    let w = c.runner("w");
    for poll in ["abc", "-1", "0", "NaN", "inf", "1e9", "0.001"] {
        let out = c
            .swarm(&["run", tasks.to_str().unwrap(), "--remote", "origin"])
            .env("SWARM_REMOTE_POLL", poll)
            .output()
            .unwrap();
        assert_exit(&out, 2);
        assert!(
            stderr(&out).starts_with(&format!("error: SWARM_REMOTE_POLL={poll}: ")),
            "{poll}: {}",
            stderr(&out)
        );
        assert!(
            stderr(&out).contains("hint: SWARM_REMOTE_POLL is how often"),
            "{}",
            stderr(&out)
        );
        let out = w
            .swarm(&["worker", "--remote", "origin", "--wait", "0"])
            .env("SWARM_REMOTE_POLL", poll)
            .output()
            .unwrap();
        assert_exit(&out, 2);
        assert!(
            stderr(&out).starts_with(&format!("error: SWARM_REMOTE_POLL={poll}: ")),
            "{poll}: {}",
            stderr(&out)
        );
    }
    // A worker renews its leases when it polls.
    let out = w
        .swarm(&["worker", "--remote", "origin", "--lease", "60s"])
        .env("SWARM_REMOTE_POLL", "30")
        .output()
        .unwrap();
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("the poll must be at most a third of --lease (1m00s)"),
        "{}",
        stderr(&out)
    );
    let out = c
        .swarm(&["run", tasks.to_str().unwrap(), "--remote", "origin"])
        .env("SWARM_REMOTE_KEY", "too-short")
        .output()
        .unwrap();
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("SWARM_REMOTE_KEY is too short (9 bytes)"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("too-short"), "{}", stderr(&out));
    assert!(newest_run(&c.user).is_none());
    assert!(c.remote_refs().is_empty(), "{:?}", c.remote_refs());
}

#[test]
fn a_refused_result_under_an_ended_lease_has_its_attempt_published_again() {
    let c = Cluster::new();
    let remote_main = git(&c.remote, &["rev-parse", "main"]).trim().to_owned();
    let (coordinator, run, ready) = one_writer_published(&c);
    let intruder = c.intruder();
    let job = intruder.record(&ready);
    let forged = intruder.change_on(job["start"].as_str().unwrap());
    // An ended lease keeps every worker from claiming the attempt: with its result refused,
    // the attempt is published again, which takes both off.
    let lease = intruder.ended_lease(&job, "mallory", &[]);
    let result = intruder.result(&job, "eve", &forged, &[]);
    intruder.push(&[
        (&lease, &format!("refs/swarm/{run}/lease/w")),
        (&result, &format!("refs/swarm/{run}/result/w")),
    ]);
    let refused = wait_for_event(&c.user, "result_refused", "w");
    assert_eq!(
        refused["detail"]["why"], "the attempt's lease is worker mallory's",
        "{refused}"
    );
    let worker = c.runner("w").start(&[]);
    let out = finish(coordinator);
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("Refused w: a result from worker eve refused: the attempt's lease is worker mallory's; published again"),
        "{}",
        stderr(&out)
    );
    assert_exit(&finish(worker), 0);
    let published: Vec<serde_json::Value> = events(&c.user, "published")
        .into_iter()
        .map(|(_, d)| d)
        .collect();
    assert_eq!(
        published,
        [
            serde_json::json!({"attempt": 1, "generation": 1}),
            serde_json::json!({"attempt": 1, "generation": 2})
        ]
    );
    assert_only_the_real_change_landed(&c, &forged, &remote_main);
    assert_eq!(events(&c.user, "result_arrived")[0].1["generation"], 2);
}

#[test]
#[cfg_attr(
    not(has_mergiraf),
    ignore = "needs mergiraf: not found; install with cargo install --locked --root .ci/tools mergiraf --version 0.20.0 (or set SWARM_TEST_MERGIRAF)"
)]
fn a_conflict_between_two_workers_writers_is_merged_by_the_structural_rung_on_the_coordinator() {
    let tool =
        crate::ci_templates::installed("SWARM_TEST_MERGIRAF", ".ci/tools/bin/mergiraf", "mergiraf");
    let c = Cluster::new();
    let base = "pub struct S;\n\nimpl S {\n    pub fn a(&self) -> u32 {\n        1\n    }\n}\n";
    c.user.write("src/lib.rs", base);
    c.user.commit_all("impl S");
    c.user.git(&["push", "-q", "origin", "main"]);
    // Each adds a method at the same place; `second` ends after `first` is merged.
    let method = |name: &str, v: u32| {
        let text = base.replace(
            "        1\n    }\n}\n",
            &format!(
                "        1\n    }}\n\n    pub fn {name}(&self) -> u32 {{\n        {v}\n    }}\n}}\n"
            ),
        );
        format!("printf '%s' '{text}' > src/lib.rs")
    };
    let tasks = c.tasks(&[
        serde_json::json!({"id": "first", "mode": "write", "run": method("b", 2)}).to_string(),
        serde_json::json!({
            "id": "second",
            "mode": "write",
            "run": format!("{}; {}", crate::after_event(&c.user, "merged", "first"), method("c", 3)),
        })
        .to_string(),
    ]);
    let worker = c.runner("w").start(&["-j", "2"]);

    let out = c
        .swarm(&["run", tasks.to_str().unwrap(), "--remote", "origin"])
        .env("SWARM_MERGIRAF", &tool)
        .output()
        .unwrap();

    assert_exit(&out, 0);
    assert_exit(&finish(worker), 0);
    let merged = c.user.read("src/lib.rs");
    assert!(
        merged.contains("pub fn b(&self)") && merged.contains("pub fn c(&self)"),
        "{merged}"
    );
    let resolved = events(&c.user, "resolved");
    assert_eq!(resolved.len(), 1, "{resolved:?}");
    assert_eq!(resolved[0].1["rung"], "structural", "{resolved:?}");
    assert!(c.remote_refs().is_empty(), "{:?}", c.remote_refs());
}

/// `--deliver stack` under `--remote`: the workers run the writers, the coordinator merges them
/// and delivers the stack to the project's remote (`forge`, the same bare repository written as
/// a project's URL on the fake forge), and the run's records on the remote are gone after.
#[test]
fn a_run_spread_over_workers_delivers_its_stack_once() {
    let c = Cluster::new();
    let fake = crate::fake_forge::FakeForge::start();
    let url = format!("{}/octo/hello.git", fake.base());
    c.user.git(&["remote", "add", "forge", &url]);
    c.user.git(&[
        "config",
        &format!("url.{}.insteadOf", c.remote.display()),
        &url,
    ]);
    let tasks = c.tasks(&[
        r#"{"id":"a","mode":"write","run":"echo a > a.txt"}"#.to_owned(),
        r#"{"id":"b","mode":"write","deps":["a"],"run":"echo b > b.txt"}"#.to_owned(),
    ]);
    let worker = c.runner("w1").start(&["-j", "2"]);
    let out = c
        .swarm(&[
            "run",
            tasks.to_str().unwrap(),
            "--remote",
            "origin",
            "--deliver",
            "stack",
            "--deliver-remote",
            "forge",
        ])
        .envs(fake.github_env())
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert_exit(&finish(worker), 0);
    let mut got: Vec<(String, String)> = fake
        .changes()
        .into_iter()
        .map(|c| (c.head, c.base))
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            ("swarm/tasks-a".to_owned(), "main".to_owned()),
            ("swarm/tasks-b".to_owned(), "swarm/tasks-a".to_owned()),
        ]
    );
    let branches = git(
        &c.remote,
        &["for-each-ref", "--format=%(refname)", "refs/heads/swarm/"],
    );
    assert_eq!(
        branches,
        "refs/heads/swarm/tasks-a\nrefs/heads/swarm/tasks-b\n"
    );
    assert!(c.remote_refs().is_empty(), "{:?}", c.remote_refs());
    // Nothing landed on the user's branch: the work goes through review.
    assert!(!c.user.root.join("a.txt").exists());
}

#[test]
fn under_remote_the_coordinator_plans_with_memory_and_no_lesson_leaves_for_the_workers() {
    let c = Cluster::new();
    let llm = crate::goal::good_server();
    let key = "sk-canary-key-0123456789";
    // A run here first: its check fails on the writer of NOTES.md, which teaches a lesson.
    let first = c
        .swarm(&["--goal", "Survey the repository and leave notes"])
        .args([
            "--check",
            "echo the tests need --offline; false",
            "--retries",
            "0",
        ])
        .env("SWARM_API_BASE", llm.base_url())
        .env("SWARM_API_KEY", key)
        .env("SWARM_ALLOW_NO_CHANGE", "1")
        .output()
        .unwrap();
    assert_exit(&first, 1);

    let worker = c
        .runner("w")
        .swarm(&["worker", "--remote", "origin", "--wait", "60s"])
        .env("SWARM_API_KEY", key)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = c
        .swarm(&["--goal", "Survey the repository and write notes"])
        .args(["--remote", "origin", "--yes"])
        .env("SWARM_API_BASE", llm.base_url())
        .env("SWARM_API_KEY", key)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert_exit(&finish(worker), 0);

    // The coordinator's planner was given the first run and its lesson.
    let planned: Vec<String> = llm
        .requests()
        .into_iter()
        .filter(|r| crate::fake_llm::has_tool(r, "submit_plan"))
        .map(|r| r.body.to_string())
        .collect();
    let asked = planned.last().unwrap();
    assert!(asked.contains("<past-runs>"), "{asked}");
    assert!(asked.contains("the tests need --offline"), "{asked}");
    // The worker's agent changing NOTES.md was told nothing of it.
    let notes: Vec<String> = llm
        .requests()
        .into_iter()
        .map(|r| r.body.to_string())
        .filter(|b| b.contains("TASK notes:") && !b.contains("submit_plan"))
        .collect();
    assert!(!notes.is_empty());
    assert!(
        !notes.last().unwrap().contains("What earlier runs"),
        "{}",
        notes.last().unwrap()
    );
    // The coordinator kept what the run came to; nothing of memory went to the remote.
    let kept = c.swarm(&["memory", "list", "--json"]).output().unwrap();
    let kept: serde_json::Value = serde_json::from_slice(&kept.stdout).unwrap();
    assert_eq!(kept["goals"].as_array().unwrap().len(), 2, "{kept}");
    let objects = remote_objects(&c);
    assert!(objects.contains("notes from the agent"));
    assert!(!objects.contains("the tests need --offline"));
    assert!(!objects.contains("past-runs"));
}

#[test]
fn candidates_run_on_a_worker_and_the_coordinator_picks_one_and_merges_it() {
    let c = Cluster::new();
    let tasks = c.tasks(&[serde_json::json!({
        "id": "fix",
        "mode": "write",
        "run": "case $SWARM_TASK_ID in fix.c1) seq 20 > out.txt;; fix.c2) seq 2 > out.txt;; esac",
        "candidates": 2,
    })
    .to_string()]);
    let worker = c.runner("w").start(&[]);

    let out = c
        .swarm(&["run", tasks.to_str().unwrap(), "--remote", "origin"])
        .output()
        .unwrap();

    assert_exit(&out, 0);
    assert_exit(&finish(worker), 0);
    // The candidates went out to the worker; the pick ran here.
    let published: Vec<String> = events(&c.user, "published")
        .into_iter()
        .map(|(task, _)| task)
        .collect();
    assert_eq!(published, ["fix.c1", "fix.c2"], "{published:?}");
    let merged: Vec<String> = events(&c.user, "merged")
        .into_iter()
        .map(|(task, _)| task)
        .collect();
    assert_eq!(merged, ["fix"]);
    assert_eq!(c.user.read("out.txt"), "1\n2\n");
}
