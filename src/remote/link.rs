//! The coordinator's line to the remote, on a thread of its own so that the run loop never
//! waits on the network: it pushes what the loop hands it, in order, and fetches the run's
//! refs every poll, retrying with backoff while the remote does not answer. What it finds
//! reaches the loop as a `Seen`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use super::transport::{Expect, Transport, Update, retry_wait};
use crate::git::CommitId;

/// The run's refs on the remote, as a fetch found them.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    /// The number of the last push made before this fetch (see `Link::push`).
    pub(crate) after: u64,
    /// The refs by name under the run's prefix; empty while `away`.
    pub(crate) refs: BTreeMap<String, CommitId>,
    /// The remote does not answer: what git said.
    pub(crate) away: Option<String>,
}

enum Order {
    Push(u64, Vec<Update>),
}

pub(crate) struct Link {
    tx: Option<Sender<Order>>,
    pushes: u64,
    thread: Option<JoinHandle<()>>,
    /// Set by `close`: a push the remote does not take is given up after a few tries.
    closing: Arc<AtomicBool>,
}

/// Tries of a push once the link is closing, before it is given up.
const CLOSING_TRIES: u32 = 4;

impl Link {
    /// Starts the thread; `deliver` gets each fetch that differs from the one before.
    pub(crate) fn start(
        transport: Transport,
        prefix: String,
        poll: Duration,
        deliver: impl Fn(Seen) + Send + 'static,
    ) -> Self {
        let (tx, rx) = mpsc::channel::<Order>();
        let closing = Arc::new(AtomicBool::new(false));
        let giving_up = Arc::clone(&closing);
        let thread = std::thread::Builder::new()
            .name("swarm-remote".to_owned())
            .spawn(move || {
                let (mut done, mut delivered) = (0, 0);
                let mut last: Option<(BTreeMap<String, CommitId>, Option<String>)> = None;
                let mut fails = 0;
                loop {
                    let wait = if fails == 0 { poll } else { retry_wait(fails) };
                    match rx.recv_timeout(wait) {
                        Ok(Order::Push(n, updates)) => {
                            // Every order waiting goes now, then one fetch.
                            let mut orders = vec![(n, updates)];
                            while let Ok(Order::Push(n, updates)) = rx.try_recv() {
                                orders.push((n, updates));
                            }
                            done = orders.last().map_or(done, |(n, _)| *n);
                            push_all(&transport, orders, &giving_up);
                            continue;
                        }
                        Err(RecvTimeoutError::Disconnected) => return,
                        Err(RecvTimeoutError::Timeout) => {}
                    }
                    let seen = match transport.fetch(&prefix) {
                        Ok(refs) => {
                            fails = 0;
                            Seen {
                                after: done,
                                refs,
                                away: None,
                            }
                        }
                        Err(e) => {
                            fails += 1;
                            Seen {
                                after: done,
                                refs: BTreeMap::new(),
                                away: Some(e.0),
                            }
                        }
                    };
                    let key = (seen.refs.clone(), seen.away.clone());
                    if last.as_ref() != Some(&key) || seen.after != delivered {
                        last = Some(key);
                        delivered = seen.after;
                        deliver(seen);
                    }
                }
            })
            .ok();
        Self {
            tx: Some(tx),
            pushes: 0,
            thread,
            closing,
        }
    }

    /// Hands a push to the thread; its number, which the first `Seen` made after it carries.
    pub(crate) fn push(&mut self, updates: Vec<Update>) -> u64 {
        self.pushes += 1;
        if let Some(tx) = &self.tx {
            let _ = tx.send(Order::Push(self.pushes, updates));
        }
        self.pushes
    }

    /// The number of the last push handed over.
    pub(crate) fn pushes(&self) -> u64 {
        self.pushes
    }

    /// Stops the thread once it has made the pushes handed to it.
    pub(crate) fn close(&mut self) {
        self.closing.store(true, Ordering::Relaxed);
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.close();
    }
}

/// Makes the pushes of `orders`, each until the remote answers (a refusal is an answer: the
/// next fetch shows what is there instead). Orders of one ref that must be set or removed
/// whatever it is go together in one push, each ref on its own; the others, whose refs
/// must change together, one atomic push each.
fn push_all(transport: &Transport, orders: Vec<(u64, Vec<Update>)>, giving_up: &AtomicBool) {
    let (mut single, atomic): (Vec<Update>, Vec<Vec<Update>>) = orders.into_iter().fold(
        (Vec::new(), Vec::new()),
        |(mut one, mut many), (_, mut u)| {
            if u.len() == 1 && u[0].expect == Expect::Any {
                one.append(&mut u);
            } else {
                many.push(u);
            }
            (one, many)
        },
    );
    let mut tries = 0;
    let retry = |tries: &mut u32| {
        *tries += 1;
        if giving_up.load(Ordering::Relaxed) && *tries >= CLOSING_TRIES {
            return false;
        }
        std::thread::sleep(retry_wait(*tries));
        true
    };
    while !single.is_empty() {
        match transport.push_each(&single) {
            Ok(changed) => {
                let mut changed = changed.into_iter();
                single.retain(|_| !changed.next().unwrap_or(true));
                if single.is_empty() || !retry(&mut tries) {
                    break;
                }
            }
            Err(_) if retry(&mut tries) => {}
            Err(_) => break,
        }
    }
    for updates in atomic {
        let mut tries = 0;
        while transport.push(&updates).is_err() {
            if !retry(&mut tries) {
                break;
            }
        }
    }
}
