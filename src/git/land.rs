//! Landing: fast-forwarding the user's branch to the run's integration tip and updating the
//! checkout, as a transaction. Everything is decided first; then the landed files are written
//! whole into a staging directory beside the git data (a full disk fails there, with the
//! checkout untouched), renamed into place one by one (each file is at any moment its old
//! version or its landed one), the index is updated, and the branch moves last. A landing cut
//! short is finished by the next one: a file already holding its landed version counts as
//! clean, and a stale lock of swarm's own on the index or the branch is recognised and
//! removed.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use git2::{FileMode, Oid, Status, Tree, build::CheckoutBuilder};

use super::{CommitId, Landing, Repo};

/// The file in the staging directory naming the process that lands, so that a landing killed
/// while writing the index is known by its stale `index.lock`.
const OWNER: &str = "owner";

/// The file in the staging directory written just before the branch moves, naming the ref:
/// a landing killed while it held that ref's lock is known by it.
const MOVING: &str = "moving";

/// What landing does to one path: its entry before and after (`None`: absent).
struct Change {
    path: Vec<u8>,
    old: Option<(Oid, FileMode)>,
    new: Option<(Oid, FileMode)>,
    /// A sparse checkout leaves the path out of the working tree (its index entry is
    /// skip-worktree): landing changes its index entry only, as git's checkout does.
    sparse: bool,
}

impl Change {
    /// Whether the entry before was a submodule (a commit, checked out on its own).
    fn was_submodule(&self) -> bool {
        self.old.is_some_and(|(_, m)| m == FileMode::Commit)
    }

    fn is_submodule(&self) -> bool {
        self.new.is_some_and(|(_, m)| m == FileMode::Commit)
    }
}

/// Fast-forwards the checked-out branch from `base` to `tip` and updates the checkout, only
/// if that branch is still at `base`, `tip` descends from it, no git operation is open,
/// the index is not locked and the checkout has no changes landing would touch. `staging`
/// is a directory of swarm's on the file system of the git directory.
pub fn land(
    repo: &Repo,
    base: &CommitId,
    tip: &CommitId,
    staging: &Path,
) -> anyhow::Result<Landing> {
    let kept = |reason: String| Ok(Landing::Kept { reason });
    clear_cut_short_landing(repo, staging)?;
    let Ok(head) = repo.repo.head() else {
        return kept("HEAD does not point at a commit".to_owned());
    };
    if !head.is_branch() {
        return kept("HEAD is detached".to_owned());
    }
    let branch_ref = head.name().unwrap_or_default().to_owned();
    let branch = head.shorthand().unwrap_or_default().to_owned();
    if head.target() == Some(tip.oid()?) && base != tip {
        // An earlier landing moved the branch, its last step: it is done.
        return Ok(Landing::FastForwarded { branch });
    }
    if head.target() != Some(base.oid()?) {
        return kept(format!("{branch} moved since the run started"));
    }
    // Never backwards, never sideways: the tip must hold the base.
    if !repo.contains(tip, base)? {
        return kept(format!(
            "the integration tip {} does not descend from the run's base {}",
            tip.short(),
            base.short()
        ));
    }
    if let Some(op) = repo.open_operation() {
        return kept(format!("a {op} is in progress in your checkout"));
    }
    if repo.repo.path().join("index.lock").exists() {
        return kept("another git process holds the index (.git/index.lock)".to_owned());
    }
    if let Some(lock) = ref_lock(repo, &branch_ref) {
        return kept(lock);
    }
    if base == tip {
        return Ok(Landing::FastForwarded { branch });
    }
    let from = repo.repo.find_commit(base.oid()?)?.tree()?;
    let to = repo.repo.find_commit(tip.oid()?)?.tree()?;
    let changes = changes(repo, &from, &to)?;
    if let Some(why) = blocked(repo, &changes)? {
        return kept(why);
    }
    if let Err(e) = stage(repo, &to, &changes, staging) {
        let _ = std::fs::remove_dir_all(staging);
        return kept(format!(
            "the landed files could not be written ({e:#}); nothing in your checkout was touched"
        ));
    }
    apply(repo, &changes, staging)
        .context("landing stopped partway; `swarm resume` finishes it")?;
    std::fs::write(staging.join(MOVING), &branch_ref)?;
    if let Err(e) = repo.move_ref(&branch_ref, base, tip, "swarm: land run") {
        // The branch moved while the files were written, or another process holds it: put
        // the checkout back.
        let why = if repo.repo.refname_to_id(&branch_ref).ok() == Some(base.oid()?) {
            ref_lock(repo, &branch_ref).unwrap_or_else(|| format!("{e:#}"))
        } else {
            format!("{branch} moved while the run landed")
        };
        let back: Vec<Change> = changes
            .into_iter()
            .map(|c| Change {
                path: c.path,
                old: c.new,
                new: c.old,
                sparse: c.sparse,
            })
            .collect();
        stage(repo, &from, &back, staging)?;
        apply(repo, &back, staging)?;
        std::fs::remove_dir_all(staging)?;
        return kept(format!("{why}; your checkout was put back as it was"));
    }
    std::fs::remove_dir_all(staging)?;
    Ok(Landing::FastForwarded { branch })
}

/// A landing cut short leaves its staging directory, and perhaps the index lock it held
/// while the owner named there is gone: both are removed.
fn clear_cut_short_landing(repo: &Repo, staging: &Path) -> anyhow::Result<()> {
    if !staging.exists() {
        return Ok(());
    }
    // The run's directory is within a task's reach: its records are read as planted files are.
    let read = |name: &str| {
        crate::planted::read(&staging.join(name), 64 * 1024)
            .ok()
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
    };
    let owner = read(OWNER).and_then(|p| p.trim().parse::<i32>().ok());
    let alive = owner.is_some_and(|pid| {
        pid != i32::try_from(std::process::id()).unwrap_or_default()
            && nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
    });
    if alive {
        anyhow::bail!(
            "another swarm (pid {}) is landing in this checkout",
            owner.unwrap_or_default()
        );
    }
    if owner.is_some() {
        remove_lock(&repo.repo.path().join("index.lock"))?;
        // Killed while it moved the branch: the ref's lock is its own.
        if let Some(name) = read(MOVING)
            && name.starts_with("refs/heads/")
        {
            repo.clear_stale_ref_lock(name.trim())?;
        }
    }
    std::fs::remove_dir_all(staging)
        .with_context(|| format!("could not remove {}", staging.display()))
}

/// Why the ref `name` cannot move, if another process holds its lock.
fn ref_lock(repo: &Repo, name: &str) -> Option<String> {
    let lock = repo.common_dir.join(format!("{name}.lock"));
    lock.exists().then(|| {
        format!(
            "another git process holds {} ({})",
            name.trim_start_matches("refs/heads/"),
            lock.display()
        )
    })
}

fn remove_lock(lock: &Path) -> anyhow::Result<()> {
    match std::fs::remove_file(lock) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("could not remove {}", lock.display()))
        }
        _ => Ok(()),
    }
}

/// Every path whose entry differs between two trees.
fn changes(repo: &Repo, from: &Tree<'_>, to: &Tree<'_>) -> anyhow::Result<Vec<Change>> {
    let diff = repo.repo.diff_tree_to_tree(Some(from), Some(to), None)?;
    let index = repo.repo.index()?;
    let mut by_path: BTreeMap<Vec<u8>, Change> = BTreeMap::new();
    for d in diff.deltas() {
        let entry = |f: git2::DiffFile<'_>| {
            (!f.id().is_zero() && f.mode() != FileMode::Unreadable).then(|| (f.id(), f.mode()))
        };
        let path = d
            .new_file()
            .path_bytes()
            .or_else(|| d.old_file().path_bytes())
            .context("a change without a path")?
            .to_vec();
        // A type change comes as a deletion and an addition of one path.
        let sparse = super::skips_worktree(&index, &path);
        let c = by_path.entry(path.clone()).or_insert(Change {
            path,
            old: None,
            new: None,
            sparse,
        });
        c.old = c.old.or(entry(d.old_file()));
        c.new = c.new.or(entry(d.new_file()));
    }
    Ok(by_path.into_values().collect())
}

/// Why the checkout cannot take these changes, if it cannot: a change to a tracked file,
/// or a file in the way of an added one, that is not already the landed version (what a
/// landing cut short left).
fn blocked(repo: &Repo, changes: &[Change]) -> anyhow::Result<Option<String>> {
    // A submodule's checkout may hold work of its own: landing never removes or replaces
    // it (like git, it moves no submodule's checkout either; only its index entry).
    if let Some(c) = changes
        .iter()
        .find(|c| c.was_submodule() && !c.is_submodule())
    {
        return Ok(Some(format!(
            "it removes or replaces the submodule {}",
            String::from_utf8_lossy(&c.path)
        )));
    }
    let dirty = repo.fingerprint()?;
    let landed = |path: &str| {
        changes
            .iter()
            .find(|c| c.path == path.as_bytes())
            .is_some_and(|c| holds(repo, &c.path, c.new))
    };
    for (path, (bits, _)) in &dirty.paths {
        let status = Status::from_bits_truncate(*bits);
        if landed(path) {
            continue;
        }
        if status != Status::WT_NEW {
            return Ok(Some("the working tree or index has changes".to_owned()));
        }
    }
    let removed = |p: &[u8]| changes.iter().any(|c| c.path == p && c.old.is_some());
    let inside =
        |p: &[u8], dir: &[u8]| p.len() > dir.len() && p.starts_with(dir) && p[dir.len()] == b'/';
    // A tracked directory that becomes a file: it gives way when landing removes its
    // files and none of the user's untracked ones are in it (ignored ones are expendable,
    // as git has them).
    let gives_way = |dir: &[u8]| {
        changes
            .iter()
            .any(|c| c.old.is_some() && inside(&c.path, dir))
            && !dirty.paths.keys().any(|p| inside(p.as_bytes(), dir))
    };
    for c in changes
        .iter()
        .filter(|c| c.new.is_some() && !c.is_submodule() && !c.sparse)
    {
        let at = repo.workdir.join(OsStr::from_bytes(&c.path));
        let in_the_way = match std::fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => !gives_way(&c.path),
            Ok(_) => c.old.is_none(),
            Err(_) => false,
        };
        if in_the_way && !holds(repo, &c.path, c.new) {
            return Ok(Some(format!(
                "the file {} in your checkout would be overwritten",
                String::from_utf8_lossy(&c.path)
            )));
        }
        // A file of the user's where the landed file needs a directory.
        for (i, _) in c.path.iter().enumerate().filter(|(_, b)| **b == b'/') {
            let dir = &c.path[..i];
            let at = repo.workdir.join(OsStr::from_bytes(dir));
            if std::fs::symlink_metadata(&at).is_ok_and(|m| !m.is_dir()) && !removed(dir) {
                return Ok(Some(format!(
                    "the file {} in your checkout would be overwritten",
                    String::from_utf8_lossy(dir)
                )));
            }
        }
    }
    Ok(None)
}

/// Whether the checkout's file at `path` is `entry` (absent for `None`).
fn holds(repo: &Repo, path: &[u8], entry: Option<(Oid, FileMode)>) -> bool {
    let at = repo.workdir.join(OsStr::from_bytes(path));
    let Some((id, mode)) = entry else {
        return std::fs::symlink_metadata(&at).is_err();
    };
    let Ok(meta) = std::fs::symlink_metadata(&at) else {
        return false;
    };
    let found = if mode == FileMode::Link {
        if !meta.file_type().is_symlink() {
            return false;
        }
        std::fs::read_link(&at)
            .ok()
            .and_then(|t| Oid::hash_object(git2::ObjectType::Blob, t.as_os_str().as_bytes()).ok())
    } else {
        if !meta.is_file() {
            return false;
        }
        Oid::hash_file(git2::ObjectType::Blob, &at).ok()
    };
    found == Some(id)
}

/// Writes the new version of every added or changed file of `to` into `staging`. Where
/// the repository filters files (line endings, attributes), libgit2's checkout writes them,
/// so they come out as in the user's own checkout; elsewhere, and for what that checkout
/// leaves out (a directory that became a file), the blobs are written as they are.
fn stage(repo: &Repo, to: &Tree<'_>, changes: &[Change], staging: &Path) -> anyhow::Result<()> {
    let _ = std::fs::remove_dir_all(staging);
    std::fs::create_dir_all(staging)?;
    std::fs::write(staging.join(OWNER), std::process::id().to_string())?;
    let files = staging.join("files");
    std::fs::create_dir_all(&files)?;
    let written: Vec<&Change> = changes
        .iter()
        .filter(|c| c.new.is_some() && !c.is_submodule() && !c.sparse)
        .collect();
    let filtered = super::has_attributes(to)? || super::converts_line_endings(&repo.repo);
    if filtered && !written.is_empty() {
        let mut opts = CheckoutBuilder::new();
        // The staging directory starts empty: every file asked for is missing there.
        opts.force()
            .recreate_missing(true)
            .target_dir(&files)
            .update_index(false)
            .disable_pathspec_match(true);
        for c in &written {
            opts.path(c.path.as_slice());
        }
        repo.repo.checkout_tree(to.as_object(), Some(&mut opts))?;
    }
    for c in written {
        let staged = files.join(OsStr::from_bytes(&c.path));
        if let Some((id, mode)) = c.new
            && std::fs::symlink_metadata(&staged).is_err()
        {
            write_blob(repo, id, mode, &staged)?;
        }
    }
    Ok(())
}

/// Writes the blob `id` at `at` as a file of `mode`: a plain or executable file, or a
/// symbolic link.
fn write_blob(repo: &Repo, id: Oid, mode: FileMode, at: &Path) -> anyhow::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    if let Some(parent) = at.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let blob = repo.repo.find_blob(id)?;
    if mode == FileMode::Link {
        std::os::unix::fs::symlink(OsStr::from_bytes(blob.content()), at)?;
    } else {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(if mode == FileMode::BlobExecutable {
                0o777
            } else {
                0o666
            })
            .open(at)?;
        // Not synced: git does not sync the files of a checkout either, and a kill loses
        // nothing that was written.
        file.write_all(blob.content())?;
    }
    Ok(())
}

/// Puts the staged files in place: removals first (a file may give way to a directory),
/// then each file renamed over its old version; then the index follows.
fn apply(repo: &Repo, changes: &[Change], staging: &Path) -> anyhow::Result<()> {
    let files = staging.join("files");
    for c in changes
        .iter()
        .filter(|c| c.old.is_some() && !c.was_submodule() && !c.sparse)
    {
        let at = repo.workdir.join(OsStr::from_bytes(&c.path));
        let is_dir = std::fs::symlink_metadata(&at).is_ok_and(|m| m.is_dir());
        if c.new.is_none() || (c.new.is_some() && is_dir) {
            remove_path(&at)?;
            prune_empty_parents(repo, &at);
        }
    }
    for c in changes.iter().filter(|c| c.new.is_some() && !c.sparse) {
        let at = repo.workdir.join(OsStr::from_bytes(&c.path));
        if c.is_submodule() {
            // As git leaves a submodule it has not checked out: an empty directory.
            if c.old.is_none() {
                make_dirs(&at)?;
            }
            continue;
        }
        if let Some(parent) = at.parent() {
            make_dirs(parent)?;
        }
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.is_dir()) {
            // A directory the landed file replaces: every file in it was removed above.
            std::fs::remove_dir_all(&at)?;
        }
        std::fs::rename(files.join(OsStr::from_bytes(&c.path)), &at)
            .with_context(|| format!("could not put {} in place", at.display()))?;
    }
    let mut index = repo.repo.index()?;
    index.read(true)?;
    for c in changes {
        let rel = Path::new(OsStr::from_bytes(&c.path));
        match c.new {
            Some((id, FileMode::Commit)) => index.add(&submodule_entry(&c.path, id))?,
            Some((id, mode)) if c.sparse => index.add(&sparse_entry(&c.path, id, mode))?,
            Some(_) => index.add_path(rel)?,
            None => {
                let _ = index.remove_path(rel);
            }
        }
    }
    index.write()?;
    Ok(())
}

/// Removes the directories above `path` that removing it emptied, up to the checkout.
fn prune_empty_parents(repo: &Repo, path: &Path) {
    let mut dir = path.parent();
    while let Some(d) = dir {
        if d == repo.workdir || std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}

/// The index entry of a file a sparse checkout leaves out: `id` as `mode`, still
/// skip-worktree.
fn sparse_entry(path: &[u8], id: Oid, mode: FileMode) -> git2::IndexEntry {
    let mut entry = submodule_entry(path, id);
    entry.mode = u32::try_from(i32::from(mode)).unwrap_or(0o100_644);
    entry.flags |= git2::IndexEntryFlag::EXTENDED.bits();
    entry.flags_extended |= git2::IndexEntryExtendedFlag::SKIP_WORKTREE.bits();
    entry
}

/// The index entry of a submodule at `path` whose commit is `id`.
fn submodule_entry(path: &[u8], id: Oid) -> git2::IndexEntry {
    let zero = git2::IndexTime::new(0, 0);
    git2::IndexEntry {
        ctime: zero,
        mtime: zero,
        dev: 0,
        ino: 0,
        mode: 0o160_000,
        uid: 0,
        gid: 0,
        file_size: 0,
        id,
        flags: path.len().min(0xfff) as u16,
        flags_extended: 0,
        path: path.to_vec(),
    }
}

fn remove_path(at: &PathBuf) -> anyhow::Result<()> {
    match std::fs::symlink_metadata(at) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(at)?,
        Ok(_) => std::fs::remove_file(at)?,
        Err(_) => {}
    }
    Ok(())
}

/// Creates `dir` and its parents. A file where a directory must be was removed before, as
/// part of the same landing, or the landing was refused.
fn make_dirs(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("could not create {}", dir.display()))
}
