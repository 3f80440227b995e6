//! Sessions: the real CLIs continue a conversation in a later process (and where they keep
//! it), and under swarm an attempt cut short by the timeout is continued by the next one in
//! the same session.

use super::{Cli, Mode, Rig};
use crate::model_server::{Reply, Request};
use crate::{assert_exit, stdout};

/// The user texts of the conversation each model request carried.
fn conversations(rig: &Rig) -> Vec<String> {
    rig.server
        .model_requests()
        .iter()
        .map(Request::user_text)
        .collect()
}

/// Every file under `dir` whose name holds `id`.
fn files_naming(dir: &std::path::Path, id: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if entry.file_name().to_string_lossy().contains(id) {
                found.push(path);
            }
        }
    }
    found
}

#[test]
#[cfg_attr(
    not(has_claude),
    ignore = "needs the claude CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn claude_resume_of_a_named_session_continues_the_conversation() {
    let rig = Rig::start(
        Cli::Claude,
        "claude_resume_of_a_named_session_continues_the_conversation",
        |_, seen| Reply::text(format!("ANSWER {seen}")),
    );
    let session = "6a0c6f2e-4c5d-4f43-9a55-6e0f2a1b7c11";
    let reader = rig.profile_args(Mode::Read);
    let first = reader
        .iter()
        .map(String::as_str)
        .chain(["--session-id", session]);
    let second = reader
        .iter()
        .map(String::as_str)
        .chain(["--resume", session]);

    let one = rig.run_cli(first, "first question ALPHA");
    let two = rig.run_cli(second, "second question BETA");

    assert_exit(&one, 0);
    assert_exit(&two, 0);
    let result: serde_json::Value = serde_json::from_slice(&two.stdout).unwrap();
    assert_eq!(result["session_id"], session, "{}", stdout(&two));
    assert_eq!(result["result"], "ANSWER 1");
    let seen = conversations(&rig);
    assert_eq!(seen.len(), 2);
    assert!(!seen[0].contains("BETA"), "{}", seen[0]);
    // The second process sent the first exchange again, then the new question.
    assert!(seen[1].contains("first question ALPHA"), "{}", seen[1]);
    assert!(seen[1].contains("second question BETA"), "{}", seen[1]);
    let earlier = &rig.server.model_requests()[1].body["messages"];
    assert!(earlier.to_string().contains("ANSWER 0"), "{earlier}");
    for request in rig.server.model_requests() {
        assert_eq!(request.header("x-claude-code-session-id"), Some(session));
    }
    // Kept as `~/.claude/projects/<the directory, each / and . a dash>/<session>.jsonl`.
    let kept = files_naming(&rig.home().join(".claude/projects"), session);
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(kept[0].ends_with(format!("{session}.jsonl")), "{kept:?}");
    rig.assert_no_other_host();
}

#[test]
#[cfg_attr(
    not(has_codex),
    ignore = "needs the codex CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn codex_exec_resume_of_a_thread_continues_the_conversation() {
    let rig = Rig::start(
        Cli::Codex,
        "codex_exec_resume_of_a_thread_continues_the_conversation",
        |_, seen| Reply::text(format!("ANSWER {seen}")),
    );

    let one = rig.run_cli(rig.profile_args(Mode::Read), "first question ALPHA");
    assert_exit(&one, 0);
    let started: serde_json::Value =
        serde_json::from_str(stdout(&one).lines().next().unwrap()).unwrap();
    assert_eq!(started["type"], "thread.started", "{}", stdout(&one));
    let thread = started["thread_id"].as_str().unwrap().to_owned();
    let two = rig.run_cli(
        [
            "exec",
            "resume",
            "--json",
            "--skip-git-repo-check",
            &thread,
            "-",
        ],
        "second question BETA",
    );

    assert_exit(&two, 0);
    let events: Vec<serde_json::Value> = stdout(&two)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events[0]["type"], "thread.started");
    assert_eq!(events[0]["thread_id"], thread.as_str());
    let answer = events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["type"] == "agent_message")
        .unwrap();
    assert_eq!(answer["item"]["text"], "ANSWER 1");
    let seen = conversations(&rig);
    assert_eq!(seen.len(), 2);
    assert!(seen[1].contains("first question ALPHA"), "{}", seen[1]);
    assert!(seen[1].contains("second question BETA"), "{}", seen[1]);
    assert!(
        rig.server.model_requests()[1].body["input"]
            .to_string()
            .contains("ANSWER 0")
    );
    for request in rig.server.model_requests() {
        assert_eq!(request.header("thread-id"), Some(thread.as_str()));
    }
    // Kept as `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl`.
    let kept = files_naming(&rig.codex_home().join("sessions"), &thread);
    assert_eq!(kept.len(), 1, "{kept:?}");
    let name = kept[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("rollout-"), "{name}");
    rig.assert_no_other_host();
}

/// A task whose first attempt meets a model that never answers and is stopped at the timeout;
/// the second attempt continues the first one's session, and the model answers it.
fn attempt_cut_short_is_continued(cli: Cli, test: &str, lane: &str) -> Rig {
    let rig = Rig::start(cli, test, |_, seen| {
        if seen == 0 {
            Reply::Hang
        } else {
            Reply::text("DONE after all")
        }
    });

    let out = rig.run(
        &[
            // The model edits nothing: a writer here says it may end so.
            serde_json::json!({"id": "slow", "prompt": "Take your time. (task: slow)",
                             "lane": lane, "may-be-empty": true}),
        ],
        &["--task-timeout", "5s", "--retries", "1"],
    );

    assert_exit(&out, 0);
    let status = crate::status_json(&rig.repo);
    let task = super::task_status(&status, "slow");
    assert_eq!(task["status"], "done", "{task}");
    assert_eq!(task["attempts"], 2, "{task}");
    assert_eq!(task["result"], "DONE after all", "{task}");
    let seen = conversations(&rig);
    assert_eq!(seen.len(), 2, "{seen:#?}");
    // The second attempt's request carries the first one's prompt, then swarm's word that the
    // work was cut short.
    assert!(
        seen[1].contains("Take your time. (task: slow)"),
        "{}",
        seen[1]
    );
    assert!(seen[1].contains("was cut short"), "{}", seen[1]);
    rig.assert_no_other_host();
    rig
}

#[test]
#[cfg_attr(
    not(has_claude),
    ignore = "needs the claude CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn claude_reader_cut_short_by_the_timeout_is_continued_in_its_session() {
    let rig = attempt_cut_short_is_continued(
        Cli::Claude,
        "claude_reader_cut_short_by_the_timeout_is_continued_in_its_session",
        "analyst",
    );
    let requests = rig.server.model_requests();
    let session = requests[0].header("x-claude-code-session-id");
    assert!(session.is_some());
    assert_eq!(requests[1].header("x-claude-code-session-id"), session);
}

#[test]
#[cfg_attr(
    not(has_claude),
    ignore = "needs the claude CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn claude_writer_cut_short_by_the_timeout_is_continued_in_its_session() {
    attempt_cut_short_is_continued(
        Cli::Claude,
        "claude_writer_cut_short_by_the_timeout_is_continued_in_its_session",
        "coder",
    );
}

#[test]
#[cfg_attr(
    not(has_codex),
    ignore = "needs the codex CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn codex_reader_cut_short_by_the_timeout_is_continued_in_its_thread() {
    let rig = attempt_cut_short_is_continued(
        Cli::Codex,
        "codex_reader_cut_short_by_the_timeout_is_continued_in_its_thread",
        "analyst",
    );
    let requests = rig.server.model_requests();
    let thread = requests[0].header("thread-id");
    assert!(thread.is_some());
    assert_eq!(requests[1].header("thread-id"), thread);
}

/// A writer whose first attempt writes `notes.txt` with `write`, then meets a model that never
/// answers and is stopped at the timeout; the second attempt continues the session in the same
/// checkout, where the file still is, and the file lands.
fn writer_cut_short_after_writing_lands_its_file(cli: Cli, test: &str, write: Reply) {
    let rig = Rig::start(cli, test, move |_, seen| match seen {
        0 => write.clone(),
        1 => Reply::Hang,
        _ => Reply::text("DONE: notes.txt is written"),
    });

    let out = rig.run(
        &[serde_json::json!({"id": "w", "prompt": "Write notes.txt. (task: w)", "lane": "coder"})],
        &["--task-timeout", "5s", "--retries", "1"],
    );

    assert_exit(&out, 0);
    assert_eq!(rig.repo.read("notes.txt"), "noted\n");
    let status = crate::status_json(&rig.repo);
    let task = super::task_status(&status, "w");
    assert_eq!(task["attempts"], 2, "{task}");
    // The continued attempt's request carries the first attempt's conversation: its task and
    // the result of its write.
    let requests = rig.server.model_requests();
    assert_eq!(requests.len(), 3);
    assert!(conversations(&rig)[2].contains("Write notes.txt. (task: w)"));
    assert!(
        !requests[2].tool_results().is_empty(),
        "{:?}",
        requests[2].body
    );
    let report = crate::run_report(&rig.repo);
    assert!(report.contains("| 2 (2 continued) |"), "{report}");
    rig.assert_no_other_host();
}

#[test]
#[cfg_attr(
    not(has_claude),
    ignore = "needs the claude CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn claude_writer_cut_short_after_writing_is_continued_and_its_file_lands() {
    writer_cut_short_after_writing_lands_its_file(
        Cli::Claude,
        "claude_writer_cut_short_after_writing_is_continued_and_its_file_lands",
        Reply::tool_call(
            "Write",
            serde_json::json!({"file_path": "notes.txt", "content": "noted\n"}),
        ),
    );
}

#[test]
#[cfg_attr(
    not(has_codex),
    ignore = "needs the codex CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn codex_writer_cut_short_after_writing_is_continued_and_its_file_lands() {
    writer_cut_short_after_writing_lands_its_file(
        Cli::Codex,
        "codex_writer_cut_short_after_writing_is_continued_and_its_file_lands",
        Reply::freeform(
            "apply_patch",
            "*** Begin Patch\n*** Add File: notes.txt\n+noted\n*** End Patch\n",
        ),
    );
}
