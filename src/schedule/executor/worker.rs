//! `swarm worker`: the loop on a machine that runs a remote run's tasks (see `crate::remote`).
//! It claims published attempts with a lease, runs each exactly as a local run runs an
//! attempt (the same preparation, pool, checkouts and checks), renews the leases while they
//! run, and pushes each result together with the release of its lease, so that a worker whose
//! lease was taken from it lands nothing. It owns the remote's line itself: everything it does
//! waits on it anyway.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::super::core::{Core, DepFacts, Input};
use super::super::job::{Report, Verdict, Workers};
use super::super::{Checkout, Layout, Message, Settings, notice_line, outcome};
use super::attempt;
use super::record::Recorder;
use super::{Exec, Outlets};
use crate::agent::Watchdog;
use crate::git::{CommitId, Repo};
use crate::plan::{Mode, Plan};
use crate::remote::{self, Expect, Key, Kind, Pushed, Records, Transport, Update};
use crate::store::Board;
use crate::ui::{Told, Ui};

/// How a worker is set up.
pub struct WorkerSetup {
    pub transport: Transport,
    /// Its name in leases and results.
    pub id: String,
    /// A lease not renewed for this long is the coordinator's to take back.
    pub lease: Duration,
    pub poll: Duration,
    /// The key the run's records are signed with: this worker signs its leases and results
    /// with it, and takes only the attempts signed with it.
    pub key: Option<Key>,
}

/// How the worker's loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerEnd {
    /// The run has no work left (it ended on the remote).
    Finished,
    /// A signal stopped it; the attempts it held were given back.
    Stopped,
}

/// An attempt this worker claimed.
struct Held {
    generation: u32,
    lease: CommitId,
    renewal: u64,
    renewed: Instant,
    /// Another worker holds it now: its result will not be taken.
    lost: bool,
}

struct Worker<'a> {
    core: Core<'a>,
    ex: Exec<'a>,
    setup: &'a WorkerSetup,
    held: BTreeMap<usize, Held>,
    index: std::collections::HashMap<String, usize>,
    /// The remote does not answer: why.
    away: Option<String>,
    /// A signal came: a result the remote does not take is not waited for any longer.
    signalled: Arc<AtomicBool>,
}

/// Works on `plan` (run `layout.run`, published on the remote) until the run has no work
/// left or a signal stops it.
pub fn work(
    plan: Plan,
    repo: &Repo,
    board: &mut Board,
    ui: &mut Ui,
    settings: &Settings,
    layout: &Layout,
    setup: &WorkerSetup,
) -> anyhow::Result<WorkerEnd> {
    let (tx, rx) = mpsc::channel();
    let watchdog = Watchdog::start(settings.kill_grace)?;
    std::fs::create_dir_all(layout.deps.join(attempt::NO_DEPS_DIR))?;
    let index = plan
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.to_string(), i))
        .collect();
    let out = Outlets {
        record: Recorder::new(board, &layout.run),
        ui,
        repo,
        settings,
        layout,
    };
    let mut w = Worker {
        ex: Exec::new(out, watchdog.clone(), tx.clone(), None, None)?,
        core: Core::for_worker(settings, plan, layout.base.clone()),
        setup,
        held: BTreeMap::new(),
        index,
        away: None,
        signalled: Arc::new(AtomicBool::new(false)),
    };
    let signals = {
        let (tx, killer) = (tx.clone(), watchdog.clone());
        let signalled = Arc::clone(&w.signalled);
        crate::signal::handle(
            move || {
                signalled.store(true, Ordering::Relaxed);
                let _ = tx.send(Message::Signal);
            },
            move || killer.kill_all_now(),
        )
    };
    let workers = Workers::start(settings.jobs, tx, watchdog.clone())?;
    let ended = w.drive(&workers, &rx);
    if ended.is_err() {
        watchdog.stop_and_reap();
    }
    drop(signals);
    watchdog.shutdown();
    let closed = w.ex.checkouts.close();
    let _ = std::fs::remove_dir_all(layout.run_dir.join("tmp"));
    let _ = std::fs::remove_dir_all(&layout.deps);
    let ended = ended?;
    closed?;
    Ok(ended)
}

impl Worker<'_> {
    /// The run's records, signed and checked with the key.
    fn records(&self) -> Records<'_> {
        Records {
            repo: self.ex.out.repo,
            run: &self.ex.out.layout.run,
            key: self.setup.key.as_ref(),
        }
    }

    fn drive(
        &mut self,
        workers: &Workers,
        rx: &mpsc::Receiver<Message>,
    ) -> anyhow::Result<WorkerEnd> {
        let prefix = remote::prefix(&self.ex.out.layout.run);
        let mut over = false;
        let mut next_poll = Instant::now();
        let mut fails = 0;
        loop {
            self.ex.watch.next_pass();
            let now = Instant::now();
            let stopping = self.core.stopping();
            if now >= next_poll && !stopping {
                match self.setup.transport.fetch(&prefix) {
                    Ok(refs) => {
                        fails = 0;
                        self.back();
                        over = refs.get("run").is_none_or(|c| {
                            self.records()
                                .read::<remote::RunInfo>(Kind::Run, c)
                                .is_ok_and(|info| info.ended)
                        });
                        self.renew(&refs);
                        if !over {
                            self.claim(&refs, workers)?;
                        }
                        next_poll = Instant::now() + self.setup.poll;
                    }
                    Err(e) => {
                        fails += 1;
                        self.gone(&e.0);
                        next_poll = Instant::now() + remote::transport::retry_wait(fails);
                    }
                }
            }
            if (over || stopping) && self.core.running() == 0 {
                return Ok(if stopping {
                    WorkerEnd::Stopped
                } else {
                    WorkerEnd::Finished
                });
            }
            let wait = next_poll.saturating_duration_since(Instant::now());
            let message = rx.recv_timeout(wait);
            self.ex.watch.next_pass();
            match message {
                Ok(Message::Done(report)) => {
                    self.ex.watch.ended(self.ex.out.repo);
                    let report = self.ex.checked(report.task, report);
                    self.finished(report, workers)?;
                }
                Ok(Message::Signal) => self.ex.feed(&mut self.core, Input::Signal, workers)?,
                Ok(Message::Notice { task, notice }) => {
                    if let Some(line) = notice_line(&notice) {
                        let who = self.core.id(task).to_owned();
                        self.ex.tell(&Told::ModelRetry { who, line });
                    }
                }
                _ => {}
            }
        }
    }

    /// Claims published attempts nobody holds, while this worker has free slots, and starts
    /// those that are still published as claimed once the claims are in.
    fn claim(
        &mut self,
        refs: &BTreeMap<String, CommitId>,
        workers: &Workers,
    ) -> anyhow::Result<()> {
        let run_id = self.ex.out.layout.run.clone();
        let mut wanted = Vec::new();
        let mut learnt = false;
        for (name, oid) in refs {
            if self.held.len() + wanted.len() >= self.ex.out.settings.jobs {
                break;
            }
            let Some(Kind::Ready(task)) = Kind::of(name) else {
                continue;
            };
            if !learnt && !self.index.contains_key(task) {
                // Spawned (or planned) on the coordinator since this worker read the plan.
                learnt = true;
                self.learn_tasks(refs)?;
            }
            let Some(&i) = self.index.get(task) else {
                continue;
            };
            if self.held.contains_key(&i) || refs.contains_key(&format!("lease/{task}")) {
                continue;
            }
            // An attempt that does not read, or (with a key) is not signed with it, is nobody's
            // to run.
            let Ok(job) = self.records().read::<remote::Job>(Kind::Ready(task), oid) else {
                continue;
            };
            if job.version > remote::VERSION
                || job.task != task
                || has_result(self.records(), refs, task, &job)
            {
                continue;
            }
            let lease = self.lease_commit(task, job.generation, 0, false)?;
            wanted.push((i, oid.clone(), job, lease));
        }
        if wanted.is_empty() {
            return Ok(());
        }
        // One push for every claim, each on its own: another worker may be first to some.
        let claims: Vec<Update> = wanted
            .iter()
            .map(|(_, _, job, lease)| Update {
                name: remote::task_ref(&run_id, "lease", &job.task),
                to: Some(lease.clone()),
                expect: Expect::Absent,
            })
            .collect();
        // The remote did not answer: the next poll tries again.
        let Ok(taken) = self.setup.transport.push_each(&claims) else {
            return Ok(());
        };
        let claimed: Vec<_> = wanted
            .into_iter()
            .zip(taken)
            .filter_map(|(claim, taken)| taken.then_some(claim))
            .collect();
        if claimed.is_empty() {
            return Ok(());
        }
        let now = self.setup.transport.fetch(&remote::prefix(&run_id));
        for (i, ready, job, lease) in claimed {
            self.held.insert(
                i,
                Held {
                    generation: job.generation,
                    lease,
                    renewal: 0,
                    renewed: Instant::now(),
                    lost: false,
                },
            );
            let task = job.task.as_str();
            let current = now.as_ref().is_ok_and(|refs| {
                refs.get(&format!("ready/{task}")) == Some(&ready)
                    && !has_result(self.records(), refs, task, &job)
            });
            if !current {
                // Taken, or published anew, while the claim was on its way.
                self.give_back(i);
                continue;
            }
            if let Err(e) = self.start(i, &job, workers) {
                // It could not start here: given back for another worker.
                let fx = self.core.on(Input::NotStarted(i), Instant::now());
                self.ex.carry_out(&mut self.core, fx, workers)?;
                self.ex.tell(&Told::NotStartedHere {
                    id: task.to_owned(),
                    why: format!("{e:#}"),
                });
                self.give_back(i);
            }
        }
        Ok(())
    }

    /// The tasks the run's record on the remote holds beyond this worker's plan join it (the
    /// record's plan begins with this one's: tasks are only ever added at its end).
    fn learn_tasks(&mut self, refs: &BTreeMap<String, CommitId>) -> anyhow::Result<()> {
        let Some(info) = refs
            .get("run")
            .and_then(|c| self.records().read::<remote::RunInfo>(Kind::Run, c).ok())
        else {
            return Ok(());
        };
        let (tasks, problems) = Plan::read(&info.tasks);
        let known = self.core.plan.len();
        if !problems.is_empty() || tasks.len() <= known {
            return Ok(());
        }
        let new = tasks[known..].to_vec();
        let specs: Vec<(String, serde_json::Value)> = new
            .iter()
            .map(|t| (t.id.to_string(), t.to_json()))
            .collect();
        let added = self.core.plan.extend(new)?;
        self.ex.out.record.tasks_added(&specs)?;
        for i in added.clone() {
            self.index.insert(self.core.plan.tasks[i].id.to_string(), i);
        }
        let mut fx = Vec::new();
        self.core.grow(added, &mut fx);
        // Tasks a worker learns only wait for claims: nothing to carry out.
        drop(fx);
        Ok(())
    }

    /// Starts the claimed attempt `job` of task `i` in this worker's pool, from the
    /// published start commit and with its deps' results.
    fn start(&mut self, i: usize, job: &remote::Job, workers: &Workers) -> anyhow::Result<()> {
        let deps = job
            .deps
            .iter()
            .filter_map(|dep| {
                let facts = DepFacts {
                    result: dep.result.clone(),
                    missing: dep.missing.clone(),
                    start: dep.start.as_deref().map(CommitId::new),
                    commit: dep.commit.as_deref().map(CommitId::new),
                };
                Some((*self.index.get(&dep.id)?, facts))
            })
            .collect();
        let claimed = Input::Claimed {
            task: i,
            attempt: job.attempt,
            tip: CommitId::new(&job.start),
            deps,
        };
        let fx = self.core.on(claimed, Instant::now());
        self.ex.carry_out(&mut self.core, fx, workers)
    }

    fn lease_commit(
        &self,
        task: &str,
        generation: u32,
        renewal: u64,
        ended: bool,
    ) -> anyhow::Result<CommitId> {
        let ttl_ms = u64::try_from(self.setup.lease.as_millis()).unwrap_or(u64::MAX);
        let lease = remote::Lease {
            task: task.to_owned(),
            generation,
            worker: self.setup.id.clone(),
            renewal,
            ttl_ms,
            expires_at_ms: u64::try_from(crate::store::now_ms())
                .unwrap_or_default()
                .saturating_add(ttl_ms),
            ended,
        };
        self.records().write(
            Kind::Lease(task),
            &lease,
            None,
            &[],
            &format!("lease of {task} by {}", self.setup.id),
        )
    }

    /// Renews the leases that are a third through their time; one another worker holds now
    /// is lost.
    fn renew(&mut self, refs: &BTreeMap<String, CommitId>) {
        let run_id = self.ex.out.layout.run.clone();
        let due = self.setup.lease / 3;
        let tasks: Vec<usize> = self.held.keys().copied().collect();
        for i in tasks {
            let id = self.core.plan.tasks[i].id.to_string();
            let h = &self.held[&i];
            if h.lost {
                continue;
            }
            if refs.get(&format!("lease/{id}")) != Some(&h.lease) {
                self.lose(i, "the coordinator took its lease back");
                continue;
            }
            if h.renewed.elapsed() < due {
                continue;
            }
            let (generation, renewal, old) = (h.generation, h.renewal + 1, h.lease.clone());
            let Ok(lease) = self.lease_commit(&id, generation, renewal, false) else {
                continue;
            };
            let update = [Update {
                name: remote::task_ref(&run_id, "lease", &id),
                to: Some(lease.clone()),
                expect: Expect::Is(old),
            }];
            match self.setup.transport.push(&update) {
                Ok(Pushed::Done) => {
                    if let Some(h) = self.held.get_mut(&i) {
                        (h.lease, h.renewal, h.renewed) = (lease, renewal, Instant::now());
                    }
                }
                Ok(Pushed::Refused(_)) => self.lose(i, "its lease was taken"),
                // Tried again at the next poll.
                Err(_) => {}
            }
        }
    }

    fn lose(&mut self, i: usize, why: &str) {
        if let Some(h) = self.held.get_mut(&i) {
            h.lost = true;
            let id = self.core.id(i).to_owned();
            self.ex.tell(&Told::LeaseLost {
                id,
                why: why.to_owned(),
            });
        }
    }

    /// An attempt ended: its result is pushed with the release of its lease (refused when
    /// the lease is no longer this worker's), or, when the worker is stopping, its lease is
    /// given back. Its checkout is set aside for the next writer.
    fn finished(&mut self, report: Report, workers: &Workers) -> anyhow::Result<()> {
        let i = report.task;
        let id = self.core.id(i).to_owned();
        self.ex.release(i, None)?;
        if self.core.plan.tasks[i].mode == Mode::Write {
            let path = self.ex.out.layout.worktree(&id, Checkout::Task);
            let at = match &report.verdict {
                Verdict::Succeeded { commit, .. } => commit.clone(),
                _ => None,
            };
            self.ex.checkouts.retire(&path, at.as_ref())?;
        }
        let held = if self.core.stopping() && matches!(report.verdict, Verdict::Interrupted) {
            self.give_back(i);
            None
        } else {
            self.held.remove(&i)
        };
        let Some(held) = held else {
            return self.pushed(report, false, workers);
        };
        let o = outcome::outcome(&id, held.generation, &self.setup.id, &report);
        // Within its cap, and the lines swarm wrote around what the attempt printed.
        let transcript = crate::planted::read_start(
            &report_transcript(self.ex.out.layout, &id, report.attempt),
            self.ex.out.settings.transcript_cap.saturating_add(1 << 20),
        )
        .unwrap_or_default();
        let parents: Vec<CommitId> = o.commit.iter().map(|c| CommitId::new(c)).collect();
        let result = self.records().write(
            Kind::Result(&id),
            &o,
            Some(&transcript),
            &parents,
            &format!("result of {id} attempt {}", report.attempt),
        )?;
        let run_id = self.ex.out.layout.run.clone();
        let ended = self.lease_commit(&id, held.generation, held.renewal + 1, true)?;
        let push = [
            Update {
                name: remote::task_ref(&run_id, "result", &id),
                to: Some(result),
                expect: Expect::Absent,
            },
            Update {
                name: remote::task_ref(&run_id, "lease", &id),
                to: Some(ended),
                expect: Expect::Is(held.lease),
            },
        ];
        // Pushed until the remote answers; once a signal came, the worker stops waiting: its
        // lease runs out and another worker runs the attempt.
        let mut tries = 0;
        let pushed = loop {
            match self.setup.transport.push(&push) {
                Ok(pushed) => {
                    self.back();
                    break Some(pushed);
                }
                Err(e) => {
                    tries += 1;
                    self.gone(&e.0);
                    if self.signalled.load(Ordering::Relaxed) {
                        break None;
                    }
                    std::thread::sleep(remote::transport::retry_wait(tries));
                }
            }
        };
        let (told, taken) = match pushed {
            None => (Told::ResultNotPushed(id), false),
            Some(Pushed::Done) => {
                let status = outcome::status_name(o.status).to_owned();
                (Told::ResultPushed { id, status }, true)
            }
            Some(Pushed::Refused(why)) => (Told::ResultRefused { id, why }, false),
        };
        self.ex.tell(&told);
        self.pushed(report, taken, workers)
    }

    /// This clone's board says how the attempt ended here, as the core says (the
    /// coordinator's board says what became of it).
    fn pushed(&mut self, report: Report, taken: bool, workers: &Workers) -> anyhow::Result<()> {
        self.ex
            .feed(&mut self.core, Input::Pushed { report, taken }, workers)
    }

    /// Gives task `i`'s attempt back: its lease is deleted, if still this worker's, for
    /// another worker to claim.
    fn give_back(&mut self, i: usize) {
        let Some(held) = self.held.remove(&i) else {
            return;
        };
        let id = self.core.plan.tasks[i].id.to_string();
        let release = [Update {
            name: remote::task_ref(&self.ex.out.layout.run, "lease", &id),
            to: None,
            expect: Expect::Is(held.lease),
        }];
        // Not reached: the lease runs out by itself.
        let _ = self.setup.transport.push(&release);
    }

    fn gone(&mut self, why: &str) {
        if self.away.is_none() {
            self.away = Some(why.to_owned());
            self.ex.tell(&Told::RemoteAway {
                remote: self.setup.transport.remote().to_string(),
                why: why.to_owned(),
            });
        }
    }

    fn back(&mut self) {
        if self.away.take().is_some() {
            self.ex
                .tell(&Told::RemoteBack(self.setup.transport.remote().to_string()));
        }
    }
}

/// Whether the remote has the result of `job` of `task` already.
fn has_result(
    records: Records<'_>,
    refs: &BTreeMap<String, CommitId>,
    task: &str,
    job: &remote::Job,
) -> bool {
    refs.get(&format!("result/{task}")).is_some_and(|r| {
        records
            .read::<remote::Outcome>(Kind::Result(task), r)
            .is_ok_and(|o| o.generation == job.generation)
    })
}

/// Where the attempt's transcript is.
fn report_transcript(layout: &Layout, id: &str, attempt: u32) -> std::path::PathBuf {
    layout
        .run_dir
        .join("attempts")
        .join(format!("{id}.{attempt}.log"))
}
