//! A swarm killed mid-run, and the run lock: `resume` finishes the run without redoing work and
//! stops the agents the killed swarm left, `gc` removes what it left, and a second run in the
//! same repository fails fast.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use super::{alive, finish, lines_of, path_arg, run_dirs, sh, task_file, task_status, wait_for};
use crate::{
    TestRepo, assert_exit, extra_worktrees, outside, status_json, stderr, stdout, tasks_with_status,
};

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
    // The first run holds the lock until the test lets it go: a second run that waited for the
    // lock would never end.
    let release = outside(&repo, "release");
    let slow = task_file(
        &repo,
        &[
            json!({"id": "slow", "run": format!("touch {}; until [ -e {} ]; do sleep 0.02; done", sh(&started), sh(&release)), "mode": "read"}),
        ],
    );
    let first = repo.spawn(&["run", path_arg(&slow), "-q"]);
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
    let second = repo.spawn(&["run", path_arg(&other)]);
    let second = finish(second, Duration::from_secs(60));
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

    std::fs::write(&release, "").unwrap();
    let out = finish(first, Duration::from_secs(60));
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
fn a_run_that_fails_inside_stops_its_agents_before_it_exits() {
    let repo = TestRepo::new();
    let pid_file = outside(&repo, "pid");
    let go = outside(&repo, "go");
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "long", "run": format!("echo $$ > {}; exec sleep 60", sh(&pid_file)), "mode": "read"}),
            json!({"id": "short", "run": format!("until [ -e {} ]; do sleep 0.02; done", sh(&go)), "mode": "read"}),
        ],
    );
    let child = repo.spawn(&["run", "-j", "2", path_arg(&tasks)]);
    wait_for("the long task to start", Duration::from_secs(10), || {
        !lines_of(&pid_file).is_empty()
    });
    let pid: u32 = lines_of(&pid_file)[0].parse().unwrap();
    // Another process holds the board, so swarm cannot record the short task's end: its run
    // loop fails.
    let board = rusqlite::Connection::open(repo.swarm_dir().join("board.db")).unwrap();
    board.execute_batch("BEGIN EXCLUSIVE").unwrap();
    std::fs::write(&go, "").unwrap();
    let out = finish(child, Duration::from_secs(60));
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
