//! The coordinator of a run spread over machines (`--remote`): tasks the run's own slots do
//! not take are published on the remote for workers; their results come back as reports, as
//! if this process's pool had made them; a lease that goes unrenewed for its time is taken
//! back and its attempt published again. A result is taken only for the attempt published,
//! under the lease of the worker it names (seen in the same fetch, ended with it) and, with a
//! key, signed; any other is refused, said so, and removed. See `crate::remote` for the refs.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use anyhow::Context as _;

use std::sync::mpsc::Sender;

use super::super::core::Core;
use super::super::core::dag::State;
use super::super::job::Report;
use super::super::{Checkout, Message, outcome};
use super::attempt;
use super::{Outlets, missing_deps};
use crate::git::{CommitId, Repo};
use crate::plan::Mode;
use crate::remote::link::{Link, Seen};
use crate::remote::{self, Expect, Key, Kind, Records, Transport, Unread, Update};
use crate::store::RunEvent;
use crate::ui::Told;

/// Tries of the remote at the end of the run before its refs are left for `swarm gc --remote`.
const CLOSING_TRIES: u32 = 6;

/// A task published for the workers.
struct Published {
    attempt: u32,
    generation: u32,
    /// The commit of its `ready` ref.
    job: CommitId,
    /// The commit it starts from.
    start: CommitId,
    /// Its lease as last seen: the commit, since when unchanged (by this clock), its time.
    lease: Option<(CommitId, Instant, Duration)>,
}

pub(in crate::schedule) struct Coordinator {
    transport: Transport,
    link: Option<Link>,
    run_id: String,
    published: BTreeMap<usize, Published>,
    /// The last generation each task was published with.
    generations: BTreeMap<usize, u32>,
    /// The refs as last seen, and whether that was after every push handed over.
    refs: BTreeMap<String, CommitId>,
    /// The remote does not answer: why.
    away: Option<String>,
    /// How often the remote is fetched.
    pub(super) poll: Duration,
    /// How many of the plan's tasks the remote's `run` record holds: tasks spawned (or
    /// planned) after it was written are published there before their first attempt.
    plan_published: usize,
    /// The key the run's records are signed with, and the leases and results must be.
    key: Option<Key>,
    /// The leases and results refused, so that each is said once.
    refused: BTreeSet<CommitId>,
}

/// What became of a result found on the remote.
enum Found {
    /// The attempt's: it finishes the task.
    Taken(Box<remote::Outcome>),
    /// Of an earlier publication: removed.
    Stale,
    /// Under the live lease of the worker it names: left for the next fetch (see `Fence`).
    Pending,
    /// Refused: said, and removed.
    Refused(Refusal),
}

/// Why a result is refused, and the worker and generation it names, if it reads.
struct Refusal {
    worker: Option<String>,
    generation: Option<u32>,
    why: String,
}

impl Coordinator {
    pub(super) fn new(repo: &Repo, run: &str, remote: &super::super::Remote) -> Self {
        Self {
            transport: Transport::new(repo.workdir(), &remote.name),
            link: None,
            run_id: run.to_owned(),
            published: BTreeMap::new(),
            generations: BTreeMap::new(),
            refs: BTreeMap::new(),
            away: None,
            poll: remote.poll,
            plan_published: 0,
            key: remote.key.clone(),
            refused: BTreeSet::new(),
        }
    }

    /// The run's records in `repo`, signed and checked with the key.
    fn records<'r>(&'r self, repo: &'r Repo) -> Records<'r> {
        Records {
            repo,
            run: &self.run_id,
            key: self.key.as_ref(),
        }
    }

    /// Publishes the run (its plan and options), takes up the attempts an earlier coordinator
    /// of it published whose results are still to come, and starts the line to the remote.
    /// Waits for the remote while it does not answer. The tasks taken up, out with workers.
    pub(super) fn open(
        &mut self,
        core: &Core<'_>,
        out: &mut Outlets<'_>,
        tx: &Sender<Message>,
    ) -> anyhow::Result<Vec<usize>> {
        let prefix = remote::prefix(&self.run_id);
        let refs = self
            .reach(out, None, |t| t.fetch(&prefix))?
            .unwrap_or_default();
        // A record this coordinator would not write (another key's, a forged one, one of a
        // start with or without a key when this one is not) is replaced.
        let known = refs
            .get("run")
            .and_then(|c| {
                self.records(out.repo)
                    .read::<remote::RunInfo>(Kind::Run, c)
                    .ok()
            })
            .filter(|info| info.signed == self.key.is_some());
        if let Some(info) = known {
            self.plan_published = crate::plan::Plan::read(&info.tasks).0.len();
        } else {
            let update = [run_update(
                self.records(out.repo),
                out.layout,
                &self.info(core, out)?,
            )?];
            self.reach(out, None, |t| t.push(&update))?;
            self.plan_published = core.plan.len();
        }
        let index = index_of(&core.plan);
        let mut adopted = Vec::new();
        for (name, oid) in &refs {
            let Some(kind @ (Kind::Ready(task) | Kind::Lease(task) | Kind::Result(task))) =
                Kind::of(name)
            else {
                continue;
            };
            let Some(&i) = index.get(task) else {
                continue;
            };
            let records = self.records(out.repo);
            let generation = match kind {
                Kind::Ready(_) => records
                    .read::<remote::Job>(kind, oid)
                    .map(|j| (j.generation, Some((j.attempt, CommitId::new(&j.start))))),
                Kind::Lease(_) => records
                    .read::<remote::Lease>(kind, oid)
                    .map(|l| (l.generation, None)),
                _ => records
                    .read::<remote::Outcome>(kind, oid)
                    .map(|o| (o.generation, None)),
            };
            let Ok((generation, attempt)) = generation else {
                continue;
            };
            let g = self.generations.entry(i).or_default();
            *g = (*g).max(generation);
            // An attempt the board has as its last, not ended: still out with the workers.
            if let Some((attempt, start)) = attempt
                && attempt == core.slots[i].attempts
                && attempt > 0
                && matches!(core.dag.state(i), State::Waiting | State::Ready)
            {
                adopted.push(i);
                self.published.insert(
                    i,
                    Published {
                        attempt,
                        generation,
                        job: oid.clone(),
                        start,
                        lease: None,
                    },
                );
            }
        }
        self.refs = refs;
        let tx = tx.clone();
        self.link = Some(Link::start(
            self.transport.clone(),
            prefix,
            self.poll,
            move |seen| {
                let _ = tx.send(Message::Remote(seen));
            },
        ));
        Ok(adopted)
    }

    /// What `op` gets from the remote, once it answers, or after `most` tries (`None`).
    fn reach<T>(
        &mut self,
        out: &mut Outlets<'_>,
        most: Option<u32>,
        op: impl Fn(&Transport) -> Result<T, remote::Unreachable>,
    ) -> anyhow::Result<Option<T>> {
        let mut tried = 0;
        loop {
            match op(&self.transport) {
                Ok(value) => {
                    self.back(out)?;
                    return Ok(Some(value));
                }
                Err(e) => {
                    tried += 1;
                    self.gone(out, &e.0)?;
                    if most.is_some_and(|t| tried >= t) {
                        return Ok(None);
                    }
                    std::thread::sleep(remote::transport::retry_wait(tried));
                }
            }
        }
    }

    fn gone(&mut self, out: &mut Outlets<'_>, why: &str) -> anyhow::Result<()> {
        if self.away.is_none() {
            self.away = Some(why.to_owned());
            out.ui.tell(&Told::RemoteAway {
                remote: self.transport.remote().to_string(),
                why: why.to_owned(),
            });
            out.record.run_event(RunEvent::RemoteAway {
                why: Some(why.to_owned()),
            })?;
        }
        Ok(())
    }

    fn back(&mut self, out: &mut Outlets<'_>) -> anyhow::Result<()> {
        if self.away.take().is_some() {
            out.ui
                .tell(&Told::RemoteBack(self.transport.remote().to_string()));
            out.record.run_event(RunEvent::RemoteAway { why: None })?;
        }
        Ok(())
    }

    /// Publishes task `i`'s attempt `attempt`, from the integration tip `tip`, for the
    /// workers, recorded as started.
    pub(super) fn publish(
        &mut self,
        core: &mut Core<'_>,
        out: &mut Outlets<'_>,
        i: usize,
        attempt: u32,
        tip: &CommitId,
    ) -> anyhow::Result<()> {
        attempt::start_remote(core, out, i, attempt, tip)?;
        self.send(core, out, i, attempt, tip)
    }

    /// The run's record as the remote is to hold it now.
    fn info(&self, core: &Core<'_>, out: &Outlets<'_>) -> anyhow::Result<remote::RunInfo> {
        Ok(remote::RunInfo {
            version: remote::version(self.key.is_some()),
            run: self.run_id.clone(),
            base: out.layout.base.to_string(),
            tasks: core.plan.to_jsonl(),
            options: out.record.options()?,
            ended: false,
            signed: self.key.is_some(),
        })
    }

    /// Pushes task `i`'s attempt as its next generation, taking away the lease and result
    /// of the one before.
    fn send(
        &mut self,
        core: &Core<'_>,
        out: &mut Outlets<'_>,
        i: usize,
        attempt: u32,
        tip: &CommitId,
    ) -> anyhow::Result<()> {
        // A task the workers' plan does not have yet (a spawned one): the run's record with
        // it goes first; a worker that sees the attempt before the record waits for it.
        if core.plan.len() > self.plan_published {
            let update = run_update(self.records(out.repo), out.layout, &self.info(core, out)?)?;
            if let Some(link) = &mut self.link {
                link.push(vec![update]);
            }
            self.plan_published = core.plan.len();
        }
        let id = core.plan.tasks[i].id.to_string();
        let generation = self.generations.get(&i).copied().unwrap_or(0) + 1;
        self.generations.insert(i, generation);
        let mut parents = vec![tip.clone()];
        let missing = if core.plan.tasks[i].lane.runs_on_what_finished() {
            missing_deps(core, &out.record, i)?
        } else {
            Vec::new()
        };
        let deps: Vec<remote::Dep> = core
            .plan
            .deps(i)
            .map(|d| {
                let slot = &core.slots[d];
                if let Some(c) = &slot.commit
                    && !parents.contains(c)
                {
                    parents.push(c.clone());
                }
                let id = core.plan.tasks[d].id.to_string();
                remote::Dep {
                    missing: missing
                        .iter()
                        .find(|(m, _)| *m == id)
                        .map(|(_, why)| why.clone()),
                    id,
                    result: slot.result.clone(),
                    start: slot.start_commit.as_ref().map(ToString::to_string),
                    commit: slot.commit.as_ref().map(ToString::to_string),
                }
            })
            .collect();
        let job = remote::Job {
            version: remote::version(self.key.is_some()),
            task: id.clone(),
            attempt,
            generation,
            start: tip.to_string(),
            deps,
        };
        let commit = self.records(out.repo).write(
            Kind::Ready(&id),
            &job,
            None,
            &parents,
            &format!("swarm task {id} attempt {attempt}"),
        )?;
        self.push_job(&id, &commit);
        self.published.insert(
            i,
            Published {
                attempt,
                generation,
                job: commit,
                start: tip.clone(),
                lease: None,
            },
        );
        out.record.task_event(
            &id,
            RunEvent::Published {
                attempt,
                generation,
            },
        )
    }

    /// Pushes `job` as task `id`'s `ready` ref, taking the lease and result there off with it
    /// (only as last seen: a push that finds them changed is refused, and `seen` pushes it
    /// again from what it finds then).
    fn push_job(&mut self, id: &str, job: &CommitId) {
        let mut updates = vec![Update {
            name: remote::task_ref(&self.run_id, "ready", id),
            to: Some(job.clone()),
            expect: Expect::Any,
        }];
        for kind in ["lease", "result"] {
            if let Some(oid) = self.refs.get(&format!("{kind}/{id}")) {
                updates.push(Update {
                    name: remote::task_ref(&self.run_id, kind, id),
                    to: None,
                    expect: Expect::Is(oid.clone()),
                });
            }
        }
        if let Some(link) = &mut self.link {
            link.push(updates);
        }
    }

    /// Takes in what a fetch of the remote found: the reports of attempts that ended there.
    pub(super) fn seen(
        &mut self,
        core: &Core<'_>,
        out: &mut Outlets<'_>,
        seen: Seen,
    ) -> anyhow::Result<Vec<Report>> {
        if let Some(why) = &seen.away {
            self.gone(out, why)?;
            return Ok(Vec::new());
        }
        self.back(out)?;
        // A fetch made before the last push shows the remote as it was: waited out.
        if self.link.as_ref().is_some_and(|l| seen.after < l.pushes()) {
            return Ok(Vec::new());
        }
        self.refs = seen.refs;
        let mut reports = Vec::new();
        let mut stale = Vec::new();
        let tasks: Vec<usize> = self.published.keys().copied().collect();
        for i in tasks {
            let id = core.plan.tasks[i].id.to_string();
            let (generation, attempt) = (self.published[&i].generation, self.published[&i].attempt);
            // Its publication was refused (what it took off had changed): again, from now.
            let job = self.published[&i].job.clone();
            if self.refs.get(&format!("ready/{id}")) != Some(&job) {
                self.push_job(&id, &job);
                continue;
            }
            let lease = self.lease(out, &id, generation, &mut stale)?;
            if let Some(oid) = self.refs.get(&format!("result/{id}")).cloned() {
                let held = lease.as_ref().map(|(_, l)| l);
                match self.result(out.repo, &id, &oid, (generation, attempt), held) {
                    Found::Taken(o) => {
                        reports.push(self.arrived(core, out, i, &o, &oid)?);
                        continue;
                    }
                    Found::Stale => stale.push(("result", id.clone(), oid)),
                    Found::Pending => {}
                    Found::Refused(refusal) => {
                        // Under a lease ended with it nobody can claim the attempt: it is
                        // published again, which takes both off.
                        let ended = held.is_some_and(|l| l.ended);
                        self.refuse(out, &id, &oid, &refusal, ended)?;
                        if ended {
                            let start = self.published[&i].start.clone();
                            self.send(core, out, i, attempt, &start)?;
                            continue;
                        }
                        stale.push(("result", id.clone(), oid));
                    }
                }
            }
            let Some((oid, lease)) = lease else {
                if let Some(p) = self.published.get_mut(&i) {
                    p.lease = None;
                }
                continue;
            };
            let Some(p) = self.published.get_mut(&i) else {
                continue;
            };
            let ttl = Duration::from_millis(lease.ttl_ms);
            match &p.lease {
                Some((seen_oid, _, _)) if *seen_oid == oid => {}
                before => {
                    if before.is_none() {
                        out.record.task_event(
                            &id,
                            RunEvent::Claimed {
                                worker: shown(&lease.worker),
                                generation,
                            },
                        )?;
                    }
                    p.lease = Some((oid, Instant::now(), ttl));
                }
            }
        }
        let updates: Vec<Update> = stale
            .into_iter()
            .map(|(kind, id, oid)| Update {
                name: remote::task_ref(&self.run_id, kind, &id),
                to: None,
                expect: Expect::Is(oid),
            })
            .collect();
        if !updates.is_empty()
            && let Some(link) = &mut self.link
        {
            link.push(updates);
        }
        Ok(reports)
    }

    /// Task `id`'s lease as the fetch found it, when it is one of the attempt published as
    /// `generation`. One of another generation, or one that does not read, is taken off as
    /// stale; one without a good signature (with a key) is refused and taken off.
    fn lease(
        &mut self,
        out: &mut Outlets<'_>,
        id: &str,
        generation: u32,
        stale: &mut Vec<(&'static str, String, CommitId)>,
    ) -> anyhow::Result<Option<(CommitId, remote::Lease)>> {
        let Some(oid) = self.refs.get(&format!("lease/{id}")).cloned() else {
            return Ok(None);
        };
        match self
            .records(out.repo)
            .read::<remote::Lease>(Kind::Lease(id), &oid)
        {
            Ok(lease) if lease.generation == generation && lease.task == id => {
                return Ok(Some((oid, lease)));
            }
            Ok(_) | Err(Unread::Broken(_)) => {}
            Err(why) => {
                if self.refused.insert(oid.clone()) {
                    let named = remote::read::<remote::Lease>(out.repo, &oid).ok();
                    let worker = named.as_ref().map(|l| shown(&l.worker));
                    out.record.task_event(
                        id,
                        RunEvent::LeaseRefused {
                            worker: worker.clone(),
                            generation: named.map(|l| l.generation),
                            why: why.to_string(),
                        },
                    )?;
                    out.ui.tell(&Told::RemoteRefused {
                        id: id.to_owned(),
                        what: "lease",
                        worker,
                        why: why.to_string(),
                        then: "removed from the remote",
                    });
                }
            }
        }
        stale.push(("lease", id.to_owned(), oid));
        Ok(None)
    }

    /// What becomes of the result `oid` of task `id`, whose attempt is published as
    /// `(generation, attempt)` and held by `lease` (as the same fetch found it).
    fn result(
        &self,
        repo: &Repo,
        id: &str,
        oid: &CommitId,
        (generation, attempt): (u32, u32),
        lease: Option<&remote::Lease>,
    ) -> Found {
        match self
            .records(repo)
            .read::<remote::Outcome>(Kind::Result(id), oid)
        {
            Ok(o) if o.generation != generation => Found::Stale,
            Ok(o) => match fence(&o, lease, id, attempt) {
                Fence::Holds => Found::Taken(Box::new(o)),
                Fence::Pending => Found::Pending,
                Fence::Broken(why) => Found::Refused(Refusal {
                    worker: Some(shown(&o.worker)),
                    generation: Some(o.generation),
                    why,
                }),
            },
            Err(why) => {
                let named = remote::read::<remote::Outcome>(repo, oid).ok();
                Found::Refused(Refusal {
                    worker: named.as_ref().map(|o| shown(&o.worker)),
                    generation: named.map(|o| o.generation),
                    why: why.to_string(),
                })
            }
        }
    }

    /// Says, once, that the result `oid` of task `id` is refused, and what becomes of it: the
    /// attempt is published again (`again`), or it is removed from the remote.
    fn refuse(
        &mut self,
        out: &mut Outlets<'_>,
        id: &str,
        oid: &CommitId,
        refusal: &Refusal,
        again: bool,
    ) -> anyhow::Result<()> {
        if !self.refused.insert(oid.clone()) {
            return Ok(());
        }
        let Refusal {
            worker,
            generation,
            why,
        } = refusal;
        out.record.task_event(
            id,
            RunEvent::ResultRefused {
                worker: worker.clone(),
                generation: *generation,
                why: why.clone(),
            },
        )?;
        let then = if again {
            "published again"
        } else {
            "removed from the remote"
        };
        out.ui.tell(&Told::RemoteRefused {
            id: id.to_owned(),
            what: "result",
            worker: worker.clone(),
            why: why.clone(),
            then,
        });
        Ok(())
    }

    /// A worker's result of task `i`: its transcript in place, a writer's branch set, its
    /// `ready` ref taken off the remote; the report to finish it with.
    fn arrived(
        &mut self,
        core: &Core<'_>,
        out: &mut Outlets<'_>,
        i: usize,
        o: &remote::Outcome,
        oid: &CommitId,
    ) -> anyhow::Result<Report> {
        let id = core.plan.tasks[i].id.to_string();
        // A claim and its result between two fetches: the result says who claimed it.
        if self.published.remove(&i).is_some_and(|p| p.lease.is_none()) {
            out.record.task_event(
                &id,
                RunEvent::Claimed {
                    worker: shown(&o.worker),
                    generation: o.generation,
                },
            )?;
        }
        let transcript = out
            .layout
            .run_dir
            .join("attempts")
            .join(format!("{id}.{}.log", o.attempt));
        if let Some(text) = out.repo.file_at(oid, remote::TRANSCRIPT_FILE)? {
            std::fs::create_dir_all(out.layout.run_dir.join("attempts"))?;
            std::fs::write(&transcript, text)
                .with_context(|| format!("could not write {}", transcript.display()))?;
        }
        let foreign = foreign_commit(core, out, i, o);
        if let Some(commit) = &o.commit
            && core.plan.tasks[i].mode == Mode::Write
            && foreign.is_none()
        {
            let commit = CommitId::new(commit);
            out.repo
                .set_branch(&out.layout.branch(&id, Checkout::Task), &commit)?;
        }
        out.record.task_event(
            &id,
            RunEvent::ResultArrived {
                worker: shown(&o.worker),
                generation: o.generation,
                status: outcome::status_name(o.status).to_owned(),
            },
        )?;
        // Only its `ready` ref goes: the ended lease keeps anyone from claiming it again, and
        // the lease and result go with a next attempt's publication or at the run's end.
        let updates = vec![Update {
            name: remote::task_ref(&self.run_id, "ready", &id),
            to: None,
            expect: Expect::Any,
        }];
        if let Some(link) = &mut self.link {
            link.push(updates);
        }
        let mut report = outcome::report(i, o);
        if let Some(why) = foreign {
            report.verdict = super::super::job::Verdict::Failed(why);
        }
        Ok(report)
    }

    /// Attempts whose lease went unrenewed for its time are published again, to be claimed
    /// by another worker; the one that held it can no longer push its result.
    pub(super) fn expire(&mut self, core: &Core<'_>, out: &mut Outlets<'_>) -> anyhow::Result<()> {
        let now = Instant::now();
        let expired: Vec<(usize, u32)> = self
            .published
            .iter()
            .filter(|(_, p)| {
                p.lease
                    .as_ref()
                    .is_some_and(|(_, since, ttl)| now.duration_since(*since) > *ttl)
            })
            .map(|(i, p)| (*i, p.attempt))
            .collect();
        for (i, attempt) in expired {
            let id = core.plan.tasks[i].id.to_string();
            let worker = self
                .refs
                .get(&format!("lease/{id}"))
                .and_then(|oid| remote::read::<remote::Lease>(out.repo, oid).ok())
                .map(|l| shown(&l.worker))
                .unwrap_or_default();
            let generation = self.published[&i].generation;
            out.record.task_event(
                &id,
                RunEvent::LeaseExpired {
                    worker: worker.clone(),
                    generation,
                },
            )?;
            out.ui.tell(&Told::LeaseExpired { id, worker });
            // From the start it was given: a writer's start is its branch's base.
            let start = core.slots[i]
                .start_commit
                .clone()
                .unwrap_or_else(|| core.tip().clone());
            self.send(core, out, i, attempt, &start)?;
        }
        Ok(())
    }

    /// The run ended: its refs go from the remote, but the results of failed and parked
    /// tasks, which stay until `swarm gc --remote`; the line to the remote is closed. A run
    /// that stopped early keeps them all, for its resume.
    pub(super) fn close(
        &mut self,
        core: &Core<'_>,
        out: &mut Outlets<'_>,
        finished: bool,
    ) -> anyhow::Result<()> {
        if let Some(mut link) = self.link.take() {
            link.close();
        }
        if !finished {
            return Ok(());
        }
        let prefix = remote::prefix(&self.run_id);
        let Some(refs) = self.reach(out, Some(CLOSING_TRIES), |t| t.fetch(&prefix))? else {
            return Ok(());
        };
        // First the run is marked ended (a new commit of its record, no ref deleted): the
        // workers stop on it even when a remote that takes no deletions keeps the refs.
        if let Some(commit) = refs.get("run") {
            let mut info = self
                .records(out.repo)
                .read::<remote::RunInfo>(Kind::Run, commit)
                .or_else(|_| self.info(core, out))?;
            info.ended = true;
            let update = [run_update(self.records(out.repo), out.layout, &info)?];
            self.reach(out, Some(CLOSING_TRIES), |t| t.push(&update))?;
        }
        let Some(refs) = self.reach(out, Some(CLOSING_TRIES), |t| t.fetch(&prefix))? else {
            return Ok(());
        };
        let index = index_of(&core.plan);
        let keep = |task: &str| {
            index
                .get(task)
                .is_some_and(|&i| matches!(core.dag.state(i), State::Failed | State::Parked))
        };
        let updates: Vec<Update> = refs
            .iter()
            .filter(|(name, _)| !matches!(Kind::of(name), Some(Kind::Result(t)) if keep(t)))
            .map(|(name, oid)| Update {
                name: format!("{prefix}{name}"),
                to: None,
                expect: Expect::Is(oid.clone()),
            })
            .collect();
        // A refusal means a straggler pushed meanwhile, and a remote away that long keeps
        // them all: what is left stays for `swarm gc --remote`.
        self.reach(out, Some(CLOSING_TRIES), |t| t.push(&updates))?;
        Ok(())
    }
}

/// Why a writer's commit from a worker is not taken, if it is not: it must be there (a parent
/// of the result) and descend from the commit the attempt started from, as a local writer's
/// branch must.
fn foreign_commit(
    core: &Core<'_>,
    out: &Outlets<'_>,
    i: usize,
    o: &remote::Outcome,
) -> Option<String> {
    let commit = CommitId::new(o.commit.as_deref()?);
    let start = core.slots[i].start_commit.as_ref()?;
    match out.repo.contains(&commit, start) {
        Ok(true) => None,
        Ok(false) => Some(format!(
            "worker {} sent commit {} that does not descend from the commit the task started from ({}); nothing of it is merged",
            shown(&o.worker),
            commit.short(),
            start.short()
        )),
        Err(_) => Some(format!(
            "worker {} sent commit {} that did not come with its result; nothing of it is merged",
            o.worker,
            commit.short()
        )),
    }
}

/// Whether a result is under the fence of the attempt's lease.
#[derive(Debug, PartialEq, Eq)]
enum Fence {
    /// It is the attempt's, and the lease of the worker it names was ended with it.
    Holds,
    /// The worker it names holds the lease, not yet ended: a fetch can see one ref of an
    /// atomic push changed before the other, so the next fetch decides. (One that is not the
    /// worker's own stays until its lease runs out, and goes with the next publication.)
    Pending,
    /// Not the attempt's, or not under its lease: why.
    Broken(String),
}

/// Whether the result `o` of task `task` is taken for the attempt `attempt` published: it
/// must be that attempt's, and come with the lease of the worker it names (of the attempt's
/// generation), ended with it in the same push, as a worker pushes its result.
fn fence(o: &remote::Outcome, lease: Option<&remote::Lease>, task: &str, attempt: u32) -> Fence {
    if o.task != task {
        return Fence::Broken(format!("it names task {}", shown(&o.task)));
    }
    if o.attempt != attempt {
        return Fence::Broken(format!(
            "it names attempt {}, and the one published is attempt {attempt}",
            o.attempt
        ));
    }
    let Some(lease) = lease else {
        return Fence::Broken("no worker holds a lease on the attempt".to_owned());
    };
    if lease.worker != o.worker {
        return Fence::Broken(format!(
            "the attempt's lease is worker {}'s",
            shown(&lease.worker)
        ));
    }
    if lease.ended {
        Fence::Holds
    } else {
        Fence::Pending
    }
}

/// A name a record gives, as the run's events and terminal show it: printable characters
/// only, and not too many of them (anyone who can push writes it).
fn shown(name: &str) -> String {
    const MOST: usize = 80;
    let mut out: String = name
        .chars()
        .filter(|c| !c.is_control())
        .take(MOST)
        .collect();
    if name.chars().filter(|c| !c.is_control()).count() > MOST {
        out.push('…');
    }
    out
}

/// The push that sets the run's `run` ref to `info` (its commit on the run's base).
fn run_update(
    records: Records<'_>,
    layout: &super::super::Layout,
    info: &remote::RunInfo,
) -> anyhow::Result<Update> {
    let what = if info.ended { " ended" } else { "" };
    let commit = records.write(
        Kind::Run,
        info,
        None,
        std::slice::from_ref(&layout.base),
        &format!("swarm run {}{what}", info.run),
    )?;
    Ok(Update {
        name: remote::ref_name(&info.run, "run"),
        to: Some(commit),
        expect: Expect::Any,
    })
}

/// The plan's tasks by id.
fn index_of(plan: &crate::plan::Plan) -> std::collections::HashMap<&str, usize> {
    plan.tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.as_str(), i))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{Fence, fence, shown};
    use crate::remote::{Lease, Outcome, Status};

    fn outcome(worker: &str) -> Outcome {
        Outcome {
            task: "a".to_owned(),
            attempt: 2,
            generation: 3,
            worker: worker.to_owned(),
            status: Status::Succeeded,
            result: None,
            commit: None,
            why: None,
            fault: None,
            limit: None,
            tokens: 0,
            prompt_tokens: 0,
            cached_tokens: 0,
            cost: None,
            elapsed_ms: 0,
            stderr_tail: Vec::new(),
            spawn: None,
        }
    }

    fn lease(worker: &str, ended: bool) -> Lease {
        Lease {
            task: "a".to_owned(),
            generation: 3,
            worker: worker.to_owned(),
            renewal: 1,
            ttl_ms: 60_000,
            expires_at_ms: 0,
            ended,
        }
    }

    #[test]
    fn a_result_is_taken_only_under_its_workers_lease_ended_with_it() {
        let o = outcome("w1");
        assert_eq!(fence(&o, Some(&lease("w1", true)), "a", 2), Fence::Holds);
        // Its lease not ended yet: the next fetch shows the rest of its push.
        assert_eq!(fence(&o, Some(&lease("w1", false)), "a", 2), Fence::Pending);
        let refusals = [
            (
                fence(&o, None, "a", 2),
                "no worker holds a lease on the attempt",
            ),
            (
                fence(&o, Some(&lease("w2", true)), "a", 2),
                "the attempt's lease is worker w2's",
            ),
            (
                fence(&o, Some(&lease("w2", false)), "a", 2),
                "the attempt's lease is worker w2's",
            ),
            (
                fence(&o, Some(&lease("w1", true)), "a", 1),
                "it names attempt 2, and the one published is attempt 1",
            ),
            (
                fence(&o, Some(&lease("w1", true)), "b", 2),
                "it names task a",
            ),
        ];
        for (got, want) in refusals {
            assert_eq!(got, Fence::Broken(want.to_owned()));
        }
    }

    #[test]
    fn names_from_records_are_shown_printable_and_short() {
        assert_eq!(shown("host-12-ab"), "host-12-ab");
        assert_eq!(shown("evil\u{1b}[2Jname\n"), "evil[2Jname");
        let long = "x".repeat(200);
        assert_eq!(shown(&long).chars().count(), 81);
        assert!(shown(&long).ends_with('…'));
    }
}
