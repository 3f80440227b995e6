//! A plan of two readers, a writer and a reducer, each a prompt task for the real CLI: the
//! writer's file lands in the checkout, and the report has every task's tokens (and Claude's
//! cost).

use serde_json::json;

use super::{Cli, Rig, task_of, task_status};
use crate::model_server::{INPUT_TOKENS, OUTPUT_TOKENS, Reply};
use crate::{assert_exit, outside, status_json};

const NOTES: &str = "Notes from the writer.\nA second line.\n";

/// The CLI's own tool for writing `notes.txt`: Claude's `Write`, Codex's `apply_patch` (a
/// freeform tool taking the patch itself).
fn write_notes(cli: Cli) -> Reply {
    match cli {
        Cli::Claude => {
            Reply::tool_call("Write", json!({"file_path": "notes.txt", "content": NOTES}))
        }
        Cli::Codex => {
            let added: String = NOTES.lines().map(|l| ["+", l, "\n"].concat()).collect();
            Reply::freeform(
                "apply_patch",
                format!("*** Begin Patch\n*** Add File: notes.txt\n{added}*** End Patch\n"),
            )
        }
    }
}

fn plan_lands_the_writer_and_reports_tokens(cli: Cli, test: &str) -> (Rig, String) {
    let rig = Rig::start(cli, test, move |req, _| match task_of(req).as_str() {
        "look" => Reply::text("LOOK: a README and src/lib.rs"),
        "judge" => Reply::text("JUDGE: small and tidy"),
        "write" if req.tool_results().is_empty() => write_notes(cli),
        "write" => Reply::text("WROTE notes.txt"),
        "sum" => Reply::text("SUMMARY: looked, judged and wrote the notes"),
        other => panic!("no reply scripted for task {other:?}:\n{}", req.user_text()),
    });
    let report = outside(&rig.repo, "report.md");

    let out = rig.run(
        &[
            json!({"id": "look", "prompt": "Look around the repository. (task: look)",
                   "lane": "researcher"}),
            json!({"id": "judge", "prompt": "Judge the code. (task: judge)", "lane": "reviewer"}),
            json!({"id": "write", "prompt": "Write notes.txt. (task: write)", "lane": "coder",
                   "files": ["notes.txt"]}),
            json!({"id": "sum", "prompt": "Sum up. (task: sum)", "lane": "reducer",
                   "deps": ["look", "judge", "write"]}),
        ],
        &[
            "--final-out",
            report.to_str().unwrap(),
            "--retries",
            "0",
            "--task-timeout",
            "2m",
        ],
    );

    assert_exit(&out, 0);
    assert_eq!(rig.repo.read("notes.txt"), NOTES);
    let report_text = std::fs::read_to_string(&report).unwrap();
    assert!(
        report_text.starts_with("SUMMARY: looked, judged and wrote the notes"),
        "{report_text}"
    );
    // One request per reader and the reducer, two for the writer (its tool call, then its
    // answer), each reporting the same tokens.
    let per_request = INPUT_TOKENS + OUTPUT_TOKENS;
    let status = status_json(&rig.repo);
    for (id, requests) in [("look", 1), ("judge", 1), ("write", 2), ("sum", 1)] {
        let task = task_status(&status, id);
        assert_eq!(task["status"], "done", "{task}");
        assert_eq!(task["tokens"], per_request * requests, "{task}");
    }
    assert!(
        report_text.contains(&format!(
            "tokens: {} by the tasks (0 of their {} prompt tokens cached: 0 %); cost of the tasks: ",
            per_request * 5,
            INPUT_TOKENS * 5
        )),
        "{report_text}"
    );
    let requests = rig.server.model_requests();
    assert_eq!(requests.len(), 5, "{requests:#?}");
    // The reducer saw what each of its deps answered.
    let reducer = requests.iter().find(|r| task_of(r) == "sum").unwrap();
    for answer in ["LOOK: a README", "JUDGE: small and tidy", "WROTE notes.txt"] {
        assert!(reducer.user_text().contains(answer), "{answer}");
    }
    rig.assert_no_other_host();
    (rig, report_text)
}

#[test]
#[cfg_attr(
    not(has_claude),
    ignore = "needs the claude CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn claude_plan_of_readers_writer_and_reducer_lands_the_file_with_tokens_and_cost() {
    let (rig, text) = plan_lands_the_writer_and_reports_tokens(
        Cli::Claude,
        "claude_plan_of_readers_writer_and_reducer_lands_the_file_with_tokens_and_cost",
    );
    let status = status_json(&rig.repo);
    for id in ["look", "judge", "write", "sum"] {
        let cost = task_status(&status, id)["cost"].as_f64();
        assert!(cost.is_some_and(|c| c > 0.0), "{id}: {cost:?}");
    }
    assert!(!text.contains("cost of the tasks: unknown"), "{text}");
    let writer = rig
        .server
        .model_requests()
        .into_iter()
        .rev()
        .find(|r| task_of(r) == "write")
        .unwrap();
    let results = writer.tool_results();
    assert!(
        results[0].starts_with("File created successfully at: notes.txt"),
        "{results:?}"
    );
}

#[test]
#[cfg_attr(
    not(has_codex),
    ignore = "needs the codex CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn codex_plan_of_readers_writer_and_reducer_lands_the_file_with_tokens() {
    let (rig, text) = plan_lands_the_writer_and_reports_tokens(
        Cli::Codex,
        "codex_plan_of_readers_writer_and_reducer_lands_the_file_with_tokens",
    );
    assert!(text.contains("cost of the tasks: unknown."), "{text}");
    let writer = rig
        .server
        .model_requests()
        .into_iter()
        .rev()
        .find(|r| task_of(r) == "write")
        .unwrap();
    let results = writer.tool_results();
    assert!(
        results[0].contains("Success. Updated the following files:\nA notes.txt"),
        "{results:?}"
    );
}
