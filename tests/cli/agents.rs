//! Coding-agent CLIs as agents (the fake `claude` and `codex` of `fake_agents`), usage limits,
//! and configuration files.

use std::path::PathBuf;
use std::process::Output;
use std::time::{Duration, Instant};

use crate::fake_agents::FakeAgents;
use crate::lifeline::Lifeline;
use crate::{TestRepo, assert_exit, outside, status_json, stderr, stdout};

/// `swarm run TASKS --agent claude EXTRA…` with the fakes.
fn run_claude(
    repo: &TestRepo,
    fakes: &FakeAgents,
    tasks: &std::path::Path,
    extra: &[&str],
) -> Output {
    let tasks = tasks.to_str().unwrap();
    let args: Vec<&str> = ["run", tasks, "--agent", "claude"]
        .into_iter()
        .chain(extra.iter().copied())
        .collect();
    fakes.swarm(repo, &args)
}

/// Two readers, two writers on different files, and a reducer, all prompt tasks.
fn mixed_tasks(repo: &TestRepo) -> PathBuf {
    repo.tasks(&[
        r#"{"id":"look","prompt":"Look around.\nRESULT: the code is small","lane":"researcher"}"#,
        r#"{"id":"judge","prompt":"Review it.\nRESULT: looks fine","lane":"reviewer"}"#,
        r#"{"id":"one","prompt":"FILE: one.txt\nEDIT: first change","lane":"coder"}"#,
        r#"{"id":"two","prompt":"FILE: two.txt\nEDIT: second change","lane":"coder"}"#,
        r#"{"id":"sum","prompt":"Sum up.\nRESULT: all done","deps":["look","judge","one","two"],"lane":"reducer"}"#,
    ])
}

/// Runs the mixed plan with `agent`: both writers' edits are merged and the reducer's answer
/// leads the report, which is returned.
fn run_mixed(repo: &TestRepo, agent: &str) -> (FakeAgents, String) {
    let fakes = FakeAgents::beside(repo);
    let tasks = mixed_tasks(repo);
    let report = outside(repo, "report.md");
    let out = fakes.swarm(
        repo,
        &[
            "run",
            tasks.to_str().unwrap(),
            "--agent",
            agent,
            "--final-out",
            report.to_str().unwrap(),
        ],
    );
    assert_exit(&out, 0);
    assert_eq!(repo.read("one.txt"), "first change\n");
    assert_eq!(repo.read("two.txt"), "second change\n");
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.starts_with("all done"), "{text}");
    (fakes, text)
}

#[test]
fn fake_claude_readers_and_writers_merge_and_report_tokens_and_cost() {
    let repo = TestRepo::new();
    let (fakes, text) = run_mixed(&repo, "claude");
    // Each of the five tasks reports 150 tokens, 60 of its 100 prompt tokens read from the
    // cache, and $0.0125.
    assert!(text.contains("| 150 | 60 (60 %) | $0.0125 |"), "{text}");
    assert!(
        text.contains(
            "tokens: 750 by the tasks (300 of their 500 prompt tokens cached: 60 %); cost of the tasks: $0.0625."
        ),
        "{text}"
    );
    let calls = fakes.invocations("claude");
    assert_eq!(calls.len(), 5);
    let writers = calls.iter().filter(|c| c["writer"] == true).count();
    assert_eq!(writers, 2, "{calls:?}");
}

#[test]
fn fake_codex_runs_the_same_plan_with_unknown_cost() {
    let repo = TestRepo::new();
    let (fakes, text) = run_mixed(&repo, "codex");
    assert!(text.contains("cost of the tasks: unknown."), "{text}");
    assert!(!text.contains("$0.0000"), "{text}");
    assert_eq!(fakes.invocations("codex").len(), 5);
    let task = &status_json(&repo)["tasks"][0];
    assert_eq!(task["tokens"], 1000 + 150, "the cached input counted once");
    assert_eq!(
        (&task["prompt_tokens"], &task["cached_tokens"]),
        (&1000.into(), &200.into())
    );
}

#[test]
fn a_run_with_some_costs_unknown_totals_the_known_ones_and_counts_the_others() {
    let repo = TestRepo::new();
    let fakes = FakeAgents::beside(&repo);
    // Claude says what a task cost ($0.0125), Codex does not; a command costs nothing.
    let tasks = repo.tasks(&[
        r#"{"id":"look","prompt":"Look around.\nRESULT: the code is small","lane":"researcher"}"#,
        r#"{"id":"judge","prompt":"Review it.\nRESULT: looks fine","lane":"reviewer","agent":"codex"}"#,
        r#"{"id":"count","run":"echo 2 files","mode":"read"}"#,
    ]);
    let report = outside(&repo, "report.md");

    let out = run_claude(
        &repo,
        &fakes,
        &tasks,
        &["--json", "-q", "--final-out", report.to_str().unwrap()],
    );

    assert_exit(&out, 0);
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(
        text.contains("; cost of the tasks: $0.0125, not counting 1 task of unknown cost."),
        "{text}"
    );
    let cost_of = |id: &str| {
        let row = text
            .lines()
            .find(|l| l.starts_with(&format!("| `{id}` |")))
            .unwrap_or_else(|| panic!("no row of {id}: {text}"));
        row.rsplit('|').nth(1).unwrap().trim().to_owned()
    };
    assert_eq!(
        [cost_of("look"), cost_of("judge"), cost_of("count")],
        ["$0.0125", "unknown", "-"]
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["totals"]["cost"], 0.0125, "{summary}");
    assert_eq!(summary["totals"]["tasks_of_unknown_cost"], 1, "{summary}");
}

#[test]
fn an_error_reported_with_exit_0_is_a_failed_attempt_and_retried() {
    for agent in ["claude", "codex"] {
        let repo = TestRepo::new();
        let fakes = FakeAgents::beside(&repo);
        fakes.set_mode(agent, "error-exit-0-once");
        let tasks =
            repo.tasks(&[r#"{"id":"w","prompt":"FILE: w.txt\nEDIT: done","lane":"coder"}"#]);

        let out = fakes.swarm(&repo, &["run", tasks.to_str().unwrap(), "--agent", agent]);

        assert_exit(&out, 0);
        let s = status_json(&repo);
        assert_eq!(s["tasks"][0]["attempts"], 2, "{agent}: {s}");
        assert_eq!(repo.read("w.txt"), "done\n");
        let first_log = repo.swarm(&["logs", "--errors"]).stdout;
        assert!(
            String::from_utf8_lossy(&first_log).contains("the agent reported an error"),
            "{agent}"
        );
    }
}

fn alive(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
    })
}

#[test]
fn stdin_waiters_hangers_and_grandchildren_never_hang_the_run() {
    let repo = TestRepo::new();
    let fakes = FakeAgents::beside(&repo);
    let tasks = repo.tasks(&[
        r#"{"id":"waits","prompt":"FAKE_MODE: wait-stdin\nRESULT: read it all","lane":"analyst"}"#,
        r#"{"id":"hangs","prompt":"FAKE_MODE: hang-after-result\nRESULT: answered then hung","lane":"analyst"}"#,
        r#"{"id":"forks","prompt":"FAKE_MODE: grandchild\nRESULT: left a child","lane":"analyst"}"#,
    ]);
    let mut lifeline = Lifeline::new(&outside(&repo, "lifelines"), "fakes");

    // The call that hangs after its answer is ended by the timeout, its answer kept.
    let out = repo
        .swarm_cmd()
        .env("PATH", fakes.path_env())
        .env("FAKE_LIFELINE", lifeline.shell())
        .args([
            "run",
            tasks.to_str().unwrap(),
            "--agent",
            "claude",
            "--task-timeout",
            "3s",
            "--retries",
            "0",
        ])
        .output()
        .expect("running swarm");

    assert_exit(&out, 0);
    let s = status_json(&repo);
    for t in s["tasks"].as_array().unwrap() {
        assert_eq!(t["status"], "done", "{t}");
    }
    // Every process of the three calls has ended, and the sleepers not by reaching their end.
    assert_eq!(lifeline.ended(), 3);
    assert_eq!(fakes.outlived("claude"), "");
    for call in fakes.invocations("claude") {
        if let Some(pid) = call["grandchild_pid"].as_u64() {
            assert!(!alive(pid), "grandchild {pid} outlived its attempt");
        }
    }
    let leftovers = std::process::Command::new("pgrep")
        .args(["-f", &fakes.bin.display().to_string()])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    assert!(leftovers.trim().is_empty(), "processes left: {leftovers}");
}

#[test]
fn a_usage_limit_pauses_new_attempts_until_it_resets() {
    let repo = TestRepo::new();
    let fakes = FakeAgents::beside(&repo);
    fakes.set_mode("claude", "usage-limit-once");
    let tasks = repo.tasks(&[
        r#"{"id":"a","prompt":"RESULT: a","lane":"analyst"}"#,
        r#"{"id":"b","prompt":"RESULT: b","deps":["a"],"lane":"reducer"}"#,
    ]);
    let started = Instant::now();

    let out = run_claude(&repo, &fakes, &tasks, &["--retries", "0"]);

    assert_exit(&out, 0);
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(1800), "no pause: {took:?}");
    let s = status_json(&repo);
    assert_eq!(s["tasks"][0]["status"], "done");
    // The limited attempt did not use up the task's (zero) retries.
    assert_eq!(s["tasks"][0]["failures"], 0, "{s}");
    let logs = String::from_utf8_lossy(&repo.swarm(&["logs"]).stdout).into_owned();
    assert!(logs.contains("usage_limit"), "{logs}");
}

#[test]
fn a_profile_from_swarm_toml_runs_its_command() {
    let repo = TestRepo::new();
    let script = outside(&repo, "my-agent");
    std::fs::write(
        &script,
        "#!/bin/sh\ncat > /dev/null\necho \"mine says hi with $1\"\n",
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .unwrap();
    repo.write(
        ".swarm.toml",
        &format!(
            "jobs = 2\n\n[agents.mine]\ncommand = \"{}\"\nargs = [\"--flag\"]\nparser = \"text\"\n",
            script.display()
        ),
    );
    repo.commit_all("config");
    let tasks = repo.tasks(&[r#"{"id":"t","prompt":"hello","lane":"reducer","agent":"mine"}"#]);
    let report = outside(&repo, "report.md");

    let out = repo.swarm(&[
        "run",
        tasks.to_str().unwrap(),
        "--final-out",
        report.to_str().unwrap(),
    ]);

    assert_exit(&out, 0);
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.starts_with("mine says hi with --flag"), "{text}");
}

#[test]
fn an_unknown_config_key_is_rejected_with_its_line() {
    let repo = TestRepo::new();
    repo.write(".swarm.toml", "jobs = 2\nretries = 1\njbos = 3\n");
    let tasks = repo.tasks(&[r#"{"id":"t","run":"true","mode":"read"}"#]);

    let out = repo.swarm(&["run", tasks.to_str().unwrap()]);

    assert_exit(&out, 2);
    assert!(stderr(&out).contains(".swarm.toml:3"), "{}", stderr(&out));
    assert!(stderr(&out).contains("jbos"), "{}", stderr(&out));
    assert!(!repo.swarm_dir().join("runs").exists(), "a run started");
}

#[test]
fn the_config_command_says_where_each_value_came_from() {
    let repo = TestRepo::new();
    repo.write(".swarm.toml", "jobs = 2\nretries = 3\n");
    let out = repo
        .swarm_cmd()
        .env("SWARM_RETRIES", "5")
        .args(["config", "--check", "true"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let text = stdout(&out);
    let line = |key: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{key} =")))
            .unwrap_or_else(|| panic!("no {key} in:\n{text}"))
            .to_owned()
    };
    assert!(line("jobs").contains(".swarm.toml"), "{text}");
    assert!(line("retries").contains("SWARM_RETRIES"), "{text}");
    assert!(line("check").contains("--check"), "{text}");
    assert!(line("task-timeout").contains("default"), "{text}");
}

#[test]
fn a_cli_agent_never_sees_swarms_keys_even_when_a_profile_passes_them() {
    let repo = TestRepo::new();
    let fakes = FakeAgents::beside(&repo);
    repo.write(
        ".swarm.toml",
        "[agents.claude]\npass-env = [\"SWARM_API_KEY\", \"SWARM_REMOTE_KEY\"]\n",
    );
    repo.git(&["add", ".swarm.toml"]);
    repo.git(&["commit", "-q", "-m", "profile"]);
    let tasks = repo.tasks(&[r#"{"id":"t","prompt":"RESULT: ok","lane":"reducer"}"#]);
    let out = repo
        .swarm_cmd()
        .env("PATH", fakes.path_env())
        .env("SWARM_API_KEY", "sk-never-for-agents-123")
        .env("OPENAI_API_KEY", "sk-never-for-agents-456")
        .env("SWARM_REMOTE_KEY", "never-for-agents-0123456789abcdef")
        .env("SWARM_API_BASE", "http://127.0.0.1:9/v1")
        .args(["run", tasks.to_str().unwrap(), "--agent", "claude"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let call = &fakes.invocations("claude")[0];
    assert_eq!(call["env"]["SWARM_API_KEY"], false, "{call}");
    assert_eq!(call["env"]["OPENAI_API_KEY"], false, "{call}");
    assert_eq!(call["env"]["SWARM_REMOTE_KEY"], false, "{call}");
    assert_eq!(call["env"]["SWARM_TASK_ID"], true, "{call}");
}

#[test]
fn a_usage_limit_resetting_beyond_an_hour_stops_the_run_resumably() {
    let repo = TestRepo::new();
    let fakes = FakeAgents::beside(&repo);
    let tasks = repo.tasks(&[
        r#"{"id":"a","prompt":"FAKE_MODE: usage-limit\nRESET_IN: 7200\nRESULT: a","lane":"analyst"}"#,
        r#"{"id":"b","prompt":"RESULT: b","deps":["a"],"lane":"reducer"}"#,
    ]);

    // Swarm ending at all (rather than waiting two hours) is the point.
    let out = fakes.swarm(
        &repo,
        &["run", tasks.to_str().unwrap(), "--agent", "claude"],
    );

    assert_exit(&out, 75);
    let s = status_json(&repo);
    assert_eq!(s["run"]["status"], "interrupted", "{s}");
    assert_eq!(s["tasks"][0]["status"], "interrupted", "{s}");
    assert_eq!(s["tasks"][0]["failures"], 0, "{s}");
    assert_eq!(s["tasks"][1]["status"], "pending", "{s}");
}

#[test]
fn a_writer_whose_cli_refused_its_edit_fails_with_the_tool_and_path_named() {
    let repo = TestRepo::new();
    let fakes = FakeAgents::beside(&repo);
    fakes.set_mode("claude", "denied");
    let tasks = repo.tasks(&[r#"{"id":"w","prompt":"FILE: notes.txt\nEDIT: a note"}"#]);

    let out = run_claude(&repo, &fakes, &tasks, &["--retries", "0"]);

    assert_exit(&out, 1);
    let w = &status_json(&repo)["tasks"][0];
    assert_eq!(w["status"], "failed");
    let error = w["error"].as_str().unwrap();
    assert!(
        error.contains("the agent's CLI refused a tool use: Write ")
            && error.ends_with("/notes.txt"),
        "{error}"
    );
    assert!(!repo.root.join("notes.txt").exists());
    let report = crate::run_report(&repo);
    assert!(report.contains("refused a tool use: Write"), "{report}");
    let transcript = std::fs::read_to_string(w["transcript"].as_str().unwrap()).unwrap();
    assert!(
        transcript.contains("swarm: the agent's CLI refused: Write "),
        "{transcript}"
    );
}

#[test]
fn claude_retries_once_on_its_own_unless_a_profile_says_otherwise() {
    let repo = TestRepo::new();
    let fakes = FakeAgents::beside(&repo);
    let tasks = repo.tasks(&[r#"{"id":"r","prompt":"RESULT: read","mode":"read"}"#]);
    let args = ["run", tasks.to_str().unwrap(), "--agent", "claude"];
    assert_exit(&fakes.swarm(&repo, &args), 0);
    assert_eq!(fakes.invocations("claude")[0]["max_retries"], "1");

    repo.write(
        ".swarm.toml",
        "[agents.claude]\nset-env = { CLAUDE_CODE_MAX_RETRIES = \"4\" }\n",
    );
    repo.commit_all("more retries");
    assert_exit(&fakes.swarm(&repo, &args), 0);
    assert_eq!(fakes.invocations("claude")[1]["max_retries"], "4");
}

/// The value after `flag` in a recorded call's arguments.
fn arg_after(call: &serde_json::Value, flag: &str) -> Option<String> {
    let args = call["args"].as_array()?;
    let at = args.iter().position(|a| a == flag)?;
    args.get(at + 1)?.as_str().map(str::to_owned)
}

/// A writer of `notes.txt` whose first attempt edits, then hangs past its 1 s timeout.
fn one_timed_out_writer(repo: &TestRepo, fakes: &FakeAgents) -> PathBuf {
    fakes.set_mode("claude", "hang-after-edit-once");
    repo.tasks(&[r#"{"id":"w","prompt":"FILE: notes.txt\nEDIT: a line","timeout":1}"#])
}

#[test]
fn a_retry_after_a_timeout_continues_the_claude_session_in_the_same_checkout() {
    let repo = TestRepo::new();
    let fakes = FakeAgents::beside(&repo);
    let tasks = one_timed_out_writer(&repo, &fakes);

    let out = run_claude(&repo, &fakes, &tasks, &[]);

    assert_exit(&out, 0);
    let calls = fakes.invocations("claude");
    assert_eq!(calls.len(), 2, "{calls:#?}");
    let first = arg_after(&calls[0], "--session-id").expect("a session named up front");
    assert_eq!(
        arg_after(&calls[1], "--resume").as_deref(),
        Some(first.as_str())
    );
    assert_eq!(arg_after(&calls[1], "--session-id"), None);
    assert!(
        fakes
            .prompt("claude", 2)
            .starts_with("Your work on this task was cut short"),
        "{}",
        fakes.prompt("claude", 2)
    );
    // The continued attempt found the first one's edit and added its own: one checkout.
    assert_eq!(repo.read("notes.txt"), "a line\na line\n");
    let report = crate::run_report(&repo);
    assert!(report.contains("| 2 (2 continued) |"), "{report}");
}

#[test]
fn with_fresh_retries_a_retry_after_a_timeout_starts_a_new_session_in_a_new_checkout() {
    let repo = TestRepo::new();
    let fakes = FakeAgents::beside(&repo);
    let tasks = one_timed_out_writer(&repo, &fakes);

    let out = run_claude(&repo, &fakes, &tasks, &["--fresh-retries"]);

    assert_exit(&out, 0);
    let calls = fakes.invocations("claude");
    let (first, second) = (
        arg_after(&calls[0], "--session-id").unwrap(),
        arg_after(&calls[1], "--session-id").unwrap(),
    );
    assert_ne!(first, second);
    assert_eq!(arg_after(&calls[1], "--resume"), None);
    assert_eq!(repo.read("notes.txt"), "a line\n");
}

/// A writer of `agent` whose first attempt edits and hangs, `kill -9`ed with swarm; then
/// `swarm resume`, which must land the file. The repository and the calls the agent got.
fn writer_killed_with_swarm_then_resumed(agent: &str) -> (TestRepo, Vec<serde_json::Value>) {
    let repo = TestRepo::new();
    let fakes = FakeAgents::beside(&repo);
    fakes.set_mode(agent, "hang-after-edit-once");
    let tasks = repo.tasks(&[r#"{"id":"w","prompt":"FILE: notes.txt\nEDIT: a line"}"#]);
    let mut swarm = repo
        .swarm_cmd()
        .env("PATH", fakes.path_env())
        .args(["run", tasks.to_str().unwrap(), "--agent", agent])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The agent has edited and hangs: its call is on record once its edit is there.
    let edited = || {
        std::fs::read_dir(repo.cache.join("swarm/worktrees"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|d| {
                std::fs::read_dir(d.path())
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|run| run.path().join("w/notes.txt").exists())
            })
    };
    while !edited() {
        assert!(swarm.try_wait().unwrap().is_none(), "swarm ended first");
        std::thread::yield_now();
    }
    swarm.kill().unwrap();
    swarm.wait().unwrap();

    let out = fakes.swarm(&repo, &["resume"]);

    assert_exit(&out, 0);
    // The continued attempt found the first one's edit and added its own.
    assert_eq!(repo.read("notes.txt"), "a line\na line\n");
    let calls = fakes.invocations(agent);
    (repo, calls)
}

#[test]
fn a_claude_writer_cut_short_by_kill_9_continues_its_session_on_resume() {
    let (_, calls) = writer_killed_with_swarm_then_resumed("claude");
    let first = arg_after(&calls[0], "--session-id").unwrap();
    assert_eq!(arg_after(&calls[1], "--resume"), Some(first));
}

#[test]
fn a_codex_writer_cut_short_by_kill_9_continues_its_thread_on_resume() {
    // Codex names its thread only in its first event, which the killed swarm never read: the
    // resume finds it in what the attempt left.
    let (repo, calls) = writer_killed_with_swarm_then_resumed("codex");
    assert_eq!(
        arg_after(&calls[1], "resume").as_deref(),
        Some("fake-thread-1")
    );
    // What it printed before the kill is kept in its transcript, and nothing else is left.
    let attempts = repo
        .swarm_dir()
        .join("runs")
        .join(crate::run_id(&repo))
        .join("attempts");
    let first = std::fs::read_to_string(attempts.join("w.1.log")).unwrap();
    assert!(
        first.contains("cut short by the end of swarm) ---\n{\"type\":\"thread.started\""),
        "{first}"
    );
    assert!(!attempts.join("w.1.stdout").exists());
    assert!(!attempts.join("w.2.stdout").exists());
}

#[test]
fn a_cli_writer_that_changes_nothing_fails_and_is_retried_unless_it_may_be_empty() {
    // The fake claude in `no-edit` mode writes nothing and answers as a success.
    for may_be_empty in [false, true] {
        let agent = "claude";
        let repo = TestRepo::new();
        let fakes = FakeAgents::beside(&repo);
        let tasks = repo.tasks(&[&serde_json::json!({
            "id": "w",
            "prompt": "FAKE_MODE: no-edit\nRESULT: nothing to change",
            "mode": "write",
            "may-be-empty": may_be_empty,
        })
        .to_string()]);

        let out = fakes.swarm(&repo, &["run", tasks.to_str().unwrap(), "--agent", agent]);

        let s = status_json(&repo);
        if may_be_empty {
            assert_exit(&out, 0);
            assert_eq!(s["tasks"][0]["attempts"], 1, "{s}");
        } else {
            assert_exit(&out, 1);
            assert_eq!(s["tasks"][0]["attempts"], 2, "{agent}: {s}");
            assert!(
                stdout(&out).contains("the agent made no change"),
                "{agent}: {}",
                stdout(&out)
            );
        }
    }
    // The key turns the rule off.
    let repo = TestRepo::new();
    let fakes = FakeAgents::beside(&repo);
    let tasks = repo.tasks(&[
        r#"{"id":"w","prompt":"FAKE_MODE: no-edit\nRESULT: nothing to change","mode":"write"}"#,
    ]);
    let out = fakes.swarm(
        &repo,
        &[
            "run",
            tasks.to_str().unwrap(),
            "--agent",
            "claude",
            "--allow-no-change",
        ],
    );
    assert_exit(&out, 0);
}
