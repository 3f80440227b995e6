//! The `acp` agent against a fake agent of the Agent Client Protocol (`fake_acp/agent.py`,
//! python3 from the standard library): the conversation swarm holds, what it allows the agent
//! as its client, and how it ends an attempt. Without python3 on `PATH` the tests are reported
//! as ignored, saying so (build.rs); with `CI` set they run, and fail.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::lifeline::Lifeline;
use crate::{TestRepo, assert_exit, status_json, stdout};

/// The fake agent's state directory.
struct Fake {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
}

/// The fake's state directory; a test that comes here needs python3 (where it is missing the
/// test is ignored, but under CI), so a python3 that does not run fails it.
fn fake() -> Fake {
    let runs = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        runs,
        "python3 is not on PATH or does not run; the ACP tests need it"
    );
    let tmp = crate::shared_tempdir();
    let dir = tmp.path().to_owned();
    Fake { _tmp: tmp, dir }
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/fake_acp/agent.py")
}

impl Fake {
    /// `--agent` for the fake, after `before` (shell words run first).
    fn agent(before: &str) -> String {
        format!("acp:{before}exec python3 '{}'", script().display())
    }

    fn run(&self, repo: &TestRepo, agent: &str, tasks: &[&str], extra: &[&str]) -> Output {
        self.run_with(repo, agent, tasks, extra, &[])
    }

    fn run_with(
        &self,
        repo: &TestRepo,
        agent: &str,
        tasks: &[&str],
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Output {
        let tasks = repo.tasks(tasks);
        repo.swarm_cmd()
            .env("FAKE_ACP_DIR", &self.dir)
            .envs(env.iter().copied())
            .args(["run", "--agent", agent])
            .args(extra)
            .arg(tasks)
            .output()
            .unwrap()
    }

    /// Every message the fake received: (task, attempt, message).
    fn received(&self) -> Vec<(String, u64, Value)> {
        let text = std::fs::read_to_string(self.dir.join("log.jsonl")).unwrap_or_default();
        text.lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                (
                    v["task"].as_str().unwrap().to_owned(),
                    v["attempt"].as_u64().unwrap(),
                    v["message"].clone(),
                )
            })
            .collect()
    }

    /// The messages of `method` the fake received.
    fn calls(&self, method: &str) -> Vec<(String, u64, Value)> {
        self.received()
            .into_iter()
            .filter(|(_, _, m)| m["method"] == method)
            .collect()
    }
}

fn transcript(repo: &TestRepo, task: &str) -> String {
    let s = status_json(repo);
    let t = s["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == task)
        .unwrap()
        .clone();
    let path = t["transcript"].as_str().unwrap().to_owned();
    std::fs::read_to_string(path).unwrap()
}

fn task<'a>(s: &'a Value, id: &str) -> &'a Value {
    s["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .unwrap()
}

#[test]
#[cfg_attr(
    not(has_python3),
    ignore = "needs python3: not found on PATH; install python3"
)]
fn acp_reader_answers_and_writer_file_is_merged_and_landed() {
    let fake = fake();
    let repo = TestRepo::new();
    let report = repo.cache.parent().unwrap().join("report.md");
    let out = fake.run(
        &repo,
        &Fake::agent(""),
        &[
            r#"{"id":"w","prompt":"WRITE: notes/acp.txt=written by acp\nRESULT: wrote it","lane":"coder"}"#,
            r#"{"id":"r","prompt":"READ: notes/acp.txt\nRESULT: the reader's answer","deps":["w"],"lane":"reducer"}"#,
        ],
        &["--final-out", report.to_str().unwrap()],
    );
    assert_exit(&out, 0);
    assert_eq!(repo.read("notes/acp.txt"), "written by acp\n");
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.starts_with("the reader's answer"), "{text}");
    assert!(text.contains("written by acp"), "{text}");

    let inits = fake.calls("initialize");
    let caps = |id: &str| {
        inits.iter().find(|(t, _, _)| t == id).unwrap().2["params"]["clientCapabilities"].clone()
    };
    assert_eq!(caps("w")["fs"]["writeTextFile"], true);
    assert_eq!(caps("r")["fs"]["writeTextFile"], false);
    assert_eq!(caps("r")["fs"]["readTextFile"], true);
    assert_eq!(caps("r")["terminal"], false);
    let new = fake.calls("session/new");
    assert_eq!(new.len(), 2);
    for (_, _, m) in &new {
        assert_eq!(m["params"]["mcpServers"], serde_json::json!([]));
        assert!(Path::new(m["params"]["cwd"].as_str().unwrap()).is_absolute());
    }
    // The writer leaves the fake's read-only mode for `auto`; the reader stays where it is.
    let modes = fake.calls("session/set_mode");
    assert_eq!(modes.len(), 1, "{modes:?}");
    assert_eq!(modes[0].0, "w");
    assert_eq!(modes[0].2["params"]["modeId"], "auto");
    // The whole conversation is in the transcript.
    let log = transcript(&repo, "w");
    assert!(
        log.contains(r#"> {"id":0,"jsonrpc":"2.0","method":"initialize""#),
        "{log}"
    );
    assert!(log.contains(r#""method": "fs/write_text_file""#), "{log}");
}

#[test]
#[cfg_attr(
    not(has_python3),
    ignore = "needs python3: not found on PATH; install python3"
)]
fn acp_reader_is_refused_a_permission_to_edit() {
    let fake = fake();
    let repo = TestRepo::new();
    let report = repo.cache.parent().unwrap().join("report.md");
    let out = fake.run(
        &repo,
        &Fake::agent(""),
        &[r#"{"id":"r","prompt":"PERMISSION: edit\nPERMISSION: read\nRESULT: asked","lane":"reducer"}"#],
        &["--final-out", report.to_str().unwrap()],
    );
    assert_exit(&out, 0);
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(
        text.contains(r#"permission: {"outcome": {"optionId": "no", "outcome": "selected"}}"#),
        "{text}"
    );
    assert!(
        text.contains(r#"permission: {"outcome": {"optionId": "yes", "outcome": "selected"}}"#),
        "{text}"
    );
}

#[test]
#[cfg_attr(
    not(has_python3),
    ignore = "needs python3: not found on PATH; install python3"
)]
fn acp_write_outside_the_task_directory_is_refused_and_fails_the_writer() {
    let fake = fake();
    let repo = TestRepo::new();
    let outside = repo.cache.parent().unwrap().join("outside.txt");
    let write = format!(
        r#"{{"id":"w","prompt":"WRITE: {}=escaped\nWRITE: ../up.txt=escaped\nWRITE: .git/config=x","lane":"coder"}}"#,
        outside.display()
    );
    let out = fake.run(&repo, &Fake::agent(""), &[&write], &["--retries", "0"]);
    assert_exit(&out, 1);
    assert!(!outside.exists());
    assert!(!repo.cache.parent().unwrap().join("up.txt").exists());
    let s = status_json(&repo);
    let error = task(&s, "w")["error"].as_str().unwrap().to_owned();
    assert!(
        error.contains("swarm refused the agent tool uses"),
        "{error}"
    );
    assert!(error.contains("outside the task's directory"), "{error}");
    assert!(error.contains(".git"), "{error}");
}

#[test]
#[cfg_attr(
    not(has_python3),
    ignore = "needs python3: not found on PATH; install python3"
)]
fn acp_refusal_stop_reason_fails_the_attempt() {
    let fake = fake();
    let repo = TestRepo::new();
    let out = fake.run(
        &repo,
        &Fake::agent(""),
        &[r#"{"id":"r","prompt":"STOP: refusal\nRESULT: no","lane":"researcher"}"#],
        &["--retries", "0"],
    );
    assert_exit(&out, 1);
    let s = status_json(&repo);
    let error = task(&s, "r")["error"].as_str().unwrap().to_owned();
    assert!(
        error.contains("the agent stopped its turn: refusal"),
        "{error}"
    );
}

#[test]
#[cfg_attr(
    not(has_python3),
    ignore = "needs python3: not found on PATH; install python3"
)]
fn acp_usage_update_tokens_and_cost_are_reported() {
    let fake = fake();
    let repo = TestRepo::new();
    let report = repo.cache.parent().unwrap().join("report.md");
    let out = fake.run(
        &repo,
        &Fake::agent(""),
        &[r#"{"id":"r","prompt":"USAGE: 1200\nUSAGE: 3456\nRESULT: counted","lane":"reducer"}"#],
        &["--final-out", report.to_str().unwrap()],
    );
    assert_exit(&out, 0);
    assert_eq!(status_json(&repo)["tasks"][0]["tokens"], 3456);
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.contains("| 3456 | - | $0.2500 |"), "{text}");
}

#[test]
#[cfg_attr(
    not(has_python3),
    ignore = "needs python3: not found on PATH; install python3"
)]
fn acp_terminal_runs_only_allowed_programs() {
    let fake = fake();
    let repo = TestRepo::new();
    let report = repo.cache.parent().unwrap().join("report.md");
    let out = fake.run(
        &repo,
        &Fake::agent(""),
        &[r#"{"id":"r","prompt":"TERMINAL: echo hello from echo\nTERMINAL: ls -a\nRESULT: ran","lane":"reducer"}"#],
        &["--final-out", report.to_str().unwrap(), "--allow-program", "echo"],
    );
    assert_exit(&out, 0);
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.contains("terminal: exit 0: hello from echo"), "{text}");
    assert!(
        text.contains(r#"terminal: error: refused: "ls" is not an allowed program"#),
        "{text}"
    );
    let init = &fake.calls("initialize")[0].2;
    assert_eq!(init["params"]["clientCapabilities"]["terminal"], true);
}

#[test]
#[cfg_attr(
    not(has_python3),
    ignore = "needs python3: not found on PATH; install python3"
)]
fn acp_timeout_sends_cancel_and_the_attempt_times_out() {
    let fake = fake();
    let repo = TestRepo::new();
    let out = fake.run(
        &repo,
        &Fake::agent(""),
        &[r#"{"id":"r","prompt":"HANG","lane":"researcher"}"#],
        &["--retries", "0", "--task-timeout", "3s"],
    );
    assert_exit(&out, 1);
    let cancels = fake.calls("session/cancel");
    assert_eq!(cancels.len(), 1, "{:?}", fake.received());
    assert_eq!(cancels[0].2["params"]["sessionId"], "sess-r-1");
    let s = status_json(&repo);
    let error = task(&s, "r")["error"].as_str().unwrap().to_owned();
    assert!(error.contains("timed out"), "{error}");
}

#[test]
#[cfg_attr(
    not(has_python3),
    ignore = "needs python3: not found on PATH; install python3"
)]
fn acp_agent_ignoring_cancel_is_killed_with_its_group() {
    let fake = fake();
    let repo = TestRepo::new();
    let mut lifeline = Lifeline::new(&fake.dir, "agent");
    let agent = Fake::agent(&format!("{} && ", lifeline.shell()));
    let out = fake.run(
        &repo,
        &agent,
        &[r#"{"id":"r","prompt":"IGNORE-CANCEL","lane":"researcher"}"#],
        &[
            "--retries",
            "0",
            "--task-timeout",
            "3s",
            "--kill-grace",
            "1s",
        ],
    );
    assert_exit(&out, 1);
    // The agent and the `sleep` it started are gone.
    assert_eq!(lifeline.ended(), 1);
    assert_eq!(fake.calls("session/cancel").len(), 1);
    let left = crate::real_agents::processes_of_run(&crate::run_id(&repo));
    assert!(left.is_empty(), "processes left behind: {left:#?}");
}

#[test]
#[cfg_attr(
    not(has_python3),
    ignore = "needs python3: not found on PATH; install python3"
)]
fn acp_retry_after_a_timeout_resumes_the_session() {
    let fake = fake();
    let repo = TestRepo::new();
    let report = repo.cache.parent().unwrap().join("report.md");
    let out = fake.run(
        &repo,
        &Fake::agent(""),
        &[r#"{"id":"r","prompt":"HANG-ONCE\nRESULT: finished after resuming","lane":"reducer"}"#],
        &[
            "--retries",
            "1",
            "--task-timeout",
            "3s",
            "--final-out",
            report.to_str().unwrap(),
        ],
    );
    assert_exit(&out, 0);
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.starts_with("finished after resuming"), "{text}");
    let resumed = fake.calls("session/resume");
    assert_eq!(resumed.len(), 1, "{:?}", fake.received());
    assert_eq!(resumed[0].1, 2);
    assert_eq!(resumed[0].2["params"]["sessionId"], "sess-r-1");
    assert!(fake.calls("session/new").iter().all(|(_, a, _)| *a == 1));
    let prompts = fake.calls("session/prompt");
    let second = prompts[1].2["params"]["prompt"][0]["text"]
        .as_str()
        .unwrap();
    assert!(second.contains("cut short"), "{second}");
}

#[test]
#[cfg_attr(
    not(has_python3),
    ignore = "needs python3: not found on PATH; install python3"
)]
fn acp_profile_with_kind_acp_runs_like_acp_cmd() {
    let fake = fake();
    let repo = TestRepo::new();
    repo.write(
        ".swarm.toml",
        &format!(
            "[agents.fake]\nkind = \"acp\"\ncommand = \"python3\"\nargs = [\"{}\"]\n",
            script().display()
        ),
    );
    repo.commit_all("profile");
    let report = repo.cache.parent().unwrap().join("report.md");
    let out = fake.run(
        &repo,
        "fake",
        &[r#"{"id":"r","prompt":"RESULT: from the profile","lane":"reducer"}"#],
        &["--final-out", report.to_str().unwrap()],
    );
    assert_exit(&out, 0);
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.starts_with("from the profile"), "{text}");
    assert_eq!(fake.calls("session/prompt").len(), 1);
    let config = repo.swarm(&["config"]);
    assert!(
        stdout(&config).contains("kind = \"acp\""),
        "{}",
        stdout(&config)
    );
}

#[test]
#[cfg_attr(
    not(has_python3),
    ignore = "needs python3: not found on PATH; install python3"
)]
fn acp_retry_of_an_agent_that_no_longer_resumes_gets_the_task_afresh() {
    let fake = fake();
    let repo = TestRepo::new();
    let report = repo.cache.parent().unwrap().join("report.md");
    let out = fake.run_with(
        &repo,
        &Fake::agent(""),
        &[r#"{"id":"r","prompt":"HANG-ONCE\nRESULT: done afresh","lane":"reducer"}"#],
        &[
            "--retries",
            "1",
            "--task-timeout",
            "3s",
            "--final-out",
            report.to_str().unwrap(),
        ],
        &[("FAKE_ACP_RESUME_ONCE", "1")],
    );
    assert_exit(&out, 0);
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.starts_with("done afresh"), "{text}");
    assert!(fake.calls("session/resume").is_empty());
    let new = fake.calls("session/new");
    assert_eq!(new.iter().map(|(_, a, _)| *a).collect::<Vec<_>>(), [1, 2]);
    let prompts = fake.calls("session/prompt");
    let second = prompts[1].2["params"]["prompt"][0]["text"]
        .as_str()
        .unwrap();
    assert!(second.starts_with("HANG-ONCE"), "{second}");
}

#[test]
#[cfg_attr(
    not(has_python3),
    ignore = "needs python3: not found on PATH; install python3"
)]
fn acp_terminal_program_is_stopped_with_a_hung_attempt() {
    let fake = fake();
    let repo = TestRepo::new();
    // A length of sleep no other test uses, to find it by.
    let out = fake.run(
        &repo,
        &Fake::agent(""),
        &[r#"{"id":"r","prompt":"TERMINAL: sleep 617","lane":"researcher"}"#],
        &[
            "--retries",
            "0",
            "--allow-program",
            "sleep",
            "--stall-timeout",
            "2s",
            "--kill-grace",
            "1s",
        ],
    );
    assert_exit(&out, 1);
    let s = status_json(&repo);
    let error = task(&s, "r")["error"].as_str().unwrap().to_owned();
    assert!(error.contains("hung"), "{error}");
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            assert!(
                cmdline != b"sleep\x00617\x00",
                "the terminal's program is left: {:?}",
                entry.file_name()
            );
        }
    }
}

#[test]
#[cfg_attr(
    not(has_python3),
    ignore = "needs python3: not found on PATH; install python3"
)]
fn acp_a_steered_message_is_a_new_prompt_in_the_session_once_the_turn_ends() {
    let fake = fake();
    let repo = TestRepo::new();
    let release = repo.shared.join("release");
    let tasks = repo.tasks(&[&serde_json::json!({
        "id": "w",
        "prompt": format!("WAIT-FOR: {}\nWRITE: notes.txt=first\nRESULT: wrote it", release.display()),
        "lane": "coder",
    })
    .to_string()]);
    let swarm = repo
        .swarm_cmd()
        .env("FAKE_ACP_DIR", &fake.dir)
        .args(["run", "--agent", &Fake::agent(""), tasks.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    crate::wait_until("the agent's first prompt", || {
        (!fake.calls("session/prompt").is_empty()).then_some(())
    });

    let sent = repo.swarm(&["steer", "w", "Write it in British English"]);
    std::fs::write(&release, "").unwrap();
    let out = swarm.wait_with_output().unwrap();

    assert_exit(&sent, 0);
    assert_exit(&out, 0);
    let prompts = fake.calls("session/prompt");
    assert_eq!(prompts.len(), 2, "{prompts:?}");
    let text = |m: &Value| {
        m["params"]["prompt"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(!text(&prompts[0].2).contains("British"));
    assert!(
        text(&prompts[1].2).ends_with("Write it in British English"),
        "{}",
        text(&prompts[1].2)
    );
    // Both prompts went to the one session.
    assert_eq!(
        prompts[0].2["params"]["sessionId"],
        prompts[1].2["params"]["sessionId"]
    );
    assert!(transcript(&repo, "w").contains("--- steered: Write it in British English ---"));
    assert_eq!(repo.read("notes.txt"), "first\n");
}
