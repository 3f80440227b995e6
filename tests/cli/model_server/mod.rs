//! A model server on loopback for the real Claude Code and Codex CLIs, one per test and scripted
//! per test: a closure from each model request (and how many came before it) to a `Reply`. It
//! records every request it gets (method, path, headers, JSON body) and speaks:
//!
//! - the Anthropic Messages API as Claude Code uses it: `POST /v1/messages` (Claude Code adds
//!   `?beta=true`), streamed (`stream: true`: SSE `message_start`, `content_block_start`,
//!   `content_block_delta` with `text_delta` or `input_json_delta`, `content_block_stop`,
//!   `message_delta` with the usage and `stop_reason`, `message_stop`) or not; plus
//!   `POST /v1/messages/count_tokens` and `GET /v1/models`, answered without the script;
//! - the OpenAI Responses API as Codex uses it: `POST /v1/responses`, streamed (SSE
//!   `response.created`, `response.output_item.added`, `response.output_text.delta`,
//!   `response.output_item.done`, `response.completed` with the usage).
//!
//! What Claude Code 2.1.328 and Codex 0.169.0 ask for, as observed against this server: with
//! `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`, Claude Code sends nothing but one
//! `POST /v1/messages?beta=true` per turn (no count_tokens, no model listing, no quota
//! preflight); Codex sends one `POST /v1/responses` per turn. Everything else they try goes
//! through the proxy (see `proxy`).
//!
//! A reply is written the way the API a request used writes it: `Reply::UsageLimit` is Claude's
//! subscription limit (a 429 with the `anthropic-ratelimit-unified-*` headers) on `/v1/messages`
//! and Codex's (a 429 whose error type is `usage_limit_reached`) on `/v1/responses`. Every
//! model answer reports `INPUT_TOKENS` in and `OUTPUT_TOKENS` out, so tests can count.

mod http;
pub mod proxy;

use std::io::{self, BufReader, Write as _};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use http::{Head, Loopback, lock, read_body, read_head, write_response};

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
    /// OpenAI Responses: `POST /v1/responses` (Codex).
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
        path: head
            .target
            .split('?')
            .next()
            .unwrap_or_default()
            .to_owned(),
        headers: head.headers,
        body,
    }
}

/// A response to write.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn json(status: u16, body: &Value) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: body.to_string().into_bytes(),
        }
    }

    /// 200 with server-sent events, each `(event name, data)`.
    fn events(events: &[(&str, Value)]) -> Self {
        let mut body = String::new();
        for (name, data) in events {
            body.push_str(&format!("event: {name}\ndata: {data}\n\n"));
        }
        Self {
            status: 200,
            headers: vec![
                ("Content-Type".to_owned(), "text/event-stream".to_owned()),
                ("Cache-Control".to_owned(), "no-cache".to_owned()),
            ],
            body: body.into_bytes(),
        }
    }
}

/// The answers to what is not a model request: token counts and the model list minimally,
/// anything else a 404.
fn other(request: &Request, body_len: usize) -> Answer {
    match (request.method.as_str(), request.path.as_str()) {
        ("POST", "/v1/messages/count_tokens") => {
            Answer::json(200, &json!({"input_tokens": (body_len / 4).max(1)}))
        }
        // The shape of both APIs' listings at once: each reads the fields it knows.
        ("GET", "/v1/models") => Answer::json(
            200,
            &json!({
                "object": "list",
                "data": [{"id": "loopback-model", "object": "model", "type": "model",
                          "display_name": "Loopback model", "created_at": "2026-01-01T00:00:00Z",
                          "created": 0, "owned_by": "loopback"}],
                "has_more": false,
                "first_id": "loopback-model",
                "last_id": "loopback-model",
            }),
        ),
        (method, path) => Answer::json(
            404,
            &json!({"type": "error", "error": {"type": "not_found_error",
                    "message": format!("the model server does not serve {method} {path}")}}),
        ),
    }
}

fn unix_seconds(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn render(api: Api, reply: Reply, request: &Request, seen: usize) -> Answer {
    match reply {
        Reply::Status {
            status,
            headers,
            body,
        } => Answer {
            status,
            headers,
            body: body.into_bytes(),
        },
        Reply::Hang => unreachable!("a hanging reply is never rendered"),
        reply => match api {
            Api::Messages => messages(reply, request, seen),
            Api::Responses => responses(reply, request, seen),
        },
    }
}

/// An Anthropic error body.
fn anthropic_error(status: u16, kind: &str, message: &str) -> Answer {
    Answer::json(
        status,
        &json!({"type": "error", "error": {"type": kind, "message": message}}),
    )
}

/// A reply in the Messages API: streamed when the request asks for it.
fn messages(reply: Reply, request: &Request, seen: usize) -> Answer {
    let (block, stop_reason) = match reply {
        Reply::Text(text) => (json!({"type": "text", "text": text}), "end_turn"),
        Reply::ToolCall { name, input } => (
            json!({"type": "tool_use", "id": format!("toolu_{seen:04}"), "name": name,
                   "input": input}),
            "tool_use",
        ),
        Reply::Freeform { name, .. } => {
            return anthropic_error(
                400,
                "invalid_request_error",
                &format!("the Messages API has no freeform tool calls (asked for {name})"),
            );
        }
        Reply::ServerError => return anthropic_error(500, "api_error", "Internal server error"),
        Reply::RateLimited { retry_after } => {
            let mut answer = anthropic_error(429, "rate_limit_error", "Rate limited");
            answer
                .headers
                .push(("retry-after".to_owned(), retry_after.to_string()));
            return answer;
        }
        Reply::UsageLimit { window, resets_at } => {
            // What Claude Code reads as a subscription's usage limit (found by trying: the
            // status `rejected`, a reset time and the claim naming the window; without the
            // claim it says "Server is temporarily limiting requests (not your usage
            // limit)"). It reads these only when signed in with a subscription
            // (`CLAUDE_CODE_OAUTH_TOKEN`); with an API key it is a plain 429.
            let claim = match window {
                Window::FiveHour => "five_hour",
                Window::Weekly => "seven_day",
            };
            let mut answer = anthropic_error(429, "rate_limit_error", "Rate limited");
            answer.headers.extend(
                [
                    ("anthropic-ratelimit-unified-status", "rejected".to_owned()),
                    ("anthropic-ratelimit-unified-representative-claim", claim.to_owned()),
                ]
                .into_iter()
                .chain(resets_at.map(|at| {
                    ("anthropic-ratelimit-unified-reset", unix_seconds(at).to_string())
                }))
                .map(|(n, v)| (n.to_owned(), v)),
            );
            return answer;
        }
        Reply::Status { .. } | Reply::Hang => unreachable!("rendered by `render`"),
    };
    let id = format!("msg_{seen:04}");
    let model = request.body["model"].clone();
    let usage = json!({"input_tokens": INPUT_TOKENS, "output_tokens": OUTPUT_TOKENS,
                       "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
    if request.body["stream"] != true {
        return Answer::json(
            200,
            &json!({"id": id, "type": "message", "role": "assistant", "model": model,
                    "content": [block], "stop_reason": stop_reason, "stop_sequence": null,
                    "usage": usage}),
        );
    }
    // The block opens empty and its content follows in deltas, as the API streams it; a tool's
    // input comes as JSON text in two pieces, so the client must join them.
    let (start, deltas) = if block["type"] == "tool_use" {
        let input = block["input"].to_string();
        let (first, rest) = input.split_at(input.len() / 2);
        let mut start = block.clone();
        start["input"] = json!({});
        let deltas: Vec<Value> = [first, rest]
            .iter()
            .map(|part| json!({"type": "input_json_delta", "partial_json": part}))
            .collect();
        (start, deltas)
    } else {
        let deltas = vec![json!({"type": "text_delta", "text": block["text"]})];
        (json!({"type": "text", "text": ""}), deltas)
    };
    let mut events = vec![
        (
            "message_start",
            json!({"type": "message_start", "message": {
                "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
                "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": INPUT_TOKENS, "output_tokens": 1,
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": start}),
        ),
    ];
    events.extend(deltas.into_iter().map(|delta| {
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        )
    }));
    events.extend([
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta",
                   "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                   "usage": {"output_tokens": OUTPUT_TOKENS}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ]);
    Answer::events(&events)
}

/// An OpenAI error body.
fn openai_error(status: u16, error: Value) -> Answer {
    Answer::json(status, &json!({ "error": error }))
}

/// A reply in the Responses API, always streamed (Codex asks for nothing else).
fn responses(reply: Reply, request: &Request, seen: usize) -> Answer {
    let item = match reply {
        Reply::Text(text) => json!({
            "type": "message", "id": format!("msg_{seen:04}"), "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}),
        Reply::ToolCall { name, input } => json!({
            "type": "function_call", "id": format!("fc_{seen:04}"),
            "call_id": format!("call_{seen:04}"), "name": name,
            "arguments": input.to_string(), "status": "completed"}),
        Reply::Freeform { name, input } => json!({
            "type": "custom_tool_call", "id": format!("ctc_{seen:04}"),
            "call_id": format!("call_{seen:04}"), "name": name, "input": input,
            "status": "completed"}),
        Reply::ServerError => {
            return openai_error(
                500,
                json!({"type": "server_error", "message": "Internal server error", "code": null}),
            );
        }
        Reply::RateLimited { retry_after } => {
            let mut answer = openai_error(
                429,
                json!({"type": "rate_limit_exceeded", "code": "rate_limit_exceeded",
                       "message": "Rate limit reached for requests"}),
            );
            answer
                .headers
                .push(("retry-after".to_owned(), retry_after.to_string()));
            return answer;
        }
        Reply::UsageLimit { resets_at, .. } => {
            // What Codex reads as the account's usage limit: the error type; with `resets_at`
            // it names the local time ("try again at 2:47 PM"), else "Try again later."
            let mut error = json!({"type": "usage_limit_reached",
                                   "message": "The usage limit has been reached",
                                   "plan_type": "plus"});
            if let Some(at) = resets_at {
                let now = unix_seconds(SystemTime::now());
                error["resets_at"] = json!(unix_seconds(at));
                error["resets_in_seconds"] = json!(unix_seconds(at).saturating_sub(now));
            }
            return openai_error(429, error);
        }
        Reply::Status { .. } | Reply::Hang => unreachable!("rendered by `render`"),
    };
    let id = format!("resp_{seen:04}");
    let model = request.body["model"].clone();
    let mut added = item.clone();
    added["status"] = json!("in_progress");
    let mut events = vec![(
        "response.created",
        json!({"type": "response.created", "response": {"id": id, "object": "response",
               "status": "in_progress", "model": model, "output": []}}),
    )];
    if item["type"] == "message" {
        added["content"] = json!([]);
        events.push((
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 0, "item": added}),
        ));
        events.push((
            "response.output_text.delta",
            json!({"type": "response.output_text.delta", "item_id": item["id"],
                   "output_index": 0, "content_index": 0,
                   "delta": item["content"][0]["text"]}),
        ));
    } else {
        events.push((
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 0, "item": added}),
        ));
    }
    events.push((
        "response.output_item.done",
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
    ));
    events.push((
        "response.completed",
        json!({"type": "response.completed", "response": {
            "id": id, "object": "response", "status": "completed", "model": model,
            "output": [item],
            "usage": {"input_tokens": INPUT_TOKENS,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": OUTPUT_TOKENS,
                      "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS}}}),
    ));
    Answer::events(&events)
}

#[cfg(test)]
mod tests;
