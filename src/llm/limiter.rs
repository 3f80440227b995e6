//! The limit on requests in flight that every thread of a run shares: it halves on throttling
//! and grows back on success, quickly up to what the server is known to take, slowly past it.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use super::{LlmError, POLL};

const SUCCESSES_TO_GROW: u32 = 2;
/// Successes in a row before trying one more request in flight than the server took before.
const SUCCESSES_TO_PROBE: u32 = 25;

/// Calls in flight never exceed `limit`; the limit halves on throttling and creeps back up.
pub(super) struct Limiter {
    state: Mutex<LimiterState>,
    freed: Condvar,
}

struct LimiterState {
    max: usize,
    limit: usize,
    in_flight: usize,
    streak: u32,
    /// Bumped at every cut: throttling answers to requests sent before a cut say nothing new.
    generation: u64,
    /// The most requests in flight the server is known to take: the in-flight count just
    /// below the one it throttled. Growth is quick up to it and slow past it.
    ceiling: usize,
}

/// A held slot; dropping it frees the slot.
pub(super) struct Slot<'a> {
    limiter: &'a Limiter,
    /// The generation it was taken in, and the requests in flight with it.
    pub(super) sent: (u64, usize),
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.limiter.lock().in_flight -= 1;
        self.limiter.freed.notify_all();
    }
}

impl Limiter {
    pub(super) fn new(max: usize) -> Self {
        let max = max.max(1);
        Limiter {
            state: Mutex::new(LimiterState {
                max,
                limit: max,
                in_flight: 0,
                streak: 0,
                generation: 0,
                ceiling: max,
            }),
            freed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, LimiterState> {
        // The counters stay consistent even if a holder panicked.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn acquire(&self, stop: &dyn Fn() -> bool) -> Result<Slot<'_>, LlmError> {
        let mut state = self.lock();
        loop {
            if state.in_flight < state.limit {
                state.in_flight += 1;
                return Ok(Slot {
                    limiter: self,
                    sent: (state.generation, state.in_flight),
                });
            }
            if stop() {
                return Err(LlmError::Stopped);
            }
            state = self
                .freed
                .wait_timeout(state, POLL)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    pub(super) fn in_flight(&self) -> usize {
        self.lock().in_flight
    }

    /// A request of generation `sent.0` was throttled with `sent.1` requests in flight. Returns the new
    /// limit when it changed: halved once per round of requests, not once per answer, so a
    /// burst of refusals to one round cuts it once.
    pub(super) fn throttled(&self, sent: (u64, usize)) -> Option<usize> {
        let mut state = self.lock();
        state.streak = 0;
        state.ceiling = state.ceiling.min(sent.1.saturating_sub(1)).max(1);
        if sent.0 != state.generation {
            return None;
        }
        state.generation += 1;
        let halved = (state.limit / 2).max(1);
        (halved != state.limit).then(|| {
            state.limit = halved;
            halved
        })
    }

    /// Returns the new limit when it changed.
    pub(super) fn succeeded(&self) -> Option<usize> {
        let mut state = self.lock();
        state.streak += 1;
        // Back to the known-good level quickly; past it, probe rarely.
        let needed = if state.limit < state.ceiling {
            SUCCESSES_TO_GROW
        } else {
            SUCCESSES_TO_PROBE
        };
        if state.streak < needed || state.limit >= state.max {
            return None;
        }
        state.streak = 0;
        state.limit += 1;
        let limit = state.limit;
        drop(state);
        self.freed.notify_all();
        Some(limit)
    }

    pub(super) fn failed(&self) {
        self.lock().streak = 0;
    }
}
