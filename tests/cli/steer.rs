//! `swarm steer`: a message to a task while its run goes, read by the built-in agent before
//! its next request, and first in the prompt of any other agent's next attempt.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

use crate::fake_llm::{FakeLlm, Reply, tool_results};
use crate::{TestRepo, assert_exit, run_id, stderr, wait_until};

/// The run's events of `kind`, as `swarm logs --json` gives them.
fn logged(repo: &TestRepo, kind: &str) -> Vec<Value> {
    let out = repo.swarm(&["logs", "--json"]);
    assert_exit(&out, 0);
    crate::stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["kind"] == kind)
        .collect()
}

#[test]
fn a_message_reaches_the_built_in_agent_in_its_next_request_and_is_recorded() {
    let repo = TestRepo::new();
    let steered = Arc::new(AtomicBool::new(false));
    let go = steered.clone();
    // The first turn's answer waits until the test has steered, so the message comes while
    // the attempt runs.
    let llm = FakeLlm::start(move |req, _| {
        if tool_results(req).is_empty() {
            wait_until("the test to steer", || {
                go.load(Ordering::SeqCst).then_some(())
            });
            Reply::tool_call(
                "w1",
                "write_file",
                json!({"path": "NOTES.md", "content": "colour\n"}),
            )
        } else {
            Reply::text("wrote NOTES.md")
        }
    });
    let tasks = repo.tasks(&[r#"{"id":"notes","prompt":"write NOTES.md","lane":"coder"}"#]);
    let mut swarm = crate::goal::llm_cmd(&repo, &llm)
        .args(["run", tasks.to_str().unwrap(), "--agent", "openai"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    llm.await_requests_from(&mut swarm, |r| !r.is_empty());

    let sent = repo.swarm(&["steer", "notes", "Use British spelling"]);
    steered.store(true, Ordering::SeqCst);
    let out = swarm.wait_with_output().unwrap();

    assert_exit(&sent, 0);
    assert!(
        stderr(&sent).contains("Sent to notes of run"),
        "{}",
        stderr(&sent)
    );
    assert_exit(&out, 0);
    let requests = llm.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let said = |r: &crate::fake_llm::Request| {
        r.messages().iter().any(|m| {
            m["role"] == "user" && m["content"].to_string().contains("Use British spelling")
        })
    };
    assert!(!said(&requests[0]));
    assert!(said(&requests[1]), "{:#?}", requests[1].messages());
    let run = run_id(&repo);
    let transcript = std::fs::read_to_string(
        repo.swarm_dir()
            .join("runs")
            .join(&run)
            .join("attempts/notes.1.log"),
    )
    .unwrap();
    assert!(
        transcript.contains("--- steered: Use British spelling ---"),
        "{transcript}"
    );
    let events = logged(&repo, "steered");
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["task"], "notes");
    assert_eq!(events[0]["detail"]["text"], "Use British spelling");
}

#[test]
fn another_agents_next_attempt_gets_the_message_first_in_its_prompt() {
    let repo = TestRepo::new();
    let prompts = repo.shared.join("prompts");
    let release = repo.shared.join("release");
    // An agent of one's own: it keeps each prompt it is given; its first attempt waits to be
    // let go and fails, its second writes the file.
    let agent = crate::outside(&repo, "agent");
    crate::executable(
        &agent,
        &format!(
            "#!/bin/sh\n{{ cat; echo '---'; }} >> '{p}'\nif [ \"$SWARM_ATTEMPT\" = 1 ]; then\n  for _ in $(seq 6000); do test -e '{r}' && break; sleep 0.01; done\n  exit 1\nfi\necho done > out.txt\necho ok\n",
            p = prompts.display(),
            r = release.display()
        ),
    );
    let tasks = repo.tasks(&[&json!({
        "id": "api",
        "prompt": "Add the endpoint",
        "agent": format!("exec:{}", agent.display()),
    })
    .to_string()]);
    let swarm = repo.spawn(&["run", tasks.to_str().unwrap(), "--retries", "1"]);
    wait_until("the first attempt to start", || {
        std::fs::read_to_string(&prompts)
            .ok()
            .filter(|t| t.contains("---"))
    });

    let sent = repo.swarm(&["steer", "api", "Keep the old endpoint"]);
    std::fs::write(&release, "").unwrap();
    let out = swarm.wait_with_output().unwrap();

    assert_exit(&sent, 0);
    assert_exit(&out, 0);
    let text = std::fs::read_to_string(&prompts).unwrap();
    let given: Vec<&str> = text.split("---\n").filter(|p| !p.is_empty()).collect();
    assert_eq!(given.len(), 2, "{text}");
    assert!(!given[0].contains("Keep the old endpoint"), "{text}");
    assert!(
        given[1].starts_with(
            "A message from the person steering this task (follow it where it fits the task):\nKeep the old endpoint\n"
        ),
        "{text}"
    );
    assert!(given[1].contains("Add the endpoint"), "{text}");
}

#[test]
fn a_command_a_task_that_ended_or_does_not_exist_or_an_empty_message_is_refused() {
    let repo = TestRepo::new();
    let release = repo.shared.join("release");
    let tasks = repo.tasks(&[
        r#"{"id":"a","run":"echo a > a.txt"}"#,
        &json!({
            "id": "cmd",
            "run": format!("for _ in $(seq 6000); do test -e '{}' && break; sleep 0.01; done", release.display()),
            "mode": "read",
            "deps": ["a"],
        })
        .to_string(),
    ]);
    let swarm = repo.spawn(&["run", tasks.to_str().unwrap()]);
    // (Before the run is on the board, `status` has nothing to say.)
    crate::wait_until("cmd to start", || {
        let out = repo.swarm(&["status", "--json"]);
        let status: Value = serde_json::from_slice(&out.stdout).ok()?;
        let cmd = status["tasks"]
            .as_array()?
            .iter()
            .find(|t| t["id"] == "cmd")?
            .clone();
        (cmd["status"] == "running").then_some(())
    });
    let command = repo.swarm(&["steer", "cmd", "faster"]);
    std::fs::write(&release, "").unwrap();
    assert_exit(&swarm.wait_with_output().unwrap(), 0);

    let ended = repo.swarm(&["steer", "a", "faster"]);
    let unknown = repo.swarm(&["steer", "b", "faster"]);
    let empty = repo.swarm(&["steer", "a", "  "]);

    for (out, said) in [
        (
            &command,
            "runs a command, not an agent: no message reaches it",
        ),
        (&ended, "task a of run"),
        (&unknown, "no task \"b\" in run"),
        (&empty, "the message is empty"),
    ] {
        assert_exit(out, 2);
        assert!(stderr(out).contains(said), "{said} not in {}", stderr(out));
    }
    assert!(stderr(&ended).contains("is done: no agent of it will read a message"));
    assert!(logged(&repo, "steered").is_empty());
}
