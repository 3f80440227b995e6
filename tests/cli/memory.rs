//! The repository's memory with the scripted model: a finished goal's run is kept (its plan's
//! skeleton, its outcome, its cost), a later goal like it is planned knowing it and an
//! unrelated one is not, `swarm memory list|show|forget`, `--no-memory` and `SWARM_RECALL=0`,
//! and no secret's value kept or sent on.

use serde_json::Value;

use crate::fake_llm::{FakeLlm, Reply, Request, has_tool};
use crate::goal::{agent_reply, good_plan, good_server, llm_cmd, plan_call};
use crate::{TestRepo, assert_exit, stderr, stdout};

/// A goal run on the scripted model; writers that change nothing (the notes are there from
/// an earlier run) count as done.
fn goal(repo: &TestRepo, llm: &FakeLlm, text: &str, extra: &[&str]) -> std::process::Output {
    llm_cmd(repo, llm)
        .args(["--goal", text])
        .args(extra)
        .env("SWARM_ALLOW_NO_CHANGE", "1")
        .output()
        .unwrap()
}

/// The user message of the newest planning request.
fn last_planning(llm: &FakeLlm) -> String {
    let requests: Vec<Request> = llm
        .requests()
        .into_iter()
        .filter(|r| has_tool(r, "submit_plan"))
        .collect();
    let last = requests.last().expect("a planning request");
    last.messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// What `swarm memory list --json` lists of `what` (`goals`, `lessons`).
fn listed(repo: &TestRepo, what: &str) -> Vec<Value> {
    let out = repo.swarm(&["memory", "list", "--json"]);
    assert_exit(&out, 0);
    serde_json::from_str::<Value>(&stdout(&out)).unwrap()[what]
        .as_array()
        .unwrap()
        .clone()
}

fn memory_json(repo: &TestRepo) -> Vec<Value> {
    listed(repo, "goals")
}

#[test]
fn memory_a_similar_goal_is_planned_knowing_the_first_and_an_unrelated_one_is_not() {
    let repo = TestRepo::new();
    let llm = good_server();
    let first = goal(&repo, &llm, "Survey the repository and leave notes", &[]);
    assert_exit(&first, 0);
    let first_run = crate::run_id(&repo);
    assert!(!last_planning(&llm).contains("<past-runs>"));

    // What memory kept of it.
    let kept = memory_json(&repo);
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0]["run_id"], first_run.as_str());
    assert_eq!(kept[0]["goal"], "Survey the repository and leave notes");
    let skeleton = kept[0]["skeleton"].as_str().unwrap();
    assert!(
        skeleton.contains("notes (coder, write; files NOTES.md): TASK notes: write NOTES.md"),
        "{skeleton}"
    );
    assert!(
        skeleton.contains("final (reducer, read) after survey, readme, notes"),
        "{skeleton}"
    );
    let outcome = kept[0]["outcome"].as_str().unwrap();
    assert!(outcome.starts_with("done (writers merged): "), "{outcome}");

    // A goal like it: its planner is given the first one's plan and outcome, as data.
    let second = goal(
        &repo,
        &llm,
        "Survey the repository again and leave fresher notes",
        &[],
    );
    assert_exit(&second, 0);
    let asked = last_planning(&llm);
    assert!(asked.contains("<past-runs>"), "{asked}");
    assert!(
        asked.contains(&format!("- run {first_run} (goal goal)")),
        "{asked}"
    );
    assert!(
        asked.contains("notes (coder, write; files NOTES.md)"),
        "{asked}"
    );
    assert!(asked.contains("outcome: done (writers merged)"), "{asked}");
    // The past comes before the goal, framed as data.
    assert!(asked.find("<past-runs>") < asked.find("Goal:\nSurvey the repository again"));
    assert!(
        stderr(&second)
            .contains("the planner is given what 1 past goal of this repository came to")
    );
    let report = crate::run_report(&repo);
    assert!(
        report.contains(&format!(
            "The plan was made knowing what past goals of runs {first_run} came to"
        )),
        "{report}"
    );

    // An unrelated goal: nothing.
    let third = goal(&repo, &llm, "Translate the changelog into French", &[]);
    assert_exit(&third, 0);
    assert!(!last_planning(&llm).contains("<past-runs>"));
    assert_eq!(memory_json(&repo).len(), 3);
}

#[test]
fn memory_off_recalls_and_keeps_nothing_and_forget_forgets() {
    let repo = TestRepo::new();
    let llm = good_server();
    assert_exit(
        &goal(&repo, &llm, "Survey the repository and leave notes", &[]),
        0,
    );
    assert_eq!(memory_json(&repo).len(), 1);

    // --no-memory and SWARM_RECALL=0: nothing recalled, nothing kept.
    let off = goal(
        &repo,
        &llm,
        "Survey the repository and leave notes",
        &["--no-memory"],
    );
    assert_exit(&off, 0);
    assert!(!last_planning(&llm).contains("<past-runs>"));
    let off = llm_cmd(&repo, &llm)
        .args(["--goal", "Survey the repository and leave notes"])
        .env("SWARM_ALLOW_NO_CHANGE", "1")
        .env("SWARM_RECALL", "0")
        .output()
        .unwrap();
    assert_exit(&off, 0);
    assert!(!last_planning(&llm).contains("<past-runs>"));
    assert_eq!(memory_json(&repo).len(), 1);

    // show, then forget.
    let id = memory_json(&repo)[0]["id"].as_i64().unwrap().to_string();
    let shown = repo.swarm(&["memory", "show", &id]);
    assert_exit(&shown, 0);
    assert!(
        stdout(&shown).contains("(goal goal): Survey the repository and leave notes"),
        "{}",
        stdout(&shown)
    );
    let missing = repo.swarm(&["memory", "forget", "999"]);
    assert_exit(&missing, 2);
    assert!(stderr(&missing).contains("memory 999: there is no such memory"));
    let forgot = repo.swarm(&["memory", "forget", "--all"]);
    assert_exit(&forgot, 0);
    assert_eq!(stdout(&forgot), "forgot 1 memory\n");
    assert!(memory_json(&repo).is_empty());
    assert_exit(
        &goal(
            &repo,
            &llm,
            "Survey the repository and leave notes again",
            &["--no-memory"],
        ),
        0,
    );
    assert!(!last_planning(&llm).contains("<past-runs>"));
}

#[test]
fn memory_keeps_no_secret_and_passes_none_on() {
    const CANARY: &str = "canary-token-7f3a9b2c";
    let repo = TestRepo::new();
    let llm = good_server();
    let with_secret = |text: &str| {
        llm_cmd(&repo, &llm)
            .args(["--goal", text])
            .env("SWARM_ALLOW_NO_CHANGE", "1")
            .env("DEPLOY_TOKEN", CANARY)
            .output()
            .unwrap()
    };
    let out = with_secret(&format!(
        "Survey the repository and leave notes for {CANARY}"
    ));
    assert_exit(&out, 0);
    let kept = repo.swarm(&["memory", "list", "--json"]);
    assert!(!stdout(&kept).contains(CANARY), "{}", stdout(&kept));
    assert!(stdout(&kept).contains("[redacted]"), "{}", stdout(&kept));
    // The next planning is given the past goal, hidden as it was kept.
    let out = with_secret("Survey the repository and leave notes");
    assert_exit(&out, 0);
    let asked = last_planning(&llm);
    assert!(asked.contains("<past-runs>"), "{asked}");
    assert!(!asked.contains(CANARY), "{asked}");

    // A check that prints the secret and fails (in a repository where the writer has
    // something to change): the lesson it teaches hides it, and so does what a later agent is
    // told.
    let repo = TestRepo::new();
    let failing = llm_cmd(&repo, &llm)
        .args([
            "--goal",
            "Survey the repository and leave notes",
            "--retries",
            "0",
        ])
        .args(["--check", &format!("echo deploying with {CANARY}; false")])
        .env("SWARM_ALLOW_NO_CHANGE", "1")
        .env("DEPLOY_TOKEN", CANARY)
        .output()
        .unwrap();
    assert_exit(&failing, 1);
    let lessons = listed(&repo, "lessons");
    assert_eq!(lessons.len(), 1, "{lessons:?}");
    let text = lessons[0]["text"].as_str().unwrap();
    assert!(
        text.ends_with("it said `deploying with [redacted]`"),
        "{text}"
    );
    assert!(!text.contains(CANARY));
    let out = llm_cmd(&repo, &llm)
        .args(["--goal", "Leave the notes in the repository"])
        .env("DEPLOY_TOKEN", CANARY)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let notes = agent_requests(&llm, "notes");
    assert!(
        notes.last().unwrap().contains("deploying with [redacted]"),
        "{}",
        notes.last().unwrap()
    );
    for r in llm.requests() {
        assert!(!r.body.to_string().contains(CANARY), "{}", r.body);
    }
    let all = repo.swarm(&["memory", "list", "--json"]);
    assert!(!stdout(&all).contains(CANARY), "{}", stdout(&all));
}

/// The bodies of the agents' requests whose prompt is task `task`'s.
fn agent_requests(llm: &FakeLlm, task: &str) -> Vec<String> {
    llm.requests()
        .into_iter()
        .filter(|r| !has_tool(r, "submit_plan"))
        .map(|r| r.body.to_string())
        .filter(|b| b.contains(&format!("TASK {task}:")))
        .collect()
}

#[test]
fn memory_a_failed_check_teaches_a_lesson_given_to_later_agents_changing_those_files() {
    let repo = TestRepo::new();
    let llm = good_server();
    let pass = repo.shared.join("pass");
    let check = format!(
        "test -e {} || {{ echo the tests need --offline; false; }}",
        pass.display()
    );
    // The check fails on the writer of NOTES.md: memory learns it.
    let out = goal(
        &repo,
        &llm,
        "Survey the repository and leave notes",
        &["--check", &check, "--retries", "0"],
    );
    assert_exit(&out, 1);
    let lessons = listed(&repo, "lessons");
    assert_eq!(lessons.len(), 1, "{lessons:?}");
    let text = format!(
        "The check `{check}` failed on a change to NOTES.md: it said `the tests need --offline`"
    );
    assert_eq!(lessons[0]["text"], text.as_str());
    assert_eq!(lessons[0]["paths"], serde_json::json!(["NOTES.md"]));
    let list = repo.swarm(&["memory", "list"]);
    assert!(
        stdout(&list).contains("   L1  taught 1×  used 0×  The check `"),
        "{}",
        stdout(&list)
    );

    // A later run: the agent changing NOTES.md is told, the others are not.
    let out = goal(&repo, &llm, "Leave the notes in the repository", &[]);
    assert_exit(&out, 0);
    let notes = agent_requests(&llm, "notes");
    let survey = agent_requests(&llm, "survey");
    assert!(!notes.is_empty() && !survey.is_empty());
    let told = "What earlier runs of this repository taught about the files this task changes";
    assert!(
        notes.last().unwrap().contains(told),
        "{}",
        notes.last().unwrap()
    );
    assert!(notes.last().unwrap().contains("the tests need --offline"));
    assert!(survey.iter().all(|b| !b.contains(told)));
    // Its planner, given the first run, is given what it taught too; the report says both.
    let asked = last_planning(&llm);
    assert!(asked.contains("What those runs taught:"), "{asked}");
    let report = crate::run_report(&repo);
    assert!(
        report.contains("came to and lessons L1 they taught"),
        "{report}"
    );
    assert!(
        report.contains(
            "Agents told lessons of earlier runs about the files they change: notes (L1)."
        ),
        "{report}"
    );

    // The same check passing on NOTES.md contradicts the lesson: it is retired.
    std::fs::write(&pass, "").unwrap();
    let out = goal(
        &repo,
        &llm,
        "Survey the repository and leave notes",
        &["--check", &check],
    );
    assert_exit(&out, 0);
    assert!(listed(&repo, "lessons").is_empty());
}

#[test]
fn memory_a_queued_goal_is_planned_knowing_a_past_one_like_it() {
    let repo = TestRepo::new();
    let llm = good_server();
    assert_exit(
        &goal(&repo, &llm, "Survey the repository and leave notes", &[]),
        0,
    );
    let first_run = crate::run_id(&repo);
    let queued = llm_cmd(&repo, &llm)
        .args([
            "queue",
            "add",
            "Survey the repository once more and leave notes",
        ])
        .output()
        .unwrap();
    assert_exit(&queued, 0);
    let out = llm_cmd(&repo, &llm)
        .args(["queue", "run"])
        .env("SWARM_ALLOW_NO_CHANGE", "1")
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let asked = last_planning(&llm);
    assert!(
        asked.contains(&format!("- run {first_run} (goal goal)")),
        "{asked}"
    );
    let report = crate::run_report(&repo);
    assert!(
        report.contains(&format!(
            "Goal g1's plan was made knowing what past goals of runs {first_run} came to"
        )),
        "{report}"
    );
    // The queue's goal is kept too, by its id in its run.
    let kept = memory_json(&repo);
    assert_eq!(kept.len(), 2);
    assert_eq!(kept[0]["goal_id"], "g1");
}

#[test]
fn memory_that_cannot_be_read_or_kept_leaves_the_run_as_it_was() {
    let repo = TestRepo::new();
    let llm = good_server();
    assert_exit(
        &goal(&repo, &llm, "Survey the repository and leave notes", &[]),
        0,
    );
    // Memory's tables broken (a board copied from elsewhere, say).
    let db = rusqlite::Connection::open(repo.swarm_dir().join("board.db")).unwrap();
    db.execute_batch("DROP TABLE memory_text; DROP TABLE lessons;")
        .unwrap();
    drop(db);
    let out = goal(
        &repo,
        &llm,
        "Survey the repository and leave more notes",
        &[],
    );
    assert_exit(&out, 0);
    let said = stderr(&out);
    assert!(
        said.contains("memory could not be read; planning without it"),
        "{said}"
    );
    assert!(
        said.contains("memory could not keep what this run came to"),
        "{said}"
    );
    assert!(!last_planning(&llm).contains("<past-runs>"));
    assert!(crate::run_report(&repo).contains("Exit code 0."));
}

/// Whether `req` asks the planner's model for a run's lessons.
fn is_distil(req: &Request) -> bool {
    req.messages().iter().any(|m| {
        m["role"] == "system"
            && m["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("You distil lessons"))
    })
}

/// The user messages of the requests for lessons so far.
fn distil_requests(llm: &FakeLlm) -> Vec<String> {
    llm.requests()
        .iter()
        .filter(|r| is_distil(r))
        .map(|r| {
            r.messages()
                .iter()
                .filter(|m| m["role"] == "user")
                .filter_map(|m| m["content"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect()
}

/// The lessons a model distils: one about NOTES.md, one about the whole repository.
fn lessons_answer() -> Reply {
    Reply::text(
        serde_json::json!({"lessons": [
            {"text": "NOTES.md keeps one line per finding, newest last.", "paths": ["NOTES.md", "../outside"]},
            {"text": "Nothing in this repository needs the network.", "paths": []},
        ]})
        .to_string(),
    )
}

/// `good_server`, answering a request for lessons with `lessons_answer`.
fn distilling_server() -> FakeLlm {
    FakeLlm::start(|req, _| {
        if is_distil(req) {
            lessons_answer()
        } else if has_tool(req, "submit_plan") {
            plan_call(&good_plan())
        } else {
            agent_reply(req)
        }
    })
}

#[test]
fn memory_lessons_model_distils_lessons_kept_and_told_later_and_none_by_default() {
    const CANARY: &str = "canary-token-7f3a9b2c";
    let repo = TestRepo::new();
    let llm = distilling_server();
    // By default, no model call is spent on lessons.
    assert_exit(
        &goal(&repo, &llm, "Survey the repository and leave notes", &[]),
        0,
    );
    assert!(distil_requests(&llm).is_empty());

    // Asked for, one request at the run's end, with what the run came to as data and no
    // secret's value.
    let out = llm_cmd(&repo, &llm)
        .args([
            "--goal",
            &format!("Survey the repository and leave notes for {CANARY}"),
            "--lessons",
            "model",
        ])
        .env("SWARM_ALLOW_NO_CHANGE", "1")
        .env("DEPLOY_TOKEN", CANARY)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let asked = distil_requests(&llm);
    assert_eq!(asked.len(), 1, "{asked:?}");
    let asked = &asked[0];
    assert!(
        asked.contains("<run>\nGoal: Survey the repository"),
        "{asked}"
    );
    assert!(
        asked.contains("notes (coder, write; files NOTES.md)"),
        "{asked}"
    );
    assert!(asked.contains("Outcome: done (writers merged)"), "{asked}");
    for r in llm.requests() {
        assert!(!r.body.to_string().contains(CANARY), "{}", r.body);
    }
    let lessons = listed(&repo, "lessons");
    assert_eq!(lessons.len(), 2, "{lessons:?}");
    let about_notes = lessons
        .iter()
        .find(|l| l["text"] == "NOTES.md keeps one line per finding, newest last.")
        .unwrap();
    assert_eq!(about_notes["paths"], serde_json::json!(["NOTES.md"]));
    assert_eq!(about_notes["lanes"], serde_json::json!(["coder"]));
    let report = crate::run_report(&repo);
    let ids: Vec<String> = lessons
        .iter()
        .rev()
        .map(|l| format!("L{}", l["id"]))
        .collect();
    assert!(
        report.contains(&format!(
            "The planner's model distilled lessons {} from this run for later ones.",
            ids.join(", ")
        )),
        "{report}"
    );

    // A later run (lessons the default way): the agent changing NOTES.md is told the lesson
    // about it, the others are not; no lessons are asked for.
    let out = goal(&repo, &llm, "Leave the notes in the repository", &[]);
    assert_exit(&out, 0);
    let notes = agent_requests(&llm, "notes");
    assert!(
        notes.last().unwrap().contains("NOTES.md keeps one line"),
        "{}",
        notes.last().unwrap()
    );
    assert!(
        agent_requests(&llm, "survey")
            .iter()
            .all(|b| !b.contains("NOTES.md keeps one line"))
    );
    assert_eq!(distil_requests(&llm).len(), 1);
    // The lesson told counts as used once.
    let used = listed(&repo, "lessons");
    let told = used.iter().find(|l| l["id"] == about_notes["id"]).unwrap();
    assert_eq!(told["used"], 1);
}

#[test]
fn memory_lessons_model_whose_answer_holds_none_says_so_and_the_run_ends_as_it_would() {
    let repo = TestRepo::new();
    // Answers the request for lessons as an agent: with a call to read a file.
    let llm = good_server();
    let out = goal(
        &repo,
        &llm,
        "Survey the repository and leave notes",
        &["--lessons", "model"],
    );
    assert_exit(&out, 0);
    assert_eq!(distil_requests(&llm).len(), 1);
    assert!(
        stderr(&out).contains(
            "the planner's model distilled no lesson from this run: its answer could not be read"
        ),
        "{}",
        stderr(&out)
    );
    assert!(listed(&repo, "lessons").is_empty());
    assert_eq!(memory_json(&repo).len(), 1);
    let report = crate::run_report(&repo);
    assert!(report.contains("Exit code 0."), "{report}");
    assert!(!report.contains("distilled lessons"), "{report}");

    // A value that is no way of teaching lessons is refused before anything runs.
    let bad = goal(&repo, &llm, "Survey again", &["--lessons", "oracle"]);
    assert_exit(&bad, 2);
    assert!(stderr(&bad).contains("oracle"), "{}", stderr(&bad));
    assert_eq!(memory_json(&repo).len(), 1);
}

#[test]
fn memory_curate_merges_lessons_that_say_the_same_about_a_file() {
    let repo = TestRepo::new();
    let llm = good_server();
    let empty = repo.swarm(&["memory", "curate"]);
    assert_exit(&empty, 0);
    assert_eq!(
        stdout(&empty),
        "merged 0 duplicate lessons into others, retired 0 lessons never used in 20 runs; 0 lessons kept\n"
    );
    // The same check failing on NOTES.md for two reasons: two lessons, mostly the same words.
    for reason in ["the first reason", "the second reason"] {
        let out = goal(
            &repo,
            &llm,
            "Survey the repository and leave notes",
            &[
                "--check",
                &format!("echo {reason}; false"),
                "--retries",
                "0",
            ],
        );
        assert_exit(&out, 1);
    }
    let before = listed(&repo, "lessons");
    assert_eq!(before.len(), 2, "{before:?}");

    let out = repo.swarm(&["memory", "curate", "--json"]);
    assert_exit(&out, 0);
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&out)).unwrap(),
        serde_json::json!({"merged": 1, "retired": 0, "lessons": 1})
    );
    let after = listed(&repo, "lessons");
    assert_eq!(after.len(), 1, "{after:?}");
    // The newer is kept, taught by both runs.
    assert_eq!(after[0]["id"], before[0]["id"]);
    assert_eq!(after[0]["taught"], 2);
    assert_eq!(after[0]["paths"], serde_json::json!(["NOTES.md"]));
}

#[test]
fn memory_after_kill_9_at_the_runs_end_the_resumed_run_keeps_it_once() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let repo = TestRepo::new();
    // The first request for lessons is never answered: swarm is killed waiting for it.
    let first = AtomicBool::new(true);
    let llm = FakeLlm::start(move |req, _| {
        if is_distil(req) {
            if first.swap(false, Ordering::SeqCst) {
                Reply::Hang
            } else {
                lessons_answer()
            }
        } else if has_tool(req, "submit_plan") {
            plan_call(&good_plan())
        } else {
            agent_reply(req)
        }
    });
    let mut swarm = llm_cmd(&repo, &llm)
        .args(["--goal", "Survey the repository and leave notes"])
        .args(["--lessons", "model", "--retries", "0"])
        .args(["--check", "echo the tests need --offline; false"])
        .env("SWARM_ALLOW_NO_CHANGE", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    llm.await_requests_from(&mut swarm, |requests| requests.iter().any(is_distil));
    assert_eq!(distil_requests(&llm).len(), 1);
    swarm.kill().unwrap();
    swarm.wait().unwrap();
    // Killed in the run's end: the run is not over.
    assert_ne!(crate::status_json(&repo)["run"]["status"], "finished");

    let out = llm_cmd(&repo, &llm).args(["resume"]).output().unwrap();

    assert_exit(&out, 1);
    assert_eq!(distil_requests(&llm).len(), 2);
    assert_eq!(memory_json(&repo).len(), 1);
    let lessons = listed(&repo, "lessons");
    assert_eq!(lessons.len(), 3, "{lessons:?}");
    // Each taught once, though the check's lesson was learned before the kill and again after.
    assert!(lessons.iter().all(|l| l["taught"] == 1), "{lessons:?}");
    assert!(
        crate::run_report(&repo).contains("The planner's model distilled lessons"),
        "{}",
        crate::run_report(&repo)
    );
}

#[test]
fn a_goal_run_with_a_plan_given_asks_the_model_for_none_and_is_the_goals_run() {
    let repo = TestRepo::new();
    let llm = good_server();
    let plan = crate::outside(&repo, "plan.jsonl");
    let planned = goal(
        &repo,
        &llm,
        "Survey the repository and leave notes",
        &["--plan-only", "--plan-out", plan.to_str().unwrap()],
    );
    assert_exit(&planned, 0);
    let plannings = |llm: &FakeLlm| {
        llm.requests()
            .iter()
            .filter(|r| has_tool(r, "submit_plan"))
            .count()
    };
    assert_eq!(plannings(&llm), 1);

    let out = goal(
        &repo,
        &llm,
        "Survey the repository and leave notes",
        &["--plan", plan.to_str().unwrap()],
    );

    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("4 tasks given with --plan"),
        "{}",
        stderr(&out)
    );
    assert_eq!(plannings(&llm), 1);
    assert_eq!(repo.read("NOTES.md"), "notes from the agent\n");
    let report = crate::run_report(&repo);
    assert!(report.contains("# Final report"), "{report}");
    // The run is the goal's: memory keeps it as such.
    let kept = memory_json(&repo);
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0]["goal"], "Survey the repository and leave notes");

    // A plan with problems, or one given to several goals, runs nothing.
    std::fs::write(&plan, "{\"id\": \"a\"}\n").unwrap();
    let runs = |repo: &TestRepo| {
        let out = repo.swarm(&["runs", "--json"]);
        serde_json::from_str::<Value>(&stdout(&out))
            .unwrap()
            .as_array()
            .unwrap()
            .len()
    };
    let before = runs(&repo);
    let bad = goal(
        &repo,
        &llm,
        "Survey again",
        &["--plan", plan.to_str().unwrap()],
    );
    assert_exit(&bad, 2);
    assert!(stderr(&bad).contains("plan.jsonl"), "{}", stderr(&bad));
    let two = goal(
        &repo,
        &llm,
        "Survey again",
        &["--goal", "And more", "--plan", plan.to_str().unwrap()],
    );
    assert_exit(&two, 2);
    assert!(
        stderr(&two).contains("--plan, --plan-out and --plan-only take one goal"),
        "{}",
        stderr(&two)
    );
    assert_eq!(runs(&repo), before);
    assert_eq!(plannings(&llm), 1);
}
