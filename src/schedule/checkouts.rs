//! The run's checkouts on disk: the readers' snapshots, one per commit and counted by their
//! readers; merged writers' checkouts set aside for the next writers; and the checkouts being
//! deleted in the background. Owns those files and nothing else: which task runs where is the
//! loop's to decide.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::git::{self, CommitId, Head, Repo};

/// A readers' snapshot and how many readers use it.
struct Snapshot {
    path: PathBuf,
    users: usize,
    /// Included files the user's checkout did not have.
    missing: Vec<String>,
}

pub(super) struct Checkouts {
    /// This run's checkout directory.
    root: PathBuf,
    snapshots: HashMap<CommitId, Snapshot>,
    /// Checkouts of merged writers, set aside for the next writers: updating one costs the
    /// files that differ, a new checkout costs every file.
    set_aside: Vec<PathBuf>,
    /// At most this many are set aside (one per writer that can run at once).
    keep: usize,
    /// Removed checkouts still being deleted in the background; joined by `close`.
    deleting: Vec<std::thread::JoinHandle<()>>,
    /// The user's checkout, and the files of it every snapshot gets a copy of.
    user: PathBuf,
    include: Vec<String>,
}

impl Checkouts {
    /// The checkouts under `root`; what a killed run had set aside there is removed. Snapshots
    /// get copies of the files `include` names in the user's checkout `user`.
    pub(super) fn open(
        root: &Path,
        keep: usize,
        user: &Path,
        include: &[String],
    ) -> anyhow::Result<Self> {
        let this = Self {
            root: root.to_owned(),
            snapshots: HashMap::new(),
            set_aside: Vec::new(),
            keep,
            deleting: Vec::new(),
            user: user.to_owned(),
            include: include.to_vec(),
        };
        // Where an earlier swarm set checkouts aside.
        git::remove_checkout(&root.join("(set aside)"))?;
        git::remove_unplaced(root)?;
        Ok(this)
    }

    /// The snapshot of `tip` for one more reader, made when it is the first; with the
    /// included files the user's checkout did not have.
    pub(super) fn acquire_snapshot(
        &mut self,
        repo: &Repo,
        tip: &CommitId,
    ) -> anyhow::Result<(PathBuf, Vec<String>)> {
        if let Some(s) = self.snapshots.get_mut(tip) {
            s.users += 1;
            return Ok((s.path.clone(), s.missing.clone()));
        }
        let path = self.root.join(format!("snap-{}", tip.short()));
        // Left over from a run that was killed: start it afresh.
        git::remove_checkout(&path)?;
        git::create_checkout(repo, &path, &Head::Detached(tip))
            .context("could not create the readers' snapshot")?;
        git::exclude(&path, &self.include)?;
        let missing = git::copy_included(&self.user, &path, &self.include)?;
        self.snapshots.insert(
            tip.clone(),
            Snapshot {
                path: path.clone(),
                users: 1,
                missing: missing.clone(),
            },
        );
        Ok((path, missing))
    }

    /// A reader of `commit`'s snapshot is done; the snapshot goes with its last reader unless
    /// it is still the tip's.
    pub(super) fn release_snapshot(
        &mut self,
        commit: &CommitId,
        tip: &CommitId,
    ) -> anyhow::Result<()> {
        let Some(s) = self.snapshots.get_mut(commit) else {
            return Ok(());
        };
        s.users -= 1;
        if s.users == 0
            && commit != tip
            && let Some(s) = self.snapshots.remove(commit)
        {
            git::remove_checkout(&s.path)?;
        }
        Ok(())
    }

    /// Snapshots of old tips that no reader uses any more go.
    pub(super) fn drop_stale_snapshots(&mut self, tip: &CommitId) -> anyhow::Result<()> {
        let stale: Vec<CommitId> = self
            .snapshots
            .iter()
            .filter(|(c, s)| s.users == 0 && *c != tip)
            .map(|(c, _)| c.clone())
            .collect();
        for c in stale {
            if let Some(s) = self.snapshots.remove(&c) {
                git::remove_checkout(&s.path)?;
            }
        }
        Ok(())
    }

    /// A checkout set aside for a new writer, if there is one.
    pub(super) fn take_set_aside(&mut self) -> Option<PathBuf> {
        self.set_aside.pop()
    }

    /// Puts a merged writer's checkout at `path` (its files at `at`) aside for the next
    /// writer when there is room, else deletes it in the background.
    pub(super) fn retire(&mut self, path: &Path, at: Option<&CommitId>) -> anyhow::Result<()> {
        if let Some(at) = at
            && self.set_aside.len() < self.keep
            && path.exists()
            && let Ok(place) = git::set_checkout_aside(path, at)
        {
            self.set_aside.push(place);
            return Ok(());
        }
        self.remove_later(path)
    }

    /// Deletes a checkout in the background.
    pub(super) fn remove_later(&mut self, path: &Path) -> anyhow::Result<()> {
        if let Some(deleting) = git::remove_checkout_later(path)? {
            self.deleting.push(deleting);
        }
        Ok(())
    }

    /// At the end of the run: every snapshot and set-aside checkout goes, the background
    /// deletions are waited for, and the run's directory goes when nothing is left in it (a
    /// failed or parked writer's checkout stays for a look).
    pub(super) fn close(&mut self) -> anyhow::Result<()> {
        for path in std::mem::take(&mut self.set_aside) {
            let _ = self.remove_later(&path);
        }
        let mut result = Ok(());
        for (_, s) in self.snapshots.drain() {
            result = result.and(git::remove_checkout(&s.path));
        }
        for deleting in self.deleting.drain(..) {
            let _ = deleting.join();
        }
        let _ = git::remove_unplaced(&self.root);
        let _ = std::fs::remove_dir(self.root.join(git::PLACES));
        let _ = std::fs::remove_dir(&self.root);
        result
    }
}
