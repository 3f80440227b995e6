//! `--plan-only`: the plan as a tree and the command that runs it, or as JSONL with `--json`,
//! and in the task-file format in `--plan-out`.

use serde_json::json;

use super::{assert_output, swarm};
use crate::fake_llm::{FakeLlm, Reply, has_tool};
use crate::{TestRepo, outside};

/// A planner that plans a diamond (a scan, two writers after it, a reducer after both) and a
/// reader beside it.
fn planner() -> FakeLlm {
    planner_of(diamond())
}

fn diamond() -> serde_json::Value {
    json!([
        {"id": "scan", "title": "Find every HTTP handler", "prompt": "List the handlers.", "lane": "researcher"},
        {"id": "trace", "title": "Add tracing to the handlers", "prompt": "Add tracing.", "deps": ["scan"], "lane": "coder", "files": ["src/handlers.rs"]},
        {"id": "docs", "title": "Document the tracing", "prompt": "Document it.", "deps": ["scan"], "lane": "coder", "files": ["README.md"]},
        {"id": "tests", "title": "Check that the test suite covers every handler, and list the gaps it leaves", "prompt": "Review the tests.", "lane": "reviewer"},
        {"id": "report", "title": "Summarise the changes", "prompt": "Summarise.", "deps": ["trace", "docs", "tests"], "lane": "reducer"}
    ])
}

fn planner_of(tasks: serde_json::Value) -> FakeLlm {
    FakeLlm::start(move |req, _| {
        assert!(has_tool(req, "submit_plan"), "only the planner is asked");
        Reply::ToolCalls(vec![(
            "plan-1".into(),
            "submit_plan".into(),
            json!({ "tasks": tasks }),
        )])
    })
}

/// The endpoint in a config file, so the command line holds no port.
fn config(repo: &TestRepo, llm: &FakeLlm) -> String {
    let path = outside(repo, "swarm.toml");
    std::fs::write(&path, format!("api-base = \"{}\"\n", llm.base_url())).unwrap();
    path.to_str().unwrap().to_owned()
}

const GOAL: &str = "Add request tracing to every handler and document it";

#[test]
fn plan_only_prints_the_tree_and_the_command_that_runs_it() {
    let repo = TestRepo::new();
    let llm = planner();
    let config = config(&repo, &llm);
    let before = repo.state();

    let out = swarm(&repo, &["--config", &config, "--goal", GOAL, "--plan-only"]);

    assert_eq!(out.code(), Some(0), "{out}");
    assert_output!("plan_only", out);
    assert_eq!(repo.state(), before);
    assert_eq!(repo.git(&["branch", "--list", "swarm/*"]), "");
}

#[test]
fn plan_only_with_json_prints_the_plan_as_jsonl() {
    let repo = TestRepo::new();
    let llm = planner();
    let config = config(&repo, &llm);

    let out = swarm(
        &repo,
        &["--config", &config, "--goal", GOAL, "--plan-only", "--json"],
    );

    assert_eq!(out.code(), Some(0), "{out}");
    assert_output!("plan_only_json", out);
    for line in out.stdout().lines() {
        serde_json::from_str::<serde_json::Value>(line).unwrap();
    }
}

#[test]
fn plan_only_with_plan_out_prints_the_tree_and_writes_jsonl() {
    let repo = TestRepo::new();
    let llm = planner();
    let config = config(&repo, &llm);
    let plan = outside(&repo, "plan.jsonl");
    let plan = plan.to_str().unwrap();

    let out = swarm(
        &repo,
        &[
            "--config",
            &config,
            "--goal",
            GOAL,
            "--plan-only",
            "--plan-out",
            plan,
        ],
    );
    let json = swarm(
        &repo,
        &["--config", &config, "--goal", GOAL, "--plan-only", "--json"],
    );

    assert_eq!(out.code(), Some(0), "{out}");
    assert_output!("plan_only_plan_out", out);
    assert!(
        out.stdout()
            .contains(&format!("To run it: swarm run {plan}"))
    );
    assert_eq!(std::fs::read_to_string(plan).unwrap(), json.stdout());
}

#[test]
fn plan_only_says_which_tasks_may_add_tasks_and_the_most_they_may_add() {
    let repo = TestRepo::new();
    // `scan` may add 30 and `tests` 4; the run lets 25 be added in all.
    let mut tasks = diamond();
    tasks[0]["spawn"] = 30.into();
    tasks[3]["spawn"] = 4.into();
    let llm = planner_of(tasks);
    let config = config(&repo, &llm);
    std::fs::write(
        &config,
        std::fs::read_to_string(&config).unwrap() + "max-spawned = 25\n",
    )
    .unwrap();

    let out = swarm(&repo, &["--config", &config, "--goal", GOAL, "--plan-only"]);

    assert_eq!(out.code(), Some(0), "{out}");
    assert_output!("plan_only_spawn", out);
}
