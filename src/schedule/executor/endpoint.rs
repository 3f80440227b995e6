//! A model endpoint that stopped answering: while it is away, no attempt starts, and a thread
//! of its own checks it every few seconds, telling the dispatcher when it answers again or
//! when it has been away as long as the run waits.

use std::sync::mpsc::{self, Sender};
use std::time::{Duration, Instant};

use super::Message;
use crate::llm::Client;

/// The first check follows this long after the endpoint went away; each later one waits
/// twice as long as the one before, up to `MAX_EVERY`.
const FIRST_EVERY: Duration = Duration::from_secs(1);
const MAX_EVERY: Duration = Duration::from_secs(15);

#[derive(Default)]
pub(super) struct EndpointWatch {
    /// Since when the endpoint has been away, while it is.
    away_since: Option<Instant>,
    /// Dropped, ends the checking thread at once, even while it waits.
    checks: Option<mpsc::Sender<()>>,
}

impl EndpointWatch {
    pub(super) fn is_away(&self) -> bool {
        self.away_since.is_some()
    }

    /// The endpoint went away: checks begin, unless they already run. Each check is one
    /// request of `client`'s; after `wait` without an answer, the last cause is sent.
    pub(super) fn away(
        &mut self,
        client: &Client,
        wait: Duration,
        tx: &Sender<Message>,
    ) -> anyhow::Result<()> {
        if self.is_away() {
            return Ok(());
        }
        let started = Instant::now();
        self.away_since = Some(started);
        let (checks, ended) = mpsc::channel::<()>();
        self.checks = Some(checks);
        let (client, tx) = (client.clone(), tx.clone());
        std::thread::Builder::new()
            .name("swarm-endpoint".into())
            .spawn(move || {
                let mut every = FIRST_EVERY;
                loop {
                    // Waits for the next check, or for the run to stop waiting.
                    match ended.recv_timeout(every) {
                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                        _ => return,
                    }
                    let answer = client.probe();
                    // The run stopped waiting during the check: its answer goes nowhere.
                    if !matches!(ended.try_recv(), Err(mpsc::TryRecvError::Empty)) {
                        return;
                    }
                    match answer {
                        Ok(()) => {
                            let _ = tx.send(Message::Endpoint(None));
                            return;
                        }
                        Err(cause) if started.elapsed() >= wait => {
                            let _ = tx.send(Message::Endpoint(Some(cause)));
                            return;
                        }
                        Err(_) => every = (every * 2).min(MAX_EVERY),
                    }
                }
            })?;
        Ok(())
    }

    /// The checks ended (the endpoint answered, or the run stops waiting for it): how long it
    /// was away.
    pub(super) fn back(&mut self) -> Duration {
        self.checks = None;
        self.away_since
            .take()
            .map_or(Duration::ZERO, |t| t.elapsed())
    }
}
