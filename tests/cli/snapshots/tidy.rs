//! Tidying runs as their user sees it: `swarm runs` saying why each run stands where it stands,
//! `swarm drop` of a start that failed, and what `swarm retry` and `swarm drop` refuse.

use serde_json::json;

use super::{assert_output, swarm, swarm_with, task_file};
use crate::fake_llm::{FakeLlm, Reply};
use crate::{TestRepo, outside, run_id};

/// The endpoint in a config file, so the command line holds no port.
fn config(repo: &TestRepo, name: &str, llm: &FakeLlm) -> String {
    let path = outside(repo, name);
    std::fs::write(&path, format!("api-base = \"{}\"\n", llm.base_url())).unwrap();
    path.to_str().unwrap().to_owned()
}

const WRONG_KEY: (&str, &str) = ("SWARM_API_KEY", "sk-wrong-key-0123");

#[test]
fn runs_say_why_each_run_stands_where_it_stands() {
    let repo = TestRepo::new();
    let tasks = task_file(&repo, &[json!({"id": "w", "run": "echo w > w.txt"})]);
    assert_eq!(swarm(&repo, &["run", &tasks]).code(), Some(0));
    let planner = crate::goal::good_server();
    let planning = config(&repo, "planner.toml", &planner);
    let plan_only = swarm(
        &repo,
        &["--config", &planning, "--goal", "Survey", "--plan-only"],
    );
    assert_eq!(plan_only.code(), Some(0), "{plan_only}");
    let refusing = FakeLlm::start(|_, _| Reply::error(401, "invalid api key"));
    let refused = config(&repo, "refusing.toml", &refusing);
    let out = swarm_with(
        &repo,
        &[WRONG_KEY],
        &["--config", &refused, "--goal", "Say hi"],
    );
    assert_eq!(out.code(), Some(2), "{out}");

    assert_output!("tidy_runs", swarm(&repo, &["runs"]));
    assert_output!("tidy_runs_json", swarm(&repo, &["runs", "--json"]));
    // Only the run the key stopped is left to resume, or to drop.
    assert_output!(
        "tidy_drop_a_refused_start",
        swarm(&repo, &["drop", "--yes"])
    );
    assert_output!("tidy_drop_nothing", swarm(&repo, &["drop", "--yes"]));
    assert_output!("tidy_resume_nothing", swarm(&repo, &["resume"]));
    let finished = run_id(&repo);
    assert_output!(
        "tidy_drop_a_finished_run",
        swarm(&repo, &["drop", &finished, "--yes"])
    );
}

#[test]
fn retry_refuses_a_reader_a_task_that_is_done_or_skipped_and_an_unknown_one() {
    let repo = TestRepo::new();
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "look", "run": "echo looked", "mode": "read"}),
            json!({"id": "edit", "run": "printf 'pub fn one() -> u32 {\\n    2\\n}\\n' > src/lib.rs"}),
            json!({
                "id": "clash",
                "run": format!(
                    "{}; printf 'pub fn one() -> u32 {{\\n    3\\n}}\\n' > src/lib.rs",
                    crate::after_event(&repo, "merged", "edit")
                ),
            }),
            json!({"id": "after", "run": "true", "deps": ["clash"]}),
        ],
    );
    assert_eq!(swarm(&repo, &["run", &tasks, "-j", "3"]).code(), Some(3));
    let before = repo.state();
    let branches = repo.git(&["branch", "--list"]);

    for (name, task) in [
        ("tidy_retry_a_reader", "look"),
        ("tidy_retry_a_done_writer", "edit"),
        ("tidy_retry_a_skipped_task", "after"),
        ("tidy_retry_a_near_name", "clsh"),
    ] {
        let out = swarm(&repo, &["retry", task]);
        assert_eq!(out.code(), Some(2), "{out}");
        assert_output!(name, out);
    }

    assert_eq!(repo.state(), before);
    assert_eq!(repo.git(&["branch", "--list"]), branches);
    let runs: serde_json::Value =
        serde_json::from_str(&swarm(&repo, &["runs", "--json"]).stdout()).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs:#}");
}
