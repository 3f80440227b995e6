//! Tasks that add tasks where they meet goals: a single goal, several goals and the queue,
//! against a model that calls every tool it is offered. Spawning happens only where the plan
//! allows it, never past the limits, and the model's requests stay bounded.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{GOAL_A, GOAL_B, GOAL_C, needs_call, user_text};
use crate::fake_llm::{FakeLlm, Reply, Request, has_tool, tool_results};
use crate::{TestRepo, assert_exit, status_json, stderr};

/// The limits the runs here go by.
const MAX_DEPTH: usize = 2;
const MAX_SPAWNED: usize = 12;
const MAX_TURNS: usize = 8;
/// Tasks in each goal's plan.
const PLANNED: usize = 3;

/// Each goal's plan: `split` may add up to 100 tasks (far past the run's limits), `side` may
/// add none, and the reducer combines both.
fn plan(spawn: bool) -> Reply {
    let mut split =
        json!({"id": "split", "prompt": "GREEDY split the work", "deps": [], "lane": "researcher"});
    if spawn {
        split["spawn"] = json!(100);
    }
    Reply::ToolCalls(vec![(
        "plan".into(),
        "submit_plan".into(),
        json!({"tasks": [
            split,
            {"id": "side", "prompt": "SIDE look around", "deps": [], "lane": "researcher"},
            {"id": "report", "prompt": "REPORT combine", "deps": ["split", "side"], "lane": "reducer"},
        ]}),
    )])
}

/// A model that takes every tool it is offered: a plan when asked for one, no needs between
/// goals, and in a task, three more tasks (each asking to add 100 in turn) at every turn
/// `add_tasks` is offered, until it is refused; then it answers.
fn greedy(spawn: bool) -> FakeLlm {
    FakeLlm::start(move |req, _| {
        if has_tool(req, "submit_dependencies") {
            return needs_call(&json!([]));
        }
        if has_tool(req, "submit_plan") {
            return plan(spawn);
        }
        if !has_tool(req, "add_tasks") {
            return Reply::text("finished");
        }
        let results = tool_results(req);
        if results
            .last()
            .is_some_and(|(_, t)| t.starts_with("error: "))
        {
            return Reply::text("added what I could");
        }
        let turn = results.len();
        let tasks: Vec<Value> = (0..3)
            .map(|k| json!({"id": format!("k{turn}x{k}"), "prompt": "GREEDY more", "mode": "read", "spawn": 100}))
            .collect();
        Reply::tool_call(&format!("add-{turn}"), "add_tasks", json!({"tasks": tasks}))
    })
}

/// What a run did: its tasks' depths below the plan (by id), and the model's requests.
struct Seen {
    depths: BTreeMap<String, usize>,
    requests: Vec<Request>,
}

/// Runs `args` against `llm`, checks it ended well, and reads back what it did.
fn run(repo: &TestRepo, llm: &FakeLlm, args: &[&str]) -> Seen {
    let out = repo
        .swarm_cmd()
        .env("SWARM_API_BASE", llm.base_url())
        .env("SWARM_MAX_DEPTH", MAX_DEPTH.to_string())
        .env("SWARM_MAX_SPAWNED", MAX_SPAWNED.to_string())
        .env("SWARM_MAX_CHILDREN", "6")
        .env("SWARM_MAX_TURNS", MAX_TURNS.to_string())
        .args(args)
        .args(["--agent", "openai", "-j", "4"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let status = status_json(repo);
    let tasks = status["tasks"].as_array().unwrap();
    let parent: BTreeMap<String, Option<String>> = tasks
        .iter()
        .map(|t| {
            let id = t["id"].as_str().unwrap().to_owned();
            (id, t["spec"]["parent"].as_str().map(str::to_owned))
        })
        .collect();
    let depth = |id: &String| {
        let (mut d, mut at) = (0, id);
        while let Some(Some(p)) = parent.get(at) {
            d += 1;
            at = p;
        }
        d
    };
    let depths = parent.keys().map(|id| (id.clone(), depth(id))).collect();
    for t in tasks {
        assert_eq!(t["status"], "done", "{t}\n{}", stderr(&out));
    }
    Seen {
        depths,
        requests: llm.requests(),
    }
}

impl Seen {
    /// No task deeper than max-depth, no more spawned than max-spawned, no request of a task
    /// that may not spawn offered `add_tasks`, and the requests within what the limits allow:
    /// the planning ones, then at most `MAX_TURNS` for each task the run may have.
    fn check(&self, goals: usize, what: &str) {
        let deepest = self.depths.values().max().copied().unwrap_or(0);
        let spawned = self.depths.values().filter(|&&d| d > 0).count();
        let planning = goals + usize::from(goals > 1);
        let bound = planning + (goals * PLANNED + MAX_SPAWNED) * MAX_TURNS;
        #[expect(
            clippy::print_stderr,
            reason = "the number of requests is printed for the reader of the test's output"
        )]
        {
            eprintln!(
                "{what}: {} tasks ({spawned} spawned, the deepest at depth {deepest}), {} model requests (bound {bound})",
                self.depths.len(),
                self.requests.len()
            );
        }
        assert!(deepest <= MAX_DEPTH, "{what}: {:?}", self.depths);
        assert!(spawned <= MAX_SPAWNED, "{what}: {:?}", self.depths);
        assert!(spawned > 0, "{what}: nothing was spawned at all");
        assert!(self.requests.len() <= bound, "{what}");
        for r in &self.requests {
            let prompt = user_text(r);
            if prompt.contains("SIDE") || prompt.contains("REPORT") {
                assert!(!has_tool(r, "add_tasks"), "{what}: {prompt}");
            }
        }
    }
}

#[test]
fn a_goal_run_against_a_model_that_calls_every_tool_stays_within_the_limits() {
    let repo = TestRepo::new();
    let llm = greedy(true);
    let seen = run(&repo, &llm, &["--goal", GOAL_A]);
    seen.check(1, "one goal");
    // Two levels below `split`: its own tasks may spawn, theirs may not.
    assert!(
        seen.depths.values().any(|&d| d == MAX_DEPTH),
        "{:?}",
        seen.depths
    );
}

#[test]
fn three_goals_against_a_model_that_calls_every_tool_share_the_run_s_limits() {
    let repo = TestRepo::new();
    let llm = greedy(true);
    let seen = run(
        &repo,
        &llm,
        &["--goal", GOAL_A, "--goal", GOAL_B, "--goal", GOAL_C],
    );
    seen.check(3, "three goals");
}

#[test]
fn the_queue_against_a_model_that_calls_every_tool_stays_within_the_limits() {
    let repo = TestRepo::new();
    let llm = greedy(true);
    for goal in [GOAL_A, GOAL_B] {
        assert_exit(&repo.swarm(&["queue", "add", goal]), 0);
    }
    let seen = run(&repo, &llm, &["queue", "run"]);
    seen.check(2, "the queue");
}

#[test]
fn a_plan_that_gives_no_task_spawn_runs_with_no_add_tasks_tool_in_any_request() {
    let repo = TestRepo::new();
    let llm = greedy(false);
    let seen = run(&repo, &llm, &["--goal", GOAL_A, "--goal", GOAL_B]);
    assert_eq!(seen.depths.len(), 2 * PLANNED, "{:?}", seen.depths);
    for r in &seen.requests {
        assert!(!has_tool(r, "add_tasks"), "{}", user_text(r));
        assert!(!has_tool(r, "capacity"), "{}", user_text(r));
    }
}
