//! The engine: task files, read-only tasks, scheduling, failures, timeouts, resume, reports.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{
    TestRepo, assert_exit, extra_worktrees, outside, status_json, stderr, stdout, tasks_with_status,
};

// ---------------------------------------------------------------------------------------------
// Helpers of this module.

/// Writes a task file from JSON values (so paths and quotes need no hand-escaping).
fn task_file(repo: &TestRepo, tasks: &[Value]) -> PathBuf {
    let lines: Vec<String> = tasks.iter().map(Value::to_string).collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    repo.tasks(&refs)
}

/// `path` as a shell word; the temp paths used here hold no quote characters.
fn sh(path: &Path) -> String {
    let s = path.display().to_string();
    assert!(!s.contains('\''), "unexpected quote in {s}");
    format!("'{s}'")
}

fn path_arg(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The status of one task in `swarm status --json` output.
fn task_field<'a>(status: &'a Value, id: &str, field: &str) -> &'a Value {
    status["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("no task {id} in {status:#}"))
        .get(field)
        .unwrap_or(&Value::Null)
}

fn task_status<'a>(status: &'a Value, id: &str) -> &'a str {
    task_field(status, id, "status").as_str().unwrap()
}

/// The run directories under `.git/swarm/runs`.
fn run_dirs(repo: &TestRepo) -> Vec<PathBuf> {
    match std::fs::read_dir(repo.swarm_dir().join("runs")) {
        Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    }
}

fn swarm_branches(repo: &TestRepo) -> String {
    repo.git(&["branch", "--list", "swarm/*"])
}

/// Polls `cond` every 20 ms; panics naming `what` after `limit`.
fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Waits for a spawned swarm, with a limit, and returns its output.
fn finish(child: Child, limit: Duration) -> Output {
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    if let Ok(out) = rx.recv_timeout(limit) {
        return out.unwrap();
    }
    let _ = Command::new("kill").args(["-9", &id.to_string()]).status();
    panic!("swarm (pid {id}) did not end within {limit:?}");
}

/// Whether a process exists and is not a zombie (a zombie has been killed, only not reaped).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X')),
        Err(_) => false,
    }
}

/// The largest number of intervals open at one moment; an interval that ends when another
/// starts does not overlap it.
fn max_overlap(intervals: &[(f64, f64)]) -> usize {
    let mut points: Vec<(f64, i32)> = Vec::new();
    for &(start, end) in intervals {
        points.push((start, 1));
        points.push((end, -1));
    }
    points.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut open, mut most) = (0i32, 0i32);
    for (_, delta) in points {
        open += delta;
        most = most.max(open);
    }
    most as usize
}

// ---------------------------------------------------------------------------------------------
// Task files.

#[test]
fn a_reducer_assembles_its_deps_results_into_the_final_report() {
    let repo = TestRepo::new();
    let before = repo.state();
    let tasks = repo.tasks(&[
        r#"{"id":"a","run":"echo alpha","mode":"read"}"#,
        r#"{"id":"b","run":"echo beta","mode":"read"}"#,
        r#"{"id":"sum","run":"cat \"$SWARM_DEPS_DIR\"/a.txt \"$SWARM_DEPS_DIR\"/b.txt; echo \"$SWARM_DEPS_DIR\" > \"$WHERE\"; ls -ld \"$SWARM_DEPS_DIR/../..\" >> \"$WHERE\"","deps":["a","b"],"lane":"reducer","mode":"read"}"#,
    ]);
    let report = repo.cache.join("report.md");
    let where_file = repo.cache.join("where");
    let out = repo
        .swarm_cmd()
        .env("WHERE", &where_file)
        .args([
            "run",
            tasks.to_str().unwrap(),
            "--final-out",
            report.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.starts_with("alpha\nbeta\n"), "{text}");
    // The deps' files lived in a private directory in memory (where the system has one),
    // and are gone with the run.
    let seen = std::fs::read_to_string(&where_file).unwrap();
    let dir = seen.lines().next().unwrap();
    if Path::new("/dev/shm").is_dir() {
        assert!(dir.starts_with("/dev/shm/swarm-"), "{seen}");
        assert!(
            seen.lines().nth(1).unwrap().starts_with("drwx------"),
            "{seen}"
        );
    }
    assert!(!Path::new(dir).exists(), "{dir} is left");
    assert!(text.contains("## Run summary"), "{text}");
    assert!(text.contains("```mermaid"), "{text}");
    assert!(stdout(&out).contains("3 tasks: 3 done"), "{}", stdout(&out));
    assert_eq!(repo.state(), before, "the user's checkout changed");
}

#[test]
fn bad_task_file_reports_every_problem_with_lines_and_runs_nothing() {
    let repo = TestRepo::new();
    let marker = outside(&repo, "marker");
    let touch = format!("touch {}", sh(&marker));
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "fine", "run": touch, "mode": "read"}),
            json!({"id": "a", "run": touch, "deps": ["b"], "mode": "read"}),
            json!({"id": "b", "run": touch, "deps": ["a"], "mode": "read"}),
            json!({"id": "fine", "run": touch, "mode": "read"}),
            json!({"id": "c", "run": touch, "deps": ["nowhere"], "mode": "read"}),
        ],
    );
    let before = repo.state();
    let out = repo.swarm(&["run", path_arg(&tasks)]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    let file = tasks.display().to_string();
    let line_with = |n: usize, needle: &str| {
        err.lines()
            .any(|l| l.contains(&format!("{file}:{n}:")) && l.contains(needle))
    };
    assert!(
        line_with(4, "duplicate id"),
        "duplicate not reported on line 4:\n{err}"
    );
    assert!(
        line_with(5, "unknown dependency \"nowhere\""),
        "unknown dep not reported on line 5:\n{err}"
    );
    assert!(
        line_with(2, "cycle") && (err.contains("a → b → a") || err.contains("b → a → b")),
        "cycle not reported with its path on line 2:\n{err}"
    );
    assert!(!marker.exists(), "a task ran");
    assert!(
        run_dirs(&repo).is_empty(),
        "a run directory was made: {:?}",
        run_dirs(&repo)
    );
    assert_eq!(swarm_branches(&repo), "", "a swarm branch was made");
    assert_eq!(repo.state(), before);
}

// ---------------------------------------------------------------------------------------------
// Scheduling.

/// Runs 8 independent one-second readers with `-j jobs`; returns (max overlap, wall time).
fn eight_sleepers(jobs: &str) -> (usize, Duration) {
    let repo = TestRepo::new();
    let log = outside(&repo, "intervals.log");
    let cmd = format!(
        "s=$(date +%s.%N); sleep 1; e=$(date +%s.%N); echo \"$s $e\" >> {}",
        sh(&log)
    );
    let tasks: Vec<Value> = (0..8)
        .map(|i| json!({"id": format!("t{i}"), "run": cmd, "mode": "read"}))
        .collect();
    let file = task_file(&repo, &tasks);
    let started = Instant::now();
    let out = repo.swarm(&["run", path_arg(&file), "-j", jobs]);
    let wall = started.elapsed();
    assert_exit(&out, 0);
    let intervals: Vec<(f64, f64)> = lines_of(&log)
        .iter()
        .map(|l| {
            let (s, e) = l.split_once(' ').unwrap();
            (s.parse().unwrap(), e.parse().unwrap())
        })
        .collect();
    assert_eq!(intervals.len(), 8, "every task runs once");
    (max_overlap(&intervals), wall)
}

#[test]
fn jobs_4_runs_eight_readers_four_at_a_time() {
    let (overlap, wall) = eight_sleepers("4");
    assert_eq!(overlap, 4, "tasks running at once with -j 4");
    assert!(
        wall >= Duration::from_secs(2),
        "8 one-second tasks 4 at a time took only {wall:?}"
    );
    assert!(wall < Duration::from_secs(6), "-j 4 took {wall:?}");
}

#[test]
fn jobs_1_runs_eight_readers_one_at_a_time() {
    let (overlap, wall) = eight_sleepers("1");
    assert_eq!(overlap, 1, "tasks running at once with -j 1");
    assert!(
        wall >= Duration::from_secs(8),
        "8 one-second tasks one at a time took only {wall:?}"
    );
    assert!(wall < Duration::from_secs(20), "-j 1 took {wall:?}");
}

// ---------------------------------------------------------------------------------------------
// Failures, retries, timeouts.

#[test]
fn failing_task_is_retried_then_its_dependents_are_skipped() {
    let repo = TestRepo::new();
    let counter = outside(&repo, "counter");
    let after_marker = outside(&repo, "after-ran");
    let report = outside(&repo, "report.md");
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "flaky", "run": format!("echo try >> {}; echo boom >&2; exit 3", sh(&counter)), "mode": "read"}),
            json!({"id": "after", "run": format!("touch {}", sh(&after_marker)), "deps": ["flaky"], "mode": "read"}),
            json!({"id": "ok", "run": "echo fine", "mode": "read"}),
            json!({"id": "ok2", "run": "cat \"$SWARM_DEPS_DIR/ok.txt\"", "deps": ["ok"], "mode": "read"}),
        ],
    );
    let out = repo.swarm(&[
        "run",
        path_arg(&tasks),
        "--retries",
        "1",
        "--final-out",
        path_arg(&report),
    ]);
    assert_exit(&out, 1);

    assert_eq!(
        lines_of(&counter).len(),
        2,
        "attempts counted by the task itself"
    );
    let runs = run_dirs(&repo);
    assert_eq!(runs.len(), 1);
    let attempts = runs[0].join("attempts");
    assert!(
        attempts.join("flaky.1.log").is_file(),
        "no transcript of attempt 1"
    );
    assert!(
        attempts.join("flaky.2.log").is_file(),
        "no transcript of attempt 2"
    );
    assert!(!attempts.join("flaky.3.log").exists(), "a third attempt");
    let t1 = std::fs::read_to_string(attempts.join("flaky.1.log")).unwrap();
    assert!(t1.contains("boom"), "the transcript keeps stderr:\n{t1}");

    let status = status_json(&repo);
    assert_eq!(task_status(&status, "flaky"), "failed");
    assert_eq!(task_field(&status, "flaky", "attempts"), 2);
    assert_eq!(task_status(&status, "after"), "skipped");
    assert_eq!(task_status(&status, "ok"), "done");
    assert_eq!(task_status(&status, "ok2"), "done");
    assert_eq!(task_field(&status, "ok2", "result"), "fine\n");
    assert!(!after_marker.exists(), "a dependent of a failed task ran");

    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.contains("`flaky` failed after 2 attempts"), "{text}");
    let transcripts: Vec<&str> = text
        .split("transcript `")
        .skip(1)
        .map(|rest| rest.split('`').next().unwrap())
        .collect();
    assert!(
        transcripts
            .iter()
            .any(|p| p.ends_with("flaky.2.log") && Path::new(p).is_file()),
        "the report does not name an existing transcript of the last attempt: {transcripts:?}\n{text}"
    );
    assert!(
        text.contains("`after`"),
        "the report does not list the skipped task:\n{text}"
    );
}

#[test]
fn task_ignoring_sigterm_is_killed_with_its_children_on_timeout() {
    let repo = TestRepo::new();
    let child_pid = outside(&repo, "child.pid");
    let shell_pid = outside(&repo, "shell.pid");
    // The loop ends by itself after ~10 s, so a swarm that never kills it fails this test
    // instead of hanging it; `sleep 30` inherits the ignored SIGTERM.
    let cmd = format!(
        "trap '' TERM; sleep 30 & echo $! > {}; echo $$ > {}; i=0; while [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done",
        sh(&child_pid),
        sh(&shell_pid)
    );
    let tasks = task_file(&repo, &[json!({"id": "stuck", "run": cmd, "mode": "read"})]);
    let started = Instant::now();
    let child = repo
        .swarm_cmd()
        .args([
            "run",
            path_arg(&tasks),
            "--task-timeout",
            "1s",
            "--retries",
            "0",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = finish(child, Duration::from_secs(15));
    let wall = started.elapsed();
    assert_exit(&out, 1);
    // 1 s to the deadline, then 2 s of grace before SIGKILL.
    assert!(wall < Duration::from_secs(8), "the timeout took {wall:?}");

    let pids: Vec<u32> = [&child_pid, &shell_pid]
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap().trim().parse().unwrap())
        .collect();
    wait_for(
        "the attempt's processes to be gone",
        Duration::from_secs(3),
        || pids.iter().all(|&p| !alive(p)),
    );

    let status = status_json(&repo);
    assert_eq!(task_status(&status, "stuck"), "failed");
    let error = task_field(&status, "stuck", "error")
        .as_str()
        .unwrap_or_default();
    assert!(error.contains("timed out"), "error: {error}");
    assert!(
        stdout(&out).contains("timed out"),
        "summary:\n{}",
        stdout(&out)
    );
}

#[test]
fn a_silent_attempt_is_stopped_as_hung_and_one_that_keeps_talking_is_not() {
    let repo = TestRepo::new();
    let tasks = task_file(
        &repo,
        &[
            // Says one thing, then nothing for far longer than the stall limit.
            json!({"id": "silent", "run": "echo starting >&2; sleep 20", "mode": "read"}),
            // Takes longer than the stall limit in all, but never goes quiet for that long.
            json!({"id": "talker", "run": "for i in 1 2 3 4 5 6 7 8; do echo tick $i >&2; sleep 0.3; done; echo done", "mode": "read"}),
        ],
    );
    let started = Instant::now();
    let child = repo
        .swarm_cmd()
        .args([
            "run",
            path_arg(&tasks),
            "--stall-timeout",
            "1s",
            "--retries",
            "0",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = finish(child, Duration::from_secs(15));
    assert_exit(&out, 1);
    assert!(started.elapsed() < Duration::from_secs(10));
    let status = status_json(&repo);
    assert_eq!(task_status(&status, "talker"), "done");
    assert_eq!(task_status(&status, "silent"), "failed");
    let error = task_field(&status, "silent", "error")
        .as_str()
        .unwrap_or_default();
    assert!(error.contains("hung: no output for 1.0s"), "error: {error}");
}

// ---------------------------------------------------------------------------------------------
// Crashes, interrupts, the run lock.

#[test]
fn killed_run_resumes_without_rerunning_finished_tasks() {
    let repo = TestRepo::new();
    let log = outside(&repo, "ran.log");
    let tasks: Vec<Value> = (0..20)
        .map(|i| {
            let deps: Vec<String> = if i == 0 {
                vec![]
            } else {
                vec![format!("t{:02}", i - 1)]
            };
            json!({
                "id": format!("t{i:02}"),
                "run": format!("sleep 0.3; echo \"$SWARM_TASK_ID\" >> {}", sh(&log)),
                "deps": deps,
                "mode": "read",
            })
        })
        .collect();
    let file = task_file(&repo, &tasks);
    let mut child = repo
        .swarm_cmd()
        .args(["run", path_arg(&file), "-q"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("four tasks to finish", Duration::from_secs(20), || {
        lines_of(&log).len() >= 4
    });
    child.kill().unwrap();
    child.wait().unwrap();

    let status = status_json(&repo);
    assert_eq!(
        status["run"]["status"], "running",
        "a killed run cannot have recorded an end"
    );
    let done = tasks_with_status(&status, "done");
    assert!(
        done.len() >= 2,
        "too few tasks were done before the kill: {done:?}"
    );
    assert!(done.len() < 20, "the run finished before the kill");

    let out = repo.swarm(&["resume"]);
    assert_exit(&out, 0);
    let status = status_json(&repo);
    assert_eq!(status["run"]["status"], "finished");
    for t in status["tasks"].as_array().unwrap() {
        assert_eq!(t["status"], "done", "after resume: {t:#}");
    }
    assert_eq!(
        extra_worktrees(&repo),
        Vec::<String>::new(),
        "the killed run's snapshot was left behind"
    );
    let ran = lines_of(&log);
    for i in 0..20 {
        let id = format!("t{i:02}");
        let n = ran.iter().filter(|l| **l == id).count();
        if done.contains(&id) {
            assert_eq!(
                n, 1,
                "{id} was done before the kill but ran {n} times: {ran:?}"
            );
        } else {
            assert!(n >= 1, "{id} never ran: {ran:?}");
        }
    }
}

#[test]
fn second_run_in_the_same_repository_fails_fast_naming_the_holder() {
    let repo = TestRepo::new();
    let started = outside(&repo, "started");
    let slow = task_file(
        &repo,
        &[json!({"id": "slow", "run": format!("touch {}; sleep 2", sh(&started)), "mode": "read"})],
    );
    let first = repo
        .swarm_cmd()
        .args(["run", path_arg(&slow), "-q"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let holder_pid = first.id();
    wait_for(
        "the first run's task to start",
        Duration::from_secs(10),
        || started.exists(),
    );
    let runs = run_dirs(&repo);
    assert_eq!(runs.len(), 1);
    let run_id = runs[0].file_name().unwrap().to_str().unwrap().to_owned();

    let marker = outside(&repo, "second-ran");
    let other = outside(&repo, "other.jsonl");
    std::fs::write(
        &other,
        json!({"id": "quick", "run": format!("touch {}", sh(&marker)), "mode": "read"}).to_string()
            + "\n",
    )
    .unwrap();
    let t = Instant::now();
    let second = repo.swarm(&["run", path_arg(&other)]);
    assert_exit(&second, 4);
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "the second run waited instead of failing fast"
    );
    let err = stderr(&second);
    assert!(
        err.contains(&format!("pid {holder_pid}")),
        "holder pid not named:\n{err}"
    );
    assert!(
        err.contains(&run_id),
        "holder run {run_id} not named:\n{err}"
    );
    assert!(!marker.exists(), "the second run ran a task");

    let out = finish(first, Duration::from_secs(20));
    assert_exit(&out, 0);
    let again = repo.swarm(&["run", path_arg(&other)]);
    assert_exit(&again, 0);
    assert!(
        marker.exists(),
        "the run after the first ended did not run its task"
    );
}

#[test]
fn killed_holder_does_not_block_a_resume() {
    let repo = TestRepo::new();
    let started = outside(&repo, "started");
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "slow", "run": format!("touch {}; sleep 1", sh(&started)), "mode": "read"}),
            json!({"id": "next", "run": "echo next", "deps": ["slow"], "mode": "read"}),
        ],
    );
    let mut child = repo
        .swarm_cmd()
        .args(["run", path_arg(&tasks), "-q"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the task to start", Duration::from_secs(10), || {
        started.exists()
    });
    child.kill().unwrap();
    child.wait().unwrap();

    let out = repo.swarm(&["resume"]);
    assert_exit(&out, 0);
    let status = status_json(&repo);
    assert_eq!(task_status(&status, "slow"), "done");
    assert_eq!(task_status(&status, "next"), "done");
}

#[test]
fn sigint_interrupts_the_run_and_resume_completes_it() {
    let repo = TestRepo::new();
    let started = outside(&repo, "started");
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "a", "run": format!("echo a >> {}; sleep 3", sh(&started)), "mode": "read"}),
            json!({"id": "b", "run": format!("echo b >> {}; sleep 3", sh(&started)), "mode": "read"}),
            json!({"id": "c", "run": "echo c", "deps": ["a", "b"], "mode": "read"}),
        ],
    );
    let child = repo
        .swarm_cmd()
        .args(["run", path_arg(&tasks)])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("both tasks to start", Duration::from_secs(10), || {
        lines_of(&started).len() >= 2
    });
    let t = Instant::now();
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = finish(child, Duration::from_secs(15));
    assert_exit(&out, 75);
    assert!(
        t.elapsed() < Duration::from_millis(2500),
        "the interrupt waited for the tasks to end: {:?}",
        t.elapsed()
    );

    let shown = repo.swarm(&["status"]);
    assert_exit(&shown, 0);
    let first_line = stdout(&shown).lines().next().unwrap_or_default().to_owned();
    assert!(
        first_line.contains("interrupted"),
        "status:\n{}",
        stdout(&shown)
    );
    assert_eq!(status_json(&repo)["run"]["status"], "interrupted");
    assert_eq!(
        extra_worktrees(&repo),
        Vec::<String>::new(),
        "the interrupted run left its snapshot"
    );

    let resumed = repo.swarm(&["resume"]);
    assert_exit(&resumed, 0);
    let status = status_json(&repo);
    assert_eq!(status["run"]["status"], "finished");
    for id in ["a", "b", "c"] {
        assert_eq!(task_status(&status, id), "done", "{id}");
    }
}

// ---------------------------------------------------------------------------------------------
// The user's checkout and the readers' snapshot.

/// A success, a failure and a reader that writes into its snapshot leave every byte alone.
fn runs_leave_checkout_alone(repo: &TestRepo) {
    let before = repo.state();
    let tasks = task_file(
        repo,
        &[
            json!({"id": "good", "run": "cat README.md", "mode": "read"}),
            json!({"id": "bad", "run": "exit 1", "mode": "read"}),
            json!({"id": "scribbler", "run": "echo x >> README.md; echo new > new.txt", "mode": "read"}),
        ],
    );
    let out = repo.swarm(&["run", path_arg(&tasks), "--retries", "0"]);
    assert_exit(&out, 1);
    assert_eq!(repo.state(), before, "the user's checkout changed");
    let ok = task_file(
        repo,
        &[json!({"id": "fine", "run": "echo fine", "mode": "read"})],
    );
    let out = repo.swarm(&["run", path_arg(&ok)]);
    assert_exit(&out, 0);
    assert_eq!(repo.state(), before, "the user's checkout changed");
}

#[test]
fn runs_leave_a_clean_checkout_byte_identical() {
    let repo = TestRepo::new();
    runs_leave_checkout_alone(&repo);
}

#[test]
fn runs_leave_a_dirty_checkout_byte_identical() {
    let repo = TestRepo::new();
    repo.write("README.md", "# demo\nlocal edit, not committed\n");
    repo.write("scratch.txt", "untracked notes\n");
    repo.write("src/staged.rs", "// staged only\n");
    repo.git(&["add", "src/staged.rs"]);
    runs_leave_checkout_alone(&repo);
    assert_eq!(
        repo.read("README.md"),
        "# demo\nlocal edit, not committed\n"
    );
}

#[test]
fn reader_that_changes_its_snapshot_fails_and_later_readers_see_the_original() {
    let repo = TestRepo::new();
    let seen = outside(&repo, "seen.txt");
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "scribbler", "run": "echo x >> README.md; echo junk > junk.txt", "mode": "read"}),
            json!({"id": "slow", "run": "sleep 1", "mode": "read"}),
            json!({"id": "later", "run": format!("cat README.md > {}; ls", sh(&seen)), "deps": ["slow"], "mode": "read"}),
        ],
    );
    let out = repo.swarm(&["run", path_arg(&tasks), "--retries", "0"]);
    assert_exit(&out, 1);
    assert!(
        stderr(&out).contains("changed its snapshot"),
        "the failure is not loud:\n{}",
        stderr(&out)
    );
    let status = status_json(&repo);
    assert_eq!(task_status(&status, "scribbler"), "failed");
    let error = task_field(&status, "scribbler", "error")
        .as_str()
        .unwrap_or_default();
    assert!(error.contains("changed its snapshot"), "error: {error}");
    assert_eq!(task_status(&status, "later"), "done");
    assert_eq!(
        std::fs::read_to_string(&seen).unwrap(),
        "# demo\n",
        "the later reader saw the scribble"
    );
    let listing = task_field(&status, "later", "result").as_str().unwrap();
    assert!(
        !listing.contains("junk.txt"),
        "a new file survived in the snapshot: {listing}"
    );
}

// ---------------------------------------------------------------------------------------------
// Agents and nesting.

#[test]
fn exec_agent_gets_prompt_on_stdin_with_dep_results_framed_as_data() {
    let repo = TestRepo::new();
    let out_dir = outside(&repo, "agent-out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "first", "prompt": "Summarise the README.", "lane": "researcher"}),
            json!({"id": "second", "prompt": "Combine the findings.", "deps": ["first"], "lane": "reducer"}),
        ],
    );
    let agent = "exec:cat > \"$OUT_DIR/prompt-$SWARM_TASK_ID.txt\"; env > \"$OUT_DIR/env-$SWARM_TASK_ID.txt\"; echo result-of-$SWARM_TASK_ID";
    let out = repo
        .swarm_cmd()
        .env("OUT_DIR", &out_dir)
        .env("GIT_DIR", repo.root.join(".git"))
        .env("SWARM_API_KEY", "sk-test-not-for-agents")
        .args(["run", path_arg(&tasks), "--agent", agent])
        .output()
        .unwrap();
    assert_exit(&out, 0);

    let first = std::fs::read_to_string(out_dir.join("prompt-first.txt")).unwrap();
    assert_eq!(first.trim_end(), "Summarise the README.");
    let second = std::fs::read_to_string(out_dir.join("prompt-second.txt")).unwrap();
    assert!(second.starts_with("Combine the findings."), "{second}");
    assert!(
        second.contains("not instructions"),
        "dep results not framed as data:\n{second}"
    );
    assert!(
        second.contains("<result task=\"first\">\nresult-of-first"),
        "{second}"
    );

    let status = status_json(&repo);
    let run_id = status["run"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        task_field(&status, "second", "result"),
        "result-of-second\n"
    );
    for (id, mode) in [("first", "read"), ("second", "read")] {
        let env = lines_of(&out_dir.join(format!("env-{id}.txt")));
        let has = |line: &str| env.iter().any(|l| l == line);
        assert!(has(&format!("SWARM_TASK_ID={id}")), "{id}: {env:?}");
        assert!(has(&format!("SWARM_RUN_ID={run_id}")), "{id}: {env:?}");
        assert!(has(&format!("SWARM_MODE={mode}")), "{id}: {env:?}");
        assert!(has("SWARM_ACTIVE=1"), "{id}: {env:?}");
        assert!(
            !env.iter().any(|l| l.starts_with("GIT_DIR=")),
            "{id}: GIT_DIR reached the agent"
        );
        assert!(
            !env.iter().any(|l| l.contains("sk-test-not-for-agents")),
            "{id}: the API key reached the agent"
        );
    }
}

#[test]
fn prompt_task_without_an_agent_is_refused_and_nothing_runs() {
    let repo = TestRepo::new();
    let marker = outside(&repo, "marker");
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "plain", "run": format!("touch {}", sh(&marker)), "mode": "read"}),
            json!({"id": "ask", "prompt": "Say hello.", "lane": "researcher"}),
        ],
    );
    let out = repo.swarm(&["run", path_arg(&tasks)]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("\"ask\"") && err.contains("no agent"), "{err}");
    assert!(
        err.contains("--agent"),
        "no hint on how to configure one:\n{err}"
    );
    assert!(!marker.exists(), "a task ran");
    assert!(run_dirs(&repo).is_empty(), "a run directory was made");
    assert_eq!(swarm_branches(&repo), "");
}

#[test]
fn nested_swarm_with_swarm_active_does_nothing_and_says_why() {
    let repo = TestRepo::new();
    let marker = outside(&repo, "marker");
    let tasks = task_file(
        &repo,
        &[json!({"id": "t", "run": format!("touch {}", sh(&marker)), "mode": "read"})],
    );
    let out = repo
        .swarm_cmd()
        .env("SWARM_ACTIVE", "1")
        .args(["run", path_arg(&tasks)])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("SWARM_ACTIVE"),
        "does not say why:\n{}",
        stderr(&out)
    );
    assert!(!marker.exists(), "a nested swarm ran a task");
    assert!(run_dirs(&repo).is_empty(), "a nested swarm made a run");
    assert_eq!(swarm_branches(&repo), "");
}

// ---------------------------------------------------------------------------------------------
// status and logs.

#[test]
fn status_and_logs_show_a_failed_task() {
    let repo = TestRepo::new();
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "good", "run": "echo ok", "mode": "read"}),
            json!({"id": "broken", "run": "echo broken-output >&2; exit 7", "mode": "read"}),
        ],
    );
    let out = repo.swarm(&["run", path_arg(&tasks), "--retries", "0"]);
    assert_exit(&out, 1);

    let status = status_json(&repo);
    assert_eq!(task_status(&status, "broken"), "failed");
    assert_eq!(task_status(&status, "good"), "done");
    let error = task_field(&status, "broken", "error")
        .as_str()
        .unwrap_or_default();
    assert!(
        error.contains('7'),
        "the error does not give the exit code: {error}"
    );

    let errors = repo.swarm(&["logs", "--errors"]);
    assert_exit(&errors, 0);
    let text = stdout(&errors);
    assert!(
        text.lines()
            .any(|l| l.contains("task_failed") && l.contains("broken")),
        "logs --errors:\n{text}"
    );
    assert!(
        !text.lines().any(|l| l.contains("good")),
        "logs --errors shows a success:\n{text}"
    );
    assert!(text.contains("broken.1.log"), "no transcript path:\n{text}");

    let paths = repo.swarm(&["logs", "--path"]);
    assert_exit(&paths, 0);
    let first = stdout(&paths).lines().next().unwrap_or_default().to_owned();
    assert!(first.ends_with("events.jsonl"), "logs --path: {first}");
    let events = std::fs::read_to_string(&first).unwrap_or_else(|e| panic!("{first}: {e}"));
    assert!(events.contains("task_failed"), "{events}");
}

#[test]
fn second_sigint_kills_tasks_at_once_and_the_run_stays_resumable() {
    let repo = TestRepo::new();
    let flag = outside(&repo, "first-attempt");
    let child_pid = outside(&repo, "child.pid");
    // The first attempt ignores SIGTERM (so the first Ctrl-C cannot end it before the grace
    // period); the attempt after the resume succeeds at once.
    let cmd = format!(
        "if [ -e {flag} ]; then echo again; exit 0; fi; touch {flag}; trap '' TERM; sleep 30 & echo $! > {pid}; wait",
        flag = sh(&flag),
        pid = sh(&child_pid)
    );
    let tasks = task_file(
        &repo,
        &[json!({"id": "stubborn", "run": cmd, "mode": "read"})],
    );
    let child = repo
        .swarm_cmd()
        .args(["run", path_arg(&tasks)])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    wait_for("the task to start", Duration::from_secs(10), || {
        std::fs::read_to_string(&child_pid).is_ok_and(|p| p.ends_with('\n'))
    });
    let grandchild: u32 = std::fs::read_to_string(&child_pid)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let out = finish(child, Duration::from_secs(15));
    assert!(
        t.elapsed() < Duration::from_millis(1500),
        "the second Ctrl-C waited {:?} (the kill grace is 2 s)",
        t.elapsed()
    );
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    wait_for(
        "the task's child to be killed",
        Duration::from_secs(2),
        || !alive(grandchild),
    );

    let resumed = repo.swarm(&["resume"]);
    assert_exit(&resumed, 0);
    assert_eq!(task_status(&status_json(&repo), "stubborn"), "done");
}

#[test]
fn bad_task_file_error_reads_as_one_block_with_every_problem() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[
        r#"{"id":"a","run":"true","deps":["b"],"mode":"read"}"#,
        r#"{"id":"b","run":"true","deps":["a"],"mode":"read"}"#,
        r#"{"id":"a","run":"true"}"#,
        r#"{"id":"c","prompt":"x","run":"y","deps":["zz"],"colour":"red"}"#,
        r#"{"id":"bad id!","run":"true","timeout":"soon"}"#,
        "not json",
    ]);
    let out = repo.swarm(&["run", path_arg(&tasks)]);
    assert_exit(&out, 2);
    let text = stderr(&out).replace(&tasks.display().to_string(), "[TASKS]");
    insta::assert_snapshot!(text);
    assert_eq!(swarm_branches(&repo), "", "a swarm branch was made");
}

#[test]
fn resume_stops_agents_a_killed_swarm_left_running() {
    let repo = TestRepo::new();
    let pidfile = outside(&repo, "pid");
    let tasks = task_file(
        &repo,
        &[json!({
            "id": "stubborn",
            "run": format!("sleep 60 & echo $! > {}; wait", sh(&pidfile)),
            "mode": "read",
            "timeout": 3,
        })],
    );
    let mut child = repo
        .swarm_cmd()
        .args(["run", path_arg(&tasks), "-q"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the task to start", Duration::from_secs(10), || {
        std::fs::read_to_string(&pidfile).is_ok_and(|s| s.ends_with('\n'))
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let orphan: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(alive(orphan), "the agent should outlive a kill -9 of swarm");
    std::fs::remove_file(&pidfile).unwrap();

    // The resumed attempt is stopped by its timeout; what matters is the orphan.
    let resumed = repo
        .swarm_cmd()
        .args(["resume", "-q", "--retries", "0"])
        .output()
        .unwrap();
    assert_exit(&resumed, 1);
    wait_for("the orphan to be killed", Duration::from_secs(5), || {
        !alive(orphan)
    });
}

#[test]
fn global_flags_work_before_the_subcommand_and_run_options_after_it() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[r#"{"id":"a","run":"echo hi","mode":"read"}"#]);
    let out = repo.swarm(&["-q", "--json", "run", path_arg(&tasks), "-j", "2"]);
    assert_exit(&out, 0);
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
    let summary: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(summary["exit_code"], 0);

    let misplaced = repo.swarm(&["-j", "2", "run", path_arg(&tasks)]);
    assert_exit(&misplaced, 2);
    assert!(stderr(&misplaced).contains("after it"));
}

#[test]
fn gc_removes_the_deps_files_a_killed_run_left() {
    let repo = TestRepo::new();
    let seen = outside(&repo, "deps-dir");
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "a", "run": "echo alpha", "mode": "read"}),
            json!({"id": "b", "run": format!("echo \"$SWARM_DEPS_DIR\" > {}; sleep 3", sh(&seen)), "deps": ["a"], "mode": "read"}),
        ],
    );
    let mut child = repo
        .swarm_cmd()
        .args(["run", path_arg(&tasks)])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("b to start", Duration::from_secs(10), || {
        std::fs::read_to_string(&seen).is_ok_and(|s| s.ends_with('\n'))
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let dir = PathBuf::from(std::fs::read_to_string(&seen).unwrap().trim());
    assert!(dir.join("a.txt").exists(), "{}", dir.display());
    let dry = repo.swarm(&["gc", "--dry-run"]);
    assert_exit(&dry, 0);
    assert!(
        stdout(&dry).contains(&format!("would remove {}", dir.parent().unwrap().display())),
        "{}",
        stdout(&dry)
    );
    assert!(dir.exists());
    assert_exit(&repo.swarm(&["gc"]), 0);
    assert!(!dir.exists());
}

#[test]
fn the_example_report_plan_runs_and_names_the_repository() {
    let repo = TestRepo::new();
    let plan = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/repo-report.jsonl");
    let report = outside(&repo, "report.md");

    let out = repo.swarm(&[
        "run",
        plan.to_str().unwrap(),
        "--final-out",
        report.to_str().unwrap(),
    ]);

    assert_exit(&out, 0);
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.starts_with("# Repository report: repo\n"), "{text}");
    for section in ["## Layout", "## Lines by file type", "## Run summary"] {
        assert!(text.contains(section), "{section}: {text}");
    }
}
