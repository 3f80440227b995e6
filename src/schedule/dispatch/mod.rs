//! The run loop: the one place that knows every owner. It receives messages (a worker's
//! report, a signal, a planner's answer), turns them into transitions of the `Dag`, and carries
//! out what follows through the owners: `attempt` prepares jobs for the pool, `MergeQueue`
//! merges and parks, `GoalPlanner` plans goals, `Checkouts` keeps the directories, `Recorder`
//! writes the board and `Ui` shows it. It also owns when the run stops: a signal, a spent
//! budget, a long usage limit, a halted merge queue.

mod budget;
mod endpoint;
mod members;
mod pauses;
mod remote;
mod retry;
mod view;

use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::agent::{Fault, FaultKind, Watchdog};
use crate::git::{CommitId, Repo};
use crate::plan::{Mode, Plan, Task};
use crate::store::{Board, RunEvent, TaskRecord};
use crate::ui::{Ui, Verb};

use self::budget::Budget;
use self::members::Members;
use self::pauses::Pauses;
use super::checkouts::Checkouts;
use super::dag::{Dag, State, Transition};
use super::goal::{GoalPlanner, GoalRun, QUEUE_POLL};
use super::job::{Job, Report, Verdict, Workers};
use super::merge::{Gate, MergeQueue};
use super::record::Recorder;
use super::run::{Run, Slot, recorded_state};
use super::{Ending, Layout, Message, Settings, attempt, notice_event, notice_line};

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

/// The loop and the owners it drives; lives on the owner thread.
pub struct Dispatcher<'a> {
    run: Run<'a>,
    checkouts: Checkouts,
    merges: MergeQueue,
    goals: Option<GoalPlanner>,
    tx: Sender<Message>,
    rx: Receiver<Message>,
    running: usize,
    writers_running: usize,
    /// The tokens the tasks' attempts have used, and the run's budget of them.
    budget: Budget,
    /// What holds new attempts back: usage limits, the model endpoint.
    pauses: Pauses,
    /// Which agent each attempt goes to: pools' members, profiles' `max-concurrent`.
    members: Members,
    /// Nothing new starts; the loop ends once what runs has finished.
    stopping: bool,
    /// A signal asked the run to stop.
    signalled: bool,
    /// A fault outside the tasks stops the run.
    fault: Option<Fault>,
    /// Spread over machines: the tasks out with workers.
    coordinator: Option<remote::Coordinator>,
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
        let states = records.iter().map(|r| recorded_state(r.status)).collect();
        let spawns = super::spawn::Spawns::new(&plan, settings.spawn);
        let slots = records.iter().map(Slot::recorded).collect();
        let gate = match &settings.gate {
            Some(command) => Some(Gate::resume(command.clone(), record.green()?, layout)),
            None => None,
        };
        let (tx, rx) = mpsc::channel();
        let watchdog = Watchdog::start(settings.kill_grace)?;
        // Attempts' temporary directories a killed swarm left.
        let _ = std::fs::remove_dir_all(layout.run_dir.join("tmp"));
        Ok(Self {
            goals: goals.map(|g| GoalPlanner::new(g, &plan, tx.clone())),
            checkouts: Checkouts::open(
                &layout.worktrees,
                settings.max_writers,
                repo.workdir(),
                &settings.prepare.include,
            )?,
            merges: MergeQueue::new(tip, gate),
            run: Run {
                dag: Dag::new(&plan, states),
                plan,
                slots,
                record,
                ui,
                repo,
                watchdog,
                tx: tx.clone(),
                hooks_running: 0,
                ports: super::ports::Ports::for_run(),
                scratch: super::scratch::Scratch::new(&layout.run_dir.join("tmp")),
                spawns,
                settings,
                layout,
            },
            tx,
            rx,
            running: 0,
            writers_running: 0,
            budget: Budget::new(
                settings.budget_tokens,
                records.iter().map(|r| r.tokens).sum(),
            ),
            pauses: Pauses::default(),
            members: Members::default(),
            stopping: false,
            signalled: false,
            fault: None,
            coordinator: settings
                .remote
                .as_ref()
                .map(|r| remote::Coordinator::new(repo, &layout.run, r)),
        })
    }

    /// Runs every task that can run; returns when all are final or a signal stopped the run,
    /// with the plan as it ended (goals planned during the run add tasks) and the integration
    /// tip swarm made.
    pub fn run(mut self) -> anyhow::Result<(Ending, Plan, CommitId)> {
        let watchdog = self.run.watchdog.clone();
        let signals = {
            let (tx, killer) = (self.tx.clone(), watchdog.clone());
            crate::signal::handle(
                move || {
                    let _ = tx.send(Message::Signal);
                },
                move || killer.kill_all_now(),
            )
        };
        let workers = Workers::start(self.run.settings.jobs, self.tx.clone(), watchdog.clone())?;
        // However the loop ends short, by an error or a panic, no agent outlives it.
        let mut reaper = Reaper {
            watchdog: &watchdog,
            armed: true,
        };
        let mut outcome = self.drive(&workers);
        if let Some(c) = &mut self.coordinator {
            let finished = matches!(outcome, Ok(Ending::Finished));
            if let Err(e) = c.close(&mut self.run, finished) {
                outcome = outcome.and(Err(e));
            }
        }
        reaper.armed = outcome.is_err();
        drop(reaper);
        let strays = self.run.stop_strays();
        drop(signals);
        watchdog.shutdown();
        let cleanup = self
            .run
            .layout
            .remove_checkouts(self.run.settings.gate.is_some(), &mut self.checkouts);
        let ending = outcome?;
        strays?;
        cleanup?;
        Ok((ending, self.run.plan, self.merges.into_tip()))
    }

    /// Runs the loop; a fault of the machine met on the way (a full disk where swarm writes,
    /// the board's included) stops the run as any fault does, resumably.
    fn drive(&mut self, workers: &Workers) -> anyhow::Result<Ending> {
        match self.drive_loop(workers) {
            Err(e) => {
                let e = self.run.record.name_full(e);
                match Fault::of_error(&e) {
                    Some(fault) => self.halt(workers, fault),
                    None => Err(e),
                }
            }
            ending => ending,
        }
    }

    /// Stops the run after a fault swarm met itself: what runs is stopped, and as each attempt
    /// ends (emptying its `TMPDIR`, which may give the disk room again) it is recorded as cut
    /// short, and so is every task whose end could not be recorded. Nothing else is recorded
    /// or merged: the state in memory may be ahead of the board, as after a `kill -9`, and
    /// `swarm resume` goes on from the board. Records the board cannot take are left to it too.
    fn halt(&mut self, workers: &Workers, fault: Fault) -> anyhow::Result<Ending> {
        self.stop(
            workers,
            &format!(
                "{}; {} running task(s) are stopped, nothing new starts",
                fault.why, self.running
            ),
        );
        // The first fault met is what stopped the run.
        let fault = self.fault.get_or_insert(fault).clone();
        while self.running > 0 || self.run.hooks_running > 0 {
            // The loop holds a sender: the channel stays open.
            let Ok(message) = self.rx.recv() else { break };
            match message {
                Message::Done(report) => {
                    self.release(report.task);
                    self.halted(&report);
                }
                Message::Gated(_) => self.running -= 1,
                Message::Escalated { .. } => self.run.hooks_running -= 1,
                _ => {}
            }
        }
        let out = self
            .coordinator
            .as_mut()
            .map(remote::Coordinator::left)
            .unwrap_or_default();
        if let Err(e) = self.run.interrupt_unfinished(out) {
            let e = self.run.record.name_full(e);
            if Fault::of_error(&e).is_none() {
                return Err(e);
            }
        }
        Ok(Ending::Faulted(fault))
    }

    /// An attempt that ended after the run halted: recorded as cut short, if the board takes it.
    fn halted(&mut self, report: &Report) {
        let i = report.task;
        // A resolver's end is the merge queue's, which a resume settles from the board.
        if self.run.dag.state(i) == State::Resolving {
            return;
        }
        let slot = &mut self.run.slots[i];
        slot.started = None;
        slot.tokens += report.tokens;
        if let Some(c) = report.cost {
            slot.cost = Some(slot.cost.unwrap_or(0.0) + c);
        }
        let totals = slot.totals();
        let id = self.run.plan.tasks[i].id.to_string();
        let record = &mut self.run.record;
        let _ = match &report.verdict {
            Verdict::Fault(f) => {
                record.attempt_faulted(&id, report, totals, f.kind.as_str(), &f.why)
            }
            _ => record.attempt_interrupted(&id, report, totals),
        };
        let run = &mut self.run;
        run.dag.on(&run.plan, Transition::Interrupted(i));
        run.ui
            .task_finished(&id, Verb::Interrupted, report.elapsed, None);
    }

    fn drive_loop(&mut self, workers: &Workers) -> anyhow::Result<Ending> {
        self.begin()?;
        loop {
            let now = Instant::now();
            self.run.dag.on(&self.run.plan, Transition::Tick(now));
            if let Some(c) = &mut self.coordinator
                && !self.stopping
            {
                c.expire(&mut self.run, self.merges.tip())?;
            }
            if let Some(why) =
                (self.pauses.take_limit_stop()).or_else(|| self.members.take_limit_stop())
                && !self.stopping
            {
                self.stop(workers, &why);
            }
            if let Some(fault) = &self.fault
                && !self.stopping
            {
                let why = format!(
                    "{}; {} running task(s) are stopped, nothing new starts",
                    fault.why, self.running
                );
                self.stop(workers, &why);
            }
            if let Some(why) = self.merges.halted()
                && !self.stopping
            {
                let why = format!(
                    "{} running task(s) finish, nothing new starts: {why}",
                    self.running
                );
                self.wind_down(&why);
            }
            if !self.stopping
                && let Some(why) = self.budget.check(&mut self.run, self.running)?
            {
                self.wind_down(&why);
            }
            if let Some(goals) = &mut self.goals {
                goals.advance(&mut self.run, self.stopping)?;
            }
            let paused = self.pauses.holds(now);
            // The gate asks no model: a paused run still tests what it merged.
            if !self.stopping {
                self.start_gate(workers)?;
            }
            if !self.stopping && !paused {
                self.start_resolvers(workers)?;
                self.start_ready(workers)?;
            }
            let delayed = self.run.dag.next_delay();
            let idle = !self.run.dag.has_ready()
                && delayed.is_none()
                && !self.merges.has_resolvers_waiting()
                && !self.merges.gate_busy()
                && !self.goals.as_ref().is_some_and(GoalPlanner::busy)
                && !self
                    .coordinator
                    .as_ref()
                    .is_some_and(remote::Coordinator::busy);
            if self.running == 0 && self.run.hooks_running == 0 && (self.stopping || idle) {
                let stopping = self.stopping;
                if let Some(goals) = &mut self.goals
                    && goals.poll_queue_before_ending(stopping)
                {
                    continue;
                }
                break;
            }
            let mut wait = delayed.map_or(Duration::from_secs(3600), |at| {
                at.saturating_duration_since(Instant::now())
            });
            if self.goals.as_ref().is_some_and(GoalPlanner::drains_queue) {
                wait = wait.min(QUEUE_POLL);
            }
            if let Some(c) = &self.coordinator {
                // Leases run out by this clock.
                wait = wait.min(c.poll);
            }
            let now = Instant::now();
            if let Some(reset) = self.members.next_reset(now) {
                wait = wait.min(reset.saturating_duration_since(now));
            }
            // A timeout means a delay came due; the loop holds a sender, so the channel
            // never closes.
            if self.run.ui.shows_frames() {
                self.show();
                // The display's clocks (elapsed, ETA) move on while nothing happens.
                wait = wait.min(Duration::from_secs(1));
            }
            if let Ok(message) = self.rx.recv_timeout(wait) {
                self.on(message, workers)?;
            }
        }
        let ending = self.end();
        if self.run.ui.shows_frames() {
            self.show();
        }
        ending
    }

    /// Before the first attempt: stale locks go, the integration branch is settled, the dag
    /// counts what is done, and merges a crash cut short are finished.
    fn begin(&mut self) -> anyhow::Result<()> {
        let layout = self.run.layout;
        layout.open(self.run.repo, &self.run.plan)?;
        // What an earlier swarm of this run left running (a kill -9 of it, a detached agent).
        self.run.stop_strays()?;
        Members::recall(&mut self.run)?;
        self.merges.settle_integration_ref(&mut self.run)?;
        // Merged writers the gate has not passed yet are not done: before counting.
        self.merges.recover_gate(&mut self.run)?;
        // Counting first: a recovered merge releases its dependents, which must be counted.
        self.run.transition(Transition::Settle)?;
        self.merges
            .recover_committed(&mut self.run, &mut self.checkouts)?;
        if let Some(c) = &mut self.coordinator {
            c.open(&mut self.run)?;
        }
        let total = self.run.plan.len();
        let finished = self.run.dag.finished();
        self.run.ui.run_started(&layout.run, total, finished);
        Ok(())
    }

    fn on(&mut self, message: Message, workers: &Workers) -> anyhow::Result<()> {
        match message {
            Message::Done(report) => {
                self.release(report.task);
                self.finish(report)?;
            }
            Message::Remote(seen) => {
                if let Some(c) = &mut self.coordinator {
                    for report in c.seen(&mut self.run, seen)? {
                        self.finish(report)?;
                    }
                }
            }
            Message::Gated(report) => {
                self.running -= 1;
                if let Some(fault) =
                    self.merges
                        .finish_gate(&mut self.run, &mut self.checkouts, report)?
                {
                    self.fault.get_or_insert(fault);
                }
            }
            Message::Notice { task, notice } => {
                let id = self.run.plan.tasks[task].id.as_str();
                self.run.record.task_event(id, notice_event(&notice))?;
                if let Some(line) = notice_line(&notice) {
                    self.run.ui.note(Verb::Retrying, &format!("{id}: {line}"));
                }
            }
            Message::Needs { goals, result } => {
                if let Some(g) = &mut self.goals {
                    g.needs_inferred(&mut self.run, &goals, result)?;
                }
            }
            Message::Planned { goal, result } => {
                if let Some(g) = &mut self.goals
                    && let Some(fault) = g.planned(&mut self.run, goal, result, self.stopping)?
                {
                    self.fault.get_or_insert(fault);
                }
            }
            Message::GoalNotice { notice } => {
                self.run.record.run_event(notice_event(&notice))?;
                if let Some(line) = notice_line(&notice) {
                    self.run
                        .ui
                        .note(Verb::Retrying, &format!("planning: {line}"));
                }
            }
            Message::Endpoint(gone) => {
                if let Some(fault) = self.pauses.endpoint_checked(&mut self.run, gone)? {
                    self.fault.get_or_insert(fault);
                }
            }
            Message::Escalated { task, hook } => {
                self.run.hooks_running -= 1;
                let escalated = RunEvent::Escalated { hook };
                match task {
                    Some(id) => self.run.record.task_event(&id, escalated)?,
                    None => self.run.record.run_event(escalated)?,
                }
            }
            // Also when the run was already winding down (a spent budget, a long usage limit):
            // a Ctrl-C then stops the running attempts too.
            Message::Signal if !self.signalled => {
                self.signalled = true;
                let why = format!(
                    "{} running task(s); press Ctrl-C again to kill now",
                    self.running
                );
                self.stop(workers, &why);
            }
            Message::Signal => {}
        }
        Ok(())
    }

    /// Nothing new starts; what runs finishes.
    fn wind_down(&mut self, why: &str) {
        self.stopping = true;
        if let Some(g) = &self.goals {
            g.stop();
        }
        self.run.ui.note(Verb::Stopping, why);
    }

    /// Nothing new starts and what runs is stopped.
    fn stop(&mut self, workers: &Workers, why: &str) {
        workers.stop_all();
        self.wind_down(why);
    }

    /// The loop ran out of work, or stopped: unfinished tasks are marked for a resume, or
    /// what can never run is named.
    fn end(&mut self) -> anyhow::Result<Ending> {
        let run = &mut self.run;
        if self.stopping {
            // Out with workers: their results wait on the remote for a resume.
            let out = self
                .coordinator
                .as_mut()
                .map(remote::Coordinator::left)
                .unwrap_or_default();
            run.interrupt_unfinished(out)?;
            return Ok(if self.signalled {
                Ending::Interrupted
            } else if let Some(fault) = &self.fault {
                Ending::Faulted(fault.clone())
            } else if self.merges.halted().is_some() {
                Ending::Halted
            } else if self.budget.spent() {
                Ending::OverBudget
            } else {
                Ending::Interrupted
            });
        }
        // Nothing runs and nothing can become ready: whatever has not ended is stuck, and
        // waiting for it would be forever.
        let mut stuck = match &mut self.goals {
            Some(g) => g.report_stuck(run)?,
            None => Vec::new(),
        };
        stuck.extend(run.skip_stuck()?);
        if let Some(g) = &mut self.goals {
            g.settle(run)?;
        }
        if !stuck.is_empty() {
            run.record.run_event(RunEvent::Deadlock {
                stuck: stuck.clone(),
            })?;
            for line in &stuck {
                run.ui.note(Verb::Deadlock, line);
            }
        }
        Ok(Ending::Finished)
    }

    /// The gate's next run takes a slot before any task does.
    fn start_gate(&mut self, workers: &Workers) -> anyhow::Result<()> {
        if self.running >= self.run.settings.jobs {
            return Ok(());
        }
        if let Some(job) = self.merges.next_gate(&mut self.run)? {
            self.spawn(workers, job, Mode::Read);
        }
        Ok(())
    }

    fn start_resolvers(&mut self, workers: &Workers) -> anyhow::Result<()> {
        let settings = self.run.settings;
        while self.running < settings.jobs && self.writers_running < settings.max_writers {
            let Some(job) = self.merges.next_resolver(&mut self.run)? else {
                break;
            };
            self.spawn(workers, job, Mode::Write);
        }
        Ok(())
    }

    /// Ready tasks start in this process's free slots; spread over machines, the rest are
    /// published for the workers.
    fn start_ready(&mut self, workers: &Workers) -> anyhow::Result<()> {
        let settings = self.run.settings;
        let mut held = Vec::new();
        loop {
            let local = self.running < settings.local_jobs;
            if !local && self.coordinator.is_none() {
                break;
            }
            let Some(i) = self.run.dag.pop_ready() else {
                break;
            };
            let mode = self.run.plan.tasks[i].mode;
            if local && (mode == Mode::Read || self.writers_running < settings.max_writers) {
                if !self.members.admit(&mut self.run, i, Instant::now())? {
                    held.push(i);
                    continue;
                }
                let job = attempt::prepare(
                    &mut self.run,
                    &mut self.checkouts,
                    self.merges.tip(),
                    i,
                    self.running + 1,
                )?;
                self.spawn(workers, job, mode);
            } else if let Some(c) = &mut self.coordinator {
                c.publish(&mut self.run, self.merges.tip(), i)?;
            } else {
                held.push(i);
            }
        }
        self.run.dag.requeue(held);
        Ok(())
    }

    /// Hands the display the run as it is now.
    fn show(&mut self) {
        let out = self
            .coordinator
            .as_ref()
            .map_or(0, remote::Coordinator::out);
        view::show(
            &mut self.run,
            self.running + out,
            self.merges.gate_running(),
        );
    }

    fn spawn(&mut self, workers: &Workers, job: Job, mode: Mode) {
        self.running += 1;
        if mode == Mode::Write {
            self.writers_running += 1;
        }
        workers.spawn(job);
    }

    /// The slot of task `i`'s attempt in this process's pool is free again.
    fn release(&mut self, i: usize) {
        self.run.ports.release(i);
        self.run.scratch.release(i);
        self.members.release(i);
        self.running -= 1;
        if self.run.plan.tasks[i].mode == Mode::Write {
            self.writers_running -= 1;
        }
    }

    /// Takes an attempt's report (from this process's pool or a worker on another machine):
    /// records it, then merges, retries, or releases dependents.
    fn finish(&mut self, report: Report) -> anyhow::Result<()> {
        let i = report.task;
        let mode = self.run.plan.tasks[i].mode;
        self.run.slots[i].started = None;
        if self.run.dag.state(i) == State::Resolving {
            // A fault outside the resolver stops the run as it stops any attempt's.
            if let Verdict::Fault(fault) = &report.verdict {
                self.fault.get_or_insert_with(|| fault.clone());
            }
            return self
                .merges
                .finish_resolver(&mut self.run, &mut self.checkouts, report);
        }
        if let Some(commit) = self.run.slots[i].snapshot.take() {
            self.checkouts
                .release_snapshot(&commit, self.merges.tip())?;
        }
        let slot = &mut self.run.slots[i];
        // The session the next attempt continues, or none: the board knows the same.
        if slot.session != report.session {
            slot.session.clone_from(&report.session);
            let id = self.run.plan.tasks[i].id.as_str();
            self.run.record.session(id, report.session.as_deref())?;
        }
        let slot = &mut self.run.slots[i];
        slot.tokens += report.tokens;
        self.budget.add(report.tokens);
        if let Some(c) = report.cost {
            slot.cost = Some(slot.cost.unwrap_or(0.0) + c);
        }
        let totals = slot.totals();
        let id = self.run.plan.tasks[i].id.to_string();
        match report.verdict {
            Verdict::Succeeded {
                ref result,
                ref commit,
            } => {
                let writes = mode == Mode::Write;
                let run = &mut self.run;
                let settings = run.settings;
                let runnable = |t: &Task| super::spawn::runnable(settings, t);
                let spawned = run.spawns.join(
                    &mut run.plan,
                    i,
                    report.spawn.as_ref(),
                    Instant::now(),
                    &runnable,
                );
                run.record.attempt_succeeded(
                    &id,
                    &report,
                    totals,
                    result,
                    commit.as_ref(),
                    writes,
                    &spawned,
                )?;
                run.joined(&id, &spawned)?;
                run.slots[i].result = Some(result.clone());
                run.slots[i].took = Some(report.elapsed);
                if let Some(c) = commit {
                    run.slots[i].commit = Some(c.clone());
                    run.dag.on(&run.plan, Transition::Committed(i));
                    self.merges.merge(run, &mut self.checkouts, i)?;
                } else {
                    if writes {
                        self.merges.clean_up(run, &mut self.checkouts, i, false)?;
                    }
                    let text = writes.then_some("no changes");
                    run.ui
                        .task_finished(&id, Verb::Finished, report.elapsed, text);
                    run.transition(Transition::Done(i))?;
                }
            }
            Verdict::Limited(ref limit) => {
                if !self
                    .members
                    .limited(&mut self.run, &id, &report, limit, totals)?
                {
                    self.pauses
                        .limited(&mut self.run, &id, &report, limit, totals)?;
                }
            }
            Verdict::Interrupted => {
                let run = &mut self.run;
                run.record.attempt_interrupted(&id, &report, totals)?;
                run.dag.on(&run.plan, Transition::Interrupted(i));
                run.ui
                    .task_finished(&id, Verb::Interrupted, report.elapsed, None);
            }
            Verdict::Failed(ref why) => {
                self.members.failed(&self.run, i, Instant::now());
                retry::failed(&mut self.run, self.stopping, &id, &report, why, totals)?;
            }
            Verdict::Fault(ref fault) if fault.kind == FaultKind::Unreachable => {
                let faulted = self.fault.is_some();
                let stop = self.pauses.endpoint_away(
                    &mut self.run,
                    &self.tx,
                    faulted,
                    &id,
                    &report,
                    fault,
                    totals,
                )?;
                if let Some(stop) = stop {
                    self.fault.get_or_insert(stop);
                }
            }
            Verdict::Fault(ref fault) => {
                let run = &mut self.run;
                run.record.attempt_faulted(
                    &id,
                    &report,
                    totals,
                    fault.kind.as_str(),
                    &fault.why,
                )?;
                run.dag.on(&run.plan, Transition::Interrupted(i));
                run.ui
                    .task_finished(&id, Verb::Interrupted, report.elapsed, Some(&fault.why));
                self.fault.get_or_insert_with(|| fault.clone());
            }
        }
        Ok(())
    }
}
