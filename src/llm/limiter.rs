//! The limit on requests in flight that every thread of a run shares.
//!
//! A 429 answered while other requests of the run are in flight cuts the limit to those
//! requests: they are what the server took when it refused one more. The count is taken as the
//! refused request gives its slot back, so refusals answered together count each other out and
//! leave the limit at what the server held, whatever their order. A refusal the count says
//! nothing about halves the limit instead, once per round of requests: a 503 or 529 (the
//! server short for everyone, not for us) or a 429 with nothing else of ours in flight.
//!
//! The limit grows back by one after every two successes, quickly up to the ceiling: the
//! fewest requests in flight the server has refused, less one, taken from the most that were
//! in flight during the refused request's life, which never reads below what the server held.
//! Past the ceiling it tries one more request only after many successes, twice as many after
//! each try the server refuses, so that a server that takes 8 is asked for a 9th rarely; a try
//! the server takes for a whole round makes the ceiling forgotten (the server takes more now).
//! Successes answered with fewer in flight than the limit raise nothing: they say nothing
//! about more.

use std::mem::ManuallyDrop;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use super::{LlmError, POLL};

/// Successes in a row before one more request in flight, below the ceiling.
const SUCCESSES_TO_GROW: u32 = 2;
/// Successes in a row at the ceiling before the first try of one more request in flight than
/// the server took. Each try it refuses costs a request the server's `Retry-After`, so each
/// doubles the wait for the next, up to `SUCCESSES_TO_PROBE_MAX`.
const SUCCESSES_TO_PROBE: u32 = 100;
const SUCCESSES_TO_PROBE_MAX: u32 = 3_200;

/// What a refusal tells of the server's capacity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// 429, too many requests: with others of ours in flight, those are what the server took.
    TooMany,
    /// 503 or 529, unavailable or overloaded: the server is short for every client, and how
    /// many of ours were in flight says nothing of what it takes.
    Overloaded,
}

impl Refusal {
    pub(super) fn of(status: u16) -> Self {
        if status == 429 {
            Refusal::TooMany
        } else {
            Refusal::Overloaded
        }
    }
}

/// Calls in flight never exceed `limit`.
pub(super) struct Limiter {
    state: Mutex<LimiterState>,
    freed: Condvar,
}

struct LimiterState {
    max: usize,
    limit: usize,
    in_flight: usize,
    /// For each slot held (by key; `None` when free), the most requests in flight at any
    /// moment it was held, its own included.
    peaks: Vec<Option<usize>>,
    /// Successes in a row answered with the limit all in use.
    streak: u32,
    /// Bumped by the first refusal of each round: later refusals to requests sent before it
    /// halve nothing more and double no wait.
    generation: u64,
    /// The most requests in flight the server may take: the fewest it refused, less one.
    /// Growth is quick up to it and rare past it.
    ceiling: usize,
    /// Successes in a row at the ceiling before trying one more.
    probe_after: u32,
}

/// A held slot. Dropping it frees the slot and says nothing of the answer (a stop, a failure);
/// `succeeded` and `refused` free it with what the answer says.
pub(super) struct Slot<'a> {
    limiter: &'a Limiter,
    key: usize,
    generation: u64,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.limiter.lock().release(self.key);
        self.limiter.freed.notify_all();
    }
}

impl Slot<'_> {
    /// The request was answered. Returns the new limit when it changed.
    pub(super) fn succeeded(self) -> Option<usize> {
        self.give_back(|state, _, _| state.succeeded())
    }

    /// The request was refused. Returns the new limit when it changed.
    pub(super) fn refused(self, refusal: Refusal) -> Option<usize> {
        self.give_back(|state, peak, generation| state.refused(refusal, peak, generation))
    }

    /// Frees the slot and applies `outcome` under one lock, so that the requests counted in
    /// flight after it are exactly the others still held.
    fn give_back(
        self,
        outcome: impl FnOnce(&mut LimiterState, usize, u64) -> Option<usize>,
    ) -> Option<usize> {
        // Freed here, not again by `Drop`.
        let slot = ManuallyDrop::new(self);
        let mut state = slot.limiter.lock();
        let peak = state.release(slot.key);
        let changed = outcome(&mut state, peak, slot.generation);
        drop(state);
        slot.limiter.freed.notify_all();
        changed
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
                peaks: Vec::new(),
                streak: 0,
                generation: 0,
                ceiling: max,
                probe_after: SUCCESSES_TO_PROBE,
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
                let key = state.hold();
                return Ok(Slot {
                    limiter: self,
                    key,
                    generation: state.generation,
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

    /// A request failed in a way that says nothing of the server's capacity: growth starts
    /// over.
    pub(super) fn failed(&self) {
        self.lock().streak = 0;
    }

    #[cfg(test)]
    pub(super) fn limit(&self) -> usize {
        self.lock().limit
    }
}

impl LimiterState {
    /// Takes a slot; returns its key.
    fn hold(&mut self) -> usize {
        self.in_flight += 1;
        let level = self.in_flight;
        for peak in self.peaks.iter_mut().flatten() {
            *peak = (*peak).max(level);
        }
        if let Some(key) = self.peaks.iter().position(Option::is_none) {
            self.peaks[key] = Some(level);
            key
        } else {
            self.peaks.push(Some(level));
            self.peaks.len() - 1
        }
    }

    /// Frees slot `key`; returns its peak.
    fn release(&mut self, key: usize) -> usize {
        self.in_flight -= 1;
        self.peaks[key].take().unwrap_or(1)
    }

    /// A request was answered; its slot is already free, so `in_flight` counts the others.
    fn succeeded(&mut self) -> Option<usize> {
        if self.in_flight + 1 < self.limit {
            // The run had fewer in flight than it may: the server was not asked for more.
            return None;
        }
        self.streak += 1;
        if self.limit > self.ceiling && self.streak >= self.limit as u32 {
            // A whole round past the ceiling with nothing refused: the server takes more now.
            self.ceiling = self.max;
            self.probe_after = SUCCESSES_TO_PROBE;
        }
        let needed = if self.limit < self.ceiling {
            SUCCESSES_TO_GROW
        } else {
            self.probe_after
        };
        if self.streak < needed || self.limit >= self.max {
            return None;
        }
        self.streak = 0;
        self.limit += 1;
        Some(self.limit)
    }

    /// A request taken in `generation`, with at most `peak` in flight while it was, was
    /// refused; its slot is already free, so `in_flight` counts the others.
    fn refused(&mut self, refusal: Refusal, peak: usize, generation: u64) -> Option<usize> {
        self.streak = 0;
        let first_of_round = generation == self.generation;
        if first_of_round {
            self.generation += 1;
        }
        let others = self.in_flight;
        let limit = if refusal == Refusal::TooMany && others > 0 {
            if first_of_round && peak > self.ceiling {
                // A try past the ceiling, refused: the next waits twice as long.
                self.probe_after = (self.probe_after * 2).min(SUCCESSES_TO_PROBE_MAX);
            }
            // `peak` counts this request and every other the server could have held.
            self.ceiling = self.ceiling.min(peak - 1);
            self.limit.min(others)
        } else if first_of_round {
            (self.limit / 2).max(1)
        } else {
            return None;
        };
        (limit != self.limit).then(|| {
            self.limit = limit;
            limit
        })
    }
}
