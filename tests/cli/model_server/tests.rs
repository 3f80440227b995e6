//! The model server's and the proxy's self-tests, with a plain HTTP/1.1 client written
//! independently of the server's parser.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Mutex, mpsc};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::http::lock;
use super::proxy::RefusingProxy;
use super::{INPUT_TOKENS, ModelServer, OUTPUT_TOKENS, Reply, Request, Window};

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

    /// The server-sent events of the body: `(event, data)`, checking each names its own type.
    fn events(&self) -> Vec<(String, Value)> {
        assert_eq!(self.header("content-type"), Some("text/event-stream"));
        let text = String::from_utf8(self.body.clone()).unwrap();
        text.split("\n\n")
            .filter(|e| !e.trim().is_empty())
            .map(|event| {
                let field = |name: &str| {
                    event
                        .lines()
                        .find_map(|l| l.strip_prefix(name))
                        .unwrap_or_else(|| panic!("no {name} in {event:?}"))
                        .to_owned()
                };
                let name = field("event: ");
                let data: Value = serde_json::from_str(&field("data: ")).unwrap();
                assert_eq!(data["type"], name.as_str(), "{event}");
                (name, data)
            })
            .collect()
    }
}

impl Client {
    fn connect(addr: SocketAddr) -> Self {
        let writer = TcpStream::connect(addr).unwrap();
        // Only so that a broken server fails the test instead of hanging it.
        writer
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let reader = BufReader::new(writer.try_clone().unwrap());
        Self { reader, writer }
    }

    fn send(&mut self, method: &str, target: &str, body: Option<&Value>) {
        let body = body.map(Value::to_string).unwrap_or_default();
        let request = format!(
            "{method} {target} HTTP/1.1\r\nHost: x\r\nx-api-key: sk-test\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        self.writer.write_all(request.as_bytes()).unwrap();
    }

    fn receive(&mut self) -> io::Result<Answer> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {line:?}"));
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            let field = line.trim_end();
            if field.is_empty() {
                break;
            }
            let (name, value) = field.split_once(':').unwrap();
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
        let length: usize = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .map(|(_, v)| v.parse().unwrap())
            .expect("a Content-Length");
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body)?;
        Ok(Answer {
            status,
            headers,
            body,
        })
    }

    fn call(&mut self, method: &str, target: &str, body: Option<&Value>) -> Answer {
        self.send(method, target, body);
        self.receive().unwrap()
    }
}

fn messages_request(stream: bool) -> Value {
    json!({"model": "claude-test", "max_tokens": 100, "stream": stream,
           "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]})
}

fn responses_request() -> Value {
    json!({"model": "gpt-test", "stream": true,
           "input": [{"type": "message", "role": "user",
                      "content": [{"type": "input_text", "text": "hello"}]}]})
}

fn names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(n, _)| n.as_str()).collect()
}

#[test]
fn a_text_reply_streams_the_messages_events_in_order() {
    let server = ModelServer::start(|_, _| Reply::text("hi there"));
    let mut client = Client::connect(server.addr());

    let answer = client.call(
        "POST",
        "/v1/messages?beta=true",
        Some(&messages_request(true)),
    );

    assert_eq!(answer.status, 200);
    let events = answer.events();
    assert_eq!(
        names(&events),
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(events[0].1["message"]["model"], "claude-test");
    assert_eq!(events[1].1["content_block"]["type"], "text");
    assert_eq!(events[2].1["delta"]["type"], "text_delta");
    assert_eq!(events[2].1["delta"]["text"], "hi there");
    assert_eq!(events[4].1["delta"]["stop_reason"], "end_turn");
    assert_eq!(events[4].1["usage"]["output_tokens"], OUTPUT_TOKENS);
    let recorded = server.requests();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].path, "/v1/messages");
    assert_eq!(recorded[0].header("X-Api-Key"), Some("sk-test"));
    assert_eq!(recorded[0].body, messages_request(true));
}

#[test]
fn a_tool_call_streams_its_input_as_json_pieces_that_join() {
    let input = json!({"file_path": "notes.txt", "content": "one\ntwo\n"});
    let server = ModelServer::start({
        let input = input.clone();
        move |_, _| Reply::tool_call("Write", input.clone())
    });
    let mut client = Client::connect(server.addr());

    let events = client
        .call("POST", "/v1/messages", Some(&messages_request(true)))
        .events();

    let start = &events[1].1["content_block"];
    assert_eq!(start["type"], "tool_use");
    assert_eq!(start["name"], "Write");
    assert_eq!(start["input"], json!({}));
    let pieces: Vec<&str> = events
        .iter()
        .filter(|(n, _)| n == "content_block_delta")
        .map(|(_, d)| {
            assert_eq!(d["delta"]["type"], "input_json_delta");
            d["delta"]["partial_json"].as_str().unwrap()
        })
        .collect();
    assert_eq!(pieces.len(), 2);
    let joined: Value = serde_json::from_str(&pieces.concat()).unwrap();
    assert_eq!(joined, input);
    let delta = events.iter().find(|(n, _)| n == "message_delta").unwrap();
    assert_eq!(delta.1["delta"]["stop_reason"], "tool_use");
}

#[test]
fn a_request_without_stream_gets_one_message() {
    let server = ModelServer::start(|_, _| Reply::text("whole"));
    let mut client = Client::connect(server.addr());

    let answer = client.call("POST", "/v1/messages", Some(&messages_request(false)));

    assert_eq!(answer.status, 200);
    let message = answer.json();
    assert_eq!(message["type"], "message");
    assert_eq!(message["content"][0]["text"], "whole");
    assert_eq!(message["stop_reason"], "end_turn");
    assert_eq!(message["usage"]["input_tokens"], INPUT_TOKENS);
}

#[test]
fn responses_stream_messages_function_calls_and_freeform_calls() {
    let server = ModelServer::start(|_, seen| match seen {
        0 => Reply::text("done"),
        1 => Reply::tool_call("exec_command", json!({"cmd": "ls"})),
        _ => Reply::freeform("apply_patch", "*** Begin Patch\n*** End Patch\n"),
    });
    let mut client = Client::connect(server.addr());
    let request = responses_request();

    let text = client
        .call("POST", "/v1/responses", Some(&request))
        .events();
    let call = client
        .call("POST", "/v1/responses", Some(&request))
        .events();
    let patch = client
        .call("POST", "/v1/responses", Some(&request))
        .events();

    assert_eq!(
        names(&text),
        [
            "response.created",
            "response.output_item.added",
            "response.output_text.delta",
            "response.output_item.done",
            "response.completed"
        ]
    );
    assert_eq!(text[2].1["delta"], "done");
    assert_eq!(text[3].1["item"]["content"][0]["text"], "done");
    let usage = &text[4].1["response"]["usage"];
    assert_eq!(usage["input_tokens"], INPUT_TOKENS);
    assert_eq!(usage["output_tokens"], OUTPUT_TOKENS);
    let item = &call[2].1["item"];
    assert_eq!(call[2].0, "response.output_item.done");
    assert_eq!(item["type"], "function_call");
    assert_eq!(item["name"], "exec_command");
    let arguments: Value = serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, json!({"cmd": "ls"}));
    let item = &patch[2].1["item"];
    assert_eq!(item["type"], "custom_tool_call");
    assert_eq!(item["input"], "*** Begin Patch\n*** End Patch\n");
    assert_eq!(item["call_id"], "call_0002");
}

#[test]
fn failures_take_the_shape_of_each_api() {
    let reset = UNIX_EPOCH + Duration::from_secs(4_000_000_000);
    let replies = [
        Reply::ServerError,
        Reply::RateLimited { retry_after: 7 },
        Reply::UsageLimit {
            window: Window::FiveHour,
            resets_at: Some(reset),
        },
        Reply::UsageLimit {
            window: Window::Weekly,
            resets_at: None,
        },
    ];
    let server = ModelServer::start(move |_, seen| replies[seen % 4].clone());
    let mut client = Client::connect(server.addr());
    let mut claude = || client.call("POST", "/v1/messages", Some(&messages_request(true)));

    let error = claude();
    assert_eq!(error.status, 500);
    assert_eq!(error.json()["error"]["type"], "api_error");
    let limited = claude();
    assert_eq!(limited.status, 429);
    assert_eq!(limited.header("retry-after"), Some("7"));
    assert_eq!(limited.json()["error"]["type"], "rate_limit_error");
    let five_hour = claude();
    assert_eq!(five_hour.status, 429);
    let unified = |a: &Answer, name: &str| {
        a.header(&format!("anthropic-ratelimit-unified-{name}"))
            .map(str::to_owned)
    };
    assert_eq!(unified(&five_hour, "status").as_deref(), Some("rejected"));
    assert_eq!(unified(&five_hour, "reset").as_deref(), Some("4000000000"));
    assert_eq!(
        unified(&five_hour, "representative-claim").as_deref(),
        Some("five_hour")
    );
    let weekly = claude();
    assert_eq!(
        unified(&weekly, "representative-claim").as_deref(),
        Some("seven_day")
    );
    assert_eq!(unified(&weekly, "reset"), None);

    let mut client = Client::connect(server.addr());
    let mut codex = || client.call("POST", "/v1/responses", Some(&responses_request()));
    let error = codex();
    assert_eq!(error.status, 500);
    assert_eq!(error.json()["error"]["type"], "server_error");
    let limited = codex();
    assert_eq!(limited.status, 429);
    assert_eq!(limited.header("retry-after"), Some("7"));
    assert_eq!(limited.json()["error"]["type"], "rate_limit_exceeded");
    let usage = codex().json();
    assert_eq!(usage["error"]["type"], "usage_limit_reached");
    assert_eq!(usage["error"]["resets_at"], 4_000_000_000_u64);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let left = usage["error"]["resets_in_seconds"].as_u64().unwrap();
    assert!(left <= 4_000_000_000 - now, "{usage}");
    let no_reset = codex().json();
    assert_eq!(no_reset["error"]["type"], "usage_limit_reached");
    assert!(no_reset["error"].get("resets_at").is_none(), "{no_reset}");
}

#[test]
fn a_status_reply_is_sent_as_given() {
    let server = ModelServer::start(|_, _| Reply::Status {
        status: 503,
        headers: vec![("x-test".to_owned(), "yes".to_owned())],
        body: "{\"no\": 1}".to_owned(),
    });
    let mut client = Client::connect(server.addr());

    let answer = client.call("POST", "/v1/responses", Some(&responses_request()));

    assert_eq!(answer.status, 503);
    assert_eq!(answer.header("x-test"), Some("yes"));
    assert_eq!(answer.json(), json!({"no": 1}));
}

#[test]
fn the_script_sees_model_requests_only_and_every_request_is_recorded() {
    let server = ModelServer::start(|_, seen| Reply::text(format!("answer {seen}")));
    let mut client = Client::connect(server.addr());

    let models = client.call("GET", "/v1/models", None);
    let count = client.call(
        "POST",
        "/v1/messages/count_tokens",
        Some(&messages_request(false)),
    );
    let missing = client.call("GET", "/api/hello", None);
    let first = client.call("POST", "/v1/messages", Some(&messages_request(false)));
    let second = client.call("POST", "/v1/messages", Some(&messages_request(false)));

    assert_eq!(models.status, 200);
    assert_eq!(models.json()["data"][0]["id"], "loopback-model");
    assert!(count.json()["input_tokens"].as_u64().unwrap() > 0);
    assert_eq!(missing.status, 404);
    assert_eq!(first.json()["content"][0]["text"], "answer 0");
    assert_eq!(second.json()["content"][0]["text"], "answer 1");
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(
        paths,
        [
            "/v1/models",
            "/v1/messages/count_tokens",
            "/api/hello",
            "/v1/messages",
            "/v1/messages"
        ]
    );
    assert_eq!(server.model_requests().len(), 2);
}

#[test]
fn a_hanging_reply_writes_nothing_and_the_server_still_stops() {
    let (arrived, arrival) = mpsc::channel();
    let arrived = Mutex::new(arrived);
    let server = ModelServer::start(move |_, _| {
        lock(&arrived).send(()).unwrap();
        Reply::Hang
    });
    let mut client = Client::connect(server.addr());
    client.send("POST", "/v1/messages", Some(&messages_request(true)));
    arrival.recv().unwrap();

    drop(server);

    let mut rest = Vec::new();
    client.reader.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
}

#[test]
fn request_helpers_read_both_apis() {
    let request = |path: &str, body: Value| Request {
        at: std::time::Instant::now(),
        method: "POST".to_owned(),
        path: path.to_owned(),
        headers: Vec::new(),
        body,
    };
    let claude = request(
        "/v1/messages",
        json!({
        "tools": [{"name": "Write"}, {"name": "Read"}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "TASK one"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Write",
                                               "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                          "content": "File created"}]},
            {"role": "user", "content": "and more"},
        ]}),
    );
    let codex = request(
        "/v1/responses",
        json!({
        "tools": [{"type": "function", "name": "exec_command"},
                  {"type": "custom", "name": "apply_patch"}],
        "input": [
            {"type": "message", "role": "developer",
             "content": [{"type": "input_text", "text": "not the user"}]},
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "TASK two"}]},
            {"type": "function_call", "call_id": "c", "name": "exec_command",
             "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": "Read-only"},
            {"type": "custom_tool_call_output", "call_id": "d", "output": "patch rejected"},
        ]}),
    );

    assert_eq!(claude.api(), Some(super::Api::Messages));
    assert_eq!(claude.user_text(), "TASK one\nand more");
    assert_eq!(claude.tool_results(), ["File created"]);
    assert_eq!(claude.tool_names(), ["Write", "Read"]);
    assert_eq!(codex.api(), Some(super::Api::Responses));
    assert_eq!(codex.user_text(), "TASK two");
    assert_eq!(codex.tool_results(), ["Read-only", "patch rejected"]);
    assert_eq!(codex.tool_names(), ["exec_command", "apply_patch"]);
    assert_eq!(request("/v1/models", Value::Null).api(), None);
}

#[test]
fn the_proxy_refuses_tunnels_and_requests_and_records_their_hosts() {
    let proxy = RefusingProxy::start();

    let mut tunnel = Client::connect(proxy.addr());
    tunnel
        .writer
        .write_all(b"CONNECT api.anthropic.com:443 HTTP/1.1\r\nHost: api.anthropic.com:443\r\n\r\n")
        .unwrap();
    let refused = tunnel.receive().unwrap();
    let mut plain = Client::connect(proxy.addr());
    plain
        .writer
        .write_all(b"GET http://example.org/update HTTP/1.1\r\nHost: example.org\r\n\r\n")
        .unwrap();
    let also_refused = plain.receive().unwrap();

    assert_eq!(refused.status, 403);
    assert_eq!(also_refused.status, 403);
    // Each connection is closed after its answer.
    let mut rest = Vec::new();
    tunnel.reader.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
    assert_eq!(proxy.hosts(), ["api.anthropic.com:443", "example.org"]);
    assert!(proxy.url().starts_with("http://127.0.0.1:"));
}
