//! What happens in a run, as one typed enum: the board and `events.jsonl` record each as its
//! `kind` (the variant's name) and `detail` (its fields), and everything that reads the log
//! (`status`, `logs`, the report) reads it back as this enum. No kind is ever a string in code.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One candidate of a task, as its pick saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PickedCandidate {
    pub id: String,
    /// Whether its check passed (and it changed something).
    pub green: bool,
    /// Lines added and removed by its change, for a green one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed: Option<u64>,
    /// What became of it: `picked`, or why it lost.
    pub why: String,
}

/// One thing that happened. Its name is the log's `kind`, its fields the log's `detail`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum RunEvent {
    RunStarted {
        tasks: usize,
        base: String,
    },
    PlanReady {
        tasks: usize,
    },
    RunResumed {
        pid: u32,
    },
    /// A run stopped while planning: there is nothing to resume.
    RunAbandoned {
        reason: String,
    },
    RunEnded {
        status: String,
        exit_code: u8,
        landing: Option<String>,
        /// Why a run that did not finish stopped, in words (`swarm runs` shows it); none for
        /// a run that finished, or one recorded before swarm kept it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A goal was planned (a single-goal run).
    Planned {
        tasks: usize,
        requests: u32,
        tokens: u64,
        repairs: usize,
        /// Of `tokens`, the prompts' and the answers' (none for a plan given, or recorded
        /// before swarm kept them).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input_tokens: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_tokens: Option<u64>,
    },
    PlanningFailed {
        error: String,
    },
    /// A signal stopped the planning of a single-goal run; a resume plans it again.
    PlanningInterrupted,
    PlanOnly,
    /// Asked at the terminal, the user ran nothing (`interrupted`: with Ctrl-C).
    PlanDeclined {
        interrupted: bool,
    },
    /// Asked at the terminal, the user edited the plan, and the edit (of `tasks` tasks) ran.
    PlanEdited {
        tasks: usize,
    },
    PlanRepair {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        goal: Option<String>,
        kind: String,
        message: String,
    },
    TaskStarted {
        attempt: u32,
        cwd: String,
        /// The member of its pool the attempt went to (none for an agent that is no pool).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
    },
    /// A writer's checkout.
    Worktree {
        path: String,
        start: String,
        reuses: Option<String>,
    },
    TaskSucceeded {
        attempt: u32,
        elapsed_ms: i64,
    },
    Committed {
        commit: String,
    },
    NoChanges,
    /// The attempt that succeeded added these tasks to the run: the ones it spawned
    /// (`children`), then its continuation, if it has one.
    Spawned {
        tasks: Vec<String>,
        children: usize,
    },
    /// A task with candidates picked the one it merges (`winner`) by its `select` rule; each
    /// candidate with its check's outcome, the size of its change and why it lost.
    Picked {
        select: String,
        winner: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasons: Option<String>,
        candidates: Vec<PickedCandidate>,
    },
    /// A person sent the task's agent a message (`swarm steer`).
    Steered {
        text: String,
    },
    /// What the attempt asked to spawn was refused, and why; the task succeeded all the same.
    SpawnRefused {
        why: String,
    },
    TaskFailed {
        attempt: u32,
        error: String,
        retry: bool,
        /// The last lines of the attempt's stderr, secrets hidden (none recorded before swarm
        /// kept them).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        stderr_tail: Vec<String>,
    },
    TaskInterrupted {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attempt: Option<u32>,
    },
    TaskSkipped {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// `swarm retry` put the task back to run again on the integration tip: its earlier
    /// branch is kept as `kept` (none when it had none); a dependent skipped because of it
    /// waits again, `after` naming the task retried.
    TaskRetried {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kept: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<String>,
    },
    UsageLimit {
        message: String,
        wait_ms: u64,
        stops_run: bool,
    },
    /// A member of a pool met its provider's usage limit: it takes no attempt for
    /// `resets_in_ms`, or (`out`) for the rest of the run; the pool's other members go on.
    MemberLimited {
        pool: String,
        member: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resets_in_ms: Option<u64>,
        out: bool,
    },
    /// A pool's member whose usage limit has reset takes attempts again.
    MemberBack {
        member: String,
    },
    /// Every member of a pool still in the run is at its usage limit: none of the pool's tasks
    /// starts for `resumes_in_ms`, until the first member's reset.
    PoolPaused {
        pool: String,
        resumes_in_ms: u64,
    },
    /// Something outside the task cut its attempt short (`kind`: `credentials`,
    /// `environment` or `unreachable`); the run stops (or, for an endpoint that does not
    /// answer, waits for it) and the attempt does not count.
    Fault {
        kind: String,
        why: String,
    },
    Merged {
        commit: String,
        before: String,
        after: String,
        ms: f64,
    },
    /// The model endpoint stopped answering: no attempt starts while swarm checks it, for up
    /// to `wait_ms`.
    EndpointWaiting {
        why: String,
        wait_ms: u64,
    },
    /// The model endpoint answers again after `after_ms`; attempts go on.
    EndpointAnswers {
        after_ms: u64,
    },
    /// Processes the run's tasks left out of reach of their process groups (each
    /// `pid command`), found by the run's id and stopped.
    StraysStopped {
        processes: Vec<String>,
    },
    /// A writer merged before an interruption, recognised on resume.
    MergeRecovered {
        commit: String,
    },
    Parked(Parking),
    Escalated {
        hook: Value,
    },
    Resolving {
        paths: Vec<String>,
        /// The rung of the conflict ladder that tries (`structural`, `resolve`); none in runs
        /// made before the ladder, whose only rung was the resolver.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rung: Option<String>,
    },
    /// A look for conflicts coming compared `writers` running writers and trial-merged
    /// `probes` files they (or they and the integration tip) both changed.
    ForecastLooked {
        writers: usize,
        probes: usize,
    },
    /// This writer's change would conflict, in `paths`, with that of the running writer
    /// `with` (none: with what was merged since it started).
    ConflictForecast {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        with: Option<String>,
        paths: Vec<String>,
    },
    /// This committed writer's merge waits for writer `with`'s end (`forecast = "hold"`).
    HeldForMerge {
        with: String,
    },
    /// A model's answer, as it came (secrets hidden, cut at 16 KiB), to `what` asked
    /// (`planning`, `needs`) in its `request`th request.
    ModelAnswer {
        what: String,
        request: u32,
        text: String,
    },
    /// A request was shortened by `cut` bytes to fit the model's context of `context` tokens.
    PromptFitted {
        context: u64,
        cut: u64,
    },
    /// A request that offered tools came back without a function call (`what` asked).
    NoFunctionCall {
        what: String,
    },
    /// A rung of the conflict ladder did not merge the writer, for `why`.
    RungFailed {
        rung: String,
        why: String,
        paths: Vec<String>,
    },
    ResolverStarted {
        path: String,
        tip: String,
    },
    Resolved {
        commit: String,
        paths: Vec<String>,
        /// The rung that resolved it, as `Resolving` says.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rung: Option<String>,
        /// The structural rung's program and version (`mergiraf 0.20.0`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
    },
    /// The integration tip of a merge cut short by a kill, taken on resume.
    TipRecovered {
        before: String,
        after: String,
    },
    IntegrationMoved(Moved),
    BudgetSpent {
        budget: u64,
        used: u64,
        running: usize,
    },
    Deadlock {
        stuck: Vec<String>,
    },
    Landing {
        from: String,
        to: String,
    },
    /// A change request of the run's result on the forge (`--deliver pr`, `pr-per-task`,
    /// `stack`): opened, updated, or found as it is; the task's, or the whole run's when the
    /// event names no task. `outcome`: `opened`, `updated`, `unchanged`, `closed`, `merged` or
    /// `not swarm's`.
    Delivered(Delivery),
    /// Memory gave the planning of a goal (`None`: the run's single goal) what these past
    /// runs' goals like it came to.
    Recalled {
        goal: Option<String>,
        runs: Vec<String>,
        /// The lessons those runs taught that the planner was given, by number.
        #[serde(default)]
        lessons: Vec<i64>,
    },
    /// The task's agent was told these lessons of earlier runs (by number) about the files
    /// it changes.
    Told {
        lessons: Vec<i64>,
    },
    /// The planner's model distilled these lessons (by number) from the finished run
    /// (`lessons = "model"`), with `tokens`; or could not (`error`).
    Distilled {
        lessons: Vec<i64>,
        tokens: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// Delivery stopped before it was done (`--deliver` with pull requests): why, and whether
    /// it is a fault of the environment that a resume may get past.
    DeliveryStopped {
        why: String,
        environment: bool,
    },
    LlmThrottled {
        status: u16,
        wait_ms: u64,
        attempt: u32,
    },
    LlmRetrying {
        why: String,
        wait_ms: u64,
        attempt: u32,
    },
    LlmConcurrency {
        limit: usize,
    },
    GoalAdded {
        goal: String,
        text: String,
    },
    GoalsInferred {
        goals: Vec<String>,
        edges: usize,
        dropped: usize,
        requests: u32,
        tokens: u64,
    },
    GoalNeeds {
        goal: String,
        needs: String,
        reason: String,
    },
    GoalNeedDropped {
        goal: String,
        needs: String,
        reason: String,
        why: String,
    },
    GoalNeedsFailed {
        goals: Vec<String>,
        error: String,
    },
    GoalPlanned {
        goal: String,
        tasks: usize,
        requests: u32,
        tokens: u64,
        repairs: usize,
    },
    GoalPlanningFailed {
        goal: String,
        error: String,
    },
    GoalSkipped {
        goal: String,
        reason: String,
    },
    GoalStuck {
        goal: String,
        reason: String,
    },
    GoalEnded {
        goal: String,
        status: String,
    },
    /// `swarm retry` of its task `after` opened the goal again: planned (its tasks run
    /// again) or pending (it waited on that goal).
    GoalReopened {
        goal: String,
        status: String,
        after: String,
    },
    /// A gate run started on `tip`, testing the merges of `batch` (task ids, oldest first);
    /// `probe` is `batch` (every merge since the last green tip), `bisect` (a step of a red
    /// batch's bisection) or `base` (the base, before the first merge is blamed).
    GateStarted {
        run: u32,
        probe: String,
        tip: String,
        batch: Vec<String>,
        transcript: String,
    },
    /// A gate run ended: `verdict` is `green`, `red` or `interrupted`; `tail` holds the last
    /// lines of a red run's stderr, secrets hidden.
    GateFinished {
        run: u32,
        probe: String,
        tip: String,
        batch: Vec<String>,
        verdict: String,
        ms: i64,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tail: Vec<String>,
    },
    /// The bisection named the first merge whose tip fails (`tip`): the integration tip goes
    /// back from `from` to `to` (the tip before it, green) and `remerge` are merged again on
    /// top.
    /// A writer merged after a culprit waits to be merged again.
    GateRemerge,
    GateCulprit {
        task: String,
        tip: String,
        from: String,
        to: String,
        remerge: Vec<String>,
    },
    /// A run spread over machines (`--remote`): an attempt was published for the workers.
    Published {
        attempt: u32,
        generation: u32,
    },
    /// A worker claimed the task's published attempt.
    Claimed {
        worker: String,
        generation: u32,
    },
    /// A worker's lease went unrenewed for its time: the attempt is published again.
    LeaseExpired {
        worker: String,
        generation: u32,
    },
    /// A worker's result arrived.
    ResultArrived {
        worker: String,
        generation: u32,
        status: String,
    },
    /// A result on the remote was refused (see `crate::remote`): not for the attempt
    /// published, not under the lease of the worker it names, or (with `SWARM_REMOTE_KEY`)
    /// without a good signature. `worker` and `generation` are what it names, if it reads.
    ResultRefused {
        worker: Option<String>,
        generation: Option<u32>,
        why: String,
    },
    /// A lease on the remote was refused: with `SWARM_REMOTE_KEY`, one without a good
    /// signature.
    LeaseRefused {
        worker: Option<String>,
        generation: Option<u32>,
        why: String,
    },
    /// The remote did not answer (`why`), or answers again (`why` is null).
    RemoteAway {
        why: Option<String>,
    },
}

/// A change request on the forge that holds the run's result, or a task's change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    /// GitHub's number, GitLab's `iid`.
    pub number: u64,
    pub url: String,
    /// Its branch on the remote, and the branch it is to be merged into.
    pub head: String,
    pub base: String,
    /// The commit its branch holds.
    pub commit: String,
    /// `opened`, `updated`, `unchanged`, `closed`, `merged` or `not swarm's`.
    pub outcome: String,
}

/// Where a parked writer's work is and why it waits for a human.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parking {
    pub branch: String,
    pub commit: String,
    pub integration: String,
    pub paths: Vec<String>,
    /// Why the one resolver attempt failed, when one was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolver: Option<String>,
    /// Each rung of the conflict ladder tried after git's merge, and why it did not merge.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rungs: Vec<RungTried>,
    /// Why it is held for review rather than conflicting, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For a writer the gate took out: the last lines of the gate's red run, secrets hidden.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gate_output: Vec<String>,
}

/// A rung of the conflict ladder a parked writer's merge climbed, and why it did not merge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RungTried {
    pub rung: String,
    pub why: String,
}

/// What swarm found on its integration branch when someone else had moved it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Moved {
    pub integration: String,
    pub found: Option<String>,
    pub backup: Option<String>,
    pub tip: String,
    pub reason: String,
}

impl RunEvent {
    /// Whether `swarm logs --errors` shows it.
    pub fn is_error(&self) -> bool {
        matches!(
            self,
            Self::TaskFailed { .. }
                | Self::Parked(_)
                | Self::Escalated { .. }
                | Self::TaskSkipped { .. }
                | Self::GoalSkipped { .. }
                | Self::GoalPlanningFailed { .. }
                | Self::GoalNeedsFailed { .. }
                | Self::Deadlock { .. }
                | Self::IntegrationMoved(_)
                | Self::ResultRefused { .. }
                | Self::LeaseRefused { .. }
        )
    }

    /// Its `kind` and `detail`, as the log has them (`Value::Null` for no detail).
    pub fn kind_and_detail(&self) -> (String, Value) {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        let kind = v["kind"].as_str().unwrap_or_default().to_owned();
        let detail = v.get_mut("detail").map(Value::take).unwrap_or_default();
        (kind, detail)
    }
}

/// A line of `events.jsonl`, read back.
#[derive(Debug, Clone, Deserialize)]
pub struct Logged {
    /// When it was recorded, in milliseconds since the epoch.
    #[serde(default)]
    pub at: i64,
    #[serde(default)]
    pub task: Option<String>,
    #[serde(flatten)]
    pub event: RunEvent,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_read_back_as_they_were_written() {
        let events = [
            RunEvent::NoChanges,
            RunEvent::Merged {
                commit: "c".into(),
                before: "b".into(),
                after: "a".into(),
                ms: 1.5,
            },
            RunEvent::TaskSkipped { reason: None },
            RunEvent::PlanRepair {
                goal: None,
                kind: "dropped_dep".into(),
                message: "m".into(),
            },
        ];
        for e in events {
            let (kind, detail) = e.kind_and_detail();
            let mut line = serde_json::json!({ "seq": 1, "at": 2, "kind": kind, "task": "t" });
            if !detail.is_null() {
                line["detail"] = detail;
            }
            let back: Logged = serde_json::from_value(line).unwrap();
            assert_eq!(back.event, e);
            assert_eq!(back.task.as_deref(), Some("t"));
        }
        let (kind, detail) = RunEvent::NoChanges.kind_and_detail();
        assert_eq!((kind.as_str(), detail), ("no_changes", Value::Null));
    }
}
