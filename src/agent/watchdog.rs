//! The watchdog: one thread that ends every attempt that passes its deadline or stops showing
//! signs of life, and every attempt on a stop. An attempt's process group gets SIGTERM (or is
//! told to end itself), then SIGKILL after the kill grace.

use std::collections::HashMap;
use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// Why the watchdog ended an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KillReason {
    Timeout,
    Stalled,
    Stop,
}

struct Entry {
    pgid: Pid,
    deadline: Instant,
    term_sent: Option<Instant>,
    reason: Option<KillReason>,
    progress: Option<Progress>,
    /// Where an attempt that ends itself is told to (an ACP agent is sent `session/cancel`)
    /// instead of its group getting SIGTERM; SIGKILL still follows after the grace.
    cancel: Option<Cancel>,
}

/// How the watchdog tells an attempt to end itself.
type Cancel = Box<dyn Fn() + Send>;

impl Entry {
    /// Starts the end of the attempt for `reason`: SIGTERM, or the word to cancel.
    fn end(&mut self, now: Instant, reason: KillReason) {
        match &self.cancel {
            Some(cancel) => cancel(),
            None => {
                let _ = killpg(self.pgid, Signal::SIGTERM);
            }
        }
        self.term_sent = Some(now);
        self.reason = Some(reason);
    }
}

/// What the watchdog watches for signs of life: the sizes of an attempt's output.
struct Progress {
    limit: Duration,
    signs: Vec<Sign>,
    size: u64,
    changed: Instant,
}

/// Where an attempt's output shows: a file it writes, or a count of what it wrote to a pipe
/// (a transcript at its cap stops growing while its process still prints).
pub(crate) enum Sign {
    File(File),
    Count(Arc<AtomicU64>),
}

impl Progress {
    /// The output written so far.
    fn size(&self) -> u64 {
        self.signs
            .iter()
            .map(|sign| match sign {
                Sign::File(f) => f.metadata().map_or(0, |m| m.len()),
                Sign::Count(n) => n.load(Ordering::Relaxed),
            })
            .sum()
    }
}

#[derive(Default)]
struct Registry {
    entries: HashMap<u64, Entry>,
    next: u64,
    stopping: bool,
    shutdown: bool,
}

/// Ends attempts that pass their deadline, and every attempt on a stop: the process group gets
/// SIGTERM, then SIGKILL after `grace`. One thread serves all attempts.
#[derive(Clone)]
pub(crate) struct Watchdog {
    shared: Arc<(Mutex<Registry>, Condvar)>,
    grace: Duration,
}

/// An attempt registered with the watchdog.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ticket(u64);

impl Watchdog {
    pub fn start(grace: Duration) -> anyhow::Result<Self> {
        let dog = Self {
            shared: Arc::new((Mutex::new(Registry::default()), Condvar::new())),
            grace,
        };
        let worker = dog.clone();
        std::thread::Builder::new()
            .name("swarm-watchdog".into())
            .spawn(move || worker.patrol())
            .context("could not start the watchdog thread")?;
        Ok(dog)
    }

    pub(crate) fn register(
        &self,
        pgid: Pid,
        timeout: Duration,
        progress: Option<(Duration, Vec<Sign>)>,
    ) -> Ticket {
        self.register_with(pgid, timeout, progress, None)
    }

    pub(crate) fn register_with(
        &self,
        pgid: Pid,
        timeout: Duration,
        progress: Option<(Duration, Vec<Sign>)>,
        cancel: Option<Cancel>,
    ) -> Ticket {
        let (lock, wake) = &*self.shared;
        let mut reg = lock.lock().unwrap_or_else(PoisonError::into_inner);
        let id = reg.next;
        reg.next += 1;
        let now = Instant::now();
        let mut entry = Entry {
            pgid,
            deadline: crate::time::deadline(now, timeout),
            term_sent: None,
            reason: None,
            progress: progress.map(|(limit, signs)| Progress {
                limit,
                signs,
                size: 0,
                changed: now,
            }),
            cancel,
        };
        if reg.stopping {
            entry.end(now, KillReason::Stop);
        }
        reg.entries.insert(id, entry);
        wake.notify_all();
        Ticket(id)
    }

    pub(crate) fn unregister(&self, ticket: Ticket) -> Option<KillReason> {
        let (lock, wake) = &*self.shared;
        let mut reg = lock.lock().unwrap_or_else(PoisonError::into_inner);
        let reason = reg.entries.remove(&ticket.0).and_then(|e| e.reason);
        // `stop_and_reap` waits for the registry to empty.
        wake.notify_all();
        reason
    }

    /// Stops every attempt, waits up to the grace for them to end, and kills what is left: the
    /// way out when the run itself failed, so that no agent outlives it.
    pub fn stop_and_reap(&self) {
        self.stop_all();
        let (lock, wake) = &*self.shared;
        let until = crate::time::deadline(Instant::now(), self.grace);
        let mut reg = lock.lock().unwrap_or_else(PoisonError::into_inner);
        while !reg.entries.is_empty() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            reg = wake
                .wait_timeout(reg, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        for e in reg.entries.values() {
            let _ = killpg(e.pgid, Signal::SIGKILL);
        }
    }

    /// Stops every running attempt and every attempt started from now on.
    pub fn stop_all(&self) {
        let (lock, wake) = &*self.shared;
        let mut reg = lock.lock().unwrap_or_else(PoisonError::into_inner);
        reg.stopping = true;
        let now = Instant::now();
        for e in reg.entries.values_mut() {
            if e.term_sent.is_none() {
                e.end(now, KillReason::Stop);
            }
        }
        wake.notify_all();
    }

    /// Whether a stop was asked for (the built-in agent polls this between requests).
    pub fn is_stopping(&self) -> bool {
        self.shared
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .stopping
    }

    /// Kills every running attempt at once (the second Ctrl-C).
    pub fn kill_all_now(&self) {
        let (lock, _) = &*self.shared;
        let reg = lock.lock().unwrap_or_else(PoisonError::into_inner);
        for e in reg.entries.values() {
            let _ = killpg(e.pgid, Signal::SIGKILL);
        }
    }

    /// Ends the watchdog thread.
    pub fn shutdown(&self) {
        let (lock, wake) = &*self.shared;
        lock.lock().unwrap_or_else(PoisonError::into_inner).shutdown = true;
        wake.notify_all();
    }

    fn patrol(&self) {
        let (lock, wake) = &*self.shared;
        let mut reg = lock.lock().unwrap_or_else(PoisonError::into_inner);
        while !reg.shutdown {
            let now = Instant::now();
            let mut next = now + Duration::from_secs(1);
            for e in reg.entries.values_mut() {
                let stalled = match (&mut e.progress, e.term_sent) {
                    (Some(p), None) => {
                        let size = p.size();
                        if size != p.size {
                            p.size = size;
                            p.changed = now;
                        }
                        let due = crate::time::deadline(p.changed, p.limit);
                        next = next.min(due);
                        now >= due
                    }
                    _ => false,
                };
                match e.term_sent {
                    None if now >= e.deadline || stalled => {
                        let reason = if stalled && now < e.deadline {
                            KillReason::Stalled
                        } else {
                            KillReason::Timeout
                        };
                        e.end(now, reason);
                        next = next.min(crate::time::deadline(now, self.grace));
                    }
                    None => next = next.min(e.deadline),
                    Some(sent) if now >= crate::time::deadline(sent, self.grace) => {
                        let _ = killpg(e.pgid, Signal::SIGKILL);
                    }
                    Some(sent) => next = next.min(crate::time::deadline(sent, self.grace)),
                }
            }
            let wait = next.saturating_duration_since(Instant::now());
            reg = wake
                .wait_timeout(reg, wait)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}
