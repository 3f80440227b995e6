//! How the model server answers: each `Reply` in the shape of the API its request used
//! (SSE streams, JSON bodies, error bodies and headers), and the minimal answers to what is
//! not a model request.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::{Api, INPUT_TOKENS, OUTPUT_TOKENS, Reply, Request, Window};

/// A response to write.
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
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
            // Writing to a String cannot fail.
            let _ = write!(body, "event: {name}\ndata: {data}\n\n");
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
pub fn other(request: &Request, body_len: usize) -> Answer {
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

pub fn render(api: Api, reply: Reply, request: &Request, seen: usize) -> Answer {
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
                    (
                        "anthropic-ratelimit-unified-representative-claim",
                        claim.to_owned(),
                    ),
                ]
                .into_iter()
                .chain(resets_at.map(|at| {
                    (
                        "anthropic-ratelimit-unified-reset",
                        unix_seconds(at).to_string(),
                    )
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

/// An `OpenAI` error body.
fn openai_error(status: u16, error: &Value) -> Answer {
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
                &json!({"type": "server_error", "message": "Internal server error", "code": null}),
            );
        }
        Reply::RateLimited { retry_after } => {
            let mut answer = openai_error(
                429,
                &json!({"type": "rate_limit_exceeded", "code": "rate_limit_exceeded",
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
            return openai_error(429, &error);
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
