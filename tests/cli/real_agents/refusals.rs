//! What the real CLIs refuse under swarm's profiles, and what swarm makes of it: a reader whose
//! model asks to write (Claude has no writing tool then; Codex's read-only sandbox refuses the
//! command and the patch) ends as its model ends it; a Claude writer writing outside its
//! checkout is denied by `acceptEdits`, and a Codex writer's patch outside its workspace by the
//! sandbox: swarm fails both. Nothing is written either way.

use serde_json::json;

use super::{Cli, Rig, task_status};
use crate::model_server::{Reply, Request};
use crate::{assert_exit, outside, status_json};

/// A reader whose model tries `attempts` in turn, then answers.
fn reader_tries_to_write(cli: Cli, test: &str, attempts: Vec<Reply>) -> Rig {
    let rig = Rig::start(cli, test, move |req: &Request, _| {
        attempts
            .get(req.tool_results().len())
            .cloned()
            .unwrap_or_else(|| Reply::text("REFUSED: I could not write sneaky.txt"))
    });

    let out = rig.run(
        &[
            json!({"id": "peek", "prompt": "Look, then write sneaky.txt. (task: peek)",
                 "lane": "analyst"}),
        ],
        &["--retries", "0", "--task-timeout", "2m"],
    );

    assert_exit(&out, 0);
    let status = status_json(&rig.repo);
    let task = task_status(&status, "peek");
    assert_eq!(task["status"], "done", "{task}");
    assert_eq!(
        task["result"], "REFUSED: I could not write sneaky.txt",
        "{task}"
    );
    assert!(!rig.repo.root.join("sneaky.txt").exists());
    let everywhere = rig.repo.git(&["log", "--all", "--name-only", "--format="]);
    assert!(!everywhere.contains("sneaky.txt"), "{everywhere}");
    rig.assert_no_other_host();
    rig
}

/// The tool results the model got, in order.
fn results(rig: &Rig) -> Vec<String> {
    rig.server
        .model_requests()
        .last()
        .map(Request::tool_results)
        .unwrap_or_default()
}

#[test]
#[cfg_attr(
    not(has_claude),
    ignore = "needs the claude CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn claude_reader_has_no_tool_to_write_with() {
    let rig = reader_tries_to_write(
        Cli::Claude,
        "claude_reader_has_no_tool_to_write_with",
        vec![
            Reply::tool_call(
                "Write",
                json!({"file_path": "sneaky.txt", "content": "sneaky\n"}),
            ),
            Reply::tool_call("Bash", json!({"command": "echo sneaky > sneaky.txt"})),
        ],
    );
    // `--disallowedTools` takes the tools away: the model is not offered them, and a call of
    // one is answered as a call of a tool that does not exist (no permission denial).
    let offered = rig.server.model_requests()[0].tool_names();
    for tool in ["Write", "Edit", "Bash", "NotebookEdit"] {
        assert!(!offered.iter().any(|t| t == tool), "{tool} in {offered:?}");
    }
    let results = results(&rig);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results[0].contains("No such tool available: Write"),
        "{results:?}"
    );
    assert!(
        results[1].contains("No such tool available: Bash"),
        "{results:?}"
    );
    let status = status_json(&rig.repo);
    let transcript = task_status(&status, "peek")["transcript"].clone();
    let transcript = std::fs::read_to_string(transcript.as_str().unwrap()).unwrap();
    assert!(
        transcript.contains(r#""permission_denials":[]"#),
        "{transcript}"
    );
}

#[test]
#[cfg_attr(
    not(has_codex),
    ignore = "needs the codex CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn codex_reader_is_refused_the_command_and_the_patch() {
    let rig = reader_tries_to_write(
        Cli::Codex,
        "codex_reader_is_refused_the_command_and_the_patch",
        vec![
            Reply::tool_call("exec_command", json!({"cmd": "echo sneaky > sneaky.txt"})),
            Reply::freeform(
                "apply_patch",
                "*** Begin Patch\n*** Add File: sneaky.txt\n+sneaky\n*** End Patch\n",
            ),
        ],
    );
    // Confined by swarm, Codex runs without its own sandbox, and the kernel refuses both: a
    // reader may not write its snapshot.
    let results = results(&rig);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results[0].contains("sneaky.txt: Permission denied"),
        "{results:?}"
    );
    assert!(
        results[1].contains("Failed to write file") && results[1].contains("/sneaky.txt"),
        "{results:?}"
    );
}

#[test]
#[cfg_attr(
    not(has_claude),
    ignore = "needs the claude CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn claude_writer_writing_outside_its_checkout_is_denied() {
    let test = "claude_writer_writing_outside_its_checkout_is_denied";
    // The path is known once the rig (and its HOME) is.
    let target = std::sync::Arc::new(std::sync::OnceLock::<String>::new());
    let wanted = std::sync::Arc::clone(&target);
    let rig = Rig::start(Cli::Claude, test, move |req, _| {
        if req.tool_results().is_empty() {
            let path = wanted.get().expect("the target is set before swarm runs");
            Reply::tool_call("Write", json!({"file_path": path, "content": "escaped\n"}))
        } else {
            Reply::text("DENIED: wrote nothing")
        }
    });
    let escape = outside(&rig.repo, "escaped.txt");
    target.set(escape.display().to_string()).unwrap();

    let out = rig.run(
        &[json!({"id": "w", "prompt": "Write outside. (task: w)", "lane": "coder"})],
        &["--retries", "0", "--task-timeout", "2m"],
    );

    assert_exit(&out, 1);
    assert!(!escape.exists());
    let results = results(&rig);
    assert_eq!(
        results,
        [format!(
            "Claude requested permissions to write to {}, but you haven't granted it yet.",
            escape.display()
        )]
    );
    // Claude reports success with the denial in its result's `permission_denials`; swarm
    // fails the writer, naming the tool and its path.
    let status = status_json(&rig.repo);
    let task = task_status(&status, "w");
    assert_eq!(task["status"], "failed", "{task}");
    let error = task["error"].as_str().unwrap_or_default();
    assert!(
        error.contains(&format!("refused a tool use: Write {}", escape.display())),
        "{task}"
    );
    let transcript = std::fs::read_to_string(task["transcript"].as_str().unwrap()).unwrap();
    assert!(
        transcript.contains(r#""permission_denials":[{"tool_name":"Write""#),
        "{transcript}"
    );
    rig.assert_no_other_host();
}

#[test]
#[cfg_attr(
    not(has_codex),
    ignore = "needs the codex CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn codex_writer_patching_outside_its_checkout_is_refused_and_fails() {
    let test = "codex_writer_patching_outside_its_checkout_is_refused_and_fails";
    let target = std::sync::Arc::new(std::sync::OnceLock::<String>::new());
    let wanted = std::sync::Arc::clone(&target);
    let rig = Rig::start(Cli::Codex, test, move |req, _| {
        if req.tool_results().is_empty() {
            let path = wanted.get().expect("the target is set before swarm runs");
            Reply::freeform(
                "apply_patch",
                format!("*** Begin Patch\n*** Add File: {path}\n+escaped\n*** End Patch\n"),
            )
        } else {
            Reply::text("DONE: wrote it")
        }
    });
    let escape = std::path::PathBuf::from(format!("/etc/swarm-escape-{}.txt", std::process::id()));
    target.set(escape.display().to_string()).unwrap();

    let out = rig.run(
        &[json!({"id": "w", "prompt": "Write outside. (task: w)", "lane": "coder"})],
        // Codex's own sandbox refusing: it runs only unconfined (see real_agents::confined).
        &["--retries", "0", "--task-timeout", "2m", "--confine", "off"],
    );

    // Codex refuses the patch and says so only on stderr; its model then claims success.
    assert_exit(&out, 1);
    assert!(!escape.exists());
    assert_eq!(
        results(&rig),
        ["patch rejected: writing outside of the project; rejected by user approval settings"]
    );
    let status = status_json(&rig.repo);
    let task = task_status(&status, "w");
    assert_eq!(task["status"], "failed", "{task}");
    let error = task["error"].as_str().unwrap_or_default();
    assert!(
        error.contains(
            "the agent's CLI refused a tool use: patch rejected: writing outside of the project"
        ),
        "{task}"
    );
    rig.assert_no_other_host();
}
