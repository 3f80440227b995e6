//! Ctrl-C: the first interrupts the run gracefully, the second kills the tasks at once; either
//! way the run resumes.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use super::{alive, finish, lines_of, path_arg, sh, task_file, task_status, wait_for};
use crate::{TestRepo, assert_exit, extra_worktrees, outside, status_json, stderr, stdout};

#[test]
fn sigint_interrupts_the_run_and_resume_completes_it() {
    let repo = TestRepo::new();
    let started = outside(&repo, "started");
    let ended = outside(&repo, "ended");
    // Until it exists, the first attempts sleep far longer than the test waits for the run.
    let go = outside(&repo, "go");
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "a", "run": format!("echo a >> {}; [ -e {go} ] || sleep 30; touch {}", sh(&started), sh(&ended), go = sh(&go)), "mode": "read"}),
            json!({"id": "b", "run": format!("echo b >> {}; [ -e {go} ] || sleep 30; touch {}", sh(&started), sh(&ended), go = sh(&go)), "mode": "read"}),
            json!({"id": "c", "run": "echo c", "deps": ["a", "b"], "mode": "read"}),
        ],
    );
    let child = repo.spawn(&["run", path_arg(&tasks)]);
    wait_for("both tasks to start", Duration::from_secs(10), || {
        lines_of(&started).len() >= 2
    });
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = finish(child, Duration::from_secs(25));
    assert_exit(&out, 75);
    assert!(!ended.exists(), "the interrupt waited for the tasks to end");
    std::fs::write(&go, "").unwrap();

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
    let child = repo.spawn(&["run", path_arg(&tasks)]);
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
fn a_second_signal_while_the_escalation_hook_runs_kills_it_and_swarm_at_once() {
    let repo = TestRepo::new();
    let hooked = outside(&repo, "hook.pid");
    // Two writers of one file: the second to merge conflicts, is parked, and escalated.
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "a", "run": "echo a > same.txt"}),
            json!({"id": "b", "run": "echo b > same.txt"}),
        ],
    );
    let hook = format!("echo $$ > {}; exec sleep 60", sh(&hooked));
    let child = repo.spawn(&["run", "-j", "2", "--on-escalate", &hook, path_arg(&tasks)]);
    wait_for("the hook to start", Duration::from_secs(20), || {
        std::fs::read_to_string(&hooked).is_ok_and(|p| p.ends_with('\n'))
    });
    let hook_pid: u32 = lines_of(&hooked)[0].parse().unwrap();
    // The owner thread waits for the hook; two signals of different kinds are never merged
    // into one on the way.
    for signal in ["-INT", "-TERM"] {
        let kill = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(kill.success());
    }
    let out = finish(child, Duration::from_secs(30));
    assert_exit(&out, 75);
    wait_for("the hook to be killed", Duration::from_secs(5), || {
        !alive(hook_pid)
    });
}

#[test]
fn escalation_hooks_run_while_the_run_goes_on() {
    let repo = TestRepo::new();
    let started = outside(&repo, "hooks-started");
    // Three writers of one file from one start: one merges, two are parked and escalated. Each
    // hook waits until both have started, which only a loop not waiting for the first lets
    // happen (a hook's own limit is a minute).
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "a", "run": "echo a > same.txt"}),
            json!({"id": "b", "run": "echo b > same.txt"}),
            json!({"id": "d", "run": "echo d > same.txt"}),
        ],
    );
    let hook = format!(
        "echo x >> {0}; until [ \"$(wc -l < {0})\" -ge 2 ]; do sleep 0.02; done",
        sh(&started)
    );
    let child = repo.spawn(&["run", "-j", "3", "--on-escalate", &hook, path_arg(&tasks)]);
    let out = finish(child, Duration::from_secs(45));
    assert_exit(&out, 3);
    let status = status_json(&repo);
    let run = status["run"]["id"].as_str().unwrap().to_owned();
    let events =
        std::fs::read_to_string(repo.swarm_dir().join("runs").join(run).join("events.jsonl"))
            .unwrap();
    let escalated: Vec<&str> = events
        .lines()
        .filter(|l| l.contains("\"escalated\""))
        .collect();
    assert_eq!(escalated.len(), 2, "{events}");
    for e in escalated {
        assert!(e.contains("succeeded"), "{e}");
    }
}
