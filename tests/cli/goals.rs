//! Several goals in one run, against the fake OpenAI-compatible server: the dependency pass,
//! planning a goal once the goals it needs are merged, skips, deadlock, reports, and the
//! durable queue. Tasks run through an `exec:` agent script, so their timing is in the test's
//! hands.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::fake_llm::{FakeLlm, Reply, Request, has_tool};
use crate::{TestRepo, assert_exit, outside, status_json, stdout, tasks_with_status};

const GOAL_A: &str = "GOAL-A: add alpha.txt";
const GOAL_B: &str = "GOAL-B: describe alpha.txt in beta.txt";
const GOAL_C: &str = "GOAL-C: add gamma.txt";

/// The agent: `WRITE <file>` writes the file (after a pause, with the task's id in it) and
/// reports it; `REDUCE <X>` answers with goal X's result. Each start is logged.
const AGENT: &str = r#"prompt=$(cat)
echo "start $SWARM_TASK_ID $SWARM_ATTEMPT" >> "$AGENT_LOG"
case "$prompt" in
  *"WRITE "*)
    f=$(printf '%s\n' "$prompt" | sed -n 's/.*WRITE \([A-Za-z0-9._-]*\).*/\1/p' | head -n 1)
    sleep "${AGENT_PAUSE:-0.4}"
    printf 'written by %s\n' "$SWARM_TASK_ID" > "$f"
    echo "wrote $f" ;;
  *"REDUCE "*)
    g=$(printf '%s\n' "$prompt" | sed -n 's/.*REDUCE \([A-Z]\).*/\1/p' | head -n 1)
    echo "RESULT-$g: goal $g is finished" ;;
  *) echo "nothing to do" ;;
esac
echo "end $SWARM_TASK_ID" >> "$AGENT_LOG"
"#;

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn letter(text: &str) -> Option<char> {
    ["A", "B", "C", "D"]
        .iter()
        .find(|l| text.contains(&format!("GOAL-{l}")))
        .and_then(|l| l.chars().next())
}

/// The user message of a request.
fn user_text(req: &Request) -> String {
    req.messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A goal's plan: one writer per file, then a reducer.
fn plan_for(goal: char, files: &[&str]) -> Reply {
    let lower = goal.to_ascii_lowercase();
    let mut tasks: Vec<Value> = files
        .iter()
        .enumerate()
        .map(|(n, f)| {
            json!({"id": format!("{lower}w{n}"), "prompt": format!("WRITE {f}"), "deps": [], "lane": "coder"})
        })
        .collect();
    let deps: Vec<String> = (0..files.len()).map(|n| format!("{lower}w{n}")).collect();
    tasks.push(json!({"id": format!("{lower}r"), "prompt": format!("REDUCE {goal}"), "deps": deps, "lane": "reducer"}));
    Reply::ToolCalls(vec![(
        format!("plan-{goal}"),
        "submit_plan".into(),
        json!({ "tasks": tasks }),
    )])
}

fn needs_call(edges: &Value) -> Reply {
    Reply::ToolCalls(vec![(
        "needs-1".into(),
        "submit_dependencies".into(),
        json!({ "dependencies": edges }),
    )])
}

/// When each goal's planning request arrived (wall clock, ms) and what it said.
type Planning = Arc<Mutex<Vec<(char, i64, String)>>>;

/// A server that answers the dependency pass with `edges` (or `needs` when given) and plans
/// each goal with `plans`.
fn server(
    needs: impl Fn() -> Reply + Send + Sync + 'static,
    plans: impl Fn(char) -> Reply + Send + Sync + 'static,
) -> (FakeLlm, Planning) {
    let planning: Planning = Arc::default();
    let seen = planning.clone();
    let llm = FakeLlm::start(move |req, _| {
        if has_tool(req, "submit_dependencies") {
            return needs();
        }
        if has_tool(req, "submit_plan") {
            let text = user_text(req);
            let first = text.lines().nth(1).unwrap_or_default().to_owned();
            let goal = letter(&first).expect("a planning request names its goal");
            seen.lock().unwrap().push((goal, now_ms(), text));
            return plans(goal);
        }
        Reply::Text("unexpected request".into())
    });
    (llm, planning)
}

struct Setup {
    repo: TestRepo,
    agent: PathBuf,
    log: PathBuf,
}

fn setup() -> Setup {
    let repo = TestRepo::new();
    let agent = outside(&repo, "agent.sh");
    std::fs::write(&agent, AGENT).unwrap();
    let log = outside(&repo, "agent.log");
    Setup { repo, agent, log }
}

impl Setup {
    fn cmd(&self, llm: &FakeLlm) -> std::process::Command {
        let mut cmd = self.repo.swarm_cmd();
        cmd.env("SWARM_API_BASE", llm.base_url())
            .env("AGENT_LOG", &self.log)
            .env("SWARM_AGENT", format!("exec:sh {}", self.agent.display()));
        cmd
    }

    fn swarm(&self, llm: &FakeLlm, args: &[&str]) -> Output {
        self.cmd(llm).args(args).output().expect("running swarm")
    }

    fn starts(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("start "))
            .map(|l| l.split(' ').nth(1).unwrap().to_owned())
            .collect()
    }
}

/// `--goal G` for each goal, then `--final-out REPORT`, then `extra`.
fn goals_args<'a>(goals: &[&'a str], report: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args: Vec<&str> = goals.iter().flat_map(|g| ["--goal", g]).collect();
    args.extend(["--final-out", report.to_str().unwrap()]);
    args.extend(extra);
    args
}

fn events(repo: &TestRepo) -> Vec<Value> {
    let runs = repo.swarm_dir().join("runs");
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(runs) else {
        return out;
    };
    for entry in entries {
        let path = entry.unwrap().path().join("events.jsonl");
        let text = std::fs::read_to_string(path).unwrap_or_default();
        out.extend(text.lines().filter_map(|l| serde_json::from_str(l).ok()));
    }
    out
}

fn at(e: &Value) -> i64 {
    e["at"].as_i64().unwrap()
}

/// When `task` started and when it succeeded (ms), from the event log.
fn span(events: &[Value], task: &str) -> (i64, i64) {
    let when = |kind: &str| {
        let e = events
            .iter()
            .find(|e| e["kind"] == kind && e["task"] == task);
        at(e.unwrap_or_else(|| panic!("no {kind} event for {task}")))
    };
    (when("task_started"), when("task_succeeded"))
}

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
    let out = s.swarm(&llm, &goals_args(&goals, &report, &[]));
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
    assert!(text.contains("### Needs attention"), "{text}");
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
    let start = Instant::now();
    while llm
        .requests()
        .iter()
        .filter(|r| has_tool(r, "submit_plan"))
        .count()
        < 2
    {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "planning never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
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
    let started = Instant::now();
    let out = s.swarm(&llm, &["resume", "--final-out", report.to_str().unwrap()]);
    assert_exit(&out, 1);
    assert!(started.elapsed() < Duration::from_secs(20));
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

    // Killed once some of A's and C's work is done.
    let mut child = s
        .cmd(&llm)
        .args(["queue", "run", "-j", "2"])
        .env("AGENT_PAUSE", "0.3")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        let merged = events(&s.repo)
            .iter()
            .filter(|e| e["kind"] == "merged")
            .count();
        if merged >= 2 {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended too soon"
        );
        assert!(start.elapsed() < Duration::from_secs(30), "nothing merged");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(700));
    // Still queued: the run has not finished.
    let listed = s.swarm(&llm, &["queue", "list"]);
    assert!(stdout(&listed).contains("GOAL-C"), "{}", stdout(&listed));
    let status = status_json(&s.repo);
    let done = tasks_with_status(&status, "done");
    assert!(!done.is_empty(), "{status}");
    let before = s.starts();

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
    let child = s
        .cmd(&llm)
        .args(["queue", "run"])
        .env("AGENT_PAUSE", "1.5")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !s.starts().iter().any(|t| t == "g1.aw0") {
        assert!(start.elapsed() < Duration::from_secs(20), "A never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Added while A's writer runs: the drain takes it.
    assert_exit(&s.swarm(&llm, &["queue", "add", GOAL_B]), 0);
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
fn bad_goal_input_is_refused_before_anything_runs() {
    let s = setup();
    let (llm, _) = server(|| needs_call(&json!([])), |goal| plan_for(goal, &["x.txt"]));
    let missing = outside(&s.repo, "no-such-goals.txt");
    let empty = outside(&s.repo, "empty-goals.txt");
    std::fs::write(&empty, "# nothing here\n\n").unwrap();
    let all: [(Vec<&str>, &str); 5] = [
        (
            vec!["--goals-file", missing.to_str().unwrap()],
            "could not read the goals file",
        ),
        (
            vec!["--goals-file", empty.to_str().unwrap()],
            "holds no goal",
        ),
        (vec!["--goal", GOAL_A, "--goal", "  "], "goal 2 is empty"),
        (
            vec!["--goal", GOAL_A, "--goal", GOAL_B, "--plan-only"],
            "--plan-out and --plan-only take one goal",
        ),
        (vec!["queue", "add", " "], "the goal is empty"),
    ];
    for (args, message) in all {
        let out = s.swarm(&llm, &args);
        assert_exit(&out, 2);
        let err = crate::stderr(&out);
        assert!(err.contains(message), "{args:?}: {err}");
    }
    assert!(llm.requests().is_empty());
    assert!(!s.repo.swarm_dir().join("runs").exists());
}
