//! A run as an OpenTelemetry trace, with the `GenAI` conventions: the run's event log, as it is
//! written, turned into spans (`spans`: the run, planning, goals, tasks, attempts with their
//! agent, model, tokens and cost, merges with their rung, gate runs, the landing; pauses, parks
//! and escalations as span events) and sent over OTLP/HTTP with protobuf (`otlp`) from a thread
//! of its own. What the run hands it goes through a bounded queue and is never waited for: a
//! full queue drops, a collector that is down, slow or refusing is noted once, and the run's
//! end waits for the last spans at most `FLUSH`. Knows nothing of runs beyond their events.

pub mod config;
mod otlp;
pub mod spans;

#[cfg(test)]
mod tests;

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

pub use self::config::{Asked, Config};
pub use self::spans::{AgentInfo, Agents, Doer, Figures};
use self::spans::{Builder, Span, hex, trace_id};
use crate::store::Logged;

/// Lines and figures waiting for the thread; past this, they are dropped, not waited for.
const QUEUE: usize = 16_384;
/// Spans sent in one request, at most.
const BATCH: usize = 512;
/// How long ended spans wait for more before they are sent.
const LINGER: Duration = Duration::from_millis(500);
/// How long the run's end waits for the last spans to be sent.
pub const FLUSH: Duration = Duration::from_secs(2);
/// A request unanswered for this long at the run's end is not waited for.
const STALLED: Duration = Duration::from_millis(500);
/// How often the run's end looks whether the request under way has stalled.
const LOOK: Duration = Duration::from_millis(25);

/// The `traceparent` (W3C Trace Context) of attempt `number` of task `task` of run `run`:
/// the attempt's span, sampled, for an agent that exports to join the run's trace.
pub fn traceparent(run: &str, task: &str, number: u32) -> String {
    format!(
        "00-{}-{}-01",
        hex(&trace_id(run)),
        hex(&spans::attempt_span(run, task, number))
    )
}

/// What `agent` (named `name` by the task or its pool, if it is) is, as the trace says it:
/// its name, its provider where swarm knows it, the model of the built-in agent (`llm`).
pub fn agent_info(
    name: Option<&str>,
    agent: &crate::agent::Agent,
    llm: Option<&crate::llm::Client>,
) -> AgentInfo {
    use crate::agent::Agent;
    let (own, provider, model) = match agent {
        Agent::OpenAi => ("openai", Some("openai"), llm.map(|c| c.model().to_owned())),
        Agent::Exec(_) => ("exec", None, None),
        Agent::Cli(profile) => (
            profile.name.as_str(),
            match profile.name.as_str() {
                "claude" => Some("anthropic"),
                "codex" => Some("openai"),
                _ => None,
            },
            None,
        ),
    };
    AgentInfo {
        doer: Doer::Agent,
        name: name.filter(|n| *n != "auto").unwrap_or(own).to_owned(),
        provider: provider.map(str::to_owned),
        model,
    }
}

/// The `traceparent` of gate run `number` of run `run`: its span, sampled.
pub fn gate_traceparent(run: &str, number: u32) -> String {
    format!(
        "00-{}-{}-01",
        hex(&trace_id(run)),
        hex(&spans::gate_span(run, number))
    )
}

/// What the thread is given, in order.
enum Incoming {
    /// A line of the event log, as written.
    Line(String),
    /// An attempt's figures, recorded with its end.
    Figures(String, u32, Figures),
    Know(Agents),
    Doer(String, u32, AgentInfo),
    /// The run is over here: everything before this is sent.
    Last,
}

/// What the thread and the run share: why spans were lost, and a request under way.
#[derive(Default)]
struct Shared {
    /// Why the collector did not take spans, first time only.
    refused: Option<String>,
    /// Whether the queue was full.
    dropped: bool,
    /// When the request under way started.
    sending: Option<Instant>,
}

fn shared(s: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    s.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Where the run's events go: cheap to clone, never blocks.
#[derive(Clone)]
pub struct Feed {
    queue: SyncSender<Incoming>,
    shared: Arc<Mutex<Shared>>,
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Feed")
    }
}

impl Feed {
    fn push(&self, what: Incoming) -> bool {
        let queued = self.queue.try_send(what).is_ok();
        if !queued {
            shared(&self.shared).dropped = true;
        }
        queued
    }

    /// A line of the run's event log.
    pub fn line(&self, line: &str) {
        self.push(Incoming::Line(line.to_owned()));
    }

    /// Attempt `number` of `task` ended with `figures` (its event follows).
    pub fn figures(&self, task: &str, number: u32, figures: Figures) {
        self.push(Incoming::Figures(task.to_owned(), number, figures));
    }

    /// What runs attempt `number` of `task`, as it starts (its start's event follows).
    pub fn doer(&self, task: &str, number: u32, agent: AgentInfo) {
        self.push(Incoming::Doer(task.to_owned(), number, agent));
    }

    /// Who runs the run's tasks, once it is known.
    pub fn know(&self, agents: Agents) {
        self.push(Incoming::Know(agents));
    }
}

/// The export of one run's trace, running.
pub struct Tracer {
    feed: Feed,
    /// Told when everything queued before `Last` was sent (or given up).
    sent: Receiver<()>,
    endpoint: String,
    finished: bool,
}

impl Tracer {
    /// Starts the thread that turns run `run`'s events into spans and sends them.
    /// The export of run `run`'s trace; `lost_root`: when the run was made, if this process is
    /// to send the run's own span too (see `Builder::send_lost_root`).
    pub fn start(config: Config, run: &str, lost_root: Option<i64>) -> anyhow::Result<Tracer> {
        let (queue, waiting) = mpsc::sync_channel(QUEUE);
        let feed = Feed {
            queue,
            shared: Arc::new(Mutex::new(Shared::default())),
        };
        let (sent_tx, sent) = mpsc::channel();
        let endpoint = config.endpoint.clone();
        let (run, shared) = (run.to_owned(), Arc::clone(&feed.shared));
        std::thread::Builder::new()
            .name("swarm-trace".into())
            .spawn(move || {
                // The HTTP client is made here, off the run's thread.
                let mut builder = Builder::new(&run);
                if let Some(created) = lost_root {
                    builder.send_lost_root(created);
                }
                let exporter = Exporter {
                    client: otlp::Client::new(config),
                    builder,
                    shared,
                    pending: Vec::new(),
                    since: None,
                };
                exporter.run(&waiting);
                let _ = sent_tx.send(());
            })?;
        Ok(Tracer {
            feed,
            sent,
            endpoint,
            finished: false,
        })
    }

    pub fn feed(&self) -> Feed {
        self.feed.clone()
    }

    /// Ends the trace: the spans still open end, and what is queued is sent, waited for at
    /// most `FLUSH`, and no longer than until a request has gone unanswered for `STALLED`. Returns
    /// what to say of spans lost, if any were, once.
    pub fn finish(mut self) -> Option<String> {
        self.end()
    }

    fn end(&mut self) -> Option<String> {
        if std::mem::replace(&mut self.finished, true) {
            return None;
        }
        let stalled_now = || {
            shared(&self.feed.shared)
                .sending
                .is_some_and(|t| t.elapsed() >= STALLED)
        };
        let mut stalled = stalled_now();
        if self.feed.push(Incoming::Last) && !stalled {
            // The last spans are waited for while the collector answers: a request it leaves
            // unanswered for `STALLED` (a black hole) ends the wait then, not at `FLUSH`.
            let deadline = Instant::now() + FLUSH;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                match self.sent.recv_timeout(left.min(LOOK)) {
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                    Err(RecvTimeoutError::Timeout) => {}
                }
                if stalled_now() {
                    stalled = true;
                    break;
                }
            }
        }
        let mut s = shared(&self.feed.shared);
        let still = s.sending.is_some();
        let mut said = s.refused.take();
        if said.is_none() && still {
            said = Some(format!(
                "{} did not answer within {} at the run's end",
                self.endpoint,
                crate::ui::duration(if stalled { STALLED } else { FLUSH })
            ));
        }
        if s.dropped {
            let full = "more spans were waiting than swarm keeps";
            said = Some(match said {
                Some(why) => format!("{why}; {full}"),
                None => full.to_owned(),
            });
        }
        said
    }
}

impl Drop for Tracer {
    /// A run that ends by an error still sends what it has, within the same bound.
    fn drop(&mut self) {
        self.end();
    }
}

/// The thread: events in, spans out.
struct Exporter {
    client: otlp::Client,
    builder: Builder,
    shared: Arc<Mutex<Shared>>,
    /// Spans ended and not yet sent.
    pending: Vec<Span>,
    /// When the oldest of them ended.
    since: Option<Instant>,
}

impl Exporter {
    fn run(mut self, waiting: &Receiver<Incoming>) {
        loop {
            let wait = self.since.map_or(Duration::from_secs(3600), |t| {
                LINGER.saturating_sub(t.elapsed())
            });
            match waiting.recv_timeout(wait) {
                Ok(Incoming::Line(line)) => {
                    // A line of a kind this swarm does not know is no span.
                    if let Ok(logged) = serde_json::from_str::<Logged>(&line) {
                        let ended = self.builder.on(&logged);
                        self.take(ended);
                    }
                }
                Ok(Incoming::Figures(task, number, figures)) => {
                    self.builder.figures(&task, number, figures);
                }
                Ok(Incoming::Know(agents)) => self.builder.know(agents),
                Ok(Incoming::Doer(task, number, agent)) => {
                    self.builder.doer(&task, number, agent);
                }
                Ok(Incoming::Last) | Err(RecvTimeoutError::Disconnected) => {
                    let ended = self.builder.finish();
                    self.take(ended);
                    while !self.pending.is_empty() {
                        self.send();
                    }
                    return;
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
            if self.pending.len() >= BATCH || self.since.is_some_and(|t| t.elapsed() >= LINGER) {
                self.send();
            }
        }
    }

    fn take(&mut self, ended: Vec<Span>) {
        if !ended.is_empty() && self.since.is_none() {
            self.since = Some(Instant::now());
        }
        self.pending.extend(ended);
    }

    /// Sends a batch of what is pending; a batch the collector does not take is dropped.
    fn send(&mut self) {
        let n = self.pending.len().min(BATCH);
        let batch: Vec<Span> = self.pending.drain(..n).collect();
        if self.pending.is_empty() {
            self.since = None;
        }
        let body = otlp::encode(self.client.config(), &self.builder.trace(), &batch);
        shared(&self.shared).sending = Some(Instant::now());
        let result = self.client.send(&body);
        let mut s = shared(&self.shared);
        s.sending = None;
        if let Err(why) = result
            && s.refused.is_none()
        {
            s.refused = Some(why);
        }
    }
}
