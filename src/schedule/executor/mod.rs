//! The one place that carries out the core's effects: it prepares and starts attempts on the
//! pool, makes merges in git and hands their outcome back, writes the board, tells the
//! terminal, and runs the threads that plan goals, watch the endpoint and escalate. Decides
//! nothing the core decides. The run's loop (`run`) and a worker's (`worker`) share this
//! executor and the core; what differs is what feeds them (the pool and the planner, or the
//! remote's claims).

mod attempt;
mod endpoint;
mod forecast;
mod gate;
mod goals;
mod merge;
mod pick;
mod record;
mod remote;
mod resolver;
mod run;
mod view;
mod watch;
mod worker;

use std::collections::{BTreeMap, VecDeque};
use std::sync::mpsc::Sender;
use std::time::Instant;

use serde_json::json;

use self::endpoint::EndpointWatch;
use self::goals::Planner;
use self::record::{Failure, Recorder};
use self::remote::Coordinator;
use super::checkouts::Checkouts;
use super::core::dag::State;
use super::core::{Carry, Carrying, Core, Effect, Input, Rec, Undone};
use super::job::Workers;
use super::ports::Ports;
use super::scratch::Scratch;
use super::{Layout, Message, Settings};
use crate::agent::{self, Fault, Watchdog};
use crate::git::{CommitId, Repo};
use crate::store::RunEvent;
use crate::ui::{Told, Ui};

pub(super) use attempt::NO_DEPS_DIR;
pub(super) use gate::gate_checkout_path;
pub use goals::{GoalRun, Recall};
pub use run::Dispatcher;
pub use worker::{WorkerEnd, WorkerSetup, work};

/// What the loop writes to and reaches through: the board, the terminal, the repository, and
/// the run's settings and places.
struct Outlets<'a> {
    record: Recorder<'a>,
    ui: &'a mut Ui,
    repo: &'a Repo,
    settings: &'a Settings,
    layout: &'a Layout,
}

/// The executor's own resources, shared by the run's loop and a worker's.
struct Exec<'a> {
    out: Outlets<'a>,
    checkouts: Checkouts,
    /// The blocks of ports running attempts hold.
    ports: Ports,
    /// The attempts' own temporary directories.
    scratch: Scratch,
    /// Stops the run's processes: its attempts and the escalation hook.
    watchdog: Watchdog,
    /// The loop's channel, for what runs on threads of its own.
    tx: Sender<Message>,
    /// The snapshot each running reader holds.
    snapshots: BTreeMap<usize, CommitId>,
    /// The gate's run going on, as the display shows it, and since when.
    gate_shown: Option<(String, Instant)>,
    /// The threads that ask the model about a multi-goal run's goals.
    planner: Option<Planner>,
    /// A model endpoint that stopped answering, while it is checked.
    endpoint: EndpointWatch,
    /// Spread over machines: the tasks out with workers.
    coordinator: Option<Coordinator>,
    /// The user's checkout, looked at as attempts start and end.
    watch: watch::Watch,
    /// In a pass: what its records and starts not yet committed would leave undone, lost.
    batch: Option<Vec<Undone>>,
    /// What a commit that failed lost, for the core to hear with the failure.
    lost: Vec<Undone>,
}

impl<'a> Exec<'a> {
    fn new(
        out: Outlets<'a>,
        watchdog: Watchdog,
        tx: Sender<Message>,
        planner: Option<Planner>,
        coordinator: Option<Coordinator>,
    ) -> anyhow::Result<Self> {
        let (settings, layout) = (out.settings, out.layout);
        // Attempts' temporary directories a killed swarm left.
        let _ = std::fs::remove_dir_all(layout.run_dir.join("tmp"));
        Ok(Self {
            checkouts: Checkouts::open(
                &layout.worktrees,
                settings.max_writers,
                out.repo.workdir(),
                &settings.prepare.include,
            )?,
            ports: Ports::for_run(),
            scratch: Scratch::new(&layout.run_dir.join("tmp")),
            watchdog,
            tx,
            snapshots: BTreeMap::new(),
            gate_shown: None,
            planner,
            endpoint: EndpointWatch::default(),
            coordinator,
            watch: watch::Watch::default(),
            batch: None,
            lost: Vec::new(),
            out,
        })
    }

    /// Says `t` on the terminal, and in the mirror's chats what they are told of: the pauses
    /// at a usage limit, the run's or a pool's.
    fn tell(&mut self, t: &Told) {
        self.out.ui.tell(t);
        let Some(mirror) = &self.out.settings.mirror else {
            return;
        };
        let run = &self.out.layout.run;
        match t {
            Told::PausedForLimit(wait) => mirror.send(crate::mirror::paused(run, None, *wait)),
            Told::PoolPaused { pool, wait } => {
                mirror.send(crate::mirror::paused(run, Some(pool), *wait));
            }
            _ => {}
        }
    }

    /// A reader's attempt holds the snapshot of `commit` while it runs.
    fn hold_snapshot(&mut self, i: usize, commit: CommitId) {
        self.snapshots.insert(i, commit);
    }

    /// Task `i`'s attempt in this process ended: its ports, temporary directory and snapshot
    /// are free again (the snapshot goes with its last reader, unless it is of `tip`; with no
    /// tip, as on a worker, it stays for the next reader of its commit).
    fn release(&mut self, i: usize, tip: Option<&CommitId>) -> anyhow::Result<()> {
        self.ports.release(i);
        self.scratch.release(i);
        match self.snapshots.remove(&i) {
            Some(commit) => self
                .checkouts
                .release_snapshot(&commit, tip.unwrap_or(&commit)),
            None => Ok(()),
        }
    }

    /// The attempt `key` (a task, or the gate's) of this process ended with `report`: a
    /// change to the user's checkout while it ran makes it a fault of the environment, and
    /// nothing of it is kept (see `watch`). Call after `watch.ended`, once for the reports
    /// of a pass.
    fn checked(&mut self, key: usize, mut report: super::job::Report) -> super::job::Report {
        use super::job::Verdict;
        let Some(verdict) = self.watch.verdict(key, self.out.repo.workdir()) else {
            return report;
        };
        if !matches!(report.verdict, Verdict::Fault(_)) {
            report.verdict = verdict;
            report.session = None;
        }
        report
    }

    /// A pass of the loop begins: its records go to the board in one commit (`end_pass`),
    /// and the attempts it starts wait for it.
    fn begin_pass(&mut self, workers: &Workers) -> anyhow::Result<()> {
        self.watch.next_pass();
        self.out.record.begin_batch()?;
        workers.hold();
        self.batch = Some(Vec::new());
        Ok(())
    }

    /// Commits what the pass recorded so far, and starts the attempts held for it; the pass
    /// goes on. A commit that fails loses all of it: the attempts held never start, and what
    /// was lost is kept for the core (`lost`).
    fn make_durable(&mut self, workers: &Workers) -> anyhow::Result<()> {
        let Some(batch) = &mut self.batch else {
            return Ok(());
        };
        match self.out.record.make_durable() {
            Ok(()) => {
                batch.clear();
                workers.flush();
                Ok(())
            }
            Err(e) => {
                self.lost.append(batch);
                workers.drop_held();
                Err(e)
            }
        }
    }

    /// The pass ends: what it recorded is committed, then the attempts it started begin. A
    /// commit that fails starts none of them, and the core hears what was lost; the failure
    /// is returned, to stop the run.
    fn end_pass(&mut self, core: &mut Core<'_>, workers: &Workers) -> anyhow::Result<()> {
        let Some(mut batch) = self.batch.take() else {
            return Ok(());
        };
        match self.out.record.commit_batch() {
            Ok(()) => {
                workers.release();
                Ok(())
            }
            Err(e) => {
                workers.drop_held();
                workers.release();
                batch.append(&mut self.lost);
                for undone in batch {
                    self.feed(core, Input::Undone(undone), workers)?;
                }
                Err(e)
            }
        }
    }

    /// Hands `input` to the core and carries out what it says.
    fn feed(&mut self, core: &mut Core<'_>, input: Input, workers: &Workers) -> anyhow::Result<()> {
        let fx = core.on(input, Instant::now());
        self.carry_out(core, fx, workers)
    }

    /// Carries out the core's effects in order; what some of them bring back (a merge's
    /// outcome, the queue's goals) goes to the core in turn, and so on until nothing is left.
    /// A fault of the machine met carrying one out stops the run: after it only what tells
    /// the board and the terminal is carried out (a record the board cannot take then is left
    /// to it), and the core is told what was left undone, then of the fault.
    fn carry_out(
        &mut self,
        core: &mut Core<'_>,
        fx: Vec<Effect>,
        workers: &Workers,
    ) -> anyhow::Result<()> {
        let mut inputs = VecDeque::new();
        let mut fx = fx;
        loop {
            let mut carrying = Carrying::default();
            for effect in fx {
                if carrying.admits(core, &effect) != Carry::Now {
                    continue;
                }
                let stakes = Carrying::stakes(core, &effect);
                let rewind = matches!(effect, Effect::Rewind { .. });
                // Only a record and a start held for the pass's commit are lost with it: what
                // acts beyond the board was done after a commit.
                let lost_with_commit = matches!(
                    effect,
                    Effect::Record(_)
                        | Effect::Start { .. }
                        | Effect::StartResolver { .. }
                        | Effect::StartGate { .. }
                );
                let Err(e) = self.apply(core, effect, workers, &mut inputs) else {
                    if rewind {
                        carrying.rewound(&inputs);
                    }
                    if let (Some(batch), Some(undone), true) =
                        (&mut self.batch, stakes.0, lost_with_commit)
                    {
                        batch.push(undone);
                    }
                    continue;
                };
                // Any other error is swarm's own, and ends the run.
                let fault = fault_of(self, e)?;
                carrying.lost(std::mem::take(&mut self.lost));
                carrying.failed(stakes, fault);
            }
            carrying.into_inputs(&mut inputs);
            let Some(input) = inputs.pop_front() else {
                return Ok(());
            };
            fx = core.on(input, Instant::now());
        }
    }

    /// Carries out one effect; an input it brings back joins `inputs`.
    fn apply(
        &mut self,
        core: &mut Core<'_>,
        effect: Effect,
        workers: &Workers,
        inputs: &mut VecDeque<Input>,
    ) -> anyhow::Result<()> {
        if effect.acts_beyond_the_board() {
            // What it does outside the board (a ref moved, a hook run, an attempt offered to
            // another machine) must never be ahead of what the board has.
            self.make_durable(workers)?;
        }
        match effect {
            Effect::Start {
                task,
                attempt,
                tip,
                running,
            } => {
                let job = if core.plan.tasks[task].picks() {
                    pick::job(core, self, task, attempt)?
                } else {
                    attempt::prepare(core, self, task, attempt, &tip, running)?
                };
                self.watch.started(self.out.repo, task);
                workers.spawn(job);
            }
            Effect::Publish { task, attempt, tip } => {
                if let Some(c) = &mut self.coordinator {
                    c.publish(core, &mut self.out, task, attempt, &tip)?;
                }
            }
            Effect::StartResolver { task, tip } => {
                let job = resolver::job(core, self, task, &tip)?;
                self.watch.started(self.out.repo, task);
                workers.spawn(job);
            }
            Effect::StartGate {
                number,
                probe,
                tip,
                batch,
            } => {
                let batch: Vec<String> = batch.iter().map(|&i| core.id(i).to_owned()).collect();
                let (job, shown) = gate::job(self, number, &probe, &tip, &batch)?;
                self.gate_shown = Some(shown);
                self.watch.started(self.out.repo, gate::GATE_KEY);
                workers.spawn(job);
            }
            Effect::Merge { task, tip, onto } => {
                let outcome = merge::merge(core, self, task, &tip, onto)?;
                inputs.push_back(Input::Merge { task, outcome });
            }
            Effect::Forecast { writers, tip } => forecast::look(core, self, &writers, &tip),
            Effect::Note { task, text } => {
                if let Some(dir) = self.scratch.held(task) {
                    use std::io::Write as _;
                    let mut notes = std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(dir.join(super::NOTES))?;
                    notes.write_all(text.as_bytes())?;
                }
            }
            Effect::CleanUp { task, merged, tip } => {
                merge::clean_up(core, self, task, merged, &tip)?;
            }
            Effect::DropSnapshots(tip) => self.checkouts.drop_stale_snapshots(&tip)?,
            Effect::Park { task, hold } => merge::park(core, self, task, &hold)?,
            Effect::Escalate(info) => self.escalate(None, info)?,
            Effect::Rewind { from, to, event } => {
                if let Some(moved) = merge::rewind(self, &from, &to, event)? {
                    inputs.push_back(Input::Moved(Box::new(moved)));
                }
            }
            Effect::Record(rec) => {
                let follows_git = rec.follows_git();
                self.record(rec)?;
                if follows_git {
                    self.make_durable(workers)?;
                }
            }
            Effect::Tell(told) => self.tell(&told),
            Effect::StopAttempts => workers.stop_all(),
            Effect::WatchEndpoint(wait) => {
                if let Some(client) = &self.out.settings.llm {
                    self.endpoint.away(client, wait, &self.tx)?;
                }
            }
            Effect::InferNeeds(goals) => {
                if let Some(p) = &self.planner {
                    p.infer(core, goals);
                }
            }
            Effect::PlanGoal(gi) => {
                if let Some(p) = &self.planner {
                    p.plan(core, self.out.repo, gi);
                }
            }
            Effect::StopPlanning => {
                if let Some(p) = &self.planner {
                    p.stop();
                }
            }
            Effect::PollQueue => {
                let taken = self.out.record.take_queue()?;
                if let Some(p) = &mut self.planner {
                    p.recall(self.out.record.board(), &taken)?;
                }
                inputs.push_back(Input::Queued(taken));
            }
            Effect::WritePlan => crate::disk::write(
                &self.out.layout.run_dir.join("plan.jsonl"),
                core.plan.to_jsonl(),
            )?,
            Effect::KeptCheckout(i) => {
                let id = core.id(i).to_owned();
                let path = self.out.layout.worktree(&id, super::Checkout::Task);
                self.tell(&Told::KeptCheckout { id, path });
            }
        }
        Ok(())
    }

    /// Writes `rec` to the board.
    fn record(&mut self, rec: Rec) -> anyhow::Result<()> {
        let r = &mut self.out.record;
        match rec {
            Rec::Run(e) => r.run_event(e),
            Rec::Task(id, e) => r.task_event(&id, e),
            Rec::Session(id, session) => r.session(&id, session.as_deref()),
            Rec::Spent { id, totals } => r.spent(&id, totals),
            Rec::Succeeded {
                id,
                report,
                totals,
                result,
                commit,
                writes,
                joined,
                kept,
                start,
            } => r.attempt_succeeded(
                &id,
                &report,
                totals,
                &result,
                commit.as_ref(),
                writes,
                &joined,
                kept,
                start.as_ref(),
            ),
            Rec::Failed {
                id,
                report,
                totals,
                failures,
                status,
                why,
                retry,
            } => {
                let failure = Failure {
                    failures,
                    status,
                    why: &why,
                    retry,
                };
                r.attempt_failed(&id, &report, totals, &failure)
            }
            Rec::Interrupted { id, report, totals } => r.attempt_interrupted(&id, &report, totals),
            Rec::Limited {
                id,
                report,
                totals,
                message,
                wait_ms,
                stops_run,
            } => r.attempt_limited(&id, &report, totals, &message, wait_ms, stops_run),
            Rec::Faulted {
                id,
                report,
                totals,
                kind,
                why,
            } => r.attempt_faulted(&id, &report, totals, kind, &why),
            Rec::MarkInterrupted(ids) => {
                let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
                r.interrupted(&ids)
            }
            Rec::Skipped(skips) => {
                let named: Vec<(&str, &str)> = skips
                    .iter()
                    .map(|(id, why)| (id.as_str(), why.as_str()))
                    .collect();
                r.skipped(&named)
            }
            Rec::Merged {
                id,
                commit,
                before,
                after,
                ms,
            } => r.merged(&id, &commit, &before, &after, ms),
            Rec::MergeRecovered { id, commit } => r.merge_recovered(&id, &commit),
            Rec::TipRecovered { before, after } => r.tip_recovered(&before, &after),
            Rec::Resolved {
                id,
                commit,
                from,
                paths,
                rung,
            } => {
                let tool = (rung == crate::schedule::Rung::Structural)
                    .then_some(self.out.settings.structural.as_ref())
                    .flatten()
                    .map(|s| s.version.clone());
                r.resolved(&id, &commit, &from, paths, rung, tool)
            }
            Rec::GatePassed { tip, event } => r.gate_passed(&tip, event),
            Rec::MergeAgain(ids) => {
                let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
                r.merge_again(&ids)
            }
            Rec::GoalStatus {
                goal,
                status,
                reason,
                event,
            } => r.goal_status(&goal, status, reason.as_deref(), event),
            Rec::GoalNeeds { rows, events } => r.goal_needs(&rows, events),
            Rec::TasksAdded(specs) => r.tasks_added(&specs),
        }
    }

    /// Tells a human, once: the event, and the `--on-escalate` hook, which runs on a thread of
    /// its own under the run's watchdog (Ctrl-C stops it like any attempt), so merges and
    /// messages go on meanwhile; its end comes back as a message. `task` is `None` for a
    /// problem of the run as a whole.
    fn escalate(&mut self, task: Option<&str>, mut info: serde_json::Value) -> anyhow::Result<()> {
        let (settings, layout) = (self.out.settings, self.out.layout);
        info["run"] = layout.run.clone().into();
        info["task"] = task.into();
        if let Some(delivery) = &settings.delivery {
            info["deliver"] = delivery.clone();
        }
        // The chats are told what the hook is given.
        if let Some(mirror) = &settings.mirror {
            mirror.send(crate::mirror::words::escalated(&info));
        }
        let Some(cmd) = settings.on_escalate.clone() else {
            let escalated = RunEvent::Escalated {
                hook: serde_json::Value::Null,
            };
            return match task {
                Some(id) => self.out.record.task_event(id, escalated),
                None => self.out.record.run_event(escalated),
            };
        };
        let log = layout
            .run_dir
            .join("attempts")
            .join(format!("{}.escalate.log", task.unwrap_or("(run)")));
        let (cwd, watchdog, tx, cap) = (
            self.out.repo.workdir().to_owned(),
            self.watchdog.clone(),
            self.tx.clone(),
            settings.transcript_cap,
        );
        let task = task.map(str::to_owned);
        std::thread::Builder::new()
            .name("swarm-escalate".into())
            .spawn(move || {
                let outcome = crate::panic::catch(|| {
                    agent::run_hook(&cmd, &info.to_string(), &cwd, &log, cap, &watchdog)
                })
                .unwrap_or_else(|why| format!("internal error in swarm: {why}"));
                let hook = json!({ "command": cmd, "outcome": outcome });
                let _ = tx.send(Message::Escalated { task, hook });
            })?;
        Ok(())
    }

    /// Processes still carrying the run's id when none of its attempts runs were left behind
    /// out of reach of their process groups: they are stopped, recorded and told.
    fn stop_strays(&mut self) -> anyhow::Result<()> {
        let (settings, layout) = (self.out.settings, self.out.layout);
        let strays = crate::agent::stray::find(&layout.run);
        if strays.is_empty() {
            return Ok(());
        }
        crate::agent::stray::stop(&strays, settings.kill_grace);
        let processes: Vec<String> = strays
            .iter()
            .map(|s| format!("{} {}", s.pid, s.command))
            .collect();
        self.tell(&Told::Strays(processes.clone()));
        self.out
            .record
            .run_event(RunEvent::StraysStopped { processes })
    }
}

/// `e`, met carrying out an effect or taking a message in: a fault of the machine (a full
/// disk, the board's included), which stops the run; any other error as it is.
fn fault_of(ex: &Exec<'_>, e: anyhow::Error) -> anyhow::Result<Fault> {
    let e = ex.out.record.name_full(e);
    Fault::of_error(&e).ok_or(e)
}

/// The deps of task `i` that ended without a result for it (failed, skipped or parked), each
/// with why, as a task that runs on what finished (a reducer) is told of them.
fn missing_deps(
    core: &Core<'_>,
    record: &Recorder<'_>,
    i: usize,
) -> anyhow::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for d in core.plan.deps(i) {
        let id = core.id(d);
        let state = core.dag.state(d);
        let why = match &core.slots[d].missing {
            Some(why) => why.clone(),
            None if state.ended_badly() => {
                let what = match state {
                    State::Failed => "failed",
                    State::Parked => "parked",
                    _ => "skipped",
                };
                match record.task_error(id)? {
                    Some(e) => format!("{what}: {e}"),
                    None => what.to_owned(),
                }
            }
            None => continue,
        };
        out.push((id.to_owned(), why));
    }
    Ok(out)
}

/// The paths a writer's commit changed, once it has one.
fn changed_paths(core: &Core<'_>, repo: &Repo, i: usize) -> Option<Vec<String>> {
    let s = &core.slots[i];
    let (Some(from), Some(to)) = (&s.start_commit, &s.commit) else {
        return None;
    };
    crate::git::changed_paths(repo.common_dir(), from, to).ok()
}

/// What confines the processes of an attempt in `cwd` (which it writes when `writes_checkout`)
/// with `tmp` as its `TMPDIR` and `env` (its block of ports in `SWARM_PORTS`): besides those, it
/// may write `also_writes` and read `also_reads`. Asked only when the run's tasks are confined
/// (`Confiner::confines`).
fn confined(
    out: &Outlets<'_>,
    writes_checkout: bool,
    cwd: &std::path::Path,
    tmp: &std::path::Path,
    env: &[(String, String)],
    also_writes: Vec<std::path::PathBuf>,
    also_reads: Vec<std::path::PathBuf>,
) -> super::job::Confined {
    use crate::agent::confine::{Own, Places};
    let ports = env
        .iter()
        .find(|(k, _)| k == "SWARM_PORTS")
        .and_then(|(_, v)| v.split_once('-'))
        .and_then(|(a, b)| Some(a.parse::<u16>().ok()?..=b.parse::<u16>().ok()?))
        .map(Iterator::collect)
        .unwrap_or_default();
    let layout = out.layout;
    super::job::Confined {
        confiner: std::sync::Arc::clone(&out.settings.confine),
        places: Places {
            git_dir: out.repo.common_dir().to_owned(),
            checkouts: layout
                .worktrees
                .parent()
                .unwrap_or(&layout.worktrees)
                .to_owned(),
        },
        own: Own {
            checkout: cwd.to_owned(),
            writes_checkout,
            tmp: Some(tmp.to_owned()),
            writes: also_writes,
            reads: also_reads,
            ports,
        },
    }
}
