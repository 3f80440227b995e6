//! The mirror: a run's events sent to Telegram chats (its start, each escalation, usage-limit
//! pauses, its end) and the commands those chats send back (`/status`, `/goal`, `/stop`,
//! `/resume`), through the Bot API. Sends go through a bounded queue on a thread of their own
//! and a long poll reads the chats on another, so the run never waits on the network: what the
//! API does not take is dropped, noted once. Knows nothing of runs beyond the texts it is handed
//! and the answers its caller gives to commands (`Answer`); the token goes only into the
//! requests' URLs, never into a message, a note or an error.

mod bot;
pub mod words;

#[cfg(test)]
mod tests;

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use self::bot::Bot;
pub use self::words::{API_VAR, CHATS_VAR, Command, TOKEN_VAR};
use crate::error::Usage;
use crate::secret::Secret;

const DEFAULT_API: &str = "https://api.telegram.org";

/// Messages waiting to be sent; past this, a message is dropped rather than waited for.
const QUEUE: usize = 64;
/// How long the run's end waits for the messages queued before it to go.
const FLUSH: Duration = Duration::from_secs(5);
/// Seconds a long poll is held by the API before it answers with nothing.
const POLL_SECS: u64 = 25;
/// The longest wait between polls of an API that does not answer.
const MOST_BACKOFF: Duration = Duration::from_secs(30);

/// Where the mirror goes and who may use it, read from the environment.
#[derive(Debug, Clone)]
pub struct Config {
    token: Secret,
    chats: Vec<i64>,
    api: String,
}

impl Config {
    /// The mirror `env` asks for: `None` unless both the token and the chats are set. A value
    /// that is set is checked whether or not the other is: a bad one is an input error.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Config>, Usage> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let token = var(TOKEN_VAR).map(|t| words::token(&t)).transpose()?;
        let chats = var(CHATS_VAR).map(|c| words::chats(&c)).transpose()?;
        let api = words::api(&var(API_VAR).unwrap_or_else(|| DEFAULT_API.to_owned()))?;
        Ok(match (token, chats) {
            (Some(token), Some(chats)) => Some(Config {
                token: Secret::new(token),
                chats,
                api,
            }),
            _ => None,
        })
    }
}

/// What the caller answers a command from an allowed chat with; called on the mirror's
/// reading thread.
pub type Answer = Box<dyn Fn(Command) -> String + Send>;

/// What the sending thread is given, in order.
enum Outgoing {
    /// A message to one chat (an answer) or to every allowed chat (`None`).
    Message { chat: Option<i64>, text: String },
    /// The run ended: everything before this is sent.
    Last,
}

/// The mirror's notes, a file in the run's directory (`mirror.log`): messages from chats that
/// are not allowed, and the API's first refusal. Secrets are hidden; a note that cannot be
/// written is lost, never a fault of the run.
#[derive(Clone)]
struct Log {
    path: Arc<PathBuf>,
    lock: Arc<Mutex<()>>,
}

impl Log {
    fn note(&self, text: &str) {
        let _held = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let at = jiff::Timestamp::now()
            .round(jiff::Unit::Second)
            .unwrap_or_default();
        let line = format!("{at} {}\n", crate::secret::redact(text));
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&*self.path)
        {
            let _ = file.write_all(line.as_bytes());
        }
    }
}

/// Where the run's events go: cheap to clone, never blocks (a full queue drops the message).
#[derive(Clone)]
pub struct Outbox {
    queue: SyncSender<Outgoing>,
    /// Why the API did not take a message, first time only.
    refused: Arc<Mutex<Option<String>>>,
}

impl std::fmt::Debug for Outbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Outbox")
    }
}

impl Outbox {
    /// Sends `text` to every allowed chat, if the queue has room.
    pub fn send(&self, text: String) {
        self.push(Outgoing::Message { chat: None, text });
    }

    /// Whether `out` was queued.
    fn push(&self, out: Outgoing) -> bool {
        let queued = self.queue.try_send(out).is_ok();
        if !queued {
            refuse(&self.refused, "more messages were waiting than swarm keeps");
        }
        queued
    }
}

/// Keeps the first reason a message was dropped; whether it is the first.
fn refuse(refused: &Mutex<Option<String>>, why: &str) -> bool {
    let mut refused = refused.lock().unwrap_or_else(PoisonError::into_inner);
    let first = refused.is_none();
    if first {
        *refused = Some(why.to_owned());
    }
    first
}

/// A mirror running: its sending and reading threads.
pub struct Mirror {
    outbox: Outbox,
    /// Told when every queued message is sent (or dropped).
    sent: Receiver<()>,
    /// Dropped to stop the reading thread.
    stop: SyncSender<()>,
    /// Set once the run ended: no command is acted on after.
    ended: Arc<AtomicBool>,
}

impl Mirror {
    /// Starts the threads: one sends what the outbox is given, one reads the allowed chats'
    /// commands (those sent since now) and sends what `answer` says back. Notes go to `log`.
    pub fn start(config: Config, log: PathBuf, answer: Answer) -> anyhow::Result<Mirror> {
        let log = Log {
            path: Arc::new(log),
            lock: Arc::new(Mutex::new(())),
        };
        let (queue, waiting) = mpsc::sync_channel::<Outgoing>(QUEUE);
        let outbox = Outbox {
            queue,
            refused: Arc::new(Mutex::new(None)),
        };
        let (sent_tx, sent) = mpsc::channel();
        let sender = {
            let (bot, chats, refused, log) = (
                Bot::sending(&config.api, config.token.clone()),
                config.chats.clone(),
                Arc::clone(&outbox.refused),
                log.clone(),
            );
            move || {
                for out in waiting {
                    let (chat, text) = match out {
                        Outgoing::Message { chat, text } => (chat, text),
                        Outgoing::Last => break,
                    };
                    for chat in chat.map_or_else(|| chats.clone(), |c| vec![c]) {
                        if let Err(why) = bot.send(chat, &text)
                            && refuse(&refused, &why)
                        {
                            log.note(&format!(
                                "the Telegram Bot API did not take a message, which is dropped (as are later ones it does not take): {why}"
                            ));
                        }
                    }
                }
                let _ = sent_tx.send(());
            }
        };
        std::thread::Builder::new()
            .name("swarm-mirror-send".into())
            .spawn(sender)?;
        let (stop, stopped) = mpsc::sync_channel::<()>(0);
        let ended = Arc::new(AtomicBool::new(false));
        let reader = Reader {
            bot: Bot::reading(&config.api, config.token, POLL_SECS),
            chats: config.chats,
            since: unix_now(),
            answer,
            outbox: outbox.clone(),
            log,
            ended: Arc::clone(&ended),
        };
        std::thread::Builder::new()
            .name("swarm-mirror-read".into())
            .spawn(move || reader.run(&stopped))?;
        Ok(Mirror {
            outbox,
            sent,
            stop,
            ended,
        })
    }

    pub fn outbox(&self) -> Outbox {
        self.outbox.clone()
    }

    /// Stops reading commands, sends `text` last and waits, at most `FLUSH`, for what is
    /// queued to go. Returns why messages were dropped, if any were.
    pub fn finish(self, text: String) -> Option<String> {
        self.ended.store(true, Ordering::SeqCst);
        drop(self.stop);
        self.outbox.send(text);
        // A queue full of messages the API does not take is not waited for.
        if self.outbox.push(Outgoing::Last) {
            let _ = self.sent.recv_timeout(FLUSH);
        }
        self.outbox
            .refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

/// The reading thread: long polls for the chats' messages and answers the allowed ones.
struct Reader {
    bot: Bot,
    chats: Vec<i64>,
    /// Messages sent before the mirror started (a `/stop` meant for an earlier run) are not
    /// acted on.
    since: i64,
    answer: Answer,
    outbox: Outbox,
    log: Log,
    ended: Arc<AtomicBool>,
}

impl Reader {
    fn run(self, stopped: &Receiver<()>) {
        let mut offset = None;
        let mut backoff = Duration::from_secs(1);
        loop {
            if !matches!(stopped.try_recv(), Err(TryRecvError::Empty)) {
                return;
            }
            let Ok(updates) = self.bot.updates(offset) else {
                // The API away: asked again later, the run going on meanwhile.
                match stopped.recv_timeout(backoff) {
                    Err(RecvTimeoutError::Timeout) => {}
                    _ => return,
                }
                backoff = (backoff * 2).min(MOST_BACKOFF);
                continue;
            };
            backoff = Duration::from_secs(1);
            for update in updates {
                offset = Some(update.id + 1);
                if self.ended.load(Ordering::SeqCst) {
                    return;
                }
                self.take(&update);
            }
        }
    }

    fn take(&self, update: &words::Update) {
        match words::heard(update, &self.chats, self.since) {
            words::Heard::Command { chat, command } => {
                let text = words::fit(&(self.answer)(command));
                self.outbox.push(Outgoing::Message {
                    chat: Some(chat),
                    text,
                });
            }
            words::Heard::Stranger { chat } => self.log.note(&format!(
                "ignored a message from chat {chat}, which {CHATS_VAR} does not allow"
            )),
            words::Heard::Nothing => {}
        }
    }
}

/// The text of a pause at a usage limit (of the run, or of every member of `pool`), `wait`
/// from now: until when, on the system's clock and with its zone.
pub fn paused(run: &str, pool: Option<&str>, wait: Duration) -> String {
    let until = jiff::SignedDuration::try_from(wait)
        .ok()
        .and_then(|w| jiff::Timestamp::now().checked_add(w).ok())
        .map_or_else(
            || "later".to_owned(),
            |t| {
                t.to_zoned(jiff::tz::TimeZone::system())
                    .strftime("%Y-%m-%d %H:%M %Z")
                    .to_string()
            },
        );
    words::paused(run, pool, &until, &crate::ui::duration(wait))
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}
