//! A fake OpenAI-compatible chat-completions server on loopback, scripted per test: each test
//! starts its own on port 0, points swarm at `base_url()` and reads `requests()` afterwards.
//! It speaks just enough HTTP/1.1 for a keep-alive client; it knows nothing of tasks or git.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Instant;

use serde_json::{Value, json};

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
    /// A clone of every accepted socket, so `Drop` can shut it down and wake its thread.
    connections: Mutex<Vec<(TcpStream, JoinHandle<()>)>>,
}

impl FakeLlm {
    /// A server whose replies come from `script`, called with each request and the number of
    /// requests seen before it (0-based).
    pub fn start(script: impl Fn(&Request, usize) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding the fake LLM");
        let addr = listener.local_addr().expect("fake LLM address");
        let shared = Arc::new(Shared {
            script: Box::new(script),
            stopping: AtomicBool::new(false),
            requests: Mutex::new(Vec::new()),
            connections: Mutex::new(Vec::new()),
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

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking script holds no lock, so the data is consistent even if poisoned.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
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

/// A request line and its headers.
struct Head {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
}

impl Head {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn has_token(&self, name: &str, token: &str) -> bool {
        self.header(name)
            .is_some_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
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
        let path = head.path.split('?').next().unwrap_or_default();
        if head.method != "POST" || path != CHAT_PATH {
            let message = format!(
                "the fake LLM serves only POST {CHAT_PATH}, not {} {}",
                head.method, head.path
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
                requests.len() - 1
            };
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
                if matches!(reply, Reply::Hang) {
                    // Keep reading (and ignoring) until the client or `Drop` closes the socket.
                    io::copy(&mut reader, &mut io::sink())?;
                    return Ok(());
                }
                let (status, headers, body) = render(reply, &request, &raw, seen);
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

/// Reads a request line and headers; `None` at a clean end of stream.
fn read_head(reader: &mut impl BufRead) -> io::Result<Option<Head>> {
    let mut line = String::new();
    // Blank lines before a request line are allowed (RFC 9112 §2.2).
    loop {
        line.clear();
        if read_line(reader, &mut line)? == 0 {
            return Ok(None);
        }
        if !line.trim().is_empty() {
            break;
        }
    }
    let mut parts = line.split_whitespace();
    let (Some(method), Some(path)) = (parts.next(), parts.next()) else {
        return Err(invalid(format!("bad request line {line:?}")));
    };
    let mut head = Head {
        method: method.to_owned(),
        path: path.to_owned(),
        headers: Vec::new(),
    };
    loop {
        line.clear();
        if read_line(reader, &mut line)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let field = line.trim_end_matches(['\r', '\n']);
        if field.is_empty() {
            return Ok(Some(head));
        }
        let Some((name, value)) = field.split_once(':') else {
            return Err(invalid(format!("bad header line {field:?}")));
        };
        head.headers
            .push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
}

/// One line including its `\n`, decoded leniently; 0 at end of stream.
fn read_line(reader: &mut impl BufRead, line: &mut String) -> io::Result<usize> {
    let mut bytes = Vec::new();
    let n = reader.read_until(b'\n', &mut bytes)?;
    line.push_str(&String::from_utf8_lossy(&bytes));
    Ok(n)
}

fn read_body(reader: &mut impl BufRead, head: &Head) -> io::Result<Vec<u8>> {
    if head.has_token("transfer-encoding", "chunked") {
        return read_chunked(reader);
    }
    let length = match head.header("content-length") {
        Some(v) => v
            .parse::<usize>()
            .map_err(|_| invalid(format!("bad Content-Length {v:?}")))?,
        None => 0,
    };
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(body)
}

fn read_chunked(reader: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        if read_line(reader, &mut line)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let size = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size, 16)
            .map_err(|_| invalid(format!("bad chunk size line {line:?}")))?;
        if size == 0 {
            break;
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        let mut crlf = [0; 2];
        reader.read_exact(&mut crlf)?;
        if &crlf != b"\r\n" {
            return Err(invalid("a chunk does not end with CRLF".to_owned()));
        }
    }
    // Trailer fields, ignored, up to the blank line.
    loop {
        line.clear();
        if read_line(reader, &mut line)? == 0 || line.trim().is_empty() {
            return Ok(body);
        }
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

fn error_body(message: &str) -> String {
    json!({"error": {"message": message, "type": "fake_llm_error", "code": null}}).to_string()
}

/// Status, headers and body for a reply other than `Hang`.
fn render(
    reply: Reply,
    request: &Request,
    raw: &[u8],
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
        Reply::Hang => unreachable!("a hanging reply is never rendered"),
    };
    let prompt_tokens = raw.len() / 4;
    let completion_tokens = (completion_chars / 4).max(1);
    let body = json!({
        "id": format!("chatcmpl-{seen}"),
        "object": "chat.completion",
        "created": 0,
        "model": request.body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    });
    (200, Vec::new(), body.to_string().into_bytes())
}

fn write_response(
    writer: &mut impl Write,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    close: bool,
) -> io::Result<()> {
    let mut out = Vec::new();
    write!(out, "HTTP/1.1 {status} {}\r\n", reason(status))?;
    let has = |name: &str| headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    if !has("content-type") {
        out.extend_from_slice(b"Content-Type: application/json\r\n");
    }
    // The framing is ours: a script's own length or encoding would desynchronise the client.
    for (name, value) in headers {
        let framing = ["content-length", "transfer-encoding", "connection"]
            .iter()
            .any(|f| name.eq_ignore_ascii_case(f));
        if !framing {
            write!(out, "{name}: {value}\r\n")?;
        }
    }
    if close {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    write!(out, "Content-Length: {}\r\n\r\n", body.len())?;
    // One write, so the client never sees a head without its body.
    out.extend_from_slice(body);
    writer.write_all(&out)?;
    writer.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Content Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Unknown",
    }
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

// ---------------------------------------------------------------------------------------------
// Self-tests, with a plain HTTP/1.1 client written independently of the server's parser.

#[cfg(test)]
mod tests {
    use std::io::{self, BufRead, BufReader, Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::time::{Duration, Instant};

    use serde_json::{Value, json};

    use super::{
        FakeLlm, Reply, has_tool, is_tool_choice, last_user_text, system_text, tool_results,
    };

    /// One keep-alive connection.
    struct Client {
        reader: BufReader<TcpStream>,
        writer: TcpStream,
    }

    struct Answer {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    }

    impl Answer {
        fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        }

        fn json(&self) -> Value {
            serde_json::from_slice(&self.body).expect("a JSON answer")
        }
    }

    impl Client {
        fn connect(llm: &FakeLlm) -> Self {
            let writer = TcpStream::connect(llm.addr()).unwrap();
            writer
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            let reader = BufReader::new(writer.try_clone().unwrap());
            Self { reader, writer }
        }

        fn send(&mut self, body: &Value) {
            let body = body.to_string();
            let request = format!(
                "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-test\r\n\
                 Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            self.writer.write_all(request.as_bytes()).unwrap();
        }

        fn receive(&mut self) -> io::Result<Answer> {
            let mut line = String::new();
            self.reader.read_line(&mut line)?;
            let status = line
                .strip_prefix("HTTP/1.1 ")
                .and_then(|rest| rest.get(..3))
                .and_then(|code| code.parse().ok())
                .unwrap_or_else(|| panic!("bad status line {line:?}"));
            let mut headers = Vec::new();
            loop {
                line.clear();
                self.reader.read_line(&mut line)?;
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                let (name, value) = line.split_once(": ").expect("a header");
                headers.push((name.to_owned(), value.to_owned()));
            }
            let mut answer = Answer {
                status,
                headers,
                body: Vec::new(),
            };
            let length: usize = answer
                .header("content-length")
                .expect("a Content-Length")
                .parse()
                .unwrap();
            answer.body = vec![0; length];
            self.reader.read_exact(&mut answer.body)?;
            Ok(answer)
        }

        fn post(&mut self, body: &Value) -> Answer {
            self.send(body);
            self.receive().expect("an answer")
        }

        /// What a read sees once the server has gone: end of stream or a reset.
        fn assert_closed(&mut self) {
            let mut byte = [0; 1];
            match self.reader.read(&mut byte) {
                Ok(0) => {}
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {}
                other => panic!("expected a closed connection, got {other:?}"),
            }
        }
    }

    fn chat(model: &str, user: &str) -> Value {
        json!({"model": model, "messages": [{"role": "user", "content": user}]})
    }

    /// Waits until the server has recorded `n` requests.
    fn wait_for_requests(llm: &FakeLlm, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while llm.requests().len() < n {
            assert!(
                Instant::now() < deadline,
                "the server never saw {n} requests"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn sequence_is_served_in_order_on_one_keep_alive_connection() {
        let llm = FakeLlm::sequence(vec![
            Reply::text("hello there"),
            Reply::rate_limited(1),
            Reply::ToolCalls(vec![(
                "call_1".into(),
                "write_file".into(),
                json!({"path": "a.txt", "text": "hi"}),
            )]),
        ]);
        assert!(llm.base_url().starts_with("http://127.0.0.1:"));
        assert!(llm.base_url().ends_with("/v1"));
        let mut client = Client::connect(&llm);

        let request = chat("m-1", "say hello");
        let text = client.post(&request);
        assert_eq!(text.status, 200);
        assert_eq!(text.header("content-type"), Some("application/json"));
        let json = text.json();
        assert_eq!(json["id"], "chatcmpl-0");
        assert_eq!(json["object"], "chat.completion");
        assert_eq!(json["model"], "m-1");
        assert_eq!(json["choices"][0]["message"]["role"], "assistant");
        assert_eq!(json["choices"][0]["message"]["content"], "hello there");
        assert_eq!(json["choices"][0]["finish_reason"], "stop");
        let prompt = request.to_string().len() / 4;
        assert_eq!(json["usage"]["prompt_tokens"], prompt);
        assert_eq!(json["usage"]["completion_tokens"], 2);
        assert_eq!(json["usage"]["total_tokens"], prompt + 2);

        let limited = client.post(&chat("m-1", "again"));
        assert_eq!(limited.status, 429);
        assert_eq!(limited.header("retry-after"), Some("1"));
        assert!(limited.json()["error"]["message"].is_string());

        let tools = client.post(&chat("m-2", "write it")).json();
        let message = &tools["choices"][0]["message"];
        assert_eq!(tools["model"], "m-2");
        assert_eq!(tools["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(message["content"], Value::Null);
        let call = &message["tool_calls"][0];
        assert_eq!(call["id"], "call_1");
        assert_eq!(call["type"], "function");
        assert_eq!(call["function"]["name"], "write_file");
        let arguments = call["function"]["arguments"].as_str().expect("a string");
        let arguments: Value = serde_json::from_str(arguments).unwrap();
        assert_eq!(arguments, json!({"path": "a.txt", "text": "hi"}));

        // The list ran out: the last reply repeats, still on the same connection.
        let again = client.post(&chat("m-2", "more")).json();
        assert_eq!(again["id"], "chatcmpl-3");
        assert_eq!(again["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(llm.requests().len(), 4);
    }

    #[test]
    fn requests_records_bodies_and_headers_for_the_helpers() {
        let llm = FakeLlm::start(|req, _| Reply::text(format!("echo {}", last_user_text(req))));
        let body = json!({
            "model": "m",
            "messages": [
                {"role": "system", "content": "You are a worker."},
                {"role": "user", "content": "first"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                    "function": {"name": "read_file", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "file text"},
                {"role": "user", "content": [{"type": "text", "text": "sec"}, {"type": "text", "text": "ond"}]},
            ],
            "tools": [{"type": "function", "function": {"name": "read_file", "parameters": {}}}],
            "tool_choice": {"type": "function", "function": {"name": "read_file"}},
        });
        let mut client = Client::connect(&llm);
        let answer = client.post(&body).json();
        assert_eq!(answer["choices"][0]["message"]["content"], "echo second");

        let requests = llm.requests();
        assert_eq!(requests.len(), 1);
        let req = &requests[0];
        assert_eq!(req.body, body);
        assert_eq!(req.header("Authorization"), Some("Bearer sk-test"));
        assert!(req.headers.iter().any(|(n, _)| n == "content-type"));
        assert_eq!(system_text(req), "You are a worker.");
        assert!(has_tool(req, "read_file"));
        assert!(!has_tool(req, "write_file"));
        assert!(is_tool_choice(req, "read_file"));
        assert!(!is_tool_choice(req, "write_file"));
        assert_eq!(
            tool_results(req),
            vec![("c1".to_owned(), "file text".to_owned())]
        );
    }

    #[test]
    fn chunked_request_bodies_are_decoded_and_framing_stays_in_sync() {
        let llm = FakeLlm::start(|req, _| Reply::text(last_user_text(req)));
        let mut client = Client::connect(&llm);
        let body = chat("m", "chunked hello").to_string();
        let (a, b) = body.split_at(10);
        let request = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\
             {:x};ext=1\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\nX-Trailer: t\r\n\r\n",
            a.len(),
            b.len()
        );
        client.writer.write_all(request.as_bytes()).unwrap();
        let answer = client.receive().unwrap().json();
        assert_eq!(answer["choices"][0]["message"]["content"], "chunked hello");
        let next = client.post(&chat("m", "plain")).json();
        assert_eq!(next["choices"][0]["message"]["content"], "plain");
        assert_eq!(llm.requests()[0].body, chat("m", "chunked hello"));
    }

    #[test]
    fn garbage_and_other_paths_are_answered_without_breaking_the_connection() {
        let llm = FakeLlm::sequence(vec![Reply::Garbage, Reply::text("fine")]);
        let mut client = Client::connect(&llm);
        let garbage = client.post(&chat("m", "x"));
        assert_eq!(garbage.status, 200);
        assert!(serde_json::from_slice::<Value>(&garbage.body).is_err());
        client
            .writer
            .write_all(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        assert_eq!(client.receive().unwrap().status, 404);
        assert_eq!(
            client.post(&chat("m", "y")).json()["choices"][0]["message"]["content"],
            "fine"
        );
        assert_eq!(llm.requests().len(), 2, "the 404 is not recorded");
    }

    #[test]
    fn hang_does_not_answer_but_a_new_connection_is_served() {
        let llm = FakeLlm::start(|_, seen| {
            if seen == 0 {
                Reply::Hang
            } else {
                Reply::text("after the hang")
            }
        });
        let mut hung = Client::connect(&llm);
        hung.writer
            .set_read_timeout(Some(Duration::from_secs(1)))
            .unwrap();
        hung.send(&chat("m", "hang"));
        let error = hung
            .receive()
            .err()
            .expect("no answer to a hanging request");
        assert!(
            matches!(
                error.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ),
            "{error:?}"
        );

        let mut fresh = Client::connect(&llm);
        let answer = fresh.post(&chat("m", "next")).json();
        assert_eq!(answer["choices"][0]["message"]["content"], "after the hang");
        assert_eq!(llm.requests().len(), 2);
    }

    #[test]
    fn dropping_the_server_closes_connections_and_frees_the_port_promptly() {
        let llm = FakeLlm::start(|req, _| {
            if last_user_text(req) == "hang" {
                Reply::Hang
            } else {
                Reply::text("ok")
            }
        });
        let addr = llm.addr();
        let mut idle = Client::connect(&llm);
        assert_eq!(idle.post(&chat("m", "hi")).status, 200);
        let mut hung = Client::connect(&llm);
        hung.send(&chat("m", "hang"));
        wait_for_requests(&llm, 2);

        let started = Instant::now();
        drop(llm);
        let took = started.elapsed();
        assert!(took < Duration::from_secs(1), "dropping took {took:?}");
        idle.assert_closed();
        hung.assert_closed();
        TcpListener::bind(addr).expect("the port is free again");
    }
}
