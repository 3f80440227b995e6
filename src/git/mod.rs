//! Git plumbing: finding the repository, task checkouts outside the user's working tree (each a
//! repository of its own, see `checkout`), taking a writer's result, in-memory merges
//! (`merge`), compare-and-swap ref moves and landing. Mechanisms only: which merge to do, and
//! when, is decided by the scheduler. Nothing here runs hooks (libgit2 has none) or touches the
//! user's working tree except `land`.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

mod checkout;
mod files;
mod fingerprint;
mod foresee;
mod land;
mod merge;
mod prepare;

pub use checkout::{
    Commit, Left, PLACES, create_checkout, create_placed_checkout, files_with_conflict_markers,
    remove_checkout, remove_checkout_later, remove_unplaced, restore_snapshot, reuse_checkout,
    set_checkout_aside, snapshot_changes, take_result, update_checkout,
};
pub use files::list_files;
pub use fingerprint::Fingerprint;
pub use foresee::{Live, foresee};
use git2::{
    BranchType, ErrorCode, MergeOptions, Oid, Repository, RepositoryOpenFlags, Signature, Status,
    StatusOptions, build::CheckoutBuilder,
};
pub use land::land;
pub use merge::{merge, scan_change};
pub use prepare::{
    cache_key, check_included, copy_included, exclude, record_setup, remove_links_out, seed,
    setup_holds,
};

/// A commit, as full hex.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CommitId(String);

impl CommitId {
    pub fn new(hex: &str) -> Self {
        Self(hex.to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn short(&self) -> &str {
        &self.0[..self.0.len().min(12)]
    }

    fn oid(&self) -> anyhow::Result<Oid> {
        Oid::from_str(&self.0).with_context(|| format!("bad commit id {:?}", self.0))
    }
}

impl From<Oid> for CommitId {
    fn from(oid: Oid) -> Self {
        Self(oid.to_string())
    }
}

impl fmt::Display for CommitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Who swarm's commits are by when the repository configures no identity.
pub const DEFAULT_NAME: &str = "swarm";
pub const DEFAULT_EMAIL: &str = "swarm@localhost";

/// The user's repository.
pub struct Repo {
    #[expect(
        clippy::struct_field_names,
        reason = "the git2 handle inside swarm's Repo"
    )]
    repo: Repository,
    workdir: PathBuf,
    common_dir: PathBuf,
    /// The configuration every task checkout gets (see `checkout`), made once.
    checkout_config: std::sync::OnceLock<String>,
    /// The user's refs as every task checkout gets them (see `checkout`), read once.
    checkout_refs: std::sync::OnceLock<Vec<u8>>,
}

/// What a checkout's HEAD is.
pub enum Head<'a> {
    Detached(&'a CommitId),
    /// A new branch `refs/heads/<name>` at the commit.
    NewBranch(&'a str, &'a CommitId),
}

/// How a merge ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merge {
    /// The integration ref moved from `before` to `after`.
    Merged { before: CommitId, after: CommitId },
    /// Nothing merged; these paths conflict.
    Conflicted { paths: Vec<String> },
    /// Nothing merged: git might merge these paths otherwise than swarm would (a directory
    /// one side removed, holding files the other side added), or the merge itself failed.
    Refused { why: String, paths: Vec<String> },
    /// Nothing merged: the integration ref no longer points at the tip swarm recorded.
    Moved { found: Option<CommitId> },
}

/// Whether a file is tracked, and clean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tracked {
    No,
    Clean,
    Changed,
}

/// What landing did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Landing {
    /// The user's branch was fast-forwarded and the checkout updated.
    FastForwarded { branch: String },
    /// Left alone, for this reason.
    Kept { reason: String },
}

impl Repo {
    /// Finds the repository containing `dir`.
    pub fn discover(dir: &Path) -> anyhow::Result<Self> {
        let repo = Repository::open_ext(
            dir,
            RepositoryOpenFlags::empty(),
            std::iter::empty::<&str>(),
        )
        .with_context(|| format!("{} is not inside a git repository", dir.display()))?;
        let Some(workdir) = repo.workdir().map(Path::to_owned) else {
            bail!(
                "{} is a bare repository; swarm needs a checkout",
                repo.path().display()
            );
        };
        let common_dir = std::fs::canonicalize(repo.commondir())?;
        Ok(Self {
            repo,
            workdir,
            common_dir,
            checkout_config: std::sync::OnceLock::new(),
            checkout_refs: std::sync::OnceLock::new(),
        })
    }

    /// The git operation left open in the checkout (a merge, a rebase, …), if any.
    pub fn open_operation(&self) -> Option<&'static str> {
        use git2::RepositoryState as S;
        match self.repo.state() {
            S::Clean => None,
            S::Merge => Some("merge"),
            S::Revert | S::RevertSequence => Some("revert"),
            S::CherryPick | S::CherryPickSequence => Some("cherry-pick"),
            S::Bisect => Some("bisect"),
            S::Rebase | S::RebaseInteractive | S::RebaseMerge => Some("rebase"),
            S::ApplyMailbox | S::ApplyMailboxOrRebase => Some("git am"),
        }
    }

    /// The checkout's own git directory (for a linked worktree, not the common one).
    pub fn git_dir(&self) -> &Path {
        self.repo.path()
    }

    /// Whether `path` (absolute, inside the checkout) is a tracked file, and whether it has
    /// uncommitted changes.
    pub fn tracked_state(&self, path: &Path) -> anyhow::Result<Tracked> {
        let workdir = std::fs::canonicalize(&self.workdir)?;
        let Ok(rel) = path.strip_prefix(&workdir) else {
            return Ok(Tracked::No);
        };
        match self.repo.status_file(rel) {
            Ok(s) if s.is_empty() => Ok(Tracked::Clean),
            Ok(s) if s.intersects(Status::WT_NEW | Status::IGNORED) => Ok(Tracked::No),
            Ok(_) => Ok(Tracked::Changed),
            Err(e) if e.code() == ErrorCode::NotFound => Ok(Tracked::No),
            Err(e) => Err(e.into()),
        }
    }

    pub fn workdir(&self) -> &Path {
        &self.workdir
    }

    pub fn common_dir(&self) -> &Path {
        &self.common_dir
    }

    /// Resolves a revision to a commit.
    pub fn resolve(&self, rev: &str) -> anyhow::Result<CommitId> {
        let obj = self
            .repo
            .revparse_single(rev)
            .map_err(|e| anyhow::anyhow!("unknown revision {rev:?} ({})", e.message()))?;
        let commit = obj
            .peel_to_commit()
            .map_err(|_| anyhow::anyhow!("{rev:?} does not name a commit"))?;
        Ok(commit.id().into())
    }

    /// Whether the checked-out branch has no commit yet (a repository just made).
    pub fn is_unborn(&self) -> bool {
        self.repo
            .head()
            .is_err_and(|e| e.code() == ErrorCode::UnbornBranch)
    }

    /// The commit a full ref name points at, if it exists.
    pub fn ref_target(&self, name: &str) -> anyhow::Result<Option<CommitId>> {
        match self.repo.find_reference(name) {
            Ok(r) => Ok(r.target().map(CommitId::from)),
            Err(e) if e.code() == ErrorCode::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Removes the lock file of the ref `name` (a full ref name) that a process killed while
    /// moving it left behind; libgit2, like git, refuses to touch a locked ref. Only for refs
    /// nobody else can be writing: a run's own refs while the run lock is held, and the
    /// branch a landing of swarm's was killed while moving.
    pub fn clear_stale_ref_lock(&self, name: &str) -> anyhow::Result<()> {
        let lock = self.common_dir.join(format!("{name}.lock"));
        match std::fs::remove_file(&lock) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e)
                .with_context(|| format!("could not remove the stale lock {}", lock.display())),
            _ => Ok(()),
        }
    }

    /// Creates a branch; fails if it exists.
    pub fn create_branch(&self, name: &str, at: &CommitId) -> anyhow::Result<()> {
        let commit = self.repo.find_commit(at.oid()?)?;
        self.repo
            .branch(name, &commit, false)
            .with_context(|| format!("could not create branch {name}"))?;
        Ok(())
    }

    /// Deletes a branch if it points at `expected` and no checkout has it as its HEAD.
    ///
    /// The ref is deleted directly rather than with libgit2's branch deletion: that one scans
    /// every worktree and takes one being created or removed at that moment by another thread
    /// for a checkout of the branch, so it fails at random while writers start.
    pub fn delete_branch_at(&self, name: &str, expected: &CommitId) -> anyhow::Result<bool> {
        let full = format!("refs/heads/{name}");
        match self.repo.find_reference(&full) {
            Ok(mut r) if r.target() == Some(expected.oid()?) => {
                if self.is_checked_out(&full) {
                    return Ok(false);
                }
                // Deleting checks the ref still points where it was read: a compare-and-swap.
                r.delete()
                    .with_context(|| format!("could not delete branch {name}"))?;
                Ok(true)
            }
            Ok(_) => Ok(false),
            Err(e) if e.code() == ErrorCode::NotFound => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether the main checkout or a linked worktree has the ref `full` as its HEAD. Admin
    /// directories that cannot be read (being created or removed) hold nobody's checkout.
    fn is_checked_out(&self, full: &str) -> bool {
        let wanted = format!("ref: {full}");
        let heads = std::iter::once(self.common_dir.join("HEAD")).chain(
            std::fs::read_dir(self.common_dir.join("worktrees"))
                .into_iter()
                .flatten()
                .flatten()
                .map(|entry| entry.path().join("HEAD")),
        );
        heads
            .filter_map(|head| std::fs::read_to_string(head).ok())
            .any(|head| head.trim_end() == wanted)
    }

    /// Local branches whose names start with `prefix`, with their tips.
    pub fn branches_with_prefix(&self, prefix: &str) -> anyhow::Result<Vec<(String, CommitId)>> {
        let mut out = Vec::new();
        for b in self.repo.branches(Some(BranchType::Local))? {
            let (b, _) = b?;
            if let (Some(name), Some(target)) = (b.name()?, b.get().target())
                && name.starts_with(prefix)
            {
                out.push((name.to_owned(), target.into()));
            }
        }
        Ok(out)
    }

    /// Whether `commit` is reachable from `from`.
    pub fn contains(&self, from: &CommitId, commit: &CommitId) -> anyhow::Result<bool> {
        let (from, commit) = (from.oid()?, commit.oid()?);
        Ok(from == commit || self.repo.graph_descendant_of(from, commit)?)
    }

    /// The branch HEAD is on (`main`), or `None` when it is detached.
    pub fn head_branch(&self) -> Option<String> {
        let head = self.repo.head().ok()?;
        head.is_branch()
            .then(|| head.shorthand().map(str::to_owned))
            .flatten()
    }

    /// The URL of the remote `name` as its configuration writes it, before any `insteadOf`
    /// (what tells a forge's project); `None` when there is no such remote.
    pub fn remote_url(&self, name: &str) -> Option<String> {
        self.repo
            .config()
            .ok()?
            .get_string(&format!("remote.{name}.url"))
            .ok()
    }

    /// The change from `before` to `after` made again on `onto`, as one commit with `message`
    /// and `after`'s author and committer (so the same replay makes the same commit); `None`
    /// when it does not apply there without a conflict. Its objects are written, no ref is set.
    pub fn replay(
        &self,
        before: &CommitId,
        after: &CommitId,
        onto: &CommitId,
        message: &str,
    ) -> anyhow::Result<Option<CommitId>> {
        let find = |c: &CommitId| -> anyhow::Result<git2::Commit<'_>> {
            Ok(self.repo.find_commit(c.oid()?)?)
        };
        let (ancestor, theirs, ours) = (find(before)?, find(after)?, find(onto)?);
        let mut options = git2::MergeOptions::new();
        options.fail_on_conflict(false);
        let mut index = self.repo.merge_trees(
            &ancestor.tree()?,
            &ours.tree()?,
            &theirs.tree()?,
            Some(&options),
        )?;
        if index.has_conflicts() {
            return Ok(None);
        }
        let tree = self.repo.find_tree(index.write_tree_to(&self.repo)?)?;
        let oid = self.repo.commit(
            None,
            &theirs.author(),
            &theirs.committer(),
            message,
            &tree,
            &[&ours],
        )?;
        Ok(Some(CommitId::from(oid)))
    }

    /// Removes a worktree made by `add_worktree`: its files and its admin directory.
    pub fn remove_worktree(&self, name: &str, path: &Path) -> anyhow::Result<()> {
        if path.exists() {
            std::fs::remove_dir_all(path)
                .with_context(|| format!("could not remove {}", path.display()))?;
        }
        let admin = self.common_dir.join("worktrees").join(name);
        if admin.exists() {
            std::fs::remove_dir_all(&admin)?;
        }
        Ok(())
    }

    /// Names of worktrees in the admin directory that start with `prefix`, with their paths.
    pub fn worktrees_with_prefix(&self, prefix: &str) -> anyhow::Result<Vec<(String, PathBuf)>> {
        let dir = self.common_dir.join("worktrees");
        let mut out = Vec::new();
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Ok(out);
        };
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with(prefix) {
                continue;
            }
            let gitdir = std::fs::read_to_string(entry.path().join("gitdir")).unwrap_or_default();
            let path = Path::new(gitdir.trim())
                .parent()
                .map(Path::to_owned)
                .unwrap_or_default();
            out.push((name, path));
        }
        out.sort();
        Ok(out)
    }

    /// Moves the integration ref `into_ref` from `expected` onto `to` (a commit that already
    /// is the merge), only if it still points at `expected`.
    pub fn advance(
        &self,
        into_ref: &str,
        expected: &CommitId,
        to: &CommitId,
        msg: &str,
    ) -> anyhow::Result<Merge> {
        if let Err(e) =
            self.repo
                .reference_matching(into_ref, to.oid()?, true, expected.oid()?, msg)
        {
            return self.not_moved(into_ref, expected, e);
        }
        Ok(Merge::Merged {
            before: expected.clone(),
            after: to.clone(),
        })
    }

    /// After a compare-and-swap of `into_ref` failed: `Merge::Moved` if someone else moved
    /// it, else the error (a stale lock, a full disk), which is no move.
    fn not_moved(
        &self,
        into_ref: &str,
        expected: &CommitId,
        error: git2::Error,
    ) -> anyhow::Result<Merge> {
        let found = self.ref_target(into_ref)?;
        if found.as_ref() == Some(expected) {
            return Err(error).with_context(|| format!("could not move {into_ref}"));
        }
        Ok(Merge::Moved { found })
    }

    /// Points the branch `name` (one of swarm's own) at `at`, creating it if need be.
    pub fn set_branch(&self, name: &str, at: &CommitId) -> anyhow::Result<()> {
        self.repo
            .reference(&format!("refs/heads/{name}"), at.oid()?, true, "swarm")
            .with_context(|| format!("could not set branch {name}"))?;
        Ok(())
    }

    /// The parents of a commit, first parent first.
    pub fn parents(&self, commit: &CommitId) -> anyhow::Result<Vec<CommitId>> {
        Ok(self
            .repo
            .find_commit(commit.oid()?)?
            .parent_ids()
            .map(CommitId::from)
            .collect())
    }

    /// Moves a ref from `from` to `to`, only if it still points at `from`.
    pub fn move_ref(
        &self,
        name: &str,
        from: &CommitId,
        to: &CommitId,
        msg: &str,
    ) -> anyhow::Result<()> {
        self.repo
            .reference_matching(name, to.oid()?, true, from.oid()?, msg)
            .with_context(|| format!("could not move {name}"))?;
        Ok(())
    }

    /// A commit of `files` (name and contents, at the top of its tree) on `parents`: how a run
    /// spread over machines passes its records through the remote (see `remote`). Its objects
    /// are written, no ref is set.
    pub fn commit_files(
        &self,
        files: &[(&str, &[u8])],
        parents: &[CommitId],
        message: &str,
    ) -> anyhow::Result<CommitId> {
        let mut tree = self.repo.treebuilder(None)?;
        for (name, contents) in files {
            let blob = self.repo.blob(contents)?;
            tree.insert(name, blob, 0o100_644)?;
        }
        let tree = self.repo.find_tree(tree.write()?)?;
        let parents = parents
            .iter()
            .map(|p| Ok(self.repo.find_commit(p.oid()?)?))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
        let sig = Signature::now(DEFAULT_NAME, DEFAULT_EMAIL)?;
        let oid = self
            .repo
            .commit(None, &sig, &sig, message, &tree, &parents)?;
        Ok(CommitId::from(oid))
    }

    /// The file `name` at the top of `commit`'s tree (see `commit_files`); `None` when the
    /// commit has no such file.
    pub fn file_at(&self, commit: &CommitId, name: &str) -> anyhow::Result<Option<Vec<u8>>> {
        let tree = self.repo.find_commit(commit.oid()?)?.tree()?;
        let Some(entry) = tree.get_name(name) else {
            return Ok(None);
        };
        let blob = self.repo.find_blob(entry.id())?;
        Ok(Some(blob.content().to_vec()))
    }

    /// The identity of swarm's commits: the repository's configured user, else the default.
    fn signature(&self) -> anyhow::Result<Signature<'static>> {
        match self.repo.signature() {
            Ok(s) => Ok(s),
            Err(_) => Ok(Signature::now(DEFAULT_NAME, DEFAULT_EMAIL)?),
        }
    }

    /// The state of the user's checkout: HEAD, and every path that is not clean with its
    /// status, size and modification time. Two equal fingerprints mean nobody touched it.
    pub fn fingerprint(&self) -> anyhow::Result<Fingerprint> {
        Fingerprint::of(self)
    }
}

/// Whether git takes `name` for a branch (`git check-ref-format --branch`, and not an option).
pub fn is_branch_name(name: &str) -> bool {
    git2::Reference::is_valid_name(&format!("refs/heads/{name}")) && !name.starts_with('-')
}

/// A new, empty repository at `dir`, for tests of other modules that need one.
#[cfg(test)]
pub fn init(dir: &Path) -> anyhow::Result<()> {
    Repository::init(dir)?;
    Ok(())
}

/// Whether any directory of `tree` holds a `.gitattributes` file.
fn has_attributes(tree: &git2::Tree<'_>) -> anyhow::Result<bool> {
    let mut found = false;
    tree.walk(git2::TreeWalkMode::PreOrder, |_, entry| {
        if entry.name_bytes() == b".gitattributes" {
            found = true;
            return git2::TreeWalkResult::Abort;
        }
        git2::TreeWalkResult::Ok
    })
    .or_else(|e| if found { Ok(()) } else { Err(e) })?;
    Ok(found)
}

/// Whether the configuration asks for line-ending conversion on checkout, or names
/// attributes outside the tree (`core.attributesFile`, `info/attributes`).
fn converts_line_endings(repo: &Repository) -> bool {
    let Ok(config) = repo.config() else {
        return true;
    };
    let autocrlf = config.get_string("core.autocrlf").unwrap_or_default();
    let eol = config.get_string("core.eol").unwrap_or_default();
    let default_attributes = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|x| !x.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .map(|dir| dir.join("git").join("attributes"));
    let global_attributes = config.get_path("core.attributesFile").is_ok()
        || default_attributes.is_some_and(|p| p.exists())
        || repo.commondir().join("info").join("attributes").exists();
    !matches!(autocrlf.as_str(), "" | "false")
        || !matches!(eol.as_str(), "" | "native" | "lf")
        || global_attributes
}

fn changes_in(repo: &Repository) -> anyhow::Result<Vec<String>> {
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = repo.statuses(Some(&mut opts))?;
    Ok(statuses
        .iter()
        .filter(|s| s.status() != Status::CURRENT)
        .map(|s| String::from_utf8_lossy(s.path_bytes()).into_owned())
        .collect())
}

/// Whether `index` marks the file at `path` skip-worktree: a sparse checkout leaves it out
/// of the working tree on purpose, so its absence there is no change.
pub(super) fn skips_worktree(index: &git2::Index, path: &[u8]) -> bool {
    use std::os::unix::ffi::OsStrExt as _;
    index
        .get_path(Path::new(std::ffi::OsStr::from_bytes(path)), 0)
        .is_some_and(|e| {
            git2::IndexEntryExtendedFlag::from_bits_truncate(e.flags_extended)
                .contains(git2::IndexEntryExtendedFlag::SKIP_WORKTREE)
        })
}

/// Writes the merge of `theirs` (started from `base`) into a worktree at its HEAD, conflicts
/// and all: conflicted files get the usual `<<<<<<<`/`=======`/`>>>>>>>` markers.
pub fn write_conflicted_merge(
    path: &Path,
    base: &CommitId,
    theirs: &CommitId,
) -> anyhow::Result<()> {
    let repo = Repository::open(path)?;
    let ours = repo.head()?.peel_to_commit()?;
    let theirs = repo.find_commit(theirs.oid()?)?;
    let base = repo.find_commit(base.oid()?)?;
    let mut index = repo.merge_trees(
        &base.tree()?,
        &ours.tree()?,
        &theirs.tree()?,
        Some(MergeOptions::new().fail_on_conflict(false)),
    )?;
    repo.checkout_index(
        Some(&mut index),
        Some(
            CheckoutBuilder::new()
                .force()
                .allow_conflicts(true)
                .conflict_style_merge(true)
                .our_label("integration")
                .their_label("this task"),
        ),
    )?;
    Ok(())
}

/// The three sides of one conflicted file, as files a merge program reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sides {
    pub path: String,
    pub base: PathBuf,
    pub ours: PathBuf,
    pub theirs: PathBuf,
}

/// The sides of each of `paths` in the merge of `theirs` (started from `base`) into `ours`,
/// written to `dir` as `<n>.base`, `<n>.ours` and `<n>.theirs` (the base empty where both
/// sides added the file). `Err` names a path that is not a conflict of two files' contents:
/// a side deleted it, or made it a link or a submodule.
pub fn write_sides(
    repo: &Repo,
    base: &CommitId,
    ours: &CommitId,
    theirs: &CommitId,
    paths: &[String],
    dir: &Path,
) -> anyhow::Result<Result<Vec<Sides>, String>> {
    std::fs::create_dir_all(dir)?;
    let tree = |c: &CommitId| -> anyhow::Result<git2::Tree<'_>> {
        Ok(repo.repo.find_commit(c.oid()?)?.tree()?)
    };
    let trees = [tree(base)?, tree(ours)?, tree(theirs)?];
    let mut out = Vec::new();
    for (n, path) in paths.iter().enumerate() {
        let mut files = Vec::new();
        for (side, tree) in ["base", "ours", "theirs"].into_iter().zip(&trees) {
            let entry = tree.get_path(Path::new(path)).ok();
            let blob = match entry {
                Some(e)
                    if e.filemode() == i32::from(git2::FileMode::Blob)
                        || e.filemode() == i32::from(git2::FileMode::BlobExecutable) =>
                {
                    Some(repo.repo.find_blob(e.id())?)
                }
                None if side == "base" => None,
                _ => {
                    return Ok(Err(format!(
                        "{path} is not a conflict of two files' contents (a side deleted it, or made it a link or a submodule)"
                    )));
                }
            };
            let file = dir.join(format!("{n}.{side}"));
            std::fs::write(&file, blob.as_ref().map_or(&[][..], git2::Blob::content))?;
            files.push(file);
        }
        let [base, ours, theirs] = <[PathBuf; 3]>::try_from(files)
            .map_err(|_| anyhow::anyhow!("three sides of {path}"))?;
        out.push(Sides {
            path: path.clone(),
            base,
            ours,
            theirs,
        });
    }
    Ok(Ok(out))
}

/// Lines a side added to one of `paths` (from `base` to `ours`, or to `theirs`) that the
/// merged file in `dir` no longer holds, as (path, line), the first of each path: a merge
/// that drops one lost a side's change. Lines are compared without their indentation;
/// blank lines are not counted.
pub fn dropped_lines(
    repo: &Repo,
    base: &CommitId,
    ours: &CommitId,
    theirs: &CommitId,
    paths: &[String],
    dir: &Path,
) -> anyhow::Result<Vec<(String, String)>> {
    let tree = |c: &CommitId| -> anyhow::Result<git2::Tree<'_>> {
        Ok(repo.repo.find_commit(c.oid()?)?.tree()?)
    };
    let (base, ours, theirs) = (tree(base)?, tree(ours)?, tree(theirs)?);
    let text = |tree: &git2::Tree<'_>, path: &str| -> String {
        tree.get_path(Path::new(path))
            .ok()
            .and_then(|e| repo.repo.find_blob(e.id()).ok())
            .map(|b| String::from_utf8_lossy(b.content()).into_owned())
            .unwrap_or_default()
    };
    let mut dropped = Vec::new();
    for path in paths {
        let merged = std::fs::read(dir.join(path)).unwrap_or_default();
        let merged = String::from_utf8_lossy(&merged);
        let kept: std::collections::HashSet<&str> = merged.lines().map(str::trim).collect();
        let before = text(&base, path);
        let had: std::collections::HashSet<&str> = before.lines().map(str::trim).collect();
        let sides = [text(&ours, path), text(&theirs, path)];
        let lost = sides.iter().find_map(|side| {
            side.lines()
                .map(str::trim)
                .find(|l| !l.is_empty() && !had.contains(l) && !kept.contains(l))
                .map(str::to_owned)
        });
        if let Some(line) = lost {
            dropped.push((path.clone(), line));
        }
    }
    Ok(dropped)
}

/// The change from `from` to `to` as a unified diff, for telling an agent what an earlier
/// attempt did.
pub fn patch(repo: &Repo, from: &CommitId, to: &CommitId) -> anyhow::Result<String> {
    let a = repo.repo.find_commit(from.oid()?)?.tree()?;
    let b = repo.repo.find_commit(to.oid()?)?.tree()?;
    let diff = repo.repo.diff_tree_to_tree(Some(&a), Some(&b), None)?;
    let mut out = Vec::new();
    diff.print(git2::DiffFormat::Patch, |_, _, line| {
        if matches!(line.origin(), '+' | '-' | ' ') {
            out.push(line.origin() as u8);
        }
        out.extend_from_slice(line.content());
        true
    })?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Lines added and removed from `from` to `to`: the size of a change, to compare candidates.
pub fn change_size(repo: &Repo, from: &CommitId, to: &CommitId) -> anyhow::Result<(u64, u64)> {
    let a = repo.repo.find_commit(from.oid()?)?.tree()?;
    let b = repo.repo.find_commit(to.oid()?)?.tree()?;
    let stats = repo
        .repo
        .diff_tree_to_tree(Some(&a), Some(&b), None)?
        .stats()?;
    Ok((stats.insertions() as u64, stats.deletions() as u64))
}

/// Paths changed between two commits, for telling a dependent writer what its deps did.
pub fn changed_paths(
    repo_dir: &Path,
    from: &CommitId,
    to: &CommitId,
) -> anyhow::Result<Vec<String>> {
    let repo = Repository::open(repo_dir)?;
    let a = repo.find_commit(from.oid()?)?.tree()?;
    let b = repo.find_commit(to.oid()?)?.tree()?;
    let diff = repo.diff_tree_to_tree(Some(&a), Some(&b), None)?;
    Ok(diff
        .deltas()
        .filter_map(|d| d.new_file().path().or_else(|| d.old_file().path()))
        .map(|p| p.to_string_lossy().into_owned())
        .collect())
}

#[cfg(test)]
mod tests;
