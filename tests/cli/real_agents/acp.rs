//! The real codex-acp (`@zed-industries/codex-acp`, pinned in `.ci/agents`) under swarm's `acp`
//! agent, against the model server: a reader's answer is its result, and a writer's patch is
//! merged and landed. codex-acp ships no bubblewrap; the one of the `@openai/codex` package
//! goes first on PATH.

use std::path::PathBuf;

use serde_json::json;

use super::{Cli, Rig, processes_of_run, task_status};
use crate::model_server::Reply;
use crate::{assert_exit, run_id, status_json};

/// The directory of the bubblewrap the `@openai/codex` package carries (for x86-64 Linux, where
/// CI runs): codex-acp looks for `bwrap` on PATH.
fn bwrap_dir(rig: &Rig) -> PathBuf {
    rig.bin
        .join("../@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/codex-resources")
}

/// swarm with a profile for codex-acp (as `acp:codex-acp` but for the state it writes),
/// codex-acp's directory and the bubblewrap on PATH.
fn run_acp(rig: &Rig, task: &serde_json::Value) -> std::process::Output {
    run_acp_with(rig, task, "2m")
}

fn run_acp_with(rig: &Rig, task: &serde_json::Value, timeout: &str) -> std::process::Output {
    let file = rig.repo.tasks(&[&task.to_string()]);
    let mut path = bwrap_dir(rig).into_os_string();
    path.push(":");
    path.push(rig.env().into_iter().find(|(k, _)| *k == "PATH").unwrap().1);
    // codex-acp keeps its state in CODEX_HOME: confined, it may write there because its
    // profile says so, as a user's profile would.
    let config = crate::outside(&rig.repo, "codex-acp.toml");
    std::fs::write(
        &config,
        "[agents.codex-acp]\nkind = \"acp\"\ncommand = \"codex-acp\"\nwrites = [\"$CODEX_HOME/\"]\n",
    )
    .unwrap();
    rig.swarm_cmd()
        .env("PATH", path)
        .args(["--config", config.to_str().unwrap()])
        .args(["run", file.to_str().unwrap(), "--agent", "codex-acp"])
        .args(["--retries", "0", "--task-timeout", timeout])
        .output()
        .expect("running swarm")
}

/// The rig for Codex, with codex-acp installed beside it: a test that comes here needs it
/// (where it is missing the test is ignored, but under CI), so its absence fails the test.
fn rig(
    test: &str,
    script: impl Fn(&crate::model_server::Request, usize) -> Reply + Send + Sync + 'static,
) -> Rig {
    let rig = Rig::start(Cli::Codex, test, script);
    assert!(
        rig.bin.join("codex-acp").exists(),
        "{test} needs codex-acp beside codex in {}: run `npm ci --prefix .ci/agents --no-audit --no-fund` first",
        rig.bin.display()
    );
    rig
}

#[test]
#[cfg_attr(
    not(has_codex_acp),
    ignore = "needs codex-acp and the codex CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn codex_acp_reader_answers_through_swarm() {
    let rig = rig("codex_acp_reader_answers_through_swarm", |_, _| {
        Reply::text("ANSWER: the repository is a demo")
    });
    let out = run_acp(
        &rig,
        &json!({"id": "r", "prompt": "Say what this is. (task: r)", "lane": "analyst"}),
    );
    assert_exit(&out, 0);
    let status = status_json(&rig.repo);
    let task = task_status(&status, "r");
    assert_eq!(task["result"], "ANSWER: the repository is a demo", "{task}");
    rig.assert_no_other_host();
}

#[test]
#[cfg_attr(
    not(has_codex_acp),
    ignore = "needs codex-acp and the codex CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn codex_acp_writer_patch_is_merged_and_landed() {
    let rig = rig("codex_acp_writer_patch_is_merged_and_landed", |req, _| {
        if req.tool_results().is_empty() {
            Reply::freeform(
                "apply_patch",
                "*** Begin Patch\n*** Add File: acp.txt\n+written through acp\n*** End Patch\n",
            )
        } else {
            Reply::text("DONE: wrote acp.txt")
        }
    });
    let out = run_acp(
        &rig,
        &json!({"id": "w", "prompt": "Write acp.txt. (task: w)", "lane": "coder"}),
    );
    assert_exit(&out, 0);
    assert_eq!(rig.repo.read("acp.txt"), "written through acp\n");
    let status = status_json(&rig.repo);
    let task = task_status(&status, "w");
    assert_eq!(task["result"], "DONE: wrote acp.txt", "{task}");
    // codex-acp starts sessions read-only: swarm moves a writer to `auto`.
    let transcript = std::fs::read_to_string(task["transcript"].as_str().unwrap()).unwrap();
    assert!(
        transcript.contains(r#""method":"session/set_mode","params":{"modeId":"auto""#),
        "{transcript}"
    );
    // Its tokens come only in `usage_update`s.
    assert!(
        transcript.contains(r#""sessionUpdate":"usage_update""#),
        "{transcript}"
    );
    assert!(task["tokens"].as_u64().unwrap() > 0, "{task}");
    rig.assert_no_other_host();
}

#[test]
#[cfg_attr(
    not(has_codex_acp),
    ignore = "needs codex-acp and the codex CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn codex_acp_on_a_hung_model_is_cancelled_then_killed_with_its_group() {
    let (arrived, arrival) = std::sync::mpsc::channel();
    let arrived = std::sync::Mutex::new(arrived);
    let rig = rig(
        "codex_acp_on_a_hung_model_is_cancelled_then_killed_with_its_group",
        move |_, _| {
            let _ = arrived.lock().unwrap().send(());
            Reply::Hang
        },
    );
    let out = run_acp_with(
        &rig,
        &json!({"id": "stuck", "prompt": "Think hard. (task: stuck)", "lane": "analyst"}),
        // Long enough for the npm wrapper and codex-acp to start on a loaded machine and reach
        // the model (a timeout before that would cut it short at its start instead).
        "20s",
    );
    assert_exit(&out, 1);
    arrival.try_recv().expect("codex-acp sent its request");
    // The npm wrapper and the native codex-acp under it are gone: the group was killed.
    let left = processes_of_run(&run_id(&rig.repo));
    assert!(left.is_empty(), "processes left behind: {left:#?}");
    let status = status_json(&rig.repo);
    let task = task_status(&status, "stuck");
    let error = task["error"].as_str().unwrap_or_default();
    assert!(error.contains("timed out after 20"), "{task}");
    let transcript = std::fs::read_to_string(task["transcript"].as_str().unwrap()).unwrap();
    assert!(
        transcript.contains(r#"> {"jsonrpc":"2.0","method":"session/cancel""#),
        "{transcript}"
    );
    rig.assert_no_other_host();
}
