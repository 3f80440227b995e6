//! The OpenAI-compatible chat-completions client: one POST per call, with retries, jittered
//! backoff, `Retry-After`, and a limit on requests in flight shared by every thread of a run
//! (`limiter`: cut to what the server took when it refuses one more, grown back on success).
//! It and `forge` (plain JSON requests to a forge's API) are the users of ureq. It must not know about tasks, prompts or tools, and must never
//! put the API key in `Debug` output, errors or notices.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

const DEFAULT_BASE: &str = "https://api.openai.com/v1";
const DEFAULT_MODEL: &str = "gpt-4o-mini";
const POLL: Duration = Duration::from_millis(100);
const SERVER_TEXT_CAP: usize = 500;

mod context;
mod limiter;
mod stream;

use context::{estimate, fit, too_long};
use limiter::{Limiter, Refusal};
use std::io::{BufRead, Read};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// Where and how to reach the model. Secrets never appear in Debug output or errors.
#[derive(Clone)]
pub struct Endpoint {
    /// e.g. `http://127.0.0.1:8080/v1`, no trailing slash.
    pub base: String,
    pub key: Option<String>,
    pub model: String,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("base", &self.base)
            .field("key", &self.key.as_ref().map(|_| "[redacted]"))
            .field("model", &self.model)
            .finish()
    }
}

impl Endpoint {
    /// From flags, then `SWARM_API_BASE` / `SWARM_API_KEY` / `SWARM_MODEL`, then
    /// `OPENAI_BASE_URL` / `OPENAI_API_KEY` / `OPENAI_MODEL`. `None` when neither a base nor a
    /// key is set anywhere: that is how `auto` knows the built-in agent is not configured.
    pub fn resolve(
        base: Option<&str>,
        key: Option<&str>,
        model: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<Endpoint> {
        let pick = |flag: Option<&str>, names: [&str; 2]| {
            flag.map(str::to_owned)
                .into_iter()
                .chain(names.iter().filter_map(|name| env(name)))
                .map(|value| value.trim().to_owned())
                .find(|value| !value.is_empty())
        };
        let base = pick(base, ["SWARM_API_BASE", "OPENAI_BASE_URL"]);
        let key = pick(key, ["SWARM_API_KEY", "OPENAI_API_KEY"]);
        if base.is_none() && key.is_none() {
            return None;
        }
        let model = pick(model, ["SWARM_MODEL", "OPENAI_MODEL"]);
        let base = base.unwrap_or_else(|| DEFAULT_BASE.to_owned());
        Some(Endpoint {
            base: base.trim_end_matches('/').to_owned(),
            key,
            model: model.unwrap_or_else(|| DEFAULT_MODEL.to_owned()),
        })
    }

    /// How errors name the endpoint: base without any `user:password@`, and the model.
    fn label(&self) -> String {
        let base = match self.base.split_once("://") {
            Some((scheme, rest)) => {
                let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
                let host = authority
                    .rsplit_once('@')
                    .map_or(authority, |(_, host)| host);
                format!("{scheme}://{host}{path}")
            }
            None => self.base.clone(),
        };
        format!("{base} (model {})", self.model)
    }

    /// Removes the key from text that came back from the server, in case it echoes it.
    fn scrub(&self, text: &str) -> String {
        match self.key.as_deref() {
            Some(key) if !key.is_empty() => text.replace(key, "[redacted]"),
            _ => text.to_owned(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub connect_timeout: Duration,
    /// The longest silence: waiting for the answer to start (the server reading the prompt
    /// included), or between two pieces of a streamed one. A slow but steady answer is never
    /// cut by it; its length is bounded by the request's `max_tokens`.
    pub read_timeout: Duration,
    /// Tries per call, e.g. 8.
    pub max_attempts: u32,
    /// Cap on one backoff or `Retry-After` wait, e.g. 60 s.
    pub max_wait: Duration,
    /// Never more calls in flight than this (`-j`).
    pub max_in_flight: usize,
    /// The caps callers put on answers (`max_tokens`).
    pub answers: AnswerCaps,
}

/// The most tokens an answer may take, by what asks for it; 0: no cap sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerCaps {
    /// Each planning request (the plan, the goals' needs).
    pub planning: u64,
    /// Each turn of the built-in agent.
    pub turn: u64,
}

impl Default for AnswerCaps {
    /// The defaults of `plan-answer-tokens` and `turn-answer-tokens`.
    fn default() -> Self {
        AnswerCaps {
            planning: crate::config::Defaults::plan_answer_tokens(),
            turn: crate::config::Defaults::turn_answer_tokens(),
        }
    }
}

impl AnswerCaps {
    /// Puts `cap` on `body` as its `max_tokens`, unless it is 0.
    pub fn put(cap: u64, body: &mut serde_json::Value) {
        if cap > 0 {
            body["max_tokens"] = cap.into();
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[expect(
    clippy::struct_field_names,
    reason = "the names the OpenAI API gives them"
)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    /// Of the prompt's tokens, those the server had cached
    /// (`prompt_tokens_details.cached_tokens`).
    pub cached_tokens: u64,
}

impl Usage {
    /// From an answer's `usage` object. The total is the server's, or else the sum of the two
    /// parts: never both added.
    fn of(usage: &serde_json::Value) -> Self {
        let count = |name: &str| usage[name].as_u64().unwrap_or(0);
        let (prompt_tokens, completion_tokens) =
            (count("prompt_tokens"), count("completion_tokens"));
        Usage {
            prompt_tokens,
            completion_tokens,
            total_tokens: usage["total_tokens"]
                .as_u64()
                .filter(|t| *t > 0)
                .unwrap_or(prompt_tokens + completion_tokens),
            cached_tokens: usage["prompt_tokens_details"]["cached_tokens"]
                .as_u64()
                .unwrap_or(0),
        }
    }
}

/// The usage of several answers: each count summed.
impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, more: Self) {
        self.prompt_tokens += more.prompt_tokens;
        self.completion_tokens += more.completion_tokens;
        self.total_tokens += more.total_tokens;
        self.cached_tokens += more.cached_tokens;
    }
}

/// What the endpoint's model costs (`price`), in dollars per million tokens: a prompt's
/// tokens, those of them the provider read from its cache, and an answer's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub prompt: f64,
    pub cached: f64,
    pub answer: f64,
}

impl Price {
    /// `PROMPT,CACHED,ANSWER`, or `PROMPT,ANSWER` where cached tokens cost what others do.
    pub fn parse(text: &str) -> Result<Self, String> {
        let numbers: Vec<f64> = text
            .split(',')
            .map(|n| {
                let n = n.trim();
                n.parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v >= 0.0)
                    .ok_or_else(|| format!("`{n}` is not a price (0 or more dollars)"))
            })
            .collect::<Result<_, _>>()?;
        match numbers[..] {
            [prompt, cached, answer] => Ok(Price {
                prompt,
                cached,
                answer,
            }),
            [prompt, answer] => Ok(Price {
                prompt,
                cached: prompt,
                answer,
            }),
            _ => Err(format!(
                "`{text}` is not PROMPT,CACHED,ANSWER or PROMPT,ANSWER (dollars per million tokens)"
            )),
        }
    }

    /// What `usage` cost, in dollars: the cached tokens at their price, the rest of the
    /// prompt's at the prompt's.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cached_tokens.min(usage.prompt_tokens);
        let fresh = usage.prompt_tokens - cached;
        (fresh as f64 * self.prompt
            + cached as f64 * self.cached
            + usage.completion_tokens as f64 * self.answer)
            / 1e6
    }
}

/// What happened on the way, for the caller's event log (never includes the key).
#[derive(Debug, Clone)]
pub enum Notice {
    /// Try `attempt` of `attempts` was throttled; the next waits `wait`.
    Throttled {
        status: u16,
        wait: Duration,
        attempt: u32,
        attempts: u32,
    },
    /// Try `attempt` of `attempts` failed for `why`; the next waits `wait`.
    Retrying {
        why: String,
        wait: Duration,
        attempt: u32,
        attempts: u32,
    },
    Concurrency {
        limit: usize,
    },
    /// A model's answer, as it came (secrets hidden, cut at `ANSWER_CAP`), for the record:
    /// `what` asked for it (`planning`, `needs`), in its `request`th request.
    Answer {
        what: &'static str,
        request: u32,
        text: String,
    },
    /// A request that offered tools (or forced one) came back without a function call: the
    /// server may not pass tools to the model. Said once by whoever asked.
    NoFunctionCall {
        what: &'static str,
    },
    /// A request was shortened by `cut` bytes to fit the model's context of `context` tokens.
    Fitted {
        context: u64,
        cut: u64,
    },
}

/// The most bytes of a model's answer kept on record.
pub const ANSWER_CAP: usize = 16 * 1024;

impl Notice {
    /// The answer in `message` (`choices[0].message`) as a notice: its text, then its function
    /// calls, secrets hidden, cut at `ANSWER_CAP`.
    pub fn answer(what: &'static str, request: u32, message: &serde_json::Value) -> Self {
        let mut text = message["content"].as_str().unwrap_or_default().to_owned();
        if let Some(calls) = message["tool_calls"].as_array().filter(|c| !c.is_empty()) {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&serde_json::Value::Array(calls.clone()).to_string());
        }
        let text = crate::secret::redact(&text);
        let text = match crate::ui::cap_bytes(&text, ANSWER_CAP) {
            (kept, 0) => kept.to_owned(),
            (kept, more) => format!("{kept}\n[{more} more bytes cut]"),
        };
        Notice::Answer {
            what,
            request,
            text,
        }
    }
}

#[derive(Debug)]
pub enum LlmError {
    /// 400/401/403/404 etc: do not retry. The message names the endpoint base and model and the
    /// server's error text (truncated to 500 chars), never the key.
    Rejected { status: u16, message: String },
    /// Retries used up (last cause in message).
    GaveUp { attempts: u32, message: String },
    /// Cancelled by the caller's stop flag.
    Stopped,
    /// The endpoint did not answer at all, `BREAK_AFTER` times in a row across every request
    /// of the client: no request is tried any more.
    Unreachable { message: String },
}

/// Connection failures in a row, with no answer between them, after which the endpoint is taken
/// for down: a run stops then (resumably) instead of grinding through every task's retries.
pub const BREAK_AFTER: u32 = 4;

impl fmt::Display for LlmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LlmError::Rejected { status, message } => write!(f, "HTTP {status} from {message}"),
            LlmError::GaveUp { attempts, message } => {
                write!(f, "gave up after {attempts} attempt(s) on {message}")
            }
            LlmError::Stopped => f.write_str("model call stopped"),
            LlmError::Unreachable { message } => write!(f, "cannot reach {message}"),
        }
    }
}

impl std::error::Error for LlmError {}

#[derive(Debug)]
pub struct Reply {
    /// `choices[0].message` as returned.
    pub message: serde_json::Value,
    pub finish_reason: Option<String>,
    pub usage: Usage,
    /// Why a streamed answer stopped before its end (silence, a broken connection): what came
    /// is kept, and the request is not sent again as it was.
    pub broken: Option<String>,
}

/// Shared by all threads of a run (Clone = same limiter).
#[derive(Clone)]
pub struct Client {
    endpoint: Endpoint,
    limits: Limits,
    agent: ureq::Agent,
    limiter: Arc<Limiter>,
    /// Connection failures in a row, shared by every clone; an answer resets it.
    unanswered: Arc<AtomicU32>,
    /// The model's context in tokens, as the server tells it (read once, shared by clones).
    context: Arc<std::sync::OnceLock<Option<u64>>>,
    /// Whether answers are asked for as streams; off for good once the server refuses one.
    streaming: Arc<AtomicBool>,
    /// Set once a request that offered tools came back without a function call: the server (or
    /// its model) passes none, and callers ask for their calls as JSON from then on.
    calls_dropped: Arc<AtomicBool>,
    /// What its model costs, where the user said (`price`).
    price: Option<Price>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("endpoint", &self.endpoint)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// One try's result, before the retry policy looks at it.
enum Try {
    Done(Reply),
    /// Worth another try. `throttle` is the status of a 429/503/529 (the server asks us to slow
    /// down); other 5xx, transport trouble and unparseable bodies have none.
    Again {
        throttle: Option<u16>,
        retry_after: Option<Duration>,
        cause: String,
        /// No connection could be made: the server did not answer at all.
        unanswered: bool,
        /// Nothing came back within the request timeout.
        silent: bool,
    },
    Fatal(LlmError),
}

impl Client {
    pub fn new(endpoint: Endpoint, limits: Limits) -> Self {
        let config = ureq::Agent::config_builder()
            .timeout_connect(Some(limits.connect_timeout))
            .timeout_per_read(Some(limits.read_timeout))
            // A connection per request: a pooled one the server has closed meanwhile (llama.cpp's
            // closes idle ones after 5 s, and sooner when busy) fails the request that reuses
            // it, and a new one costs little beside a model's answer.
            .max_idle_connections(0)
            .http_status_as_error(false)
            .build();
        Client {
            endpoint,
            limits,
            agent: ureq::Agent::new_with_config(config),
            limiter: Arc::new(Limiter::new(limits.max_in_flight)),
            unanswered: Arc::new(AtomicU32::new(0)),
            context: Arc::new(std::sync::OnceLock::new()),
            streaming: Arc::new(AtomicBool::new(true)),
            calls_dropped: Arc::new(AtomicBool::new(false)),
            price: None,
        }
    }

    /// The same client, its model costing `price`.
    #[must_use]
    pub fn priced(mut self, price: Option<Price>) -> Self {
        self.price = price;
        self
    }

    /// What `usage` cost, where the price is known.
    pub fn cost(&self, usage: &Usage) -> Option<f64> {
        self.price.map(|p| p.cost(usage))
    }

    /// Whether a request that offered tools has come back without a function call.
    /// The model asked for.
    pub fn model(&self) -> &str {
        &self.endpoint.model
    }

    pub fn calls_dropped(&self) -> bool {
        self.calls_dropped.load(Ordering::SeqCst)
    }

    /// Notes that a request that offered tools came back without a function call; true the
    /// first time, so that whoever notes it first says it, once for the run.
    pub fn drop_calls(&self) -> bool {
        !self.calls_dropped.swap(true, Ordering::SeqCst)
    }

    fn unreachable(&self, cause: &str) -> LlmError {
        LlmError::Unreachable {
            message: format!(
                "{} ({BREAK_AFTER} connections in a row failed; the last: {cause})",
                self.endpoint.label()
            ),
        }
    }

    /// The caps to put on answers.
    pub fn answers(&self) -> AnswerCaps {
        self.limits.answers
    }

    /// The same client (and in-flight limiter) trying each request at most `n` times.
    #[must_use]
    pub fn with_attempts(&self, n: u32) -> Self {
        let mut c = self.clone();
        c.limits.max_attempts = n;
        c
    }

    /// POST `{base}/chat/completions` with `body` (adding `"model"` if absent). Retries on 429,
    /// 5xx, transport errors, timeouts and unparseable bodies with jittered exponential backoff
    /// or the server's `Retry-After`, both capped by `max_wait`; fails fast on other 4xx.
    /// `stop` is polled before each try and while waiting; `notify` hears about each wait.
    pub fn chat(
        &self,
        body: &serde_json::Value,
        stop: &dyn Fn() -> bool,
        notify: &mut dyn FnMut(Notice),
    ) -> Result<Reply, LlmError> {
        let mut body = body.clone();
        if let Some(fields) = body.as_object_mut() {
            fields
                .entry("model")
                .or_insert_with(|| self.endpoint.model.clone().into());
        }
        if self.streaming.load(Ordering::SeqCst) {
            stream_on(&mut body);
        }
        let mut context = self.context_size();
        if let Some(tokens) = context {
            let cut = fit(&mut body, tokens);
            if cut > 0 {
                notify(Notice::Fitted {
                    context: tokens,
                    cut,
                });
            }
        }
        let mut payload = body.to_string();
        let attempts = self.limits.max_attempts.max(1);
        let mut last = String::new();
        // Requests that met the request timeout with nothing back: sent once more at most (a
        // connection may have been stuck), never eight times (a model that slow stays slow).
        let mut silences = 0;
        for attempt in 1..=attempts {
            if stop() {
                return Err(LlmError::Stopped);
            }
            if self.unanswered.load(Ordering::SeqCst) >= BREAK_AFTER {
                return Err(self.unreachable("another request's"));
            }
            let slot = self.limiter.acquire(stop)?;
            let result = self.try_until_stopped(&payload, stop);
            match &result {
                Try::Again {
                    unanswered: true,
                    cause,
                    ..
                } => {
                    if self.unanswered.fetch_add(1, Ordering::SeqCst) + 1 >= BREAK_AFTER {
                        drop(slot);
                        return Err(self.unreachable(cause));
                    }
                }
                Try::Fatal(LlmError::Stopped) => {}
                _ => self.unanswered.store(0, Ordering::SeqCst),
            }
            // The slot goes back with what the answer says of the server's capacity.
            let changed = match &result {
                Try::Done(_) => slot.succeeded(),
                Try::Again {
                    throttle: Some(status),
                    ..
                } => slot.refused(Refusal::of(*status)),
                _ => {
                    drop(slot);
                    None
                }
            };
            let (throttle, retry_after, cause) = match result {
                Try::Done(reply) => {
                    if let Some(limit) = changed {
                        notify(Notice::Concurrency { limit });
                    }
                    return Ok(reply);
                }
                Try::Fatal(LlmError::Stopped) => return Err(LlmError::Stopped),
                // A server that takes no streams (or no `stream_options`): asked as a whole
                // from now on.
                Try::Fatal(LlmError::Rejected {
                    status: 400 | 422,
                    message,
                }) if message.to_lowercase().contains("stream")
                    && self.streaming.swap(false, Ordering::SeqCst) =>
                {
                    stream_off(&mut body);
                    payload = body.to_string();
                    continue;
                }
                // Refused for its length: shortened to three quarters of what it was, and sent
                // again once, never as it was.
                Try::Fatal(LlmError::Rejected {
                    status: 400,
                    message,
                }) if too_long(&message) && attempt < attempts => {
                    let smaller = (estimate(&body) * 3 / 4).max(256);
                    if context.is_some_and(|c| c <= smaller) {
                        return Err(LlmError::Rejected {
                            status: 400,
                            message,
                        });
                    }
                    context = Some(smaller);
                    let cut = fit(&mut body, smaller);
                    notify(Notice::Fitted {
                        context: smaller,
                        cut,
                    });
                    payload = body.to_string();
                    continue;
                }
                Try::Fatal(mut err) => {
                    self.limiter.failed();
                    if let LlmError::GaveUp { attempts, .. } = &mut err {
                        *attempts = attempt;
                    }
                    return Err(err);
                }
                Try::Again {
                    silent: true,
                    cause,
                    ..
                } if silences >= 1 => {
                    self.limiter.failed();
                    return Err(LlmError::GaveUp {
                        attempts: attempt,
                        message: format!(
                            "{}: {cause} (twice; not sent again)",
                            self.endpoint.label()
                        ),
                    });
                }
                Try::Again {
                    throttle,
                    retry_after,
                    cause,
                    silent,
                    ..
                } => {
                    silences += u32::from(silent);
                    (throttle, retry_after, cause)
                }
            };
            if throttle.is_none() {
                self.limiter.failed();
            } else if let Some(limit) = changed {
                notify(Notice::Concurrency { limit });
            }
            if attempt == attempts {
                return Err(LlmError::GaveUp {
                    attempts,
                    message: format!("{}: {cause}", self.endpoint.label()),
                });
            }
            last.clone_from(&cause);
            let wait = retry_after
                .unwrap_or_else(|| backoff(attempt))
                .min(self.limits.max_wait);
            notify(match throttle {
                Some(status) => Notice::Throttled {
                    status,
                    wait,
                    attempt,
                    attempts,
                },
                None => Notice::Retrying {
                    why: cause,
                    wait,
                    attempt,
                    attempts,
                },
            });
            pause(wait, stop)?;
        }
        // Only with no attempt at all (the loop returns on the last one).
        Err(LlmError::GaveUp {
            attempts,
            message: format!("{}: {last}", self.endpoint.label()),
        })
    }

    /// One try, given up the moment `stop` says so: the request goes on a thread of its own,
    /// which a stop leaves behind to end at its timeout, its answer unread.
    fn try_until_stopped(&self, payload: &str, stop: &dyn Fn() -> bool) -> Try {
        let (tx, rx) = std::sync::mpsc::channel();
        let (client, payload) = (self.clone(), payload.to_owned());
        // Set when the caller stops: a streamed answer is read no further and its connection
        // closed, which tells the server to stop generating.
        let abandoned = Arc::new(AtomicBool::new(false));
        let left = Arc::clone(&abandoned);
        let spawned = std::thread::Builder::new()
            .name("swarm-request".into())
            .spawn(move || {
                let _ = tx.send(client.try_once(&payload, &left));
            });
        if let Err(e) = spawned {
            return Try::Fatal(LlmError::GaveUp {
                attempts: 1,
                message: format!(
                    "{}: could not start the request: {e}",
                    self.endpoint.label()
                ),
            });
        }
        loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(outcome) => return outcome,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) if stop() => {
                    abandoned.store(true, Ordering::SeqCst);
                    return Try::Fatal(LlmError::Stopped);
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Try::Fatal(LlmError::GaveUp {
                        attempts: 1,
                        message: format!(
                            "{}: the request ended with no answer",
                            self.endpoint.label()
                        ),
                    });
                }
            }
        }
    }

    /// Whether the endpoint answers at all: a GET of `{base}/models`, whose answer, whatever
    /// its status, shows a server there. One that does closes the breaker, so requests go out
    /// again; else the cause, as a request would have met it.
    pub fn probe(&self) -> Result<(), String> {
        /// A probe is one look; a server that takes longer than this is not back.
        const PROBE_TIMEOUT: Duration = Duration::from_secs(10);
        let url = format!("{}/models", self.endpoint.base);
        let request = self
            .agent
            .get(&url)
            .config()
            .timeout_global(Some(PROBE_TIMEOUT))
            .build();
        match self.authorized(request).call() {
            Ok(_) => {
                self.unanswered.store(0, Ordering::SeqCst);
                Ok(())
            }
            Err(err) => Err(self.endpoint.scrub(&err.to_string())),
        }
    }

    /// `request` carrying the endpoint's key, when it has one.
    fn authorized<B>(&self, request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        match &self.endpoint.key {
            Some(key) => request.header("authorization", format!("Bearer {key}")),
            None => request,
        }
    }

    fn try_once(&self, payload: &str, abandoned: &AtomicBool) -> Try {
        let url = format!("{}/chat/completions", self.endpoint.base);
        let request = self
            .agent
            .post(&url)
            .header("content-type", "application/json");
        let response = match self.authorized(request).send(payload) {
            Ok(response) => response,
            Err(err) => return self.transport_failure(&err),
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|value| value.to_str().ok())
            .and_then(|value| parse_retry_after(value, SystemTime::now()));
        let streamed = response
            .headers()
            .get("content-type")
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.contains("text/event-stream"));
        if streamed && (200..300).contains(&status) {
            return self.read_stream(response.into_body(), abandoned, payload.len() as u64 / 3);
        }
        let text = match response.into_body().read_to_string() {
            Ok(text) => text,
            Err(err) if (200..300).contains(&status) => return self.transport_failure(&err),
            Err(_) => String::new(),
        };
        let server_text = || self.endpoint.scrub(&server_words(&text));
        match status {
            200..=299 => match parse_reply(&text) {
                Some(reply) => Try::Done(reply),
                None => Try::Again {
                    throttle: None,
                    retry_after: None,
                    cause: format!("unparseable reply: {}", server_text()),
                    unanswered: false,
                    silent: false,
                },
            },
            429 | 500..=599 => Try::Again {
                throttle: matches!(status, 429 | 503 | 529).then_some(status),
                retry_after,
                cause: format!("HTTP {status}: {}", server_text()),
                unanswered: false,
                silent: false,
            },
            _ => Try::Fatal(LlmError::Rejected {
                status,
                message: format!("{}: {}", self.endpoint.label(), server_text()),
            }),
        }
    }

    /// Reads a streamed answer to its end. One cut short after some of it came (silence for
    /// the request timeout, a broken connection, an error sent in the stream) is kept as it is,
    /// with why; one that brought nothing is a failed try, as an answer that never came.
    fn read_stream(&self, body: ureq::Body, abandoned: &AtomicBool, prompt: u64) -> Try {
        let mut reader = std::io::BufReader::new(body.into_reader());
        let mut assembly = stream::Assembly::default();
        let mut line = Vec::new();
        let broken = loop {
            if abandoned.load(Ordering::SeqCst) {
                return Try::Fatal(LlmError::Stopped);
            }
            line.clear();
            let read = (&mut reader)
                .take(stream::ANSWER_LIMIT as u64)
                .read_until(b'\n', &mut line);
            let words = match read {
                Ok(0) if assembly.ended() => break None,
                Ok(0) => "the stream ended before the answer did".to_owned(),
                Ok(_) => {
                    let text = String::from_utf8_lossy(&line);
                    match assembly.line(text.trim_end()) {
                        // `[DONE]`: what follows it, if anything, is not waited for.
                        Ok(()) if assembly.done() => break None,
                        Ok(()) if assembly.too_big() => format!(
                            "the answer passed {} MB and was read no further",
                            stream::ANSWER_LIMIT >> 20
                        ),
                        Ok(()) => continue,
                        Err(words) => format!(
                            "the server broke off the answer: {}",
                            self.endpoint.scrub(&words)
                        ),
                    }
                }
                Err(err) => {
                    let err = ureq::Error::from(err);
                    if !assembly.has_tokens() {
                        return self.transport_failure(&err);
                    }
                    match err {
                        ureq::Error::Timeout(_) => format!(
                            "no token came for {} (the request timeout)",
                            crate::ui::duration(self.limits.read_timeout)
                        ),
                        _ => format!(
                            "the stream broke: {}",
                            self.endpoint.scrub(&err.to_string())
                        ),
                    }
                }
            };
            if !assembly.has_tokens() {
                return Try::Again {
                    throttle: None,
                    retry_after: None,
                    cause: words,
                    unanswered: false,
                    silent: false,
                };
            }
            break Some(words);
        };
        Try::Done(assembly.reply(broken, prompt))
    }

    fn transport_failure(&self, err: &ureq::Error) -> Try {
        let cause = match err {
            ureq::Error::Timeout(_) => format!(
                "nothing came back within the request timeout ({}); a slow model may need a longer --request-timeout",
                crate::ui::duration(self.limits.read_timeout)
            ),
            _ => self.endpoint.scrub(&err.to_string()),
        };
        // No connection at all, as opposed to one that broke or timed out.
        let unanswered = match err {
            ureq::Error::ConnectionFailed | ureq::Error::HostNotFound => true,
            ureq::Error::Io(e) => matches!(
                e.kind(),
                std::io::ErrorKind::ConnectionRefused
                    | std::io::ErrorKind::HostUnreachable
                    | std::io::ErrorKind::NetworkUnreachable
            ),
            _ => false,
        };
        match err {
            ureq::Error::Io(_)
            | ureq::Error::Timeout(_)
            | ureq::Error::ConnectionFailed
            | ureq::Error::HostNotFound
            | ureq::Error::Protocol(_) => Try::Again {
                throttle: None,
                retry_after: None,
                cause,
                unanswered,
                silent: matches!(err, ureq::Error::Timeout(_)),
            },
            _ => Try::Fatal(LlmError::GaveUp {
                attempts: 1,
                message: format!("{}: {cause}", self.endpoint.label()),
            }),
        }
    }
}

/// 1 s doubling per attempt, ±20% so that threads throttled together do not retry together.
fn backoff(attempt: u32) -> Duration {
    let base = Duration::from_secs(1 << attempt.saturating_sub(1).min(16));
    base.mul_f64(0.8 + 0.4 * fastrand::f64())
}

/// Sleeps in short steps so a stop request is noticed quickly.
fn pause(wait: Duration, stop: &dyn Fn() -> bool) -> Result<(), LlmError> {
    let deadline = crate::time::deadline(Instant::now(), wait);
    loop {
        if stop() {
            return Err(LlmError::Stopped);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        std::thread::sleep(left.min(POLL));
    }
}

fn parse_reply(text: &str) -> Option<Reply> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    let choice = value.get("choices")?.get(0)?;
    let message = choice.get("message").filter(|m| m.is_object())?.clone();
    Some(Reply {
        message,
        finish_reason: choice
            .get("finish_reason")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned),
        usage: Usage::of(&value["usage"]),
        broken: None,
    })
}

/// Every JSON object or array in a model's `text` that parses, in order, from each `{` or `[`
/// (a model's JSON is often inside prose or a fenced block).
pub fn json_values(text: &str) -> impl Iterator<Item = serde_json::Value> + '_ {
    text.char_indices()
        .filter(|(_, c)| *c == '{' || *c == '[')
        .filter_map(|(i, _)| {
            serde_json::Deserializer::from_str(&text[i..])
                .into_iter::<serde_json::Value>()
                .next()
                .and_then(Result::ok)
        })
}

/// Asks for the answer as a stream, with its usage in the last chunk.
fn stream_on(body: &mut serde_json::Value) {
    body["stream"] = true.into();
    body["stream_options"] = serde_json::json!({ "include_usage": true });
}

/// Asks for the answer whole.
fn stream_off(body: &mut serde_json::Value) {
    if let Some(fields) = body.as_object_mut() {
        fields.remove("stream");
        fields.remove("stream_options");
    }
}

/// The server's own words, at most 500 chars: `error.message` or `error` when the body is
/// JSON, else the body itself.
fn server_words(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let error = parsed.as_ref().and_then(|value| value.get("error"));
    let message = error.and_then(|e| e.get("message").unwrap_or(e).as_str());
    let text = message.unwrap_or(body).trim();
    match text.char_indices().nth(SERVER_TEXT_CAP) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None if text.is_empty() => "(empty body)".to_owned(),
        None => text.to_owned(),
    }
}

/// `Retry-After` is either delta-seconds or an HTTP date (RFC 9110 §10.2.3).
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let when = crate::time::http_date(value)?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests;
