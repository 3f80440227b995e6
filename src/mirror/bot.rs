//! The Bot API client: `sendMessage` and `getUpdates`, as JSON POSTs to `{api}/bot{token}/…`.
//! The token is in every URL, so no error says a URL or what the HTTP client said of one:
//! each is said in swarm's words, then scrubbed of the token.

use std::time::Duration;

use serde_json::{Value, json};

use super::words::{self, Update};
use crate::secret::Secret;

/// A request the API does not begin to answer within this is given up.
const CONNECT: Duration = Duration::from_secs(5);
/// A message the API has not taken within this is dropped.
const SEND: Duration = Duration::from_secs(10);

pub(super) struct Bot {
    api: String,
    token: Secret,
    agent: ureq::Agent,
    /// Seconds the API may hold a long poll (0 for a bot that only sends).
    poll: u64,
}

impl Bot {
    /// A bot that sends, each message given up after `SEND`.
    pub(super) fn sending(api: &str, token: Secret) -> Bot {
        Bot::new(api, token, 0)
    }

    /// A bot that reads with long polls of `poll` seconds.
    pub(super) fn reading(api: &str, token: Secret, poll: u64) -> Bot {
        Bot::new(api, token, poll)
    }

    fn new(api: &str, token: Secret, poll: u64) -> Bot {
        let config = ureq::Agent::config_builder()
            .timeout_connect(Some(CONNECT))
            .timeout_global(Some(SEND + Duration::from_secs(poll)))
            .http_status_as_error(false)
            .user_agent(concat!("swarm/", env!("CARGO_PKG_VERSION")))
            .build();
        Bot {
            api: api.to_owned(),
            token,
            agent: ureq::Agent::new_with_config(config),
            poll,
        }
    }

    /// Sends `text` to `chat`.
    pub(super) fn send(&self, chat: i64, text: &str) -> Result<(), String> {
        self.call("sendMessage", &json!({ "chat_id": chat, "text": text }))
            .map(drop)
    }

    /// The updates from `offset` on (confirming those before it), waiting up to the poll's
    /// seconds for one to come.
    pub(super) fn updates(&self, offset: Option<i64>) -> Result<Vec<Update>, String> {
        let mut body =
            json!({ "timeout": self.poll, "allowed_updates": ["message", "channel_post"] });
        if let Some(offset) = offset {
            body["offset"] = offset.into();
        }
        self.call("getUpdates", &body).map(|r| words::updates(&r))
    }

    /// One call of `method`: its `result`, or why there is none.
    fn call(&self, method: &str, body: &Value) -> Result<Value, String> {
        let url = format!("{}/bot{}/{method}", self.api, self.token.expose());
        let what = format!("{method} at {}", self.api);
        let response = self
            .agent
            .post(&url)
            .header("content-type", "application/json")
            .send(body.to_string())
            .map_err(|e| self.scrub(&format!("{what}: {}", failure(&e))))?;
        let status = response.status().as_u16();
        let text = response
            .into_body()
            .read_to_string()
            .map_err(|e| self.scrub(&format!("{what}: the answer broke off: {}", failure(&e))))?;
        let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if status == 200 && answer["ok"] == Value::Bool(true) {
            return Ok(answer["result"].clone());
        }
        let said = answer["description"]
            .as_str()
            .map_or_else(|| crate::ui::one_line(&text, 200), str::to_owned);
        Err(self.scrub(&format!("{what} answered HTTP {status}: {said}")))
    }

    /// `text` without the token, should an answer echo it.
    fn scrub(&self, text: &str) -> String {
        let token = self.token.expose();
        let text = if token.is_empty() {
            text.to_owned()
        } else {
            text.replace(token, crate::secret::MASK)
        };
        crate::secret::redact(&text).into_owned()
    }
}

/// What went wrong with a request, in swarm's words: ureq's own may hold the URL.
fn failure(e: &ureq::Error) -> &'static str {
    match e {
        ureq::Error::Timeout(_) => "no answer in time",
        ureq::Error::ConnectionFailed => "the connection was refused or failed",
        ureq::Error::HostNotFound => "the host was not found",
        ureq::Error::Io(_) => "the connection failed",
        ureq::Error::Tls(_) | ureq::Error::Rustls(_) => "TLS failed",
        ureq::Error::StatusCode(_) => "an error status",
        _ => "the request failed",
    }
}
