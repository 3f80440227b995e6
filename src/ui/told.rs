//! What the run loop tells the terminal, as typed events: the loop says what happened and
//! with what facts, and this module alone words it. The same events reach `--progress json`
//! through the board's log, so the terminal and the log say one thing.

use std::path::PathBuf;
use std::time::Duration;

use super::{Ui, Verb, count, duration, one_line};

/// How an attempt ended, as its line says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Finished,
    Failed,
    Interrupted,
}

/// Why the run stops starting work.
#[derive(Debug, Clone, PartialEq)]
pub enum Stop {
    /// A signal: what runs is stopped.
    Signal { running: usize },
    /// A fault outside the tasks: what runs is stopped.
    Fault { why: String, running: usize },
    /// Merging stopped for a human: what runs finishes.
    Halted { why: String, running: usize },
    /// The token budget is spent: what runs finishes.
    Budget {
        used: u64,
        budget: u64,
        running: usize,
    },
    /// A usage limit the run does not wait for (`id`'s, past `max_wait` or lasting): what
    /// runs is stopped.
    Limit {
        id: String,
        limit: Limit,
        max_wait: Duration,
    },
    /// Every member of a pool is out for the run: what runs is stopped.
    PoolOut(String),
    /// A worker stopping: its attempts are given back.
    GiveBack { running: usize },
}

/// Why a task is held, for its agent's usage limit.
#[derive(Debug, Clone, PartialEq)]
pub enum Limit {
    /// The run's agent: the run waits `wait`, or stops when it lasts.
    Run {
        message: String,
        wait: Duration,
        lasting: bool,
    },
    /// A pool's member: it alone waits `wait`, or is out of the run.
    Member {
        member: String,
        message: String,
        wait: Duration,
        lasting: bool,
        out: bool,
        max_wait: Duration,
    },
}

/// What a writer is parked for.
#[derive(Debug, Clone, PartialEq)]
pub enum Parked {
    Conflict(Vec<String>),
    Held(String),
}

/// One thing the run loop tells the terminal.
#[derive(Debug, Clone, PartialEq)]
pub enum Told {
    /// The run starts, `finished` of its `total` tasks ended already.
    RunStarted {
        run: String,
        total: usize,
        finished: usize,
    },
    /// An attempt started.
    Started {
        id: String,
        attempt: u32,
    },
    /// An attempt ended, after `elapsed`, with what it says of it.
    Ended {
        id: String,
        how: Ended,
        elapsed: Duration,
        detail: Option<String>,
    },
    /// The last lines an attempt printed on stderr.
    Tail(Vec<String>),
    /// A failed task is retried after `wait`.
    Retry {
        id: String,
        attempt: u32,
        wait: Duration,
        retry: u32,
        retries: u32,
    },
    /// A failed writer's checkout is kept for a look.
    KeptCheckout {
        id: String,
        path: PathBuf,
    },
    /// An attempt met its agent's usage limit.
    Limited {
        id: String,
        elapsed: Duration,
        limit: Limit,
    },
    /// No new attempts for `wait` (a usage limit).
    PausedForLimit(Duration),
    /// No new attempts while the endpoint is checked, for up to `wait`.
    PausedForEndpoint(Duration),
    /// Every member of `pool` is paused; its tasks wait `wait`.
    PoolPaused {
        pool: String,
        wait: Duration,
    },
    /// A member's usage limit has reset.
    MemberBack(String),
    /// The endpoint answers again after `after`.
    EndpointBack(Duration),
    /// The run stops starting work.
    Stopping(Stop),
    /// A task is skipped.
    Skipped {
        id: String,
        why: String,
    },
    /// A task spawned `children` tasks (and its continuation).
    Spawned {
        id: String,
        children: usize,
        then: bool,
    },
    /// A task's spawn was refused.
    SpawnRefused {
        id: String,
        why: String,
    },
    /// A writer was merged (`before`: by a swarm before this one's interruption).
    Merged {
        id: String,
        before: bool,
    },
    /// A writer's merge conflicts and a rung of the ladder (`structural`, `resolve`) is to
    /// try.
    Resolving {
        id: String,
        paths: Vec<String>,
        rung: &'static str,
    },
    /// A running writer's change is foreseen to conflict with another's (`with`), or with
    /// what was merged since it started.
    Forecast {
        id: String,
        with: Option<String>,
        paths: Vec<String>,
    },
    /// A committed writer's merge waits for another writer's end.
    HeldForMerge {
        id: String,
        with: String,
    },
    /// A resolver attempt started.
    ResolverStarted(String),
    /// A resolver attempt ended.
    ResolverEnded {
        id: String,
        elapsed: Duration,
    },
    /// A writer is parked.
    Parked {
        id: String,
        why: Parked,
    },
    /// Merging stopped for a human.
    Halted(String),
    /// A gate run started on `tip`, testing the merges of `batch` (none: the base).
    GateStarted {
        tip: String,
        batch: Vec<String>,
        base: bool,
    },
    /// A gate run ended.
    GateEnded {
        tip: String,
        verdict: String,
        green: bool,
        elapsed: Duration,
    },
    /// The gate took `culprit` out: the integration branch is back at `tip`, and `again`
    /// are merged again.
    TakenOut {
        culprit: String,
        tip: String,
        again: Vec<String>,
    },
    /// A task or goal waits for what can never end well.
    Deadlock(String),
    /// A model request is retried (`who`: a task's id, or `planning`).
    ModelRetry {
        who: String,
        line: String,
    },
    /// Processes the run's tasks left behind were stopped.
    Strays(Vec<String>),
    /// A goal joined the run from the queue.
    Queued {
        goal: String,
        text: String,
    },
    /// A goal ended.
    GoalEnded {
        goal: String,
        text: String,
        how: GoalEnd,
    },
    /// A goal is skipped.
    GoalSkipped {
        goal: String,
        reason: String,
    },
    /// The dependency pass over these goals started.
    Inferring(Vec<String>),
    /// A goal needs another.
    Needs {
        goal: String,
        needs: String,
        reason: String,
    },
    /// A need the dependency pass gave was dropped.
    NeedDropped {
        goal: String,
        needs: String,
        why: String,
    },
    /// The dependency pass failed: the goals run as independent.
    Independent(String),
    /// A goal's planning started.
    Planning {
        goal: String,
        text: String,
    },
    /// A goal's planning was cut short by a fault.
    PlanningCut {
        goal: String,
        why: String,
    },
    /// A goal's planning failed.
    PlanningFailed {
        goal: String,
        reason: String,
    },
    /// A goal was planned.
    Planned {
        goal: String,
        tasks: usize,
        repairs: usize,
        tokens: u64,
        spawning: Option<String>,
    },
    /// The remote does not answer.
    RemoteAway {
        remote: String,
        why: String,
    },
    /// The remote answers again.
    RemoteBack(String),
    /// A lease or result found on the remote was refused.
    RemoteRefused {
        id: String,
        what: &'static str,
        worker: Option<String>,
        why: String,
        then: &'static str,
    },
    /// A worker's lease ran out: the attempt is published again.
    LeaseExpired {
        id: String,
        worker: String,
    },
    /// A worker could not start a claimed attempt: it is given back.
    NotStartedHere {
        id: String,
        why: String,
    },
    /// A worker's lease of a task went to another.
    LeaseLost {
        id: String,
        why: String,
    },
    /// A worker's result went to the remote, or did not.
    ResultPushed {
        id: String,
        status: String,
    },
    ResultNotPushed(String),
    ResultRefused {
        id: String,
        why: String,
    },
}

/// How a goal ended, as its line says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoalEnd {
    Done,
    Parked,
    Failed,
}

impl Ui {
    /// Says `t` on the terminal, in its words.
    pub fn tell(&mut self, t: &Told) {
        match t {
            Told::RunStarted {
                run,
                total,
                finished,
            } => self.run_started(run, *total, *finished),
            Told::Started { id, attempt } => self.task_started(id, *attempt),
            Told::Ended {
                id,
                how,
                elapsed,
                detail,
            } => {
                let verb = match how {
                    Ended::Finished => Verb::Finished,
                    Ended::Failed => Verb::Failed,
                    Ended::Interrupted => Verb::Interrupted,
                };
                self.task_finished(id, verb, *elapsed, detail.as_deref());
            }
            Told::Tail(lines) => self.output_tail(lines),
            Told::Retry {
                id,
                attempt,
                wait,
                retry,
                retries,
            } => self.note(
                Verb::Retrying,
                &format!(
                    "{id}: attempt {attempt} in {} (retry {retry} of {retries})",
                    duration(*wait)
                ),
            ),
            Told::KeptCheckout { id, path } => self.note(
                Verb::Kept,
                &format!("worktree of {id} at {}", path.display()),
            ),
            Told::Limited { id, elapsed, limit } => {
                let what = limit_words(limit);
                self.task_finished(id, Verb::Limited, *elapsed, Some(&what));
            }
            Told::PausedForLimit(wait) => self.note(
                Verb::Paused,
                &format!("no new attempts for {}", duration(*wait)),
            ),
            Told::PausedForEndpoint(wait) => self.note(
                Verb::Paused,
                &format!(
                    "no new attempts while swarm checks the model endpoint, for up to {}",
                    duration(*wait)
                ),
            ),
            Told::PoolPaused { pool, wait } => self.note(
                Verb::Paused,
                &format!(
                    "pool:{pool}: every member is at its usage limit; its tasks wait {} for the first reset",
                    duration(*wait)
                ),
            ),
            Told::MemberBack(member) => self.note(
                Verb::Note,
                &format!("{member}: its usage limit has reset"),
            ),
            Told::EndpointBack(after) => self.note(
                Verb::Note,
                &format!(
                    "the model endpoint answers again after {}",
                    duration(*after)
                ),
            ),
            Told::Stopping(stop) => self.note(Verb::Stopping, &stop_words(stop)),
            Told::Skipped { id, why } => self.note(Verb::Skipped, &format!("{id} ({why})")),
            Told::Spawned { id, children, then } => {
                let then = if *then { " and its continuation" } else { "" };
                self.note(
                    Verb::Planned,
                    &format!("{id} spawned {}{then}", count(*children, "task", "tasks")),
                );
            }
            Told::SpawnRefused { id, why } => {
                self.note(Verb::Note, &format!("{id}: spawn refused: {why}"));
            }
            Told::Merged { id, before } => {
                if *before {
                    self.note(Verb::Merged, &format!("{id} (before the interruption)"));
                } else {
                    self.note(Verb::Merged, id);
                }
            }
            Told::Resolving { id, paths, rung } => {
                let by = if *rung == "structural" {
                    " (a syntax-aware merge)"
                } else {
                    ""
                };
                self.note(
                    Verb::Resolving,
                    &format!("{id}: conflict in {}{by}", paths.join(", ")),
                );
            }
            Told::Forecast { id, with, paths } => {
                let with = match with {
                    Some(w) => format!("with {w}"),
                    None => "with what was merged since it started".to_owned(),
                };
                self.note(
                    Verb::Foreseen,
                    &format!("{id}: a conflict {with} in {}", paths.join(", ")),
                );
            }
            Told::HeldForMerge { id, with } => self.note(
                Verb::Foreseen,
                &format!("{id}: its merge waits for {with}'s, with which it would conflict"),
            ),
            Told::ResolverStarted(id) => self.task_started(&format!("{id} (resolving)"), 1),
            Told::ResolverEnded { id, elapsed } => self.task_finished(
                &format!("{id} (resolving)"),
                Verb::Resolved,
                *elapsed,
                None,
            ),
            Told::Parked { id, why } => {
                let line = match why {
                    Parked::Conflict(paths) => format!("{id}: conflict in {}", paths.join(", ")),
                    Parked::Held(why) => format!("{id}: {why}"),
                };
                self.note(Verb::Parked, &line);
            }
            Told::Halted(why) => self.note(Verb::Halted, why),
            Told::GateStarted { tip, batch, base } => {
                let what = if *base {
                    format!("gate on the base {tip}")
                } else {
                    format!("gate on {tip} ({})", batch.join(", "))
                };
                self.note(Verb::Started, &what);
            }
            Told::GateEnded {
                tip,
                verdict,
                green,
                elapsed,
            } => {
                let verb = if *green { Verb::Done } else { Verb::Failed };
                self.task_finished(&format!("gate on {tip}: {verdict}"), verb, *elapsed, None);
            }
            Told::TakenOut {
                culprit,
                tip,
                again,
            } => {
                let again = if again.is_empty() {
                    String::new()
                } else {
                    format!("; merging {} again", again.join(", "))
                };
                self.note(
                    Verb::Note,
                    &format!(
                        "the gate took {culprit} out: the integration branch is back at {tip}{again}"
                    ),
                );
            }
            Told::Deadlock(line) => self.note(Verb::Deadlock, line),
            Told::ModelRetry { who, line } => self.note(Verb::Retrying, &format!("{who}: {line}")),
            Told::Strays(processes) => self.note(
                Verb::Stopped,
                &format!(
                    "{} process(es) the run's tasks left behind: {}",
                    processes.len(),
                    processes.join("; ")
                ),
            ),
            Told::Queued { goal, text } => {
                self.note(Verb::Queued, &format!("{goal}: {}", one_line(text, 80)));
            }
            Told::GoalEnded { goal, text, how } => {
                let verb = match how {
                    GoalEnd::Done => Verb::Done,
                    GoalEnd::Parked => Verb::Parked,
                    GoalEnd::Failed => Verb::Failed,
                };
                self.note(verb, &format!("goal {goal}: {}", one_line(text, 80)));
            }
            Told::GoalSkipped { goal, reason } => {
                self.note(Verb::Skipped, &format!("goal {goal} ({reason})"));
            }
            Told::Inferring(goals) => self.note(
                Verb::Inferring,
                &format!("which goals need which ({})", goals.join(", ")),
            ),
            Told::Needs {
                goal,
                needs,
                reason,
            } => self.note(
                Verb::Needs,
                &format!("goal {goal} needs goal {needs} ({reason})"),
            ),
            Told::NeedDropped { goal, needs, why } => self.note(
                Verb::Dropped,
                &format!("goal {goal} needs goal {needs}: {why}"),
            ),
            Told::Independent(error) => self.note(
                Verb::Independent,
                &format!("the dependency pass failed ({error}); the goals run as independent"),
            ),
            Told::Planning { goal, text } => {
                self.note(Verb::Planning, &format!("goal {goal}: {}", one_line(text, 80)));
            }
            Told::PlanningCut { goal, why } => {
                self.note(Verb::Interrupted, &format!("planning goal {goal} ({why})"));
            }
            Told::PlanningFailed { goal, reason } => {
                self.note(Verb::Failed, &format!("goal {goal} ({reason})"));
            }
            Told::Planned {
                goal,
                tasks,
                repairs,
                tokens,
                spawning,
            } => {
                let more = spawning
                    .as_ref()
                    .map(|m| format!("; {m}"))
                    .unwrap_or_default();
                self.note(
                    Verb::Planned,
                    &format!(
                        "goal {goal}: {} ({}, {tokens} tokens){more}",
                        count(*tasks, "task", "tasks"),
                        count(*repairs, "repair", "repairs"),
                    ),
                );
            }
            Told::RemoteAway { remote, why } => self.note(
                Verb::Retrying,
                &format!("the remote {remote} does not answer ({why}); trying again"),
            ),
            Told::RemoteBack(remote) => self.note(
                Verb::Retrying,
                &format!("the remote {remote} answers again"),
            ),
            Told::RemoteRefused {
                id,
                what,
                worker,
                why,
                then,
            } => {
                let from = worker
                    .as_ref()
                    .map(|w| format!(" from worker {w}"))
                    .unwrap_or_default();
                self.note(
                    Verb::Refused,
                    &format!("{id}: a {what}{from} refused: {why}; {then}"),
                );
            }
            Told::LeaseExpired { id, worker } => self.note(
                Verb::Retrying,
                &format!("{id}: the lease of worker {worker} expired; published again"),
            ),
            Told::NotStartedHere { id, why } => self.note(
                Verb::Failed,
                &format!("{id}: could not start here ({why}); given back"),
            ),
            Told::LeaseLost { id, why } => self.note(
                Verb::Stopped,
                &format!("{id}: {why}; its result will not be taken"),
            ),
            Told::ResultPushed { id, status } => {
                self.note(Verb::Finished, &format!("{id}: result pushed ({status})"));
            }
            Told::ResultNotPushed(id) => self.note(
                Verb::Stopped,
                &format!(
                    "{id}: the remote did not answer and swarm is stopping: its result is not pushed, and its lease runs out for another worker"
                ),
            ),
            Told::ResultRefused { id, why } => self.note(
                Verb::Stopped,
                &format!(
                    "{id}: the remote refused its result ({why}): the lease was no longer this worker's"
                ),
            ),
        }
    }
}

/// What a usage limit means for the task and the run, in words.
fn limit_words(limit: &Limit) -> String {
    match limit {
        Limit::Run {
            message,
            lasting: true,
            ..
        } => {
            format!("usage limit ({message}); it lasts until a cap is raised or credits are bought")
        }
        Limit::Run { message, wait, .. } => {
            format!("usage limit ({message}); resets in {}", duration(*wait))
        }
        Limit::Member {
            member,
            message,
            lasting: true,
            ..
        } => format!(
            "{member}: usage limit ({message}); it lasts, so {member} takes no more of this run"
        ),
        Limit::Member {
            member,
            message,
            wait,
            out: true,
            max_wait,
            ..
        } => format!(
            "{member}: usage limit ({message}); it resets in {}, past the {} this run waits, so {member} takes no more of this run",
            duration(*wait),
            duration(*max_wait)
        ),
        Limit::Member {
            member,
            message,
            wait,
            ..
        } => format!(
            "{member}: usage limit ({message}); {member} takes no attempt for {}",
            duration(*wait)
        ),
    }
}

/// Why the run stops starting work, in words.
fn stop_words(stop: &Stop) -> String {
    match stop {
        Stop::Signal { running } => {
            format!("{running} running task(s); press Ctrl-C again to kill now")
        }
        Stop::Fault { why, running } => {
            format!("{why}; {running} running task(s) are stopped, nothing new starts")
        }
        Stop::Halted { why, running } => {
            format!("{running} running task(s) finish, nothing new starts: {why}")
        }
        Stop::Budget {
            used,
            budget,
            running,
        } => format!(
            "the token budget is spent ({used} of {budget} tokens); {running} running task(s) finish, nothing new starts"
        ),
        Stop::Limit {
            id,
            limit,
            max_wait,
        } => {
            let text = format!("{id}: {}", limit_words(limit));
            match limit {
                Limit::Run { lasting: true, .. } => {
                    format!("{text}; `swarm resume` continues the run once it is")
                }
                _ => format!(
                    "{text}, past the {} this run waits; `swarm resume` continues it later",
                    duration(*max_wait)
                ),
            }
        }
        Stop::PoolOut(pool) => format!(
            "every member of pool:{pool} is at a usage limit this run does not wait for; `swarm resume` continues the run later"
        ),
        Stop::GiveBack { running } => format!(
            "{running} running task(s) are stopped and given back; press Ctrl-C again to kill now"
        ),
    }
}
