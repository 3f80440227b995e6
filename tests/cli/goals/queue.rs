//! The durable goal queue: it survives a kill, `queue rm` takes a waiting goal out, and a goal
//! queued while the queue drains joins the run.

use std::io::{BufReader, Read as _};

use serde_json::{Value, json};

use super::{GOAL_A, GOAL_B, GOAL_C, at, events, needs_call, plan_for, server, setup, user_text};
use crate::fake_llm::has_tool;
use crate::gate::Gate;
use crate::{assert_exit, outside, read_until, status_json, stdout, tasks_with_status};

#[test]
fn the_queue_survives_a_kill_and_resume_finishes_it_without_rerunning_tasks() {
    let s = setup();
    let (llm, _) = server(
        || needs_call(&json!([{"goal": "g2", "needs": "g1", "reason": "B describes A's file"}])),
        |goal| match goal {
            'A' => plan_for('A', &["alpha.txt", "alpha2.txt"]),
            'B' => plan_for('B', &["beta.txt"]),
            _ => plan_for('C', &["gamma.txt", "gamma2.txt"]),
        },
    );
    for goal in [GOAL_A, GOAL_B, GOAL_C] {
        assert_exit(&s.swarm(&llm, &["queue", "add", goal]), 0);
    }
    let listed = s.swarm(&llm, &["queue", "list", "--json"]);
    assert_exit(&listed, 0);
    let items: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(items.as_array().unwrap().len(), 3, "{items}");
    assert_eq!(items[1]["text"], GOAL_B);

    // Killed once two of A's and C's writers are merged, while the first attempt of C's last
    // writer holds the run at its gate (a resumed one passes).
    let gate = Gate::new(&outside(&s.repo, "gates"), "cw1");
    let mut child = s
        .cmd(&llm)
        .args(["queue", "run", "-j", "2"])
        .env("AGENT_GATE_TASK", "g3.cw1")
        .env("AGENT_GATE", gate.shell_once())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    for _ in 0..2 {
        read_until(&mut stderr, "Merged");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // Still queued: the run has not finished.
    let listed = s.swarm(&llm, &["queue", "list"]);
    assert!(stdout(&listed).contains("GOAL-C"), "{}", stdout(&listed));
    let status = status_json(&s.repo);
    let done = tasks_with_status(&status, "done");
    assert!(!done.is_empty(), "{status}");
    let before = s.starts();

    // What the kill left running (C's writer at its gate among them) the resume stops.
    let out = s.swarm(&llm, &["resume"]);
    assert_exit(&out, 0);
    for (file, task) in [
        ("alpha.txt", "g1.aw0"),
        ("alpha2.txt", "g1.aw1"),
        ("beta.txt", "g2.bw0"),
        ("gamma.txt", "g3.cw0"),
        ("gamma2.txt", "g3.cw1"),
    ] {
        assert_eq!(s.repo.read(file), format!("written by {task}\n"));
    }
    // Nothing that had finished ran again.
    let after = s.starts();
    for id in &done {
        let count = |list: &[String]| list.iter().filter(|t| *t == id).count();
        assert_eq!(count(&before), count(&after), "{id} ran again");
    }
    // Each writer was merged exactly once.
    let merges = s.repo.git(&["log", "--merges", "--format=%s"]);
    for task in ["aw0", "aw1", "bw0", "cw0", "cw1"] {
        let n = merges
            .lines()
            .filter(|l| l.contains(&format!("{task} ")))
            .count();
        assert!(n <= 1, "{task} merged {n} times\n{merges}");
    }
    let listed = s.swarm(&llm, &["queue", "list", "--json"]);
    let items: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(items, json!([]));
}

#[test]
fn queue_rm_removes_a_waiting_goal_and_queue_run_of_an_empty_queue_runs_nothing() {
    let s = setup();
    let (llm, _) = server(|| needs_call(&json!([])), |goal| plan_for(goal, &["x.txt"]));
    assert_exit(&s.swarm(&llm, &["queue", "add", "first", "goal"]), 0);
    let listed = stdout(&s.swarm(&llm, &["queue", "list"]));
    assert!(
        listed.contains("1  queued") && listed.contains("first goal"),
        "{listed}"
    );
    assert_exit(&s.swarm(&llm, &["queue", "rm", "1"]), 0);
    let missing = s.swarm(&llm, &["queue", "rm", "1"]);
    assert_exit(&missing, 2);
    assert!(crate::stderr(&missing).contains("no goal 1 in the queue"));
    let out = s.swarm(&llm, &["queue", "run"]);
    assert_exit(&out, 0);
    assert!(llm.requests().is_empty());
}

#[test]
fn a_goal_queued_while_the_queue_drains_joins_the_run_after_the_dependency_pass() {
    let s = setup();
    let (llm, planning) = server(
        || needs_call(&json!([{"goal": "g2", "needs": "g1", "reason": "B describes A's file"}])),
        |goal| match goal {
            'A' => plan_for('A', &["alpha.txt"]),
            _ => plan_for('B', &["beta.txt"]),
        },
    );
    assert_exit(&s.swarm(&llm, &["queue", "add", GOAL_A]), 0);
    // A past run's goal like B, in memory.
    let board = rusqlite::Connection::open(s.repo.swarm_dir().join("board.db")).unwrap();
    board
        .execute(
            "INSERT INTO memory (run_id, goal_id, at, goal, skeleton, outcome)
             VALUES ('20260101-000000-0000', 'goal', 1, 'Describe beta.txt', 'b (coder, write)', 'done')",
            [],
        )
        .unwrap();
    drop(board);
    let gate = Gate::new(&outside(&s.repo, "gates"), "aw0");
    let mut child = s
        .cmd(&llm)
        .args(["queue", "run"])
        .env("AGENT_GATE_TASK", "g1.aw0")
        .env("AGENT_GATE", gate.shell())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    gate.reached(&mut child);
    // Added while A's writer runs: the drain takes it, and only then does the writer go on.
    assert_exit(&s.swarm(&llm, &["queue", "add", GOAL_B]), 0);
    read_until(&mut stderr, "Queued g2");
    gate.release();
    stderr.read_to_string(&mut String::new()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 0);
    assert_eq!(s.repo.read("beta.txt"), "written by g2.bw0\n");

    // One dependency pass (a lone goal needs none), about g1 (started) and g2, before B was
    // planned; B was planned after A merged.
    let requests = llm.requests();
    let pass = requests
        .iter()
        .position(|r| has_tool(r, "submit_dependencies"))
        .expect("a dependency pass");
    assert_eq!(
        requests
            .iter()
            .filter(|r| has_tool(r, "submit_dependencies"))
            .count(),
        1
    );
    let asked = user_text(&requests[pass]);
    assert!(asked.contains("g1") && asked.contains(GOAL_B), "{asked}");
    let b_plan = requests
        .iter()
        .position(|r| has_tool(r, "submit_plan") && user_text(r).contains("GOAL-B"))
        .expect("B was planned");
    assert!(pass < b_plan);
    // Joining while the run went, B was planned knowing the past goal like it.
    let b_asked = user_text(&requests[b_plan]);
    assert!(
        b_asked.contains("- run 20260101-000000-0000 (goal goal): Describe beta.txt"),
        "{b_asked}"
    );
    let a_merged = events(&s.repo)
        .iter()
        .filter(|e| e["kind"] == "merged" && e["task"] == "g1.aw0")
        .map(at)
        .next()
        .expect("A merged");
    let b_at = planning
        .lock()
        .unwrap()
        .iter()
        .find(|p| p.0 == 'B')
        .unwrap()
        .1;
    assert!(b_at >= a_merged);
    let listed = s.swarm(&llm, &["queue", "list", "--json"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&listed.stdout).unwrap(),
        json!([])
    );
}
