//! A model that never answers: the real CLI waits on it (Claude Code's own request timeout is
//! 10 minutes), swarm stops it at the task's timeout, leaves none of its processes behind, and
//! keeps what it printed in the attempt's transcript.

use std::sync::{Mutex, mpsc};

use serde_json::json;

use super::{Cli, Rig, processes_of_run, task_status};
use crate::model_server::Reply;
use crate::{assert_exit, run_id, status_json};

/// Runs one reader against a server that never answers, with a timeout of 5 s, and returns
/// the rig and the attempt's transcript.
fn hung_model_is_stopped_at_the_timeout(cli: Cli, test: &str) -> (Rig, String) {
    let (arrived, arrival) = mpsc::channel();
    let arrived = Mutex::new(arrived);
    let rig = Rig::start(cli, test, move |_, _| {
        let _ = arrived.lock().unwrap().send(());
        Reply::Hang
    });

    let out = rig.run(
        &[json!({"id": "stuck", "prompt": "Think hard. (task: stuck)", "lane": "analyst"})],
        &["--task-timeout", "5s", "--retries", "0"],
    );

    assert_exit(&out, 1);
    // The CLI reached the model before it was stopped.
    arrival.try_recv().expect("the CLI sent its request");
    assert_eq!(rig.server.model_requests().len(), 1);
    let left = processes_of_run(&run_id(&rig.repo));
    assert!(left.is_empty(), "processes left behind: {left:#?}");
    let status = status_json(&rig.repo);
    let task = task_status(&status, "stuck");
    assert_eq!(task["status"], "failed", "{task}");
    let error = task["error"].as_str().unwrap_or_default();
    assert!(error.contains("timed out after 5"), "{task}");
    let transcript = std::fs::read_to_string(task["transcript"].as_str().unwrap()).unwrap();
    assert!(
        transcript.contains("--- end: timed out after 5"),
        "{transcript}"
    );
    rig.assert_no_other_host();
    (rig, transcript)
}

/// What the CLI printed on stdout, as the transcript keeps it.
fn stdout_of(transcript: &str) -> &str {
    let (_, rest) = transcript
        .split_once("--- stdout ---\n")
        .unwrap_or_else(|| panic!("no stdout in {transcript}"));
    rest.split("\n--- end: ").next().unwrap_or_default()
}

#[test]
#[cfg_attr(
    not(has_claude),
    ignore = "needs the claude CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn claude_on_a_hung_model_is_stopped_at_the_task_timeout() {
    let (_rig, transcript) = hung_model_is_stopped_at_the_timeout(
        Cli::Claude,
        "claude_on_a_hung_model_is_stopped_at_the_task_timeout",
    );
    // `--output-format json` prints its one object at the end: stopped before it, Claude Code
    // has printed nothing, on stdout or stderr.
    assert_eq!(stdout_of(&transcript).trim(), "", "{transcript}");
}

#[test]
#[cfg_attr(
    not(has_codex),
    ignore = "needs the codex CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn codex_on_a_hung_model_is_stopped_at_the_task_timeout() {
    let (_rig, transcript) = hung_model_is_stopped_at_the_timeout(
        Cli::Codex,
        "codex_on_a_hung_model_is_stopped_at_the_task_timeout",
    );
    // Codex prints its events as they happen: the thread and the turn had started.
    let events: Vec<serde_json::Value> = stdout_of(&transcript)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(types, ["thread.started", "turn.started"], "{transcript}");
    assert!(events[0]["thread_id"].is_string(), "{transcript}");
}
