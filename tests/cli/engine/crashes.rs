//! A swarm killed mid-run, and the run lock: `resume` finishes the run without redoing work and
//! stops the agents the killed swarm left, `gc` removes what it left, and a second run in the
//! same repository fails fast.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::{alive, lines_of, path_arg, run_dirs, sh, task_file, task_status};
use crate::gate::Gate;
use crate::lifeline::Lifeline;
use crate::{
    TestRepo, assert_exit, extra_worktrees, outside, status_json, stderr, stdout, tasks_with_status,
};

#[test]
fn killed_run_resumes_without_rerunning_finished_tasks() {
    let repo = TestRepo::new();
    let log = outside(&repo, "ran.log");
    // The kill comes while the fifth task of the chain runs (its first attempt only).
    let gate = Gate::new(&outside(&repo, "gates"), "t04");
    let tasks: Vec<Value> = (0..20)
        .map(|i| {
            let deps: Vec<String> = if i == 0 {
                vec![]
            } else {
                vec![format!("t{:02}", i - 1)]
            };
            let ran = format!("echo \"$SWARM_TASK_ID\" >> {}", sh(&log));
            json!({
                "id": format!("t{i:02}"),
                "run": if i == 4 { format!("{} && {ran}", gate.shell_once()) } else { ran },
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
    gate.reached(&mut child);
    child.kill().unwrap();
    child.wait().unwrap();

    let status = status_json(&repo);
    assert_eq!(
        status["run"]["status"], "running",
        "a killed run cannot have recorded an end"
    );
    let done = tasks_with_status(&status, "done");
    assert_eq!(done, ["t00", "t01", "t02", "t03"], "{status:#}");

    // The task the kill cut short was left running, at its gate: the resume stops it.
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
    // The first run holds the lock until the test lets its task go: a second run that waited
    // for the lock would never end.
    let gate = Gate::new(&outside(&repo, "gates"), "slow");
    let slow = task_file(
        &repo,
        &[json!({"id": "slow", "run": gate.shell(), "mode": "read"})],
    );
    let mut first = repo.spawn(&["run", path_arg(&slow), "-q"]);
    let holder_pid = first.id();
    gate.reached(&mut first);
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
    let second = repo.swarm(&["run", path_arg(&other)]);
    assert_exit(&second, 4);
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

    gate.release();
    let out = first.wait_with_output().unwrap();
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
    // The first attempt of `slow` holds the run until the kill; the resumed one passes.
    let gate = Gate::new(&outside(&repo, "gates"), "slow");
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "slow", "run": gate.shell_once(), "mode": "read"}),
            json!({"id": "next", "run": "echo next", "deps": ["slow"], "mode": "read"}),
        ],
    );
    let mut child = repo
        .swarm_cmd()
        .args(["run", path_arg(&tasks), "-q"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    gate.reached(&mut child);
    child.kill().unwrap();
    child.wait().unwrap();

    let out = repo.swarm(&["resume"]);
    assert_exit(&out, 0);
    let status = status_json(&repo);
    assert_eq!(task_status(&status, "slow"), "done");
    assert_eq!(task_status(&status, "next"), "done");
}

#[test]
fn resume_stops_agents_a_killed_swarm_left_running() {
    let repo = TestRepo::new();
    let pidfile = outside(&repo, "pid");
    let survived = outside(&repo, "survived");
    let dir = outside(&repo, "gates");
    let gate = Gate::new(&dir, "stubborn");
    let mut lifeline = Lifeline::new(&dir, "stubborn");
    // The first attempt leaves a process that, unless stopped, ends by itself a minute later
    // and says so; the attempt after the resume succeeds at once.
    let tasks = task_file(
        &repo,
        &[json!({
            "id": "stubborn",
            "run": format!(
                "[ -e {pid} ] && exit 0; {}; (sleep 60; touch {}) & echo $! > {pid}; {}; wait",
                lifeline.shell(),
                sh(&survived),
                gate.shell(),
                pid = sh(&pidfile),
            ),
            "mode": "read",
        })],
    );
    let mut child = repo
        .swarm_cmd()
        .args(["run", path_arg(&tasks), "-q"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    gate.reached(&mut child);
    gate.release();
    child.kill().unwrap();
    child.wait().unwrap();
    let orphan: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(alive(orphan), "the agent should outlive a kill -9 of swarm");

    let resumed = repo.swarm_cmd().args(["resume", "-q"]).output().unwrap();
    assert_exit(&resumed, 0);
    // Every process of the first attempt is gone, and not by reaching its end.
    assert_eq!(lifeline.ended(), 1);
    assert!(!survived.exists(), "the orphan ran to its end");
}

#[test]
fn gc_removes_the_deps_files_a_killed_run_left() {
    let repo = TestRepo::new();
    let seen = outside(&repo, "deps-dir");
    let gate = Gate::new(&outside(&repo, "gates"), "b");
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "a", "run": "echo alpha", "mode": "read"}),
            json!({"id": "b", "run": format!("echo \"$SWARM_DEPS_DIR\" > {}; {}", sh(&seen), gate.shell()), "deps": ["a"], "mode": "read"}),
        ],
    );
    let mut child = repo
        .swarm_cmd()
        .args(["run", path_arg(&tasks)])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    gate.reached(&mut child);
    child.kill().unwrap();
    child.wait().unwrap();
    // The agent the kill left goes on to its end.
    gate.release();
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
fn a_run_that_fails_inside_stops_its_agents_before_it_exits() {
    let repo = TestRepo::new();
    let pid_file = outside(&repo, "pid");
    let dir = outside(&repo, "gates");
    let (long, short) = (Gate::new(&dir, "long"), Gate::new(&dir, "short"));
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "long", "run": format!("echo $$ > {} && {} && exec sleep 60", sh(&pid_file), long.shell()), "mode": "read"}),
            json!({"id": "short", "run": short.shell(), "mode": "read"}),
        ],
    );
    let mut child = repo.spawn(&["run", "-j", "2", path_arg(&tasks)]);
    long.reached(&mut child);
    long.release();
    let pid: u32 = lines_of(&pid_file)[0].parse().unwrap();
    short.reached(&mut child);
    // Another process holds the board, so swarm cannot record the short task's end: its run
    // loop fails.
    let board = rusqlite::Connection::open(repo.swarm_dir().join("board.db")).unwrap();
    board.execute_batch("BEGIN EXCLUSIVE").unwrap();
    short.release();
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 1);
    assert!(stderr(&out).contains("locked"), "{}", stderr(&out));
    assert!(!alive(pid), "the long task outlived swarm");
    drop(board);
}

#[test]
fn a_process_a_task_detached_is_stopped_when_the_run_ends_and_told() {
    let repo = TestRepo::new();
    let pid_file = outside(&repo, "detached.pid");
    let tasks = task_file(
        &repo,
        &[json!({
            "id": "a",
            // The task ends only once the process is in a session of its own.
            "run": format!(
                "setsid sh -c 'echo $$ > {0}; exec sleep 300' < /dev/null > /dev/null 2>&1 & until [ -s {0} ]; do sleep 0.01; done",
                sh(&pid_file).replace('\'', "")
            ),
            "mode": "read",
        })],
    );
    let out = repo.swarm(&["run", path_arg(&tasks)]);
    assert_exit(&out, 0);
    let pid: u32 = lines_of(&pid_file)[0].parse().unwrap();
    assert!(!alive(pid), "the detached process outlived the run");
    assert!(
        stderr(&out).contains("process(es) the run's tasks left behind"),
        "{}",
        stderr(&out)
    );
    let events = std::fs::read_to_string(run_dirs(&repo)[0].join("events.jsonl")).unwrap();
    assert!(events.contains("\"strays_stopped\""), "{events}");
}
