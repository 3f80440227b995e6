//! The run loop's decisions, in one pure core: `Core::on(input, now)` takes what happened (an
//! attempt ended, a merge was made, a goal was planned, a signal came, time passed) and returns
//! the `Effect`s for the executor to carry out (start an attempt, merge a writer, write the
//! board, tell the terminal). Every policy of the loop is here: readiness, retries and their
//! backoff, the token budget, usage-limit and endpoint pauses, pools' members, spawns and their
//! limits, goals joining, the merge queue with its parking, resolving and escalating, the gate's
//! batches and bisection, and the stop with its phases. No git, no board, no terminal, no
//! threads and no clock but the instant it is given: the executor does all of that, and the
//! simulation in the test suite drives the core through thousands of seeded worlds.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::agent::Fault;
use crate::git::CommitId;
use crate::plan::{Mode, Plan, Task};
use crate::store::{GoalRecord, Moved, RunEvent, TaskRecord};
use crate::ui::{Ended, Stop as Said, Told};

pub(in crate::schedule) mod dag;
mod ended;
mod forecast;
pub(in crate::schedule) mod found;
pub(in crate::schedule) mod gate;
mod goals;
mod members;
mod merges;
mod pauses;
#[cfg(test)]
mod sim;
pub(in crate::schedule) mod slot;
pub(in crate::schedule) mod spawn;
#[cfg(test)]
mod tests;

use dag::{Dag, Effect as DagEffect, State, Transition};
pub(in crate::schedule) use forecast::{Foreseen, Looked};
pub(in crate::schedule) use goals::Planned as PlanAnswer;
pub(in crate::schedule) use merges::{Hold, MergeOutcome};
use slot::{Slot, Totals, recorded_state};
use spawn::{Joined, Spawns};

use super::Settings;
use super::job::{Report, Verdict};

/// What happened, as the core is told it.
#[derive(Debug)]
pub(in crate::schedule) enum Input {
    /// Time passed: held-back tasks whose time came are ready, and what may start starts.
    Tick,
    /// The executor has done what opens the run (the merges a crash cut short, the attempts
    /// taken up from the remote, the terminal told): what may start starts from now on.
    Open,
    /// An attempt of a task ended (in this process's pool, or a worker's result), and how long
    /// a usage limit it met holds (the executor reads the reset from the clock).
    Ended {
        report: Report,
        limit_wait: Duration,
    },
    /// A gate run ended.
    Gated(Report),
    /// The merge the core asked for was made (or not), and how.
    Merge { task: usize, outcome: MergeOutcome },
    /// The gate's rewind found the integration branch moved by something other than swarm:
    /// what was there is kept aside and the branch is at the rewound tip (see `Effect::Rewind`).
    Moved(Box<Moved>),
    /// SIGINT, SIGTERM or SIGHUP.
    Signal,
    /// Swarm met a fault of the machine itself (a full disk under the board): the run stops,
    /// recording only what ends.
    Broken(Fault),
    /// An effect was not carried out (it met such a fault, or came after one).
    Undone(Undone),
    /// The checks of an endpoint that went away ended: it answers (`None`), or it stayed away
    /// as long as the run waits (its last answer).
    Endpoint(Option<String>),
    /// An escalation hook ended.
    HookEnded {
        task: Option<String>,
        hook: serde_json::Value,
    },
    /// The dependency pass over these goals ended.
    Needs {
        goals: Vec<usize>,
        result: Result<crate::planner::needs::Inferred, String>,
    },
    /// A goal's planning ended.
    Planned { goal: usize, answer: PlanAnswer },
    /// Goals the queue held, taken into the run.
    Queued(Vec<GoalRecord>),
    /// Tasks a worker on another machine holds already (an earlier coordinator published
    /// them): they run there, not here.
    Adopted(Vec<usize>),
    /// On a worker: the coordinator's attempt `attempt` of `task`, from `tip`, claimed, with
    /// what its deps left.
    Claimed {
        task: usize,
        attempt: u32,
        tip: CommitId,
        deps: Vec<(usize, DepFacts)>,
    },
    /// On a worker: an attempt ended and its result went to the remote (`taken`), or did not.
    Pushed { report: Report, taken: bool },
    /// On a worker: a claimed attempt could not be started here (its checkout, its agent),
    /// and is given back.
    NotStarted(usize),
    /// The look for conflicts coming the core asked for, and what it found.
    Forecast(Looked),
}

/// What a dep of a claimed attempt left, as the coordinator published it.
#[derive(Debug, Clone, Default)]
pub(in crate::schedule) struct DepFacts {
    pub(in crate::schedule) result: Option<String>,
    pub(in crate::schedule) missing: Option<String>,
    pub(in crate::schedule) start: Option<CommitId>,
    pub(in crate::schedule) commit: Option<CommitId>,
}

/// What an effect not carried out left undone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::schedule) enum Undone {
    /// Task `i`'s attempt (or resolver attempt, or publication) never started.
    Start(usize),
    /// The gate's run never started.
    Gate,
    /// The end of task `i`'s attempt is not on the board.
    End(usize),
    /// An escalation hook never started.
    Hook,
    /// Writer `i`'s merge was not made: it waits, committed, for a resume.
    Merge(usize),
    /// The look for conflicts coming was not made.
    Forecast,
}

/// What the executor is to do.
#[must_use]
#[derive(Debug)]
pub(in crate::schedule) enum Effect {
    /// Start task `task`'s attempt `attempt` in this process, from `tip`, with `running`
    /// attempts in its slots (this one included).
    Start {
        task: usize,
        attempt: u32,
        tip: CommitId,
        running: usize,
    },
    /// Publish task `task`'s attempt `attempt`, from `tip`, for the workers.
    Publish {
        task: usize,
        attempt: u32,
        tip: CommitId,
    },
    /// Start the one resolver attempt of a conflicting writer, from `tip`.
    StartResolver { task: usize, tip: CommitId },
    /// Start gate run `number` on `tip`, testing the merges of `batch`.
    StartGate {
        number: u32,
        probe: gate::Probe,
        tip: CommitId,
        batch: Vec<usize>,
    },
    /// Merge a committed writer into the integration branch at `tip`; its outcome comes back
    /// as `Input::Merge`. `onto` says the writer's commit is a resolved merge of `tip` itself.
    Merge {
        task: usize,
        tip: CommitId,
        onto: bool,
    },
    /// Remove a writer's checkouts and the branches that hold nothing of value any more, the
    /// integration branch being at `tip`.
    CleanUp {
        task: usize,
        merged: bool,
        tip: CommitId,
    },
    /// Snapshots of commits other than the tip are no longer shared by new readers.
    DropSnapshots(CommitId),
    /// Park a writer: its branch kept, the board told, a human told once (the escalation).
    Park { task: usize, hold: Hold },
    /// Tell a human about the run as a whole, once: the escalation and its hook.
    Escalate(serde_json::Value),
    /// Move the integration branch back from `from` to `to` (the gate took a culprit out),
    /// recording `event`. Found elsewhere (something other than swarm moved it), what is
    /// there is kept aside, the branch is put at `to` all the same, and `Input::Moved` follows.
    Rewind {
        from: CommitId,
        to: CommitId,
        event: RunEvent,
    },
    /// Write to the board.
    Record(Rec),
    /// Tell the terminal.
    Tell(Told),
    /// Stop every running attempt.
    StopAttempts,
    /// Check the model endpoint until it answers, for at most this long.
    WatchEndpoint(Duration),
    /// Infer which of these goals need which.
    InferNeeds(Vec<usize>),
    /// Plan this goal.
    PlanGoal(usize),
    /// Planning threads give up at their next request.
    StopPlanning,
    /// Look in the queue for goals added since the run started; they come back as
    /// `Input::Queued`.
    PollQueue,
    /// The plan grew: write it again.
    WritePlan,
    /// A failed writer's checkout is kept for a look: say where.
    KeptCheckout(usize),
    /// Compare the changes of these running writers with each other's and with what was
    /// merged since each started (the tip is at `tip`): which would conflict.
    Forecast { writers: Vec<usize>, tip: CommitId },
    /// Add `text` to the notes of task `task`'s running attempt (`SWARM_NOTES`).
    Note { task: usize, text: String },
}

impl Effect {
    /// Whether it is still carried out once swarm met a fault of the machine (the board and
    /// the terminal are told what ends; nothing new starts, merges or moves): `Err` with what
    /// dropping it leaves undone, if anything.
    pub(in crate::schedule) fn after_fault(
        &self,
        settings: &Settings,
    ) -> Result<(), Option<Undone>> {
        match self {
            Effect::Record(_)
            | Effect::Tell(_)
            | Effect::StopAttempts
            | Effect::StopPlanning
            | Effect::KeptCheckout(_) => Ok(()),
            Effect::Forecast { .. } => Err(Some(Undone::Forecast)),
            Effect::Start { task, .. }
            | Effect::Publish { task, .. }
            | Effect::StartResolver { task, .. } => Err(Some(Undone::Start(*task))),
            Effect::StartGate { .. } => Err(Some(Undone::Gate)),
            Effect::Park { .. } | Effect::Escalate(_) => {
                Err(settings.on_escalate.is_some().then_some(Undone::Hook))
            }
            Effect::Merge { task, .. } => Err(Some(Undone::Merge(*task))),
            Effect::CleanUp { .. }
            | Effect::DropSnapshots(_)
            | Effect::Rewind { .. }
            | Effect::WatchEndpoint(_)
            | Effect::InferNeeds(_)
            | Effect::PlanGoal(_)
            | Effect::PollQueue
            | Effect::WritePlan
            | Effect::Note { .. } => Err(None),
        }
    }

    /// Whether carrying it out changes something beyond the board that a later look at the
    /// board must find recorded: a ref moved, a checkout removed, a hook run, an attempt
    /// offered to another machine. What the board took before it is committed first. (An
    /// attempt started here waits for its pass's commit instead.)
    pub(in crate::schedule) fn acts_beyond_the_board(&self) -> bool {
        matches!(
            self,
            Effect::Merge { .. }
                | Effect::Rewind { .. }
                | Effect::Park { .. }
                | Effect::CleanUp { .. }
                | Effect::Escalate(_)
                | Effect::Publish { .. }
        )
    }

    /// What it leaves undone if carrying it out fails.
    pub(in crate::schedule) fn undone_if_failed(&self, settings: &Settings) -> Option<Undone> {
        match self {
            Effect::Record(rec) => rec.attempt_end().map(Undone::End),
            _ => self.after_fault(settings).err().flatten(),
        }
    }
}

/// How one list of effects is carried out once something in it fails: the policy the executor
/// follows and the simulation replays. After a fault of the machine only what tells the board
/// and the terminal goes on; records decided with one the board did not take may take it for
/// written, so they are not written either. What is dropped is handed back, after the fault,
/// as `Input::Undone`.
#[derive(Default)]
pub(in crate::schedule) struct Carrying {
    fault: Option<Fault>,
    undone: Vec<Undone>,
    record_lost: bool,
    /// The gate's rewind found the branch moved: no merge after it in this list is made.
    moved: bool,
}

/// Whether an effect is carried out.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::schedule) enum Carry {
    Now,
    /// Dropped: a fault came first.
    AfterFault,
    /// Dropped: a record was lost before it.
    AfterLostRecord,
    /// Dropped: a merge after the branch was found moved; it waits, committed, for a resume.
    AfterMove,
}

impl Carrying {
    /// Whether `effect` is carried out; if not, what dropping it leaves undone is kept.
    pub(in crate::schedule) fn admits(&mut self, core: &Core<'_>, effect: &Effect) -> Carry {
        if (self.fault.is_some() || core.broken())
            && let Err(left) = effect.after_fault(core.settings)
        {
            self.undone.extend(left);
            return Carry::AfterFault;
        }
        if self.moved
            && let Effect::Merge { task, .. } = effect
        {
            self.undone.push(Undone::Merge(*task));
            return Carry::AfterMove;
        }
        if self.record_lost && matches!(effect, Effect::Record(_)) {
            self.undone.extend(effect.undone_if_failed(core.settings));
            return Carry::AfterLostRecord;
        }
        Carry::Now
    }

    /// What `effect` leaves undone if it fails, and whether it is a record: taken before it is
    /// carried out, for `failed`.
    pub(in crate::schedule) fn stakes(core: &Core<'_>, effect: &Effect) -> (Option<Undone>, bool) {
        (
            effect.undone_if_failed(core.settings),
            matches!(effect, Effect::Record(_)),
        )
    }

    /// A rewind was carried out; `inputs` says whether it found the branch moved (then merging
    /// stops at once, before the core hears of it).
    pub(in crate::schedule) fn rewound(&mut self, inputs: &std::collections::VecDeque<Input>) {
        self.moved |= matches!(inputs.back(), Some(Input::Moved(_)));
    }

    /// A commit of the board that failed lost these, recorded or started before this
    /// effect.
    pub(in crate::schedule) fn lost(&mut self, undone: Vec<Undone>) {
        self.undone.extend(undone);
    }

    /// The effect whose `stakes` these are met `fault`.
    pub(in crate::schedule) fn failed(&mut self, stakes: (Option<Undone>, bool), fault: Fault) {
        let (left, record) = stakes;
        self.undone.extend(left);
        self.record_lost |= record;
        self.fault.get_or_insert(fault);
    }

    /// What was left undone, in order, then the fault, ahead of the inputs the effects brought
    /// back.
    pub(in crate::schedule) fn into_inputs(self, inputs: &mut std::collections::VecDeque<Input>) {
        if let Some(f) = self.fault {
            inputs.push_front(Input::Broken(f));
        }
        for u in self.undone.into_iter().rev() {
            inputs.push_front(Input::Undone(u));
        }
    }
}

/// A write to the board.
#[derive(Debug)]
pub(in crate::schedule) enum Rec {
    Run(RunEvent),
    Task(String, RunEvent),
    Session(String, Option<String>),
    /// What a task has used in all, after a rung of the conflict ladder spent more.
    Spent {
        id: String,
        totals: Totals,
    },
    Succeeded {
        id: String,
        report: Report,
        totals: Totals,
        result: String,
        commit: Option<CommitId>,
        writes: bool,
        joined: Joined,
        /// A candidate: its commit is kept for its task's pick, not merged (the task is done).
        kept: bool,
        /// A pick: where its winner started, which its merge goes from.
        start: Option<CommitId>,
    },
    Failed {
        id: String,
        report: Report,
        totals: Totals,
        failures: u32,
        status: crate::store::TaskStatus,
        why: String,
        retry: bool,
    },
    Interrupted {
        id: String,
        report: Report,
        totals: Totals,
    },
    Limited {
        id: String,
        report: Report,
        totals: Totals,
        message: String,
        wait_ms: u64,
        stops_run: bool,
    },
    Faulted {
        id: String,
        report: Report,
        totals: Totals,
        kind: &'static str,
        why: String,
    },
    /// Tasks that had run wait for a resume.
    MarkInterrupted(Vec<String>),
    /// Tasks skipped, each with why.
    Skipped(Vec<(String, String)>),
    Merged {
        id: String,
        commit: CommitId,
        before: CommitId,
        after: CommitId,
        ms: f64,
    },
    MergeRecovered {
        id: String,
        commit: CommitId,
    },
    /// The integration branch was one merge of swarm's ahead of the recorded tip.
    TipRecovered {
        before: CommitId,
        after: CommitId,
    },
    Resolved {
        id: String,
        commit: CommitId,
        from: CommitId,
        paths: Vec<String>,
        rung: crate::schedule::Rung,
    },
    GatePassed {
        tip: CommitId,
        event: RunEvent,
    },
    MergeAgain(Vec<String>),
    GoalStatus {
        goal: String,
        status: crate::store::GoalStatus,
        reason: Option<String>,
        event: RunEvent,
    },
    GoalNeeds {
        rows: Vec<(String, Vec<crate::store::Need>)>,
        events: Vec<RunEvent>,
    },
    TasksAdded(Vec<(String, serde_json::Value)>),
}

impl Rec {
    /// The task whose attempt's end this records, if it is one.
    /// Whether it records what git already holds (a merge made, a tip moved): the board
    /// must have it at once, not with the rest of its pass.
    pub(in crate::schedule) fn follows_git(&self) -> bool {
        matches!(
            self,
            Rec::Merged { .. }
                | Rec::MergeRecovered { .. }
                | Rec::TipRecovered { .. }
                | Rec::Resolved { .. }
                | Rec::GatePassed { .. }
                | Rec::MergeAgain(_)
        )
    }

    pub(in crate::schedule) fn attempt_end(&self) -> Option<usize> {
        match self {
            Rec::Succeeded { report, .. }
            | Rec::Failed { report, .. }
            | Rec::Interrupted { report, .. }
            | Rec::Limited { report, .. }
            | Rec::Faulted { report, .. } => Some(report.task),
            _ => None,
        }
    }
}

/// How the loop ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// Every task reached a final state.
    Finished,
    /// Stopped by a signal; unfinished tasks are resumable.
    Interrupted,
    /// The token budget was spent: nothing new started, what ran finished; resumable.
    OverBudget,
    /// Something only a human can settle stopped the merges (the integration ref moved under
    /// the run); nothing new started, what ran finished; resumable once settled.
    Halted,
    /// A fault outside the tasks (a refused key, a full disk) stopped the run; resumable once
    /// it is fixed, the attempts it cut short counted as no failure.
    Faulted(Fault),
}

/// How far the run is from its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// What the executor does before anything starts.
    Opening,
    Running,
    /// Nothing new starts; what runs finishes (or was stopped).
    Stopping,
    /// Swarm met a fault itself: what ends is recorded as cut short, nothing else is done.
    Broken,
}

/// Whose loop the core decides for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::schedule) enum Role {
    /// The run's own: it starts what is ready, merges, plans goals.
    Run,
    /// A worker's on another machine: it runs only the attempts it claims, and records how
    /// they ended here; the coordinator decides the rest.
    Worker,
}

/// What the run as a whole is doing.
struct Stop {
    phase: Phase,
    /// A signal asked the run to stop.
    signalled: bool,
    /// A fault outside the tasks stops the run.
    fault: Option<Fault>,
    /// The token budget is spent.
    over_budget: bool,
}

/// How many attempts are out, and where.
#[derive(Default)]
struct Counts {
    /// In this process's pool (attempts, resolvers, the gate).
    running: usize,
    writers: usize,
    /// Escalation hooks still running; the run ends only once they have.
    hooks: usize,
    /// Tasks out with workers on other machines.
    remote: BTreeSet<usize>,
}

/// The run's decisions and what they go by.
pub(in crate::schedule) struct Core<'s> {
    pub(in crate::schedule) settings: &'s Settings,
    role: Role,
    /// Grows when a goal is planned or a task spawns.
    pub(in crate::schedule) plan: Plan,
    pub(in crate::schedule) dag: Dag,
    pub(in crate::schedule) slots: Vec<Slot>,
    pub(in crate::schedule) spawns: Spawns,
    budget: Budget,
    pauses: pauses::Pauses,
    members: members::Members,
    merges: merges::Merges,
    forecasts: forecast::Forecasts,
    goals: Option<goals::Goals>,
    counts: Counts,
    stop: Stop,
    /// The base of the run: the tip a gate never tested.
    base: CommitId,
    /// Tasks whose attempt's end the board could not take (a fault of the machine): they are
    /// marked for a resume at the end.
    unrecorded: BTreeSet<usize>,
    /// The jitter of retries' backoff.
    rng: fastrand::Rng,
    /// Impossible inputs refused (a second end of one attempt, say): the simulation counts
    /// them; a run says nothing of them.
    pub(in crate::schedule) refused: Vec<String>,
}

/// The token budget: what the tasks' attempts have used, this run and before a resume.
struct Budget {
    limit: Option<u64>,
    used: u64,
}

/// What a core starts from: the plan and what the board holds of the run.
pub(in crate::schedule) struct Start<'r> {
    pub(in crate::schedule) plan: Plan,
    pub(in crate::schedule) records: &'r [TaskRecord],
    /// Where swarm left the integration branch, as the board recorded it.
    pub(in crate::schedule) tip: CommitId,
    pub(in crate::schedule) base: CommitId,
    /// The newest tip the gate passed on, as the board recorded it.
    pub(in crate::schedule) green: Option<CommitId>,
    /// Gate runs an earlier process made, for their numbers.
    pub(in crate::schedule) gate_runs: u32,
    /// The goals of a multi-goal run, and whether it takes the queue's as they come.
    pub(in crate::schedule) goals: Option<(Vec<GoalRecord>, bool)>,
    /// The seed of the retries' jitter.
    pub(in crate::schedule) seed: u64,
}

/// What a resumed run finds on the integration branch, read from git by the executor.
#[derive(Debug, Default)]
pub(in crate::schedule) struct Found {
    /// The integration branch was one merge of swarm's ahead of the recorded tip: at this.
    pub(in crate::schedule) tip: Option<CommitId>,
    /// Something other than swarm moved it; swarm put it back.
    pub(in crate::schedule) moved: Option<Moved>,
    /// The merges since the last green tip, oldest first: (task, tip it made).
    pub(in crate::schedule) ungated: Vec<(usize, CommitId)>,
    /// The green tip is not on the branch: all is tested again from the base.
    pub(in crate::schedule) green_lost: bool,
    /// Committed writers the tip holds already (merged before a crash).
    pub(in crate::schedule) merged: BTreeSet<usize>,
    /// The member each pool task's last attempt went to.
    pub(in crate::schedule) members: Vec<(usize, String)>,
}

impl<'s> Core<'s> {
    pub(in crate::schedule) fn new(settings: &'s Settings, start: Start<'_>) -> Self {
        let Start {
            plan,
            records,
            tip,
            base,
            green,
            gate_runs,
            goals,
            seed,
        } = start;
        // A task the board does not have yet waits, as a new one.
        let states = (0..plan.len())
            .map(|i| {
                records
                    .get(i)
                    .map_or(State::Waiting, |r| recorded_state(r.status))
            })
            .collect();
        let gate = settings.gate.as_ref().map(|command| {
            let tested = green.is_some();
            let green = green.unwrap_or_else(|| base.clone());
            let mut g = gate::GateState::new(command.clone(), green, tested);
            g.runs = gate_runs;
            g
        });
        Self {
            goals: goals.map(|(list, from_queue)| goals::Goals::new(list, from_queue, &plan)),
            dag: Dag::new(&plan, states),
            spawns: Spawns::new(&plan, settings.spawn),
            slots: (0..plan.len())
                .map(|i| records.get(i).map_or_else(Slot::waiting, Slot::recorded))
                .collect(),
            budget: Budget {
                limit: settings.budget_tokens,
                used: records.iter().map(|r| r.tokens).sum(),
            },
            role: Role::Run,
            pauses: pauses::Pauses::default(),
            members: members::Members::default(),
            merges: merges::Merges::new(tip, gate),
            forecasts: forecast::Forecasts::default(),
            counts: Counts::default(),
            stop: Stop {
                phase: Phase::Opening,
                signalled: false,
                fault: None,
                over_budget: false,
            },
            base,
            unrecorded: BTreeSet::new(),
            rng: fastrand::Rng::with_seed(seed),
            refused: Vec::new(),
            plan,
            settings,
        }
    }

    /// A worker's core: every task waits until a claim of it starts it.
    pub(in crate::schedule) fn for_worker(
        settings: &'s Settings,
        plan: Plan,
        base: CommitId,
    ) -> Self {
        let mut core = Self::new(
            settings,
            Start {
                plan,
                records: &[],
                tip: base.clone(),
                base,
                green: None,
                gate_runs: 0,
                goals: None,
                seed: 0,
            },
        );
        core.role = Role::Worker;
        core.stop.phase = Phase::Running;
        core
    }

    /// Where swarm left the integration branch.
    pub(in crate::schedule) fn tip(&self) -> &CommitId {
        self.merges.tip()
    }

    /// The tip the run ends at: the last green tip with a gate, else the integration tip.
    pub(in crate::schedule) fn final_tip(&self) -> CommitId {
        self.merges.final_tip()
    }

    /// Task `i`'s id.
    pub(in crate::schedule) fn id(&self, i: usize) -> &str {
        self.plan.tasks[i].id.as_str()
    }

    /// Attempts running in this process and out with workers.
    pub(in crate::schedule) fn running(&self) -> usize {
        self.counts.running + self.counts.remote.len()
    }

    /// Whether nothing new starts.
    pub(in crate::schedule) fn stopping(&self) -> bool {
        matches!(self.stop.phase, Phase::Stopping | Phase::Broken)
    }

    /// Whether swarm met a fault itself and records only what ends.
    pub(in crate::schedule) fn broken(&self) -> bool {
        self.stop.phase == Phase::Broken
    }

    /// The goals of the run, for the executor's planning threads.
    pub(in crate::schedule) fn goals(&self) -> Option<&goals::Goals> {
        self.goals.as_ref()
    }

    /// With a gate, the newest tip it passed on (the base until then).
    pub(in crate::schedule) fn gate_green(&self) -> Option<CommitId> {
        self.merges.gate_green()
    }

    /// Task `i`'s attempt starts in a checkout made from `start` (a writer's), continuing
    /// `session`, as the executor prepared it.
    pub(in crate::schedule) fn prepared(
        &mut self,
        i: usize,
        start: Option<CommitId>,
        session: Option<String>,
    ) {
        let slot = &mut self.slots[i];
        if start.is_some() {
            slot.start_commit = start;
        }
        slot.session = session;
    }

    /// When the core wants to be asked again, as no input comes: a held-back task's time, a
    /// paused member's reset, the next read of the queue.
    pub(in crate::schedule) fn next_wake(&self, now: Instant) -> Option<Instant> {
        // The queue is read only while the run goes on and no merge is out.
        let polls = !self.stopping() && !self.merges.in_flight();
        let poll = self
            .goals
            .as_ref()
            .filter(|g| polls && g.drains_queue())
            .map(|g| g.next_poll().unwrap_or(now));
        let forecast = self.forecasts.next_wake().filter(|_| polls);
        [
            self.dag.next_delay(),
            self.members.next_reset(now),
            poll,
            forecast,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// A resumed (or new) run begins: what git says of its integration branch is taken in,
    /// the dag counts what is done, and merges a crash cut short are finished. Nothing starts
    /// before `Input::Open`.
    pub(in crate::schedule) fn begin(&mut self, found: Found) -> Vec<Effect> {
        let mut fx = Vec::new();
        for (i, member) in found.members {
            self.slots[i].member = Some(member);
        }
        if let Some(tip) = found.tip {
            fx.push(Effect::Record(Rec::TipRecovered {
                before: self.tip().clone(),
                after: tip.clone(),
            }));
            self.merges.set_tip(tip);
        }
        if let Some(moved) = found.moved {
            self.halted(moved, &mut fx);
        }
        // Merged writers the gate has not passed yet are not done: before counting.
        if found.green_lost {
            self.merges.gate_from_base(&self.base);
        }
        let mut ungated = found.ungated;
        // A culprit the gate took out and parked, the branch not yet moved back when a kill
        // or a fault came: the take-out is finished now.
        if let Some(k) = ungated
            .iter()
            .position(|(t, _)| self.dag.state(*t) == State::Parked)
        {
            let later = ungated.split_off(k + 1);
            if let Some(culprit) = ungated.pop() {
                self.finish_take_out(&culprit, &ungated, &later, &mut fx);
            }
            ungated.clear();
        }
        for (task, _) in &ungated {
            match self.dag.state(*task) {
                State::Done => self.transition(Transition::Committed(*task), &mut fx),
                // Merged in git, but the board lost the record (a full disk, a kill): it is
                // recorded now, as any merge, and waits for the gate as the others do.
                State::Committed => self.merge_recovered(*task, &mut fx),
                _ => {}
            }
        }
        self.merges.gate_pending(ungated);
        // Counting first: a recovered merge releases its dependents, which must be counted.
        self.transition(Transition::Settle, &mut fx);
        for i in 0..self.slots.len() {
            let writer = self.plan.tasks[i].mode == Mode::Write;
            match self.dag.state(i) {
                State::Done if writer => {
                    let merged = self.slots[i].commit.is_some();
                    fx.push(Effect::CleanUp {
                        task: i,
                        merged,
                        tip: self.tip().clone(),
                    });
                }
                State::Committed if !self.merges.waits_for_gate(i) && !self.merges.queued(i) => {
                    if found.merged.contains(&i) {
                        self.merge_recovered(i, &mut fx);
                        self.transition(Transition::Done(i), &mut fx);
                    } else {
                        self.merges.queue_up(i);
                    }
                }
                _ => {}
            }
        }
        self.merge_next(&mut fx);
        fx
    }

    /// Writer `i`'s merge, which a crash or a fault kept off the board, is in the integration
    /// branch: it is recorded, said, and its checkout cleaned up as a merged one's.
    pub(super) fn merge_recovered(&mut self, i: usize, fx: &mut Vec<Effect>) {
        let id = self.id(i).to_owned();
        if let Some(commit) = self.slots[i].commit.clone() {
            fx.push(Effect::Record(Rec::MergeRecovered {
                id: id.clone(),
                commit,
            }));
        }
        fx.push(Effect::Tell(Told::Merged { id, before: true }));
        fx.push(Effect::CleanUp {
            task: i,
            merged: true,
            tip: self.tip().clone(),
        });
    }

    /// Takes `input` at `now`, then does what follows: what may start starts, what must stop
    /// stops.
    pub(in crate::schedule) fn on(&mut self, input: Input, now: Instant) -> Vec<Effect> {
        let mut fx = Vec::new();
        // What an effect left undone is put right, and nothing else: the fault that left it
        // comes next.
        let undone = matches!(input, Input::Undone(_));
        self.take(input, now, &mut fx);
        if !undone {
            self.step(now, &mut fx);
        }
        fx
    }

    fn take(&mut self, input: Input, now: Instant, fx: &mut Vec<Effect>) {
        // Stopped by a fault of the machine, the run waits only for what runs to end (and
        // learns what a run before it left out with workers).
        if self.broken()
            && !matches!(
                input,
                Input::Tick
                    | Input::Adopted(_)
                    | Input::Ended { .. }
                    | Input::Gated(_)
                    | Input::Merge { .. }
                    | Input::Signal
                    | Input::Broken(_)
                    | Input::Undone(_)
                    | Input::HookEnded { .. }
                    | Input::Pushed { .. }
                    | Input::NotStarted(_)
            )
        {
            return;
        }
        match input {
            Input::Open if self.stop.phase == Phase::Opening => self.stop.phase = Phase::Running,
            Input::Open => self.refused.push("the run was opened twice".to_owned()),
            Input::Ended { report, limit_wait } => self.ended(report, limit_wait, now, fx),
            Input::Gated(_) if !self.merges.gate_runs_now() => {
                self.refused
                    .push("a gate run ended while none was running".to_owned());
            }
            Input::Gated(report) => {
                self.counts.running = self.counts.running.saturating_sub(1);
                if self.broken() {
                    return;
                }
                if self.merges.in_flight() {
                    self.verdict_later(report);
                } else {
                    self.take_verdict(&report, fx);
                }
            }
            Input::Merge { task, outcome } => self.merged(task, outcome, fx),
            // Also when the run was already winding down (a spent budget, a long usage limit):
            // a Ctrl-C then stops the running attempts too.
            Input::Signal if !self.stop.signalled => {
                self.stop.signalled = true;
                let running = self.running();
                let said = match self.role {
                    Role::Run => Said::Signal { running },
                    Role::Worker => Said::GiveBack { running },
                };
                self.halt(said, fx);
            }
            Input::Tick | Input::Signal => {}
            Input::Moved(moved) => {
                if self.merges.halted().is_none() {
                    self.halted(*moved, fx);
                }
            }
            Input::Broken(fault) => self.broke(fault, fx),
            Input::Undone(undone) => self.undo(undone, fx),
            Input::Endpoint(gone) => {
                if let Some(fault) = self.pauses.endpoint_checked(gone, now, fx) {
                    self.stop.fault.get_or_insert(fault);
                }
            }
            Input::HookEnded { task, hook } => {
                self.counts.hooks = self.counts.hooks.saturating_sub(1);
                if self.broken() {
                    return;
                }
                let escalated = RunEvent::Escalated { hook };
                fx.push(Effect::Record(match task {
                    Some(id) => Rec::Task(id, escalated),
                    None => Rec::Run(escalated),
                }));
            }
            Input::Needs { goals, result } => {
                if let Some(g) = &mut self.goals {
                    g.needs_inferred(&goals, result, fx);
                }
            }
            Input::Planned { goal, answer } => self.planned(goal, answer, fx),
            Input::Queued(taken) => {
                if let Some(g) = &mut self.goals {
                    g.queued(taken, fx);
                }
            }
            Input::Adopted(tasks) => {
                for i in tasks {
                    if matches!(self.dag.state(i), State::Waiting | State::Ready) {
                        self.transition(Transition::Started(i), fx);
                        self.slots[i].started = Some(now);
                        self.counts.remote.insert(i);
                    }
                }
            }
            Input::Claimed {
                task,
                attempt,
                tip,
                deps,
            } => self.claimed(task, attempt, tip, deps, now, fx),
            Input::Pushed { report, taken } => self.pushed(report, taken, fx),
            Input::Forecast(looked) => self.foreseen(looked, fx),
            Input::NotStarted(i) => {
                if self.dag.state(i) != State::Running {
                    self.refused.push(format!(
                        "{} did not start, and was not starting",
                        self.id(i)
                    ));
                    return;
                }
                self.release(i);
                self.slots[i].started = None;
                self.transition(Transition::Interrupted(i), fx);
            }
        }
    }

    /// What follows whatever came: delays that are due, the stops that are due, goals moving
    /// on, the gate, resolvers and ready tasks starting.
    fn step(&mut self, now: Instant, fx: &mut Vec<Effect>) {
        if self.role == Role::Worker || self.stop.phase == Phase::Opening {
            return;
        }
        self.transition(Transition::Tick(now), fx);
        self.forecast(now, fx);
        self.release_held(fx);
        if self.stopping() {
            return;
        }
        if let Some(said) = self
            .pauses
            .take_limit_stop()
            .or_else(|| self.members.take_limit_stop())
        {
            self.halt(said, fx);
        } else if let Some(fault) = self.stop.fault.clone() {
            let running = self.running();
            self.halt(
                Said::Fault {
                    why: fault.why,
                    running,
                },
                fx,
            );
        } else if let Some(why) = self.merges.halted().map(str::to_owned) {
            let running = self.running();
            self.wind_down(Said::Halted { why, running }, fx);
        } else if let Some(said) = self.spent() {
            self.wind_down(said, fx);
        }
        // Nothing starts while a merge is out: the tip is about to move.
        if self.stopping() || self.merges.in_flight() {
            return;
        }
        self.advance_goals(now, fx);
        self.start_gate(fx);
        if self.pauses.holds(now) {
            return;
        }
        self.start_resolvers(now, fx);
        self.start_ready(now, fx);
    }

    /// The first time the budget is spent: recorded, and why the run winds down.
    fn spent(&mut self) -> Option<Said> {
        let budget = self.budget.limit?;
        if self.stop.over_budget || self.budget.used < budget {
            return None;
        }
        self.stop.over_budget = true;
        Some(Said::Budget {
            used: self.budget.used,
            budget,
            running: self.running(),
        })
    }

    /// Nothing new starts; what runs finishes.
    fn wind_down(&mut self, said: Said, fx: &mut Vec<Effect>) {
        if let Said::Budget {
            used,
            budget,
            running,
        } = &said
        {
            fx.push(Effect::Record(Rec::Run(RunEvent::BudgetSpent {
                budget: *budget,
                used: *used,
                running: *running,
            })));
        }
        if !self.stopping() {
            self.stop.phase = Phase::Stopping;
        }
        if self.goals.is_some() {
            fx.push(Effect::StopPlanning);
        }
        fx.push(Effect::Tell(Told::Stopping(said)));
    }

    /// Nothing new starts and what runs is stopped.
    fn halt(&mut self, said: Said, fx: &mut Vec<Effect>) {
        fx.push(Effect::StopAttempts);
        self.wind_down(said, fx);
    }

    /// An effect was not carried out: what it would have done is put right in memory.
    fn undo(&mut self, undone: Undone, fx: &mut Vec<Effect>) {
        match undone {
            Undone::Start(i) => {
                if !self.counts.remote.remove(&i) {
                    self.release(i);
                }
                self.slots[i].started = None;
                // The attempt never was: the board has not heard of it.
                if self.dag.state(i) == State::Resolving {
                    self.transition(Transition::Committed(i), fx);
                } else {
                    self.slots[i].attempts = self.slots[i].attempts.saturating_sub(1);
                    self.transition(Transition::Interrupted(i), fx);
                }
            }
            Undone::Gate => {
                self.counts.running = self.counts.running.saturating_sub(1);
                self.merges.gate_not_run();
            }
            Undone::End(i) => {
                self.unrecorded.insert(i);
            }
            Undone::Hook => self.counts.hooks = self.counts.hooks.saturating_sub(1),
            Undone::Merge(i) => self.merges.not_merged(i),
            Undone::Forecast => self.forecasts.not_looked(),
        }
    }

    /// Swarm met a fault of the machine carrying out an effect: what runs is stopped, and
    /// from now on only what ends is recorded.
    fn broke(&mut self, fault: Fault, fx: &mut Vec<Effect>) {
        if self.broken() {
            return;
        }
        let running = self.running();
        self.halt(
            Said::Fault {
                why: fault.why.clone(),
                running,
            },
            fx,
        );
        // The first fault met is what stopped the run.
        self.stop.fault.get_or_insert(fault);
        self.stop.phase = Phase::Broken;
    }

    /// Whether the loop has run out of work, or stopped with nothing left running: the
    /// executor ends it then (`finish`). A run draining the queue looks in it once more
    /// first. A worker's loop ends when it stops; the executor says when its run is over.
    pub(in crate::schedule) fn done(&mut self) -> bool {
        if self.counts.running > 0 || self.counts.hooks > 0 || self.merges.in_flight() {
            return false;
        }
        // Stopping, what is out with workers waits on the remote for a resume.
        if self.stopping() {
            return true;
        }
        if self.role == Role::Worker {
            return false;
        }
        let idle = !self.dag.has_ready()
            && self.dag.next_delay().is_none()
            && !self.merges.busy()
            && !self.forecasts.holds()
            && !self.goals.as_ref().is_some_and(goals::Goals::busy)
            && self.counts.remote.is_empty();
        if !idle {
            return false;
        }
        !self
            .goals
            .as_mut()
            .is_some_and(goals::Goals::poll_before_ending)
    }

    /// The loop ran out of work, or stopped: unfinished tasks are marked for a resume, or
    /// what can never run is named. How the run ended.
    pub(in crate::schedule) fn finish(&mut self) -> (Ending, Vec<Effect>) {
        let mut fx = Vec::new();
        if self.stopping() {
            let out: Vec<usize> = std::mem::take(&mut self.counts.remote)
                .into_iter()
                .collect();
            self.interrupt_unfinished(out, &mut fx);
            let ending = if let (true, Some(fault)) = (self.broken(), &self.stop.fault) {
                // What stopped the run, whatever came after.
                Ending::Faulted(fault.clone())
            } else if self.stop.signalled {
                Ending::Interrupted
            } else if let Some(fault) = &self.stop.fault {
                Ending::Faulted(fault.clone())
            } else if self.merges.halted().is_some() {
                Ending::Halted
            } else if self.stop.over_budget {
                Ending::OverBudget
            } else {
                Ending::Interrupted
            };
            return (ending, fx);
        }
        // Nothing runs and nothing can become ready: whatever has not ended is stuck, and
        // waiting for it would be forever.
        let mut stuck = match &mut self.goals {
            Some(g) => g.report_stuck(&mut fx),
            None => Vec::new(),
        };
        stuck.extend(self.skip_stuck(&mut fx));
        if let Some(g) = &mut self.goals {
            g.settle(&self.dag, &mut fx);
        }
        if !stuck.is_empty() {
            fx.push(Effect::Record(Rec::Run(RunEvent::Deadlock {
                stuck: stuck.clone(),
            })));
            for line in stuck {
                fx.push(Effect::Tell(Told::Deadlock(line)));
            }
        }
        (Ending::Finished, fx)
    }

    /// The run stops short: the tasks out with workers (`out`), those waiting that have had
    /// an attempt, and those whose end the board could not take are marked for a resume.
    fn interrupt_unfinished(&mut self, out: Vec<usize>, fx: &mut Vec<Effect>) {
        let mut marks = BTreeSet::new();
        for i in out {
            self.transition(Transition::Interrupted(i), fx);
            marks.insert(i);
        }
        for i in 0..self.slots.len() {
            if matches!(
                self.dag.state(i),
                State::Waiting | State::Ready | State::Delayed(_) | State::Running
            ) && self.slots[i].attempts > 0
            {
                self.transition(Transition::Interrupted(i), fx);
                marks.insert(i);
            }
        }
        marks.extend(std::mem::take(&mut self.unrecorded));
        let ids = marks.iter().map(|&i| self.id(i).to_owned()).collect();
        fx.push(Effect::Record(Rec::MarkInterrupted(ids)));
    }

    /// Tasks still waiting when nothing runs and nothing is ready can never start; they are
    /// skipped, each with what it waits for. Returns one line per task.
    fn skip_stuck(&mut self, fx: &mut Vec<Effect>) -> Vec<String> {
        let effects = self.dag_on(Transition::Stuck);
        let mut skips = Vec::new();
        let mut lines = Vec::new();
        for e in effects {
            if let DagEffect::Stuck { task, waits_for } = e {
                let on: Vec<&str> = waits_for.iter().map(|&d| self.id(d)).collect();
                let waits = format!("waits for {}", on.join(", "));
                lines.push(format!("task {}: {waits}", self.id(task)));
                skips.push((self.id(task).to_owned(), format!("deadlock: {waits}")));
            }
        }
        if !skips.is_empty() {
            fx.push(Effect::Record(Rec::Skipped(skips)));
        }
        lines
    }

    /// Hands a transition to the dag; one it refuses is counted.
    fn dag_on(&mut self, t: Transition) -> Vec<DagEffect> {
        match self.dag.on(&self.plan, t) {
            Ok(effects) => effects,
            Err(refused) => {
                self.refused.push(refused);
                Vec::new()
            }
        }
    }

    /// Hands a transition to the dag and carries out what it says: skipped tasks are recorded
    /// and told.
    fn transition(&mut self, t: Transition, fx: &mut Vec<Effect>) {
        let skips: Vec<(usize, String)> = self
            .dag_on(t)
            .into_iter()
            .filter_map(|e| match e {
                DagEffect::Skipped { task, why } => Some((task, why)),
                DagEffect::Stuck { .. } => None,
            })
            .collect();
        if skips.is_empty() {
            return;
        }
        fx.push(Effect::Record(Rec::Skipped(
            skips
                .iter()
                .map(|(i, why)| (self.id(*i).to_owned(), why.clone()))
                .collect(),
        )));
        for (i, why) in skips {
            fx.push(Effect::Tell(Told::Skipped {
                id: self.id(i).to_owned(),
                why,
            }));
        }
    }

    /// Tasks joined the plan at `added` (a goal planned, a spawn, tasks learnt from the
    /// remote): each gets its slot, its place in the limits on spawning and in the dag. Every
    /// way tasks join a running plan goes through here.
    pub(in crate::schedule) fn grow(
        &mut self,
        added: std::ops::Range<usize>,
        fx: &mut Vec<Effect>,
    ) {
        for _ in added.clone() {
            self.slots.push(Slot::waiting());
        }
        self.spawns.learn(&self.plan, added.clone());
        if let Some(g) = &mut self.goals {
            g.learn(&self.plan, added.clone());
        }
        self.transition(Transition::Added(added), fx);
    }

    /// The slot of task `i`'s attempt in this process's pool is free again.
    fn release(&mut self, i: usize) {
        self.members.release(i);
        self.counts.running = self.counts.running.saturating_sub(1);
        // A pick holds no checkout, but a resolver of its merge does.
        let picking = self.plan.tasks[i].picks() && self.dag.state(i) != State::Resolving;
        if self.plan.tasks[i].mode == Mode::Write && !picking {
            self.counts.writers = self.counts.writers.saturating_sub(1);
        }
    }

    /// The gate's next run takes a slot before any task does.
    fn start_gate(&mut self, fx: &mut Vec<Effect>) {
        if self.counts.running >= self.settings.jobs {
            return;
        }
        if let Some(start) = self.next_gate() {
            self.counts.running += 1;
            fx.push(start);
        }
    }

    fn start_resolvers(&mut self, now: Instant, fx: &mut Vec<Effect>) {
        let s = self.settings;
        while self.counts.running < s.jobs && self.counts.writers < s.max_writers {
            let Some(i) = self.merges.next_resolver() else {
                break;
            };
            let tip = self.tip().clone();
            let slot = &mut self.slots[i];
            slot.resolver_tried = true;
            slot.resolving_from = Some(tip.clone());
            slot.started = Some(now);
            self.counts.running += 1;
            self.counts.writers += 1;
            fx.push(Effect::StartResolver { task: i, tip });
        }
    }

    /// Ready tasks start in this process's free slots; spread over machines, the rest are
    /// published for the workers.
    fn start_ready(&mut self, now: Instant, fx: &mut Vec<Effect>) {
        let s = self.settings;
        let mut held = Vec::new();
        loop {
            let local = self.counts.running < s.local_jobs;
            if !local && s.remote.is_none() {
                break;
            }
            let Some(i) = self.dag.pop_ready() else {
                break;
            };
            let mode = self.plan.tasks[i].mode;
            // A pick runs no agent and holds no checkout: it is no writer to --max-writers,
            // takes no pool member, never goes to a worker, and runs here even when the run is
            // spread over machines with no slot here.
            let picks = self.plan.tasks[i].picks();
            let here = local || (picks && s.local_jobs == 0 && self.counts.running < s.jobs);
            let writes = mode == Mode::Write && !picks;
            if here && (!writes || self.counts.writers < s.max_writers) {
                if !picks && !self.admit(i, now, fx) {
                    held.push(i);
                    continue;
                }
                self.counts.running += 1;
                if writes {
                    self.counts.writers += 1;
                }
                let attempt = self.started(i, now, fx);
                fx.push(Effect::Start {
                    task: i,
                    attempt,
                    tip: self.tip().clone(),
                    running: self.counts.running,
                });
            } else if s.remote.is_some() && !picks {
                let attempt = self.started(i, now, fx);
                self.counts.remote.insert(i);
                fx.push(Effect::Publish {
                    task: i,
                    attempt,
                    tip: self.tip().clone(),
                });
            } else {
                held.push(i);
            }
        }
        self.dag.requeue(held);
    }

    /// Task `i`'s next attempt starts: its number.
    fn started(&mut self, i: usize, now: Instant, fx: &mut Vec<Effect>) -> u32 {
        self.transition(Transition::Started(i), fx);
        let slot = &mut self.slots[i];
        slot.attempts += 1;
        slot.started = Some(now);
        slot.attempts
    }

    /// Whether task `i`'s next attempt may start now, as its agent's pool and caps say.
    fn admit(&mut self, i: usize, now: Instant, fx: &mut Vec<Effect>) -> bool {
        let task: &Task = &self.plan.tasks[i];
        members::admit(
            &mut self.members,
            self.settings,
            i,
            task,
            &mut self.slots[i],
            now,
            fx,
        )
    }

    /// On a worker: a claimed attempt starts, its deps' results as the coordinator published
    /// them.
    fn claimed(
        &mut self,
        i: usize,
        attempt: u32,
        tip: CommitId,
        deps: Vec<(usize, DepFacts)>,
        now: Instant,
        fx: &mut Vec<Effect>,
    ) {
        if self.role != Role::Worker || self.stopping() || attempt == 0 {
            self.refused.push(format!(
                "a claim of {} came to a core not taking one",
                self.id(i)
            ));
            return;
        }
        for (d, facts) in deps {
            let slot = &mut self.slots[d];
            slot.result = facts.result;
            slot.missing = facts.missing;
            slot.start_commit = facts.start;
            slot.commit = facts.commit;
        }
        let slot = &mut self.slots[i];
        slot.attempts = attempt - 1;
        slot.session = None;
        self.counts.running += 1;
        if self.plan.tasks[i].mode == Mode::Write {
            self.counts.writers += 1;
        }
        let attempt = self.started(i, now, fx);
        fx.push(Effect::Start {
            task: i,
            attempt,
            tip,
            running: self.counts.running,
        });
    }

    /// On a worker: an attempt ended and its result went to the remote, or not. This clone's
    /// board says how it ended here (the coordinator's says what became of it): a result the
    /// remote did not take, as cut short.
    fn pushed(&mut self, report: Report, taken: bool, fx: &mut Vec<Effect>) {
        let i = report.task;
        if !self.runs(i, &report) {
            return;
        }
        self.release(i);
        self.slots[i].started = None;
        // It may be claimed again here, after another worker's lease ran out.
        self.transition(Transition::Interrupted(i), fx);
        let task = &self.plan.tasks[i];
        let (id, writes) = (task.id.to_string(), task.mode == Mode::Write);
        let totals = report.used;
        let rec = match &report.verdict {
            Verdict::Succeeded { result, commit } if taken => Rec::Succeeded {
                id,
                result: result.clone(),
                commit: commit.clone(),
                writes,
                joined: Joined::default(),
                totals,
                report,
                kept: false,
                start: None,
            },
            Verdict::Failed(why) if taken => Rec::Failed {
                id,
                failures: 1,
                status: crate::store::TaskStatus::Failed,
                why: why.clone(),
                retry: false,
                totals,
                report,
            },
            _ => Rec::Interrupted { id, report, totals },
        };
        fx.push(Effect::Record(rec));
    }
}

/// Retry `n` (1-based) waits base × 2^(n-1), at most a minute, with ±20% jitter so retries of
/// many tasks do not land together.
pub(in crate::schedule) fn backoff(base: Duration, n: u32, rng: &mut fastrand::Rng) -> Duration {
    let exp = base
        .saturating_mul(1 << (n - 1).min(10))
        .min(Duration::from_secs(60));
    exp.mul_f64(0.8 + 0.4 * rng.f64())
}

/// The told end of an attempt.
fn told_end(id: &str, how: Ended, report: &Report, detail: Option<String>) -> Effect {
    Effect::Tell(Told::Ended {
        id: id.to_owned(),
        how,
        elapsed: report.elapsed,
        detail,
    })
}
