//! Making a writer's (or resolver's) checkout ready for its agent, on the pool thread: the
//! included files copied in, the caches kept or seeded from a checkout with the same cache key,
//! the setup command run. See the manual's "Checkouts that build" (docs/src/checkouts.md).

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::super::Prepare;
use super::{Job, Made, Verdict};
use crate::agent::{self, Fault, Invocation, Outcome, Watchdog};
use crate::git;

/// What making a checkout ready reads of its job: the invocation (its checkout, transcript
/// and environment), what to prepare, and the user's checkout the included files come from.
pub(super) struct Preparer<'a> {
    invocation: &'a Invocation,
    prepare: &'a Prepare,
    user_checkout: &'a Path,
}

impl<'a> Preparer<'a> {
    /// The job's preparer, its commands run as `invocation` says (confined as its agent is).
    pub(super) fn of(job: &'a Job, invocation: &'a Invocation) -> Self {
        Self {
            invocation,
            prepare: &job.prepare,
            user_checkout: &job.user_checkout,
        }
    }

    /// The checkout an earlier attempt of this task left at its path, moved aside so that the
    /// new one's caches can be seeded from it; none without caches, or when there is none.
    pub(super) fn set_earlier_aside(&self) -> Option<PathBuf> {
        let path = &self.invocation.cwd;
        if self.prepare.cache.is_empty() || !path.join(".git").is_dir() {
            return None;
        }
        let mut aside = path.as_os_str().to_owned();
        // A space: no task id, so no other checkout, can have this name.
        aside.push(" (earlier)");
        let aside = PathBuf::from(aside);
        git::remove_checkout(&aside).ok()?;
        std::fs::rename(path, &aside).ok()?;
        Some(aside)
    }

    /// Makes a writer's new or reused checkout ready for its agent: the included files copied
    /// in, the caches kept or seeded, the setup run. The notes for the transcript, or the
    /// verdict that ends the attempt before its agent starts (a failed setup is a fault).
    pub(super) fn make_ready(
        &self,
        made: Made,
        earlier: Option<&Path>,
        watchdog: &Watchdog,
    ) -> anyhow::Result<Result<String, Verdict>> {
        use std::fmt::Write as _;
        let (p, cwd) = (&self.prepare, &self.invocation.cwd);
        let mut notes = String::new();
        let kept_out: Vec<String> = p.include.iter().chain(&p.cache).cloned().collect();
        git::exclude(cwd, &kept_out)?;
        let missing = git::copy_included(self.user_checkout, cwd, &p.include)?;
        notes.push_str(&super::super::included_note(&p.include, &missing));
        if p.cache.is_empty() && p.setup.is_none() {
            return Ok(Ok(notes));
        }
        let key = git::cache_key(cwd, &p.cache_key);
        let short = &key[..key.len().min(12)];
        if !p.cache.is_empty() {
            let dirs = p.cache.join(", ");
            match made {
                Made::Reused => {
                    let _ = writeln!(notes, "cache: {dirs} kept from the reused checkout");
                }
                Made::New => {
                    let from = earlier
                        .into_iter()
                        .chain([self.user_checkout])
                        .find(|from| git::cache_key(from, &p.cache_key) == key);
                    match from {
                        Some(from) => {
                            let started = Instant::now();
                            let seeded = git::seed(from, cwd, &p.cache)?;
                            let _ = writeln!(
                                notes,
                                "cache: seeded {} from {} (cache key {short}) in {:.2}s",
                                if seeded.is_empty() {
                                    "nothing".to_owned()
                                } else {
                                    seeded.join(", ")
                                },
                                from.display(),
                                started.elapsed().as_secs_f64()
                            );
                        }
                        None => {
                            let _ = writeln!(
                                notes,
                                "cache: no checkout with cache key {short} to seed {dirs} from"
                            );
                        }
                    }
                }
            }
        }
        // An agent's link in a cache (kept from an earlier writer, or seeded from your
        // checkout) would have this task's build write through it, out of its checkout.
        let removed = git::remove_links_out(cwd, &p.cache)?;
        if !removed.is_empty() {
            let _ = writeln!(
                notes,
                "cache: removed links that lead out of the checkout: {}",
                removed.join(", ")
            );
        }
        let Some(setup) = &p.setup else {
            return Ok(Ok(notes));
        };
        if made == Made::Reused && git::setup_holds(cwd, &key) {
            let _ = writeln!(
                notes,
                "setup: not run: the reused checkout's lockfiles are as they were at its setup"
            );
            return Ok(Ok(notes));
        }
        match self.setup(setup, watchdog, &notes) {
            Ok(section) => {
                git::record_setup(cwd, &key)?;
                notes.push_str(&section);
                Ok(Ok(notes))
            }
            Err(verdict) => Ok(Err(verdict)),
        }
    }

    /// Runs the setup command in the checkout, as an attempt is run (its own process group,
    /// the task's timeout, stopped by Ctrl-C). Its log for the transcript when it succeeded;
    /// else the transcript says what happened and the verdict ends the attempt.
    fn setup(&self, command: &str, watchdog: &Watchdog, notes: &str) -> Result<String, Verdict> {
        let log = self.invocation.transcript.with_extension("setup.log");
        // The setup's output goes into the task's transcript: a quarter of its cap at most,
        // the rest is the task's.
        let cap = self.invocation.transcript_cap / 4;
        let inv = self
            .invocation
            .beside(command, log.clone(), cap, String::new());
        let outcome = agent::run(&inv, watchdog).outcome;
        // Within the setup's cap, and the lines swarm wrote around what it printed.
        let most = inv.transcript_cap.saturating_add(1 << 20);
        let text = crate::planted::read_start(&log, most).unwrap_or_default();
        let text = String::from_utf8_lossy(&text);
        let _ = std::fs::remove_file(&log);
        let section = format!("--- setup: {command} ---\n{text}");
        let why = match outcome {
            Outcome::Succeeded => return Ok(section + "--- setup done; the task follows ---\n"),
            Outcome::Interrupted => None,
            Outcome::Fault(fault) => Some(fault.why),
            Outcome::TimedOut(_)
            | Outcome::Stalled(_)
            | Outcome::Failed(_)
            | Outcome::Limited(_) => Some(setup_failed(
                command,
                &outcome,
                &text,
                &self.invocation.transcript,
            )),
        };
        let _ = crate::planted::replace(&self.invocation.transcript).and_then(|mut f| {
            use std::io::Write as _;
            writeln!(
                f,
                "{}{notes}{section}swarm: the agent did not start",
                self.invocation.header
            )
        });
        Err(match why {
            None => Verdict::Interrupted,
            Some(why) => Verdict::Fault(Fault {
                kind: crate::agent::FaultKind::Environment,
                why,
            }),
        })
    }
}

/// Why a setup that did not succeed stops the run: its command, how it ended, and the last
/// lines it printed (of its stderr, where failing tools say why, else of its stdout), on one
/// line as the run's other faults are.
fn setup_failed(command: &str, outcome: &Outcome, log: &str, transcript: &Path) -> String {
    let how = match outcome {
        Outcome::Failed(why) => why.clone(),
        Outcome::TimedOut(t) => format!("timed out after {}", crate::ui::duration(*t)),
        other => other.describe(),
    };
    let after = |marker: &str| log.split_once(marker).map_or("", |(_, rest)| rest);
    let stderr = after("--- stderr ---\n").split("--- stdout ---\n").next();
    let stdout = after("--- stdout ---\n").split("\n--- end: ").next();
    let last = |text: Option<&str>| -> Vec<String> {
        let lines: Vec<&str> = text
            .unwrap_or("")
            .lines()
            .map(str::trim_end)
            .filter(|l| !l.trim().is_empty())
            .collect();
        lines[lines.len().saturating_sub(SETUP_LINES)..]
            .iter()
            .map(|l| (*l).to_owned())
            .collect()
    };
    let mut lines = last(stderr);
    if lines.is_empty() {
        lines = last(stdout);
    }
    let printed = if lines.is_empty() {
        "it printed nothing".to_owned()
    } else {
        format!("its last lines: {}", lines.join(" | "))
    };
    format!(
        "the setup command `{command}` failed ({how}), so the task's agent did not start; {printed} (all of it is in {}); `swarm resume --setup CMD` runs another command",
        transcript.display()
    )
}

/// How many of a failed setup's last lines its fault shows.
const SETUP_LINES: usize = 5;
