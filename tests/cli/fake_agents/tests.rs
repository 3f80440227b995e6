//! The fakes' self-tests: each one run directly in every mode, its output read with swarm's
//! own parsers.

use std::fs::File;
use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use serde_json::Value;
use swarm::agent::cli::{Now, Parser, claude_profile, codex_profile, parse};

use super::FakeAgents;

struct Setup {
    _tmp: tempfile::TempDir,
    fakes: FakeAgents,
    work: std::path::PathBuf,
}

fn setup() -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let fakes = FakeAgents::install(tmp.path());
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    Setup {
        _tmp: tmp,
        fakes,
        work,
    }
}

struct Run {
    /// The fake's pid, also the id of the process group it ran in.
    pid: u32,
    code: Option<i32>,
    stdout: String,
}

impl Setup {
    fn command(&self, agent: &str, args: &[String]) -> Command {
        let mut cmd = Command::new(agent);
        cmd.args(args)
            .current_dir(&self.work)
            .env("PATH", self.fakes.path_env())
            .env_remove("SWARM_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .env_remove("SWARM_TASK_ID")
            .env_remove("GIT_DIR");
        cmd
    }

    /// Runs a fake with `prompt` on stdin and stdout in a file (a pipe would wait for a
    /// grandchild holding it).
    fn run(&self, agent: &str, args: &[String], prompt: &str) -> Run {
        self.run_with(self.command(agent, args), prompt)
    }

    fn run_with(&self, mut cmd: Command, prompt: &str) -> Run {
        let out_path = self.work.parent().unwrap().join("stdout");
        let out = File::create(&out_path).unwrap();
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::from(out))
            .process_group(0)
            .spawn()
            .unwrap();
        // A fake that refuses its arguments exits before reading: a broken pipe is fine.
        let _ = child.stdin.take().unwrap().write_all(prompt.as_bytes());
        let status = child.wait().unwrap();
        Run {
            pid: child.id(),
            code: status.code(),
            stdout: std::fs::read_to_string(&out_path).unwrap(),
        }
    }

    fn file(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.work.join(rel)).ok()
    }
}

fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect()
}

fn now() -> Now {
    Now::utc(SystemTime::now())
}

#[test]
fn fake_agents_claude_writer_edits_the_named_file_and_reports_usage() {
    let s = setup();
    let prompt = "Do the thing.\nFILE: notes/a.md\nRESULT: wrote \"a\"\n";
    let run = s.run("claude", &claude_profile().writer_args, prompt);
    assert_eq!(run.code, Some(0));
    let v: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(v["type"], "result");
    assert_eq!(v["subtype"], "success");
    assert_eq!(v["is_error"], false);
    assert_eq!(v["result"], "wrote \"a\"");
    assert!(v["usage"]["input_tokens"].as_u64().unwrap() > 0);
    assert!(v["total_cost_usd"].as_f64().unwrap() > 0.0);
    assert_eq!(s.file("notes/a.md").unwrap(), "claude edit for a task\n");
    let p = parse(Parser::ClaudeJson, &run.stdout, &now());
    assert_eq!((p.error, p.complete, p.tokens), (None, true, 150));
    assert_eq!(p.result, "wrote \"a\"");
}

#[test]
fn fake_agents_readers_never_write() {
    let s = setup();
    let claude = s.run("claude", &claude_profile().reader_args, "FILE: x.md\n");
    let codex = s.run("codex", &codex_profile().reader_args, "FILE: x.md\n");
    assert_eq!((claude.code, codex.code), (Some(0), Some(0)));
    assert_eq!(s.file("x.md"), None);
    assert_eq!(s.file("AGENT_EDITS.md"), None);
    assert_eq!(s.fakes.invocations("claude")[0]["writer"], false);
    assert_eq!(s.fakes.invocations("codex")[0]["writer"], false);
    assert_eq!(
        parse(Parser::ClaudeJson, &claude.stdout, &now()).result,
        "fake claude read the task"
    );
    assert_eq!(
        parse(Parser::CodexJsonl, &codex.stdout, &now()).result,
        "fake codex read the task"
    );
}

#[test]
fn fake_agents_codex_writer_prints_events_and_edits() {
    let s = setup();
    let run = s.run(
        "codex",
        &codex_profile().writer_args,
        "EDIT: one line\nplease\n",
    );
    assert_eq!(run.code, Some(0));
    let events = json_lines(&run.stdout);
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"thread.started"));
    assert_eq!(types.last(), Some(&"turn.completed"));
    assert!(events.iter().any(|e| e["item"]["type"] == "file_change"));
    assert_eq!(events.last().unwrap()["usage"]["cached_input_tokens"], 200);
    assert_eq!(s.file("AGENT_EDITS.md").unwrap(), "one line\n");
    let p = parse(Parser::CodexJsonl, &run.stdout, &now());
    assert_eq!((p.error, p.complete, p.tokens), (None, true, 1150));
    assert_eq!(p.result, "fake codex wrote AGENT_EDITS.md");
}

#[test]
fn fake_agents_claude_stream_json_needs_verbose_and_ends_with_the_result() {
    let s = setup();
    let args = |extra: &[&str]| -> Vec<String> {
        ["-p", "--output-format", "stream-json"]
            .iter()
            .chain(extra)
            .map(|a| (*a).to_owned())
            .collect()
    };
    assert_eq!(s.run("claude", &args(&[]), "hi").code, Some(1));
    let run = s.run("claude", &args(&["--verbose"]), "hi");
    assert_eq!(run.code, Some(0));
    let lines = json_lines(&run.stdout);
    assert_eq!(lines[0]["subtype"], "init");
    assert_eq!(lines.last().unwrap()["type"], "result");
    assert!(parse(Parser::ClaudeJson, &run.stdout, &now()).complete);
}

#[test]
fn fake_agents_error_exit_0_reports_the_error_in_the_output() {
    let s = setup();
    for agent in super::AGENTS {
        s.fakes.set_mode(agent, "error-exit-0");
    }
    let claude = s.run("claude", &claude_profile().writer_args, "FILE: a\n");
    assert_eq!(claude.code, Some(0));
    let v: Value = serde_json::from_str(claude.stdout.trim()).unwrap();
    assert_eq!(v["is_error"], true);
    assert!(
        parse(Parser::ClaudeJson, &claude.stdout, &now())
            .error
            .unwrap()
            .starts_with("API Error: 500")
    );
    let codex = s.run("codex", &codex_profile().writer_args, "FILE: a\n");
    assert_eq!(codex.code, Some(0));
    assert_eq!(
        json_lines(&codex.stdout).last().unwrap()["type"],
        "turn.failed"
    );
    assert!(
        parse(Parser::CodexJsonl, &codex.stdout, &now())
            .error
            .is_some()
    );
    assert_eq!(s.file("a"), None, "a failed run edits nothing");
}

#[test]
fn fake_agents_usage_limit_resets_three_seconds_ahead() {
    let s = setup();
    for agent in super::AGENTS {
        s.fakes.set_mode(agent, "usage-limit");
    }
    // The fake reads the clock in whole seconds.
    let whole_seconds = |t: SystemTime| {
        UNIX_EPOCH + Duration::from_secs(t.duration_since(UNIX_EPOCH).unwrap().as_secs())
    };
    let before = SystemTime::now();
    let claude = s.run("claude", &claude_profile().writer_args, "x");
    let after = SystemTime::now();
    assert_eq!(claude.code, Some(0));
    let limit = parse(Parser::ClaudeJson, &claude.stdout, &now())
        .usage_limit
        .expect("claude usage limit");
    let reset = limit.resets_at.unwrap();
    let three = Duration::from_secs(3);
    assert!(reset >= whole_seconds(before) + three, "{limit:?}");
    assert!(reset <= whole_seconds(after) + three, "{limit:?}");

    let codex = s.run("codex", &codex_profile().writer_args, "x");
    assert_eq!(codex.code, Some(1));
    let events = json_lines(&codex.stdout);
    assert!(events.iter().any(
        |e| e["type"] == "error" && e["message"].as_str().unwrap().contains("usage limit")
    ));
    let limit = parse(Parser::CodexJsonl, &codex.stdout, &now())
        .usage_limit
        .expect("codex usage limit");
    assert!(limit.resets_at.unwrap() > before);
}

#[test]
fn fake_agents_once_fails_the_first_call_per_task_then_succeeds() {
    let s = setup();
    s.fakes.set_mode("codex", "error-exit-0-once");
    let args = codex_profile().writer_args;
    let parsed = |task: &str| {
        let mut cmd = s.command("codex", &args);
        cmd.env("SWARM_TASK_ID", task);
        parse(Parser::CodexJsonl, &s.run_with(cmd, "go").stdout, &now())
    };
    assert!(parsed("a").error.is_some());
    assert_eq!(parsed("a").error, None);
    assert!(parsed("b").error.is_some(), "another task fails once too");
    s.fakes.set_mode("codex", "error-exit-0-once");
    assert!(parsed("a").error.is_some(), "set_mode re-arms it");
    let modes: Vec<Value> = s
        .fakes
        .invocations("codex")
        .iter()
        .map(|i| i["mode"].clone())
        .collect();
    assert_eq!(
        modes,
        ["error-exit-0", "ok", "error-exit-0", "error-exit-0"]
    );
}

#[test]
fn fake_agents_prompt_line_overrides_the_mode() {
    let s = setup();
    let run = s.run(
        "claude",
        &claude_profile().writer_args,
        "FAKE_MODE: usage-limit\n",
    );
    assert!(
        parse(Parser::ClaudeJson, &run.stdout, &now())
            .usage_limit
            .is_some()
    );
    assert_eq!(s.fakes.invocations("claude")[0]["mode"], "usage-limit");
}

#[test]
fn fake_agents_record_args_cwd_env_and_prompt() {
    let s = setup();
    let mut cmd = s.command("claude", &claude_profile().reader_args);
    cmd.env("SWARM_API_KEY", "sk-secret-value")
        .env("SWARM_TASK_ID", "t1")
        .env("SWARM_MODE", "read");
    s.run_with(cmd, "the prompt\n");
    let calls = s.fakes.invocations("claude");
    assert_eq!(calls.len(), 1);
    let call = &calls[0];
    assert_eq!(call["n"], 1);
    let args: Vec<String> = serde_json::from_value(call["args"].clone()).unwrap();
    assert_eq!(args, claude_profile().reader_args);
    assert_eq!(
        Path::new(call["cwd"].as_str().unwrap())
            .canonicalize()
            .unwrap(),
        s.work.canonicalize().unwrap()
    );
    assert_eq!(call["env"]["SWARM_API_KEY"], true);
    assert_eq!(call["env"]["OPENAI_API_KEY"], false);
    assert_eq!(call["env"]["GIT_DIR"], false);
    assert_eq!(call["task_id"], "t1");
    assert_eq!(call["swarm_mode"], "read");
    assert_eq!(call["stdin_bytes"], 11);
    assert_eq!(s.fakes.prompt("claude", 1), "the prompt\n");
    let log = std::fs::read_to_string(s.fakes.state.join("claude.log")).unwrap();
    assert!(!log.contains("sk-secret-value"), "values are never logged");
}

#[test]
fn fake_agents_codex_honours_dash_c_and_a_prompt_argument() {
    let s = setup();
    std::fs::create_dir_all(s.work.join("sub")).unwrap();
    let args: Vec<String> = [
        "exec",
        "--json",
        "-C",
        "sub",
        "--sandbox",
        "workspace-write",
        "FILE: here.md",
    ]
    .map(str::to_owned)
    .to_vec();
    assert_eq!(s.run("codex", &args, "").code, Some(0));
    assert!(s.file("sub/here.md").is_some());
    let not_exec = s.run("codex", &["--json".to_owned()], "x");
    assert_eq!(not_exec.code, Some(2));
}

#[test]
fn fake_agents_wait_for_stdin_to_close() {
    let s = setup();
    s.fakes.set_mode("claude", "wait-stdin");
    let mut child = s
        .command("claude", &claude_profile().reader_args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // A fake that went on after the first line (or read none) would never see the second.
    stdin.write_all(b"prompt\n").unwrap();
    stdin.write_all(b"and the rest\n").unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert_eq!(s.fakes.prompt("claude", 1), "prompt\nand the rest\n");
    assert_eq!(s.fakes.invocations("claude")[0]["stdin_bytes"], 20);
}

#[test]
fn fake_agents_hang_after_result_prints_it_first() {
    let s = setup();
    s.fakes.set_mode("codex", "hang-after-result");
    let mut child = s
        .command("codex", &codex_profile().reader_args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    // Its output, line by line as it comes, until it holds a whole answer.
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut printed = String::new();
    let parsed = loop {
        assert!(
            stdout.read_line(&mut printed).unwrap() > 0,
            "ended without a whole answer:\n{printed}"
        );
        let p = parse(Parser::CodexJsonl, &printed, &now());
        if p.complete {
            break p;
        }
    };
    assert!(child.try_wait().unwrap().is_none(), "still running");
    // The shell and its `sleep`, as swarm ends an attempt.
    killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    assert!(parsed.complete && parsed.error.is_none(), "{parsed:?}");
}

#[test]
fn fake_agents_grandchild_outlives_the_agent() {
    let s = setup();
    s.fakes.set_mode("claude", "grandchild");
    let run = s.run("claude", &claude_profile().writer_args, "x");
    assert_eq!(run.code, Some(0));
    assert_eq!(parse(Parser::ClaudeJson, &run.stdout, &now()).error, None);
    let pid = s.fakes.invocations("claude")[0]["grandchild_pid"]
        .as_i64()
        .expect("a grandchild pid");
    let pid = Pid::from_raw(i32::try_from(pid).unwrap());
    assert!(kill(pid, None).is_ok(), "the grandchild is still running");
    // The grandchild and its sleep, as swarm ends an attempt.
    killpg(Pid::from_raw(run.pid as i32), Signal::SIGKILL).unwrap();
}

#[test]
fn fake_agents_exit_1_prints_nothing() {
    let s = setup();
    s.fakes.set_mode("claude", "exit-1");
    let run = s.run("claude", &claude_profile().writer_args, "x");
    assert_eq!(run.code, Some(1));
    assert_eq!(run.stdout, "");
    assert!(!parse(Parser::ClaudeJson, &run.stdout, &now()).complete);
}
