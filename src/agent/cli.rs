//! CLI agents (Claude Code, Codex): their built-in profiles (command, arguments for readers and
//! writers, environment changes) and the readers of what they print. Pure functions: spawning
//! the process belongs to the runner in `agent`, deciding what a failure means to the scheduler.
//!
//! The formats, as researched (see the tests for samples):
//! - `claude -p --output-format json` prints one object at the end: `type: "result"`, `subtype`
//!   (`success`, `error_max_turns`, `error_during_execution`, `error_max_budget_usd`, …),
//!   `is_error`, `result` (the answer, or the error text), `total_cost_usd`, `usage`
//!   (`input_tokens`, `output_tokens`, `cache_creation_input_tokens`,
//!   `cache_read_input_tokens`), `num_turns`, `session_id`, `duration_ms`, and for error subtypes
//!   an `errors` array. A failed API call still says `subtype: "success"` with `is_error: true`
//!   (and exited 0 in versions before 2.1, anthropics/claude-code#79500; 2.1.328 exits 1): the
//!   object decides, not the exit code. A refused tool use is only in `permission_denials`, and
//!   a usage limit also sets `api_error: "usage_limit_reached"` (2.1.328: `You've hit your
//!   5-hour limit · resets 4:06pm (UTC)`). `--output-format stream-json --verbose` prints
//!   JSONL (`system` init, `assistant`/`user` messages) ending with the same result object.
//!   Usage limits arrive as result text: `Claude AI usage limit reached|<unix seconds>`, later
//!   `5-hour limit reached ∙ resets 3pm`, `You've hit your limit · resets 1pm (Europe/Lisbon)`,
//!   `Claude usage limit reached. Your limit will reset at 1pm (Etc/GMT+5).`
//! - `codex exec --json` prints JSONL events (openai/codex `codex-rs/exec/src/exec_events.rs`):
//!   `thread.started`, `turn.started`, `item.started`/`item.updated`/`item.completed` (items
//!   `agent_message {text}`, `reasoning`, `command_execution`, `file_change`, `error`, …),
//!   `turn.completed {usage: {input_tokens, cached_input_tokens, output_tokens}}`,
//!   `turn.failed {error: {message}}` and `error {message}`. An `error` event does not end the
//!   turn (`event_processor_with_jsonl_output.rs` keeps running after it; it carries retries such
//!   as `Reconnecting... 1/5`), so only the last terminal event decides. Usage limits read
//!   `You've hit your usage limit. … try again at Mar 10th, 2026 3:39 AM.` (a local clock time,
//!   `codex-rs/core/src/error.rs`) or, in older versions, `… try again in 2 days 17 hours 14
//!   minutes.` A refused patch or command is told only on stderr (`ERROR …: error=patch
//!   rejected: …`). Samples of both CLIs' output are in `tests/cli/real_agents/captures/`.

use std::time::SystemTime;

use super::limits::{LIMIT_OPENING, limit_of, usage_limit};

use crate::llm::Usage;
pub use crate::time::Now;
use serde_json::Value;

/// How an agent's stdout is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Parser {
    /// The whole of stdout is the result.
    Text,
    /// `claude -p --output-format json` or `stream-json`.
    ClaudeJson,
    /// `codex exec --json`.
    CodexJsonl,
}

impl Parser {
    /// `text`, `claude-json` or `codex-jsonl`.
    pub fn parse_name(s: &str) -> Option<Self> {
        match s {
            "text" => Some(Self::Text),
            "claude-json" => Some(Self::ClaudeJson),
            "codex-jsonl" => Some(Self::CodexJsonl),
            _ => None,
        }
    }
}

/// A CLI agent: the command and its arguments for readers and for writers, the parser, and
/// environment changes. The prompt always goes on stdin, which is then closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub name: String,
    /// How swarm speaks with it.
    pub kind: Kind,
    /// The program, looked up on PATH.
    pub command: String,
    pub reader_args: Vec<String>,
    pub writer_args: Vec<String>,
    pub parser: Parser,
    /// Extra variables to drop from the inherited environment.
    pub drop_env: Vec<String>,
    /// Variables to pass even if swarm would drop them (never swarm's own API key).
    pub pass_env: Vec<String>,
    /// Variables set for the agent, over what it inherits.
    pub set_env: Vec<(String, String)>,
    /// How its sessions are named and continued.
    pub sessions: Sessions,
    /// What it writes besides its checkout and TMPDIR when confined (its own state): paths
    /// from `/`, from the home (`~/…`) or from a variable (`$CODEX_HOME`, left out when unset).
    pub writes: Vec<String>,
    /// The reader's and the writer's arguments when swarm confines it, for an agent whose own
    /// sandbox cannot run inside swarm's confinement; `None`: the same as unconfined.
    pub confined_args: Option<Box<(Vec<String>, Vec<String>)>>,
}

impl Profile {
    /// The profile as it runs under swarm's confinement: its confined arguments, if any, in
    /// place of the others.
    #[must_use]
    pub fn under_confinement(mut self) -> Self {
        if let Some(args) = self.confined_args.take() {
            (self.reader_args, self.writer_args) = *args;
        }
        self
    }
}

/// How swarm speaks with an agent's process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The prompt on stdin, then closed; stdout read by the profile's parser.
    Cli,
    /// The Agent Client Protocol: JSON-RPC over stdin and stdout, swarm as the client.
    Acp,
}

/// How a CLI keeps its sessions, for an attempt to continue an earlier one's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sessions {
    /// None that swarm knows how to continue: every attempt starts afresh.
    None,
    /// Claude Code: `--session-id <uuid>` names a new session up front, `--resume <uuid>`
    /// continues it.
    Claude,
    /// Codex: the thread id is in its first event (`thread.started`); `exec … resume <id>`
    /// continues the thread.
    Codex,
    /// An ACP agent that advertises `session/resume` or `loadSession`: the session id comes from
    /// `session/new`, and a later attempt resumes (or loads) it.
    Acp,
}

/// The session an attempt of a CLI agent runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Session<'a> {
    /// A new one, named up front where the CLI lets swarm name it.
    New(Option<&'a str>),
    /// An earlier attempt's, continued.
    Continue(&'a str),
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|&a| a.to_owned()).collect()
}

/// Claude Code in print mode. Print mode never stops to ask: a tool call the permission mode
/// does not allow is denied and reported in the result's `permission_denials`.
pub fn claude_profile() -> Profile {
    Profile {
        name: "claude".to_owned(),
        kind: Kind::Cli,
        command: "claude".to_owned(),
        // `default` mode only auto-approves reads; the tools that change files or run commands are
        // also taken away, so the model does not spend turns on calls that would be denied (and
        // plan mode is avoided: it makes the answer a plan and had a bug letting allow rules
        // write, anthropics/claude-code#57439).
        reader_args: strings(&[
            "-p",
            "--output-format",
            "json",
            "--permission-mode",
            "default",
            "--disallowedTools",
            "Edit,Write,MultiEdit,NotebookEdit,Bash",
        ]),
        // `acceptEdits` approves file edits (and mkdir/touch/mv/cp); other shell commands are
        // denied, as for the built-in agent, which runs commands only when the user allows them.
        writer_args: strings(&[
            "-p",
            "--output-format",
            "json",
            "--permission-mode",
            "acceptEdits",
        ]),
        parser: Parser::ClaudeJson,
        // Claude Code ≥ 2.1.39 refuses to start when it sees these (its nested-session guard), and
        // they leak in when swarm itself runs inside a Claude Code session.
        drop_env: strings(&["CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT"]),
        pass_env: Vec::new(),
        // swarm owns retries: Claude Code alone retries a failing API for minutes, silently
        // (ten retries, backing off), so a lasting error would be seen only at the task's
        // timeout. One retry of its own; then the attempt fails and swarm's backoff, events
        // and report take over.
        set_env: vec![("CLAUDE_CODE_MAX_RETRIES".to_owned(), "1".to_owned())],
        sessions: Sessions::Claude,
        // Its sessions, settings and caches (CLAUDE_CONFIG_DIR moves them), and the state file
        // it rewrites in the home.
        writes: strings(&["~/.claude/", "~/.claude.json", "$CLAUDE_CONFIG_DIR/"]),
        confined_args: None,
    }
}

/// Codex in non-interactive mode. `exec` never asks for approval; the sandbox decides what the
/// agent may touch. `--full-auto` is deprecated in favour of `--sandbox workspace-write`
/// (openai/codex `codex-rs/exec/src/cli.rs`). `-` reads the prompt from stdin.
pub fn codex_profile() -> Profile {
    Profile {
        name: "codex".to_owned(),
        kind: Kind::Cli,
        command: "codex".to_owned(),
        reader_args: codex_args("read-only"),
        writer_args: codex_args("workspace-write"),
        parser: Parser::CodexJsonl,
        drop_env: Vec::new(),
        pass_env: Vec::new(),
        set_env: Vec::new(),
        sessions: Sessions::Codex,
        // Its sessions, logs and caches (CODEX_HOME moves them).
        writes: strings(&["~/.codex/", "$CODEX_HOME/"]),
        // Codex's own sandboxes (bubblewrap) make namespaces and mounts, which Landlock refuses:
        // under swarm's confinement every command and patch of theirs would fail while Codex
        // still ends "completed". Confined by swarm, it runs without its own, and swarm's
        // rules are what hold (a reader's snapshot is still checked after it ran).
        confined_args: Some(Box::new((
            codex_args("danger-full-access"),
            codex_args("danger-full-access"),
        ))),
    }
}

/// `codex exec` with its JSON events, in `sandbox`, outside a git repository's check, the
/// prompt on stdin.
fn codex_args(sandbox: &str) -> Vec<String> {
    strings(&[
        "exec",
        "--json",
        "--sandbox",
        sandbox,
        "--skip-git-repo-check",
        "-",
    ])
}

/// An ACP agent named on the command line (`acp:CMD`): `sh -c CMD`, as `exec:` runs its command,
/// so that quoting, variables and `npx …` work as in a shell.
pub fn acp_profile(name: &str, command: &str) -> Profile {
    let args = strings(&["-c", command]);
    Profile {
        name: name.to_owned(),
        kind: Kind::Acp,
        command: "/bin/sh".to_owned(),
        reader_args: args.clone(),
        writer_args: args,
        parser: Parser::Text,
        drop_env: Vec::new(),
        pass_env: Vec::new(),
        set_env: Vec::new(),
        sessions: Sessions::Acp,
        writes: Vec::new(),
        confined_args: None,
    }
}

/// What an agent's output says.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub result: String,
    /// `Some(reason)` when the output reports an error (even if the process exited 0).
    pub error: Option<String>,
    pub tokens: u64,
    /// Of them, the prompts' tokens (cached, written to the cache or neither).
    pub prompt_tokens: u64,
    /// Of the prompts' tokens, those read from the provider's cache.
    pub cached_tokens: u64,
    /// Dollars; `None` when the agent does not report it.
    pub cost: Option<f64>,
    pub usage_limit: Option<UsageLimit>,
    /// Whether the output holds the agent's final, definitive answer: claude's result object,
    /// codex's `turn.completed` (or `turn.failed`, which is as final).
    pub complete: bool,
    /// Tool uses the CLI refused, each as its tool and what it was for (`Write src/x.rs`).
    pub denials: Vec<String>,
    /// The agent's own session the output names (Claude's `session_id`, Codex's thread).
    pub session: Option<String>,
}

/// The agent's account ran out of usage: retrying before the reset is pointless.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageLimit {
    pub message: String,
    /// When it resets, if the message says.
    pub resets_at: Option<SystemTime>,
    /// It ends only when a person raises a cap or buys credits: no wait is worth it.
    pub lasting: bool,
}

const UNREADABLE: &str = "could not read the agent's output";

/// Reads stdout per parser. `now` resolves relative reset times ("try again in 2 hours",
/// "resets 3pm").
pub fn parse(parser: Parser, stdout: &str, now: &Now) -> Parsed {
    match parser {
        Parser::Text => Parsed {
            result: stdout.to_owned(),
            error: None,
            tokens: 0,
            prompt_tokens: 0,
            cached_tokens: 0,
            cost: None,
            usage_limit: None,
            complete: true,
            denials: Vec::new(),
            session: None,
        },
        Parser::ClaudeJson => parse_claude(stdout, now),
        Parser::CodexJsonl => parse_codex(stdout, now),
    }
}

fn unreadable() -> Parsed {
    Parsed {
        result: String::new(),
        error: Some(UNREADABLE.to_owned()),
        tokens: 0,
        prompt_tokens: 0,
        cached_tokens: 0,
        cost: None,
        usage_limit: None,
        complete: false,
        denials: Vec::new(),
        session: None,
    }
}

/// The JSON values in stdout: one document (an object, or an array of them as old Claude Code
/// versions printed with `--verbose`), else one object per line, skipping lines that are not
/// JSON (warnings some versions print on stdout).
fn json_values(stdout: &str) -> Vec<Value> {
    let whole = stdout.trim();
    if let Ok(value) = serde_json::from_str::<Value>(whole) {
        return match value {
            Value::Array(items) => items.into_iter().filter(Value::is_object).collect(),
            Value::Object(_) => vec![value],
            _ => Vec::new(),
        };
    }
    stdout
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with('{'))
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(Value::is_object)
        .collect()
}

fn text<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn count(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn parse_claude(stdout: &str, now: &Now) -> Parsed {
    let values = json_values(stdout);
    if let Some(result) = values
        .iter()
        .rev()
        .find(|v| text(v, "type") == Some("result"))
    {
        return claude_result(result, now);
    }
    // No result object: the agent died or was killed mid-stream. Keep what the stream shows.
    let messages: Vec<&Value> = values
        .iter()
        .filter(|v| text(v, "type") == Some("assistant"))
        .filter_map(|v| v.get("message"))
        .collect();
    if messages.is_empty() && !values.iter().any(|v| text(v, "type") == Some("system")) {
        return unreadable();
    }
    // One API message is streamed as several lines (one per content block) with the same id
    // and usage: count each id once.
    let mut seen = std::collections::HashSet::new();
    let usage = messages
        .iter()
        .filter(|m| seen.insert(text(m, "id").unwrap_or_default().to_owned()))
        .filter_map(|m| m.get("usage"))
        .map(claude_usage)
        .fold(Usage::default(), |mut sum, u| {
            sum += u;
            sum
        });
    let result = messages
        .iter()
        .rev()
        .find_map(|m| {
            let blocks = m.get("content")?.as_array()?;
            let parts: Vec<&str> = blocks
                .iter()
                .filter(|b| text(b, "type") == Some("text"))
                .filter_map(|b| text(b, "text"))
                .collect();
            (!parts.is_empty()).then(|| parts.join("\n"))
        })
        .unwrap_or_default();
    Parsed {
        result,
        error: Some("the agent stopped before reporting its result".to_owned()),
        tokens: usage.total_tokens,
        prompt_tokens: usage.prompt_tokens,
        cached_tokens: usage.cached_tokens,
        cost: None,
        usage_limit: None,
        complete: false,
        denials: Vec::new(),
        session: values
            .iter()
            .find_map(|v| text(v, "session_id"))
            .map(str::to_owned),
    }
}

/// Anthropic counts a prompt's tokens in three parts, none inside another: `input_tokens`
/// (neither read from nor written to the cache), `cache_creation_input_tokens` and
/// `cache_read_input_tokens`.
fn claude_usage(usage: &Value) -> Usage {
    let cached = count(usage, "cache_read_input_tokens");
    let prompt =
        count(usage, "input_tokens") + count(usage, "cache_creation_input_tokens") + cached;
    let answer = count(usage, "output_tokens");
    Usage {
        prompt_tokens: prompt,
        completion_tokens: answer,
        total_tokens: prompt + answer,
        cached_tokens: cached,
    }
}

fn claude_result(r: &Value, now: &Now) -> Parsed {
    let result = text(r, "result").unwrap_or_default().to_owned();
    let subtype = text(r, "subtype").unwrap_or("success");
    let is_error = r.get("is_error").and_then(Value::as_bool).unwrap_or(false);
    let errors: Vec<&str> = r
        .get("errors")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let usage = r.get("usage").map(claude_usage).unwrap_or_default();
    // `cost_usd` is the name older versions used.
    let cost = r
        .get("total_cost_usd")
        .or_else(|| r.get("cost_usd"))
        .and_then(Value::as_f64);

    let failed = is_error || subtype != "success";
    // The known trap the other way round: some versions report a usage limit as a plain
    // answer. Only a short result that opens with a limit phrase is taken for one.
    let limit_as_answer = !failed
        && result.len() < 200
        && LIMIT_OPENING
            .as_ref()
            .is_some_and(|r| r.is_match(result.trim()));
    let error = if failed {
        let detail = if is_error && !result.trim().is_empty() {
            result.trim().to_owned()
        } else {
            errors.join("; ")
        };
        Some(match (subtype, detail.is_empty()) {
            ("success", true) => "the agent reported an error".to_owned(),
            ("success", false) => detail,
            (_, true) => describe_subtype(subtype),
            (_, false) => format!("{}: {detail}", describe_subtype(subtype)),
        })
    } else if limit_as_answer {
        Some(result.trim().to_owned())
    } else {
        None
    };
    let usage_limit = error.as_ref().and_then(|_| {
        std::iter::once(result.as_str())
            .chain(errors.iter().copied())
            .find_map(|m| usage_limit(m, now))
            // Claude Code names the limit in a field too, whatever its text says.
            .or_else(|| {
                (text(r, "api_error") == Some("usage_limit_reached")).then(|| {
                    let said = [result.as_str()]
                        .into_iter()
                        .chain(errors.iter().copied())
                        .find(|m| !m.trim().is_empty())
                        .unwrap_or("usage limit reached");
                    limit_of(said, now)
                })
            })
    });
    Parsed {
        result,
        error,
        tokens: usage.total_tokens,
        prompt_tokens: usage.prompt_tokens,
        cached_tokens: usage.cached_tokens,
        cost,
        usage_limit,
        complete: true,
        denials: claude_denials(r),
        session: text(r, "session_id").map(str::to_owned),
    }
}

/// Tool uses the CLI refused that only its stderr tells: Codex logs a rejected patch or command
/// as `ERROR codex_core::tools::router: error=patch rejected: writing outside of the project;
/// rejected by user approval settings`, with nothing of it in its JSON events.
pub fn stderr_denials(parser: Parser, stderr: &str) -> Vec<String> {
    if parser != Parser::CodexJsonl {
        return Vec::new();
    }
    stderr
        .lines()
        .filter_map(|line| line.split_once(" error=").map(|(_, why)| why.trim()))
        .filter(|why| why.contains("rejected"))
        .map(|why| crate::ui::one_line(why, 300))
        .collect()
}

/// What Claude Code's `permission_denials` list: `[{tool_name, tool_input}]`.
fn claude_denials(r: &Value) -> Vec<String> {
    let Some(list) = r.get("permission_denials").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .map(|d| {
            let tool = text(d, "tool_name").unwrap_or("a tool");
            let input = d.get("tool_input");
            let what = ["file_path", "notebook_path", "path", "command", "url"]
                .iter()
                .find_map(|k| input.and_then(|i| text(i, k)));
            match what {
                Some(what) => format!("{tool} {}", crate::ui::one_line(what, 200)),
                None => tool.to_owned(),
            }
        })
        .collect()
}

fn describe_subtype(subtype: &str) -> String {
    match subtype {
        "error_max_turns" => "the agent reached its turn limit (error_max_turns)".to_owned(),
        "error_during_execution" => {
            "the agent failed while running (error_during_execution)".to_owned()
        }
        "error_max_budget_usd" => "the agent reached its budget (error_max_budget_usd)".to_owned(),
        other => format!("the agent reported {other}"),
    }
}

/// The last terminal event of a codex turn.
enum Ending {
    Completed,
    Failed(String),
}

fn parse_codex(stdout: &str, now: &Now) -> Parsed {
    let events: Vec<Value> = stdout
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with('{'))
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|v| v.get("type").is_some_and(Value::is_string))
        .collect();
    if events.is_empty() {
        return unreadable();
    }
    let mut message = None;
    let mut ending = None;
    let mut errors = Vec::new();
    let (mut tokens, mut prompt_tokens, mut cached_tokens) = (0, 0, 0);
    let mut thread = None;
    for event in &events {
        match text(event, "type").unwrap_or_default() {
            "thread.started" => thread = text(event, "thread_id").map(str::to_owned),
            "item.completed" => {
                if let Some(item) = event.get("item")
                    && text(item, "type") == Some("agent_message")
                {
                    message = text(item, "text").map(str::to_owned);
                }
            }
            "turn.completed" => {
                // The usage is the thread's running total (`usage_from_last_total` in
                // `event_processor_with_jsonl_output.rs`), so the last one counts, not the sum.
                // Cached input is part of input_tokens, hence counted once.
                if let Some(usage) = event.get("usage") {
                    prompt_tokens = count(usage, "input_tokens");
                    cached_tokens = count(usage, "cached_input_tokens");
                    tokens = prompt_tokens + count(usage, "output_tokens");
                }
                ending = Some(Ending::Completed);
            }
            "turn.failed" => {
                let why = event
                    .get("error")
                    .and_then(|e| text(e, "message"))
                    .unwrap_or("the turn failed");
                ending = Some(Ending::Failed(why.to_owned()));
            }
            "error" => errors.push(text(event, "message").unwrap_or("error").to_owned()),
            _ => {}
        }
    }
    let (error, complete) = match ending {
        // Error events before the end were retried (`Reconnecting... 1/5`): the turn succeeded.
        Some(Ending::Completed) => (None, true),
        Some(Ending::Failed(why)) => (Some(why), true),
        None => (
            Some(
                errors
                    .last()
                    .cloned()
                    .unwrap_or_else(|| "the agent stopped before finishing its turn".to_owned()),
            ),
            false,
        ),
    };
    let usage_limit = error.as_ref().and_then(|why| {
        std::iter::once(why)
            .chain(errors.iter().rev())
            .find_map(|m| usage_limit(m, now))
    });
    Parsed {
        result: message.unwrap_or_default(),
        error,
        tokens,
        prompt_tokens,
        cached_tokens,
        cost: None,
        usage_limit,
        complete,
        denials: Vec::new(),
        session: thread,
    }
}

#[cfg(test)]
#[path = "cli_tests.rs"]
mod tests;
