//! A run as its user sees it: the progress and the summary of `swarm run`, its report,
//! `swarm status` (text and JSON), `swarm logs` and `swarm graph` afterwards, for a run that
//! finished and for one with a failed task and a parked writer; and what these commands say
//! when there is no such run. The runs are ordered by their deps and by what each task waits
//! for, never by time, so their outputs are the same every time.

use serde_json::json;

use super::{AGENT, assert_output, swarm, task_file};
use crate::{TestRepo, outside, run_id};

/// A reader, a prompt task for an `exec:` agent, a writer after the reader, and a reducer
/// that gathers their results.
fn finished_run_tasks(repo: &TestRepo) -> String {
    task_file(
        repo,
        &[
            json!({"id": "scan", "run": "echo 2 files", "mode": "read"}),
            json!({"id": "review", "prompt": "Review the README.", "lane": "reviewer"}),
            json!({
                "id": "edit",
                "run": "printf 'pub fn two() -> u32 {\\n    2\\n}\\n' > src/two.rs",
                "deps": ["scan"],
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
fn a_finished_run_shows_its_summary_report_status_logs_and_graph() {
    let repo = TestRepo::new();
    let tasks = finished_run_tasks(&repo);
    let report = outside(&repo, "report.md");
    let report_arg = report.to_str().unwrap();

    let out = swarm(
        &repo,
        &[
            "run",
            &tasks,
            "-j",
            "1",
            "--agent",
            AGENT,
            "--final-out",
            report_arg,
        ],
    );

    assert_eq!(out.code(), Some(0), "{out}");
    assert_output!("finished_run", out);
    assert_output!("finished_report", std::fs::read_to_string(&report).unwrap());
    let run = run_id(&repo);
    assert_output!("finished_status", swarm(&repo, &["status"]));
    assert_output!("finished_status_json", swarm(&repo, &["status", "--json"]));
    let logs = swarm(&repo, &["logs"]);
    assert_output!("finished_logs", logs);
    let logs_of_run = swarm(&repo, &["logs", &run]);
    assert_eq!(logs_of_run.stdout(), logs.stdout());
    assert_output!("finished_logs_of_the_run", logs_of_run);
    assert_output!("finished_logs_tail", swarm(&repo, &["logs", "--tail", "2"]));
    assert_output!("finished_logs_path", swarm(&repo, &["logs", "--path"]));
    assert_output!("finished_logs_errors", swarm(&repo, &["logs", "--errors"]));
    assert_output!(
        "finished_logs_errors_json",
        swarm(&repo, &["logs", "--errors", "--json"])
    );
    assert_output!(
        "finished_graph",
        swarm(&repo, &["graph", "--format", "dot"])
    );
    let newest = swarm(&repo, &["resume"]);
    assert_eq!(newest.code(), Some(2), "{newest}");
    assert_output!("finished_resume_newest", newest);
    let by_id = swarm(&repo, &["resume", &run]);
    assert_eq!(by_id.code(), Some(2), "{by_id}");
    assert_output!("finished_resume_by_id", by_id);
}

#[test]
fn a_finished_run_prints_its_summary_as_json_with_json() {
    let repo = TestRepo::new();
    let tasks = finished_run_tasks(&repo);

    let out = swarm(
        &repo,
        &["run", &tasks, "-j", "1", "--agent", AGENT, "--json", "-q"],
    );

    assert_eq!(out.code(), Some(0), "{out}");
    assert_output!("finished_run_json", out);
}

/// `a` and `b` change the same line from the same start. `broken` runs once `a` is merged
/// and fails; `b` finishes only once that failure is in the event log (it looks until it is
/// there: a wait for the event, not for a length of time), so it is parked after it; `after`
/// needs `b`, so it is skipped.
fn failed_and_parked_tasks(repo: &TestRepo) -> String {
    let events = repo.swarm_dir().join("runs/$SWARM_RUN_ID/events.jsonl");
    task_file(
        repo,
        &[
            json!({"id": "a", "run": "printf 'pub fn one() -> u32 {\\n    2\\n}\\n' > src/lib.rs"}),
            json!({
                "id": "broken",
                "run": "echo broken-output >&2; exit 7",
                "mode": "read",
                "deps": ["a"],
            }),
            json!({
                "id": "b",
                "run": format!(
                    "until grep -q '\"task_failed\"' \"{}\"; do sleep 0.01; done; \
                     printf 'pub fn one() -> u32 {{\\n    3\\n}}\\n' > src/lib.rs",
                    events.display()
                ),
            }),
            json!({"id": "after", "run": "echo after > after.txt", "deps": ["b"]}),
        ],
    )
}

#[test]
fn a_failed_task_and_a_parked_writer_show_in_the_summary_report_status_and_logs() {
    let repo = TestRepo::new();
    let tasks = failed_and_parked_tasks(&repo);
    let report = outside(&repo, "report.md");

    let out = swarm(
        &repo,
        &[
            "run",
            &tasks,
            "-j",
            "3",
            "--retries",
            "0",
            "--final-out",
            report.to_str().unwrap(),
        ],
    );

    assert_eq!(out.code(), Some(3), "{out}");
    assert_output!("failed_and_parked_run", out);
    assert_output!(
        "failed_and_parked_report",
        std::fs::read_to_string(&report).unwrap()
    );
    assert_output!("failed_and_parked_status", swarm(&repo, &["status"]));
    assert_output!("failed_and_parked_logs", swarm(&repo, &["logs"]));
    assert_output!(
        "failed_and_parked_logs_errors",
        swarm(&repo, &["logs", "--errors"])
    );
    assert_output!("failed_and_parked_graph", swarm(&repo, &["graph"]));
    assert_output!(
        "failed_and_parked_show_parked",
        swarm(&repo, &["show", "b"])
    );
    assert_output!(
        "failed_and_parked_gc_dry_run_json",
        swarm(&repo, &["gc", "--dry-run", "--json"])
    );
    let resumed = swarm(&repo, &["resume", &run_id(&repo)]);
    assert_eq!(resumed.code(), Some(2), "{resumed}");
    assert_output!("failed_and_parked_resume_by_id", resumed);
}

#[test]
fn a_missing_run_is_a_usage_error_for_status_logs_graph_and_resume() {
    let repo = TestRepo::new();
    let cases: [(&str, &[&str]); 8] = [
        ("no_runs_status", &["status"]),
        ("no_runs_logs", &["logs"]),
        ("no_runs_graph", &["graph"]),
        ("no_runs_resume", &["resume"]),
        ("unknown_run_status", &["status", "NOPE"]),
        ("unknown_run_logs", &["logs", "NOPE"]),
        ("unknown_run_graph", &["graph", "NOPE"]),
        ("unknown_run_resume", &["resume", "NOPE"]),
    ];
    for (name, args) in cases {
        let out = swarm(&repo, args);
        assert_eq!(out.code(), Some(2), "{name}: {out}");
        assert_output!(name, out);
    }
}
