//! The state of the user's checkout, taken before and after a task to tell whether anything
//! touched it: HEAD, every path that is not clean, and the files of the git directory no task
//! may change.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

use git2::{ErrorCode, StatusOptions};

use super::{CommitId, Repo};

/// See `Repo::fingerprint`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    head: Option<CommitId>,
    pub(super) paths: BTreeMap<String, (u32, Option<Stamp>)>,
    /// The files of the git directory no task may change, by path in it: refs outside
    /// swarm's own `refs/heads/swarm/` and `refs/swarm/`, the config, the hooks, HEAD and the stash's log.
    git: BTreeMap<String, Stamp>,
}

/// Size, modification seconds and nanoseconds of a file.
type Stamp = (u64, i64, i64);

impl Fingerprint {
    /// See `Repo::fingerprint`.
    pub(super) fn of(repo: &Repo) -> anyhow::Result<Self> {
        // A read that fails (too few file descriptors, say) is an error, never a change.
        let head = match repo.repo.head() {
            Ok(h) => h.target().map(CommitId::from),
            Err(e) if matches!(e.code(), ErrorCode::UnbornBranch | ErrorCode::NotFound) => None,
            Err(e) => return Err(e.into()),
        };
        let mut opts = StatusOptions::new();
        opts.include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(false)
            .exclude_submodules(true);
        let mut paths = BTreeMap::new();
        // Read only when a tracked file is missing: the index says whether a sparse checkout
        // left it out on purpose.
        let mut index = None;
        for s in repo.repo.statuses(Some(&mut opts))?.iter() {
            if s.status() == git2::Status::WT_DELETED {
                let index = match &mut index {
                    Some(index) => index,
                    None => index.insert(repo.repo.index()?),
                };
                if super::skips_worktree(index, s.path_bytes()) {
                    continue;
                }
            }
            let path = String::from_utf8_lossy(s.path_bytes()).into_owned();
            let meta = std::fs::symlink_metadata(repo.workdir.join(&path)).ok();
            let stamp = meta.map(|m| (m.len(), m.mtime(), m.mtime_nsec()));
            paths.insert(path, (s.status().bits(), stamp));
        }
        let mut git = BTreeMap::new();
        let common = &repo.common_dir;
        for file in [
            common.join("config"),
            common.join("packed-refs"),
            repo.repo.path().join("HEAD"),
        ] {
            stamp_files(common, &file, &mut git)?;
        }
        for dir in ["refs", "hooks", "logs/refs/stash"] {
            stamp_files(common, &common.join(dir), &mut git)?;
        }
        Ok(Self { head, paths, git })
    }

    /// Paths whose state differs between two fingerprints.
    pub fn changed_paths(&self, later: &Self) -> Vec<String> {
        let mut out: Vec<String> = later
            .paths
            .iter()
            .filter(|(p, v)| self.paths.get(*p) != Some(v))
            .map(|(p, _)| p.clone())
            .collect();
        out.extend(
            self.paths
                .keys()
                .filter(|p| !later.paths.contains_key(*p))
                .cloned(),
        );
        if self.head != later.head {
            out.push("HEAD".into());
        }
        out.extend(
            later
                .git
                .iter()
                .filter(|(p, v)| self.git.get(*p) != Some(v))
                .map(|(p, _)| p.clone()),
        );
        out.extend(
            self.git
                .keys()
                .filter(|p| !later.git.contains_key(*p))
                .cloned(),
        );
        out.sort();
        out.dedup();
        out
    }
}

/// Stamps `path` (a file, or every file under a directory) into `out`, by its path relative to
/// `common`; swarm's own branches are left out.
fn stamp_files(
    common: &Path,
    path: &Path,
    out: &mut BTreeMap<String, Stamp>,
) -> std::io::Result<()> {
    // Gone between listing and reading is no error: it is not there.
    let gone = |e: &std::io::Error| e.kind() == std::io::ErrorKind::NotFound;
    let rel = path.strip_prefix(common).unwrap_or(path);
    // swarm's own: its branches, and the refs of runs spread over machines (`remote`).
    if rel == Path::new("refs/heads/swarm") || rel == Path::new("refs/swarm") {
        return Ok(());
    }
    // git never runs a sample hook (`git init` leaves a dozen): only its name counts, when it
    // is renamed to run.
    if rel.starts_with("hooks") && path.extension().is_some_and(|e| e == "sample") {
        return Ok(());
    }
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if gone(&e) => return Ok(()),
        Err(e) => return Err(e),
    };
    if meta.is_dir() {
        let entries = match std::fs::read_dir(path) {
            Ok(entries) => entries,
            Err(e) if gone(&e) => return Ok(()),
            Err(e) => return Err(e),
        };
        for entry in entries {
            stamp_files(common, &entry?.path(), out)?;
        }
    } else {
        let name = format!(".git/{}", rel.display());
        out.insert(name, (meta.len(), meta.mtime(), meta.mtime_nsec()));
    }
    Ok(())
}
