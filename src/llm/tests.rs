//! Tests of the parent module.

use super::limiter::{Refusal, Slot};
use super::{Client, Endpoint, Limiter, Limits, LlmError, Notice, Reply, Usage};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant, UNIX_EPOCH};

const OK: &str = r#"{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],
    "usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}"#;
const KEY: &str = "sk-secret-123";

/// A loopback server: one connection per scripted `(status, extra header, body)`; status 0
/// means read the request and never answer. Each request read is sent back to the test.
fn serve(script: Vec<(u16, &'static str, &'static str)>) -> (String, Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let mut silent = Vec::new();
        let mut script = script.into_iter();
        loop {
            let (mut stream, _) = listener.accept().unwrap();
            let Some(request) = read_request(&mut stream) else {
                continue;
            };
            let Some((status, header, body)) = script.next() else {
                break;
            };
            tx.send(request).ok();
            if status == 0 {
                silent.push(stream);
                continue;
            }
            let len = body.len();
            let head = format!("HTTP/1.1 {status} X\r\n{header}Content-Length: {len}\r\n");
            write!(stream, "{head}Connection: close\r\n\r\n{body}").ok();
        }
        std::thread::sleep(Duration::from_secs(5));
    });
    (base, rx)
}

/// A request's head and body as text; `None` (answered with a 404) for anything but a chat
/// request, such as the client's look for the model's context size (`/props`, `/models`,
/// `/api/show`).
fn read_request(stream: &mut std::net::TcpStream) -> Option<String> {
    let mut reader = BufReader::new(&*stream);
    let (mut request, mut line, mut length) = (String::new(), String::new(), 0);
    while reader.read_line(&mut line).unwrap() > 2 {
        if let Some(n) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = n.trim().parse().unwrap();
        }
        request.push_str(&std::mem::take(&mut line));
    }
    let mut content = vec![0; length];
    reader.read_exact(&mut content).unwrap();
    if !request.starts_with("POST /v1/chat/completions ") {
        write!(
            stream,
            "HTTP/1.1 404 X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .ok();
        return None;
    }
    Some(request + &String::from_utf8(content).unwrap())
}

fn client(base: &str, max_wait_ms: u64) -> Client {
    let endpoint = Endpoint {
        base: base.into(),
        key: Some(KEY.into()),
        model: "m-1".into(),
    };
    let limits = Limits {
        connect_timeout: Duration::from_secs(2),
        read_timeout: Duration::from_secs(1),
        max_attempts: 3,
        max_wait: Duration::from_millis(max_wait_ms),
        max_in_flight: 4,
        answers: crate::llm::AnswerCaps::default(),
    };
    Client::new(endpoint, limits)
}

fn chat(client: &Client) -> (Result<Reply, LlmError>, Vec<Notice>) {
    let mut notices = Vec::new();
    let body = serde_json::json!({"messages": [{"role": "user", "content": "hello"}]});
    let result = client.chat(&body, &|| false, &mut |n| notices.push(n));
    (result, notices)
}

#[test]
fn ok_reply_is_parsed_with_usage_and_request_carries_key_and_model() {
    let (base, requests) = serve(vec![(200, "", OK)]);
    let (result, notices) = chat(&client(&base, 60_000));
    let reply = result.unwrap();
    assert_eq!(reply.message["content"], "hi");
    assert_eq!(reply.finish_reason.as_deref(), Some("stop"));
    let usage = Usage {
        prompt_tokens: 3,
        completion_tokens: 2,
        total_tokens: 5,
        cached_tokens: 0,
    };
    assert_eq!(reply.usage, usage);
    assert!(notices.is_empty());
    let request = requests.recv().unwrap().to_ascii_lowercase();
    assert!(
        request.starts_with("post /v1/chat/completions "),
        "{request}"
    );
    assert!(request.contains(&format!("authorization: bearer {KEY}")));
    assert!(request.contains(r#""model":"m-1""#));
}

#[test]
fn throttled_twice_honours_retry_after_and_cuts_concurrency() {
    let wait = "Retry-After: 1\r\n";
    let (base, _) = serve(vec![
        (429, wait, "{}"),
        (429, wait, "slow down"),
        (200, "", OK),
    ]);
    let start = Instant::now();
    let (result, notices) = chat(&client(&base, 60_000));
    assert!(result.is_ok());
    assert!(start.elapsed() >= Duration::from_secs(2));
    let throttled = |n: &&Notice| matches!(n, Notice::Throttled { status: 429, .. });
    assert_eq!(notices.iter().filter(throttled).count(), 2, "{notices:?}");
    // Alone in flight, the count says nothing: halved, and halved again for the next round.
    let limits: Vec<_> = notices
        .iter()
        .filter_map(|n| match n {
            Notice::Concurrency { limit } => Some(*limit),
            _ => None,
        })
        .collect();
    assert_eq!(limits, [2, 1], "{notices:?}");
}

#[test]
fn server_error_then_ok_succeeds_after_one_retry() {
    let (base, _) = serve(vec![(500, "", "oops"), (200, "", OK)]);
    let (result, notices) = chat(&client(&base, 50));
    assert!(result.is_ok());
    assert!(
        matches!(&notices[..], [Notice::Retrying { attempt: 1, .. }]),
        "{notices:?}"
    );
}

#[test]
fn unauthorized_is_rejected_at_once_without_leaking_the_key() {
    let body = r#"{"error":{"message":"Incorrect API key provided: sk-secret-123"}}"#;
    let (base, requests) = serve(vec![(401, "", body), (200, "", OK)]);
    let (result, notices) = chat(&client(&base, 50));
    let err = result.unwrap_err();
    let LlmError::Rejected {
        status: 401,
        message,
    } = &err
    else {
        panic!("{err:?}")
    };
    assert!(message.contains(&base) && message.contains("m-1") && message.contains("Incorrect"));
    assert!(!format!("{err} {err:?}").contains(KEY), "{err}");
    assert!(notices.is_empty());
    requests.recv().unwrap();
    assert!(requests.recv_timeout(Duration::from_millis(200)).is_err());
}

#[test]
fn unparseable_body_is_retried() {
    let (base, _) = serve(vec![
        (200, "", "{not json"),
        (200, "", r#"{"choices":[]}"#),
        (200, "", OK),
    ]);
    let (result, notices) = chat(&client(&base, 50));
    assert!(result.is_ok());
    assert_eq!(notices.len(), 2, "{notices:?}");
}

#[test]
fn silent_server_times_out_and_is_retried() {
    let (base, _) = serve(vec![(0, "", ""), (200, "", OK)]);
    let start = Instant::now();
    let (result, notices) = chat(&client(&base, 50));
    assert!(result.is_ok());
    assert!(start.elapsed() >= Duration::from_secs(1));
    assert!(
        matches!(&notices[..], [Notice::Retrying { .. }]),
        "{notices:?}"
    );
}

#[test]
fn retries_run_out_with_the_last_cause() {
    let (base, _) = serve(vec![
        (502, "", "bad"),
        (502, "", "bad"),
        (502, "", "still bad"),
    ]);
    let err = chat(&client(&base, 10)).0.unwrap_err();
    let gave_up =
        matches!(&err, LlmError::GaveUp { attempts: 3, message } if message.contains("still bad"));
    assert!(gave_up, "{err:?}");
}

#[test]
fn stop_flag_interrupts_the_backoff_wait() {
    let (base, _) = serve(vec![(500, "", "oops")]);
    let client = client(&base, 60_000);
    let (start, body) = (Instant::now(), serde_json::json!({"messages": []}));
    let stop = || start.elapsed() > Duration::from_millis(300);
    assert!(matches!(
        client.chat(&body, &stop, &mut |_| {}),
        Err(LlmError::Stopped)
    ));
    assert!(
        start.elapsed() < Duration::from_millis(700),
        "{:?}",
        start.elapsed()
    );
    assert!(matches!(
        client.chat(&body, &|| true, &mut |_| {}),
        Err(LlmError::Stopped)
    ));
}

#[test]
fn retry_after_accepts_seconds_and_http_dates() {
    let now = UNIX_EPOCH + Duration::from_secs(1_445_412_470);
    let parse = |v| super::parse_retry_after(v, now);
    assert_eq!(
        parse("Wed, 21 Oct 2015 07:28:00 GMT"),
        Some(Duration::from_secs(10))
    );
    assert_eq!(parse("Tue, 20 Oct 2015 07:28:00 GMT"), Some(Duration::ZERO));
    assert_eq!(parse(" 7 "), Some(Duration::from_secs(7)));
    assert_eq!(
        parse("Wednesday, 21-Oct-15 07:28:00 GMT"),
        Some(Duration::from_secs(10))
    );
    assert_eq!(
        parse("Wed Oct 21 07:28:00 2015"),
        Some(Duration::from_secs(10))
    );
    assert_eq!(parse("Wed, 21 Foo 2015 07:28:00 GMT"), None);
    assert_eq!(parse("soon"), None);
}

/// `n` slots of `limiter`, held.
fn hold(limiter: &Limiter, n: usize) -> Vec<Slot<'_>> {
    (0..n)
        .map(|_| limiter.acquire(&|| false).unwrap())
        .collect()
}

/// With `n` requests in flight, the last one is refused with `status`; the others are then
/// dropped with nothing to say.
fn refuse_at(limiter: &Limiter, n: usize, status: u16) -> Option<usize> {
    let mut slots = hold(limiter, n);
    slots.pop().unwrap().refused(Refusal::of(status))
}

/// `n` successes, each answered with the limit all in use; the limits it changed to.
fn grow(limiter: &Limiter, n: usize) -> Vec<usize> {
    (0..n)
        .filter_map(|_| {
            let mut slots = hold(limiter, limiter.limit());
            slots.pop().unwrap().succeeded()
        })
        .collect()
}

#[test]
fn a_429_cuts_the_limit_to_the_others_in_flight_and_a_refusal_without_a_count_halves_it() {
    // (-j, requests in flight with the refused one, status, the limit after)
    let cases = [
        (16, 9, 429, 8),
        (16, 12, 429, 11),
        (16, 2, 429, 1),
        // Alone in flight: the count says nothing; halved.
        (16, 1, 429, 8),
        // The server short for everyone: halved, whatever the count.
        (16, 12, 503, 8),
        (16, 12, 529, 8),
        (3, 3, 503, 1),
        // Never below 1.
        (1, 1, 429, 1),
        (1, 1, 503, 1),
    ];
    for (max, in_flight, status, after) in cases {
        let limiter = Limiter::new(max);
        refuse_at(&limiter, in_flight, status);
        let case = (max, in_flight, status);
        assert_eq!(limiter.limit(), after, "{case:?}");
    }
}

#[test]
fn refusals_to_one_round_leave_the_limit_at_what_the_server_took_whatever_their_order() {
    // A round of 16: the server took the first 8 and refused the other 8, each refusal
    // answered while the 8 it took were still in flight.
    let refused: [&[usize]; 3] = [
        &[8, 9, 10, 11, 12, 13, 14, 15],
        &[15, 14, 13, 12, 11, 10, 9, 8],
        &[9, 15, 8, 12, 10, 14, 11, 13],
    ];
    for order in refused {
        let limiter = Limiter::new(16);
        let mut slots: Vec<_> = hold(&limiter, 16).into_iter().map(Some).collect();
        let cuts: Vec<_> = order
            .iter()
            .filter_map(|&i| slots[i].take().unwrap().refused(Refusal::TooMany))
            .collect();
        assert_eq!(limiter.limit(), 8, "{order:?}: {cuts:?}");
        assert!(cuts.iter().all(|&limit| limit >= 8), "{order:?}: {cuts:?}");
    }
    // The same round refused with 503s: halved once, not once per answer.
    let limiter = Limiter::new(16);
    let mut slots = hold(&limiter, 16);
    let cuts: Vec<_> = slots
        .drain(8..)
        .filter_map(|slot| slot.refused(Refusal::Overloaded))
        .collect();
    assert_eq!(cuts, [8]);
}

#[test]
fn after_a_refused_try_past_the_ceiling_the_limit_climbs_back_fast_and_tries_again_rarely() {
    let limiter = Limiter::new(16);
    // The server takes 8: a 9th in flight is refused.
    assert_eq!(refuse_at(&limiter, 9, 429), Some(8));
    // One more than it took is tried after 100 successes.
    assert!(grow(&limiter, 99).is_empty());
    assert_eq!(grow(&limiter, 1), [9]);
    // Refused again, and the count read one low: a request the server took was answered just
    // before the refusal.
    let mut at_nine = hold(&limiter, 9);
    assert_eq!(at_nine.remove(0).succeeded(), None);
    assert_eq!(at_nine.pop().unwrap().refused(Refusal::TooMany), Some(7));
    drop(at_nine);
    // Back to the 8 it took quickly; the next try waits twice as long.
    assert_eq!(grow(&limiter, 2), [8]);
    assert!(grow(&limiter, 199).is_empty());
    assert_eq!(grow(&limiter, 1), [9]);
    assert_eq!(refuse_at(&limiter, 9, 429), Some(8));
    assert!(grow(&limiter, 399).is_empty());
    // A failure starts the count over.
    limiter.failed();
    assert!(grow(&limiter, 1).is_empty());
    assert_eq!(grow(&limiter, 399), [9]);
}

#[test]
fn a_try_past_the_ceiling_taken_for_a_whole_round_forgets_the_ceiling() {
    let limiter = Limiter::new(16);
    assert_eq!(refuse_at(&limiter, 9, 429), Some(8));
    assert_eq!(grow(&limiter, 100), [9]);
    // Nine successes with 9 in flight: the server takes more now.
    assert!(grow(&limiter, 8).is_empty());
    assert_eq!(grow(&limiter, 1), [10]);
    assert_eq!(grow(&limiter, 4), [11, 12]);
}

#[test]
fn successes_with_the_limit_not_all_in_use_raise_nothing() {
    let limiter = Limiter::new(16);
    // Halved without a count: the ceiling stays at -j, growth is quick.
    assert_eq!(refuse_at(&limiter, 9, 503), Some(8));
    for _ in 0..10 {
        let mut four = hold(&limiter, 4);
        assert_eq!(four.pop().unwrap().succeeded(), None);
    }
    assert_eq!(grow(&limiter, 4), [9, 10]);
    // A round of 16 of which the server took 8: the 8 answered one after another, each with
    // fewer in flight than the last, raise nothing, however many were in flight before.
    let limiter = Limiter::new(16);
    let mut slots = hold(&limiter, 16);
    for slot in slots.drain(8..) {
        slot.refused(Refusal::TooMany);
    }
    let grown: Vec<_> = slots.into_iter().filter_map(Slot::succeeded).collect();
    assert!(grown.is_empty(), "{grown:?}");
    assert_eq!(limiter.limit(), 8);
}

#[test]
fn full_limiter_makes_callers_wait_until_stopped() {
    let limiter = Limiter::new(2);
    let mut slots = hold(&limiter, 2);
    assert_eq!(slots.pop().unwrap().refused(Refusal::TooMany), Some(1));
    let start = Instant::now();
    let stop = || start.elapsed() > Duration::from_millis(150);
    assert!(matches!(limiter.acquire(&stop), Err(LlmError::Stopped)));
    drop(slots);
    assert!(limiter.acquire(&|| true).is_ok());
}

/// A loopback server that takes `took` chat requests and holds them unanswered, refuses the
/// next with a 429 (`Retry-After: 0`), and answers every request once `release` says so.
fn serve_capacity(took: usize, release: Receiver<()>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let answer = |stream: &mut std::net::TcpStream, status: u16, header: &str, body: &str| {
        let len = body.len();
        let head = format!("HTTP/1.1 {status} X\r\n{header}Content-Length: {len}\r\n");
        write!(stream, "{head}Connection: close\r\n\r\n{body}").ok();
    };
    std::thread::spawn(move || {
        let (mut held, mut refused) = (Vec::new(), false);
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            if read_request(&mut stream).is_none() {
                continue;
            }
            if refused {
                answer(&mut stream, 200, "", OK);
            } else if held.len() < took {
                held.push(stream);
            } else {
                answer(&mut stream, 429, "Retry-After: 0\r\n", "{}");
                refused = true;
                // A test that ends early lets them go too.
                release.recv().ok();
                for mut taken in held.drain(..) {
                    answer(&mut taken, 200, "", OK);
                }
            }
        }
    });
    base
}

#[test]
fn a_429_with_others_in_flight_cuts_the_limit_to_them_not_to_half() {
    let (release, released) = channel();
    let base = serve_capacity(3, released);
    let endpoint = Endpoint {
        base,
        key: None,
        model: "m".into(),
    };
    // No request may time out while the server holds it: nothing here waits on the clock.
    let limits = Limits {
        connect_timeout: Duration::from_secs(60),
        read_timeout: Duration::from_secs(600),
        max_attempts: 3,
        max_wait: Duration::from_secs(1),
        max_in_flight: 4,
        answers: crate::llm::AnswerCaps::default(),
    };
    let client = Client::new(endpoint, limits);
    let (tx, notices) = channel();
    let body = serde_json::json!({"messages": [{"role": "user", "content": "hello"}]});
    let first = std::thread::scope(|scope| {
        let calls: Vec<_> = (0..4)
            .map(|_| {
                let (client, tx, body) = (&client, tx.clone(), &body);
                scope.spawn(move || client.chat(body, &|| false, &mut |n| tx.send(n).unwrap()))
            })
            .collect();
        // The refusal is counted before the server lets the 3 it took go; every call ends
        // before anything is asserted, so that a failure cannot leave one waiting.
        let first = notices.recv().unwrap();
        release.send(()).unwrap();
        for call in calls {
            call.join().unwrap().unwrap();
        }
        first
    });
    drop(tx);
    let rest: Vec<_> = notices.iter().collect();
    assert!(
        matches!(first, Notice::Concurrency { limit: 3 }),
        "{first:?} {rest:?}"
    );
    assert!(
        matches!(&rest[..], [Notice::Throttled { status: 429, .. }]),
        "{rest:?}"
    );
}

#[test]
fn endpoint_resolves_flags_then_swarm_then_openai_and_hides_the_key() {
    let env = |name: &str| match name {
        "SWARM_MODEL" => Some("swarm-model".to_owned()),
        "OPENAI_BASE_URL" => Some("http://local/v1/".to_owned()),
        "OPENAI_API_KEY" => Some("sk-openai".to_owned()),
        _ => None,
    };
    let show = |e: Endpoint| format!("{} {:?} {}", e.base, e.key, e.model);
    let e = Endpoint::resolve(None, None, None, &env).unwrap();
    assert_eq!(show(e), r#"http://local/v1 Some("sk-openai") swarm-model"#);
    let e = Endpoint::resolve(Some("http://f"), Some("sk-f"), Some("f"), &env).unwrap();
    assert!(!format!("{e:?}").contains("sk-f") && format!("{e:?}").contains("[redacted]"));
    assert_eq!(show(e), r#"http://f Some("sk-f") f"#);
    assert!(Endpoint::resolve(None, None, Some("m"), &|_| None).is_none());
    let e = Endpoint::resolve(None, Some("k"), None, &|_| None).unwrap();
    assert_eq!(
        show(e),
        r#"https://api.openai.com/v1 Some("k") gpt-4o-mini"#
    );
    let e = Endpoint {
        base: "https://u:pw@host:1/v1".into(),
        key: None,
        model: "m".into(),
    };
    assert_eq!(e.label(), "https://host:1/v1 (model m)");
}

/// A loopback server for one streamed answer: after the request, each piece is written after
/// its pause, as server-sent events; then the connection is closed, or held open when `hang`.
/// A second request gets `OK`. Each request read is sent back to the test.
fn serve_stream(pieces: Vec<(u64, String)>, hang: bool) -> (String, Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let mut pieces = Some(pieces);
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let Some(request) = read_request(&mut stream) else {
                continue;
            };
            tx.send(request).ok();
            let Some(pieces) = pieces.take() else {
                let len = OK.len();
                write!(
                    stream,
                    "HTTP/1.1 200 X\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n{OK}"
                )
                .ok();
                continue;
            };
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
            )
            .ok();
            for (pause, piece) in pieces {
                std::thread::sleep(Duration::from_millis(pause));
                if write!(stream, "{piece}").is_err() {
                    break;
                }
            }
            if hang {
                held.push(stream);
            }
        }
    });
    (base, rx)
}

/// An SSE event with a chunk whose delta is `delta`.
fn event(delta: &str) -> String {
    format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":null}}]}}\n\n")
}

#[test]
fn a_streamed_answer_is_put_together_with_its_calls_and_usage() {
    let pieces = vec![
        (0, ": keep-alive comment\n\n".to_owned()),
        (0, event(r#"{"role":"assistant","content":"Let me "}"#)),
        (0, event(r#"{"content":"look."}"#)),
        (0, event(r#"{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"pa"}}]}"#)),
        (0, event(r#"{"tool_calls":[{"index":0,"function":{"arguments":"th\": \"a\"}"}}]}"#)),
        (0, event(r#"{"tool_calls":[{"index":1,"id":"c2","function":{"name":"list_files","arguments":"{}"}}]}"#)),
        (0, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n".to_owned()),
        (0, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":9,\"total_tokens\":49,\"prompt_tokens_details\":{\"cached_tokens\":32}}}\n\n".to_owned()),
        (0, "data: [DONE]\n\n".to_owned()),
    ];
    // The connection held open after `[DONE]`: the answer is complete without waiting for it.
    let (base, requests) = serve_stream(pieces, true);
    let (result, notices) = chat(&client(&base, 50));
    let reply = result.unwrap();
    assert_eq!(reply.message["content"], "Let me look.");
    let calls = reply.message["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0]["id"], "c1");
    assert_eq!(calls[0]["function"]["name"], "read_file");
    assert_eq!(calls[0]["function"]["arguments"], r#"{"path": "a"}"#);
    assert_eq!(calls[1]["function"]["name"], "list_files");
    assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(reply.usage.total_tokens, 49);
    assert_eq!(reply.usage.cached_tokens, 32);
    assert_eq!(reply.broken, None);
    assert!(notices.is_empty(), "{notices:?}");
    let request = requests.recv().unwrap();
    assert!(
        request.contains(r#""stream":true"#) && request.contains(r#""include_usage":true"#),
        "{request}"
    );
    assert!(requests.recv_timeout(Duration::from_millis(200)).is_err());
}

#[test]
fn a_slow_but_steady_stream_is_not_timed_out_nor_sent_again() {
    // Eight pieces 250 ms apart: 2 s in all against a 1 s request timeout, each gap well
    // inside it.
    let mut pieces: Vec<_> = (0..8)
        .map(|k| (250, event(&format!(r#"{{"content":"{k}. "}}"#))))
        .collect();
    pieces.push((0, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n".to_owned()));
    let (base, requests) = serve_stream(pieces, false);
    let (result, notices) = chat(&client(&base, 50));
    let reply = result.unwrap();
    assert_eq!(reply.message["content"], "0. 1. 2. 3. 4. 5. 6. 7. ");
    assert_eq!(reply.broken, None);
    assert!(notices.is_empty(), "{notices:?}");
    // No usage in the stream: the answer's pieces are its tokens, the prompt is estimated.
    assert_eq!(reply.usage.completion_tokens, 8);
    assert!(reply.usage.prompt_tokens > 0);
    requests.recv().unwrap();
    assert!(requests.recv_timeout(Duration::from_millis(300)).is_err());
}

#[test]
fn a_stream_that_falls_silent_is_cut_for_silence_and_kept_not_sent_again() {
    let pieces = vec![(0, event(r#"{"content":"The plan is"}"#))];
    let (base, requests) = serve_stream(pieces, true);
    let (result, notices) = chat(&client(&base, 50));
    let reply = result.unwrap();
    assert_eq!(reply.message["content"], "The plan is");
    let broken = reply.broken.expect("cut");
    assert!(broken.contains("no token came for 1.0s"), "{broken}");
    assert!(notices.is_empty(), "{notices:?}");
    requests.recv().unwrap();
    assert!(requests.recv_timeout(Duration::from_millis(300)).is_err());
}

#[test]
fn a_call_cut_mid_arguments_is_left_out_of_a_broken_answer() {
    let pieces = vec![
        (
            0,
            event(
                r#"{"tool_calls":[{"index":0,"id":"c1","function":{"name":"list_files","arguments":"{}"}}]}"#,
            ),
        ),
        (
            0,
            event(
                r#"{"tool_calls":[{"index":1,"id":"c2","function":{"name":"write_file","arguments":"{\"path\": \"a\", \"con"}}]}"#,
            ),
        ),
        (
            0,
            "data: {\"error\":{\"message\":\"slot unavailable\"}}\n\n".to_owned(),
        ),
    ];
    let (base, _) = serve_stream(pieces, false);
    let reply = chat(&client(&base, 50)).0.unwrap();
    let calls = reply.message["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["function"]["name"], "list_files");
    let broken = reply.broken.unwrap();
    assert!(broken.contains("slot unavailable"), "{broken}");
}

#[test]
fn silence_before_any_token_is_sent_once_more_then_given_up() {
    let (base, requests) = serve(vec![(0, "", ""), (0, "", ""), (200, "", OK)]);
    let (result, notices) = chat(&client(&base, 50));
    let err = result.unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("request timeout (1.0s)")
            && message.contains("--request-timeout")
            && message.contains("twice; not sent again"),
        "{message}"
    );
    assert!(
        matches!(&notices[..], [Notice::Retrying { .. }]),
        "{notices:?}"
    );
    requests.recv().unwrap();
    requests.recv().unwrap();
    assert!(requests.recv_timeout(Duration::from_millis(300)).is_err());
}

#[test]
fn a_server_that_refuses_streams_is_asked_for_whole_answers() {
    let refused =
        r#"{"error":{"message":"Unrecognized request argument supplied: stream_options"}}"#;
    let (base, requests) = serve(vec![(400, "", refused), (200, "", OK), (200, "", OK)]);
    let client = client(&base, 50);
    let (result, notices) = chat(&client);
    assert_eq!(result.unwrap().message["content"], "hi");
    assert!(notices.is_empty(), "{notices:?}");
    assert!(requests.recv().unwrap().contains(r#""stream":true"#));
    assert!(!requests.recv().unwrap().contains("stream"));
    // For good: the next request is not streamed either.
    chat(&client).0.unwrap();
    assert!(!requests.recv().unwrap().contains("stream"));
}

#[test]
fn a_price_bills_cached_prompt_tokens_at_their_own_price_and_reads_two_or_three_numbers() {
    let price = super::Price::parse("2.5, 1.25,10").unwrap();
    assert_eq!(
        (price.prompt, price.cached, price.answer),
        (2.5, 1.25, 10.0)
    );
    let usage = Usage {
        prompt_tokens: 1_000_000,
        completion_tokens: 100_000,
        total_tokens: 1_100_000,
        cached_tokens: 800_000,
    };
    // 200,000 fresh at $2.50, 800,000 cached at $1.25, 100,000 answered at $10 a million.
    assert!((price.cost(&usage) - (0.5 + 1.0 + 1.0)).abs() < 1e-9);
    let flat = super::Price {
        prompt: 2.0,
        cached: 2.0,
        answer: 8.0,
    };
    assert_eq!(
        super::Price::parse("2,8"),
        Ok(flat),
        "without a cached price, the prompt's"
    );
    for bad in ["", "1", "1,2,3,4", "-1,2", "a,b", "inf,1"] {
        assert!(super::Price::parse(bad).is_err(), "{bad:?}");
    }
}
