//! A run spread over machines, coordinated through a git remote (see the manual's "Runs over
//! many machines" (docs/src/remote.md)). Everything the coordinator and its workers tell each other is a commit
//! under `refs/swarm/<run>/` on the remote, holding one JSON file (and a transcript):
//!
//! - `run`: the plan and the options the run started with; removed when the run ends;
//! - `ready/<task>`: an attempt to run, with the commit it starts from (a parent, so its
//!   objects travel with it) and its deps' results, published by the coordinator;
//! - `lease/<task>`: the worker that claimed it, created only if absent, renewed by
//!   compare-and-swap while the attempt runs;
//! - `result/<task>`: how the attempt ended, its transcript, and for a writer its commit (a
//!   parent), created in one atomic push with the worker's own lease marked ended, so a
//!   worker whose lease was taken from it can land nothing, and nobody can claim the attempt
//!   again once it ran.
//!
//! A claim is made from a fetch that can be old by the time the claim lands (the attempt
//! ran and was taken meanwhile), so the claimer fetches again and runs the attempt only if it
//! is still the one published, without a result; else it gives the lease back.
//!
//! Each publication of a task has a generation; a lease or result of another generation is
//! stale and removed. A result is taken only under the lease of the worker it names, for the
//! attempt published; with a shared key (`key`), only with a good signature too.

pub(crate) mod key;
pub(crate) mod link;
pub(crate) mod transport;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::Usage;
use crate::git::{CommitId, Repo};

pub(crate) use key::{KEY_VAR, Key};
pub(crate) use transport::{Expect, Pushed, Transport, Unreachable, Update};

/// How often the remote is fetched, unless `SWARM_REMOTE_POLL` says (in seconds).
const POLL: Duration = Duration::from_secs(2);
/// The variable that sets the poll.
pub(crate) const POLL_VAR: &str = "SWARM_REMOTE_POLL";
/// The poll's bounds, in seconds: a shorter one would keep the remote busy for nothing, a
/// longer one would leave every task waiting.
const POLL_RANGE: (f64, f64) = (0.01, 600.0);

/// The poll of the remote, for the coordinator and for workers: `SWARM_REMOTE_POLL` seconds
/// (2 when it is unset or empty), or why its value is none.
pub(crate) fn poll() -> Result<Duration, Usage> {
    let Some(value) = std::env::var_os(POLL_VAR) else {
        return Ok(POLL);
    };
    let text = value.to_string_lossy();
    let text = text.trim();
    if text.is_empty() {
        return Ok(POLL);
    }
    let hint = format!(
        "{POLL_VAR} is how often swarm fetches the remote, in seconds (e.g. 0.5), from {} to {}; unset, it is {}",
        POLL_RANGE.0,
        POLL_RANGE.1,
        POLL.as_secs()
    );
    let Ok(seconds) = text.parse::<f64>() else {
        return Err(Usage::new(format!("{POLL_VAR}={text}: not a number of seconds")).hint(hint));
    };
    if !(POLL_RANGE.0..=POLL_RANGE.1).contains(&seconds) {
        return Err(Usage::new(format!(
            "{POLL_VAR}={text}: the poll must be from {} to {} seconds",
            POLL_RANGE.0, POLL_RANGE.1
        ))
        .hint(hint));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// The version of the records below; a worker refuses a run of a newer one. 2: a run's
/// records may be signed.
pub(crate) const VERSION: u32 = 2;

/// The version a run's records say: an unsigned run's stay readable by the swarms before
/// signing, and a signed run is refused by them (its coordinator would refuse their results).
pub(crate) fn version(signed: bool) -> u32 {
    if signed { VERSION } else { 1 }
}

/// The refs of run `run`, on the remote and (fetched) in a local repository.
pub(crate) fn prefix(run: &str) -> String {
    format!("refs/swarm/{run}/")
}

/// The ref of run `run` named `name` (`run`, `ready/<task>`, …).
pub(crate) fn ref_name(run: &str, name: &str) -> String {
    format!("{}{name}", prefix(run))
}

/// What a run's refs are, by their names under its prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind<'a> {
    Run,
    Ready(&'a str),
    Lease(&'a str),
    Result(&'a str),
}

impl<'a> Kind<'a> {
    /// Its name under the run's prefix.
    pub(crate) fn name(self) -> String {
        match self {
            Self::Run => "run".to_owned(),
            Self::Ready(task) => format!("ready/{task}"),
            Self::Lease(task) => format!("lease/{task}"),
            Self::Result(task) => format!("result/{task}"),
        }
    }

    pub(crate) fn of(name: &'a str) -> Option<Self> {
        if name == "run" {
            return Some(Self::Run);
        }
        let (kind, task) = name.split_once('/')?;
        match kind {
            "ready" => Some(Self::Ready(task)),
            "lease" => Some(Self::Lease(task)),
            "result" => Some(Self::Result(task)),
            _ => None,
        }
    }
}

/// The name of task `task`'s ref of a kind.
pub(crate) fn task_ref(run: &str, kind: &str, task: &str) -> String {
    ref_name(run, &format!("{kind}/{task}"))
}

/// `refs/swarm/<run>/run`: what a worker needs to run the run's tasks as the coordinator would.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RunInfo {
    pub(crate) version: u32,
    pub(crate) run: String,
    pub(crate) base: String,
    /// The plan, as a task file.
    pub(crate) tasks: String,
    /// The run's options, as the board stores them (`config::record`).
    pub(crate) options: serde_json::Value,
    /// The run ended: nothing of it is left to do. Set before its refs are removed, so that
    /// workers stop even when some cannot be.
    #[serde(default)]
    pub(crate) ended: bool,
    /// Its records are signed with the coordinator's `SWARM_REMOTE_KEY`: a worker needs the
    /// same key to work on it.
    #[serde(default)]
    pub(crate) signed: bool,
}

/// `refs/swarm/<run>/ready/<task>`: one attempt of a task to run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Job {
    pub(crate) version: u32,
    pub(crate) task: String,
    pub(crate) attempt: u32,
    pub(crate) generation: u32,
    /// The commit a writer's checkout or a reader's snapshot is made from.
    pub(crate) start: String,
    pub(crate) deps: Vec<Dep>,
}

/// A finished dependency, as its dependent's prompt and files show it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Dep {
    pub(crate) id: String,
    pub(crate) result: Option<String>,
    /// A writer's start and commit, for the paths it changed.
    pub(crate) start: Option<String>,
    pub(crate) commit: Option<String>,
    /// For a task that runs on what finished (a reducer): why this dep has no result for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) missing: Option<String>,
}

/// `refs/swarm/<run>/lease/<task>`: a worker holds the task's attempt.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Lease {
    pub(crate) task: String,
    pub(crate) generation: u32,
    pub(crate) worker: String,
    /// 0 for the claim, then one more per renewal: each renewal is a new commit.
    pub(crate) renewal: u64,
    /// The lease ends this long after the coordinator last saw it change.
    pub(crate) ttl_ms: u64,
    /// When it ends by the worker's clock (for people reading it; the coordinator goes by its
    /// own clock and `ttl_ms`).
    pub(crate) expires_at_ms: u64,
    /// The attempt ended and its result is in: the lease stays, so that nobody can claim the
    /// attempt again, until the coordinator takes both.
    #[serde(default)]
    pub(crate) ended: bool,
}

/// `refs/swarm/<run>/result/<task>`: how an attempt ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Outcome {
    pub(crate) task: String,
    pub(crate) attempt: u32,
    pub(crate) generation: u32,
    pub(crate) worker: String,
    pub(crate) status: Status,
    pub(crate) result: Option<String>,
    /// A writer's commit, a parent of the result's commit.
    pub(crate) commit: Option<String>,
    /// Why it failed, or the fault that cut it short.
    pub(crate) why: Option<String>,
    /// A fault's kind (`environment`, `credentials`, …).
    pub(crate) fault: Option<String>,
    pub(crate) limit: Option<Limit>,
    pub(crate) tokens: u64,
    /// Of the tokens, the prompts' and, of those, the cached ones (absent from a worker's
    /// result made before swarm carried them).
    #[serde(default)]
    pub(crate) prompt_tokens: u64,
    #[serde(default)]
    pub(crate) cached_tokens: u64,
    pub(crate) cost: Option<f64>,
    pub(crate) elapsed_ms: u64,
    pub(crate) stderr_tail: Vec<String>,
    /// The task-file lines a task that succeeded spawned (see `swarm::schedule::spawn`), or
    /// why they could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) spawn: Option<Result<String, String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Status {
    Succeeded,
    Failed,
    Interrupted,
    Limited,
    Fault,
}

/// A provider's usage limit that cut an attempt short.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Limit {
    pub(crate) message: String,
    pub(crate) resets_at_ms: Option<u64>,
    pub(crate) lasting: bool,
}

/// The file each record commit holds, the transcript a result holds besides, and the
/// signature a signed one holds.
pub(crate) const RECORD_FILE: &str = "record.json";
pub(crate) const TRANSCRIPT_FILE: &str = "transcript.log";
const SIGNATURE_FILE: &str = "signature";

/// A run's records as this machine writes and reads them: signed, and read only with a good
/// signature, when it has the key.
#[derive(Clone, Copy)]
pub(crate) struct Records<'a> {
    pub(crate) repo: &'a Repo,
    pub(crate) run: &'a str,
    pub(crate) key: Option<&'a Key>,
}

/// Why a record is not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unread {
    /// It is no record of swarm's: no `record.json`, or not one that reads.
    Broken(String),
    /// It has no signature, and this machine has the key.
    Unsigned,
    /// Its signature is not the key's for it.
    Forged,
}

impl std::fmt::Display for Unread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Broken(why) => write!(f, "it is no record swarm reads ({why})"),
            Self::Unsigned => write!(f, "it is not signed, and {KEY_VAR} is set here"),
            Self::Forged => write!(f, "its signature was not made with {KEY_VAR}"),
        }
    }
}

impl std::error::Error for Unread {}

impl Records<'_> {
    /// Record `record` for the ref `at`, with a result's transcript, as a commit on `parents`
    /// (whose objects a push of it carries): signed when there is a key.
    pub(crate) fn write<T: Serialize>(
        &self,
        at: Kind<'_>,
        record: &T,
        transcript: Option<&[u8]>,
        parents: &[CommitId],
        message: &str,
    ) -> anyhow::Result<CommitId> {
        let json = serde_json::to_vec_pretty(record)?;
        let signature = self.key.map(|key| {
            key.sign(
                &ref_name(self.run, &at.name()),
                &signed_files(&json, transcript),
            )
        });
        let mut files = vec![(RECORD_FILE, json.as_slice())];
        if let Some(transcript) = transcript {
            files.push((TRANSCRIPT_FILE, transcript));
        }
        if let Some(signature) = &signature {
            files.push((SIGNATURE_FILE, signature.as_bytes()));
        }
        self.repo.commit_files(&files, parents, message)
    }

    /// The record for the ref `at` that `commit` holds, if it reads and, when there is a key,
    /// is signed with it.
    pub(crate) fn read<T: serde::de::DeserializeOwned>(
        &self,
        at: Kind<'_>,
        commit: &CommitId,
    ) -> Result<T, Unread> {
        let file = |name| {
            self.repo
                .file_at(commit, name)
                .map_err(|e| Unread::Broken(format!("{e:#}")))
        };
        let json = file(RECORD_FILE)?
            .ok_or_else(|| Unread::Broken(format!("commit {commit} holds no {RECORD_FILE}")))?;
        if let Some(key) = self.key {
            let signature = file(SIGNATURE_FILE)?.ok_or(Unread::Unsigned)?;
            let transcript = file(TRANSCRIPT_FILE)?;
            let files = signed_files(&json, transcript.as_deref());
            if !key.verifies(&ref_name(self.run, &at.name()), &files, &signature) {
                return Err(Unread::Forged);
            }
        }
        serde_json::from_slice(&json).map_err(|e| Unread::Broken(e.to_string()))
    }
}

/// The files a signature covers: the record and, present or not, the transcript.
fn signed_files<'a>(
    json: &'a [u8],
    transcript: Option<&'a [u8]>,
) -> [(&'a str, Option<&'a [u8]>); 2] {
    [(RECORD_FILE, Some(json)), (TRANSCRIPT_FILE, transcript)]
}

/// The record a commit holds, whoever made it: for what trusts nothing in it (whether a run
/// ended, to tidy; whom a refused record claims to be from, to say so).
pub(crate) fn read<T: serde::de::DeserializeOwned>(
    repo: &Repo,
    commit: &CommitId,
) -> anyhow::Result<T> {
    use anyhow::Context as _;
    let bytes = repo
        .file_at(commit, RECORD_FILE)?
        .with_context(|| format!("commit {commit} holds no {RECORD_FILE}"))?;
    serde_json::from_slice(&bytes).with_context(|| format!("the record in commit {commit}"))
}

/// A worker's name in leases and results: the machine, the process and something random, so
/// two workers never share one.
pub(crate) fn worker_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".to_owned());
    format!("{host}-{}-{:04x}", std::process::id(), fastrand::u16(..))
}

#[cfg(test)]
mod tests {
    use super::{Kind, ref_name, task_ref};

    #[test]
    fn refs_are_named_under_the_run_and_read_back() {
        assert_eq!(ref_name("r1", "run"), "refs/swarm/r1/run");
        assert_eq!(task_ref("r1", "lease", "w2"), "refs/swarm/r1/lease/w2");
        assert_eq!(Kind::of("run"), Some(Kind::Run));
        assert_eq!(Kind::of("ready/a"), Some(Kind::Ready("a")));
        assert_eq!(Kind::of("lease/a"), Some(Kind::Lease("a")));
        assert_eq!(Kind::of("result/a"), Some(Kind::Result("a")));
        assert_eq!(Kind::of("other/a"), None);
        assert_eq!(Kind::of("ready"), None);
    }
}
