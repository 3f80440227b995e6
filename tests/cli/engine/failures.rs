//! Failures: retries, the skipped dependents, timeouts, hung attempts, and what `status` and
//! `logs` show of a failed task.

use std::path::Path;

use serde_json::json;

use super::{lines_of, path_arg, run_dirs, sh, task_field, task_file, task_status};
use crate::lifeline::Lifeline;
use crate::{TestRepo, assert_exit, outside, status_json, stdout};

#[test]
fn failing_task_is_retried_then_its_dependents_are_skipped() {
    let repo = TestRepo::new();
    let counter = outside(&repo, "counter");
    let after_marker = outside(&repo, "after-ran");
    let report = outside(&repo, "report.md");
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "flaky", "run": format!("echo try >> {}; echo boom >&2; exit 3", sh(&counter)), "mode": "read"}),
            json!({"id": "after", "run": format!("touch {}", sh(&after_marker)), "deps": ["flaky"], "mode": "read"}),
            json!({"id": "ok", "run": "echo fine", "mode": "read"}),
            json!({"id": "ok2", "run": "cat \"$SWARM_DEPS_DIR/ok.txt\"", "deps": ["ok"], "mode": "read"}),
        ],
    );
    let out = repo.swarm(&[
        "run",
        path_arg(&tasks),
        "--retries",
        "1",
        "--final-out",
        path_arg(&report),
    ]);
    assert_exit(&out, 1);

    assert_eq!(
        lines_of(&counter).len(),
        2,
        "attempts counted by the task itself"
    );
    let runs = run_dirs(&repo);
    assert_eq!(runs.len(), 1);
    let attempts = runs[0].join("attempts");
    assert!(
        attempts.join("flaky.1.log").is_file(),
        "no transcript of attempt 1"
    );
    assert!(
        attempts.join("flaky.2.log").is_file(),
        "no transcript of attempt 2"
    );
    assert!(!attempts.join("flaky.3.log").exists(), "a third attempt");
    let t1 = std::fs::read_to_string(attempts.join("flaky.1.log")).unwrap();
    assert!(t1.contains("boom"), "the transcript keeps stderr:\n{t1}");

    let status = status_json(&repo);
    assert_eq!(task_status(&status, "flaky"), "failed");
    assert_eq!(task_field(&status, "flaky", "attempts"), 2);
    assert_eq!(task_status(&status, "after"), "skipped");
    assert_eq!(task_status(&status, "ok"), "done");
    assert_eq!(task_status(&status, "ok2"), "done");
    assert_eq!(task_field(&status, "ok2", "result"), "fine\n");
    assert!(!after_marker.exists(), "a dependent of a failed task ran");

    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.contains("`flaky` failed after 2 attempts"), "{text}");
    let transcripts: Vec<&str> = text
        .split("transcript `")
        .skip(1)
        .map(|rest| rest.split('`').next().unwrap())
        .collect();
    assert!(
        transcripts
            .iter()
            .any(|p| p.ends_with("flaky.2.log") && Path::new(p).is_file()),
        "the report does not name an existing transcript of the last attempt: {transcripts:?}\n{text}"
    );
    assert!(
        text.contains("`after`"),
        "the report does not list the skipped task:\n{text}"
    );
}

#[test]
fn task_ignoring_sigterm_is_killed_with_its_children_on_timeout() {
    let repo = TestRepo::new();
    let mut lifeline = Lifeline::new(&outside(&repo, "lifelines"), "stuck");
    // The shell and its child each end by themselves after 30 s and leave `survived`, so a
    // swarm that never kills them fails this test instead of hanging it; the child inherits
    // the ignored SIGTERM.
    let survived = outside(&repo, "survived");
    let cmd = format!(
        "{}; trap '' TERM; (sleep 30; touch {s}) & sleep 30; touch {s}",
        lifeline.shell(),
        s = sh(&survived)
    );
    let tasks = task_file(&repo, &[json!({"id": "stuck", "run": cmd, "mode": "read"})]);
    let out = repo.swarm(&[
        "run",
        path_arg(&tasks),
        "--task-timeout",
        "1s",
        "--retries",
        "0",
    ]);
    assert_exit(&out, 1);

    // Every process of the attempt is gone, and not by reaching its end.
    assert_eq!(lifeline.ended(), 1);
    assert!(!survived.exists(), "the task ran to its end: no timeout");

    let status = status_json(&repo);
    assert_eq!(task_status(&status, "stuck"), "failed");
    let error = task_field(&status, "stuck", "error")
        .as_str()
        .unwrap_or_default();
    assert!(error.contains("timed out"), "error: {error}");
    assert!(
        stdout(&out).contains("timed out"),
        "summary:\n{}",
        stdout(&out)
    );
}

#[test]
fn a_silent_attempt_is_stopped_as_hung_and_one_that_keeps_talking_is_not() {
    let repo = TestRepo::new();
    let tasks = task_file(
        &repo,
        &[
            // Says one thing, then nothing for far longer than the stall limit.
            json!({"id": "silent", "run": "echo starting >&2; sleep 20", "mode": "read"}),
            // Takes longer than the stall limit in all, but never goes quiet for that long.
            json!({"id": "talker", "run": "for i in 1 2 3 4 5 6 7 8; do echo tick $i >&2; sleep 0.3; done; echo done", "mode": "read"}),
        ],
    );
    let out = repo.swarm(&[
        "run",
        path_arg(&tasks),
        "--stall-timeout",
        "1s",
        "--retries",
        "0",
    ]);
    assert_exit(&out, 1);
    let status = status_json(&repo);
    assert_eq!(task_status(&status, "talker"), "done");
    assert_eq!(task_status(&status, "silent"), "failed");
    let error = task_field(&status, "silent", "error")
        .as_str()
        .unwrap_or_default();
    assert!(error.contains("hung: no output for 1.0s"), "error: {error}");
}

#[test]
fn status_and_logs_show_a_failed_task() {
    let repo = TestRepo::new();
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "good", "run": "echo ok", "mode": "read"}),
            json!({"id": "broken", "run": "echo broken-output >&2; exit 7", "mode": "read"}),
        ],
    );
    let out = repo.swarm(&["run", path_arg(&tasks), "--retries", "0"]);
    assert_exit(&out, 1);

    let status = status_json(&repo);
    assert_eq!(task_status(&status, "broken"), "failed");
    assert_eq!(task_status(&status, "good"), "done");
    let error = task_field(&status, "broken", "error")
        .as_str()
        .unwrap_or_default();
    assert!(
        error.contains('7'),
        "the error does not give the exit code: {error}"
    );

    let errors = repo.swarm(&["logs", "--errors"]);
    assert_exit(&errors, 0);
    let text = stdout(&errors);
    assert!(
        text.lines()
            .any(|l| l.contains("task_failed") && l.contains("broken")),
        "logs --errors:\n{text}"
    );
    assert!(
        !text.lines().any(|l| l.contains("good")),
        "logs --errors shows a success:\n{text}"
    );
    assert!(text.contains("broken.1.log"), "no transcript path:\n{text}");

    let paths = repo.swarm(&["logs", "--path"]);
    assert_exit(&paths, 0);
    let first = stdout(&paths).lines().next().unwrap_or_default().to_owned();
    assert!(first.ends_with("events.jsonl"), "logs --path: {first}");
    let events = std::fs::read_to_string(&first).unwrap_or_else(|e| panic!("{first}: {e}"));
    assert!(events.contains("task_failed"), "{events}");
}

#[test]
fn a_secret_holding_quotes_and_backslashes_is_in_no_event_and_every_line_parses() {
    let repo = TestRepo::new();
    let secret = r#"ab"cd\ef-123456"#;
    // The secret in a task's command: a shell word in single quotes, which it has none of.
    let printed = format!("printf '%s\\n' '{secret}' >&2");
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "leaky", "run": format!("{printed}; exit 3"), "mode": "read"}),
            json!({"id": "checked", "run": "echo w > w.txt", "check": format!("{printed}; exit 1")}),
        ],
    );

    let out = repo
        .swarm_cmd()
        .env("MY_TOKEN", secret)
        .args(["run", path_arg(&tasks), "--retries", "0"])
        .args(["--progress", "json"])
        .output()
        .unwrap();

    assert_exit(&out, 1);
    let logs = repo.swarm(&["logs", "--json"]);
    assert_exit(&logs, 0);
    let events = std::fs::read_to_string(run_dirs(&repo)[0].join("events.jsonl")).unwrap();
    for (name, text) in [
        ("events.jsonl", &events),
        ("--progress json", &crate::stderr(&out)),
        ("logs --json", &stdout(&logs)),
    ] {
        for shown in [secret, r#"ab\"cd\\ef-123456"#, r"cd\ef", "ef-123456"] {
            assert!(!text.contains(shown), "{name} holds {shown}:\n{text}");
        }
        for line in text.lines() {
            let event: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{name}: {e}: {line}"));
            assert!(event["kind"].is_string(), "{name}: {line}");
        }
    }
    // The check's command is in its failure, the secret hidden.
    assert!(
        events.contains(r"check `printf '%s\\n' '[redacted]' >&2; exit 1` failed"),
        "{events}"
    );
}
