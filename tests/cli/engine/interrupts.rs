//! Ctrl-C: the first interrupts the run gracefully, the second kills the tasks at once; either
//! way the run resumes.

use std::io::{BufReader, Read as _};
use std::process::Child;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;

use super::{path_arg, sh, task_file, task_status};
use crate::gate::Gate;
use crate::lifeline::Lifeline;
use crate::{TestRepo, assert_exit, extra_worktrees, outside, read_until, status_json, stdout};

/// Sends `signal` to swarm at once (no `kill` process to start first).
fn signal(swarm: &Child, signal: Signal) {
    kill(Pid::from_raw(swarm.id() as i32), signal).unwrap();
}

#[test]
fn sigint_interrupts_the_run_and_resume_completes_it() {
    let repo = TestRepo::new();
    let ended = outside(&repo, "ended");
    let dir = outside(&repo, "gates");
    let (a, b) = (Gate::new(&dir, "a"), Gate::new(&dir, "b"));
    // The first attempts take far longer than the interrupt may wait; the attempts after the
    // resume end at once.
    let first_attempt = |id: &str, gate: &Gate| {
        let first = outside(&repo, &format!("{id}-ran"));
        format!(
            "[ -e {first} ] && exit 0; touch {first}; {}; sleep 30; touch {}",
            gate.shell(),
            sh(&ended),
            first = sh(&first),
        )
    };
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "a", "run": first_attempt("a", &a), "mode": "read"}),
            json!({"id": "b", "run": first_attempt("b", &b), "mode": "read"}),
            json!({"id": "c", "run": "echo c", "deps": ["a", "b"], "mode": "read"}),
        ],
    );
    let mut child = repo.spawn(&["run", path_arg(&tasks)]);
    for gate in [&a, &b] {
        gate.reached(&mut child);
        gate.release();
    }
    signal(&child, Signal::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 75);
    assert!(!ended.exists(), "the interrupt waited for the tasks to end");
    assert!(
        stdout(&out).contains("continues the run; nothing was merged yet."),
        "{}",
        stdout(&out)
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

#[test]
fn an_interrupted_run_that_merged_work_says_where_it_is() {
    let repo = TestRepo::new();
    let gate = Gate::new(&outside(&repo, "gates"), "slow");
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "w", "run": "echo done > w.txt"}),
            json!({
                "id": "slow",
                "run": format!("{}; sleep 30", gate.shell()),
                "deps": ["w"],
                "mode": "read",
            }),
        ],
    );
    let mut child = repo.spawn(&["run", path_arg(&tasks), "--json", "-q"]);
    // `slow` starts once `w` is merged.
    gate.reached(&mut child);
    gate.release();
    signal(&child, Signal::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 75);

    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let landing = &summary["landing"];
    let branch = format!("swarm/{}", summary["run"].as_str().unwrap());
    assert_eq!(landing["action"], "interrupted", "{landing}");
    assert_eq!(landing["branch"], branch.as_str(), "{landing}");
    assert!(
        landing["message"].as_str().unwrap().ends_with(&format!(
            "continues the run; merged work so far is on `{branch}`."
        )),
        "{landing}"
    );
}

#[test]
fn second_sigint_kills_tasks_at_once_and_the_run_stays_resumable() {
    let repo = TestRepo::new();
    let flag = outside(&repo, "first-attempt");
    let survived = outside(&repo, "survived");
    let dir = outside(&repo, "gates");
    let gate = Gate::new(&dir, "stubborn");
    let mut lifeline = Lifeline::new(&dir, "stubborn");
    // The first attempt ignores SIGTERM (so the first Ctrl-C cannot end it before the grace
    // period) and leaves a process that, unless killed, ends by itself and says so; the attempt
    // after the resume succeeds at once.
    let cmd = format!(
        "if [ -e {flag} ]; then echo again; exit 0; fi; touch {flag}; {}; trap '' TERM; (sleep 30; touch {}) & {}; wait",
        lifeline.shell(),
        sh(&survived),
        gate.shell(),
        flag = sh(&flag),
    );
    let tasks = task_file(
        &repo,
        &[json!({"id": "stubborn", "run": cmd, "mode": "read"})],
    );
    // A grace far longer than any delay between the two signals, however loaded the machine.
    let mut child = repo.spawn(&["run", path_arg(&tasks), "--kill-grace", "10m"]);
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    gate.reached(&mut child);
    gate.release();
    signal(&child, Signal::SIGINT);
    // Two signals sent at once may arrive as one: the second goes once the first is taken.
    read_until(&mut stderr, "press Ctrl-C again to kill now");
    signal(&child, Signal::SIGINT);
    let mut said = String::new();
    stderr.read_to_string(&mut said).unwrap();
    let out = child.wait_with_output().unwrap();

    assert_exit(&out, 75);
    // Killed at once, not at the end of the grace (after which swarm would have recorded the
    // attempt and the run as interrupted): the board is as a `kill -9` leaves it.
    assert!(!said.contains("Interrupted"), "{said}");
    assert_eq!(status_json(&repo)["run"]["status"], "running");
    // Every process of the attempt is gone, and not by reaching its end.
    assert_eq!(lifeline.ended(), 1);
    assert!(!survived.exists(), "the task's child ran to its end");

    let resumed = repo.swarm(&["resume"]);
    assert_exit(&resumed, 0);
    assert_eq!(task_status(&status_json(&repo), "stubborn"), "done");
}

#[test]
fn a_second_signal_while_the_escalation_hook_runs_kills_it_and_swarm_at_once() {
    let repo = TestRepo::new();
    let finished = outside(&repo, "hook-finished");
    let dir = outside(&repo, "gates");
    let gate = Gate::new(&dir, "hook");
    let mut lifeline = Lifeline::new(&dir, "hook");
    // Two writers of one file: the second to merge conflicts, is parked, and escalated.
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "a", "run": "echo a > same.txt"}),
            json!({"id": "b", "run": "echo b > same.txt"}),
        ],
    );
    // The hook ignores SIGTERM, so the first signal cannot end it, and would take five minutes.
    let hook = format!(
        "{}; trap '' TERM; {}; sleep 300; touch {}",
        lifeline.shell(),
        gate.shell(),
        sh(&finished)
    );
    let mut child = repo.spawn(&["run", "-j", "2", "--on-escalate", &hook, path_arg(&tasks)]);
    gate.reached(&mut child);
    gate.release();
    // The owner thread waits for the hook; two signals of different kinds are never merged
    // into one on the way.
    signal(&child, Signal::SIGINT);
    signal(&child, Signal::SIGTERM);
    let out = child.wait_with_output().unwrap();

    assert_exit(&out, 75);
    // Not at the end of the grace, after which the run would have been recorded as ended.
    assert_eq!(status_json(&repo)["run"]["status"], "running");
    // The hook is gone, and not by reaching its end.
    assert_eq!(lifeline.ended(), 1);
    assert!(!finished.exists(), "the hook ran to its end");
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
    let out = child.wait_with_output().unwrap();
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

/// Whether process `pid` still runs (a zombie nobody reaped has ended).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

#[test]
fn sighup_stops_the_run_resumably_and_leaves_no_process_of_its_tasks() {
    let repo = TestRepo::new();
    let pids = outside(&repo, "pids");
    let gate = Gate::new(&outside(&repo, "gates"), "running");
    // The first attempt starts a child of its own, then waits; the resumed one ends at once.
    let first = outside(&repo, "first-ran");
    let run = format!(
        "[ -e {first} ] && exit 0; touch {first}; sleep 300 & echo $! >> {pids}; echo $$ >> {pids}; {}; sleep 300",
        gate.shell(),
        first = sh(&first),
        pids = sh(&pids),
    );
    let tasks = task_file(&repo, &[json!({"id": "t", "run": run, "mode": "read"})]);
    let mut child = repo.spawn(&["run", path_arg(&tasks)]);
    gate.reached(&mut child);
    let started: Vec<i32> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(started.len(), 2);
    assert!(started.iter().all(|&p| alive(p)));

    // The terminal closes.
    signal(&child, Signal::SIGHUP);
    let out = child.wait_with_output().unwrap();

    assert_exit(&out, 75);
    for pid in started {
        assert!(!alive(pid), "process {pid} of the task outlived swarm");
    }
    assert_eq!(status_json(&repo)["run"]["status"], "interrupted");
    assert_exit(&repo.swarm(&["resume"]), 0);
    assert_eq!(task_status(&status_json(&repo), "t"), "done");
}
