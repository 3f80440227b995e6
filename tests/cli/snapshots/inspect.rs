//! Looking inside runs: `swarm runs`, `swarm show TASK` and `swarm status` (text and JSON), and
//! the JSON of every other command (`gc`, `graph`, `logs --path`, the queue), or the error of
//! one that has none (`completions`). The run is made by `run` tasks and an `exec:` agent, one
//! task at a time, so its outputs are the same every time but for what the filters hide.

use std::io::BufReader;

use serde_json::{Value, json};

use super::{AGENT, assert_output, swarm, task_file};
use crate::{TestRepo, read_until};

/// A titled reader, a prompt task for the `exec:` agent, a titled writer that declares its
/// file, a task that fails every attempt, and a reducer after the first three.
fn tasks(repo: &TestRepo) -> String {
    task_file(
        repo,
        &[
            json!({"id": "scan", "title": "Count the files", "run": "echo 2 files", "mode": "read"}),
            json!({"id": "review", "prompt": "Review the README.", "lane": "reviewer"}),
            json!({
                "id": "edit",
                "title": "Add two()",
                "run": "printf 'pub fn two() -> u32 {\\n    2\\n}\\n' > src/two.rs",
                "deps": ["scan"],
                "files": ["src/two.rs"],
            }),
            json!({
                "id": "broken",
                "title": "Fail loudly",
                "run": "echo 'could not reach the mirror' >&2; exit 7",
                "mode": "read",
            }),
            json!({
                "id": "report",
                "run": "cat \"$SWARM_DEPS_DIR\"/*",
                "lane": "reducer",
                "mode": "read",
                "deps": ["scan", "review", "edit"],
            }),
        ],
    )
}

#[test]
fn runs_show_and_status_describe_a_finished_run_as_text_and_json() {
    let repo = TestRepo::new();
    let tasks = tasks(&repo);
    let out = swarm(
        &repo,
        &["run", &tasks, "-j", "1", "--retries", "1", "--agent", AGENT],
    );
    assert_eq!(out.code(), Some(1), "{out}");

    assert_output!("inspect_runs", swarm(&repo, &["runs"]));
    assert_output!("inspect_runs_json", swarm(&repo, &["runs", "--json"]));
    assert_output!("inspect_show_writer", swarm(&repo, &["show", "edit"]));
    assert_output!(
        "inspect_show_writer_json",
        swarm(&repo, &["show", "edit", "--json"])
    );
    assert_output!("inspect_show_failed", swarm(&repo, &["show", "broken"]));
    assert_output!(
        "inspect_show_failed_json",
        swarm(&repo, &["show", "broken", "--json"])
    );
    assert_output!("inspect_show_prompt", swarm(&repo, &["show", "review"]));
    assert_output!("inspect_status", swarm(&repo, &["status"]));
    assert_output!("inspect_status_json", swarm(&repo, &["status", "--json"]));
    assert_output!("inspect_graph_json", swarm(&repo, &["graph", "--json"]));
    assert_output!(
        "inspect_logs_path_json",
        swarm(&repo, &["logs", "--path", "--errors", "--json"])
    );
    assert_output!(
        "inspect_gc_dry_run_json",
        swarm(&repo, &["gc", "--dry-run", "--json"])
    );
}

#[test]
fn a_task_named_where_a_run_or_another_task_is_expected_gets_a_hint() {
    let repo = TestRepo::new();
    let tasks = tasks(&repo);
    let out = swarm(
        &repo,
        &["run", &tasks, "-j", "1", "--retries", "0", "--agent", AGENT],
    );
    assert_eq!(out.code(), Some(1), "{out}");
    let run = crate::run_id(&repo);

    let cases: [(&str, &[&str]); 5] = [
        ("inspect_logs_of_a_task", &["logs", "edit"]),
        ("inspect_status_of_a_task", &["status", "scan"]),
        ("inspect_show_a_near_name", &["show", "eddit"]),
        ("inspect_show_an_unknown_task", &["show", "nothing-like-it"]),
        ("inspect_show_a_run", &["show", &run]),
    ];
    for (name, args) in cases {
        let out = swarm(&repo, args);
        assert_eq!(out.code(), Some(2), "{name}: {out}");
        assert_output!(name, out);
    }
}

#[test]
fn runs_are_listed_newest_first_and_show_finds_a_task_of_an_older_run() {
    let repo = TestRepo::new();
    let first = task_file(
        &repo,
        &[json!({"id": "scan", "run": "echo 2 files", "mode": "read"})],
    );
    assert_eq!(swarm(&repo, &["run", &first]).code(), Some(0));
    let older = crate::run_id(&repo);
    let second = task_file(
        &repo,
        &[json!({"id": "count", "run": "echo 3", "mode": "read"})],
    );
    assert_eq!(swarm(&repo, &["run", &second]).code(), Some(0));
    let newer = crate::run_id(&repo);

    let runs: Value = serde_json::from_str(&swarm(&repo, &["runs", "--json"]).stdout()).unwrap();
    let ids: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [newer.as_str(), older.as_str()]);

    let out = swarm(&repo, &["show", "scan"]);
    assert_eq!(out.code(), Some(2), "{out}");
    assert_output!("inspect_show_a_task_of_an_older_run", out);
    let out = swarm(&repo, &["show", "scan", "--run", &older, "--json"]);
    assert_eq!(out.code(), Some(0), "{out}");
    let shown: Value = serde_json::from_str(&out.stdout()).unwrap();
    assert_eq!(
        (shown["run"].as_str(), shown["result"].as_str()),
        (Some(older.as_str()), Some("2 files\n"))
    );
}

#[test]
fn no_runs_yet_is_said_and_is_an_empty_array_in_json() {
    let repo = TestRepo::new();
    assert_output!("inspect_runs_none", swarm(&repo, &["runs"]));
    assert_output!("inspect_runs_none_json", swarm(&repo, &["runs", "--json"]));
}

#[test]
fn a_running_run_is_running_in_runs_and_status() {
    let repo = TestRepo::new();
    let release = crate::outside(&repo, "release");
    let tasks = task_file(
        &repo,
        &[json!({
            "id": "wait",
            "title": "Wait for the test",
            "run": format!("until [ -e '{}' ]; do sleep 0.01; done", release.display()),
            "mode": "read",
        })],
    );
    let mut child = repo.spawn(&["run", &tasks]);
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    read_until(&mut stderr, "Started wait");

    let runs = swarm(&repo, &["runs"]);
    let status = swarm(&repo, &["status"]);
    let show = swarm(&repo, &["show", "wait", "--json"]);
    std::fs::write(&release, "").unwrap();
    let done = child.wait_with_output().unwrap();
    assert_eq!(done.status.code(), Some(0));

    assert_output!("inspect_runs_while_running", runs);
    assert_output!("inspect_status_while_running", status);
    let shown: Value = serde_json::from_str(&show.stdout()).unwrap();
    assert_eq!(shown["status"], "running");
    let attempt = &shown["attempts"][0];
    assert_eq!(attempt["finished_at"], Value::Null, "{shown}");
    assert!(attempt["duration_ms"].is_u64(), "{shown}");
}

#[test]
fn every_command_honours_json_or_says_it_has_none() {
    let repo = TestRepo::new();
    assert_output!(
        "inspect_queue_run_empty_json",
        swarm(&repo, &["queue", "run", "--json"])
    );
    assert_output!(
        "inspect_queue_add",
        swarm(&repo, &["queue", "add", "Upgrade", "the", "HTTP", "client"])
    );
    assert_output!(
        "inspect_queue_add_json",
        swarm(&repo, &["queue", "add", "--json", "Add retries"])
    );
    assert_output!(
        "inspect_queue_list_json",
        swarm(&repo, &["queue", "list", "--json"])
    );
    assert_output!(
        "inspect_queue_rm_json",
        swarm(&repo, &["queue", "rm", "2", "--json"])
    );
    // A branch of the user's under `swarm/`: gc keeps it and says why.
    repo.git(&["branch", "swarm/mine"]);
    assert_output!("inspect_gc_json", swarm(&repo, &["gc", "--json"]));
    let tasks = tasks(&repo);
    assert_output!(
        "inspect_graph_of_a_file_json",
        swarm(&repo, &["graph", &tasks, "--json"])
    );

    let errors: [(&str, &[&str]); 2] = [
        (
            "inspect_completions_json",
            &["completions", "bash", "--json"],
        ),
        (
            "inspect_graph_format_and_json",
            &["graph", &tasks, "--format", "mermaid", "--json"],
        ),
    ];
    for (name, args) in errors {
        let out = swarm(&repo, args);
        assert_eq!(out.code(), Some(2), "{name}: {out}");
        assert_output!(name, out);
    }
}
