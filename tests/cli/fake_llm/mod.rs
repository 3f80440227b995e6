//! A fake OpenAI-compatible chat-completions server on loopback, scripted per test: each test
//! starts its own on port 0, points swarm at `base_url()` and reads `requests()` afterwards.
//! It speaks just enough HTTP/1.1 for a keep-alive client (the model server's `http`); it knows
//! nothing of tasks or git.

use std::io::{self, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::model_server::http::{lock, read_body, read_head, write_response};

/// The only path served; everything else gets a 404 and is not recorded.
const CHAT_PATH: &str = "/v1/chat/completions";

type Script = dyn Fn(&Request, usize) -> Reply + Send + Sync;

/// A running fake server. Dropping it closes every connection and joins every thread.
pub struct FakeLlm {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

/// One chat-completions request as the server received it.
#[derive(Clone, Debug)]
pub struct Request {
    /// When its request line arrived.
    pub at: Instant,
    /// The JSON body; a body that is not JSON is kept as a string (and answered with a 400).
    pub body: Value,
    /// Header names lowercased, values trimmed, in the order sent.
    pub headers: Vec<(String, String)>,
}

/// What the server answers to one request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// 200 with an assistant message with this text content.
    Text(String),
    /// 200 with an assistant message calling tools: (call id, function name, arguments JSON
    /// value) — arguments are sent as a JSON *string*, as the real API does.
    ToolCalls(Vec<(String, String, Value)>),
    /// Any status with a raw body and extra headers (e.g. 429 + Retry-After: 1; 500; 401).
    /// `Content-Type` defaults to JSON; a `Connection: close` header closes the connection.
    Status {
        status: u16,
        body: String,
        headers: Vec<(String, String)>,
    },
    /// 200 whose body is not JSON (though its `Content-Type` claims it is).
    Garbage,
    /// Read the request and never answer (keep the socket open until the server is dropped).
    Hang,
    /// A slow but steady model: a `Text` or `ToolCalls` reply in `pieces`, each `gap` after
    /// the one before (as a stream when one is asked for, else whole after the last gap).
    Slow {
        reply: Box<Reply>,
        pieces: usize,
        gap: Duration,
    },
    /// A model stuck mid-answer: `text` streamed, then nothing more, the connection held open
    /// (asked for a whole answer: no answer at all).
    Stalled(String),
}

impl Reply {
    /// `Reply::Text` from anything string-like.
    pub fn text(content: impl Into<String>) -> Self {
        Self::Text(content.into())
    }

    /// One tool call.
    pub fn tool_call(id: &str, name: &str, arguments: Value) -> Self {
        Self::ToolCalls(vec![(id.to_owned(), name.to_owned(), arguments)])
    }

    /// A status with an OpenAI-shaped error body and no extra headers.
    pub fn error(status: u16, message: &str) -> Self {
        Self::Status {
            status,
            body: error_body(message),
            headers: Vec::new(),
        }
    }

    /// 429 with `Retry-After: seconds`.
    pub fn rate_limited(seconds: u64) -> Self {
        Self::Status {
            status: 429,
            body: error_body("Rate limit reached"),
            headers: vec![("Retry-After".to_owned(), seconds.to_string())],
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

    /// The messages of the body (empty when there are none).
    pub fn messages(&self) -> &[Value] {
        self.body["messages"].as_array().map_or(&[], Vec::as_slice)
    }
}

struct Shared {
    script: Box<Script>,
    stopping: AtomicBool,
    requests: Mutex<Vec<Request>>,
    /// Told each time a request is recorded.
    arrived: Condvar,
    /// A clone of every accepted socket, so `Drop` can shut it down and wake its thread.
    connections: Mutex<Vec<(TcpStream, JoinHandle<()>)>>,
    /// The context size `GET /props` says, as llama.cpp's server does; none: a 404.
    context: Mutex<Option<u64>>,
    /// With a prefix cache (`cache_prefixes`), every prompt it has seen.
    prefixes: Mutex<Option<Vec<String>>>,
    /// The usage of every answer that had one: (prompt tokens, cached tokens).
    reported: Mutex<Vec<(u64, u64)>>,
}

impl FakeLlm {
    /// A server whose replies come from `script`, called with each request and the number of
    /// requests seen before it (0-based).
    pub fn start(script: impl Fn(&Request, usize) -> Reply + Send + Sync + 'static) -> Self {
        Self::start_on(0, script)
    }

    /// The same on loopback port `port` (0: any free one), for a server that comes up where
    /// swarm was already told to look.
    pub fn start_on(
        port: u16,
        script: impl Fn(&Request, usize) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", port)).expect("binding the fake LLM");
        let addr = listener.local_addr().expect("fake LLM address");
        let shared = Arc::new(Shared {
            script: Box::new(script),
            stopping: AtomicBool::new(false),
            requests: Mutex::new(Vec::new()),
            arrived: Condvar::new(),
            connections: Mutex::new(Vec::new()),
            context: Mutex::new(None),
            prefixes: Mutex::new(None),
            reported: Mutex::new(Vec::new()),
        });
        let acceptor_shared = Arc::clone(&shared);
        let acceptor = thread::Builder::new()
            .name("fake-llm-accept".to_owned())
            .spawn(move || accept_loop(&listener, &acceptor_shared))
            .expect("spawning the fake LLM");
        Self {
            addr,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// From now on `GET /props` says the model's context is `tokens`, as llama.cpp's does.
    pub fn set_context(&self, tokens: u64) {
        *lock(&self.shared.context) = Some(tokens);
    }

    /// From now on the server models a prefix cache, as vLLM's, llama.cpp's and the hosted
    /// APIs' do: the prompt is what a chat template makes of the request (`prompt_text`), its
    /// tokens are its length in bytes over 4, and the tokens it reports as cached are the
    /// longest prefix it shares with a prompt seen before, in the same tokens.
    pub fn cache_prefixes(&self) {
        *lock(&self.shared.prefixes) = Some(Vec::new());
    }

    /// The usage of every answer so far that had one, summed: (prompt tokens, cached tokens).
    pub fn reported_usage(&self) -> (u64, u64) {
        lock(&self.shared.reported)
            .iter()
            .fold((0, 0), |(p, c), (prompt, cached)| (p + prompt, c + cached))
    }

    /// Replies in order from a list (the last one repeats when the list runs out).
    pub fn sequence(replies: Vec<Reply>) -> Self {
        assert!(!replies.is_empty(), "FakeLlm::sequence needs a reply");
        Self::start(move |_, seen| replies[seen.min(replies.len() - 1)].clone())
    }

    /// `http://127.0.0.1:PORT/v1`, the base URL a chat-completions client expects.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The loopback address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        lock(&self.shared.requests).clone()
    }

    /// Blocks until the server has recorded `n` requests (sent by the test itself).
    pub fn await_requests(&self, n: usize) {
        let mut requests = lock(&self.shared.requests);
        while requests.len() < n {
            requests = self
                .shared
                .arrived
                .wait(requests)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Blocks until `enough` holds of the requests recorded so far; panics if `swarm` ends
    /// first.
    pub fn await_requests_from(&self, swarm: &mut Child, enough: impl Fn(&[Request]) -> bool) {
        let mut requests = lock(&self.shared.requests);
        while !enough(&requests) {
            if let Some(status) = swarm.try_wait().unwrap() {
                panic!("swarm ended ({status}) before the requests waited for came");
            }
            // The wait is for a request; the timeout only lets swarm's end be noticed.
            requests = self
                .shared
                .arrived
                .wait_timeout(requests, Duration::from_millis(50))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        // `accept` has no timeout: one connection of our own wakes it to see the flag.
        drop(TcpStream::connect(self.addr));
        let mut panicked = self.acceptor.take().is_some_and(|t| t.join().is_err());
        // The acceptor is gone, so the list is complete. Shutting a socket down wakes a thread
        // blocked reading it (an idle keep-alive connection, or a `Hang`).
        let connections = std::mem::take(&mut *lock(&self.shared.connections));
        for (stream, _) in &connections {
            drop(stream.shutdown(Shutdown::Both));
        }
        for (_, thread) in connections {
            panicked |= thread.join().is_err();
        }
        // Re-raise a script's panic in the test, unless the test is already failing.
        assert!(
            !panicked || thread::panicking(),
            "a fake LLM thread panicked (its message is above)"
        );
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else { continue };
        let Ok(watch) = stream.try_clone() else {
            continue;
        };
        // Each answer is written at once; don't let Nagle hold it back.
        drop(stream.set_nodelay(true));
        let connection_shared = Arc::clone(shared);
        let thread = thread::Builder::new()
            .name("fake-llm-conn".to_owned())
            .spawn(move || {
                // A client hanging up mid-request is normal, not a test failure.
                drop(serve(stream, &connection_shared));
            })
            .expect("spawning a fake LLM connection");
        lock(&shared.connections).push((watch, thread));
    }
}

/// Serves requests on one connection until the client closes it, asks to, or the server stops.
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
        let path = head.target.split('?').next().unwrap_or_default();
        let context = *lock(&shared.context);
        if let (Some(n), "GET", "/props") = (context, head.method.as_str(), path) {
            let body = serde_json::json!({"default_generation_settings": {"n_ctx": n}});
            write_response(
                &mut writer,
                200,
                &[],
                body.to_string().as_bytes(),
                client_closes,
            )?;
        } else if head.method != "POST" || path != CHAT_PATH {
            let message = format!(
                "the fake LLM serves only POST {CHAT_PATH}, not {} {}",
                head.method, head.target
            );
            write_response(
                &mut writer,
                404,
                &[],
                error_body(&message).as_bytes(),
                client_closes,
            )?;
        } else {
            let parsed = serde_json::from_slice::<Value>(&raw);
            let request = Request {
                at,
                body: parsed
                    .as_ref()
                    .map_or_else(|_| String::from_utf8_lossy(&raw).into(), Clone::clone),
                headers: head.headers,
            };
            let seen = {
                let mut requests = lock(&shared.requests);
                requests.push(request.clone());
                shared.arrived.notify_all();
                requests.len() - 1
            };
            let usage = usage_of(shared, &request.body, &raw);
            if let Err(e) = parsed {
                let message = format!("the request body is not JSON: {e}");
                write_response(
                    &mut writer,
                    400,
                    &[],
                    error_body(&message).as_bytes(),
                    client_closes,
                )?;
            } else {
                let reply = (shared.script)(&request, seen);
                let streamed = request.body["stream"] == true;
                if streamed && !matches!(reply, Reply::Hang | Reply::Status { .. } | Reply::Garbage)
                {
                    // A stream has no length: it ends with the connection.
                    if write_stream(&mut writer, reply, &request, usage, seen)? {
                        io::copy(&mut reader, &mut io::sink())?;
                        return Ok(());
                    }
                    if request.body["stream_options"]["include_usage"] == true {
                        lock(&shared.reported).push(usage);
                    }
                    break;
                }
                let reply = match reply {
                    Reply::Slow { reply, pieces, gap } => {
                        thread::sleep(gap * u32::try_from(pieces).unwrap_or(u32::MAX));
                        *reply
                    }
                    Reply::Stalled(_) => Reply::Hang,
                    reply => reply,
                };
                if matches!(reply, Reply::Hang) {
                    // Keep reading (and ignoring) until the client or `Drop` closes the socket.
                    io::copy(&mut reader, &mut io::sink())?;
                    return Ok(());
                }
                let answers = matches!(reply, Reply::Text(_) | Reply::ToolCalls(_));
                let (status, headers, body) = render(reply, &request, usage, seen);
                if answers {
                    lock(&shared.reported).push(usage);
                }
                let server_closes = headers.iter().any(|(n, v)| {
                    n.eq_ignore_ascii_case("connection") && v.eq_ignore_ascii_case("close")
                });
                write_response(
                    &mut writer,
                    status,
                    &headers,
                    &body,
                    client_closes || server_closes,
                )?;
                if server_closes {
                    break;
                }
            }
        }
        if client_closes {
            break;
        }
    }
    writer.shutdown(Shutdown::Both)
}

fn error_body(message: &str) -> String {
    json!({"error": {"message": message, "type": "fake_llm_error", "code": null}}).to_string()
}

/// Writes `reply` (text or calls, slow or stalled) as a chat-completions stream: server-sent
/// events, a delta at a time, the usage last when `stream_options.include_usage` asks. Whether
/// the stream stalled, its connection to be held open.
fn write_stream(
    writer: &mut impl Write,
    reply: Reply,
    request: &Request,
    (prompt_tokens, cached_tokens): (u64, u64),
    seen: usize,
) -> io::Result<bool> {
    let (reply, pieces, gap, stalls) = match reply {
        Reply::Slow { reply, pieces, gap } => (*reply, pieces, gap, false),
        Reply::Stalled(text) => (Reply::Text(text), 1, Duration::ZERO, true),
        reply => (reply, 3, Duration::ZERO, false),
    };
    let (deltas, finish) = match reply {
        Reply::Text(text) => (
            split(&text, pieces)
                .into_iter()
                .map(|part| json!({"content": part}))
                .collect::<Vec<_>>(),
            "stop",
        ),
        Reply::ToolCalls(calls) => {
            let deltas = calls
                .into_iter()
                .enumerate()
                .flat_map(|(k, (id, name, arguments))| {
                    split(&arguments.to_string(), pieces)
                        .into_iter()
                        .enumerate()
                        .map(move |(n, part)| match n {
                            0 => json!({"tool_calls": [{"index": k, "id": id, "type": "function",
                                "function": {"name": name, "arguments": part}}]}),
                            _ => json!({"tool_calls": [{"index": k, "function": {"arguments": part}}]}),
                        })
                })
                .collect();
            (deltas, "tool_calls")
        }
        other => unreachable!("never streamed: {other:?}"),
    };
    writer.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n",
    )?;
    let id = format!("chatcmpl-{seen}");
    let chunk = |choices: Value| {
        let chunk = json!({"id": id, "object": "chat.completion.chunk", "created": 0,
            "model": request.body["model"], "choices": choices});
        format!("data: {chunk}\n\n")
    };
    let role = json!([{"index": 0, "delta": {"role": "assistant"}, "finish_reason": null}]);
    writer.write_all(chunk(role).as_bytes())?;
    writer.flush()?;
    // Tokens as a whole answer counts them (`render`): a quarter of its text's length.
    let chars: usize = deltas
        .iter()
        .map(|d| {
            let text = d["content"]
                .as_str()
                .or(d["tool_calls"][0]["function"]["arguments"].as_str());
            text.map_or(0, str::len)
        })
        .sum();
    let completion_tokens = (chars as u64 / 4).max(1);
    for delta in deltas {
        thread::sleep(gap);
        let piece = json!([{"index": 0, "delta": delta, "finish_reason": null}]);
        writer.write_all(chunk(piece).as_bytes())?;
        writer.flush()?;
    }
    if stalls {
        return Ok(true);
    }
    let end = json!([{"index": 0, "delta": {}, "finish_reason": finish}]);
    writer.write_all(chunk(end).as_bytes())?;
    if request.body["stream_options"]["include_usage"] == true {
        let usage = json!({"id": id, "object": "chat.completion.chunk", "created": 0,
            "model": request.body["model"], "choices": [],
            "usage": usage_json(prompt_tokens, cached_tokens, completion_tokens)});
        writer.write_all(format!("data: {usage}\n\n").as_bytes())?;
    }
    writer.write_all(b"data: [DONE]\n\n")?;
    writer.flush()?;
    Ok(false)
}

/// `text` in `pieces` parts (one at least: an empty text is one empty part).
fn split(text: &str, pieces: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(pieces.max(1)).max(1);
    let mut parts: Vec<String> = chars.chunks(size).map(|p| p.iter().collect()).collect();
    if parts.is_empty() {
        parts.push(String::new());
    }
    parts
}

/// Status, headers and body for a reply other than `Hang`.
fn render(
    reply: Reply,
    request: &Request,
    (prompt_tokens, cached_tokens): (u64, u64),
    seen: usize,
) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let (message, finish_reason, completion_chars) = match reply {
        Reply::Text(text) => {
            let chars = text.len();
            (json!({"role": "assistant", "content": text}), "stop", chars)
        }
        Reply::ToolCalls(calls) => {
            let mut chars = 0;
            let calls: Vec<Value> = calls
                .into_iter()
                .map(|(id, name, arguments)| {
                    let arguments = arguments.to_string();
                    chars += arguments.len();
                    json!({
                        "id": id,
                        "type": "function",
                        "function": {"name": name, "arguments": arguments},
                    })
                })
                .collect();
            let message = json!({"role": "assistant", "content": null, "tool_calls": calls});
            (message, "tool_calls", chars)
        }
        Reply::Status {
            status,
            body,
            headers,
        } => return (status, headers, body.into_bytes()),
        Reply::Garbage => {
            let body = b"<html><body>502 upstream sent garbage {\"choices\": [".to_vec();
            return (200, Vec::new(), body);
        }
        Reply::Hang | Reply::Slow { .. } | Reply::Stalled(_) => {
            unreachable!("rendered as text or a hang first")
        }
    };
    let completion_tokens = (completion_chars as u64 / 4).max(1);
    let body = json!({
        "id": format!("chatcmpl-{seen}"),
        "object": "chat.completion",
        "created": 0,
        "model": request.body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage_json(prompt_tokens, cached_tokens, completion_tokens),
    });
    (200, Vec::new(), body.to_string().into_bytes())
}

/// An answer's `usage`; the cached tokens only when there are some: many servers leave
/// `prompt_tokens_details` out, which must read as none cached.
fn usage_json(prompt_tokens: u64, cached_tokens: u64, completion_tokens: u64) -> Value {
    let mut usage = json!({
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    });
    if cached_tokens > 0 {
        usage["prompt_tokens_details"] = json!({"cached_tokens": cached_tokens});
    }
    usage
}

/// The prompt tokens of a request and those of them cached: without a prefix cache, a quarter
/// of the body's length and none; with one, as `FakeLlm::cache_prefixes` says.
fn usage_of(shared: &Shared, body: &Value, raw: &[u8]) -> (u64, u64) {
    let mut prefixes = lock(&shared.prefixes);
    let Some(seen) = prefixes.as_mut() else {
        return (raw.len() as u64 / 4, 0);
    };
    let prompt = prompt_text(body);
    let shared_bytes = seen
        .iter()
        .map(|earlier| common_prefix(earlier.as_bytes(), prompt.as_bytes()))
        .max()
        .unwrap_or(0);
    let usage = (prompt.len() as u64 / 4, shared_bytes as u64 / 4);
    seen.push(prompt);
    usage
}

/// The prompt a chat template makes of a request: the system message, the tool definitions,
/// then the other messages in order, each as its JSON.
pub fn prompt_text(body: &Value) -> String {
    let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
    let (system, rest) = match messages.split_first() {
        Some((first, rest)) if first["role"] == "system" => (first.to_string(), rest),
        _ => (String::new(), messages),
    };
    let mut text = system;
    if let Some(tools) = body.get("tools") {
        text.push_str(&tools.to_string());
    }
    for m in rest {
        text.push_str(&m.to_string());
    }
    text
}

/// How many bytes `a` and `b` begin with in common.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

// ---------------------------------------------------------------------------------------------
// Helpers for scripts.

/// Text of a message `content`: a string, or its text parts concatenated.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

/// The content of the last message with role `user` (empty if there is none).
pub fn last_user_text(req: &Request) -> String {
    req.messages()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| content_text(&m["content"]))
        .unwrap_or_default()
}

/// The content of the `system` (or `developer`) messages, joined by newlines.
pub fn system_text(req: &Request) -> String {
    req.messages()
        .iter()
        .filter(|m| m["role"] == "system" || m["role"] == "developer")
        .map(|m| content_text(&m["content"]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The goal a planning request plans: the line after `Goal:` in its user message (empty when
/// there is none).
pub fn planned_goal(req: &Request) -> String {
    let first = req.messages().iter().find(|m| m["role"] == "user");
    first
        .map(|m| content_text(&m["content"]))
        .unwrap_or_default()
        .lines()
        .skip_while(|l| *l != "Goal:")
        .nth(1)
        .unwrap_or_default()
        .to_owned()
}

/// Whether the request is the planner's: it offers `submit_plan`, or (once the model answered
/// without the call) asks for the plan as structured output or text under the planner's
/// system prompt.
pub fn is_planning(req: &Request) -> bool {
    has_tool(req, "submit_plan") || system_text(req).starts_with("You plan work for swarm")
}

/// Whether `body.tools` offers a function with this name.
pub fn has_tool(req: &Request, name: &str) -> bool {
    req.body["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["function"]["name"] == name))
}

/// `(tool_call_id, content)` of every message with role `tool`, in order.
pub fn tool_results(req: &Request) -> Vec<(String, String)> {
    req.messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            let id = m["tool_call_id"].as_str().unwrap_or_default().to_owned();
            (id, content_text(&m["content"]))
        })
        .collect()
}

/// Whether `tool_choice` forces the function with this name.
pub fn is_tool_choice(req: &Request, name: &str) -> bool {
    let choice = &req.body["tool_choice"];
    choice["type"] == "function" && choice["function"]["name"] == name
}

#[cfg(test)]
mod tests;
