//! Agents that speak the Agent Client Protocol (ACP): JSON-RPC 2.0, one message a line, over
//! the agent's stdin and stdout, swarm as the client. swarm starts a session in the task's
//! directory, sends the prompt, collects the agent's message text as the result, and serves
//! what the agent asks of its client within the task's mode: permissions, files through the
//! built-in agent's confinement, and terminals only for the programs the user allowed.
//!
//! The messages, as the schema has them (`agent-client-protocol-schema` 1.20, `src/v1`):
//! `initialize` answers `agentCapabilities` (`loadSession`, `sessionCapabilities.resume`);
//! `session/new` answers `sessionId` and perhaps `modes {currentModeId, availableModes}`;
//! `session/prompt` ends with `stopReason` and perhaps `usage.totalTokens`; `session/update`
//! notifications carry `agent_message_chunk {content}` and `usage_update {used, size, cost}`,
//! where `used` is the tokens in the context window now, not a running total.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::process::ExitStatusExt as _;
use std::path::PathBuf;
use std::process::{ChildStdin, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use anyhow::Context as _;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::{Value, json};

use super::tools::{Access, Tools};
use super::transcript::{Copier, Stream, Transcript};
use super::{Finished, Invocation, KillReason, Outcome, RESULT_CAP, Sign, Watchdog};

/// What an ACP attempt needs beyond its invocation.
#[derive(Debug, Clone)]
pub(crate) struct Acp {
    /// The task's prompt, for a new session.
    pub prompt: String,
    pub access: Access,
    pub allowed_programs: Vec<String>,
    /// An earlier attempt's session, to resume (or load) when the agent can.
    pub resume: Option<Resume>,
}

/// A session to continue, and what it is told then (the task is in it already).
#[derive(Debug, Clone)]
pub(crate) struct Resume {
    pub session: String,
    pub prompt: String,
}

/// The mode ids, best first, that fit a reader and a writer among those agents offer
/// (codex-acp: `read-only`, `auto`, `full-access`; Claude Code's adapter: `default`,
/// `acceptEdits`, `plan`, `bypassPermissions`). Claude's `plan` is left out: it makes the
/// answer a plan.
const READER_MODES: [&str; 3] = ["read-only", "readonly", "read"];
const WRITER_MODES: [&str; 4] = ["auto", "acceptEdits", "agent", "code"];

/// The ACP version swarm speaks.
const PROTOCOL_VERSION: u64 = 1;

enum Event {
    Line(String),
    Eof,
    /// The watchdog asks the attempt to end (timeout, stall, stop).
    Cancel,
}

/// Runs one attempt to the end; like `super::run`, it never returns early, and no process of
/// the attempt is left when it returns.
pub(crate) fn run(inv: &Invocation, acp: &Acp, watchdog: &Watchdog) -> Finished {
    match converse(inv, acp, watchdog) {
        Ok(done) => done,
        Err(e) => super::could_not_run(inv, &e),
    }
}

fn converse(inv: &Invocation, acp: &Acp, watchdog: &Watchdog) -> anyhow::Result<Finished> {
    let started = Instant::now();
    let mut transcript = Transcript::create(&inv.transcript, inv.transcript_cap)?;
    transcript.note(&crate::secret::redact(&inv.header))?;
    transcript.note("--- conversation (> to the agent, < from it; its stderr between) ---\n")?;
    // The conversation and the agent's stderr, as they come, within the cap.
    let conversation = Arc::new(Mutex::new(transcript.stream(transcript.room())?));
    let printed = conversation
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .seen();
    let deadline = crate::time::deadline(started, inv.timeout);
    let stopping = watchdog.clone();
    // Set when the watchdog ends the attempt for any reason (a stall too): a program running
    // for a terminal is stopped then, as the agent is.
    let ending = Arc::new(AtomicBool::new(false));
    let ended = Arc::clone(&ending);
    let tools = Tools::new(
        &inv.cwd,
        acp.access,
        acp.allowed_programs.clone(),
        super::openai::COMMAND_TIMEOUT,
    )?
    .stopped_by(move || {
        ended.load(Ordering::Relaxed) || stopping.is_stopping() || Instant::now() >= deadline
    });

    let (stderr_pipe, stderr_end) = std::io::pipe()?;
    let copier = Copier::start(stderr_pipe, Arc::clone(&conversation))?;
    let mut cmd = super::command(inv);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr_end));
    let spawned = cmd.spawn();
    // swarm's own end of the stderr pipe goes with the command.
    drop(cmd);
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            copier.finish();
            return Err(e.into());
        }
    };
    let pid = Pid::from_raw(child.id() as i32);
    let (tx, rx) = channel();
    let cancel_tx = tx.clone();
    let progress = inv.stall.map(|limit| (limit, vec![Sign::Count(printed)]));
    let ticket = watchdog.register_with(
        pid,
        inv.timeout,
        progress,
        Some(Box::new(move || {
            ending.store(true, Ordering::Relaxed);
            let _ = cancel_tx.send(Event::Cancel);
        })),
    );
    if let Some(stdout) = child.stdout.take() {
        spawn_reader(stdout, tx);
    }
    let mut client = Client {
        stdin: child.stdin.take(),
        transcript: Arc::clone(&conversation),
        rx,
        tools,
        given_root: inv.cwd.clone(),
        next_id: 0,
        session: None,
        cancelled: false,
        text: String::new(),
        tokens: None,
        usage_tokens: 0,
        cost: None,
        denials: Vec::new(),
        terminals: HashMap::new(),
    };
    let mut resumable = false;
    let ended = client.turn(acp, &mut resumable);
    // Done with the agent: closing its stdin and killing its group ends whatever it left.
    client.stdin = None;
    let _ = killpg(pid, Signal::SIGKILL);
    let status = child.wait()?;
    let reason = watchdog.unregister(ticket);
    copier.finish();

    let denials_fail = acp.access == Access::Write && !client.denials.is_empty();
    let outcome = match (reason, ended) {
        (Some(KillReason::Timeout), _) => Outcome::TimedOut(inv.timeout),
        (Some(KillReason::Stalled), _) => Outcome::Stalled(inv.stall.unwrap_or_default()),
        (Some(KillReason::Stop), _) => Outcome::Interrupted,
        (None, Ok(())) if denials_fail => Outcome::Failed(format!(
            "swarm refused the agent {}: {}",
            if client.denials.len() == 1 {
                "a tool use"
            } else {
                "tool uses"
            },
            client.denials.join("; ")
        )),
        (None, Ok(())) => Outcome::Succeeded,
        (None, Err(Ended::Exited)) => Outcome::Failed(format!(
            "the agent exited before it answered ({})",
            super::describe(status)
        )),
        (None, Err(Ended::Failed(why))) => Outcome::Failed(why),
    };
    if !client.denials.is_empty() {
        client.note(&format!("swarm refused: {}", client.denials.join("; ")));
    }
    let tokens = client.tokens.unwrap_or(client.usage_tokens);
    drop(client.transcript);
    let conversation = Arc::into_inner(conversation)
        .context("the conversation's transcript outlived its attempt")?
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    transcript.end(conversation)?;
    transcript.note(&format!(
        "--- end: {} after {:.2}s, {tokens} tokens ---\n",
        outcome.describe(),
        started.elapsed().as_secs_f64()
    ))?;
    transcript.redact()?;
    let mut text = client.text;
    if text.len() > RESULT_CAP {
        let mut cut = RESULT_CAP;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n[result cut at 1 MiB; the transcript keeps more of it]\n");
    }
    Ok(Finished {
        outcome,
        stdout: crate::secret::redact(&text).into_owned(),
        tokens,
        cost: client.cost,
        session: client.session.filter(|_| resumable),
    })
}

fn spawn_reader(stdout: std::process::ChildStdout, tx: Sender<Event>) {
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            match line {
                Ok(l) => {
                    if tx.send(Event::Line(l)).is_err() {
                        return;
                    }
                }
                Err(_) => break,
            }
        }
        let _ = tx.send(Event::Eof);
    });
}

/// Why the conversation ended before the prompt's turn did.
enum Ended {
    /// The agent's stdout closed (it exited, or was killed).
    Exited,
    /// The agent answered with an error or ended its turn for a reason other than `end_turn`.
    Failed(String),
}

/// A terminal the agent created: the program has run to its end already.
struct Terminal {
    output: String,
    exit_code: Option<i32>,
    signal: Option<String>,
}

struct Client {
    stdin: Option<ChildStdin>,
    /// The conversation's part of the transcript, shared with the copy of the agent's stderr.
    transcript: Arc<Mutex<Stream>>,
    rx: Receiver<Event>,
    tools: Tools,
    /// The task's directory as swarm names it (the tools hold it canonical).
    given_root: PathBuf,
    next_id: u64,
    session: Option<String>,
    cancelled: bool,
    text: String,
    /// From the prompt's answer (`usage.totalTokens`), when the agent gives it.
    tokens: Option<u64>,
    /// The most tokens a `usage_update` reported in the context.
    usage_tokens: u64,
    cost: Option<f64>,
    denials: Vec<String>,
    terminals: HashMap<String, Terminal>,
}

impl Client {
    /// The whole conversation, to the end of the prompt's turn; `resumable` says whether a
    /// later attempt can continue the session.
    fn turn(&mut self, acp: &Acp, resumable: &mut bool) -> Result<(), Ended> {
        let writes = acp.access == Access::Write;
        let init = self.request(
            "initialize",
            &json!({
                "protocolVersion": PROTOCOL_VERSION,
                "clientCapabilities": {
                    "fs": { "readTextFile": true, "writeTextFile": writes },
                    "terminal": !acp.allowed_programs.is_empty(),
                },
                "clientInfo": { "name": "swarm", "version": env!("CARGO_PKG_VERSION") },
            }),
        )?;
        let caps = &init["agentCapabilities"];
        let can_resume = caps["sessionCapabilities"]["resume"].is_object();
        let can_load = caps["loadSession"].as_bool() == Some(true);
        *resumable = can_resume || can_load;
        let cwd = self.tools.root().display().to_string();
        // An agent that cannot continue the session gets the task afresh.
        let (opened, prompt) = match &acp.resume {
            Some(Resume {
                session: id,
                prompt,
            }) if can_resume || can_load => {
                let method = if can_resume {
                    "session/resume"
                } else {
                    "session/load"
                };
                self.session = Some(id.clone());
                let mut answer = self.request(
                    method,
                    &json!({ "sessionId": id, "cwd": cwd, "mcpServers": [] }),
                )?;
                answer["sessionId"] = json!(id);
                (answer, prompt)
            }
            _ => (
                self.request("session/new", &json!({ "cwd": cwd, "mcpServers": [] }))?,
                &acp.prompt,
            ),
        };
        let Some(session) = opened["sessionId"].as_str().map(str::to_owned) else {
            return Err(Ended::Failed(
                "the agent opened no session (no sessionId)".to_owned(),
            ));
        };
        self.session = Some(session.clone());
        if let Some(mode) = pick_mode(&opened["modes"], acp.access) {
            self.request(
                "session/set_mode",
                &json!({ "sessionId": session, "modeId": mode }),
            )?;
        }
        if self.cancelled {
            return Err(Ended::Failed("cancelled before the prompt".to_owned()));
        }
        let answer = self.request(
            "session/prompt",
            &json!({ "sessionId": session, "prompt": [{ "type": "text", "text": prompt }] }),
        )?;
        if let Some(total) = answer["usage"]["totalTokens"].as_u64() {
            self.tokens = Some(total);
        }
        match answer["stopReason"].as_str() {
            Some("end_turn") => Ok(()),
            Some(reason) => Err(Ended::Failed(format!(
                "the agent stopped its turn: {reason}"
            ))),
            None => Err(Ended::Failed(
                "the agent's answer to the prompt has no stopReason".to_owned(),
            )),
        }
    }

    /// A line of the transcript, secrets hidden.
    fn note(&mut self, text: &str) {
        let mut line = crate::secret::redact(text).into_owned();
        line.push('\n');
        self.transcript
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .write(line.as_bytes());
    }

    fn send(&mut self, message: &Value) {
        let line = message.to_string();
        self.note(&format!("> {line}"));
        if let Some(stdin) = self.stdin.as_mut() {
            // A failed write shows as the agent's end (its stdout closes too).
            let _ = stdin
                .write_all(line.as_bytes())
                .and_then(|()| stdin.write_all(b"\n"))
                .and_then(|()| stdin.flush());
        }
    }

    /// Sends a request and serves the agent until its answer comes.
    fn request(&mut self, method: &str, params: &Value) -> Result<Value, Ended> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        loop {
            let event = self.rx.recv().unwrap_or(Event::Eof);
            let line = match event {
                Event::Eof => {
                    self.note("(the agent's stdout closed)");
                    return Err(Ended::Exited);
                }
                Event::Cancel => {
                    self.cancel();
                    continue;
                }
                Event::Line(line) => line,
            };
            self.note(&format!("< {line}"));
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            let is_answer = message.get("method").is_none()
                && (message.get("result").is_some() || message.get("error").is_some());
            if is_answer {
                if message["id"].as_u64() != Some(id) {
                    continue;
                }
                if let Some(error) = message.get("error") {
                    return Err(Ended::Failed(format!(
                        "the agent answered {method} with an error: {}",
                        error["message"].as_str().unwrap_or("(no message)")
                    )));
                }
                return Ok(message["result"].clone());
            }
            self.receive(&message);
        }
    }

    /// The watchdog's word: the agent is asked to stop its turn; the watchdog kills its group
    /// after the grace if it does not.
    fn cancel(&mut self) {
        if self.cancelled {
            return;
        }
        self.cancelled = true;
        if let Some(session) = self.session.clone() {
            self.send(&json!({
                "jsonrpc": "2.0",
                "method": "session/cancel",
                "params": { "sessionId": session },
            }));
        }
    }

    /// A request or notification from the agent.
    fn receive(&mut self, message: &Value) {
        let method = message["method"].as_str().unwrap_or_default();
        let params = &message["params"];
        match message.get("id") {
            None => {
                if method == "session/update" {
                    self.update(&params["update"]);
                }
            }
            Some(id) => {
                let reply = match self.serve(method, params) {
                    Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
                    Err((code, why)) => json!({
                        "jsonrpc": "2.0",
                        "id": id,
                        "error": { "code": code, "message": why },
                    }),
                };
                self.send(&reply);
            }
        }
    }

    fn update(&mut self, update: &Value) {
        match update["sessionUpdate"].as_str() {
            Some("agent_message_chunk") => {
                if let Some(text) = update["content"]["text"].as_str() {
                    self.text.push_str(text);
                }
            }
            Some("usage_update") => {
                if let Some(used) = update["used"].as_u64() {
                    self.usage_tokens = self.usage_tokens.max(used);
                }
                let cost = &update["cost"];
                if cost["currency"].as_str() == Some("USD") {
                    self.cost = cost["amount"].as_f64().or(self.cost);
                }
            }
            _ => {}
        }
    }

    /// Answers one request of the agent: its result, or a JSON-RPC error code and message.
    fn serve(&mut self, method: &str, params: &Value) -> Result<Value, (i64, String)> {
        const INVALID: i64 = -32602;
        const REFUSED: i64 = -32000;
        let path = || {
            params["path"]
                .as_str()
                .ok_or((INVALID, "missing `path`".to_owned()))
        };
        match method {
            "session/request_permission" => Ok(self.permission(params)),
            "fs/read_text_file" => {
                let text = self
                    .tools
                    .read_text(path()?, &self.given_root)
                    .map_err(|why| (REFUSED, why))?;
                Ok(json!({ "content": lines_of(&text, params) }))
            }
            "fs/write_text_file" => {
                let raw = path()?.to_owned();
                let content = params["content"]
                    .as_str()
                    .ok_or((INVALID, "missing `content`".to_owned()))?;
                match self.tools.write_text(&raw, &self.given_root, content) {
                    Ok(()) => Ok(Value::Null),
                    Err(why) => {
                        self.denials
                            .push(format!("fs/write_text_file {raw}: {why}"));
                        Err((REFUSED, why))
                    }
                }
            }
            "terminal/create" => self.create_terminal(params).map_err(|why| (REFUSED, why)),
            "terminal/output" | "terminal/wait_for_exit" | "terminal/kill" | "terminal/release" => {
                let id = params["terminalId"].as_str().unwrap_or_default();
                let Some(t) = self.terminals.get(id) else {
                    return Err((INVALID, format!("no terminal {id:?}")));
                };
                let status = json!({ "exitCode": t.exit_code, "signal": t.signal });
                Ok(match method {
                    "terminal/output" => {
                        json!({ "output": t.output, "truncated": false, "exitStatus": status })
                    }
                    "terminal/wait_for_exit" => status,
                    "terminal/release" => {
                        self.terminals.remove(id);
                        json!({})
                    }
                    // It has ended already.
                    _ => json!({}),
                })
            }
            _ => Err((-32601, format!("swarm does not serve {method}"))),
        }
    }

    /// Runs an allowed program to its end in the task's directory (the agent then reads its
    /// output and status); anything else is refused.
    fn create_terminal(&mut self, params: &Value) -> Result<Value, String> {
        let program = params["command"].as_str().unwrap_or_default().to_owned();
        let args: Vec<String> = params["args"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let elsewhere = params["cwd"].as_str().is_some_and(|cwd| {
            let cwd = std::path::Path::new(cwd);
            cwd != self.tools.root() && cwd != self.given_root
        });
        let ran = if elsewhere {
            Err("refused: commands run only in the task's directory".to_owned())
        } else {
            self.tools.run_allowed(&program, &args)
        };
        let ran = ran.inspect_err(|why| {
            self.denials
                .push(format!("terminal/create {program}: {why}"));
        })?;
        let (exit_code, signal, mut output) = match ran.status {
            Ok(status) => (
                status.code(),
                status
                    .signal()
                    .and_then(|s| Signal::try_from(s).ok())
                    .map(|s| s.as_str().to_owned()),
                String::new(),
            ),
            Err(why) => (None, Some("SIGKILL".to_owned()), format!("{why}\n")),
        };
        output.insert_str(0, &format!("{}{}", ran.stdout, ran.stderr));
        let id = format!("term-{}", self.terminals.len() + 1);
        self.terminals.insert(
            id.clone(),
            Terminal {
                output,
                exit_code,
                signal,
            },
        );
        Ok(json!({ "terminalId": id }))
    }

    /// Picks an option for a permission request: readers may only read, writers may also
    /// change files inside the task's directory; running anything goes through `terminal/*`.
    fn permission(&mut self, params: &Value) -> Value {
        let call = &params["toolCall"];
        let kind = call["kind"].as_str().unwrap_or("other");
        let paths: Vec<&str> = call["locations"]
            .as_array()
            .map(|l| l.iter().filter_map(|x| x["path"].as_str()).collect())
            .unwrap_or_default();
        let allow = !self.cancelled
            && match kind {
                "read" | "search" | "think" | "fetch" => true,
                "edit" | "delete" | "move" => {
                    !paths.is_empty()
                        && paths
                            .iter()
                            .all(|p| self.tools.may_write(p, &self.given_root))
                }
                _ => false,
            };
        if !allow && !self.cancelled {
            let title = call["title"].as_str().unwrap_or_default();
            let mut what = format!("{kind} {title}");
            if !paths.is_empty() {
                let _ = write!(what, " ({})", paths.join(", "));
            }
            self.denials.push(what.trim().to_owned());
        }
        let wanted: &[&str] = if allow {
            &["allow_once", "allow_always"]
        } else {
            &["reject_once", "reject_always"]
        };
        let options = params["options"].as_array().cloned().unwrap_or_default();
        let chosen = wanted.iter().find_map(|kind| {
            options
                .iter()
                .find(|o| o["kind"].as_str() == Some(kind))
                .and_then(|o| o["optionId"].as_str().map(str::to_owned))
        });
        match chosen {
            Some(id) if !self.cancelled => {
                json!({ "outcome": { "outcome": "selected", "optionId": id } })
            }
            _ => json!({ "outcome": { "outcome": "cancelled" } }),
        }
    }
}

/// The part of a file `fs/read_text_file` asks for: from `line` (1-based), `limit` lines.
fn lines_of(text: &str, params: &Value) -> String {
    let start = params["line"].as_u64().map_or(0, |l| l.saturating_sub(1));
    let limit = params["limit"].as_u64();
    if start == 0 && limit.is_none() {
        return text.to_owned();
    }
    let skip = usize::try_from(start).unwrap_or(usize::MAX);
    let take = limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    text.split_inclusive('\n').skip(skip).take(take).collect()
}

/// The mode to set for a task of `access`, when the agent offers one that fits and it is not
/// the current one already.
fn pick_mode(modes: &Value, access: Access) -> Option<String> {
    let wanted: &[&str] = match access {
        Access::Read => &READER_MODES,
        Access::Write => &WRITER_MODES,
    };
    let offered: Vec<&str> = modes["availableModes"]
        .as_array()?
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    let mode = wanted.iter().find(|w| offered.contains(w))?;
    (modes["currentModeId"].as_str() != Some(mode)).then(|| (*mode).to_owned())
}

#[cfg(test)]
#[path = "acp_tests.rs"]
mod tests;
