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
//! where `used` is the tokens in the context window now, not a running total. Each is a type
//! in `message`.

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
use serde::Serialize;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde_json::Value;

use super::tools::{Access, Tools};
use super::transcript::{Copier, Stream, Transcript};
use super::{Finished, Invocation, KillReason, Outcome, RESULT_CAP, Sign, Watchdog};
use message::Served;

mod message;

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
    let conversation = Arc::new(Mutex::new(transcript.stream(transcript.room())));
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
    })
    .confined(inv.confine.clone());

    let (stderr_pipe, stderr_end) = std::io::pipe()?;
    let copier = Copier::start(stderr_pipe, Arc::clone(&conversation))?;
    let mut cmd = super::command(inv);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr_end));
    // swarm's own end of the stderr pipe goes with the command.
    let spawned = super::confine::spawn(cmd, inv.confine.as_ref());
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
        mailbox: super::steer::of_env(&inv.env),
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
        "--- end: {}, {tokens} tokens ---\n",
        outcome.ended(started.elapsed())
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
        // ACP's usage does not yet say which of the prompt's tokens were cached.
        prompt_tokens: 0,
        cached_tokens: 0,
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
    /// Where a person's messages to the task wait (`swarm steer`): each becomes a new prompt
    /// in the session once the agent's turn ends.
    mailbox: Option<PathBuf>,
}

impl Client {
    /// The whole conversation, to the end of the prompt's turn; `resumable` says whether a
    /// later attempt can continue the session.
    fn turn(&mut self, acp: &Acp, resumable: &mut bool) -> Result<(), Ended> {
        let writes = acp.access == Access::Write;
        let init: message::Initialized = self.request(
            "initialize",
            &message::Initialize {
                client_capabilities: message::ClientCapabilities {
                    fs: message::FileCapabilities {
                        read_text_file: true,
                        write_text_file: writes,
                    },
                    terminal: !acp.allowed_programs.is_empty(),
                },
                client_info: message::ClientInfo {
                    name: "swarm",
                    version: env!("CARGO_PKG_VERSION"),
                },
                protocol_version: PROTOCOL_VERSION,
            },
        )?;
        let caps = &init.agent_capabilities;
        let can_resume = caps.session_capabilities.resume.is_some();
        let can_load = caps.load_session == Some(true);
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
                let mut answer: message::Opened = self.request(
                    method,
                    &message::OpenSession {
                        cwd: &cwd,
                        mcp_servers: [],
                        session_id: Some(id),
                    },
                )?;
                answer.session_id = Some(id.clone());
                (answer, prompt)
            }
            _ => (
                self.request(
                    "session/new",
                    &message::OpenSession {
                        cwd: &cwd,
                        mcp_servers: [],
                        session_id: None,
                    },
                )?,
                &acp.prompt,
            ),
        };
        let Some(session) = opened.session_id else {
            return Err(Ended::Failed(
                "the agent opened no session (no sessionId)".to_owned(),
            ));
        };
        self.session = Some(session.clone());
        if let Some(mode) = pick_mode(&opened.modes, acp.access) {
            let _: IgnoredAny = self.request(
                "session/set_mode",
                &message::SetMode {
                    mode_id: &mode,
                    session_id: &session,
                },
            )?;
        }
        if self.cancelled {
            return Err(Ended::Failed("cancelled before the prompt".to_owned()));
        }
        let mut prompt = prompt.clone();
        loop {
            let answer: message::Prompted = self.request(
                "session/prompt",
                &message::Prompt {
                    prompt: [message::TextBlock {
                        text: &prompt,
                        kind: "text",
                    }],
                    session_id: &session,
                },
            )?;
            if let Some(total) = answer.usage.total_tokens {
                self.tokens = Some(self.tokens.unwrap_or(0) + total);
            }
            match answer.stop_reason.as_deref() {
                Some("end_turn") => {}
                Some(reason) => {
                    return Err(Ended::Failed(format!(
                        "the agent stopped its turn: {reason}"
                    )));
                }
                None => {
                    return Err(Ended::Failed(
                        "the agent's answer to the prompt has no stopReason".to_owned(),
                    ));
                }
            }
            // What a person sent while the agent worked is its next prompt in the session.
            let steered = self
                .mailbox
                .as_deref()
                .map(super::steer::take)
                .unwrap_or_default();
            if steered.is_empty() || self.cancelled {
                return Ok(());
            }
            for text in &steered {
                self.note(&format!("--- steered: {text} ---"));
            }
            prompt = steered
                .iter()
                .map(|t| super::steer::framed(t))
                .collect::<Vec<_>>()
                .join("\n\n");
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

    fn send(&mut self, message: &impl Serialize) {
        // swarm's own messages always serialize; an empty line would be no message.
        let line = serde_json::to_string(message).unwrap_or_default();
        self.note(&format!("> {line}"));
        if let Some(stdin) = self.stdin.as_mut() {
            // A failed write shows as the agent's end (its stdout closes too).
            let _ = stdin
                .write_all(line.as_bytes())
                .and_then(|()| stdin.write_all(b"\n"))
                .and_then(|()| stdin.flush());
        }
    }

    /// Sends a request and serves the agent until its answer comes: its result, read as `R`.
    fn request<R: DeserializeOwned + Default>(
        &mut self,
        method: &str,
        params: &impl Serialize,
    ) -> Result<R, Ended> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&message::Request {
            id,
            jsonrpc: message::JSONRPC,
            method,
            params,
        });
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
            let Some(incoming) = message::Incoming::parse(&line) else {
                continue;
            };
            if incoming.is_answer() {
                if incoming.id.as_ref().and_then(Value::as_u64) != Some(id) {
                    continue;
                }
                if let Some(error) = incoming.error {
                    let error: message::AgentError = message::read(error);
                    return Err(Ended::Failed(format!(
                        "the agent answered {method} with an error: {}",
                        error.message.as_deref().unwrap_or("(no message)")
                    )));
                }
                return Ok(message::read(incoming.result.unwrap_or_default()));
            }
            self.receive(incoming);
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
            self.send(&message::Notification {
                jsonrpc: message::JSONRPC,
                method: "session/cancel",
                params: message::Cancel {
                    session_id: &session,
                },
            });
        }
    }

    /// A request or notification from the agent.
    fn receive(&mut self, incoming: message::Incoming) {
        let method = incoming.method().to_owned();
        match &incoming.id {
            None => {
                if method == "session/update" {
                    let updated: message::Updated = message::read(incoming.params);
                    self.update(&updated.update);
                }
            }
            Some(id) => match self.serve(&method, incoming.params) {
                Ok(result) => self.send(&message::Answer {
                    id,
                    jsonrpc: message::JSONRPC,
                    result,
                }),
                Err((code, why)) => self.send(&message::Refusal {
                    error: message::ErrorSent { code, message: why },
                    id,
                    jsonrpc: message::JSONRPC,
                }),
            },
        }
    }

    fn update(&mut self, update: &message::Update) {
        match update.kind.as_deref() {
            Some("agent_message_chunk") => {
                if let Some(text) = &update.content.text {
                    self.text.push_str(text);
                }
            }
            Some("usage_update") => {
                if let Some(used) = update.used {
                    self.usage_tokens = self.usage_tokens.max(used);
                }
                if update.cost.currency.as_deref() == Some("USD") {
                    self.cost = update.cost.amount.or(self.cost);
                }
            }
            _ => {}
        }
    }

    /// Answers one request of the agent: its result, or a JSON-RPC error code and message.
    fn serve(&mut self, method: &str, params: Value) -> Result<Served, (i64, String)> {
        const INVALID: i64 = -32602;
        const REFUSED: i64 = -32000;
        let missing = |what: &str| (INVALID, format!("missing `{what}`"));
        match method {
            "session/request_permission" => Ok(self.permission(&message::read(params))),
            "fs/read_text_file" => {
                let asked: message::ReadTextFile = message::read(params);
                let path = asked.path.as_deref().ok_or_else(|| missing("path"))?;
                let text = self
                    .tools
                    .read_text(path, &self.given_root)
                    .map_err(|why| (REFUSED, why))?;
                Ok(Served::Content {
                    content: lines_of(&text, &asked),
                })
            }
            "fs/write_text_file" => {
                let asked: message::WriteTextFile = message::read(params);
                let raw = asked.path.ok_or_else(|| missing("path"))?;
                let content = asked.content.ok_or_else(|| missing("content"))?;
                match self.tools.write_text(&raw, &self.given_root, &content) {
                    Ok(()) => Ok(Served::Written),
                    Err(why) => {
                        self.denials
                            .push(format!("fs/write_text_file {raw}: {why}"));
                        Err((REFUSED, why))
                    }
                }
            }
            "terminal/create" => self
                .create_terminal(message::read(params))
                .map_err(|why| (REFUSED, why)),
            "terminal/output" | "terminal/wait_for_exit" | "terminal/kill" | "terminal/release" => {
                let asked: message::TerminalId = message::read(params);
                let id = asked.terminal_id.unwrap_or_default();
                let Some(t) = self.terminals.get(&id) else {
                    return Err((INVALID, format!("no terminal {id:?}")));
                };
                let status = message::ExitStatus {
                    exit_code: t.exit_code,
                    signal: t.signal.clone(),
                };
                Ok(match method {
                    "terminal/output" => Served::TerminalOutput {
                        exit_status: status,
                        output: t.output.clone(),
                        truncated: false,
                    },
                    "terminal/wait_for_exit" => Served::Exited(status),
                    "terminal/release" => {
                        self.terminals.remove(&id);
                        Served::Done {}
                    }
                    // It has ended already.
                    _ => Served::Done {},
                })
            }
            _ => Err((-32601, format!("swarm does not serve {method}"))),
        }
    }

    /// Runs an allowed program to its end in the task's directory (the agent then reads its
    /// output and status); anything else is refused.
    fn create_terminal(&mut self, asked: message::CreateTerminal) -> Result<Served, String> {
        let program = asked.command.unwrap_or_default();
        let elsewhere = asked.cwd.as_deref().is_some_and(|cwd| {
            let cwd = std::path::Path::new(cwd);
            cwd != self.tools.root() && cwd != self.given_root
        });
        let ran = if elsewhere {
            Err("refused: commands run only in the task's directory".to_owned())
        } else {
            self.tools.run_allowed(&program, &asked.args)
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
        Ok(Served::TerminalCreated { terminal_id: id })
    }

    /// Picks an option for a permission request: readers may only read, writers may also
    /// change files inside the task's directory; running anything goes through `terminal/*`.
    fn permission(&mut self, asked: &message::PermissionRequest) -> Served {
        let call = &asked.tool_call;
        let kind = call.kind.as_deref().unwrap_or("other");
        let paths: Vec<&str> = call.locations.iter().map(|l| l.path.as_str()).collect();
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
            let title = call.title.as_deref().unwrap_or_default();
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
        // The first option of each kind wanted, in order, that names its id.
        let chosen = wanted.iter().find_map(|kind| {
            asked
                .options
                .iter()
                .find(|o| o.kind.as_deref() == Some(kind))
                .and_then(|o| o.option_id.clone())
        });
        let outcome = match chosen {
            Some(id) if !self.cancelled => message::PermissionOutcome {
                option_id: Some(id),
                outcome: "selected",
            },
            _ => message::PermissionOutcome {
                option_id: None,
                outcome: "cancelled",
            },
        };
        Served::Permission { outcome }
    }
}

/// The part of a file `fs/read_text_file` asks for: from `line` (1-based), `limit` lines.
fn lines_of(text: &str, asked: &message::ReadTextFile) -> String {
    let start = asked.line.map_or(0, |l| l.saturating_sub(1));
    let limit = asked.limit;
    if start == 0 && limit.is_none() {
        return text.to_owned();
    }
    let skip = usize::try_from(start).unwrap_or(usize::MAX);
    let take = limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    text.split_inclusive('\n').skip(skip).take(take).collect()
}

/// The mode to set for a task of `access`, when the agent offers one that fits and it is not
/// the current one already.
fn pick_mode(modes: &message::SessionModes, access: Access) -> Option<String> {
    let wanted: &[&str] = match access {
        Access::Read => &READER_MODES,
        Access::Write => &WRITER_MODES,
    };
    let offered: Vec<&str> = modes
        .available_modes
        .iter()
        .map(|m| m.id.as_str())
        .collect();
    let mode = wanted.iter().find(|w| offered.contains(w))?;
    (modes.current_mode_id.as_deref() != Some(mode)).then(|| (*mode).to_owned())
}

#[cfg(test)]
#[path = "acp_tests.rs"]
mod tests;
