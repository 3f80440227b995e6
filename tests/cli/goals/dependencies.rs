//! Goals that need other goals: independent goals overlap, a goal is planned once what it needs
//! is merged, and it is skipped when that failed or was parked; a failed dependency pass runs
//! the goals as independent, and goals waiting for each other end the run as a deadlock.

use std::path::Path;

use serde_json::{Value, json};

use super::{
    GOAL_A, GOAL_B, GOAL_C, at, events, goals_args, needs_call, plan_for, server, setup, span,
};
use crate::fake_llm::{Reply, has_tool};
use crate::{assert_exit, outside, status_json, stdout};

#[test]
fn independent_goals_overlap_and_a_dependent_goal_is_planned_after_its_need_merges() {
    let s = setup();
    let (llm, planning) = server(
        || {
            needs_call(
                &json!([{"goal": "g2", "needs": "g1", "reason": "B describes the file A adds"}]),
            )
        },
        |goal| match goal {
            'A' => plan_for('A', &["alpha.txt"]),
            'B' => plan_for('B', &["beta.txt"]),
            _ => plan_for('C', &["gamma.txt"]),
        },
    );
    let report = outside(&s.repo, "report.md");
    let dir = outside(&s.repo, "goals");
    // Writers long enough that A's and C's overlap even when their plans arrive apart.
    let out = s
        .cmd(&llm)
        .env("AGENT_PAUSE", "1")
        .args(goals_args(
            &[GOAL_A, GOAL_B, GOAL_C],
            &report,
            &["--final-out-dir", dir.to_str().unwrap()],
        ))
        .output()
        .unwrap();
    assert_exit(&out, 0);

    // Every goal's work was merged and landed.
    for (file, task) in [
        ("alpha.txt", "g1.aw0"),
        ("beta.txt", "g2.bw0"),
        ("gamma.txt", "g3.cw0"),
    ] {
        assert_eq!(s.repo.read(file), format!("written by {task}\n"));
    }
    let events = events(&s.repo);
    // A's and C's writers ran at the same time.
    let (a0, a1) = span(&events, "g1.aw0");
    let (c0, c1) = span(&events, "g3.cw0");
    assert!(
        a0 < c1 && c0 < a1,
        "A {a0}..{a1} and C {c0}..{c1} do not overlap"
    );
    // B was planned only after A's last merge, and its planner saw A's result.
    let a_merged = events
        .iter()
        .filter(|e| e["kind"] == "merged" && e["task"].as_str().unwrap().starts_with("g1."))
        .map(at)
        .max()
        .expect("A merged");
    let planning = planning.lock().unwrap();
    let (_, b_at, b_prompt) = planning
        .iter()
        .find(|(g, _, _)| *g == 'B')
        .expect("B was planned");
    assert!(
        *b_at >= a_merged,
        "B planned at {b_at}, A merged at {a_merged}"
    );
    assert!(
        b_prompt.contains("RESULT-A: goal A is finished"),
        "{b_prompt}"
    );
    assert!(b_prompt.contains("alpha.txt"), "{b_prompt}");
    // A and C were planned before A's merge, at the start.
    assert!(
        planning
            .iter()
            .filter(|(g, _, _)| *g != 'B')
            .all(|(_, t, _)| *t < a_merged)
    );

    // The report: a section per goal with its reducer's result, then the run summary with the
    // goal graph (B after A) and the task graph.
    let text = std::fs::read_to_string(&report).unwrap();
    for (id, goal, result) in [
        ("g1", GOAL_A, "RESULT-A"),
        ("g2", GOAL_B, "RESULT-B"),
        ("g3", GOAL_C, "RESULT-C"),
    ] {
        let heading = format!("## Goal {id}: {goal}");
        let at = text
            .find(&heading)
            .unwrap_or_else(|| panic!("{heading}\n{text}"));
        let section = &text[at..];
        let next = section[3..].find("\n## ").map_or(section.len(), |n| n + 3);
        assert!(section[..next].contains(result), "{text}");
        assert!(section[..next].contains("Status: **done**"), "{text}");
    }
    assert!(
        text.contains("Needs goal g1 (B describes the file A adds)"),
        "{text}"
    );
    assert!(text.contains("### Goal graph"), "{text}");
    assert!(text.contains("  g1 --> g2\n"), "{text}");
    assert!(text.contains("  class g1,g2,g3 done\n"), "{text}");
    assert!(text.contains("### Task graph"), "{text}");
    assert!(text.find("## Goal g3").unwrap() < text.find("## Run summary").unwrap());
    // One report per goal in --final-out-dir.
    for (id, result) in [("g1", "RESULT-A"), ("g2", "RESULT-B"), ("g3", "RESULT-C")] {
        let one = std::fs::read_to_string(dir.join(format!("{id}.md"))).unwrap();
        assert!(one.starts_with(&format!("## Goal {id}:")), "{one}");
        assert!(one.contains(result), "{one}");
    }
    // stdout names each goal's outcome.
    let so = stdout(&out);
    assert!(so.contains("goal g2 done: GOAL-B"), "{so}");
}

#[test]
fn a_failed_dependency_pass_runs_the_goals_as_independent_and_says_so() {
    let s = setup();
    let (llm, _) = server(
        || Reply::error(500, "the dependency service is down"),
        |goal| match goal {
            'A' => plan_for('A', &["alpha.txt"]),
            _ => plan_for('B', &["beta.txt"]),
        },
    );
    let goals = outside(&s.repo, "goals.txt");
    std::fs::write(&goals, format!("# two goals\n{GOAL_A}\n\n{GOAL_B}\n")).unwrap();
    let report = outside(&s.repo, "report.md");
    let out = s.swarm(
        &llm,
        &[
            "--goals-file",
            goals.to_str().unwrap(),
            "--final-out",
            report.to_str().unwrap(),
            "--json",
        ],
    );
    assert_exit(&out, 0);
    assert_eq!(s.repo.read("alpha.txt"), "written by g1.aw0\n");
    assert_eq!(s.repo.read("beta.txt"), "written by g2.bw0\n");
    // The JSON summary lists the goals with their tasks, and needs that are empty.
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["goals"][0]["text"], GOAL_A);
    assert_eq!(summary["goals"][1]["needs"], json!([]));
    assert_eq!(summary["goals"][1]["tasks"], json!(["g2.bw0", "g2.br"]));
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(
        text.contains("The dependency pass failed") && text.contains("ran as independent"),
        "{text}"
    );
    // It was retried as any throttled or failing request is, then given up.
    let passes = llm
        .requests()
        .iter()
        .filter(|r| has_tool(r, "submit_dependencies"))
        .count();
    assert!(passes > 1, "{passes}");
    // Both were planned although the pass failed: neither waited for the other.
    assert_eq!(
        llm.requests()
            .iter()
            .filter(|r| has_tool(r, "submit_plan"))
            .count(),
        2
    );
}

#[test]
fn goals_that_need_a_parked_goal_are_skipped_and_the_rest_go_on() {
    let s = setup();
    // A's two writers change the same new file: the second to merge conflicts and is parked.
    let (llm, _) = server(
        || {
            needs_call(&json!([
                {"goal": "g2", "needs": "g1", "reason": "B builds on A"},
                {"goal": "g3", "needs": "g2", "reason": "C builds on B"}
            ]))
        },
        |goal| match goal {
            'A' => plan_for('A', &["shared.txt", "shared.txt"]),
            'B' => plan_for('B', &["beta.txt"]),
            'C' => plan_for('C', &["gamma.txt"]),
            _ => plan_for('D', &["delta.txt"]),
        },
    );
    let report = outside(&s.repo, "report.md");
    let goals = [
        GOAL_A,
        GOAL_B,
        GOAL_C,
        "GOAL-D: an independent goal writing delta.txt",
    ];
    // A conflict is parked at once: no rung of the ladder after git's merge.
    let out = s
        .cmd(&llm)
        .env("SWARM_CONFLICTS", "merge")
        .args(goals_args(&goals, &report, &[]))
        .output()
        .unwrap();
    assert_exit(&out, 3);
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.contains("Status: **parked**"), "{text}");
    assert!(
        text.contains("Status: **skipped** (needs goal g1, which was parked)"),
        "{text}"
    );
    assert!(
        text.contains("Status: **skipped** (needs goal g2, which was skipped)"),
        "{text}"
    );
    assert!(text.contains("## Needs attention"), "{text}");
    // B and C were never planned; the independent goal D ran.
    assert!(
        !s.starts()
            .iter()
            .any(|t| t.starts_with("g2.") || t.starts_with("g3."))
    );
    assert!(text.contains("## Goal g4"), "{text}");
    assert!(text.contains("RESULT-D"), "{text}");
    assert!(!Path::new(&s.repo.root.join("beta.txt")).exists());
    // `swarm status` lists the goals with their outcome and needs.
    let status = stdout(&s.swarm(&llm, &["status"]));
    assert!(status.contains("goal g1   parked"), "{status}");
    assert!(
        status.contains("goal g3   skipped  GOAL-C: add gamma.txt (needs g2)"),
        "{status}"
    );
}

#[test]
fn goals_waiting_for_each_other_are_reported_as_a_deadlock_and_the_run_ends() {
    let s = setup();
    // Planning hangs, so the run is stopped with both goals still unplanned.
    let (llm, _) = server(|| needs_call(&json!([])), |_| Reply::Hang);
    let mut child = s
        .cmd(&llm)
        .args(["--goal", GOAL_A, "--goal", GOAL_C])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    llm.await_requests_from(&mut child, |requests| {
        requests
            .iter()
            .filter(|r| has_tool(r, "submit_plan"))
            .count()
            >= 2
    });
    child.kill().unwrap();
    child.wait().unwrap();
    // Goals whose needs form a cycle: the dependency pass never leaves one, so it is written
    // into the board directly, as a board from elsewhere could hold it.
    let db = rusqlite::Connection::open(s.repo.swarm_dir().join("board.db")).unwrap();
    db.execute(
        "UPDATE goals SET needs = '[{\"goal\":\"g2\",\"reason\":\"x\"}]' WHERE id = 'g1'",
        [],
    )
    .unwrap();
    db.execute(
        "UPDATE goals SET needs = '[{\"goal\":\"g1\",\"reason\":\"y\"}]' WHERE id = 'g2'",
        [],
    )
    .unwrap();
    drop(db);

    let report = outside(&s.repo, "report.md");
    // Swarm ending at all, rather than waiting for goals that wait for each other, is the
    // point.
    let out = s.swarm(&llm, &["resume", "--final-out", report.to_str().unwrap()]);
    assert_exit(&out, 1);
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.contains("Deadlock: nothing was running"), "{text}");
    assert!(
        text.contains("goal g1: waits for goal g2 (pending)"),
        "{text}"
    );
    assert!(
        text.contains("goal g2: waits for goal g1 (pending)"),
        "{text}"
    );
    assert!(
        text.contains("Status: **skipped** (deadlock: waits for goal g2 (pending))"),
        "{text}"
    );
    assert!(s.starts().is_empty());
}

#[test]
fn a_goal_whose_planning_fails_fails_alone_and_its_dependents_are_skipped() {
    let s = setup();
    let (llm, _) = server(
        || needs_call(&json!([{"goal": "g2", "needs": "g1", "reason": "B builds on A"}])),
        |goal| match goal {
            'A' => Reply::error(404, "no such model for A"),
            'B' => plan_for('B', &["beta.txt"]),
            _ => plan_for('C', &["gamma.txt"]),
        },
    );
    let report = outside(&s.repo, "report.md");
    let out = s.swarm(&llm, &goals_args(&[GOAL_A, GOAL_B, GOAL_C], &report, &[]));
    assert_exit(&out, 1);
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(
        text.contains("Status: **failed** (planning failed:"),
        "{text}"
    );
    assert!(
        text.contains("_It was never planned, so there is no deliverable._"),
        "{text}"
    );
    assert!(
        text.contains("Status: **skipped** (needs goal g1, which failed)"),
        "{text}"
    );
    assert_eq!(s.repo.read("gamma.txt"), "written by g3.cw0\n");
    let so = stdout(&out);
    assert!(so.contains("goal g3 done"), "{so}");
    // The goals, their outcomes and their tasks are in `status --json` too.
    let status = status_json(&s.repo);
    let outcomes: Vec<(&str, &str)> = status["goals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["id"].as_str().unwrap(), g["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        outcomes,
        [("g1", "failed"), ("g2", "skipped"), ("g3", "done")]
    );
}

#[test]
fn a_goal_whose_writer_failed_still_gets_its_reducer_told_what_is_missing() {
    let s = setup();
    let (llm, _) = server(
        || needs_call(&json!([])),
        |goal| match goal {
            'A' => Reply::ToolCalls(vec![(
                "plan-A".into(),
                "submit_plan".into(),
                json!({"tasks": [
                    {"id": "aw0", "prompt": "WRITE alpha.txt", "deps": [], "lane": "coder"},
                    {"id": "bad", "prompt": "FAIL now", "deps": [], "lane": "coder"},
                    {"id": "ar", "prompt": "REDUCE A", "deps": ["aw0", "bad"], "lane": "reducer"},
                ]}),
            )]),
            _ => plan_for('C', &["gamma.txt"]),
        },
    );
    let report = outside(&s.repo, "report.md");
    let out = s
        .cmd(&llm)
        .args(goals_args(&[GOAL_A, GOAL_C], &report, &["--retries", "0"]))
        .output()
        .unwrap();
    assert_exit(&out, 1);
    let status = status_json(&s.repo);
    let task = |id: &str| {
        status["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(task("g1.bad")["status"], "failed");
    // A's reducer ran on what finished, told that g1.bad failed and why.
    assert_eq!(task("g1.ar")["status"], "done");
    let result = task("g1.ar")["result"].as_str().unwrap().to_owned();
    assert!(result.starts_with("RESULT-A"), "{result}");
    assert!(
        result.contains("missing g1.bad: failed: exit code 3"),
        "{result}"
    );
    // The goal failed; its merged work and C's landed; the report has A's deliverable.
    assert_eq!(s.repo.read("alpha.txt"), "written by g1.aw0\n");
    assert_eq!(s.repo.read("gamma.txt"), "written by g2.cw0\n");
    let text = std::fs::read_to_string(&report).unwrap();
    let a = &text[text.find("## Goal g1").unwrap()..text.find("## Goal g2").unwrap()];
    assert!(a.contains("Status: **failed**"), "{text}");
    assert!(a.contains("RESULT-A: goal A is finished"), "{text}");
}

#[test]
fn two_goals_delivered_per_task_open_one_pull_request_per_goal_writer() {
    let s = setup();
    let fake = crate::fake_forge::FakeForge::start();
    let dir = tempfile::tempdir().unwrap();
    let remote = crate::deliver::project_remote(
        &s.repo,
        &fake,
        crate::fake_forge::Flavour::GitHub,
        dir.path(),
    );
    let (llm, _) = server(
        || needs_call(&json!([])),
        |goal| match goal {
            'A' => plan_for('A', &["alpha.txt"]),
            _ => plan_for('C', &["gamma.txt"]),
        },
    );
    let report = outside(&s.repo, "report.md");
    let out = s
        .cmd(&llm)
        .args(goals_args(
            &[GOAL_A, GOAL_C],
            &report,
            &["--deliver", "pr-per-task"],
        ))
        .envs(fake.github_env())
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let mut heads: Vec<(String, String)> = fake
        .changes()
        .into_iter()
        .map(|c| (c.head, c.title))
        .collect();
    heads.sort();
    assert_eq!(heads.len(), 2, "{heads:?}");
    // Each goal's writer alone, on the base: its file and not the other goal's.
    for ((head, title), (file, other)) in heads
        .iter()
        .zip([("alpha.txt", "gamma.txt"), ("gamma.txt", "alpha.txt")])
    {
        assert!(head.starts_with("swarm/goal-a-add-alpha-txt-"), "{head}");
        assert!(title.contains(&format!("WRITE {file}")), "{title}");
        let files = crate::remote::git(&remote, &["ls-tree", "-r", "--name-only", head]);
        assert!(files.lines().any(|f| f == file), "{head}: {files}");
        assert!(!files.lines().any(|f| f == other), "{head}: {files}");
    }
    // The report names them.
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.contains("Pull requests:"), "{text}");
    assert!(!s.repo.root.join("alpha.txt").exists());
}
