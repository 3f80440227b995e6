//! Task checkouts: each is a repository of its own, outside the user's working tree, whose
//! objects come from the user's repository through `objects/info/alternates`. Whatever an agent
//! does with git in it (commit, reset, stash, `checkout -b`, `update-ref`, config, hooks) changes
//! only that copy. What comes back is decided here: the writer's commits are copied into the
//! user's object store and swarm sets one ref of its own namespace to them.

use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use git2::{Oid, Repository, Signature, build::CheckoutBuilder};

use super::{CommitId, DEFAULT_EMAIL, DEFAULT_NAME, Head, Repo};

/// Settings of the user's repository a checkout copies, so that agents' commits carry the
/// user's identity and files are written as in the user's own checkout.
const COPIED_CONFIG: &[&str] = &[
    "user.name",
    "user.email",
    "core.autocrlf",
    "core.eol",
    "core.symlinks",
    "core.ignorecase",
];

/// Files of the user's git directory a checkout copies: ignore rules and attributes that live
/// outside the tree, and a shallow clone's boundary (CI checks out one commit): the checkout
/// borrows objects that stop there, and without it libgit2 walks past it into parents nobody
/// has.
const COPIED_FILES: &[&str] = &["info/exclude", "info/attributes", "shallow"];

/// What a writer (or a resolver) left in its checkout, judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Left {
    /// No commit of its own and nothing uncommitted.
    Nothing,
    /// Its branch's commits on top of its start, with whatever was left uncommitted committed
    /// on top by swarm; copied into the user's repository, its branch set there.
    Commits(CommitId),
    /// The agent moved its HEAD off its task branch, or its branch off its start: nothing of it
    /// is taken. What it left is kept on the branch `kept` of the user's repository, when it
    /// holds anything the start does not.
    Refused { why: String, kept: Option<String> },
}

/// How swarm commits what a writer left uncommitted.
pub enum Commit<'a> {
    /// On top of the branch, with this message.
    Plain(&'a str),
    /// As the merge of the branch and `theirs` (a resolved conflict), with this message.
    MergeOf(&'a CommitId, &'a str),
}

/// Creates a checkout of its own at `path` with `head` checked out. Nothing of the user's
/// repository is written: the new repository borrows its objects.
pub fn create_checkout(repo: &Repo, path: &Path, head: &Head<'_>) -> anyhow::Result<()> {
    if path.exists() {
        anyhow::bail!("{} exists already", path.display());
    }
    std::fs::create_dir_all(path)
        .with_context(|| format!("could not create {}", path.display()))?;
    let commit = head.commit();
    write_git_dir(repo, path, &Head::Detached(commit))?;
    check_out(path, commit, false)?;
    write_head(path, head)
}

/// The directory beside a writer's checkout name where its files are (see
/// `create_placed_checkout`): a name no task id can take.
pub const PLACES: &str = "(checkouts)";

/// Creates a writer's checkout, reached at `path` (a link) and kept in a directory of its own
/// under `(checkouts)` beside it, which stays its path when it is set aside and reused by the
/// next writer: what a build cached under the checkout's path stays valid (rustc's incremental
/// cache, say, holds its sources' paths and is thrown away when they move).
pub fn create_placed_checkout(repo: &Repo, path: &Path, head: &Head<'_>) -> anyhow::Result<()> {
    if std::fs::symlink_metadata(path).is_ok() {
        anyhow::bail!("{} exists already", path.display());
    }
    let place = new_place(path)?;
    create_checkout(repo, &place, head)?;
    if link_place(path, &place).is_err() {
        // A file system without links: the checkout is at its name, and moves when reused.
        std::fs::rename(&place, path)
            .with_context(|| format!("could not move {} to {}", place.display(), path.display()))?;
    }
    Ok(())
}

/// Takes over the checkout set aside at `place` (see `set_checkout_aside`) as a new one at
/// `path` (a link to it) with `head` checked out; see `update_checkout`. On an error, the
/// caller removes both.
pub fn reuse_checkout(
    repo: &Repo,
    place: &Path,
    path: &Path,
    head: &Head<'_>,
    keep: &[String],
) -> anyhow::Result<()> {
    if std::fs::symlink_metadata(path).is_ok() {
        anyhow::bail!("{} exists already", path.display());
    }
    link_place(path, place)?;
    update_checkout(repo, path, head, keep)
}

/// Brings the checkout at `path` to `head`, where it stays: only the files that differ from
/// the commit its HEAD names are written, and files the new commit does not have (untracked
/// or ignored ones included) are removed, so it ends as a fresh checkout would, for a
/// fraction of the file creations; but the directories `keep` (a build's caches) stay as
/// they are. Its git directory is made anew but for the index (the baseline of that update)
/// and the record of its setup, so nothing an earlier agent configured, committed or stashed
/// there reaches the next one.
pub fn update_checkout(
    repo: &Repo,
    path: &Path,
    head: &Head<'_>,
    keep: &[String],
) -> anyhow::Result<()> {
    // What an agent's process left behind may have made `.git` a link to another repository
    // (the user's) since swarm last looked: nothing is removed or written through it.
    if !own_git_dir(path) {
        anyhow::bail!("{}'s .git is not a directory of its own", path.display());
    }
    let at = crate::planted::read(&path.join(".git").join("HEAD"), 4096)
        .ok()
        .and_then(|h| Oid::from_str(String::from_utf8_lossy(&h).trim()).ok())
        .with_context(|| format!("{} was not set aside by swarm", path.display()))?;
    let git = path.join(".git");
    for entry in std::fs::read_dir(&git)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let name = entry.file_name();
        // The index and the setup's record are kept only as files of the checkout's own.
        if kind.is_file() && (name == "index" || super::prepare::kept_in_git_dir(&name)) {
            continue;
        }
        let p = entry.path();
        if kind.is_dir() {
            std::fs::remove_dir_all(&p)?;
        } else {
            std::fs::remove_file(&p)?;
        }
    }
    if !git.join("index").is_file() {
        anyhow::bail!("{} has no index of its own to update from", path.display());
    }
    write_git_dir(repo, path, &Head::Detached(&CommitId::from(at)))?;
    let kept = super::prepare::set_kept_aside(path, keep)?;
    check_out(path, head.commit(), true)?;
    super::prepare::restore_kept(path, &kept)?;
    write_head(path, head)
}

/// A directory no checkout has yet under the places beside `path`, named after it.
fn new_place(path: &Path) -> anyhow::Result<PathBuf> {
    let places = path.parent().unwrap_or(Path::new(".")).join(PLACES);
    std::fs::create_dir_all(&places)
        .with_context(|| format!("could not create {}", places.display()))?;
    let name = path.file_name().unwrap_or_default();
    let mut place = places.join(name);
    let mut n = 1;
    while std::fs::symlink_metadata(&place).is_ok() {
        n += 1;
        let mut numbered = name.to_owned();
        numbered.push(format!("~{n}"));
        place = places.join(numbered);
    }
    Ok(place)
}

/// Links `path` to the checkout at `place` (by a relative link, so the run's checkouts can
/// be looked at wherever they are mounted).
fn link_place(path: &Path, place: &Path) -> anyhow::Result<()> {
    let name = place.file_name().unwrap_or_default();
    std::os::unix::fs::symlink(Path::new(PLACES).join(name), path)
        .with_context(|| format!("could not link {} to {}", path.display(), place.display()))
}

/// The directory `path` links to, when it is a link swarm made to a place beside it: one
/// name under `(checkouts)`. A link anyone else made is not followed.
fn placed_at(path: &Path) -> Option<PathBuf> {
    let target = std::fs::read_link(path).ok()?;
    let mut parts = target.components();
    let (Some(std::path::Component::Normal(places)), Some(std::path::Component::Normal(_)), None) =
        (parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    (places == PLACES).then(|| path.parent().unwrap_or(Path::new(".")).join(target))
}

/// The places under the run's checkout directory `root` that no checkout name links to (set
/// aside, or left half-made, by a run that was killed): removed.
pub fn remove_unplaced(root: &Path) -> anyhow::Result<()> {
    let places = root.join(PLACES);
    let Ok(entries) = std::fs::read_dir(&places) else {
        return Ok(());
    };
    let linked: std::collections::HashSet<PathBuf> = std::fs::read_dir(root)?
        .flatten()
        .filter_map(|e| placed_at(&e.path()))
        .collect();
    for entry in entries {
        let place = entry?.path();
        if !linked.contains(&place) {
            remove_checkout(&place)?;
        }
    }
    Ok(())
}

/// The `.git` directory of a checkout: its own refs, config and HEAD, the user's objects.
fn write_git_dir(repo: &Repo, path: &Path, head: &Head<'_>) -> anyhow::Result<()> {
    let git = path.join(".git");
    for dir in [
        "objects/info",
        "objects/pack",
        "refs/heads",
        "refs/tags",
        "info",
    ] {
        std::fs::create_dir_all(git.join(dir))?;
    }
    let mut alternates = repo.common_dir.join("objects").into_os_string().into_vec();
    alternates.push(b'\n');
    std::fs::write(git.join("objects/info/alternates"), alternates)?;
    let config = repo
        .checkout_config
        .get_or_init(|| make_checkout_config(repo));
    std::fs::write(git.join("config"), config)?;
    let refs = repo.checkout_refs.get_or_init(|| make_checkout_refs(repo));
    std::fs::write(git.join("packed-refs"), refs)?;
    for file in COPIED_FILES {
        let from = repo.common_dir.join(file);
        if from.is_file() {
            std::fs::copy(&from, git.join(file))?;
        }
    }
    write_head(path, head)
}

/// The configuration of a checkout: a plain repository, plus the user's settings that
/// decide who commits and how files are written.
fn make_checkout_config(repo: &Repo) -> String {
    let mut text = String::from(
        "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n",
    );
    let Ok(config) = repo.repo.config().and_then(|mut c| c.snapshot()) else {
        return text;
    };
    for key in COPIED_CONFIG {
        if let Ok(value) = config.get_string(key) {
            let Some((section, name)) = key.split_once('.') else {
                continue;
            };
            let quoted = value
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n");
            let _ = write!(text, "[{section}]\n\t{name} = \"{quoted}\"\n");
        }
    }
    text
}

/// The user's refs (branches, tags, remote-tracking branches; not swarm's own, not the
/// stash) as a `packed-refs` file, so that an agent's `git log main` or `git diff
/// origin/main...` works in its checkout. They are copies: moving them moves nothing of
/// the user's.
fn make_checkout_refs(repo: &Repo) -> Vec<u8> {
    let mut out = Vec::new();
    let Ok(refs) = repo.repo.references() else {
        return out;
    };
    let mut lines: Vec<(Vec<u8>, Oid)> = refs
        .flatten()
        .filter_map(|r| Some((r.name_bytes().to_vec(), r.target()?)))
        .filter(|(name, _)| {
            !name.starts_with(b"refs/heads/swarm/")
                && !name.starts_with(b"refs/swarm/")
                && name.as_slice() != b"refs/stash"
        })
        .collect();
    lines.sort();
    for (name, oid) in lines {
        out.extend_from_slice(oid.to_string().as_bytes());
        out.push(b' ');
        out.extend_from_slice(&name);
        out.push(b'\n');
    }
    out
}

/// Checks `commit` out into the checkout at `path`, over what its HEAD holds; with
/// `clean`, files the commit does not have are removed too.
fn check_out(path: &Path, commit: &CommitId, clean: bool) -> anyhow::Result<()> {
    let wt = open_checkout(path)?;
    let tree = wt.find_commit(commit.oid()?)?.tree()?;
    // Filters (line endings, smudge) need attribute lookups that cost libgit2 several
    // `realpath` calls per file; a tree without `.gitattributes` in a repository that
    // converts no line endings has nothing for them to do.
    let plain = !super::has_attributes(&tree)? && !super::converts_line_endings(&wt);
    let mut opts = CheckoutBuilder::new();
    opts.force().disable_filters(plain);
    if clean {
        opts.remove_untracked(true).remove_ignored(true);
    }
    wt.checkout_tree(tree.as_object(), Some(&mut opts))
        .with_context(|| format!("could not check out {commit} into {}", path.display()))?;
    Ok(())
}

/// Judges what a writer left in its checkout at `path`, started at `start` on `branch`:
/// its HEAD must still name `branch` and `branch` must still descend from `start`. Then
/// whatever is uncommitted is committed on top (see `Commit`), the commits are copied into
/// the user's repository and `branch` is set there. A refused result is kept on `keep_as`.
/// Files under `never` (the included ones), and what the checkout's setup made or changed and
/// the agent left as the setup left it, are never part of the result: they stay as `start`
/// has them, even where the agent committed them itself.
pub fn take_result(
    repo: &Repo,
    path: &Path,
    branch: &str,
    start: &CommitId,
    commit: &Commit<'_>,
    keep_as: &str,
    never: &[String],
) -> anyhow::Result<Left> {
    if !own_git_dir(path) {
        return Ok(Left::Refused {
            why: "its checkout's .git is no longer the directory swarm made (it was replaced by a link or a file); nothing of it is merged".to_owned(),
            kept: None,
        });
    }
    let wt = open_checkout(path)?;
    let start_oid = start.oid()?;
    let full = format!("refs/heads/{branch}");
    let head = wt.find_reference("HEAD")?;
    let refusal = match head.symbolic_target_bytes() {
        Some(target) if target == full.as_bytes() => match wt.refname_to_id(&full) {
            Ok(tip) if tip == start_oid || wt.graph_descendant_of(tip, start_oid)? => None,
            Ok(tip) => Some(format!(
                "its branch {branch} no longer descends from its start commit {} (it is at {}: reset below its start or rebased); nothing of it is merged",
                start.short(),
                CommitId::from(tip).short()
            )),
            Err(_) => Some(format!(
                "its branch {branch} was deleted in its checkout; nothing of it is merged"
            )),
        },
        Some(target) => Some(format!(
            "its checkout's HEAD names {} instead of its branch {branch}; nothing of it is merged",
            String::from_utf8_lossy(target)
        )),
        None => Some(format!(
            "its checkout's HEAD was detached from its branch {branch}; nothing of it is merged"
        )),
    };
    let left_out = LeftOut {
        start: wt.find_commit(start_oid)?.tree()?,
        include: never,
        setup: super::prepare::setup_paths(path),
        checkout: path,
    };
    if let Some(why) = refusal {
        let kept = keep_what_is_left(repo, &wt, branch, start_oid, keep_as, &left_out)?;
        return Ok(Left::Refused { why, kept });
    }
    let parent = wt.head()?.peel_to_commit()?;
    let made = match commit {
        Commit::Plain(message) => commit_all(&wt, &parent, None, Some("HEAD"), message, &left_out)?,
        Commit::MergeOf(theirs, message) => {
            let theirs = wt.find_commit(theirs.oid()?)?;
            commit_all(
                &wt,
                &parent,
                Some(&theirs),
                Some("HEAD"),
                message,
                &left_out,
            )?
        }
    };
    let tip = match made {
        Some(c) => c,
        None => wt.refname_to_id(&full)?,
    };
    if tip == start_oid {
        return Ok(Left::Nothing);
    }
    let mut known = vec![start_oid];
    if let Commit::MergeOf(theirs, _) = commit {
        known.push(theirs.oid()?);
    }
    copy_objects(repo, &wt, tip, &known)?;
    // Checked again in the user's repository, which has no grafts or shallow boundaries
    // of the agent's making to fake a descent.
    if !repo.repo.graph_descendant_of(tip, start_oid)? {
        let kept = keep_what_is_left(repo, &wt, branch, start_oid, keep_as, &left_out)?;
        return Ok(Left::Refused {
            why: format!(
                "its branch {branch} does not descend from its start commit {} in your repository; nothing of it is merged",
                start.short()
            ),
            kept,
        });
    }
    repo.repo
        .reference(&full, tip, true, "swarm: a task's result")
        .with_context(|| format!("could not set {full}"))?;
    Ok(Left::Commits(tip.into()))
}

/// What a refused writer left (its HEAD's commit, else its branch's, with anything
/// uncommitted committed on top), kept on the branch `keep_as` of the user's repository
/// when the start does not hold it all.
fn keep_what_is_left(
    repo: &Repo,
    wt: &Repository,
    branch: &str,
    start: Oid,
    keep_as: &str,
    left_out: &LeftOut<'_>,
) -> anyhow::Result<Option<String>> {
    let base = wt
        .head()
        .ok()
        .and_then(|h| h.peel_to_commit().ok())
        .or_else(|| {
            wt.find_reference(&format!("refs/heads/{branch}"))
                .and_then(|r| r.peel_to_commit())
                .ok()
        });
    let base = match base {
        Some(c) => c,
        None => wt.find_commit(start)?,
    };
    let left = commit_all(
        wt,
        &base,
        None,
        None,
        "What a swarm task left uncommitted",
        left_out,
    )?
    .unwrap_or_else(|| base.id());
    if left == start || wt.graph_descendant_of(start, left)? {
        return Ok(None);
    }
    copy_objects(repo, wt, left, &[start])?;
    let full = format!("refs/heads/{keep_as}");
    repo.repo
        .reference(&full, left, true, "swarm: what a refused task left")
        .with_context(|| format!("could not set {full}"))?;
    Ok(Some(keep_as.to_owned()))
}

/// Copies the objects of `tip` that `known` commits do not reach from a checkout's
/// repository into the user's, as one pack.
fn copy_objects(repo: &Repo, from: &Repository, tip: Oid, known: &[Oid]) -> anyhow::Result<()> {
    let mut walk = from.revwalk()?;
    walk.push(tip)?;
    for k in known {
        walk.hide(*k)?;
    }
    let mut pack = from.packbuilder()?;
    pack.insert_walk(&mut walk)?;
    if pack.object_count() == 0 {
        return Ok(());
    }
    let odb = repo.repo.odb()?;
    let mut writer = odb.packwriter()?;
    let mut failed = None;
    pack.foreach(|bytes| match writer.write_all(bytes) {
        Ok(()) => true,
        Err(e) => {
            failed = Some(e);
            false
        }
    })?;
    if let Some(e) = failed {
        return Err(e).context("could not copy a task's objects into your repository");
    }
    writer
        .commit()
        .context("could not copy a task's objects into your repository")?;
    Ok(())
}

impl Head<'_> {
    fn commit(&self) -> &CommitId {
        match self {
            Head::Detached(c) | Head::NewBranch(_, c) => c,
        }
    }
}

/// Points a checkout's HEAD at `head`, creating its branch in the checkout's own refs.
fn write_head(path: &Path, head: &Head<'_>) -> anyhow::Result<()> {
    let git = path.join(".git");
    let line = match head {
        Head::Detached(c) => format!("{c}\n"),
        Head::NewBranch(branch, c) => {
            let file = git.join("refs/heads").join(branch);
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&file, format!("{c}\n"))?;
            format!("ref: refs/heads/{branch}\n")
        }
    };
    std::fs::write(git.join("HEAD"), line)?;
    Ok(())
}

/// What a writer's result leaves out, whatever its checkout holds or its agent committed: it
/// keeps the version its start has (or stays out).
struct LeftOut<'a> {
    /// The tree of the commit the writer started from.
    start: git2::Tree<'a>,
    /// The included files (whole paths and what is under them).
    include: &'a [String],
    /// What the checkout's setup made, changed or removed: each left out while it is as the
    /// setup left it.
    setup: Vec<super::prepare::SetupPath>,
    checkout: &'a Path,
}

impl LeftOut<'_> {
    /// Puts what is left out back in `index` as the start has it.
    fn apply(&self, index: &mut git2::Index) -> anyhow::Result<()> {
        if !self.include.is_empty() {
            keep_starts_version(index, &self.start, |path| {
                super::prepare::is_under(path, self.include)
            })?;
        }
        let untouched: Vec<&[u8]> = self
            .setup
            .iter()
            .filter(|p| {
                let now = super::prepare::disk_blob(self.checkout, &p.path);
                now.map(|oid| oid.to_string()) == p.blob
            })
            .map(|p| p.path.as_slice())
            .collect();
        if !untouched.is_empty() {
            keep_starts_version(index, &self.start, |path| untouched.contains(&path))?;
        }
        Ok(())
    }
}

/// Commits everything changed in a checkout (new, modified and deleted files; `.gitignore`
/// honoured) on top of `parent`, with `theirs` as a second parent when given, moving
/// `update` (`HEAD`) when given. `None` when nothing changed (and there is no second parent).
/// What `left_out` names keeps the start's version (or stays out), whatever is in the
/// checkout, staged there or committed by the agent.
fn commit_all(
    repo: &Repository,
    parent: &git2::Commit<'_>,
    theirs: Option<&git2::Commit<'_>>,
    update: Option<&str>,
    message: &str,
    left_out: &LeftOut<'_>,
) -> anyhow::Result<Option<Oid>> {
    let mut index = repo.index()?;
    let never = left_out.include;
    let mut skip = |path: &Path, _: &[u8]| -> i32 {
        i32::from(super::prepare::is_under(
            path.as_os_str().as_encoded_bytes(),
            never,
        ))
    };
    index.add_all(["*"], git2::IndexAddOption::DEFAULT, Some(&mut skip))?;
    index.update_all(["*"], Some(&mut skip))?;
    left_out.apply(&mut index)?;
    let tree_id = index.write_tree()?;
    if tree_id == parent.tree_id() && theirs.is_none() {
        return Ok(None);
    }
    if update.is_some() {
        index.write()?;
    }
    let tree = repo.find_tree(tree_id)?;
    let sig = match repo.signature() {
        Ok(s) => s,
        Err(_) => Signature::now(DEFAULT_NAME, DEFAULT_EMAIL)?,
    };
    let parents: Vec<&git2::Commit<'_>> = std::iter::once(parent).chain(theirs).collect();
    Ok(Some(
        repo.commit(update, &sig, &sig, message, &tree, &parents)?,
    ))
}

/// Puts the entries whose paths `left` picks in `index` back to what `tree` has (none, when
/// it has none).
fn keep_starts_version(
    index: &mut git2::Index,
    tree: &git2::Tree<'_>,
    left: impl Fn(&[u8]) -> bool,
) -> anyhow::Result<()> {
    let staged: Vec<Vec<u8>> = index.iter().map(|e| e.path).filter(|p| left(p)).collect();
    for path in staged {
        index.remove_path(Path::new(std::ffi::OsStr::from_bytes(&path)))?;
    }
    let mut restore = Vec::new();
    tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        let mut path = dir.as_bytes().to_vec();
        path.extend_from_slice(entry.name_bytes());
        if entry.kind() == Some(git2::ObjectType::Blob) && left(&path) {
            restore.push((path, entry.id(), entry.filemode()));
        }
        git2::TreeWalkResult::Ok
    })?;
    for (path, id, mode) in restore {
        index.add(&git2::IndexEntry {
            ctime: git2::IndexTime::new(0, 0),
            mtime: git2::IndexTime::new(0, 0),
            dev: 0,
            ino: 0,
            mode: mode.cast_unsigned(),
            uid: 0,
            gid: 0,
            file_size: 0,
            id,
            flags: u16::try_from(path.len().min(0xfff)).unwrap_or(0xfff),
            flags_extended: 0,
            path,
        })?;
    }
    Ok(())
}

/// Opens a checkout's repository with its working tree where swarm put it, whatever its config
/// says (an agent's `core.worktree` could point swarm's commits and checkouts at the user's).
pub(super) fn open_checkout(path: &Path) -> anyhow::Result<Repository> {
    let repo = Repository::open_ext(
        path,
        git2::RepositoryOpenFlags::NO_SEARCH,
        std::iter::empty::<&std::ffi::OsStr>(),
    )
    .with_context(|| format!("could not open the checkout {}", path.display()))?;
    repo.set_workdir(path, false)?;
    Ok(repo)
}

/// Whether the checkout's `.git` is still a directory of its own, not a link or a `gitdir:`
/// file that an agent put there to point swarm at another repository (the user's, say).
fn own_git_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path.join(".git")).is_ok_and(|m| m.is_dir())
}

/// Paths in a reader's snapshot that differ from the commit it holds (new files included,
/// ignored ones not), and `HEAD` when its HEAD no longer is that commit, detached. Paths
/// under `never` (the files swarm copied in) do not count.
pub fn snapshot_changes(
    path: &Path,
    commit: &CommitId,
    never: &[String],
) -> anyhow::Result<Vec<String>> {
    // Readers of one snapshot follow each other on the same pool threads: keep the snapshot's
    // repository open per thread instead of opening it for every reader.
    thread_local! {
        static OPEN: std::cell::RefCell<Option<(PathBuf, Repository)>> =
            const { std::cell::RefCell::new(None) };
    }
    OPEN.with_borrow_mut(|open| {
        let (_, repo) = match open.take() {
            Some(kept) if kept.0 == path => open.insert(kept),
            _ => open.insert((path.to_owned(), open_checkout(path)?)),
        };
        if !own_git_dir(path) {
            return Ok(vec![".git".to_owned()]);
        }
        let mut changes = super::changes_in(repo)?;
        changes.retain(|c| !super::prepare::is_under(c.as_bytes(), never));
        let at = repo.head().ok().and_then(|h| h.target());
        if !repo.head_detached().unwrap_or(false) || at != Some(commit.oid()?) {
            changes.push("HEAD".to_owned());
        }
        Ok(changes)
    })
}

/// Puts a reader's snapshot back to `commit`: HEAD detached there, changes undone, new files
/// removed (ignored ones kept), the index reset.
pub fn restore_snapshot(path: &Path, commit: &CommitId) -> anyhow::Result<()> {
    // Never through a `.git` an agent replaced: that could be the user's.
    anyhow::ensure!(
        own_git_dir(path),
        "the snapshot's .git was replaced; it is not restored"
    );
    write_head(path, &Head::Detached(commit))?;
    let repo = open_checkout(path)?;
    let tree = repo.find_commit(commit.oid()?)?.tree()?;
    repo.checkout_tree(
        tree.as_object(),
        Some(CheckoutBuilder::new().force().remove_untracked(true)),
    )?;
    // Staged-only changes survive a checkout of the same tree; reset the index too.
    let mut index = repo.index()?;
    index.read_tree(&tree)?;
    index.write()?;
    Ok(())
}

/// Sets a merged writer's checkout at `path` aside for reuse, its HEAD detached at `at`, the
/// commit its files hold: its name goes and its files stay where they are, at the path this
/// returns. A checkout that is no link to a place moves to a new one.
pub fn set_checkout_aside(path: &Path, at: &CommitId) -> anyhow::Result<PathBuf> {
    let place = placed_at(path);
    // A link swarm did not make may point anywhere (the user's own checkout): nothing of
    // what it reaches is written.
    if place.is_none() && std::fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink()) {
        anyhow::bail!("{} is a link swarm did not make", path.display());
    }
    if !own_git_dir(path) {
        anyhow::bail!("{}'s .git is not a directory of its own", path.display());
    }
    // A new file, not whatever a link at HEAD points to.
    let head = path.join(".git").join("HEAD");
    let _ = std::fs::remove_file(&head);
    std::fs::write(&head, format!("{at}\n"))?;
    if let Some(place) = place {
        std::fs::remove_file(path)
            .with_context(|| format!("could not remove {}", path.display()))?;
        return Ok(place);
    }
    let place = new_place(path)?;
    std::fs::rename(path, &place)
        .with_context(|| format!("could not move {} to {}", path.display(), place.display()))?;
    Ok(place)
}

/// Removes a checkout: the files of a writer's and its name.
pub fn remove_checkout(path: &Path) -> anyhow::Result<()> {
    if let Some(place) = placed_at(path) {
        remove_dir(&place)?;
        return std::fs::remove_file(path)
            .with_context(|| format!("could not remove {}", path.display()));
    }
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink()) {
        return std::fs::remove_file(path)
            .with_context(|| format!("could not remove {}", path.display()));
    }
    remove_dir(path)
}

fn remove_dir(path: &Path) -> anyhow::Result<()> {
    match std::fs::remove_dir_all(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("could not remove {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// Like `remove_checkout`, but the files go in a background thread: the checkout is moved
/// aside at once (a rename), then deleted. The merge queue calls this, so deleting thousands
/// of files does not hold up the next merge.
pub fn remove_checkout_later(path: &Path) -> anyhow::Result<Option<std::thread::JoinHandle<()>>> {
    let files = placed_at(path).unwrap_or_else(|| path.to_owned());
    if !files.exists() {
        remove_checkout(path)?;
        return Ok(None);
    }
    let mut aside = files.as_os_str().to_owned();
    // A space: no task id, so no other checkout, can have this name.
    aside.push(" (removing)");
    let aside = PathBuf::from(aside);
    if std::fs::rename(&files, &aside).is_err() {
        remove_checkout(path)?;
        return Ok(None);
    }
    if files != path {
        std::fs::remove_file(path)
            .with_context(|| format!("could not remove {}", path.display()))?;
    }
    Ok(Some(std::thread::spawn(move || {
        let _ = std::fs::remove_dir_all(&aside);
    })))
}

/// Files larger than this are not scanned for conflict markers.
const MARKER_SCAN_CAP: u64 = 256 << 20;

/// Which of `paths` in a checkout still hold conflict markers.
pub fn files_with_conflict_markers(dir: &Path, paths: &[String]) -> Vec<String> {
    paths
        .iter()
        .filter(|p| {
            // One too large to scan counts as holding none.
            crate::planted::read(&dir.join(p), MARKER_SCAN_CAP).is_ok_and(|bytes| {
                String::from_utf8_lossy(&bytes).lines().any(|l| {
                    l.starts_with("<<<<<<< ") || l.starts_with(">>>>>>> ") || l == "======="
                })
            })
        })
        .cloned()
        .collect()
}
