//! The run's loop: messages in (an attempt's report, a gate run's, a fetch of the remote, a
//! planner's answer, a signal), each handed to the core as an input, and the core's effects
//! carried out. Owns the threads and lines the run uses besides the pool: the planner's, the
//! endpoint's watch, the coordinator of a run spread over machines.

use std::collections::VecDeque;
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context as _;

use super::super::core::{Core, Ending, Input, Start};
use super::super::job::{Report, Verdict, Workers};
use super::super::{Layout, Message, Settings, notice_event, notice_line};
use super::gate::GATE_KEY;
use super::goals::{GoalRun, Planner};
use super::record::Recorder;
use super::remote::Coordinator;
use super::{Exec, Outlets, fault_of, gate, merge, view};
use crate::agent::Watchdog;
use crate::agent::cli::UsageLimit;
use crate::git::{CommitId, Repo};
use crate::plan::Plan;
use crate::store::{Board, TaskRecord};
use crate::ui::{Told, Ui};

/// The most messages one pass takes in: enough that attempts ending together share a commit,
/// few enough that the display and the clocks are never kept waiting long.
const MESSAGES_A_PASS: usize = 64;

/// How long the run pauses for a usage limit whose reset the agent did not say.
const DEFAULT_LIMIT_WAIT: Duration = Duration::from_secs(60);

/// Stops and reaps every attempt when dropped armed.
struct Reaper<'w> {
    watchdog: &'w Watchdog,
    armed: bool,
}

impl Drop for Reaper<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.watchdog.stop_and_reap();
        }
    }
}

/// The run's loop: the core, the executor, and what feeds them.
pub struct Dispatcher<'a> {
    core: Core<'a>,
    ex: Exec<'a>,
    rx: Receiver<Message>,
    /// Messages taken from `rx` and not yet handled: a pass takes in all that wait.
    waiting: VecDeque<Message>,
}

impl<'a> Dispatcher<'a> {
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
        let record = Recorder::new(board, &layout.run);
        // The tip swarm recorded; a board from before swarm kept it has only the ref to go by.
        let tip = match record.tip()? {
            Some(t) => t,
            None => repo.ref_target(&layout.integration_ref)?.with_context(|| {
                format!("the integration branch {} is gone", layout.integration_ref)
            })?,
        };
        let green = match settings.gate {
            Some(_) => record.green()?,
            None => None,
        };
        let (tx, rx) = mpsc::channel();
        let (planner, goals) = match goals.map(|g| Planner::new(g, tx.clone())) {
            Some((planner, goals)) => (Some(planner), Some(goals)),
            None => (None, None),
        };
        let core = Core::new(
            settings,
            Start {
                plan,
                records,
                tip,
                base: layout.base.clone(),
                green,
                gate_runs: gate::runs_before(layout),
                goals,
                seed: jitter_seed(),
            },
        );
        let watchdog = Watchdog::start(settings.kill_grace)?;
        let out = Outlets {
            record,
            ui,
            repo,
            settings,
            layout,
        };
        let coordinator = settings
            .remote
            .as_ref()
            .map(|r| Coordinator::new(repo, &layout.run, r));
        Ok(Self {
            ex: Exec::new(out, watchdog, tx, planner, coordinator)?,
            core,
            rx,
            waiting: VecDeque::new(),
        })
    }

    /// Runs every task that can run; returns when all are final or a signal stopped the run,
    /// with the plan as it ended (goals planned and spawns add tasks) and the integration tip
    /// swarm made.
    pub fn run(mut self) -> anyhow::Result<(Ending, Plan, CommitId)> {
        let watchdog = self.ex.watchdog.clone();
        let signals = {
            let (tx, killer) = (self.ex.tx.clone(), watchdog.clone());
            crate::signal::handle(
                move || {
                    let _ = tx.send(Message::Signal);
                },
                move || killer.kill_all_now(),
            )
        };
        let settings = self.ex.out.settings;
        let workers = Workers::start(settings.jobs, self.ex.tx.clone(), watchdog.clone())?;
        // However the loop ends short, by an error or a panic, no agent outlives it.
        let mut reaper = Reaper {
            watchdog: &watchdog,
            armed: true,
        };
        let mut outcome = self.drive(&workers);
        if let Some(c) = &mut self.ex.coordinator {
            let finished = matches!(outcome, Ok(Ending::Finished));
            if let Err(e) = c.close(&self.core, &mut self.ex.out, finished) {
                outcome = outcome.and(Err(e));
            }
        }
        reaper.armed = outcome.is_err();
        drop(reaper);
        let strays = self.ex.stop_strays();
        drop(signals);
        watchdog.shutdown();
        let cleanup = self
            .ex
            .out
            .layout
            .remove_checkouts(settings.gate.is_some(), &mut self.ex.checkouts);
        let ending = outcome?;
        strays?;
        cleanup?;
        let tip = self.core.final_tip();
        Ok((ending, self.core.plan, tip))
    }

    /// Runs the loop until the core says it is done: a fault of the machine met on the way (a
    /// full disk where swarm writes, the board's included) stops the run as any fault does,
    /// resumably.
    fn drive(&mut self, workers: &Workers) -> anyhow::Result<Ending> {
        if let Err(e) = self.open(workers) {
            self.fault_or(e, workers)?;
        }
        loop {
            match self.turn(workers) {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => self.fault_or(e, workers)?,
            }
        }
        let (ending, fx) = self.core.finish();
        self.ex.carry_out(&mut self.core, fx, workers)?;
        if self.ex.out.ui.shows_frames() {
            self.show(Some(&ending));
        }
        Ok(ending)
    }

    /// `e`, met outside an effect: a fault of the machine stops the run; anything else is
    /// swarm's own error.
    fn fault_or(&mut self, e: anyhow::Error, workers: &Workers) -> anyhow::Result<()> {
        let fault = fault_of(&self.ex, e)?;
        self.feed(Input::Broken(fault), workers)
    }

    /// Before the first attempt: stale locks go, what an earlier swarm of the run left
    /// running is stopped, the integration branch is settled and what it holds taken in, the
    /// merges a crash cut short are finished, the remote's attempts are taken up, and the
    /// terminal is told; then the run opens.
    fn open(&mut self, workers: &Workers) -> anyhow::Result<()> {
        let (repo, layout) = (self.ex.out.repo, self.ex.out.layout);
        layout.open(repo, &self.core.plan)?;
        self.ex.stop_strays()?;
        let mut found = merge::find(&self.core, &self.ex)?;
        found.members = recall_members(&self.core, &self.ex.out.record)?;
        let fx = self.core.begin(found);
        self.ex.carry_out(&mut self.core, fx, workers)?;
        if let Some(c) = &mut self.ex.coordinator {
            let adopted = c.open(&self.core, &mut self.ex.out, &self.ex.tx)?;
            self.feed(Input::Adopted(adopted), workers)?;
        }
        self.ex.tell(&Told::RunStarted {
            run: layout.run.clone(),
            total: self.core.plan.len(),
            finished: self.core.dag.finished(),
        });
        self.feed(Input::Open, workers)
    }

    /// One turn of the loop: what is due is done, then it waits for the next message (or the
    /// next thing due) and takes it in, with every other message already waiting. Each half is
    /// one pass: its records go to the board in one commit, and the attempts it starts begin
    /// once that commit is made. Whether the run is done.
    fn turn(&mut self, workers: &Workers) -> anyhow::Result<bool> {
        let done = self.pass(workers, |d, workers| {
            if let Some(c) = &mut d.ex.coordinator
                && !d.core.stopping()
            {
                c.expire(&d.core, &mut d.ex.out)?;
            }
            d.feed(Input::Tick, workers)?;
            Ok(d.core.done())
        })?;
        if done {
            return Ok(true);
        }
        let now = Instant::now();
        let mut wait = self
            .core
            .next_wake(now)
            .map_or(Duration::from_secs(3600), |at| {
                at.saturating_duration_since(now)
            });
        if let Some(c) = &self.ex.coordinator {
            // Leases run out by this clock.
            wait = wait.min(c.poll);
        }
        if self.ex.out.ui.shows_frames() {
            self.show(None);
            // The display's clocks (elapsed, ETA) move on while nothing happens.
            wait = wait.min(Duration::from_secs(1));
        }
        // A timeout means something came due; the loop holds a sender, so the channel never
        // closes.
        if self.waiting.is_empty()
            && let Ok(first) = self.rx.recv_timeout(wait)
        {
            self.waiting.push_back(first);
        }
        let room = MESSAGES_A_PASS.saturating_sub(self.waiting.len());
        self.waiting.extend(self.rx.try_iter().take(room));
        if !self.waiting.is_empty() {
            self.pass(workers, |d, workers| {
                // One look at the user's checkout after every attempt these reports end.
                if d.waiting
                    .iter()
                    .any(|m| matches!(m, Message::Done(_) | Message::Gated(_)))
                {
                    d.ex.watch.ended(d.ex.out.repo);
                }
                // What an error leaves waits for the next pass.
                while let Some(message) = d.waiting.pop_front() {
                    d.message(message, workers)?;
                }
                Ok(())
            })?;
        }
        Ok(false)
    }

    /// Runs `body` as one pass: the board's records it makes are committed together at its
    /// end, and the attempts it starts are held until then (the board has every start before
    /// its process runs, and every end before a dependent starts). A commit that fails starts
    /// none of them, and stops the run.
    fn pass<T>(
        &mut self,
        workers: &Workers,
        body: impl FnOnce(&mut Self, &Workers) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        self.ex.begin_pass(workers)?;
        let out = body(self, workers);
        let ended = self.ex.end_pass(&mut self.core, workers);
        match (out, ended) {
            (Ok(out), Ok(())) => Ok(out),
            (Err(e), _) | (Ok(_), Err(e)) => Err(e),
        }
    }

    /// Takes one message in.
    fn message(&mut self, message: Message, workers: &Workers) -> anyhow::Result<()> {
        // Stopped by a fault of the machine, the run waits only for what runs to end.
        if self.core.broken()
            && !matches!(
                message,
                Message::Done(_) | Message::Gated(_) | Message::Escalated { .. }
            )
        {
            return Ok(());
        }
        match message {
            Message::Done(report) => {
                let report = self.ex.checked(report.task, report);
                self.ex.release(report.task, Some(self.core.tip()))?;
                self.ended(report, workers)?;
            }
            Message::Remote(seen) => {
                if let Some(c) = &mut self.ex.coordinator {
                    let reports = c.seen(&self.core, &mut self.ex.out, seen)?;
                    for report in reports {
                        self.ended(report, workers)?;
                    }
                }
            }
            Message::Gated(report) => {
                let report = self.ex.checked(GATE_KEY, report);
                self.ex.ports.release(GATE_KEY);
                self.ex.scratch.release(GATE_KEY);
                self.ex.gate_shown = None;
                self.feed(Input::Gated(report), workers)?;
            }
            Message::Notice { task, notice } => {
                let id = self.core.id(task).to_owned();
                self.ex.out.record.task_event(&id, notice_event(&notice))?;
                if let Some(line) = notice_line(&notice) {
                    self.ex.tell(&Told::ModelRetry { who: id, line });
                }
            }
            Message::Needs { goals, result } => {
                let result = result.map_err(|e| format!("{e:#}"));
                self.feed(Input::Needs { goals, result }, workers)?;
            }
            Message::Planned { goal, result } => {
                let answer = super::goals::answer(&self.core, goal, result);
                self.feed(Input::Planned { goal, answer }, workers)?;
            }
            Message::GoalNotice { notice } => {
                self.ex.out.record.run_event(notice_event(&notice))?;
                if let Some(line) = notice_line(&notice) {
                    let who = "planning".to_owned();
                    self.ex.tell(&Told::ModelRetry { who, line });
                }
            }
            Message::Foreseen(looked) => self.feed(Input::Forecast(looked), workers)?,
            Message::Endpoint(gone) => {
                self.ex.endpoint.back();
                self.feed(Input::Endpoint(gone), workers)?;
            }
            Message::Escalated { task, hook } => {
                self.feed(Input::HookEnded { task, hook }, workers)?;
            }
            Message::Signal => self.feed(Input::Signal, workers)?,
        }
        Ok(())
    }

    /// An attempt's report (from this process's pool or a worker on another machine).
    fn ended(&mut self, report: Report, workers: &Workers) -> anyhow::Result<()> {
        let limit_wait = match &report.verdict {
            Verdict::Limited(limit) => limit_wait(limit),
            _ => Duration::ZERO,
        };
        self.feed(Input::Ended { report, limit_wait }, workers)
    }

    /// Hands `input` to the core and carries out what it says.
    fn feed(&mut self, input: Input, workers: &Workers) -> anyhow::Result<()> {
        self.ex.feed(&mut self.core, input, workers)
    }

    /// Hands the display the run as it is now, and once it is over, how it `ended`.
    fn show(&mut self, ended: Option<&Ending>) {
        view::show(
            &self.core,
            self.ex.out.ui,
            self.core.running(),
            self.ex.gate_shown.clone(),
            ended,
        );
    }
}

/// How long until a usage limit resets: the time the agent gave, or `DEFAULT_LIMIT_WAIT`.
fn limit_wait(limit: &UsageLimit) -> Duration {
    limit.resets_at.map_or(DEFAULT_LIMIT_WAIT, |t| {
        t.duration_since(SystemTime::now()).unwrap_or_default()
    })
}

/// The member of its pool each pool task's last attempt went to (the one its session belongs
/// to), as its start recorded it.
fn recall_members(core: &Core<'_>, record: &Recorder<'_>) -> anyhow::Result<Vec<(usize, String)>> {
    let mut out = Vec::new();
    for (i, task) in core.plan.tasks.iter().enumerate() {
        if core.slots[i].session.is_none()
            || core.settings.pool_for(task.agent.as_deref()).is_none()
        {
            continue;
        }
        if let Some(member) = record.last_member(task.id.as_str())? {
            out.push((i, member));
        }
    }
    Ok(out)
}

/// The seed of the retries' jitter: this moment, so that runs started together spread.
fn jitter_seed() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}
