//! Cached tokens against a fake server that models a prefix cache: read from each answer,
//! summed per attempt, task and run into the board, the report, `swarm show` and the JSON, kept
//! across a `kill -9`; and the order of what swarm sends that lets a server's cache work.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

use crate::fake_llm::{
    FakeLlm, Reply, Request, has_tool, is_planning, planned_goal, prompt_text, tool_results,
};
use crate::goal::{agent_reply, goal_cmd, llm_cmd};
use crate::{TestRepo, assert_exit, outside, run_report, status_json, stdout};

/// The user message of an agent request: the task's own part.
fn task_part(req: &Request) -> String {
    req.messages()
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// Two readers and a third that sums up their results, in one lane.
const THREE_ANALYSTS: [&str; 3] = [
    r#"{"id":"a","prompt":"TASK a: read the README","mode":"read","lane":"analyst"}"#,
    r#"{"id":"b","prompt":"TASK b: read the README","mode":"read","lane":"analyst"}"#,
    r#"{"id":"c","prompt":"TASK c: sum up","mode":"read","lane":"analyst","deps":["a","b"]}"#,
];

fn u64_of(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn cached_tokens_are_summed_per_attempt_task_and_run_and_priced_in_the_report_show_and_json() {
    let repo = TestRepo::new();
    let llm = FakeLlm::start(|req, _| agent_reply(req));
    llm.cache_prefixes();
    let tasks = repo.tasks(&THREE_ANALYSTS);
    let report = outside(&repo, "report.md");

    let out = goal_cmd(
        &repo,
        &llm,
        &[
            "run",
            tasks.to_str().unwrap(),
            "--agent",
            "openai",
            "-j",
            "1",
            "--price",
            "2,1,8",
            "--json",
            "--final-out",
            report.to_str().unwrap(),
        ],
    );

    assert_exit(&out, 0);
    let (prompt, cached) = llm.reported_usage();
    assert!(cached > 0 && cached < prompt, "{cached} of {prompt}");
    // The run: the summary's JSON and the report say what the server said, summed.
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(u64_of(&summary["totals"]["task_prompt_tokens"]), prompt);
    assert_eq!(u64_of(&summary["totals"]["task_cached_tokens"]), cached);
    let share = cached * 100 / prompt;
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(
        text.contains(&format!(
            " by the tasks ({cached} of their {prompt} prompt tokens cached: {share} %);"
        )),
        "{text}"
    );
    // Each task: its row in the report, and the same on the board as in the summary.
    let board = status_json(&repo);
    let mut summed = (0, 0);
    for (t, row) in summary["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .zip(board["tasks"].as_array().unwrap())
    {
        let (p, c) = (u64_of(&t["prompt_tokens"]), u64_of(&t["cached_tokens"]));
        assert_eq!(
            (p, c),
            (u64_of(&row["prompt_tokens"]), u64_of(&row["cached_tokens"]))
        );
        assert!(p > 0, "{t}");
        // With a price, the cached tokens cost theirs ($1 a million), the rest of the prompt
        // $2 and the answer $8.
        let answer = u64_of(&t["tokens"]) - p;
        let cost = ((p - c) * 2 + c + answer * 8) as f64 / 1e6;
        let recorded = t["cost"].as_f64().unwrap();
        assert!(
            (recorded - cost).abs() < 1e-12,
            "{recorded} for {cost}: {t}"
        );
        let cell = format!(
            " | {} | {c} ({} %) | ${cost:.4} |",
            t["tokens"],
            c * 100 / p
        );
        assert!(text.contains(&cell), "{cell} not in {text}");
        summed = (summed.0 + p, summed.1 + c);
    }
    assert_eq!(summed, (prompt, cached));
    // The task that came second shared the lane's prefix (instructions, tools) with the first:
    // even its first request was mostly cached.
    let b = &board["tasks"][1];
    assert!(
        u64_of(&b["cached_tokens"]) * 2 > u64_of(&b["prompt_tokens"]),
        "{b}"
    );

    // `swarm show`: the task's totals, which are its attempts' sums.
    let shown = repo.swarm(&["show", "c", "--json"]);
    assert_exit(&shown, 0);
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    let attempts = shown["attempts"].as_array().unwrap();
    let sum = |key: &str| attempts.iter().map(|a| u64_of(&a[key])).sum::<u64>();
    let (p, c) = (
        u64_of(&shown["prompt_tokens"]),
        u64_of(&shown["cached_tokens"]),
    );
    assert_eq!((sum("prompt_tokens"), sum("cached_tokens")), (p, c));
    assert_eq!(
        (p, c),
        (
            u64_of(&board["tasks"][2]["prompt_tokens"]),
            u64_of(&board["tasks"][2]["cached_tokens"])
        )
    );
    let shown = repo.swarm(&["show", "c"]);
    assert_exit(&shown, 0);
    let cached_text = format!("({c} of {p} prompt tokens cached: {} %)", c * 100 / p);
    let shown = stdout(&shown);
    let lines: Vec<&str> = shown.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.trim_start().starts_with("tokens ") && l.contains(&cached_text)),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("succeeded;") && l.contains(&cached_text)),
        "the attempt's line: {lines:?}"
    );
}

#[test]
fn cached_tokens_on_the_board_survive_a_kill_9_and_count_in_the_resumed_run() {
    let repo = TestRepo::new();
    // b's requests hang until the test lets them through: swarm is killed while b waits.
    let open = Arc::new(AtomicBool::new(false));
    let let_through = Arc::clone(&open);
    let llm = FakeLlm::start(move |req, _| {
        if task_part(req).contains("TASK b") && !let_through.load(Ordering::SeqCst) {
            Reply::Hang
        } else {
            agent_reply(req)
        }
    });
    llm.cache_prefixes();
    let tasks = repo.tasks(&[THREE_ANALYSTS[0], THREE_ANALYSTS[1]]);
    let mut swarm = llm_cmd(&repo, &llm)
        .args([
            "run",
            tasks.to_str().unwrap(),
            "--agent",
            "openai",
            "-j",
            "1",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // a ran first (it comes first in the file) and b waits for its answer.
    llm.await_requests_from(&mut swarm, |rs| {
        rs.iter().any(|r| task_part(r).contains("TASK b"))
    });
    swarm.kill().unwrap();
    swarm.wait().unwrap();
    let before = status_json(&repo);
    assert_eq!(before["tasks"][0]["status"], "done");
    let a_cached = u64_of(&before["tasks"][0]["cached_tokens"]);
    let (a_prompt, reported) = llm.reported_usage();
    assert_eq!(u64_of(&before["tasks"][0]["prompt_tokens"]), a_prompt);
    assert_eq!(a_cached, reported);

    open.store(true, Ordering::SeqCst);
    let out = goal_cmd(&repo, &llm, &["resume"]);

    assert_exit(&out, 0);
    let after = status_json(&repo);
    assert_eq!(
        after["tasks"][0]["cached_tokens"],
        before["tasks"][0]["cached_tokens"]
    );
    let (prompt, cached) = llm.reported_usage();
    let report = run_report(&repo);
    assert!(
        report.contains(&format!(
            " by the tasks ({cached} of their {prompt} prompt tokens cached: {} %);",
            cached * 100 / prompt
        )),
        "{report}"
    );
}

/// The prompt of each request, as the server's prefix cache sees it, by the task whose
/// conversation it is.
fn conversations(requests: &[Request]) -> std::collections::BTreeMap<String, Vec<&Request>> {
    let mut by_task = std::collections::BTreeMap::<String, Vec<&Request>>::new();
    for r in requests {
        by_task.entry(task_part(r)).or_default().push(r);
    }
    by_task
}

#[test]
fn a_lanes_requests_share_their_prefix_and_each_conversation_is_only_appended_to() {
    // What lets a server's prompt cache work: the part every task of a lane shares comes first
    // and is byte-identical (the instructions, the tools), the task's own part after it (its
    // deps' results after its prompt), nothing of the run (its id, a time, a path) before
    // that, and a conversation is re-sent only with more appended.
    let repo = TestRepo::new();
    let llm = FakeLlm::start(|req, _| match task_part(req).strip_prefix("TASK write ") {
        // A writer writes the file its task names, then says so.
        Some(rest) if tool_results(req).is_empty() => {
            let path = rest.split_whitespace().next().unwrap_or_default();
            let content = serde_json::json!({"path": path, "content": "a line\n"});
            Reply::tool_call("w", "write_file", content)
        }
        Some(_) => Reply::text("wrote it"),
        None => agent_reply(req),
    });
    let mut lines = THREE_ANALYSTS.to_vec();
    lines.push(r#"{"id":"w1","prompt":"TASK write one.md","lane":"coder"}"#);
    lines.push(r#"{"id":"w2","prompt":"TASK write two.md","lane":"coder","deps":["w1"]}"#);
    let tasks = repo.tasks(&lines);

    let out = goal_cmd(
        &repo,
        &llm,
        &["run", tasks.to_str().unwrap(), "--agent", "openai"],
    );

    assert_exit(&out, 0);
    let run = crate::run_id(&repo);
    let requests = llm.requests();
    assert_eq!(
        requests.len(),
        10,
        "a tool call and an answer for each task"
    );
    for (lane, marker) in [("analyst", "TASK "), ("coder", "TASK write")] {
        let of_lane: Vec<&Request> = requests
            .iter()
            .filter(|r| r.messages()[0]["content"].as_str().unwrap().contains(lane))
            .collect();
        assert!(of_lane.len() >= 4, "{lane}: {}", of_lane.len());
        let first = of_lane[0];
        // The shared part: the system message then the tools, the same to the byte.
        let shared = format!("{}{}", first.messages()[0], first.body["tools"]);
        for r in &of_lane {
            assert_eq!(
                r.messages()[0],
                first.messages()[0],
                "{lane}: the instructions differ"
            );
            assert_eq!(
                r.body["tools"], first.body["tools"],
                "{lane}: the tools differ"
            );
            assert!(prompt_text(&r.body).starts_with(&shared));
            // The task's own part comes right after it, in the first user message.
            assert_eq!(r.messages()[1]["role"], "user", "{lane}");
            assert!(task_part(r).starts_with(marker), "{lane}: {}", task_part(r));
        }
        assert!(
            !shared.contains(marker),
            "{lane}: a task's own text in the shared part"
        );
        for per_run in [
            run.as_str(),
            repo.root.to_str().unwrap(),
            repo.cache.to_str().unwrap(),
        ] {
            assert!(
                !shared.contains(per_run),
                "{lane}: {per_run:?} in the shared part"
            );
        }
    }
    // Deps' results come after the task's own prompt, never before.
    let c = requests
        .iter()
        .find(|r| task_part(r).starts_with("TASK c"))
        .unwrap();
    let part = task_part(c);
    let results = part.find("<result task=\"a\">").expect("a's result");
    assert!(part.find("TASK c: sum up").unwrap() < results, "{part}");
    assert!(part.contains("<result task=\"b\">"), "{part}");
    let by_task = conversations(&requests);
    assert_eq!(by_task.len(), 5);
    for (task, turns) in by_task {
        for pair in turns.windows(2) {
            let (before, after) = (pair[0].messages(), pair[1].messages());
            assert!(
                after.len() > before.len() && after[..before.len()] == *before,
                "{task}: a later request does not begin with the earlier one"
            );
            assert!(prompt_text(&pair[1].body).starts_with(&prompt_text(&pair[0].body)));
        }
    }
}

#[test]
fn the_plans_of_two_goals_share_the_instructions_tools_and_repository_summary_before_the_goal() {
    let repo = TestRepo::new();
    let llm = FakeLlm::start(|req, _| {
        if has_tool(req, "submit_dependencies") {
            let none = serde_json::json!({"dependencies": []});
            return Reply::tool_call("needs", "submit_dependencies", none);
        }
        if is_planning(req) {
            let goal = planned_goal(req);
            let task = serde_json::json!({"id": "r", "prompt": format!("TASK {goal}"),
                "deps": [], "lane": "reducer"});
            return Reply::tool_call("plan", "submit_plan", serde_json::json!({"tasks": [task]}));
        }
        Reply::text("done")
    });

    let out = goal_cmd(
        &repo,
        &llm,
        &[
            "--goal",
            "sum up the README",
            "--goal",
            "count the files",
            "--agent",
            "openai",
        ],
    );

    assert_exit(&out, 0);
    let plans: Vec<Request> = llm
        .requests()
        .into_iter()
        .filter(|r| has_tool(r, "submit_plan"))
        .collect();
    assert_eq!(plans.len(), 2);
    let (a, b) = (prompt_text(&plans[0].body), prompt_text(&plans[1].body));
    let common = &a[..a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()];
    // Everything up to the goal is the same: the instructions, the tools, the summary.
    assert!(common.ends_with("</repository>\\n\\nGoal:\\n"), "{common}");
}
