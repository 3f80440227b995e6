//! The git commands that reach the remote: fetching a run's refs and pushing changes to them
//! with compare-and-swap. git itself does the talking, so every remote it can reach works (a
//! path, ssh, https with the user's credential helpers), and the remote's own locking makes
//! each push all or nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::git::CommitId;

/// A remote, as `git` names it from the repository at `dir`: a remote's name or a URL.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    dir: PathBuf,
    remote: String,
}

/// What a ref must be on the remote for a push to change it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expect {
    /// It must not exist: a claim, a result.
    Absent,
    /// It must still point here: a renewal, a release, an expiry.
    Is(CommitId),
    /// Whatever it is: refs only the coordinator writes.
    Any,
}

/// One ref of a push: set to `to`, or deleted.
#[derive(Debug, Clone)]
pub(crate) struct Update {
    pub(crate) name: String,
    pub(crate) to: Option<CommitId>,
    pub(crate) expect: Expect,
}

/// How a push that reached the remote ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pushed {
    /// Every ref changed, at once.
    Done,
    /// None changed: a ref was not as expected. What git said.
    Refused(String),
}

/// The remote could not be reached (or git failed before it spoke to it): what git said.
#[derive(Debug, Clone)]
pub(crate) struct Unreachable(pub(crate) String);

impl Transport {
    pub(crate) fn new(dir: &Path, remote: &str) -> Self {
        Self {
            dir: dir.to_owned(),
            remote: remote.to_owned(),
        }
    }

    pub(crate) fn remote(&self) -> &str {
        &self.remote
    }

    fn git(&self) -> Command {
        let mut cmd = Command::new("git");
        cmd.arg("-C")
            .arg(&self.dir)
            // A fetch that packs refs or starts maintenance would change the user's git
            // directory under the run's fingerprint of it.
            .args(["-c", "gc.auto=0", "-c", "maintenance.auto=false"])
            // No prompt for a password nobody is there to type: a failure instead.
            .env("GIT_TERMINAL_PROMPT", "0")
            // Nothing git starts (a credential helper, ssh) needs the key of the run's records.
            .env_remove(super::KEY_VAR)
            .stdin(Stdio::null());
        cmd
    }

    /// Whether git reaches the remote at all (it lists its refs).
    pub(crate) fn probe(&self) -> Result<(), Unreachable> {
        let mut cmd = self.git();
        cmd.args(["ls-remote", "--quiet"])
            .arg(&self.remote)
            .arg("refs/swarm/")
            .stdout(Stdio::null());
        ran(&mut cmd).map(drop)
    }

    /// What the remote's refs `names` (full names) point at; a ref it does not have is not in
    /// the map.
    pub(crate) fn list(&self, names: &[String]) -> Result<BTreeMap<String, CommitId>, Unreachable> {
        if names.is_empty() {
            return Ok(BTreeMap::new());
        }
        let out = ran(self
            .git()
            .args(["ls-remote", "--quiet"])
            .arg(&self.remote)
            .args(names))?;
        // `ls-remote` matches names by their tail: keep the exact ones.
        Ok(out
            .lines()
            .filter_map(|line| {
                let (oid, name) = line.split_once('\t')?;
                names
                    .iter()
                    .any(|n| n == name)
                    .then(|| (name.to_owned(), CommitId::new(oid)))
            })
            .collect())
    }

    /// Makes the local refs under `prefix` (`refs/swarm/<run>/`, or `refs/swarm/` for every
    /// run) what the remote has there, objects included, and returns them by name relative to
    /// `prefix`.
    pub(crate) fn fetch(&self, prefix: &str) -> Result<BTreeMap<String, CommitId>, Unreachable> {
        let spec = format!("+{prefix}*:{prefix}*");
        ran(self
            .git()
            .args([
                "fetch",
                "--quiet",
                "--prune",
                "--no-tags",
                "--no-write-fetch-head",
            ])
            .arg(&self.remote)
            .arg(&spec))?;
        let out = ran(self
            .git()
            .args(["for-each-ref", "--format=%(objectname) %(refname)"])
            .arg(prefix))?;
        Ok(out
            .lines()
            .filter_map(|line| {
                let (oid, name) = line.split_once(' ')?;
                Some((name.strip_prefix(prefix)?.to_owned(), CommitId::new(oid)))
            })
            .collect())
    }

    /// Pushes `updates` as one atomic push: all of them or, when any ref is not as expected,
    /// none. `Err` when the remote was not reached.
    pub(crate) fn push(&self, updates: &[Update]) -> Result<Pushed, Unreachable> {
        let Some(lines) = self.push_refs(updates, true)? else {
            return Ok(Pushed::Done);
        };
        if lines.iter().any(|(_, l)| l.starts_with("[rejected]")) {
            let said: Vec<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
            return Ok(Pushed::Refused(said.join("; ")));
        }
        Err(Unreachable(
            lines.first().map_or_else(String::new, |(_, l)| l.clone()),
        ))
    }

    /// Pushes `updates` in one push, each ref on its own: whether each changed (in order).
    /// `Err` when the remote was not reached at all.
    pub(crate) fn push_each(&self, updates: &[Update]) -> Result<Vec<bool>, Unreachable> {
        let lines = self.push_refs(updates, false)?.unwrap_or_default();
        Ok(updates
            .iter()
            .map(|u| !lines.iter().any(|(name, _)| *name == u.name))
            .collect())
    }

    /// One `git push`: `None` when every ref changed, else the refs that did not, with what
    /// git said of each. `Err` when the remote was not reached.
    fn push_refs(
        &self,
        updates: &[Update],
        atomic: bool,
    ) -> Result<Option<Vec<(String, String)>>, Unreachable> {
        if updates.is_empty() {
            return Ok(None);
        }
        let mut cmd = self.git();
        cmd.args(["push", "--porcelain", "--no-verify", "--quiet"]);
        if atomic {
            cmd.arg("--atomic");
        }
        for u in updates {
            match &u.expect {
                Expect::Absent => {
                    cmd.arg(format!("--force-with-lease={}:", u.name));
                }
                Expect::Is(oid) => {
                    cmd.arg(format!("--force-with-lease={}:{oid}", u.name));
                }
                Expect::Any => {}
            }
        }
        cmd.arg(&self.remote);
        for u in updates {
            let force = if u.expect == Expect::Any { "+" } else { "" };
            match &u.to {
                Some(to) => cmd.arg(format!("{force}{to}:{}", u.name)),
                None => cmd.arg(format!(":{}", u.name)),
            };
        }
        let out = cmd
            .output()
            .map_err(|e| Unreachable(format!("could not run git: {e}")))?;
        if out.status.success() {
            return Ok(None);
        }
        // `--porcelain` gives one line per ref once the remote answered: `!` marks a ref not
        // changed. `[rejected]` is a ref not as expected (the compare-and-swap failed);
        // `[remote rejected]` is the remote failing to make the change (a lock another push
        // holds, a full disk), which a later try may get past.
        let stdout = String::from_utf8_lossy(&out.stdout);
        let why = said(&out.stderr);
        let lines: Vec<(String, String)> = stdout
            .lines()
            .filter_map(|l| {
                let mut parts = l.strip_prefix('!')?.trim_start_matches('\t').split('\t');
                let name = parts.next()?.rsplit(':').next()?.to_owned();
                let said = parts.next().unwrap_or_default();
                Some((name, format!("{said}: {why}")))
            })
            .collect();
        if lines.is_empty() {
            return Err(Unreachable(why));
        }
        Ok(Some(lines))
    }
}

/// Runs `cmd` (a git command): what it printed, or what it said went wrong.
fn ran(cmd: &mut Command) -> Result<String, Unreachable> {
    let out = cmd
        .output()
        .map_err(|e| Unreachable(format!("could not run git: {e}")))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(Unreachable(said(&out.stderr)))
    }
}

/// What git said went wrong, as the reason: its lines but the advice it adds to every failure
/// to reach a remote ("Please make sure you have the correct access rights / and the
/// repository exists.", which cut to its last line reads as the opposite of what is meant)
/// and its hints, without their `fatal:` or `error:`.
fn said(stderr: &[u8]) -> String {
    const ADVICE: &[&str] = &[
        "fatal: Could not read from remote repository.",
        "Please make sure you have the correct access rights",
        "and the repository exists.",
    ];
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !ADVICE.contains(l) && !l.starts_with("hint:"))
        .map(|l| {
            l.strip_prefix("fatal: ")
                .or_else(|| l.strip_prefix("error: "))
                .unwrap_or(l)
        })
        .collect();
    if lines.is_empty() {
        return if text.trim().is_empty() {
            "git failed and said nothing".to_owned()
        } else {
            "git could not read from the remote repository".to_owned()
        };
    }
    lines.join("; ")
}

/// The wait before the `n`th retry (from 1) of a remote that did not answer: half a second,
/// doubling, at most 15 s.
pub(crate) fn retry_wait(n: u32) -> Duration {
    let ms = 500u64.saturating_mul(1 << n.saturating_sub(1).min(5));
    Duration::from_millis(ms.min(15_000))
}

#[cfg(test)]
mod tests {
    use super::{retry_wait, said};
    use std::time::Duration;

    #[test]
    fn what_git_said_leaves_out_its_advice_and_prefixes() {
        let unreachable = b"fatal: 'orgin' does not appear to be a git repository\nfatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\nand the repository exists.\n";
        assert_eq!(
            said(unreachable),
            "'orgin' does not appear to be a git repository"
        );
        let ssh = b"ssh: Could not resolve hostname nowhere: Name or service not known\nfatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\nand the repository exists.\n";
        assert_eq!(
            said(ssh),
            "ssh: Could not resolve hostname nowhere: Name or service not known"
        );
        let refused = b"error: failed to push some refs to '/r.git'\nhint: Updates were rejected\n";
        assert_eq!(said(refused), "failed to push some refs to '/r.git'");
        assert_eq!(said(b""), "git failed and said nothing");
    }

    #[test]
    fn retries_back_off_to_a_cap() {
        assert_eq!(retry_wait(1), Duration::from_millis(500));
        assert_eq!(retry_wait(2), Duration::from_secs(1));
        assert_eq!(retry_wait(5), Duration::from_secs(8));
        assert_eq!(retry_wait(6), Duration::from_secs(15));
        assert_eq!(retry_wait(60), Duration::from_secs(15));
    }
}
