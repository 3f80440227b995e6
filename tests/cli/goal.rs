//! From a goal to merged work against the fake OpenAI-compatible server: planning, repairs, the
//! built-in agent and its confined tools, throttling, hung requests and secrets.

use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::fake_llm::{
    FakeLlm, Reply, Request, has_tool, is_planning, last_user_text, tool_results,
};
use crate::{TestRepo, assert_exit, outside, status_json, stderr, stdout};

/// The user message of an agent request: the task's prompt.
fn task_prompt(req: &Request) -> String {
    req.messages()
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

pub(crate) fn plan_call(tasks: &Value) -> Reply {
    Reply::ToolCalls(vec![(
        "plan-1".into(),
        "submit_plan".into(),
        json!({ "tasks": tasks }),
    )])
}

/// A plan with two readers, one writer and a reducer.
pub(crate) fn good_plan() -> Value {
    json!([
        {"id": "survey", "prompt": "TASK survey: list the files and report them", "deps": [], "lane": "researcher"},
        {"id": "readme", "prompt": "TASK readme: read README.md and summarise it", "deps": [], "lane": "analyst"},
        {"id": "notes", "prompt": "TASK notes: write NOTES.md with a line of notes", "deps": [], "lane": "coder", "files": ["NOTES.md"]},
        {"id": "final", "prompt": "TASK final: combine the results into the report", "deps": ["survey", "readme", "notes"], "lane": "reducer"}
    ])
}

/// Agents that use a tool once, then answer; the writer writes NOTES.md; the reducer answers
/// with the report.
pub(crate) fn agent_reply(req: &Request) -> Reply {
    let prompt = task_prompt(req);
    let done = !tool_results(req).is_empty();
    if prompt.contains("TASK final") {
        return Reply::Text("# Final report\n\nEverything was surveyed.".into());
    }
    if prompt.contains("TASK notes") {
        return if done {
            Reply::Text("wrote NOTES.md".into())
        } else {
            Reply::ToolCalls(vec![(
                "w1".into(),
                "write_file".into(),
                json!({"path": "NOTES.md", "content": "notes from the agent\n"}),
            )])
        };
    }
    if done {
        Reply::Text(format!("finding of {}", &prompt[..prompt.len().min(12)]))
    } else {
        Reply::ToolCalls(vec![(
            "r1".into(),
            "read_file".into(),
            json!({"path": "README.md"}),
        )])
    }
}

/// `agent_reply` for an agent that asks for its calls as JSON answers (structured output).
fn json_agent_reply(req: &Request) -> Reply {
    let prompt = task_prompt(req);
    let done = last_user_text(req).starts_with("The result of");
    let (name, arguments) = if prompt.contains("TASK final") {
        (
            "finish",
            json!({"answer": "# Final report\n\nEverything was surveyed."}),
        )
    } else if done {
        ("finish", json!({"answer": "done"}))
    } else if prompt.contains("TASK notes") {
        (
            "write_file",
            json!({"path": "NOTES.md", "content": "notes from the agent\n"}),
        )
    } else {
        ("read_file", json!({"path": "README.md"}))
    };
    Reply::text(json!({ "name": name, "arguments": arguments }).to_string())
}

/// A server that plans `good_plan` and answers agents with `agent_reply`.
pub(crate) fn good_server() -> FakeLlm {
    FakeLlm::start(|req, _| {
        if has_tool(req, "submit_plan") {
            plan_call(&good_plan())
        } else {
            agent_reply(req)
        }
    })
}

/// swarm pointed at the fake model server, with a key the tests look for where it must not be.
pub(crate) fn llm_cmd(repo: &TestRepo, llm: &FakeLlm) -> std::process::Command {
    let mut cmd = repo.swarm_cmd();
    cmd.env("SWARM_API_BASE", llm.base_url())
        .env("SWARM_API_KEY", "sk-canary-key-0123456789")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL");
    cmd
}

pub(crate) fn goal_cmd(repo: &TestRepo, llm: &FakeLlm, args: &[&str]) -> Output {
    llm_cmd(repo, llm)
        .args(args)
        .output()
        .expect("running swarm")
}

fn events(repo: &TestRepo) -> Vec<Value> {
    let runs = repo.swarm_dir().join("runs");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(runs).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path().join("events.jsonl")).unwrap();
        out.extend(
            text.lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap()),
        );
    }
    out
}

#[test]
fn a_goal_is_planned_run_merged_and_reported() {
    let repo = TestRepo::new();
    let llm = good_server();
    let report = outside(&repo, "report.md");
    let plan = outside(&repo, "plan.jsonl");

    let out = goal_cmd(
        &repo,
        &llm,
        &[
            "--goal",
            "Survey the repository and leave notes",
            "--final-out",
            report.to_str().unwrap(),
            "--plan-out",
            plan.to_str().unwrap(),
        ],
    );

    assert_exit(&out, 0);
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.starts_with("# Final report"), "{text}");
    assert!(text.contains("## Run summary"), "{text}");
    // The writer's file was merged and landed on the user's branch.
    assert_eq!(repo.read("NOTES.md"), "notes from the agent\n");
    assert!(
        repo.git(&["log", "--merges", "--format=%s"])
            .contains("notes")
    );
    // The plan file is a valid task file with the four tasks.
    let graph = repo.swarm(&["graph", plan.to_str().unwrap()]);
    assert_exit(&graph, 0);
    let plan_text = std::fs::read_to_string(&plan).unwrap();
    assert_eq!(plan_text.lines().count(), 4, "{plan_text}");
    assert!(plan_text.contains("\"mode\":\"write\""), "{plan_text}");
    // The planner saw the repository's summary.
    let first = &llm.requests()[0];
    assert!(
        first.body.to_string().contains("README.md"),
        "{}",
        first.body
    );
}

#[test]
fn the_saved_plan_runs_with_swarm_run() {
    let repo = TestRepo::new();
    let llm = good_server();
    let plan = outside(&repo, "plan.jsonl");
    let planned = goal_cmd(
        &repo,
        &llm,
        &[
            "--goal",
            "Survey",
            "--plan-only",
            "--plan-out",
            plan.to_str().unwrap(),
        ],
    );
    assert_exit(&planned, 0);
    assert!(
        !repo.root.join("NOTES.md").exists(),
        "--plan-only ran something"
    );

    let ran = goal_cmd(&repo, &llm, &["run", plan.to_str().unwrap()]);
    assert_exit(&ran, 0);
    assert_eq!(repo.read("NOTES.md"), "notes from the agent\n");
}

#[test]
fn escapes_from_the_worktree_are_refused_and_the_task_still_completes() {
    let repo = TestRepo::new();
    let victim = outside(&repo, "victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::os::unix::fs::symlink(&victim, repo.root.join("out")).unwrap();
    repo.commit_all("a symlink out");
    let tmp_target = format!("/tmp/swarm-escape-{}", std::process::id());
    let attempts = [
        json!({"path": "../escaped.txt", "content": "x"}),
        json!({"path": tmp_target, "content": "x"}),
        json!({"path": "out/escaped.txt", "content": "x"}),
        json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\necho pwned\n"}),
    ];
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen_by_script = seen.clone();
    let plan = json!([
        {"id": "sneaky", "prompt": "TASK sneaky: write files", "deps": [], "lane": "coder"},
        {"id": "final", "prompt": "TASK final: report", "deps": ["sneaky"], "lane": "reducer"}
    ]);
    let llm = FakeLlm::start(move |req, _| {
        if has_tool(req, "submit_plan") {
            return plan_call(&plan);
        }
        let prompt = task_prompt(req);
        if prompt.contains("TASK final") {
            return Reply::Text("final".into());
        }
        let results = tool_results(req);
        if results.is_empty() {
            let calls = attempts
                .iter()
                .enumerate()
                .map(|(i, a)| (format!("c{i}"), "write_file".to_owned(), a.clone()))
                .collect();
            return Reply::ToolCalls(calls);
        }
        seen_by_script
            .lock()
            .unwrap()
            .extend(results.into_iter().map(|(_, text)| text));
        Reply::Text("tried".into())
    });

    let out = goal_cmd(&repo, &llm, &["--goal", "Try to escape"]);

    assert_exit(&out, 0);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert!(seen.iter().all(|t| t.starts_with("error:")), "{seen:?}");
    assert!(!outside(&repo, "escaped.txt").exists());
    assert!(!repo.root.parent().unwrap().join("escaped.txt").exists());
    assert!(!Path::new(&tmp_target).exists());
    assert!(!victim.join("escaped.txt").exists());
    assert!(!repo.root.join(".git/hooks/pre-commit").exists());
}

#[test]
fn throttled_requests_wait_and_the_run_completes() {
    let repo = TestRepo::new();
    let llm = FakeLlm::start(|req, n| {
        if n < 5 {
            return Reply::Status {
                status: 429,
                body: r#"{"error":{"message":"slow down"}}"#.into(),
                headers: vec![("Retry-After".into(), "1".into())],
            };
        }
        if has_tool(req, "submit_plan") {
            plan_call(&good_plan())
        } else {
            agent_reply(req)
        }
    });

    let out = goal_cmd(&repo, &llm, &["--goal", "Survey", "--json"]);

    assert_exit(&out, 0);
    let summary: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(summary["counts"].get("failed").is_none(), "{summary}");
    let throttled: Vec<Value> = events(&repo)
        .into_iter()
        .filter(|e| e["kind"] == "llm_throttled")
        .collect();
    assert_eq!(throttled.len(), 5, "{throttled:?}");
    assert!(
        throttled
            .iter()
            .all(|e| e["detail"]["wait_ms"].as_u64().unwrap() >= 1000)
    );
}

#[test]
fn a_request_that_never_answers_is_abandoned_and_retried() {
    let repo = TestRepo::new();
    let llm = FakeLlm::start(|req, n| {
        if n == 0 {
            return Reply::Hang;
        }
        if has_tool(req, "submit_plan") {
            plan_call(&good_plan())
        } else {
            agent_reply(req)
        }
    });

    let out = goal_cmd(
        &repo,
        &llm,
        &["--goal", "Survey", "--request-timeout", "1s"],
    );

    assert_exit(&out, 0);
    let retried = events(&repo)
        .into_iter()
        .filter(|e| e["kind"] == "llm_retrying")
        .count();
    assert_eq!(retried, 1);
    assert!(llm.requests().len() > 1);
}

/// Plans with defects, each repaired (or re-planned) and listed in the report.
fn run_defective_plan(first: Reply, then: Reply) -> (TestRepo, String, Output) {
    let repo = TestRepo::new();
    let then = Arc::new(Mutex::new(Some(then)));
    let first = Arc::new(Mutex::new(Some(first)));
    let llm = FakeLlm::start(move |req, _| {
        if is_planning(req) {
            if let Some(r) = first.lock().unwrap().take() {
                return r;
            }
            if let Some(r) = then.lock().unwrap().take() {
                return r;
            }
            return plan_call(&good_plan());
        }
        agent_reply(req)
    });
    let report = outside(&repo, "report.md");
    let out = goal_cmd(
        &repo,
        &llm,
        &["--goal", "Do it", "--final-out", report.to_str().unwrap()],
    );
    let text = std::fs::read_to_string(&report).unwrap_or_default();
    (repo, text, out)
}

fn reader(id: &str, deps: &[&str]) -> Value {
    json!({"id": id, "prompt": format!("TASK {id}"), "deps": deps, "lane": "analyst"})
}

#[test]
fn a_cycle_goes_back_to_the_planner_and_is_broken_if_it_stays() {
    let cyclic = json!([reader("a", &["b"]), reader("b", &["a"]), {"id": "r", "prompt": "TASK r", "deps": ["a", "b"], "lane": "reducer"}]);
    let (_, text, out) = run_defective_plan(plan_call(&cyclic), plan_call(&cyclic));
    assert_exit(&out, 0);
    assert!(text.contains("### Plan repairs"), "{text}");
    assert!(text.contains("replanned"), "{text}");
    assert!(
        text.contains("a → b → a") || text.contains("b → a → b"),
        "{text}"
    );
}

#[test]
fn unknown_deps_duplicates_orphans_and_a_missing_reducer_are_repaired() {
    let plan = json!([
        reader("a", &["ghost"]),
        reader("a", &[]),
        reader("lonely", &[]),
        {"id": "sum", "prompt": "TASK sum", "deps": ["a"], "lane": "analyst"}
    ]);
    let (_, text, out) = run_defective_plan(plan_call(&plan), plan_call(&plan));
    assert_exit(&out, 0);
    for kind in [
        "dropped_unknown_dep",
        "duplicate_id",
        "promoted_reducer",
        "wired_orphan",
    ] {
        assert!(text.contains(kind), "{kind} missing:\n{text}");
    }
}

#[test]
fn an_unreadable_plan_is_asked_for_again() {
    let garbage = Reply::ToolCalls(vec![("p".into(), "submit_plan".into(), json!("{not json"))]);
    let (_, text, out) = run_defective_plan(garbage, plan_call(&good_plan()));
    assert_exit(&out, 0);
    assert!(text.contains("replanned"), "{text}");
    assert!(text.contains("could not be read"), "{text}");
}

#[test]
fn forty_tasks_feeding_one_reducer_become_a_tree_of_reducers() {
    let mut tasks: Vec<Value> = (0..40).map(|i| reader(&format!("t{i}"), &[])).collect();
    let all: Vec<String> = (0..40).map(|i| format!("t{i}")).collect();
    tasks.push(json!({"id": "r", "prompt": "TASK r", "deps": all, "lane": "reducer"}));
    let (repo, text, out) = run_defective_plan(plan_call(&json!(tasks)), plan_call(&json!(tasks)));
    assert_exit(&out, 0);
    assert!(text.contains("fan_in_tree"), "{text}");
    let status = status_json(&repo);
    let n = status["tasks"].as_array().unwrap().len();
    assert!(n > 41, "no intermediate reducers: {n} tasks");
}

#[test]
fn canary_secrets_appear_nowhere() {
    let repo = TestRepo::new();
    let token = "tok-canary-5551234567";
    let llm = FakeLlm::start(move |req, _| {
        if has_tool(req, "submit_plan") {
            return plan_call(&good_plan());
        }
        // A model that repeats a secret it should never have seen.
        if task_prompt(req).contains("TASK final") {
            return Reply::Text(format!(
                "# Report\nleaked {token} and sk-canary-key-0123456789"
            ));
        }
        agent_reply(req)
    });
    let report = outside(&repo, "report.md");
    let out = repo
        .swarm_cmd()
        .env("SWARM_API_BASE", llm.base_url())
        .env("SWARM_API_KEY", "sk-canary-key-0123456789")
        .env("FOO_TOKEN", token)
        .args(["--goal", "Survey", "--final-out", report.to_str().unwrap()])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let mut haystacks = vec![
        ("stdout".to_owned(), out.stdout.clone()),
        ("stderr".to_owned(), out.stderr.clone()),
        ("report".to_owned(), std::fs::read(&report).unwrap()),
    ];
    collect(&repo.swarm_dir(), &mut haystacks);
    for (name, bytes) in &haystacks {
        let text = String::from_utf8_lossy(bytes);
        assert!(!text.contains(token), "{name} holds the token");
        assert!(
            !text.contains("sk-canary-key-0123456789"),
            "{name} holds the key"
        );
    }
    assert!(String::from_utf8_lossy(&std::fs::read(&report).unwrap()).contains("[redacted]"));
    // The key did reach the server, as the Authorization header.
    let auth = llm.requests()[0]
        .header("authorization")
        .unwrap()
        .to_owned();
    assert_eq!(auth, "Bearer sk-canary-key-0123456789");
    assert!(stderr(&out).is_empty() || !stderr(&out).contains(token));
}

#[test]
fn a_secret_typed_into_a_goal_is_hidden_everywhere_the_goal_goes() {
    let token = "tok-typed-5551234567";
    let goal = format!("Survey the repository; the deploy token is {token}");
    // A single goal, several goals, and the queue.
    for args in [
        vec!["--goal", goal.as_str()],
        vec!["--goal", goal.as_str(), "--goal", "Leave notes"],
    ] {
        let repo = TestRepo::new();
        let llm = good_server();
        let out = repo
            .swarm_cmd()
            .env("SWARM_API_BASE", llm.base_url())
            .env("DEPLOY_TOKEN", token)
            .args(&args)
            .output()
            .unwrap();
        assert_exit(&out, 0);
        let queued = repo
            .swarm_cmd()
            .env("DEPLOY_TOKEN", token)
            .args(["queue", "add", goal.as_str()])
            .output()
            .unwrap();
        assert_exit(&queued, 0);
        assert!(stderr(&out).contains("it is kept, shown and planned as [redacted]"));
        let mut haystacks = vec![
            ("stdout".to_owned(), out.stdout.clone()),
            ("stderr".to_owned(), out.stderr.clone()),
            ("queue stdout".to_owned(), queued.stdout.clone()),
            ("queue stderr".to_owned(), queued.stderr.clone()),
        ];
        collect(&repo.swarm_dir(), &mut haystacks);
        for r in llm.requests() {
            haystacks.push((
                "a model request".to_owned(),
                r.body.to_string().into_bytes(),
            ));
        }
        for (name, bytes) in &haystacks {
            assert!(
                !String::from_utf8_lossy(bytes).contains(token),
                "{args:?}: {name} holds the token"
            );
        }
    }
}

/// Every file under `dir`, with its bytes.
pub(crate) fn collect(dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, out);
        } else {
            out.push((path.display().to_string(), std::fs::read(&path).unwrap()));
        }
    }
}

#[test]
fn a_goal_without_a_model_is_refused_with_a_hint() {
    let repo = TestRepo::new();
    let out = repo
        .swarm_cmd()
        .env_remove("SWARM_API_BASE")
        .env_remove("SWARM_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .args(["--goal", "anything"])
        .output()
        .unwrap();
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("SWARM_API_BASE"), "{}", stderr(&out));
    assert!(!repo.swarm_dir().join("runs").exists());
}

#[test]
fn an_endpoint_without_function_calls_gets_the_plan_as_text() {
    let repo = TestRepo::new();
    let llm = FakeLlm::start(|req, _| {
        if has_tool(req, "submit_plan") {
            return Reply::Status {
                status: 400,
                body: r#"{"error":{"message":"tools are not supported"}}"#.into(),
                headers: vec![],
            };
        }
        if req.body.get("tools").is_none() {
            let plan = json!({ "tasks": good_plan() });
            return Reply::Text(format!("Here you go:\n```json\n{plan}\n```"));
        }
        agent_reply(req)
    });
    let report = outside(&repo, "report.md");

    let out = goal_cmd(
        &repo,
        &llm,
        &["--goal", "Survey", "--final-out", report.to_str().unwrap()],
    );

    assert_exit(&out, 0);
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.contains("no_function_call"), "{text}");
    assert_eq!(repo.read("NOTES.md"), "notes from the agent\n");
}

#[test]
fn past_the_token_budget_nothing_new_starts_running_work_merges_and_resume_finishes() {
    let repo = TestRepo::new();
    let llm = FakeLlm::start(|req, _| agent_reply(req));
    let tasks = outside(&repo, "tasks.jsonl");
    let lines: Vec<String> = [
        json!({"id": "notes", "prompt": "TASK notes: write NOTES.md", "lane": "coder"}),
        json!({"id": "r1", "prompt": "TASK r1: read", "lane": "analyst"}),
        json!({"id": "r2", "prompt": "TASK r2: read", "lane": "analyst"}),
        json!({"id": "r3", "prompt": "TASK r3: read", "lane": "analyst"}),
    ]
    .iter()
    .map(Value::to_string)
    .collect();
    std::fs::write(&tasks, lines.join("\n") + "\n").unwrap();
    let run = [
        "run",
        tasks.to_str().unwrap(),
        "--agent",
        "openai",
        "-j",
        "2",
        "--budget-tokens",
        "10",
    ];
    let out = goal_cmd(&repo, &llm, &run);
    assert_exit(&out, 75);
    assert!(
        stdout(&out).contains("Stopped at the token budget (10 tokens)"),
        "{}",
        stdout(&out)
    );
    // The first two started; once one had spent the budget nothing else started, and the
    // writer that was running still finished and was merged.
    let status = status_json(&repo);
    let by_id = |id: &str| {
        status["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .unwrap()["status"]
            .clone()
    };
    assert_eq!(by_id("notes"), "done", "{status}");
    assert_eq!(by_id("r1"), "done", "{status}");
    assert_eq!(by_id("r2"), "pending", "{status}");
    assert_eq!(by_id("r3"), "pending", "{status}");
    let run_id = status["run"]["id"].as_str().unwrap().to_owned();
    let notes = repo.git(&["show", &format!("swarm/{run_id}:NOTES.md")]);
    assert_eq!(notes, "notes from the agent\n");
    let requests = llm.requests().len();

    let resumed = goal_cmd(&repo, &llm, &["resume", "--budget-tokens", "100000000"]);
    assert_exit(&resumed, 0);
    // Only r2 and r3 ran (a read each, then the answer).
    assert_eq!(llm.requests().len(), requests + 4);
    assert_eq!(repo.read("NOTES.md"), "notes from the agent\n");
}

#[test]
fn a_swarm_toml_the_built_in_agent_writes_is_parked_and_never_runs() {
    let repo = TestRepo::new();
    let base = repo.git(&["rev-parse", "main"]);
    let plan = json!([
        {"id": "plant", "prompt": "TASK plant: configure swarm", "deps": [], "lane": "coder"},
        {"id": "final", "prompt": "TASK final: report", "deps": [], "lane": "reducer"}
    ]);
    let llm = FakeLlm::start(move |req, _| {
        if has_tool(req, "submit_plan") {
            return plan_call(&plan);
        }
        if task_prompt(req).contains("TASK final") || !tool_results(req).is_empty() {
            return Reply::Text("done".into());
        }
        Reply::ToolCalls(vec![(
            "w1".into(),
            "write_file".into(),
            json!({"path": ".swarm.toml", "content": "check = \"touch PLANTED\"\n"}),
        )])
    });

    let out = goal_cmd(&repo, &llm, &["--goal", "Configure swarm"]);

    assert_exit(&out, 3);
    assert_eq!(repo.git(&["rev-parse", "main"]), base);
    assert!(!repo.root.join(".swarm.toml").exists());
    let status = status_json(&repo);
    let plant = status["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "plant")
        .unwrap();
    assert_eq!(plant["status"], "parked");
    assert!(plant["error"].as_str().unwrap().contains(".swarm.toml"));
    // A later run in the repository runs no planted check.
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo w > w.txt"}"#]);
    assert_exit(&repo.swarm(&["run", tasks.to_str().unwrap()]), 0);
    assert!(!repo.root.join("PLANTED").exists());
}

#[test]
fn an_answer_cut_at_the_output_limit_is_continued_not_taken_as_final() {
    let repo = TestRepo::new();
    let report = outside(&repo, "report.md");
    let plan = json!([
        {"id": "final", "prompt": "TASK final: write the report", "deps": [], "lane": "reducer"}
    ]);
    let llm = FakeLlm::start(move |req, _| {
        if has_tool(req, "submit_plan") {
            return plan_call(&plan);
        }
        let asked_to_go_on = req
            .messages()
            .iter()
            .any(|m| m["content"].as_str().is_some_and(|c| c.contains("cut off")));
        if asked_to_go_on {
            return Reply::Text("and the second half.".into());
        }
        let cut = json!({
            "choices": [{"index": 0, "finish_reason": "length",
                         "message": {"role": "assistant", "content": "The first half "}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}
        });
        Reply::Status {
            status: 200,
            body: cut.to_string(),
            headers: Vec::new(),
        }
    });

    let out = goal_cmd(
        &repo,
        &llm,
        &["--goal", "Report", "--final-out", report.to_str().unwrap()],
    );

    assert_exit(&out, 0);
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(
        text.contains("The first half and the second half."),
        "{text}"
    );
}

#[test]
fn ctrl_c_while_planning_stops_resumably_and_resume_plans_the_goal_again() {
    let repo = TestRepo::new();
    // The first request is throttled for minutes: planning waits, and the Ctrl-C comes then.
    let llm = FakeLlm::start(|req, n| {
        if n == 0 {
            Reply::rate_limited(300)
        } else if has_tool(req, "submit_plan") {
            plan_call(&good_plan())
        } else {
            agent_reply(req)
        }
    });
    let mut child = repo
        .swarm_cmd()
        .env("SWARM_API_BASE", llm.base_url())
        .env("SWARM_API_KEY", "sk-canary-key-0123456789")
        .args(["--goal", "Survey the repository"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    llm.await_requests_from(&mut child, |requests| !requests.is_empty());
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 75);
    assert!(
        stderr(&out).contains("plans the goal again"),
        "{}",
        stderr(&out)
    );
    assert_eq!(status_json(&repo)["run"]["status"], "interrupted");
    let runs = repo.swarm(&["runs", "--json"]);
    let runs: Value = serde_json::from_slice(&runs.stdout).unwrap();
    assert_eq!(runs[0]["reason"], "interrupted while planning", "{runs:#}");

    let resumed = goal_cmd(&repo, &llm, &["resume"]);
    assert_exit(&resumed, 0);
    let status = status_json(&repo);
    let done = status["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] == "done")
        .count();
    assert_eq!(done, 4, "{status:#}");
}

#[test]
fn a_model_answered_the_same_three_times_in_a_row_is_stopped_not_left_to_the_turn_cap() {
    let repo = TestRepo::new();
    // A weak model reading the same lines again and again, asking each time for one line more
    // than there is.
    let llm = FakeLlm::start(|_, n| {
        Reply::tool_call(
            &format!("c{n}"),
            "read_file",
            json!({"path": "README.md", "start_line": 1, "end_line": 100 + n}),
        )
    });
    let tasks = repo.tasks(&[r#"{"id":"r","prompt":"Summarise the README","mode":"read"}"#]);

    let out = goal_cmd(
        &repo,
        &llm,
        &[
            "run",
            tasks.to_str().unwrap(),
            "--agent",
            "openai",
            "--retries",
            "0",
        ],
    );

    assert_exit(&out, 1);
    let why = status_json(&repo)["tasks"][0]["error"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        why.starts_with(
            "the model called read_file 3 times in a row and was answered the same each time"
        ),
        "{why}"
    );
    // Told before the last call; three calls, not the turn cap's forty.
    assert_eq!(llm.requests().len(), 3);
    let told = tool_results(&llm.requests()[2]);
    assert!(
        told.last()
            .unwrap()
            .1
            .contains("one more such call in a row ends the task"),
        "{told:?}"
    );
}

#[test]
fn a_model_repeating_a_call_that_fails_the_same_way_is_stopped_with_that_reason() {
    // (the task's mode, the call the model makes at every turn, the error it gets back).
    let cases = [
        (
            "read",
            "add_tasks",
            json!({"tasks": [{"id": "x", "prompt": "more"}]}),
            "error: unknown tool \"add_tasks\"",
        ),
        (
            "write",
            "edit_file",
            json!({"path": "README.md", "old": "not in the file", "new": "y"}),
            "error: `old` was not found in README.md; read the file and copy the text exactly",
        ),
        (
            "read",
            "read_file",
            json!({"path": "missing.txt"}),
            "error: no such file or directory: missing.txt",
        ),
        (
            "read",
            "read_file",
            json!({"path": "../outside.txt"}),
            "error: refused: ../outside.txt",
        ),
    ];
    for (mode, tool, args, error) in cases {
        let repo = TestRepo::new();
        let call = Reply::tool_call("same", tool, args.clone());
        let llm = FakeLlm::start(move |_, _| call.clone());
        let tasks =
            repo.tasks(&[&json!({"id": "t", "prompt": "Do it.", "mode": mode}).to_string()]);
        let out = goal_cmd(
            &repo,
            &llm,
            &[
                "run",
                tasks.to_str().unwrap(),
                "--agent",
                "openai",
                "--retries",
                "0",
            ],
        );
        assert_exit(&out, 1);
        // Three calls, each answered the same error: three requests, not the 40 of the cap.
        let requests = llm.requests();
        assert_eq!(requests.len(), 3, "{tool}");
        assert!(!has_tool(&requests[0], "add_tasks"), "{tool}");
        let answers: Vec<String> = tool_results(&requests[2])
            .into_iter()
            .map(|(_, text)| text)
            .collect();
        assert!(answers[0].starts_with(error), "{tool}: {answers:?}");
        assert!(
            answers[1].ends_with(
                "(the same call failed this way before: one more such call ends the task)"
            ),
            "{tool}: {answers:?}"
        );
        let status = status_json(&repo);
        let why = status["tasks"][0]["error"].as_str().unwrap();
        assert!(
            why.starts_with(&format!(
                "the model called {tool} 3 times and was answered the same error each time ({error}"
            )),
            "{tool}: {why}"
        );
        assert_eq!(status["tasks"][0]["status"], "failed", "{tool}");
        // The transcript says it too (`show` has its last lines).
        let shown = stdout(&repo.swarm(&["show", "t"]));
        assert!(
            shown.contains(&format!("swarm: the model called {tool} 3 times")),
            "{shown}"
        );
    }
}

#[test]
fn prose_with_stray_json_is_not_a_plan_and_a_plan_with_no_task_fails_the_goal() {
    // Prose holding a Python snippet, then a plan after it is asked for again.
    let prose = Reply::Text("Use a list:\n```python\nitems = []\n```\nThat is all.".into());
    let (_, text, out) = run_defective_plan(prose, plan_call(&good_plan()));
    assert_exit(&out, 0);
    assert!(
        text.contains("the answer holds JSON but not a plan"),
        "{text}"
    );

    // Only empty plans: the goal fails, with the reason, and nothing runs.
    let repo = TestRepo::new();
    let llm = FakeLlm::start(|req, _| {
        if is_planning(req) {
            plan_call(&json!([]))
        } else {
            Reply::Text("done".into())
        }
    });
    let before = repo.state();
    let out = goal_cmd(&repo, &llm, &["--goal", "Do it"]);
    assert_exit(&out, 1);
    let err = crate::stderr(&out);
    assert!(err.contains("the plan has no task"), "{err}");
    assert_eq!(repo.state(), before);
}

#[test]
fn a_writer_whose_model_calls_no_tool_fails_as_no_change_unless_it_may_be_empty() {
    for may_be_empty in [false, true] {
        let repo = TestRepo::new();
        let llm = FakeLlm::start(|_, _| Reply::Text("I would change the README.".into()));
        let tasks = repo.tasks(&[&json!({
            "id": "w",
            "prompt": "Improve the README",
            "mode": "write",
            "may-be-empty": may_be_empty,
        })
        .to_string()]);
        let out = goal_cmd(
            &repo,
            &llm,
            &["run", tasks.to_str().unwrap(), "--agent", "openai"],
        );
        if may_be_empty {
            assert_exit(&out, 0);
        } else {
            assert_exit(&out, 1);
            let text = crate::stdout(&out);
            assert!(text.contains("the agent made no change"), "{text}");
            // Tried, and retried once.
            let failed = events(&repo)
                .iter()
                .filter(|e| e["kind"] == "task_failed")
                .count();
            assert_eq!(failed, 2);
        }
    }
}

#[test]
fn writers_whose_server_drops_the_tools_call_them_as_json_and_their_changes_merge() {
    let repo = TestRepo::new();
    // The server passes no function calls: offered tools, the model writes prose. Asked for a
    // call as JSON (structured output), it writes the file, then finishes.
    let llm = FakeLlm::start(|req, _| {
        if req.body.get("tools").is_some() {
            return Reply::text("I would write the file with the greeting in it.");
        }
        assert_eq!(req.body["response_format"]["json_schema"]["name"], "call");
        let prompt = task_prompt(req);
        let file = if prompt.contains("Write one.txt") {
            "one.txt"
        } else {
            "two.txt"
        };
        if last_user_text(req).starts_with("The result of write_file") {
            // The second ends without a word: its change is its result.
            let answer = if file == "one.txt" {
                "wrote one.txt"
            } else {
                ""
            };
            Reply::text(json!({"name": "finish", "arguments": {"answer": answer}}).to_string())
        } else {
            let call =
                json!({"name": "write_file", "arguments": {"path": file, "content": "hello\n"}});
            Reply::text(call.to_string())
        }
    });
    let tasks = repo.tasks(&[
        r#"{"id":"one","prompt":"Write one.txt","mode":"write"}"#,
        r#"{"id":"two","prompt":"Write two.txt","mode":"write","deps":["one"]}"#,
    ]);

    let out = goal_cmd(
        &repo,
        &llm,
        &["run", tasks.to_str().unwrap(), "--agent", "openai"],
    );

    assert_exit(&out, 0);
    assert_eq!(repo.read("one.txt"), "hello\n");
    assert_eq!(repo.read("two.txt"), "hello\n");
    let status = status_json(&repo);
    let result = |id: &str| {
        status["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .map(|t| t["result"].clone())
            .unwrap()
    };
    assert_eq!(result("one"), "wrote one.txt");
    assert_eq!(
        result("two"),
        "(the agent worked with the tools and gave no final answer)"
    );
    let said: Vec<Value> = events(&repo)
        .into_iter()
        .filter(|e| e["kind"] == "no_function_call")
        .collect();
    assert_eq!(said.len(), 1, "said once for the run: {said:?}");
    // The first writer found out with one prose answer; the second asked for JSON at once.
    let offered_tools: Vec<bool> = llm
        .requests()
        .iter()
        .filter(|r| r.body.get("tools").is_some())
        .map(|r| task_prompt(r).contains("Write one.txt"))
        .collect();
    assert_eq!(offered_tools, [true]);
}

#[test]
fn an_answer_cut_again_and_again_is_continued_three_times_then_the_attempt_fails() {
    let repo = TestRepo::new();
    let llm = FakeLlm::start(|_, _| {
        let cut = json!({
            "choices": [{"index": 0, "finish_reason": "length",
                         "message": {"role": "assistant", "content": "more and more "}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 512, "total_tokens": 517}
        });
        Reply::Status {
            status: 200,
            body: cut.to_string(),
            headers: Vec::new(),
        }
    });
    let tasks = repo.tasks(&[r#"{"id":"r","prompt":"Summarise","mode":"read"}"#]);

    let out = goal_cmd(
        &repo,
        &llm,
        &[
            "run",
            tasks.to_str().unwrap(),
            "--agent",
            "openai",
            "--retries",
            "0",
        ],
    );

    assert_exit(&out, 1);
    let text = crate::stdout(&out);
    assert!(
        text.contains("cut at the server's output limit 4 times in a row"),
        "{text}"
    );
    // The first answer and three continuations.
    assert_eq!(llm.requests().len(), 4);
}

#[test]
fn a_tool_call_written_as_text_is_executed() {
    let repo = TestRepo::new();
    let llm = FakeLlm::start(|req, _| {
        if tool_results(req).is_empty() {
            Reply::Text(
                "I will write it.\n<tool_call>{\"name\": \"write_file\", \"arguments\": {\"path\": \"hello.txt\", \"content\": \"hi\\n\"}}</tool_call>"
                    .into(),
            )
        } else {
            Reply::Text("Wrote hello.txt.".into())
        }
    });
    let tasks = repo.tasks(&[r#"{"id":"w","prompt":"Write hello.txt","mode":"write"}"#]);

    let out = goal_cmd(
        &repo,
        &llm,
        &["run", tasks.to_str().unwrap(), "--agent", "openai"],
    );

    assert_exit(&out, 0);
    assert_eq!(repo.read("hello.txt"), "hi\n");
}

#[test]
fn a_server_that_drops_the_tools_is_said_once_then_asked_for_structured_output_and_the_plan_runs() {
    let repo = TestRepo::new();
    let llm = FakeLlm::start(|req, _| {
        if has_tool(req, "submit_plan") {
            // The server left the tools out of the prompt: the model answers in prose.
            return Reply::Text("Sure! First I would look at the files, then write notes.".into());
        }
        match req.body["response_format"]["json_schema"]["name"].as_str() {
            Some("plan") => Reply::Text(json!({ "tasks": good_plan() }).to_string()),
            Some("call") => json_agent_reply(req),
            _ => agent_reply(req),
        }
    });

    let out = goal_cmd(&repo, &llm, &["--goal", "Do it"]);

    assert_exit(&out, 0);
    let err = crate::stderr(&out);
    assert_eq!(
        err.matches("the model answered without a function call")
            .count(),
        1,
        "{err}"
    );
    let structured: Vec<Request> = llm
        .requests()
        .into_iter()
        .filter(|r| r.body["response_format"]["json_schema"]["name"] == "plan")
        .collect();
    assert_eq!(structured.len(), 1);
    assert_eq!(structured[0].body["response_format"]["type"], "json_schema");
    assert_eq!(repo.read("NOTES.md"), "notes from the agent\n");
    // The run's agents share what the planner found: they ask for their calls as JSON at once.
    let agents: Vec<Request> = llm
        .requests()
        .into_iter()
        .filter(|r| !is_planning(r))
        .collect();
    assert!(!agents.is_empty());
    assert!(
        agents
            .iter()
            .all(|r| r.body["response_format"]["json_schema"]["name"] == "call"),
        "{agents:?}"
    );
    // What the model answered is on record, in `swarm logs`.
    let logs = crate::stdout(&repo.swarm(&["logs"]));
    assert!(
        logs.contains("model_answer") && logs.contains("First I would look at the files"),
        "{logs}"
    );
}

#[test]
fn every_planning_request_caps_its_answer() {
    let llm = good_server();
    let repo = TestRepo::new();
    let out = goal_cmd(&repo, &llm, &["--goal", "Do it"]);
    assert_exit(&out, 0);
    for r in llm.requests() {
        let cap = if is_planning(&r) { 8192 } else { 4096 };
        assert_eq!(r.body["max_tokens"], cap, "{}", r.body);
    }
}

#[test]
fn the_answer_caps_are_keys_and_0_sends_none() {
    let llm = good_server();
    let repo = TestRepo::new();
    let args = [
        "--goal",
        "Do it",
        "--plan-answer-tokens",
        "2048",
        "--turn-answer-tokens",
        "0",
    ];
    let out = goal_cmd(&repo, &llm, &args);
    assert_exit(&out, 0);
    let requests = llm.requests();
    assert!(requests.iter().any(|r| !is_planning(r)));
    for r in requests {
        let cap = if is_planning(&r) {
            json!(2048)
        } else {
            Value::Null
        };
        assert_eq!(r.body["max_tokens"], cap, "{}", r.body);
    }
}

#[test]
fn a_slow_but_steady_stream_outlasts_the_request_timeout_and_is_sent_once() {
    let repo = TestRepo::new();
    let llm = FakeLlm::start(|req, _| {
        if has_tool(req, "submit_plan") {
            // Ten pieces 250 ms apart: 2.5 s in all, against a 2 s request timeout.
            return Reply::Slow {
                reply: Box::new(plan_call(&good_plan())),
                pieces: 10,
                gap: Duration::from_millis(250),
            };
        }
        agent_reply(req)
    });

    let out = goal_cmd(
        &repo,
        &llm,
        &["--goal", "Survey", "--request-timeout", "2s"],
    );

    assert_exit(&out, 0);
    let requests = llm.requests();
    assert!(requests.iter().all(|r| r.body["stream"] == true));
    assert_eq!(requests.iter().filter(|r| is_planning(r)).count(), 1);
    let kinds: Vec<Value> = events(&repo)
        .into_iter()
        .map(|e| e["kind"].clone())
        .collect();
    assert!(!kinds.contains(&json!("llm_retrying")), "{kinds:?}");
}

#[test]
fn an_answer_that_falls_silent_is_cut_kept_and_continued_never_sent_again() {
    let repo = TestRepo::new();
    let plan = json!([
        {"id": "final", "prompt": "TASK final: write the report", "deps": [], "lane": "reducer"}
    ]);
    let llm = FakeLlm::start(move |req, _| {
        if has_tool(req, "submit_plan") {
            return plan_call(&plan);
        }
        let asked_to_go_on = req
            .messages()
            .iter()
            .any(|m| m["content"].as_str().is_some_and(|c| c.contains("cut off")));
        if asked_to_go_on {
            Reply::text("and the rest of it.")
        } else {
            Reply::Stalled("The report begins ".into())
        }
    });
    let report = outside(&repo, "report.md");

    let out = goal_cmd(
        &repo,
        &llm,
        &[
            "--goal",
            "Report",
            "--request-timeout",
            "1s",
            "--final-out",
            report.to_str().unwrap(),
        ],
    );

    assert_exit(&out, 0);
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(
        text.contains("The report begins and the rest of it."),
        "{text}"
    );
    // The stalled request was not sent again as it was: the next one carries what came.
    let agent: Vec<Request> = llm
        .requests()
        .into_iter()
        .filter(|r| !is_planning(r))
        .collect();
    assert_eq!(agent.len(), 2, "{agent:?}");
    assert_ne!(agent[0].body["messages"], agent[1].body["messages"]);
    // The attempt's transcript says why the answer stopped.
    let mut files = Vec::new();
    collect(&repo.swarm_dir(), &mut files);
    let said = "swarm: the answer stopped before its end: no token came for 1.0s";
    assert!(
        files
            .iter()
            .any(|(_, bytes)| String::from_utf8_lossy(bytes).contains(said)),
        "no file of the run says {said:?}"
    );
}

/// Whether a request fits a context of `tokens`, as `fit` estimates it (three bytes a token)
/// with its answer cap.
fn fits(req: &Request, tokens: u64) -> bool {
    let cap = req.body["max_tokens"].as_u64().unwrap_or(0);
    req.body.to_string().len() as u64 / 3 + cap <= tokens
}

#[test]
fn every_request_fits_a_context_of_4096_tokens_the_server_reports() {
    let repo = TestRepo::new();
    let llm = FakeLlm::start(|req, _| {
        if !fits(req, 4096) {
            return Reply::error(400, "the request exceeds the available context size");
        }
        Reply::Text("A summary.".into())
    });
    llm.set_context(4096);
    // A prompt of 40 KB: about 13,000 tokens, three times the context.
    let long = "The quarterly figures of each region, in detail. ".repeat(800);
    let tasks = repo.tasks(&[&json!({"id": "r", "prompt": long, "mode": "read"}).to_string()]);

    let out = goal_cmd(
        &repo,
        &llm,
        &["run", tasks.to_str().unwrap(), "--agent", "openai"],
    );

    assert_exit(&out, 0);
    let requests = llm.requests();
    assert!(!requests.is_empty());
    for r in &requests {
        assert!(
            fits(r, 4096),
            "{} bytes, cap {}",
            r.body.to_string().len(),
            r.body["max_tokens"]
        );
        assert!(r.body["max_tokens"].as_u64().unwrap() <= 2048);
    }
    let fitted = events(&repo)
        .into_iter()
        .filter(|e| e["kind"] == "prompt_fitted")
        .count();
    assert!(fitted >= 1);
}

#[test]
fn a_request_refused_for_its_length_is_shortened_and_sent_again_not_as_it_was() {
    let repo = TestRepo::new();
    // No context size told: the server refuses what is over 3,000 tokens.
    let llm = FakeLlm::start(|req, _| {
        if !fits(req, 3000) {
            return Reply::error(400, "This model's maximum context length is 3000 tokens");
        }
        Reply::Text("A summary.".into())
    });
    let long = "The quarterly figures of each region, in detail. ".repeat(400);
    let tasks = repo.tasks(&[&json!({"id": "r", "prompt": long, "mode": "read"}).to_string()]);

    let out = goal_cmd(
        &repo,
        &llm,
        &["run", tasks.to_str().unwrap(), "--agent", "openai"],
    );

    assert_exit(&out, 0);
    let sizes: Vec<usize> = llm
        .requests()
        .iter()
        .map(|r| r.body.to_string().len())
        .collect();
    assert!(sizes.len() >= 2, "{sizes:?}");
    assert!(sizes.windows(2).all(|w| w[1] < w[0]), "{sizes:?}");
}
