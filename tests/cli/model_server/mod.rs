//! A model server on loopback for the real Claude Code and Codex CLIs, one per test and scripted
//! per test: a closure from each model request (and how many came before it) to a `Reply`. It
//! records every request it gets (method, path, headers, JSON body) and speaks:
//!
//! - the Anthropic Messages API as Claude Code uses it: `POST /v1/messages` (Claude Code adds
//!   `?beta=true`), streamed (`stream: true`: SSE `message_start`, `content_block_start`,
//!   `content_block_delta` with `text_delta` or `input_json_delta`, `content_block_stop`,
//!   `message_delta` with the usage and `stop_reason`, `message_stop`) or not; plus
//!   `POST /v1/messages/count_tokens` and `GET /v1/models`, answered without the script;
//! - the Responses API of `OpenAI` as Codex uses it: `POST /v1/responses`, streamed (SSE
//!   `response.created`, `response.output_item.added`, `response.output_text.delta`,
//!   `response.output_item.done`, `response.completed` with the usage).
//!
//! What Claude Code 2.1.328 and Codex 0.169.0 ask for, as observed against this server: with
//! `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`, Claude Code sends nothing but one
//! `POST /v1/messages?beta=true` per turn (no token counting, no model listing, no quota
//! preflight); Codex sends one `POST /v1/responses` per turn. Everything else they try goes
//! through the proxy (see `proxy`).
//!
//! A reply is written the way the API a request used writes it: `Reply::UsageLimit` is Claude's
//! subscription limit (a 429 with the `anthropic-ratelimit-unified-*` headers) on `/v1/messages`
//! and Codex's (a 429 whose error type is `usage_limit_reached`) on `/v1/responses`. Every
//! model answer reports `INPUT_TOKENS` in and `OUTPUT_TOKENS` out, so tests can count.

pub mod http;
pub mod proxy;
mod render;

use std::io::{self, BufReader, Write as _};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use serde_json::Value;

use http::{Head, Loopback, lock, read_body, read_head, write_response};
use render::{other, render};

/// Input tokens every model answer reports.
pub const INPUT_TOKENS: u64 = 100;
/// Output tokens every model answer reports.
pub const OUTPUT_TOKENS: u64 = 20;

type Script = dyn Fn(&Request, usize) -> Reply + Send + Sync;

/// A running model server. Dropping it closes every connection and joins every thread.
pub struct ModelServer {
    shared: Arc<Shared>,
    loopback: Loopback,
}

struct Shared {
    script: Box<Script>,
    requests: Mutex<Vec<Request>>,
    model_requests: Mutex<usize>,
}

/// One request as the server received it.
#[derive(Clone, Debug)]
pub struct Request {
    /// When its request line arrived.
    pub at: Instant,
    pub method: String,
    /// The path without its query (`/v1/messages` for `/v1/messages?beta=true`).
    pub path: String,
    /// Header names lowercased, values trimmed, in the order sent.
    pub headers: Vec<(String, String)>,
    /// The JSON body; a body that is not JSON is kept as a string, and `Null` when empty.
    pub body: Value,
}

/// Which API a model request came through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// Anthropic Messages: `POST /v1/messages` (Claude Code).
    Messages,
    /// `OpenAI` Responses: `POST /v1/responses` (Codex).
    Responses,
}

/// Which of Claude's subscription windows ran out (Codex's limit names none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// `five_hour`: Claude Code says "You've hit your 5-hour limit · resets …".
    FiveHour,
    /// `seven_day`: "You've hit your weekly limit · resets …".
    Weekly,
}

/// What the server answers to one model request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A final answer: this text, `end_turn` / a completed message.
    Text(String),
    /// A call of one of the CLI's own tools with this JSON input: a `tool_use` block for Claude
    /// (`Write`, `Edit`, `Bash`, `Read`, …), a `function_call` for Codex (`exec_command`, …).
    ToolCall { name: String, input: Value },
    /// A call of a freeform tool, whose input is raw text: a `custom_tool_call` for Codex
    /// (its `apply_patch` takes the patch itself). Claude has none: a 400 there.
    Freeform { name: String, input: String },
    /// 500 with the API's error body.
    ServerError,
    /// 429 with the API's rate-limit error body and `retry-after: seconds`.
    RateLimited { retry_after: u64 },
    /// The account's usage limit, resetting at `resets_at` (Codex: none given makes it say
    /// "Try again later."; Claude: without a reset it is no usage limit, only a 429).
    UsageLimit {
        window: Window,
        resets_at: Option<SystemTime>,
    },
    /// Any status with this body and extra headers.
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Read the request and never answer (the socket stays open until the client or the
    /// server's drop closes it).
    Hang,
}

impl Reply {
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(text.into())
    }

    pub fn tool_call(name: &str, input: Value) -> Self {
        Self::ToolCall {
            name: name.to_owned(),
            input,
        }
    }

    pub fn freeform(name: &str, input: impl Into<String>) -> Self {
        Self::Freeform {
            name: name.to_owned(),
            input: input.into(),
        }
    }
}

impl Request {
    /// The first value of a header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The API of a model request; `None` for any other request.
    pub fn api(&self) -> Option<Api> {
        match (self.method.as_str(), self.path.as_str()) {
            ("POST", "/v1/messages") => Some(Api::Messages),
            ("POST", "/v1/responses") => Some(Api::Responses),
            _ => None,
        }
    }

    /// The conversation's items: Messages' `messages`, Responses' `input`.
    fn items(&self) -> &[Value] {
        let key = match self.api() {
            Some(Api::Responses) => "input",
            _ => "messages",
        };
        self.body[key].as_array().map_or(&[], Vec::as_slice)
    }

    /// Every text the user said in the conversation so far (the CLI's own context included),
    /// joined by newlines.
    pub fn user_text(&self) -> String {
        self.items()
            .iter()
            .filter(|m| m["role"] == "user")
            .flat_map(|m| texts(&m["content"]))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// What the CLI answered to each tool call so far, in order.
    pub fn tool_results(&self) -> Vec<String> {
        self.items()
            .iter()
            .flat_map(|item| match item["type"].as_str() {
                // Responses: output items of their own.
                Some("function_call_output" | "custom_tool_call_output") => {
                    vec![texts(&item["output"]).join("\n")]
                }
                // Messages: `tool_result` blocks in a user message.
                _ => item["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|block| block["type"] == "tool_result")
                    .map(|block| texts(&block["content"]).join("\n"))
                    .collect(),
            })
            .collect()
    }

    /// The names of the tools the request offers the model.
    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str())
            .map(str::to_owned)
            .collect()
    }
}

/// The texts in a `content`: a string, or the `text` of its parts.
fn texts(content: &Value) -> Vec<String> {
    match content {
        Value::String(s) => vec![s.clone()],
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

impl ModelServer {
    /// A server whose model replies come from `script`, called with each model request and the
    /// number of model requests before it (0-based).
    pub fn start(script: impl Fn(&Request, usize) -> Reply + Send + Sync + 'static) -> Self {
        let shared = Arc::new(Shared {
            script: Box::new(script),
            requests: Mutex::new(Vec::new()),
            model_requests: Mutex::new(0),
        });
        let serving = Arc::clone(&shared);
        let loopback = Loopback::start("model-server", move |stream| {
            // A client hanging up mid-request is normal, not a test failure.
            drop(serve(stream, &serving));
        });
        Self { shared, loopback }
    }

    /// `http://127.0.0.1:PORT`: Claude Code's `ANTHROPIC_BASE_URL` (it adds `/v1/messages`).
    pub fn url(&self) -> String {
        format!("http://{}", self.loopback.addr())
    }

    /// `http://127.0.0.1:PORT/v1`: a Codex provider's `base_url` (it adds `/responses`).
    pub fn v1_url(&self) -> String {
        format!("{}/v1", self.url())
    }

    pub fn addr(&self) -> SocketAddr {
        self.loopback.addr()
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        lock(&self.shared.requests).clone()
    }

    /// The model requests so far (`POST /v1/messages` and `/v1/responses`), in arrival order.
    pub fn model_requests(&self) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| r.api().is_some())
            .collect()
    }
}

/// Serves requests on one connection until the client closes it or the server stops.
fn serve(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    while let Some(head) = read_head(&mut reader)? {
        let at = Instant::now();
        if head.has_token("expect", "100-continue") {
            writer.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        }
        let raw = read_body(&mut reader, &head)?;
        let client_closes = head.has_token("connection", "close");
        let request = request(head, &raw, at);
        lock(&shared.requests).push(request.clone());
        let answer = match request.api() {
            Some(api) => {
                let seen = {
                    let mut count = lock(&shared.model_requests);
                    *count += 1;
                    *count - 1
                };
                match (shared.script)(&request, seen) {
                    Reply::Hang => {
                        // Keep reading (and ignoring) until the client or `Drop` closes it.
                        io::copy(&mut reader, &mut io::sink())?;
                        return Ok(());
                    }
                    reply => render(api, reply, &request, seen),
                }
            }
            None => other(&request, raw.len()),
        };
        write_response(
            &mut writer,
            answer.status,
            &answer.headers,
            &answer.body,
            client_closes,
        )?;
        if client_closes {
            break;
        }
    }
    writer.shutdown(Shutdown::Both)
}

fn request(head: Head, raw: &[u8], at: Instant) -> Request {
    let body = if raw.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(raw).unwrap_or_else(|_| String::from_utf8_lossy(raw).into())
    };
    Request {
        at,
        method: head.method,
        path: head.target.split('?').next().unwrap_or_default().to_owned(),
        headers: head.headers,
        body,
    }
}

#[cfg(test)]
mod tests;
