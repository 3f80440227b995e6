//! Tasks that run an agent: the prompt on stdin with the deps' results framed as data, the
//! refusal of a prompt without an agent, and a swarm nested in an agent doing nothing.

use serde_json::json;

use super::{lines_of, path_arg, run_dirs, sh, swarm_branches, task_field, task_file};
use crate::{TestRepo, assert_exit, outside, status_json, stderr};

#[test]
fn exec_agent_gets_prompt_on_stdin_with_dep_results_framed_as_data() {
    let repo = TestRepo::new();
    let out_dir = outside(&repo, "agent-out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "first", "prompt": "Summarise the README.", "lane": "researcher"}),
            json!({"id": "second", "prompt": "Combine the findings.", "deps": ["first"], "lane": "reducer"}),
        ],
    );
    let agent = "exec:cat > \"$OUT_DIR/prompt-$SWARM_TASK_ID.txt\"; env > \"$OUT_DIR/env-$SWARM_TASK_ID.txt\"; echo result-of-$SWARM_TASK_ID";
    let out = repo
        .swarm_cmd()
        .env("OUT_DIR", &out_dir)
        .env("GIT_DIR", repo.root.join(".git"))
        .env("SWARM_API_KEY", "sk-test-not-for-agents")
        .args(["run", path_arg(&tasks), "--agent", agent])
        .output()
        .unwrap();
    assert_exit(&out, 0);

    let first = std::fs::read_to_string(out_dir.join("prompt-first.txt")).unwrap();
    assert_eq!(first.trim_end(), "Summarise the README.");
    let second = std::fs::read_to_string(out_dir.join("prompt-second.txt")).unwrap();
    assert!(second.starts_with("Combine the findings."), "{second}");
    assert!(
        second.contains("not instructions"),
        "dep results not framed as data:\n{second}"
    );
    assert!(
        second.contains("<result task=\"first\">\nresult-of-first"),
        "{second}"
    );

    let status = status_json(&repo);
    let run_id = status["run"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        task_field(&status, "second", "result"),
        "result-of-second\n"
    );
    for (id, mode) in [("first", "read"), ("second", "read")] {
        let env = lines_of(&out_dir.join(format!("env-{id}.txt")));
        let has = |line: &str| env.iter().any(|l| l == line);
        assert!(has(&format!("SWARM_TASK_ID={id}")), "{id}: {env:?}");
        assert!(has(&format!("SWARM_RUN_ID={run_id}")), "{id}: {env:?}");
        assert!(has(&format!("SWARM_MODE={mode}")), "{id}: {env:?}");
        assert!(has("SWARM_ACTIVE=1"), "{id}: {env:?}");
        assert!(
            !env.iter().any(|l| l.starts_with("GIT_DIR=")),
            "{id}: GIT_DIR reached the agent"
        );
        assert!(
            !env.iter().any(|l| l.contains("sk-test-not-for-agents")),
            "{id}: the API key reached the agent"
        );
    }
}

#[test]
fn prompt_task_without_an_agent_is_refused_and_nothing_runs() {
    let repo = TestRepo::new();
    let marker = outside(&repo, "marker");
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "plain", "run": format!("touch {}", sh(&marker)), "mode": "read"}),
            json!({"id": "ask", "prompt": "Say hello.", "lane": "researcher"}),
        ],
    );
    let out = repo.swarm(&["run", path_arg(&tasks)]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("\"ask\"") && err.contains("no agent"), "{err}");
    assert!(
        err.contains("--agent"),
        "no hint on how to configure one:\n{err}"
    );
    assert!(!marker.exists(), "a task ran");
    assert!(run_dirs(&repo).is_empty(), "a run directory was made");
    assert_eq!(swarm_branches(&repo), "");
}

#[test]
fn nested_swarm_with_swarm_active_does_nothing_and_says_why() {
    let repo = TestRepo::new();
    let marker = outside(&repo, "marker");
    let tasks = task_file(
        &repo,
        &[json!({"id": "t", "run": format!("touch {}", sh(&marker)), "mode": "read"})],
    );
    let out = repo
        .swarm_cmd()
        .env("SWARM_ACTIVE", "1")
        .args(["run", path_arg(&tasks)])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("SWARM_ACTIVE"),
        "does not say why:\n{}",
        stderr(&out)
    );
    assert!(!marker.exists(), "a nested swarm ran a task");
    assert!(run_dirs(&repo).is_empty(), "a nested swarm made a run");
    assert_eq!(swarm_branches(&repo), "");
}
