//! The run loop: readiness, priority, slots, retries, the merge queue and signals. One thread
//! (the caller's) owns the board, the terminal and the merges; attempts run on a dedicated pool
//! and report back over a channel. Prints only through `Ui`; reaches git only through `git`.

use std::path::PathBuf;
use std::rc::Rc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::agent::{Agent, Watchdog};
use crate::git::{CommitId, Repo};
use crate::plan::{Mode, Plan};
use crate::store::{
    AttemptEnd, Board, Event, RunEvent, TaskRecord, TaskStatus, TaskUpdate, now_ms,
};
use crate::ui::Ui;
use crate::ui::Verb;

mod checkouts;
mod dag;
mod goal;
mod job;
mod merge;
mod prompt;
mod signal;
mod start;

use checkouts::Checkouts;
use dag::{Dag, Effect, State, Transition};
use job::{Report, Verdict, Workers};
use signal::{SignalWatch, watch_signals};

pub use goal::GoalRun;

/// How long a usage limit pauses the run when the agent does not say when it resets.
const DEFAULT_LIMIT_WAIT: Duration = Duration::from_secs(60);

/// The file in a run's directory that names the directory of its checkouts.
pub const CHECKOUTS_FILE: &str = "checkouts";

/// A dependency's result is cut to this many bytes inside a prompt.
pub const DEP_RESULT_CAP: usize = 16 * 1024;

/// How the run behaves; fixed for the run's lifetime.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Files of the repository swarm reads commands from (`.swarm.toml`, the run's task file
    /// or config file when they are tracked there), relative to its top: a writer's change to
    /// one is parked for review, never merged.
    pub guarded: Vec<String>,
    pub jobs: usize,
    pub max_writers: usize,
    pub retries: u32,
    pub task_timeout: Duration,
    /// An attempt that writes nothing for this long is stopped as hung.
    pub stall_timeout: Option<Duration>,
    /// Between SIGTERM and SIGKILL when an attempt is stopped.
    pub kill_grace: Duration,
    /// The first retry waits this long; each further one twice as long (capped at a minute).
    pub backoff: Duration,
    pub agent: Option<Agent>,
    pub check: Option<String>,
    pub on_escalate: Option<String>,
    /// Before parking a conflicting writer, let its agent try once to resolve the conflict.
    pub resolve_conflicts: bool,
    /// The model client of the built-in agent, when it is configured.
    pub llm: Option<crate::llm::Client>,
    pub builtin: BuiltinLimits,
    /// Agents named by tasks (`"agent": "claude"`), resolved.
    pub named_agents: std::collections::BTreeMap<String, Agent>,
    /// The longest a provider's usage limit may pause the run; a later reset stops the run
    /// (resumable) instead.
    pub max_limit_wait: Duration,
    /// Tokens the run's tasks may use in all before nothing new starts.
    pub budget_tokens: Option<u64>,
}

impl Settings {
    /// The agent for a task: the one its `agent` field names, else the run's. Names were
    /// checked when the settings were made; an unknown one here gives `None`.
    pub fn agent_for(&self, name: Option<&str>) -> Option<Agent> {
        match name {
            None | Some("auto") => self.agent.clone(),
            Some(n) => self.named_agents.get(n).cloned(),
        }
    }
}

/// Caps of the built-in agent, per attempt.
#[derive(Debug, Clone)]
pub struct BuiltinLimits {
    pub max_turns: u32,
    pub max_tokens: u64,
    /// Programs the agent may run (none by default).
    pub allowed_programs: Vec<String>,
}

/// Where the run's files and branches live.
pub struct Layout {
    pub run: String,
    pub base: CommitId,
    /// Full ref name of the integration branch, `refs/heads/swarm/<run>`.
    pub integration_ref: String,
    /// This run's worktrees and snapshots.
    pub worktrees: PathBuf,
    /// This run's files in the board directory.
    pub run_dir: PathBuf,
    /// The directories behind `$SWARM_DEPS_DIR`, one per `run` task with deps.
    pub deps: PathBuf,
}

/// Whether the branch `name` is one a run of `run` with these tasks makes: its integration
/// branch, a writer's or resolver's branch, what a refused attempt left, or what was found on
/// a moved integration branch (see `Layout`).
pub fn made_by_run(name: &str, run: &str, tasks: &[&str]) -> bool {
    let Some(rest) = name
        .strip_prefix("swarm/")
        .and_then(|n| n.strip_prefix(run))
    else {
        return false;
    };
    if rest.is_empty() || rest.starts_with("@moved-") {
        return true;
    }
    let Some(rest) = rest.strip_prefix('-') else {
        return false;
    };
    // `<task>`, `<task>-resolve`, each perhaps with `@<attempt>`; task ids hold no `@`.
    let (rest, attempt) = rest.split_once('@').unwrap_or((rest, ""));
    if !attempt.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    tasks.contains(&rest)
        || rest
            .strip_suffix("-resolve")
            .is_some_and(|t| tasks.contains(&t))
}

/// Which of a writer's checkouts: its own, or the one its conflict resolver works in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Checkout {
    Task,
    Resolver,
}

impl Layout {
    /// A writer's branch: `swarm/<run>-<task>` (`…-resolve` for its resolver).
    fn branch(&self, task: &str, checkout: Checkout) -> String {
        match checkout {
            Checkout::Task => format!("swarm/{}-{task}", self.run),
            Checkout::Resolver => format!("swarm/{}-{task}-resolve", self.run),
        }
    }

    /// Where an attempt whose result was refused keeps what its agent left:
    /// `swarm/<run>-<task>@<attempt>` (no task id holds an `@`).
    fn kept_branch(&self, task: &str, checkout: Checkout, attempt: u32) -> String {
        format!("{}@{attempt}", self.branch(task, checkout))
    }

    /// A writer's checkout.
    fn worktree(&self, task: &str, checkout: Checkout) -> PathBuf {
        match checkout {
            Checkout::Task => self.worktrees.join(task),
            Checkout::Resolver => self.worktrees.join(format!("{task}.resolve")),
        }
    }
}

/// How the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
}

enum Message {
    Done(Report),
    /// Something the built-in agent's model client met on the way (a throttled request, a
    /// retry), for the event log.
    Notice {
        task: usize,
        notice: crate::llm::Notice,
    },
    Signal,
    /// The dependency pass over these goals (indices) ended.
    Needs {
        goals: Vec<usize>,
        result: anyhow::Result<crate::planner::needs::Inferred>,
    },
    /// Planning a goal ended.
    Planned {
        goal: usize,
        result: anyhow::Result<crate::planner::Planned>,
    },
    /// Something the planner's model client met on the way.
    GoalNotice {
        notice: crate::llm::Notice,
    },
}

/// Per-task memory of the loop.
struct Slot {
    attempts: u32,
    failures: u32,
    result: Option<String>,
    start_commit: Option<CommitId>,
    commit: Option<CommitId>,
    snapshot: Option<CommitId>,
    /// LLM tokens used by all attempts so far.
    tokens: u64,
    /// Their cost in dollars, where the agent says.
    cost: Option<f64>,
    /// Conflicting paths of a merge waiting for its resolver; empty otherwise.
    conflict: Vec<String>,
    resolver_tried: bool,
}

impl Slot {
    /// A task nothing has happened to yet.
    fn waiting() -> Self {
        Self {
            attempts: 0,
            failures: 0,
            result: None,
            start_commit: None,
            commit: None,
            snapshot: None,
            tokens: 0,
            cost: None,
            conflict: Vec::new(),
            resolver_tried: false,
        }
    }
}

/// The loop's state; lives on the owner thread.
pub struct Scheduler<'a> {
    /// Shared so a task can be read while the scheduler changes; grows when a goal is planned.
    plan: Rc<Plan>,
    repo: &'a Repo,
    board: &'a mut Board,
    ui: &'a mut Ui,
    settings: &'a Settings,
    layout: &'a Layout,
    slots: Vec<Slot>,
    /// The tasks' states, readiness and priority.
    dag: Dag,
    /// No attempt starts before this: an agent's provider said its usage limit resets then.
    paused_until: Option<Instant>,
    /// A usage limit resets later than `max_limit_wait`: the run stops (resumable).
    limit_stop: Option<String>,
    /// Conflicting writers whose resolver attempt has yet to start.
    to_resolve: Vec<usize>,
    /// The snapshots and writers' checkouts on disk.
    checkouts: Checkouts,
    running: usize,
    writers_running: usize,
    tip: CommitId,
    stopping: bool,
    /// Tokens the tasks' attempts have used, this run and before a resume.
    tokens_used: u64,
    /// The run is stopping because its token budget is spent.
    over_budget: bool,
    /// A signal asked the run to stop.
    signalled: bool,
    /// Merging stopped for this reason, for a human to settle; the run winds down.
    halted: Option<String>,
    /// The goals of a multi-goal run.
    goals: Option<goal::Goals>,
    /// The loop's channel, for the threads that plan goals.
    sender: Option<mpsc::Sender<Message>>,
}

impl<'a> Scheduler<'a> {
    #[expect(
        clippy::too_many_arguments,
        reason = "the pieces of one run, owned by the command that starts it"
    )]
    pub fn new(
        plan: Plan,
        repo: &'a Repo,
        board: &'a mut Board,
        ui: &'a mut Ui,
        settings: &'a Settings,
        layout: &'a Layout,
        records: &[TaskRecord],
        goals: Option<GoalRun>,
    ) -> anyhow::Result<Self> {
        // The tip swarm recorded; a board from before swarm kept it has only the ref to go by.
        let tip = match board.tip(&layout.run)? {
            Some(t) => CommitId::new(&t),
            None => repo.ref_target(&layout.integration_ref)?.with_context(|| {
                format!("the integration branch {} is gone", layout.integration_ref)
            })?,
        };
        let states = records
            .iter()
            .map(|r| match r.status {
                TaskStatus::Done => State::Done,
                TaskStatus::Failed => State::Failed,
                TaskStatus::Skipped => State::Skipped,
                TaskStatus::Parked => State::Parked,
                TaskStatus::Committed => State::Committed,
                TaskStatus::Pending | TaskStatus::Running | TaskStatus::Interrupted => {
                    State::Waiting
                }
            })
            .collect();
        let slots = records
            .iter()
            .map(|r| Slot {
                attempts: r.attempts,
                failures: r.failures,
                result: r.result.clone(),
                start_commit: r.start_commit.as_deref().map(CommitId::new),
                commit: r.commit_id.as_deref().map(CommitId::new),
                snapshot: None,
                tokens: r.tokens,
                cost: r.cost,
                conflict: Vec::new(),
                resolver_tried: false,
            })
            .collect();
        Ok(Self {
            repo,
            board,
            ui,
            settings,
            layout,
            slots,
            dag: Dag::new(&plan, states),
            goals: goals.map(|g| goal::Goals::new(g, &plan)),
            tokens_used: records.iter().map(|r| r.tokens).sum(),
            over_budget: false,
            signalled: false,
            halted: None,
            sender: None,
            plan: Rc::new(plan),
            to_resolve: Vec::new(),
            checkouts: Checkouts::open(&layout.worktrees, settings.max_writers)?,
            paused_until: None,
            limit_stop: None,
            running: 0,
            writers_running: 0,
            tip,
            stopping: false,
        })
    }

    /// Runs every task that can run; returns when all are final or a signal stopped the run,
    /// with the plan as it ended (goals planned during the run add tasks) and the integration
    /// tip swarm made.
    pub fn run(mut self) -> anyhow::Result<(Ending, Plan, CommitId)> {
        let (tx, rx) = mpsc::channel();
        let watchdog = Watchdog::start(self.settings.kill_grace);
        self.sender = Some(tx.clone());
        let signals = watch_signals(tx.clone(), watchdog.clone())?;
        let workers = Workers::start(self.settings.jobs, tx, watchdog.clone())?;
        let outcome = self.drive(&workers, &rx, &signals);
        signals.close();
        watchdog.shutdown();
        let mut cleanup = self.checkouts.close();
        if let Err(e) = std::fs::remove_dir_all(&self.layout.deps)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            cleanup = cleanup.and(Err(e.into()));
        }
        let ending = outcome?;
        cleanup?;
        let plan = Rc::try_unwrap(self.plan).unwrap_or_else(|shared| (*shared).clone());
        Ok((ending, plan, self.tip))
    }

    fn drive(
        &mut self,
        workers: &Workers,
        rx: &Receiver<Message>,
        signals: &SignalWatch,
    ) -> anyhow::Result<Ending> {
        // This process holds the run lock and has not started anything yet, so a lock on one
        // of the run's refs was left by a `kill -9` of an earlier process and would block it.
        self.repo
            .clear_stale_ref_lock(&self.layout.integration_ref)?;
        for task in self.plan.tasks.iter().filter(|t| t.mode == Mode::Write) {
            for checkout in [Checkout::Task, Checkout::Resolver] {
                let branch = self.layout.branch(task.id.as_str(), checkout);
                self.repo
                    .clear_stale_ref_lock(&format!("refs/heads/{branch}"))?;
            }
        }
        std::fs::create_dir_all(self.layout.deps.join(start::NO_DEPS_DIR))?;
        // Where this run's checkouts are, for `swarm gc`.
        std::fs::write(
            self.layout.run_dir.join(CHECKOUTS_FILE),
            self.layout.worktrees.as_os_str().as_encoded_bytes(),
        )?;
        self.settle_integration_ref()?;
        // Counting first: a recovered merge releases its dependents, which must be counted.
        self.transition(Transition::Settle)?;
        self.recover_committed()?;
        let total = self.plan.len();
        let finished = self.dag.states().iter().filter(|s| s.is_final()).count();
        self.ui.run_started(&self.layout.run, total, finished);
        loop {
            let now = Instant::now();
            self.dag.on(&self.plan, Transition::Tick(now));
            if let Some(why) = self.limit_stop.take()
                && !self.stopping
            {
                self.stopping = true;
                if let Some(g) = &self.goals {
                    g.stop();
                }
                workers.stop_all();
                self.ui.note(Verb::Stopping, &why);
            }
            if let Some(why) = &self.halted
                && !self.stopping
            {
                self.stopping = true;
                if let Some(g) = &self.goals {
                    g.stop();
                }
                self.ui.note(
                    Verb::Stopping,
                    &format!(
                        "{} running task(s) finish, nothing new starts: {why}",
                        self.running
                    ),
                );
            }
            self.check_budget()?;
            self.advance_goals()?;
            let paused = self.paused_until.is_some_and(|t| t > now);
            if !self.stopping && !paused {
                self.start_resolvers(workers)?;
                self.start_ready(workers)?;
            }
            let delayed = self.dag.next_delay();
            let idle = !self.dag.has_ready()
                && delayed.is_none()
                && self.to_resolve.is_empty()
                && !self.goals.as_ref().is_some_and(goal::Goals::busy);
            if self.running == 0 && (self.stopping || idle) {
                if self.poll_queue_before_ending() {
                    continue;
                }
                break;
            }
            let mut wait = delayed.map_or(Duration::from_secs(3600), |at| {
                at.saturating_duration_since(Instant::now())
            });
            if self.goals.as_ref().is_some_and(goal::Goals::drains_queue) {
                wait = wait.min(goal::QUEUE_POLL);
            }
            match rx.recv_timeout(wait) {
                Ok(Message::Done(report)) => self.finish(report)?,
                Ok(Message::Notice { task, notice }) => {
                    let id = self.plan.tasks[task].id.as_str();
                    self.board
                        .event(&self.layout.run, &Event::task(id, notice_event(&notice)))?;
                }
                Ok(Message::Needs { goals, result }) => self.needs_inferred(&goals, result)?,
                Ok(Message::Planned { goal, result }) => self.goal_planned(goal, result)?,
                Ok(Message::GoalNotice { notice }) => {
                    self.board
                        .event(&self.layout.run, &Event::run(notice_event(&notice)))?;
                }
                Ok(Message::Signal) => {
                    // Also when the run was already winding down (a spent budget, a long usage
                    // limit): a Ctrl-C then stops the running attempts too.
                    if !self.signalled {
                        self.signalled = true;
                        self.stopping = true;
                        if let Some(g) = &self.goals {
                            g.stop();
                        }
                        signals.armed();
                        workers.stop_all();
                        self.ui.note(
                            Verb::Stopping,
                            &format!(
                                "{} running task(s); press Ctrl-C again to kill now",
                                self.running
                            ),
                        );
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => unreachable!("the loop holds a sender"),
            }
        }
        if self.stopping {
            let mut marks = Vec::new();
            for i in 0..self.slots.len() {
                if matches!(
                    self.dag.state(i),
                    State::Waiting | State::Ready | State::Delayed(_)
                ) && self.slots[i].attempts > 0
                {
                    self.dag.on(&self.plan, Transition::Interrupted(i));
                    marks.push((
                        self.plan.tasks[i].id.as_str(),
                        TaskStatus::Interrupted,
                        None,
                    ));
                }
            }
            self.board
                .mark_tasks(&self.layout.run, &marks, |_| RunEvent::TaskInterrupted {
                    attempt: None,
                })?;
            return Ok(if self.signalled {
                Ending::Interrupted
            } else if self.halted.is_some() {
                Ending::Halted
            } else if self.over_budget {
                Ending::OverBudget
            } else {
                Ending::Interrupted
            });
        }
        // Nothing runs and nothing can become ready: whatever has not ended is stuck, and
        // waiting for it would be forever.
        let mut stuck = self.report_stuck_goals()?;
        stuck.extend(self.skip_stuck()?);
        if self.goals.is_some() {
            self.settle_goals()?;
        }
        if !stuck.is_empty() {
            self.board.event(
                &self.layout.run,
                &Event::run(RunEvent::Deadlock {
                    stuck: stuck.clone(),
                }),
            )?;
            for line in &stuck {
                self.ui.note(Verb::Deadlock, line);
            }
        }
        Ok(Ending::Finished)
    }

    /// Past the token budget, nothing new starts: running attempts finish (and finished writers
    /// are merged), then the loop ends, resumable.
    fn check_budget(&mut self) -> anyhow::Result<()> {
        let Some(budget) = self.settings.budget_tokens else {
            return Ok(());
        };
        if self.stopping || self.tokens_used < budget {
            return Ok(());
        }
        self.stopping = true;
        self.over_budget = true;
        if let Some(g) = &self.goals {
            g.stop();
        }
        self.board.event(
            &self.layout.run,
            &Event::run(RunEvent::BudgetSpent {
                budget,
                used: self.tokens_used,
                running: self.running,
            }),
        )?;
        self.ui.note(
            Verb::Stopping,
            &format!(
                "the token budget is spent ({} of {budget} tokens); {} running task(s) finish, nothing new starts",
                self.tokens_used, self.running
            ),
        );
        Ok(())
    }

    /// Tasks still waiting when nothing runs and nothing is ready can never start; they are
    /// skipped, each with what it waits for. Returns one line per task.
    fn skip_stuck(&mut self) -> anyhow::Result<Vec<String>> {
        let effects = self.dag.on(&self.plan, Transition::Stuck);
        let mut skips = Vec::new();
        let mut lines = Vec::new();
        for e in effects {
            if let Effect::Stuck { task, waits_for } = e {
                let on: Vec<&str> = waits_for
                    .iter()
                    .map(|&d| self.plan.tasks[d].id.as_str())
                    .collect();
                let waits = format!("waits for {}", on.join(", "));
                lines.push(format!("task {}: {waits}", self.plan.tasks[task].id));
                skips.push((task, format!("deadlock: {waits}")));
            }
        }
        self.record_skips(&skips)?;
        Ok(lines)
    }

    /// Records tasks the dag skipped, each with its reason, on the board in one transaction.
    fn record_skips(&mut self, skips: &[(usize, String)]) -> anyhow::Result<()> {
        let changes: Vec<(&str, TaskStatus, Option<&str>)> = skips
            .iter()
            .map(|(i, why)| {
                (
                    self.plan.tasks[*i].id.as_str(),
                    TaskStatus::Skipped,
                    Some(why.as_str()),
                )
            })
            .collect();
        self.board
            .mark_tasks(&self.layout.run, &changes, |reason| RunEvent::TaskSkipped {
                reason,
            })
    }

    /// Hands a transition to the dag and carries out what it says: skipped tasks are recorded
    /// and told.
    fn transition(&mut self, t: Transition) -> anyhow::Result<()> {
        let plan = Rc::clone(&self.plan);
        let skips: Vec<(usize, String)> = self
            .dag
            .on(&plan, t)
            .into_iter()
            .filter_map(|e| match e {
                Effect::Skipped { task, why } => Some((task, why)),
                Effect::Stuck { .. } => None,
            })
            .collect();
        if skips.is_empty() {
            return Ok(());
        }
        self.record_skips(&skips)?;
        for (i, why) in &skips {
            self.ui
                .note(Verb::Skipped, &format!("{} ({why})", plan.tasks[*i].id));
        }
        Ok(())
    }

    /// An attempt met its provider's usage limit: the task waits (no failure counted) and no
    /// attempt starts until the reset; a reset beyond `max_limit_wait` stops the run instead.
    fn pause_for_limit(
        &mut self,
        i: usize,
        report: &Report,
        limit: &crate::agent::cli::UsageLimit,
        tokens: Option<u64>,
        cost: Option<f64>,
    ) -> anyhow::Result<()> {
        let id = self.plan.tasks[i].id.as_str();
        let wait = limit.resets_at.map_or(DEFAULT_LIMIT_WAIT, |t| {
            t.duration_since(std::time::SystemTime::now())
                .unwrap_or_default()
        });
        let too_long = wait > self.settings.max_limit_wait;
        self.board.finish_attempt(
            &self.layout.run,
            id,
            report.attempt,
            &AttemptEnd {
                outcome: "usage_limit",
                tokens: report.tokens,
                cost: report.cost,
            },
            &TaskUpdate {
                status: Some(if too_long {
                    TaskStatus::Interrupted
                } else {
                    TaskStatus::Pending
                }),
                tokens,
                cost,
                ..TaskUpdate::default()
            },
            &[Event::task(
                id,
                RunEvent::UsageLimit {
                    message: limit.message.clone(),
                    wait_ms: wait.as_millis() as u64,
                    stops_run: too_long,
                },
            )],
        )?;
        let text = format!(
            "{id}: usage limit ({}); resets in {}",
            limit.message,
            crate::ui::duration(wait)
        );
        self.ui
            .task_finished(id, Verb::Limited, report.elapsed, Some(&text));
        if too_long {
            self.dag.on(&self.plan, Transition::Interrupted(i));
            self.limit_stop = Some(format!(
                "{text}, past the {} this run waits; `swarm resume` continues it later",
                crate::ui::duration(self.settings.max_limit_wait)
            ));
        } else {
            let until = Instant::now() + wait;
            self.paused_until = Some(self.paused_until.map_or(until, |p| p.max(until)));
            self.dag.on(&self.plan, Transition::Delayed(i, until));
            self.ui.note(
                Verb::Paused,
                &format!("no new attempts for {}", crate::ui::duration(wait)),
            );
        }
        Ok(())
    }

    /// Takes a worker's report: records it, then merges, retries, or releases dependents.
    fn finish(&mut self, report: Report) -> anyhow::Result<()> {
        let i = report.task;
        if self.dag.state(i) == State::Resolving {
            return self.finish_resolver(report);
        }
        let plan = Rc::clone(&self.plan);
        let task = &plan.tasks[i];
        let id = task.id.as_str();
        self.running -= 1;
        if task.mode == Mode::Write {
            self.writers_running -= 1;
        }
        if let Some(commit) = self.slots[i].snapshot.take() {
            self.checkouts.release_snapshot(&commit, &self.tip)?;
        }
        let elapsed_ms = report.elapsed.as_millis() as i64;
        self.slots[i].tokens += report.tokens;
        self.tokens_used += report.tokens;
        let tokens = Some(self.slots[i].tokens);
        if let Some(c) = report.cost {
            self.slots[i].cost = Some(self.slots[i].cost.unwrap_or(0.0) + c);
        }
        let cost = self.slots[i].cost;
        let run = self.layout.run.clone();
        match report.verdict {
            Verdict::Succeeded { result, commit } => {
                let status = if commit.is_some() {
                    TaskStatus::Committed
                } else {
                    TaskStatus::Done
                };
                let mut events = vec![Event::task(
                    id,
                    RunEvent::TaskSucceeded {
                        attempt: report.attempt,
                        elapsed_ms,
                    },
                )];
                if let Some(c) = &commit {
                    events.push(Event::task(
                        id,
                        RunEvent::Committed {
                            commit: c.to_string(),
                        },
                    ));
                } else if task.mode == Mode::Write {
                    events.push(Event::task(id, RunEvent::NoChanges));
                }
                self.board.finish_attempt(
                    &run,
                    id,
                    report.attempt,
                    &AttemptEnd {
                        outcome: "succeeded",
                        tokens: report.tokens,
                        cost: report.cost,
                    },
                    &TaskUpdate {
                        status: Some(status),
                        result: Some(&result),
                        error: Some(None),
                        finished_at: Some(now_ms()),
                        elapsed_ms: Some(elapsed_ms),
                        tokens,
                        cost,
                        commit_id: commit.as_ref().map(CommitId::as_str),
                        ..TaskUpdate::default()
                    },
                    &events,
                )?;
                self.slots[i].result = Some(result);
                if let Some(c) = commit {
                    self.slots[i].commit = Some(c);
                    self.dag.on(&plan, Transition::Committed(i));
                    self.merge(i)?;
                } else {
                    if task.mode == Mode::Write {
                        self.remove_writer_worktree(i, false)?;
                    }
                    self.ui.task_finished(
                        id,
                        Verb::Finished,
                        report.elapsed,
                        if task.mode == Mode::Write {
                            Some("no changes")
                        } else {
                            None
                        },
                    );
                    self.transition(Transition::Done(i))?;
                }
            }
            Verdict::Limited(ref limit) => self.pause_for_limit(i, &report, limit, tokens, cost)?,
            Verdict::Interrupted => {
                self.board.finish_attempt(
                    &run,
                    id,
                    report.attempt,
                    &AttemptEnd {
                        outcome: "interrupted",
                        tokens: report.tokens,
                        cost: report.cost,
                    },
                    &TaskUpdate {
                        status: Some(TaskStatus::Interrupted),
                        tokens,
                        cost,
                        ..TaskUpdate::default()
                    },
                    &[Event::task(
                        id,
                        RunEvent::TaskInterrupted {
                            attempt: Some(report.attempt),
                        },
                    )],
                )?;
                self.dag.on(&plan, Transition::Interrupted(i));
                self.ui
                    .task_finished(id, Verb::Interrupted, report.elapsed, None);
            }
            Verdict::Failed(why) => {
                let failures = self.slots[i].failures + 1;
                self.slots[i].failures = failures;
                let retries_left = failures <= self.settings.retries;
                let retry = retries_left && !self.stopping;
                let status = match (retries_left, self.stopping) {
                    (true, false) => TaskStatus::Pending,
                    // A resume gives it the retry it has left.
                    (true, true) => TaskStatus::Interrupted,
                    (false, _) => TaskStatus::Failed,
                };
                self.board.finish_attempt(
                    &run,
                    id,
                    report.attempt,
                    &AttemptEnd {
                        outcome: "failed",
                        tokens: report.tokens,
                        cost: report.cost,
                    },
                    &TaskUpdate {
                        status: Some(status),
                        failures: Some(failures),
                        error: Some(Some(&why)),
                        finished_at: Some(now_ms()),
                        elapsed_ms: Some(elapsed_ms),
                        tokens,
                        cost,
                        ..TaskUpdate::default()
                    },
                    &[Event::task(
                        id,
                        RunEvent::TaskFailed {
                            attempt: report.attempt,
                            error: why.clone(),
                            retry,
                        },
                    )],
                )?;
                if retry {
                    let wait = backoff(self.settings.backoff, failures);
                    self.dag
                        .on(&plan, Transition::Delayed(i, Instant::now() + wait));
                    self.ui.task_finished(
                        id,
                        Verb::Retrying,
                        report.elapsed,
                        Some(&format!(
                            "{why}; attempt {} in {:.1}s",
                            report.attempt + 1,
                            wait.as_secs_f64()
                        )),
                    );
                } else if retries_left {
                    self.dag.on(&plan, Transition::Interrupted(i));
                    self.ui
                        .task_finished(id, Verb::Interrupted, report.elapsed, Some(&why));
                } else {
                    self.ui
                        .task_finished(id, Verb::Failed, report.elapsed, Some(&why));
                    if task.mode == Mode::Write {
                        // Kept for inspection until `swarm gc`.
                        self.ui.note(
                            Verb::Kept,
                            &format!(
                                "worktree of {id} at {}",
                                self.layout.worktree(id, Checkout::Task).display()
                            ),
                        );
                    }
                    self.transition(Transition::Failed(i))?;
                }
            }
        }
        Ok(())
    }
}

/// A model client's notice as an event.
pub fn notice_event(notice: &crate::llm::Notice) -> RunEvent {
    use crate::llm::Notice;
    match notice {
        Notice::Throttled {
            status,
            wait,
            attempt,
        } => RunEvent::LlmThrottled {
            status: *status,
            wait_ms: wait.as_millis() as u64,
            attempt: *attempt,
        },
        Notice::Retrying { why, wait, attempt } => RunEvent::LlmRetrying {
            why: why.clone(),
            wait_ms: wait.as_millis() as u64,
            attempt: *attempt,
        },
        Notice::Concurrency { limit } => RunEvent::LlmConcurrency { limit: *limit },
    }
}

/// Retry `n` (1-based) waits base × 2^(n-1), at most a minute, with ±20% jitter so retries of
/// many tasks do not land together.
fn backoff(base: Duration, n: u32) -> Duration {
    let exp = base
        .saturating_mul(1 << (n - 1).min(10))
        .min(Duration::from_secs(60));
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let jitter = 0.8 + 0.4 * f64::from(nanos % 1000) / 1000.0;
    exp.mul_f64(jitter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_branches_a_run_makes_are_known_by_name() {
        let tasks = ["a", "b-c"];
        for name in [
            "swarm/r1",
            "swarm/r1-a",
            "swarm/r1-b-c",
            "swarm/r1-a-resolve",
            "swarm/r1-a@2",
            "swarm/r1-b-c-resolve@1",
            "swarm/r1@moved-0123456789ab",
        ] {
            assert!(made_by_run(name, "r1", &tasks), "{name}");
        }
        for name in [
            "swarm/r2-a",
            "swarm/r1-x",
            "swarm/r1-a@x",
            "swarm/r1a",
            "swarm/mine",
            "r1-a",
        ] {
            assert!(!made_by_run(name, "r1", &tasks), "{name}");
        }
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let b = Duration::from_secs(1);
        assert!(backoff(b, 1) <= Duration::from_millis(1200));
        assert!(backoff(b, 3) >= Duration::from_millis(3200));
        assert!(backoff(b, 30) <= Duration::from_secs(72));
    }
}
