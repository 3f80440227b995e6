//! One attempt on a pool thread: preparing its worktree (made ready for a build in `ready`),
//! running it, checking what it did, committing a writer's changes and running its check.
//! Reports back a `Verdict`.

use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use self::ready::Preparer;
use super::Message;
use super::core::slot::Totals;

use crate::agent::openai::Builtin;
use crate::agent::{self, Fault, Invocation, Outcome, Watchdog};
use crate::git::{self, Commit, CommitId, Head, Left, Repo};

pub(super) mod pick;
mod ready;

/// The most bytes a spawn may hold; past it the whole spawn is refused.
const MAX_SPAWN_BYTES: u64 = 1024 * 1024;

/// The dedicated pool that runs attempts (never rayon's global pool: attempts block on child
/// processes), sized to `--jobs`.
pub(super) struct Workers {
    pool: rayon::ThreadPool,
    tx: Sender<Message>,
    watchdog: Watchdog,
    /// Jobs held until the board has their start (see `hold`).
    held: std::cell::RefCell<Option<Vec<Job>>>,
}

impl Workers {
    pub(super) fn start(
        jobs: usize,
        tx: Sender<Message>,
        watchdog: Watchdog,
    ) -> anyhow::Result<Self> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(jobs)
            .thread_name(|i| format!("swarm-attempt-{i}"))
            .build()
            .context("could not start the attempt pool")?;
        Ok(Self {
            pool,
            tx,
            watchdog,
            held: std::cell::RefCell::new(None),
        })
    }

    /// From now on, jobs handed to `spawn` wait for `release`: the loop holds them while the
    /// board's records of a pass (their starts among them) are not yet committed.
    pub(super) fn hold(&self) {
        self.held.borrow_mut().get_or_insert_with(Vec::new);
    }

    /// Runs the jobs held since `hold`, and runs the next ones at once again.
    pub(super) fn release(&self) {
        let held = self.held.borrow_mut().take();
        for job in held.into_iter().flatten() {
            self.run(job);
        }
    }

    /// Runs the jobs held so far, and holds the next ones still.
    pub(super) fn flush(&self) {
        let held = self.held.borrow_mut().as_mut().map(std::mem::take);
        for job in held.into_iter().flatten() {
            self.run(job);
        }
    }

    /// Drops the jobs held so far unrun: the board never took their starts (the core hears
    /// that they never started), and holds the next ones still.
    pub(super) fn drop_held(&self) {
        if let Some(held) = self.held.borrow_mut().as_mut() {
            held.clear();
        }
    }

    /// Runs a job on the pool (or holds it, see `hold`); its report arrives on the loop's
    /// channel.
    pub(super) fn spawn(&self, job: Job) {
        if let Some(held) = self.held.borrow_mut().as_mut() {
            held.push(job);
            return;
        }
        self.run(job);
    }

    /// Runs a job on the pool now. A panic in it fails the attempt as an internal error
    /// instead of taking the process down.
    fn run(&self, job: Job) {
        let tx = self.tx.clone();
        let watchdog = self.watchdog.clone();
        self.pool.spawn(move || {
            let (task, attempt) = (job.task, job.attempt);
            let gate = matches!(job.kind, JobKind::Gate { .. });
            let started = Instant::now();
            let report =
                crate::panic::catch(|| job.execute(&watchdog, &tx)).unwrap_or_else(|why| Report {
                    task,
                    attempt,
                    verdict: Verdict::Failed(format!("internal error in swarm: {why}")),
                    elapsed: started.elapsed(),
                    used: Totals::default(),
                    session: None,
                    stderr_tail: Vec::new(),
                    spawn: None,
                });
            let _ = tx.send(if gate {
                Message::Gated(report)
            } else {
                Message::Done(report)
            });
        });
    }

    /// Stops every running attempt (the first Ctrl-C).
    pub(super) fn stop_all(&self) {
        self.watchdog.stop_all();
    }
}

/// What an attempt's worker reports.
#[derive(Debug)]
pub(super) struct Report {
    pub(super) task: usize,
    pub(super) attempt: u32,
    pub(super) verdict: Verdict,
    pub(super) elapsed: Duration,
    /// The tokens (cached among them) and the cost the attempt used, where the agent says.
    pub(super) used: Totals,
    /// The agent's own session, when the next attempt is to continue it: the attempt was cut
    /// short (a timeout, a usage limit, a stop), not failed by what the agent did.
    pub(super) session: Option<String>,
    /// For a failed attempt, the last lines of stderr of what failed (the agent, or the
    /// writer's check), secrets hidden.
    pub(super) stderr_tail: Vec<String>,
    /// For an attempt that succeeded, the task-file lines it wrote to `$SWARM_SPAWN`, or why
    /// they could not be read.
    pub(super) spawn: Option<Result<String, String>>,
}

/// At most this many lines of a failed attempt's stderr are kept for the terminal and the
/// report; the transcript has more of it.
pub(super) const STDERR_TAIL_LINES: usize = 20;

/// What an attempt's agent reported besides its verdict.
#[derive(Default)]
struct Spent {
    used: Totals,
    session: Option<String>,
    /// The transcript of a writer's check that failed: its stderr is what failed.
    failed_check: Option<PathBuf>,
}

#[derive(Debug)]
pub(super) enum Verdict {
    Succeeded {
        result: String,
        commit: Option<CommitId>,
    },
    Failed(String),
    Interrupted,
    /// The agent's provider refused for a while; the attempt does not count as a failure.
    Limited(crate::agent::cli::UsageLimit),
    /// Something outside the task cut the attempt short: the run stops, resumably.
    Fault(Fault),
    /// A task with candidates picked the one it merges.
    Picked(Box<pick::Picked>),
}

pub(super) enum JobKind {
    /// A reader in the shared snapshot of this commit.
    Reader { commit: CommitId },
    Writer {
        branch: String,
        start: CommitId,
        check: Option<String>,
        message: String,
        /// A merged writer's checkout set aside, to be reused.
        reuse: Option<PathBuf>,
        /// Where what the agent left is kept when its result is refused.
        keep_as: String,
        /// The attempt continues an earlier one's session in the checkout it left.
        in_place: bool,
        /// Its agent changing nothing fails the attempt (a Claude, Codex or ACP agent: no
        /// commit; the built-in agent decides it by its tool calls).
        must_change: bool,
    },
    /// A conflicting writer's one attempt at resolving its merge.
    Resolver {
        branch: String,
        keep_as: String,
        /// The integration tip the resolution starts from.
        tip: CommitId,
        /// The writer's start commit and its commit.
        base: CommitId,
        theirs: CommitId,
        paths: Vec<String>,
        check: Option<String>,
        message: String,
        /// Which rung of the conflict ladder the job is.
        by: ResolvedBy,
    },
    /// A run of the gate on this integration tip, in the gate's own checkout (detached).
    Gate { tip: CommitId },
    /// A task's pick among its candidates: no process, no checkout.
    Pick(Box<pick::Pick>),
}

/// What a conflict-ladder job is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ResolvedBy {
    /// The agent, in the conflicted merge.
    Agent,
    /// The structural rung's merge program, in the conflicted merge; `Err` says why it
    /// cannot merge a conflicted path.
    Structural(Result<(), String>),
    /// The task done again on the tip: its checkout holds the tip as it is, and its result
    /// is a commit on it, not a merge.
    Redo,
}

/// One attempt, as handed to a pool thread.
pub(super) struct Job {
    pub(super) task: usize,
    pub(super) attempt: u32,
    pub(super) kind: JobKind,
    pub(super) invocation: Invocation,
    /// Set for the built-in agent; the invocation then gives only its directory, environment
    /// (for the check), timeout and transcript.
    pub(super) builtin: Option<Builtin>,
    /// Set for a coding-agent CLI: how to read its output.
    pub(super) parser: Option<crate::agent::cli::Parser>,
    /// Set for an agent of the Agent Client Protocol (the invocation gives its command).
    pub(super) acp: Option<crate::agent::acp::Acp>,
    pub(super) deps_dir: Option<DepsDir>,
    pub(super) user_checkout: PathBuf,
    /// The agent's session the attempt runs in, when swarm named it (a new Claude session) or
    /// continues it.
    pub(super) session: Option<String>,
    /// How a new checkout is made ready before the agent starts.
    pub(super) prepare: super::Prepare,
    /// The attempt's own temporary directory (`TMPDIR`), made when it starts and removed
    /// when it ends.
    pub(super) tmp: PathBuf,
    /// Where a task's agent writes the tasks it spawns (`$SWARM_SPAWN`); none for a resolver
    /// or the gate.
    pub(super) spawn_file: Option<PathBuf>,
    /// What confines its processes, made once its directory is there.
    pub(super) confined: Option<Confined>,
}

/// What confines an attempt's processes (see `agent::confine`): the run's confiner, where the
/// run's own files are, and what this attempt may do beyond the run's rules.
pub(in crate::schedule) struct Confined {
    pub(in crate::schedule) confiner: std::sync::Arc<crate::agent::confine::Confiner>,
    pub(in crate::schedule) places: crate::agent::confine::Places,
    pub(in crate::schedule) own: crate::agent::confine::Own,
}

impl Job {
    pub(super) fn execute(self, watchdog: &Watchdog, tx: &Sender<Message>) -> Report {
        let started = Instant::now();
        let mut spent = Spent::default();
        let made_tmp = super::scratch::make(&self.tmp);
        let verdict = match made_tmp.and_then(|()| self.attempt(watchdog, tx, &mut spent)) {
            Ok(verdict) => verdict,
            Err(e) => match Fault::of_error(&e) {
                Some(fault) => Verdict::Fault(fault),
                None => Verdict::Failed(crate::ui::without_libgit2_codes(&format!("{e:#}"))),
            },
        };
        // An attempt that failed on a full disk (its TMPDIR's, its checkout's, the run's
        // records') failed of the disk.
        let verdict = match verdict {
            Verdict::Failed(why) => {
                let run_dir = self
                    .invocation
                    .transcript
                    .parent()
                    .unwrap_or(Path::new("."));
                let dirs = [self.tmp.as_path(), &self.invocation.cwd, run_dir];
                match Fault::of_full_disk(&dirs, &why) {
                    Some(fault) => Verdict::Fault(fault),
                    None => Verdict::Failed(why),
                }
            }
            verdict => verdict,
        };
        super::scratch::empty(&self.tmp);
        let stderr_tail = match &verdict {
            Verdict::Failed(_) => agent::stderr_tail(
                spent
                    .failed_check
                    .as_deref()
                    .unwrap_or(&self.invocation.transcript),
                STDERR_TAIL_LINES,
            ),
            _ => Vec::new(),
        };
        let spawn = match (&verdict, &self.spawn_file) {
            (Verdict::Succeeded { .. }, Some(file)) => read_spawn(file),
            _ => None,
        };
        Report {
            task: self.task,
            attempt: self.attempt,
            verdict,
            elapsed: started.elapsed(),
            used: spent.used,
            session: spent.session,
            stderr_tail,
            spawn,
        }
    }

    fn attempt(
        &self,
        watchdog: &Watchdog,
        tx: &Sender<Message>,
        spent: &mut Spent,
    ) -> anyhow::Result<Verdict> {
        if let Some(deps) = &self.deps_dir {
            deps.write()?;
        }
        let repo = user_repo(&self.user_checkout)?;
        if let JobKind::Pick(pick) = &self.kind {
            let stop = || watchdog.is_stopping();
            return pick::run(pick, &repo, &self.invocation.transcript, &stop, spent);
        }
        let mut inv = self.invocation.clone();
        let made = match &self.kind {
            // A continued session goes on in the checkout its earlier attempt left.
            // A pick has returned already: it has no directory.
            JobKind::Reader { .. } | JobKind::Writer { in_place: true, .. } | JobKind::Pick(_) => {
                None
            }
            JobKind::Writer {
                branch,
                start,
                reuse,
                ..
            } => {
                // A fresh checkout per attempt, from the integration tip the task started at.
                let earlier = Preparer::of(self, &self.invocation).set_earlier_aside();
                let made = fresh_checkout(
                    &repo,
                    branch,
                    start,
                    &self.invocation.cwd,
                    reuse.as_deref(),
                    &self.prepare.cache,
                );
                Some((made, earlier))
            }
            JobKind::Resolver {
                branch,
                tip,
                base,
                theirs,
                by,
                ..
            } => {
                let earlier = Preparer::of(self, &self.invocation).set_earlier_aside();
                let made = fresh_checkout(&repo, branch, tip, &self.invocation.cwd, None, &[])
                    .and_then(|made| {
                        if *by != ResolvedBy::Redo {
                            git::write_conflicted_merge(&self.invocation.cwd, base, theirs)?;
                        }
                        Ok(made)
                    });
                Some((made, earlier))
            }
            JobKind::Gate { tip } => {
                let made = gate_checkout(&repo, tip, &self.invocation.cwd, &self.prepare.cache);
                Some((made, None))
            }
        };
        if let Some((made, earlier)) = made {
            let made = made.and_then(|made| {
                // Its setup runs confined too.
                inv.confine = match self.confinement() {
                    Ok(confine) => confine,
                    Err(verdict) => return Ok(Err(verdict)),
                };
                Preparer::of(self, &inv).make_ready(made, earlier.as_deref(), watchdog)
            });
            if let Some(earlier) = earlier {
                let _ = git::remove_checkout(&earlier);
            }
            match made? {
                Ok(notes) => {
                    inv.header_notes |= !notes.is_empty();
                    inv.header.push_str(&notes);
                }
                Err(verdict) => return Ok(verdict),
            }
        }
        if inv.confine.is_none() {
            inv.confine = match self.confinement() {
                Ok(confine) => confine,
                Err(verdict) => return Ok(verdict),
            };
        }
        let inv = &inv;
        if let JobKind::Resolver {
            by: ResolvedBy::Structural(Err(why)),
            ..
        } = &self.kind
        {
            return Ok(Verdict::Failed(why.clone()));
        }
        let finished = match (&self.builtin, self.parser, &self.acp) {
            (None, None, Some(acp)) => agent::acp::run(inv, acp, watchdog),
            (None, None, None) => agent::run(inv, watchdog),
            (None, Some(parser), _) => {
                let writes = !matches!(self.kind, JobKind::Reader { .. });
                agent::run_cli(inv, parser, watchdog, writes)
            }
            (Some(builtin), _, _) => {
                let task = self.task;
                let mut notify = |notice: crate::llm::Notice| {
                    let _ = tx.send(Message::Notice { task, notice });
                };
                agent::openai::run(inv, builtin, watchdog, &mut notify)
            }
        };
        spent.used = Totals {
            tokens: finished.tokens,
            prompt_tokens: finished.prompt_tokens,
            cached_tokens: finished.cached_tokens,
            cost: finished.cost,
        };
        // Only an attempt cut short from outside is worth continuing: one the agent failed
        // starts afresh.
        let cut_short = matches!(
            finished.outcome,
            Outcome::TimedOut(_)
                | Outcome::Stalled(_)
                | Outcome::Interrupted
                | Outcome::Limited(_)
                | Outcome::Fault(_)
        );
        spent.session = finished
            .session
            .clone()
            .or_else(|| self.session.clone())
            .filter(|_| cut_short);
        match finished.outcome {
            Outcome::Succeeded => {}
            Outcome::Interrupted => return Ok(Verdict::Interrupted),
            Outcome::TimedOut(t) => {
                return Ok(Verdict::Failed(format!(
                    "timed out after {}",
                    crate::ui::duration(t)
                )));
            }
            Outcome::Stalled(t) => {
                return Ok(Verdict::Failed(format!(
                    "hung: no output for {}, stopped",
                    crate::ui::duration(t)
                )));
            }
            Outcome::Failed(why) => return Ok(Verdict::Failed(why)),
            Outcome::Limited(limit) => return Ok(Verdict::Limited(limit)),
            Outcome::Fault(fault) => return Ok(Verdict::Fault(fault)),
        }
        match &self.kind {
            JobKind::Reader { commit } => {
                // Confined, a reader's processes cannot write its snapshot: the kernel refused
                // each write as it came, so there is nothing to look for. The built-in agent's
                // file tools run in swarm, unconfined: its snapshot is looked at.
                let kernel_kept = self.builtin.is_none()
                    && inv
                        .confine
                        .as_ref()
                        .is_some_and(|c| !c.may_write_in(&self.invocation.cwd));
                let changed = if kernel_kept {
                    Vec::new()
                } else {
                    git::snapshot_changes(&self.invocation.cwd, commit, &self.prepare.include)?
                };
                if !changed.is_empty() {
                    git::restore_snapshot(&self.invocation.cwd, commit)?;
                    // The restore put a tracked included file back to its committed version.
                    let (from, include) = (&self.user_checkout, &self.prepare.include);
                    git::copy_included(from, &self.invocation.cwd, include)?;
                    return Ok(Verdict::Failed(format!(
                        "a read-only task changed its snapshot ({}); the snapshot was restored",
                        changed.join(", ")
                    )));
                }
                Ok(Verdict::Succeeded {
                    result: finished.stdout,
                    commit: None,
                })
            }
            JobKind::Writer {
                branch,
                start,
                check,
                message,
                keep_as,
                must_change,
                ..
            } => {
                let left = git::take_result(
                    &repo,
                    &self.invocation.cwd,
                    branch,
                    start,
                    &Commit::Plain(message),
                    keep_as,
                    &self.prepare.include,
                )?;
                let commit = match taken(left) {
                    Ok(commit) => commit,
                    Err(refused) => return Ok(refused),
                };
                let agent = self.parser.is_some() || self.acp.is_some();
                if commit.is_none() && *must_change && agent {
                    return Ok(Verdict::Failed(
                        "the agent made no change (a task that may end so says \"may-be-empty\": true)"
                            .to_owned(),
                    ));
                }
                if let (Some(check), Some(_)) = (check, &commit)
                    && let Some(failed) = self.check(inv, check, watchdog, spent)
                {
                    return Ok(failed);
                }
                Ok(Verdict::Succeeded {
                    result: finished.stdout,
                    commit,
                })
            }
            JobKind::Resolver {
                branch,
                keep_as,
                tip,
                base,
                theirs,
                paths,
                check,
                message,
                by,
                ..
            } => {
                let left = git::files_with_conflict_markers(&self.invocation.cwd, paths);
                if !left.is_empty() {
                    return Ok(Verdict::Failed(format!(
                        "conflict markers are left in {}",
                        left.join(", ")
                    )));
                }
                if matches!(by, ResolvedBy::Structural(_)) {
                    let cwd = &self.invocation.cwd;
                    let dropped = git::dropped_lines(&repo, base, tip, theirs, paths, cwd)?;
                    if let Some((path, line)) = dropped.first() {
                        return Ok(Verdict::Failed(format!(
                            "the merge of {path} loses a line one side added (`{line}`); swarm takes no merge that drops a side's change"
                        )));
                    }
                }
                let made = if *by == ResolvedBy::Redo {
                    Commit::Plain(message)
                } else {
                    Commit::MergeOf(theirs, message)
                };
                let left = git::take_result(
                    &repo,
                    &self.invocation.cwd,
                    branch,
                    tip,
                    &made,
                    keep_as,
                    &self.prepare.include,
                )?;
                let commit = match taken(left) {
                    Ok(commit) => commit,
                    Err(refused) => return Ok(refused),
                };
                if let Some(check) = check
                    && let Some(failed) = self.check(inv, check, watchdog, spent)
                {
                    return Ok(failed);
                }
                Ok(Verdict::Succeeded {
                    result: finished.stdout,
                    commit,
                })
            }
            JobKind::Gate { .. } => Ok(Verdict::Succeeded {
                result: String::new(),
                commit: None,
            }),
            JobKind::Pick(_) => anyhow::bail!("a pick ran as an attempt"),
        }
    }

    /// The confinement of the attempt's processes, its directory being there; `None` when
    /// they run unconfined. Its spawn file is made (empty) first, so that a rule can name it.
    /// Rules the machine could not make are a fault of the machine: the attempt does not run,
    /// and the run stops, resumable.
    fn confinement(&self) -> Result<Option<crate::agent::confine::Confinement>, Verdict> {
        let Some(c) = &self.confined else {
            return Ok(None);
        };
        let made = self
            .spawn_file
            .as_ref()
            .map_or(Ok(()), |file| crate::planted::replace(file).map(drop))
            .map_err(anyhow::Error::from)
            .and_then(|()| c.confiner.attempt(&c.places, &c.own));
        made.map_err(|e| {
            Verdict::Fault(Fault::of_error(&e).unwrap_or_else(|| Fault {
                kind: crate::agent::FaultKind::Environment,
                why: format!("could not confine the attempt: {e:#}"),
            }))
        })
    }

    /// Runs a writer's check in its worktree; `Some` verdict when it did not pass.
    fn check(
        &self,
        inv: &Invocation,
        check: &str,
        watchdog: &Watchdog,
        spent: &mut Spent,
    ) -> Option<Verdict> {
        // A check is the user's own command, held only to the task's timeout.
        let check_run = inv.beside(
            check,
            self.invocation.transcript.with_extension("check.log"),
            self.invocation.transcript_cap,
            format!(
                "check of {}\ncommand: {check}\n",
                self.invocation.cwd.display()
            ),
        );
        match agent::run(&check_run, watchdog).outcome {
            Outcome::Succeeded => None,
            Outcome::Interrupted => Some(Verdict::Interrupted),
            Outcome::Fault(fault) => Some(Verdict::Fault(fault)),
            Outcome::TimedOut(_)
            | Outcome::Stalled(_)
            | Outcome::Failed(_)
            | Outcome::Limited(_) => {
                spent.failed_check = Some(check_run.transcript.clone());
                Some(Verdict::Failed(format!(
                    "check `{check}` failed; see {}",
                    check_run.transcript.display()
                )))
            }
        }
    }
}

/// The user's repository, opened once per pool thread: every attempt fingerprints it twice.
fn user_repo(checkout: &Path) -> anyhow::Result<std::rc::Rc<Repo>> {
    thread_local! {
        static OPEN: std::cell::RefCell<Option<(PathBuf, std::rc::Rc<Repo>)>> =
            const { std::cell::RefCell::new(None) };
    }
    OPEN.with_borrow_mut(|open| {
        let (_, repo) = match open.take() {
            Some(kept) if kept.0 == checkout => open.insert(kept),
            _ => open.insert((
                checkout.to_owned(),
                std::rc::Rc::new(Repo::discover(checkout)?),
            )),
        };
        Ok(std::rc::Rc::clone(repo))
    })
}

/// How a writer's checkout was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Made {
    /// A checkout of its own, new.
    New,
    /// A merged writer's checkout, set aside and updated to this one's start.
    Reused,
}

/// Replaces whatever an earlier attempt left with a new checkout on a new branch at `start`:
/// the one set aside as `reuse` when given (updating only the files that differ, keeping the
/// directories `keep`), else a new one.
pub(super) fn fresh_checkout(
    repo: &Repo,
    branch: &str,
    start: &CommitId,
    path: &Path,
    reuse: Option<&Path>,
    keep: &[String],
) -> anyhow::Result<Made> {
    git::remove_checkout(path)?;
    // An earlier attempt's result is not this one's.
    if let Ok(Some(old)) = repo.ref_target(&format!("refs/heads/{branch}")) {
        repo.delete_branch_at(branch, &old)?;
    }
    let head = Head::NewBranch(branch, start);
    if let Some(old) = reuse {
        if git::reuse_checkout(repo, old, path, &head, keep).is_ok() {
            return Ok(Made::Reused);
        }
        // Whatever went wrong, a new checkout replaces it.
        git::remove_checkout(old)?;
        git::remove_checkout(path)?;
    }
    git::create_placed_checkout(repo, path, &head)
        .context("could not create the writer's checkout")?;
    Ok(Made::New)
}

/// The gate's checkout at `tip`: the one an earlier gate run left, updated to it (keeping the
/// directories `keep`), else a new one.
fn gate_checkout(
    repo: &Repo,
    tip: &CommitId,
    path: &Path,
    keep: &[String],
) -> anyhow::Result<Made> {
    let head = Head::Detached(tip);
    // It stays at its path, so what a build cached there holds.
    if path.join(".git").is_dir() && git::update_checkout(repo, path, &head, keep).is_ok() {
        return Ok(Made::Reused);
    }
    git::remove_checkout(path)?;
    git::create_checkout(repo, path, &head).context("could not create the gate's checkout")?;
    Ok(Made::New)
}

/// The commit a writer's result is, if any; a refused result is the failed verdict, saying
/// where what the agent left is kept.
fn taken(left: Left) -> Result<Option<CommitId>, Verdict> {
    match left {
        Left::Nothing => Ok(None),
        Left::Commits(c) => Ok(Some(c)),
        Left::Refused { why, kept } => Err(Verdict::Failed(match kept {
            Some(branch) => format!("{why}; what it left is kept on branch {branch}"),
            None => why,
        })),
    }
}

/// What a `run` task finds of its deps in `$SWARM_DEPS_DIR`.
pub(super) struct DepsDir {
    pub(super) dir: PathBuf,
    /// Each dep's id and result: `<id>.txt`.
    pub(super) results: Vec<(String, String)>,
    /// For a task that runs on what finished, each dep that has no result for it and why:
    /// `<id>.missing`.
    pub(super) missing: Vec<(String, String)>,
}

impl DepsDir {
    /// One file per dep, `<dep id>.txt`, holding its whole result, and `<dep id>.missing` for
    /// one that has none, saying why.
    fn write(&self) -> anyhow::Result<()> {
        let dir = &self.dir;
        if dir.exists() {
            std::fs::remove_dir_all(dir)?;
        }
        std::fs::create_dir_all(dir)?;
        // Each file new: a link another task put there meanwhile is an error, not a target.
        let write = |name: String, text: &[u8]| -> std::io::Result<()> {
            use std::io::Write as _;
            let path = dir.join(name);
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)?
                .write_all(text)
        };
        for (id, result) in &self.results {
            write(format!("{id}.txt"), result.as_bytes())?;
        }
        for (id, why) in &self.missing {
            write(format!("{id}.missing"), format!("{why}\n").as_bytes())?;
        }
        Ok(())
    }
}

/// What an attempt wrote to its spawn file: none when it wrote no file. The task may have put
/// anything there (a FIFO, a link to a file elsewhere): only a regular file is read.
fn read_spawn(file: &Path) -> Option<Result<String, String>> {
    match crate::planted::read(file, MAX_SPAWN_BYTES) {
        // Made empty for a confined attempt (a rule names it): nothing written, nothing asked.
        Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => None,
        Ok(bytes) => Some(
            String::from_utf8(bytes).map_err(|_| "its spawn file is not UTF-8 text".to_owned()),
        ),
        Err(crate::planted::Refused::Missing) => None,
        Err(refused) => Some(Err(format!("its spawn file {refused}"))),
    }
}
