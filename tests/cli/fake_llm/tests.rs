//! The fake server's self-tests, with a plain HTTP/1.1 client written independently of the
//! server's parser.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

use serde_json::{Value, json};

use super::{FakeLlm, Reply, has_tool, is_tool_choice, last_user_text, system_text, tool_results};

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
    hung.send(&chat("m", "hang"));
    llm.await_requests(1);

    let mut fresh = Client::connect(&llm);
    let answer = fresh.post(&chat("m", "next")).json();
    assert_eq!(answer["choices"][0]["message"]["content"], "after the hang");
    assert_eq!(llm.requests().len(), 2);
    // The hanging request was never answered: its connection ends with nothing on it.
    drop(llm);
    hung.assert_closed();
}

#[test]
fn dropping_the_server_closes_connections_and_frees_the_port() {
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
    llm.await_requests(2);

    // Neither connection, the idle one nor the one waiting for its answer, keeps the drop
    // waiting: it returns, and both are closed.
    drop(llm);
    idle.assert_closed();
    hung.assert_closed();
    TcpListener::bind(addr).expect("the port is free again");
}
