//! The model's context: its size, read where the server tells it, and requests fitted into it
//! (an estimate of their tokens, the longest parts cut in the middle), or shortened when the
//! server refuses one as too long.

use std::time::Duration;

use super::Client;

impl Client {
    /// The model's context size in tokens, where the server tells it: llama.cpp's `/props`
    /// (`n_ctx`), vLLM's `/models` (`max_model_len`), Ollama's `/api/show` (`…context_length`).
    /// Read at the first request, once; `None` where no server says.
    pub fn context_size(&self) -> Option<u64> {
        *self.context.get_or_init(|| self.read_context())
    }

    fn read_context(&self) -> Option<u64> {
        /// Each look is short: a server that does not know the path answers at once.
        const LOOK: Duration = Duration::from_secs(3);
        let base = self.endpoint.base.trim_end_matches('/');
        let root = base.strip_suffix("/v1").unwrap_or(base);
        let get = |url: String| -> Option<serde_json::Value> {
            let request = self.agent.get(&url).config().timeout_global(Some(LOOK));
            let response = self.authorized(request.build()).call().ok()?;
            if !response.status().is_success() {
                return None;
            }
            serde_json::from_str(&response.into_body().read_to_string().ok()?).ok()
        };
        let positive = |v: &serde_json::Value| v.as_u64().filter(|n| *n > 0);
        if let Some(props) = get(format!("{root}/props")) {
            let n = &props["default_generation_settings"]["n_ctx"];
            if let Some(n) = positive(n).or_else(|| positive(&props["n_ctx"])) {
                return Some(n);
            }
        }
        if let Some(models) = get(format!("{base}/models")) {
            let found = models["data"]
                .as_array()
                .into_iter()
                .flatten()
                .find_map(|m| {
                    (m["id"] == self.endpoint.model.as_str()
                        || models["data"].as_array()?.len() == 1)
                        .then(|| positive(&m["max_model_len"]))
                        .flatten()
                });
            if found.is_some() {
                return found;
            }
        }
        let request = self
            .agent
            .post(&format!("{root}/api/show"))
            .config()
            .timeout_global(Some(LOOK))
            .build()
            .header("content-type", "application/json");
        let shown: serde_json::Value = self
            .authorized(request)
            .send(serde_json::json!({ "model": self.endpoint.model }).to_string())
            .ok()
            .filter(|r| r.status().is_success())
            .and_then(|r| r.into_body().read_to_string().ok())
            .and_then(|t| serde_json::from_str(&t).ok())?;
        shown["model_info"]
            .as_object()?
            .iter()
            .find(|(k, _)| k.ends_with(".context_length"))
            .and_then(|(_, v)| positive(v))
    }
}

/// Whether a server's refusal says the request was too long for the model's context.
pub(super) fn too_long(message: &str) -> bool {
    let m = message.to_lowercase();
    [
        "context",
        "too long",
        "exceed",
        "maximum length",
        "too many tokens",
    ]
    .iter()
    .any(|w| m.contains(w))
}

/// A request's tokens, estimated from its JSON (three bytes a token: more than most
/// tokenizers give English or code, so an estimate that fits does).
pub(super) fn estimate(body: &serde_json::Value) -> u64 {
    body.to_string().len() as u64 / 3
}

/// Fits `body` into a context of `context` tokens: its answer cap at most half of it, then
/// the longest message contents cut in the middle (their head and tail kept, the cut said)
/// until the estimate and the cap fit. The bytes cut.
pub(super) fn fit(body: &mut serde_json::Value, context: u64) -> u64 {
    let cap = body["max_tokens"]
        .as_u64()
        .unwrap_or(context / 2)
        .min(context / 2)
        .max(64);
    body["max_tokens"] = cap.into();
    let mut cut = 0;
    for _ in 0..64 {
        if estimate(body) + cap <= context {
            break;
        }
        let over = (estimate(body) + cap - context) * 3;
        let Some(messages) = body["messages"].as_array_mut() else {
            break;
        };
        let Some(longest) = messages
            .iter_mut()
            .filter_map(|m| m.get_mut("content"))
            .filter(|c| c.as_str().is_some_and(|s| s.len() > 400))
            .max_by_key(|c| c.as_str().map_or(0, str::len))
        else {
            break;
        };
        let text = longest.as_str().unwrap_or_default();
        // Cut what is over (and a little more), at most all but 200 bytes of each end.
        let drop = (over as usize + 64).min(text.len().saturating_sub(400));
        if drop == 0 {
            break;
        }
        let mut start = (text.len() - drop) / 2;
        while !text.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = start + drop;
        while !text.is_char_boundary(end) {
            end += 1;
        }
        let shorter = format!(
            "{}\n[… {} bytes cut to fit the model's context …]\n{}",
            &text[..start],
            end - start,
            &text[end..]
        );
        cut += (end - start) as u64;
        *longest = shorter.into();
    }
    cut
}
