//! What the loop remembers of each task besides its state in the dag: its attempts and
//! failures, the commits of a writer, its result for its dependents, the agent's session and
//! pool member, and the times the display and the ETA go by. Plain data: the core keeps it,
//! and the executor reads it to prepare a task's attempt.

use std::time::{Duration, Instant};

use crate::git::CommitId;
use crate::store::{TaskRecord, TaskStatus};

use super::dag::State;

/// Per-task memory of the loop.
#[derive(Debug, Clone)]
pub(in crate::schedule) struct Slot {
    pub(in crate::schedule) attempts: u32,
    pub(in crate::schedule) failures: u32,
    pub(in crate::schedule) result: Option<String>,
    pub(in crate::schedule) start_commit: Option<CommitId>,
    pub(in crate::schedule) commit: Option<CommitId>,
    /// What all its attempts so far used: tokens, cached tokens, cost.
    pub(in crate::schedule) spent: Totals,
    /// Conflicting paths of a merge waiting for its resolver; empty otherwise.
    pub(in crate::schedule) conflict: Vec<String>,
    pub(in crate::schedule) resolver_tried: bool,
    /// The rung of the conflict ladder its resolution now running climbs.
    pub(in crate::schedule) rung: Option<crate::schedule::Rung>,
    /// The rungs its conflicting merge climbed without a merge, with why each failed.
    pub(in crate::schedule) climbed: Vec<(crate::schedule::Rung, String)>,
    /// The integration tip a running resolver attempt started from.
    pub(in crate::schedule) resolving_from: Option<CommitId>,
    /// The agent's session the next attempt continues, if it is to.
    pub(in crate::schedule) session: Option<String>,
    /// The member of its pool its last attempt went to (the one its session belongs to), for
    /// a task whose agent is a pool.
    pub(in crate::schedule) member: Option<String>,
    /// On a worker of a run spread over machines, where the task's state is the
    /// coordinator's: why it ended without a result, as the coordinator said.
    pub(in crate::schedule) missing: Option<String>,
    /// When its attempt (or resolver attempt) now running started.
    pub(in crate::schedule) started: Option<Instant>,
    /// How long its attempt that succeeded took, in this process: what the display's ETA
    /// goes by.
    pub(in crate::schedule) took: Option<Duration>,
}

impl Slot {
    /// A task nothing has happened to yet.
    pub(in crate::schedule) fn waiting() -> Self {
        Self {
            attempts: 0,
            failures: 0,
            result: None,
            start_commit: None,
            commit: None,
            spent: Totals::default(),
            conflict: Vec::new(),
            resolver_tried: false,
            rung: None,
            climbed: Vec::new(),
            resolving_from: None,
            member: None,
            missing: None,
            session: None,
            started: None,
            took: None,
        }
    }

    /// A task as the board left it.
    pub(in crate::schedule) fn recorded(r: &TaskRecord) -> Self {
        Self {
            attempts: r.attempts,
            failures: r.failures,
            result: r.result.clone(),
            start_commit: r.start_commit.as_deref().map(CommitId::new),
            commit: r.commit_id.as_deref().map(CommitId::new),
            spent: Totals {
                tokens: r.tokens,
                prompt_tokens: r.prompt_tokens,
                cached_tokens: r.cached_tokens,
                cost: r.cost,
            },
            session: r.session.clone(),
            ..Self::waiting()
        }
    }

    pub(in crate::schedule) fn totals(&self) -> Totals {
        self.spent
    }
}

/// What an attempt used, or a task over all its attempts so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(in crate::schedule) struct Totals {
    /// LLM tokens, where the agent says (0 otherwise).
    pub(in crate::schedule) tokens: u64,
    /// Of them, the prompts' tokens, where the agent says (0 otherwise).
    pub(in crate::schedule) prompt_tokens: u64,
    /// Of the prompts' tokens, those the provider had cached, where the agent says.
    pub(in crate::schedule) cached_tokens: u64,
    /// The cost in dollars, where the agent says.
    pub(in crate::schedule) cost: Option<f64>,
}

impl Totals {
    /// Adds `more` (a task's next attempt, say): each count summed, a cost known if either is.
    pub(in crate::schedule) fn add(&mut self, more: Totals) {
        self.tokens += more.tokens;
        self.prompt_tokens += more.prompt_tokens;
        self.cached_tokens += more.cached_tokens;
        if let Some(c) = more.cost {
            self.cost = Some(self.cost.unwrap_or(0.0) + c);
        }
    }

    /// Whether anything was used that the board should know.
    pub(in crate::schedule) fn any(&self) -> bool {
        self.tokens > 0 || self.prompt_tokens > 0 || self.cost.is_some()
    }
}

/// A task's state in the dag as the board left it: what had not ended waits.
pub(in crate::schedule) fn recorded_state(status: TaskStatus) -> State {
    match status {
        TaskStatus::Done => State::Done,
        TaskStatus::Failed => State::Failed,
        TaskStatus::Skipped => State::Skipped,
        TaskStatus::Parked => State::Parked,
        TaskStatus::Committed => State::Committed,
        TaskStatus::Pending | TaskStatus::Running | TaskStatus::Interrupted => State::Waiting,
    }
}
