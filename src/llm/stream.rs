//! A streamed answer (`"stream": true`: server-sent events) put together piece by piece: its
//! text, its function calls (their arguments arriving in fragments, by index), why it ended,
//! and the usage the last chunk carries (`stream_options.include_usage`).

use serde_json::{Value, json};

use super::{Reply, Usage};

/// The most bytes of text and call arguments one answer may bring: a server that sends more
/// is cut off there, as at an output limit.
pub(super) const ANSWER_LIMIT: usize = 8 << 20;

#[derive(Default)]
pub(super) struct Assembly {
    content: String,
    /// Each `{"id", "type", "function": {"name", "arguments"}}`, in the order of their index.
    calls: Vec<Value>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    /// Chunks that brought text, reasoning or call fragments: the answer's tokens, near enough.
    pieces: u64,
    /// `data: [DONE]` came.
    done: bool,
}

impl Assembly {
    /// Takes one line of the stream (without its line end). `Err`: the server's own words, when
    /// it sent an error instead of a chunk.
    pub(super) fn line(&mut self, line: &str) -> Result<(), String> {
        let Some(data) = line.strip_prefix("data:") else {
            // Blank lines end events; `event:`, `id:`, `retry:` and `:` comments say nothing
            // the answer needs.
            return Ok(());
        };
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let Ok(chunk) = serde_json::from_str::<Value>(data) else {
            return Err(format!(
                "a piece of the stream is not JSON: {}",
                crate::ui::one_line(data, 200)
            ));
        };
        if let Some(error) = chunk.get("error") {
            let words = error.get("message").unwrap_or(error);
            return Err(words
                .as_str()
                .map_or_else(|| words.to_string(), str::to_owned));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(Usage::of(usage));
        }
        let Some(choice) = chunk["choices"].get(0) else {
            return Ok(());
        };
        if let Some(reason) = choice["finish_reason"].as_str() {
            self.finish_reason = Some(reason.to_owned());
        }
        let delta = &choice["delta"];
        let mut brought = false;
        if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
            self.content.push_str(text);
            brought = true;
        }
        // A thinking model's reasoning is progress, not the answer.
        for field in ["reasoning_content", "reasoning"] {
            brought |= delta[field].as_str().is_some_and(|t| !t.is_empty());
        }
        for (position, fragment) in delta["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let index = fragment["index"]
                .as_u64()
                .and_then(|i| usize::try_from(i).ok())
                .unwrap_or(position)
                .min(self.calls.len());
            if index == self.calls.len() {
                self.calls.push(json!({
                    "id": "", "type": "function", "function": { "name": "", "arguments": "" },
                }));
            }
            let call = &mut self.calls[index];
            if let Some(id) = fragment["id"].as_str() {
                call["id"] = id.into();
            }
            let function = &fragment["function"];
            for field in ["name", "arguments"] {
                if let Some(part) = function[field].as_str() {
                    let mut whole = call["function"][field]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    whole.push_str(part);
                    call["function"][field] = whole.into();
                }
            }
            brought = true;
        }
        if brought {
            self.pieces += 1;
        }
        Ok(())
    }

    /// Whether any of the answer has come.
    pub(super) fn has_tokens(&self) -> bool {
        self.pieces > 0
    }

    /// Whether `data: [DONE]` came.
    pub(super) fn done(&self) -> bool {
        self.done
    }

    /// Whether the stream said it is over (`[DONE]`, or a reason the answer finished).
    pub(super) fn ended(&self) -> bool {
        self.done || self.finish_reason.is_some()
    }

    /// Whether the answer has grown past `ANSWER_LIMIT`.
    pub(super) fn too_big(&self) -> bool {
        let arguments: usize = self
            .calls
            .iter()
            .map(|c| c["function"]["arguments"].as_str().map_or(0, str::len))
            .sum();
        self.content.len() + arguments > ANSWER_LIMIT
    }

    /// The answer as one reply. `broken`: why the stream stopped before its end (a call whose
    /// arguments were cut is left out then). Without a usage from the server, the answer's
    /// tokens are its pieces and the prompt's are `prompt_estimate`.
    pub(super) fn reply(self, broken: Option<String>, prompt_estimate: u64) -> Reply {
        let mut calls = self.calls;
        if broken.is_some() {
            calls.retain(|c| {
                let args = c["function"]["arguments"].as_str().unwrap_or_default();
                args.trim().is_empty() || serde_json::from_str::<Value>(args).is_ok()
            });
        }
        for (k, call) in calls.iter_mut().enumerate() {
            if call["id"].as_str().is_none_or(str::is_empty) {
                call["id"] = format!("call-{k}").into();
            }
        }
        let mut message = json!({
            "role": "assistant",
            "content": if self.content.is_empty() && !calls.is_empty() {
                Value::Null
            } else {
                self.content.into()
            },
        });
        if !calls.is_empty() {
            message["tool_calls"] = calls.into();
        }
        let usage = self.usage.unwrap_or(Usage {
            prompt_tokens: prompt_estimate,
            completion_tokens: self.pieces,
            total_tokens: prompt_estimate + self.pieces,
            cached_tokens: 0,
        });
        Reply {
            message,
            finish_reason: self.finish_reason,
            usage,
            broken,
        }
    }
}
