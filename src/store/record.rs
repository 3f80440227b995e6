//! What the board stores and what its writes take: runs, tasks and goals as records with their
//! statuses, queue items, events and task updates. No SQL: a status only reads itself back from
//! its stored name.

use anyhow::bail;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::RunEvent;

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskStatus {
    Pending,
    Running,
    /// A writer whose commit waits for the merge queue.
    Committed,
    Done,
    Failed,
    Skipped,
    Parked,
    Interrupted,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Committed => "committed",
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
            Self::Parked => "parked",
            Self::Interrupted => "interrupted",
        }
    }

    pub(super) fn parse(s: &str) -> anyhow::Result<Self> {
        Ok(match s {
            "pending" => Self::Pending,
            "running" => Self::Running,
            "committed" => Self::Committed,
            "done" => Self::Done,
            "failed" => Self::Failed,
            "skipped" => Self::Skipped,
            "parked" => Self::Parked,
            "interrupted" => Self::Interrupted,
            other => bail!("unknown task status {other:?} in the board"),
        })
    }
}

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Running,
    Interrupted,
    Finished,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Interrupted => "interrupted",
            Self::Finished => "finished",
        }
    }

    pub(super) fn parse(s: &str) -> anyhow::Result<Self> {
        Ok(match s {
            "running" => Self::Running,
            "interrupted" => Self::Interrupted,
            "finished" => Self::Finished,
            other => bail!("unknown run status {other:?} in the board"),
        })
    }
}

/// A run as stored.
#[derive(Debug, Clone, Serialize)]
pub struct RunRecord {
    pub id: String,
    pub created_at: i64,
    pub finished_at: Option<i64>,
    pub status: RunStatus,
    pub exit_code: Option<i32>,
    pub source: String,
    pub base_commit: String,
    pub integration_ref: String,
    /// The run's options as JSON, owned by the caller.
    pub options: Value,
}

/// A task as stored.
#[derive(Debug, Clone, Serialize)]
pub struct TaskRecord {
    pub id: String,
    /// The task in the task-file format.
    pub spec: Value,
    pub status: TaskStatus,
    pub attempts: u32,
    /// Failed attempts; interrupted ones do not count against `--retries`.
    pub failures: u32,
    pub result: Option<String>,
    pub error: Option<String>,
    pub transcript: Option<String>,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    pub elapsed_ms: i64,
    pub branch: Option<String>,
    pub start_commit: Option<String>,
    pub commit_id: Option<String>,
    /// LLM tokens used by all attempts.
    pub tokens: u64,
    /// Of them, the prompts' tokens, where the agent says (0 otherwise).
    pub prompt_tokens: u64,
    /// Of the prompts' tokens, those the provider had cached, where the agent says.
    pub cached_tokens: u64,
    /// Cost in US dollars where the agent reports it; `None` is unknown, never zero.
    pub cost: Option<f64>,
    /// The agent's own session its next attempt continues, if any.
    pub session: Option<String>,
}

impl TaskRecord {
    /// Whether it is one of a task's candidates: its failure is its task's to answer for (the
    /// task failed if no candidate was green), not the run's.
    pub fn is_candidate(&self) -> bool {
        self.spec.get("candidate-of").is_some_and(|v| !v.is_null())
    }
}

/// A run as `swarm runs` lists it: its record's fields but the options, how many tasks it
/// has, and its last event and when it was.
#[derive(Debug, Clone)]
pub struct RunListing {
    pub id: String,
    pub created_at: i64,
    pub finished_at: Option<i64>,
    pub status: RunStatus,
    pub exit_code: Option<i32>,
    pub source: String,
    pub tasks: usize,
    pub last_event_at: Option<i64>,
    /// Its last event: for a run that ended, the one that ended it (`None` when this swarm
    /// does not know its kind).
    pub last_event: Option<RunEvent>,
}

/// An attempt as stored.
#[derive(Debug, Clone, Serialize)]
pub struct AttemptRecord {
    pub number: u32,
    pub started_at: i64,
    /// `None` while it runs, or when its process was killed.
    pub finished_at: Option<i64>,
    /// `succeeded`, `failed`, `interrupted`, `usage_limit`, `fault`; `None` while it runs.
    pub outcome: Option<String>,
    pub transcript: String,
    /// The agent's own session it ran in, where known.
    pub session: Option<String>,
    /// Whether it continued an earlier attempt's session.
    pub continued: bool,
    pub tokens: u64,
    pub prompt_tokens: u64,
    pub cached_tokens: u64,
    pub cost: Option<f64>,
}

/// Where a goal of a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GoalStatus {
    Pending,
    /// Its tasks are on the board.
    Planned,
    Done,
    Failed,
    Parked,
    Skipped,
}

impl GoalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Planned => "planned",
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Parked => "parked",
            Self::Skipped => "skipped",
        }
    }

    pub(super) fn parse(s: &str) -> anyhow::Result<Self> {
        Ok(match s {
            "pending" => Self::Pending,
            "planned" => Self::Planned,
            "done" => Self::Done,
            "failed" => Self::Failed,
            "parked" => Self::Parked,
            "skipped" => Self::Skipped,
            other => bail!("unknown goal status {other:?} in the board"),
        })
    }
}

/// A goal that must land before another can start, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Need {
    pub goal: String,
    pub reason: String,
}

/// A goal of a run as stored.
#[derive(Debug, Clone, Serialize)]
pub struct GoalRecord {
    pub id: String,
    pub text: String,
    /// `None` until the dependency pass ran; `Some(vec![])` is a goal that needs nothing.
    pub needs: Option<Vec<Need>>,
    pub status: GoalStatus,
    pub reason: Option<String>,
    /// The queue item the goal came from.
    pub queue_id: Option<i64>,
}

/// A goal waiting in the queue, or taken by a run that has not finished.
#[derive(Debug, Clone, Serialize)]
pub struct QueueItem {
    pub id: i64,
    pub text: String,
    pub added_at: i64,
    pub run_id: Option<String>,
    pub goal_id: Option<String>,
    /// The status of the goal it became, once a run took it.
    pub goal_status: Option<GoalStatus>,
}

/// What removing a queue item did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueRemoval {
    Removed,
    NotFound,
    /// A run already took the item; it stays, since the run's goal refers to it.
    Taken {
        run: String,
        goal: String,
    },
}

/// Something that happened, to a task or to the run, as written to the board and to
/// `events.jsonl`.
#[derive(Debug, Clone)]
pub struct Event<'a> {
    pub task: Option<&'a str>,
    pub what: RunEvent,
}

impl<'a> Event<'a> {
    pub fn run(what: RunEvent) -> Self {
        Self { task: None, what }
    }

    pub fn task(task: &'a str, what: RunEvent) -> Self {
        Self {
            task: Some(task),
            what,
        }
    }
}

/// A change to one task, applied with its event in one transaction.
#[derive(Debug, Default)]
pub struct TaskUpdate<'a> {
    pub status: Option<TaskStatus>,
    pub attempts: Option<u32>,
    pub failures: Option<u32>,
    pub result: Option<&'a str>,
    /// `Some(None)` clears the error.
    #[expect(
        clippy::option_option,
        reason = "unset, cleared and set are three different updates"
    )]
    pub error: Option<Option<&'a str>>,
    pub transcript: Option<&'a str>,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    pub elapsed_ms: Option<i64>,
    pub branch: Option<&'a str>,
    pub start_commit: Option<&'a str>,
    pub commit_id: Option<&'a str>,
    pub tokens: Option<u64>,
    pub prompt_tokens: Option<u64>,
    pub cached_tokens: Option<u64>,
    pub cost: Option<f64>,
    /// The session the next attempt continues; `Some(None)` clears it.
    #[expect(
        clippy::option_option,
        reason = "unset, cleared and set are three different updates"
    )]
    pub session: Option<Option<&'a str>>,
}

/// An attempt as it starts: its number, transcript, the agent session it runs in where known,
/// and whether that continues an earlier attempt's.
#[derive(Debug, Clone, Copy)]
pub struct AttemptStart<'a> {
    pub number: u32,
    pub transcript: &'a str,
    pub session: Option<&'a str>,
    pub continued: bool,
}

/// How an attempt ended, as recorded.
#[derive(Debug, Clone, Copy)]
pub struct AttemptEnd<'a> {
    pub outcome: &'a str,
    pub tokens: u64,
    pub prompt_tokens: u64,
    pub cached_tokens: u64,
    pub cost: Option<f64>,
    /// The tasks it spawned, each with its task-file line: they join the board with its end.
    pub spawned: &'a [(String, serde_json::Value)],
}
