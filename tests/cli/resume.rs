//! `swarm resume` and the options a run keeps in the board: boards older swarms wrote still
//! resume with their options, and a record a newer swarm wrote is refused, not misread.

use crate::{TestRepo, assert_exit, outside, status_json, stderr, stdout};

/// A finished run of one writer, left with its integration branch (`--land none`); its id.
fn finished_run(repo: &TestRepo) -> String {
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo w > w.txt"}"#]);
    let out = repo.swarm(&["run", tasks.to_str().unwrap(), "--land", "none"]);
    assert_exit(&out, 0);
    status_json(repo)["run"]["id"]
        .as_str()
        .expect("a run id")
        .to_owned()
}

/// Makes the run interrupted, with `options` as the stored text of its options.
fn store_options(repo: &TestRepo, run: &str, options: &str) {
    let db = rusqlite::Connection::open(repo.swarm_dir().join("board.db")).unwrap();
    db.execute(
        "UPDATE runs SET status = 'interrupted', exit_code = NULL, finished_at = NULL, options = ?2 WHERE id = ?1",
        [run, options],
    )
    .unwrap();
}

fn stored_options(repo: &TestRepo, run: &str) -> serde_json::Value {
    let db = rusqlite::Connection::open(repo.swarm_dir().join("board.db")).unwrap();
    let text: String = db
        .query_row("SELECT options FROM runs WHERE id = ?1", [run], |r| {
            r.get(0)
        })
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_run_whose_options_have_no_version_resumes_with_them() {
    let repo = TestRepo::new();
    let run = finished_run(&repo);
    let report = outside(&repo, "report.md");
    // The shape swarm stored before the record had a version.
    let old = serde_json::json!({
        "agent": null, "allow_program": [], "api_base": null, "base": null,
        "budget_tokens": null, "check": null, "final_out": report, "final_out_dir": null,
        "jobs": 2, "land": "branch", "max_task_tokens": null, "max_turns": null,
        "max_writers": null, "model": null, "on_escalate": null, "request_timeout": null,
        "resolve_conflicts": false, "retries": null, "stall_timeout": null,
        "task_timeout": null, "worktree_dir": null,
    });
    store_options(&repo, &run, &old.to_string());

    let out = repo.swarm(&["resume", &run]);
    assert_exit(&out, 0);
    // `land = branch` and `final_out` came from the stored options.
    assert!(
        stdout(&out).contains(&format!("The merged work is on `swarm/{run}`")),
        "{}",
        stdout(&out)
    );
    assert!(std::fs::read_to_string(&report).is_ok());
    let mut now = stored_options(&repo, &run);
    assert_eq!(now["version"], 1);
    now.as_object_mut().unwrap().remove("version");
    // As they were, with the options added since unset.
    let mut expected = old.clone();
    expected["endpoint_wait"] = serde_json::Value::Null;
    expected["fresh_retries"] = false.into();
    expected["allow_no_change"] = false.into();
    expected["kill_grace"] = serde_json::Value::Null;
    expected["include"] = serde_json::json!([]);
    expected["setup"] = serde_json::Value::Null;
    expected["gate"] = serde_json::Value::Null;
    expected["cache"] = serde_json::json!([]);
    expected["cache_key"] = serde_json::json!([]);
    expected["remote"] = serde_json::Value::Null;
    expected["report_format"] = serde_json::Value::Null;
    expected["web"] = false.into();
    for key in [
        "max_children",
        "max_depth",
        "max_spawned",
        "spawns_per_minute",
        "spawning",
        "transcript_cap",
        "confine",
        "confine_net",
        "mergiraf",
        "forecast",
        "forecast_interval",
        "plan_answer_tokens",
        "turn_answer_tokens",
        "price",
    ] {
        expected[key] = serde_json::Value::Null;
    }
    for key in ["read_deny", "read_allow", "write_allow", "conflicts"] {
        expected[key] = serde_json::json!([]);
    }
    assert_eq!(now, expected);
    // `status --json` shows them so too, without the record's version.
    assert_eq!(status_json(&repo)["run"]["options"], expected);
}

#[test]
fn a_run_whose_options_a_newer_swarm_stored_is_refused_and_left_as_it_was() {
    let repo = TestRepo::new();
    let run = finished_run(&repo);
    let newer = r#"{"version":99,"jobs":2}"#;
    store_options(&repo, &run, newer);

    let out = repo.swarm(&["resume", &run]);
    assert_exit(&out, 1);
    let board = repo.swarm_dir().join("board.db");
    assert_eq!(
        stderr(&out),
        format!(
            "error: run {run} in the board {}\ncaused by: the stored options have version 99, newer than this swarm knows (1); use a newer swarm\n",
            board.display()
        )
    );
    assert_eq!(
        stored_options(&repo, &run),
        serde_json::json!({"version": 99, "jobs": 2})
    );
    assert_eq!(status_json(&repo)["run"]["status"], "interrupted");
    assert_eq!(status_json(&repo)["run"]["options"]["version"], 99);
}

#[test]
fn after_plan_only_there_is_nothing_to_resume() {
    let repo = TestRepo::new();
    let llm = crate::goal::good_server();
    let out = repo
        .swarm_cmd()
        .env("SWARM_API_BASE", llm.base_url())
        .args(["--goal", "Survey the repository", "--plan-only"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let before = repo.state();

    let out = repo.swarm(&["resume"]);

    assert_exit(&out, 2);
    assert_eq!(
        stderr(&out),
        "error: there is no unfinished run to resume\n"
    );
    assert_eq!(repo.state(), before);
    let runs = repo.swarm(&["runs", "--json"]);
    let runs: serde_json::Value = serde_json::from_slice(&runs.stdout).unwrap();
    assert_eq!(runs[0]["status"], "finished", "{runs:#}");
    assert_eq!(runs[0]["reason"], "planned only", "{runs:#}");
}
