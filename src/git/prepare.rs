//! What makes a checkout ready to build besides its commit: files copied in from the user's
//! checkout (`include`), directories kept across reuse and seeded from another checkout
//! (`cache`), the cache key that says when a seed or an earlier setup still fits, and the ignore
//! rules that keep all of them out of swarm's commits. File copying only; running the setup
//! command is the agent runner's.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use git2::{ObjectType, Oid};

/// The files whose contents decide the cache key when `cache-key` names none: the lockfiles
/// of the usual package managers, at the repository's top.
pub const LOCKFILES: &[&str] = &[
    "Cargo.lock",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "pnpm-lock.yaml",
    "yarn.lock",
    "bun.lockb",
    "bun.lock",
    "poetry.lock",
    "uv.lock",
    "Pipfile.lock",
    "pdm.lock",
    "Gemfile.lock",
    "go.sum",
    "composer.lock",
    "mix.lock",
    "pubspec.lock",
    "Package.resolved",
    "flake.lock",
];

/// In a checkout's git directory: the cache key its setup last ran with (kept across reuse).
const SETUP_FILE: &str = "swarm-setup";
/// In a checkout's git directory: where kept directories wait while the checkout is updated.
const KEPT_DIR: &str = "swarm-kept";

/// The cache key of the checkout at `dir`: a hash of the names and contents of those of
/// `files` (the lockfiles when empty) that are present. Two checkouts with the same key hold
/// the same dependencies, so one's build directories fit the other.
pub fn cache_key(dir: &Path, files: &[String]) -> String {
    let names: Vec<&str> = if files.is_empty() {
        LOCKFILES.to_vec()
    } else {
        files.iter().map(String::as_str).collect()
    };
    let mut listing = String::new();
    for name in names {
        let Some(blob) = file_blob(&dir.join(name)) else {
            continue;
        };
        let _ = writeln!(listing, "{name}\0{blob}");
    }
    Oid::hash_object(ObjectType::Blob, listing.as_bytes())
        .map_or_else(|_| String::new(), |oid| oid.to_string())
}

/// In a checkout's git directory: the paths its setup created, changed or removed outside the
/// ignored ones, each with what it held once the setup ended (kept across reuse).
const SETUP_PATHS_FILE: &str = "swarm-setup-paths";

/// What a checkout's setup left at one path: the blob the file held once the setup ended
/// (hashed as it is on disk, a link as its target), or none when the setup removed it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) struct SetupPath {
    pub(super) path: Vec<u8>,
    pub(super) blob: Option<String>,
}

/// The most swarm reads of its own records in a checkout's git directory, where the agent
/// can write too.
const RECORD_CAP: u64 = 64 << 20;

/// The cache key the checkout's setup last ran with, if it ran there.
fn setup_key(checkout: &Path) -> Option<String> {
    crate::planted::read(&checkout.join(".git").join(SETUP_FILE), RECORD_CAP)
        .ok()
        .map(|k| String::from_utf8_lossy(&k).trim().to_owned())
}

/// Whether a reused checkout's setup still holds: it ran with `key` (its lockfiles are as they
/// were then) and changed nothing that the reuse took away (every file it made or changed
/// outside the ignored ones is gone with the update to the new start, so it runs again).
pub fn setup_holds(checkout: &Path, key: &str) -> bool {
    setup_key(checkout).as_deref() == Some(key) && setup_paths(checkout).is_empty()
}

/// Records that the checkout's setup ran with `key`, and what it changed outside the ignored
/// paths (new, changed and removed files), which a writer's result leaves out.
pub fn record_setup(checkout: &Path, key: &str) -> anyhow::Result<()> {
    let repo = super::checkout::open_checkout(checkout)?;
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(true);
    let mut paths = Vec::new();
    for s in repo.statuses(Some(&mut opts))?.iter() {
        if s.status() == git2::Status::CURRENT {
            continue;
        }
        let path = s.path_bytes().to_vec();
        let blob = disk_blob(checkout, &path).map(|oid| oid.to_string());
        paths.push(SetupPath { path, blob });
    }
    let git = checkout.join(".git");
    // Written anew, never through a link the setup may have left in their place.
    let write = |name: &str, bytes: &[u8]| {
        let file = git.join(name);
        match std::fs::remove_file(&file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        std::fs::write(file, bytes)
    };
    write(SETUP_PATHS_FILE, &serde_json::to_vec(&paths)?)
        .and_then(|()| write(SETUP_FILE, format!("{key}\n").as_bytes()))
        .context("could not record the checkout's setup")
}

/// What the checkout's setup changed, as `record_setup` found it; none when it recorded
/// nothing (or the record does not read: it lives where the agent can write).
pub(super) fn setup_paths(checkout: &Path) -> Vec<SetupPath> {
    crate::planted::read(&checkout.join(".git").join(SETUP_PATHS_FILE), RECORD_CAP)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// The blob of the file at `path` (relative to the checkout's top) as it is on disk, a link
/// as its target; none when there is no file there.
pub(super) fn disk_blob(checkout: &Path, path: &[u8]) -> Option<Oid> {
    use std::os::unix::ffi::OsStrExt as _;
    let full = checkout.join(std::ffi::OsStr::from_bytes(path));
    let meta = std::fs::symlink_metadata(&full).ok()?;
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(&full).ok()?;
        return Oid::hash_object(ObjectType::Blob, target.as_os_str().as_bytes()).ok();
    }
    meta.is_file().then(|| file_blob(&full)).flatten()
}

/// The blob of the regular file at `path`; none when there is none. Hashed through the file
/// swarm opened, so that a FIFO or a link a task puts there meanwhile is never read.
fn file_blob(path: &Path) -> Option<Oid> {
    use std::io::Read as _;
    use std::os::fd::AsRawFd as _;
    let mut file = crate::planted::open(path).ok()?;
    // libgit2 hashes a file by its path without holding it in memory; `/dev/fd/N` is this
    // open file, whatever is at `path` now.
    Oid::hash_file(ObjectType::Blob, format!("/dev/fd/{}", file.as_raw_fd()))
        .ok()
        .or_else(|| {
            // A system without `/dev/fd`.
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes).ok()?;
            Oid::hash_object(ObjectType::Blob, &bytes).ok()
        })
}

/// Whether `name` is kept when a set-aside checkout's git directory is made anew.
pub(super) fn kept_in_git_dir(name: &std::ffi::OsStr) -> bool {
    name == SETUP_FILE || name == SETUP_PATHS_FILE
}

/// Adds `paths` (relative to the top) to the checkout's own ignore rules (`.git/info/exclude`,
/// after the user's), so that neither swarm's commit of what a writer left nor an agent's
/// `git add -A` picks them up, and a reader's snapshot does not count them as changes.
pub fn exclude(checkout: &Path, paths: &[String]) -> anyhow::Result<()> {
    if paths.is_empty() {
        return Ok(());
    }
    let file = checkout.join(".git").join("info").join("exclude");
    let mut text = String::from("\n# kept out of swarm's commits (include and cache)\n");
    for p in paths {
        text.push('/');
        for c in p.trim_end_matches('/').chars() {
            if matches!(c, '\\' | '*' | '?' | '[' | ']' | '!' | '#') {
                text.push('\\');
            }
            text.push(c);
        }
        text.push('\n');
    }
    std::fs::create_dir_all(file.parent().unwrap_or(checkout))?;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&file)
        .with_context(|| format!("could not write {}", file.display()))?;
    f.write_all(text.as_bytes())?;
    Ok(())
}

/// Why `include` may not copy `paths` from the checkout at `top`, if it may not: a path that is
/// the repository's top, or a link on the way to one of them or inside one that leads out of
/// the repository (or to its top). Links copied as links must not lead a task out of its
/// checkout, and a link to `~/.ssh` must not bring your keys into every checkout.
pub fn check_included(top: &Path, paths: &[String]) -> Result<(), String> {
    let Ok(root) = top.canonicalize() else {
        return Ok(());
    };
    for p in paths {
        let parts: Vec<&std::ffi::OsStr> = Path::new(p)
            .components()
            .filter_map(|c| match c {
                std::path::Component::Normal(n) => Some(n),
                _ => None,
            })
            .collect();
        if parts.is_empty() {
            return Err(format!(
                "`{p}` is the whole repository: name the files or directories to copy"
            ));
        }
        let mut at = top.to_path_buf();
        for part in &parts {
            at.push(part);
            if let Some(why) = link_out(&root, &at) {
                return Err(format!("`{p}`: {why}"));
            }
        }
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.is_dir()) {
            let mut found = None;
            walk_links(&at, &mut |link| {
                found = found.take().or_else(|| link_out(&root, link));
            });
            if let Some(why) = found {
                return Err(format!("`{p}`: {why}"));
            }
        }
    }
    Ok(())
}

/// Why the link at `link` leads out of `root` (or to it), if it is such a link.
fn link_out(root: &Path, link: &Path) -> Option<String> {
    let target = std::fs::read_link(link).ok()?;
    let leads_to = link
        .canonicalize()
        .unwrap_or_else(|_| lexical(&link.parent().unwrap_or(root).join(&target)));
    let inside = leads_to.starts_with(root) && leads_to != root;
    let shown = link.strip_prefix(root).unwrap_or(link);
    (!inside).then(|| {
        format!(
            "{} is a link to {}, which is {} the repository: swarm copies links as links and never follows one out of your checkout",
            shown.display(),
            target.display(),
            if leads_to == root { "the top of" } else { "outside" }
        )
    })
}

/// `path` with `.` and `..` taken out by their names alone.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// Calls `found` with every symbolic link under the directory `dir` (never following one).
fn walk_links(dir: &Path, found: &mut dyn FnMut(&Path)) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() {
            found(&entry.path());
        } else if kind.is_dir() {
            walk_links(&entry.path(), found);
        }
    }
}

/// Removes every link under the directories `dirs` of the checkout `checkout` that leads out
/// of it (a cache an agent planted a link in, which the next task's build would write
/// through); returns the links removed, relative to the checkout.
pub fn remove_links_out(checkout: &Path, dirs: &[String]) -> anyhow::Result<Vec<String>> {
    let root = checkout.canonicalize()?;
    let mut out = Vec::new();
    for d in dirs {
        let dir = checkout.join(d);
        if !std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        let mut links = Vec::new();
        walk_links(&dir, &mut |link| {
            if link_out(
                &root,
                &root.join(link.strip_prefix(checkout).unwrap_or(link)),
            )
            .is_some()
            {
                links.push(link.to_owned());
            }
        });
        for link in links {
            std::fs::remove_file(&link)
                .with_context(|| format!("could not remove the link {}", link.display()))?;
            out.push(
                link.strip_prefix(checkout)
                    .unwrap_or(&link)
                    .display()
                    .to_string(),
            );
        }
    }
    Ok(out)
}

/// Copies `paths` from the user's checkout `from` into the checkout `to`, replacing what is
/// there. Returns the paths `from` does not have, which are skipped.
pub fn copy_included(from: &Path, to: &Path, paths: &[String]) -> anyhow::Result<Vec<String>> {
    let mut missing = Vec::new();
    for p in paths {
        let source = from.join(p);
        // A link is copied as a link (`check_included` made sure none leads out of the
        // repository), one by an absolute path to a file of yours made relative, so that it
        // leads to the checkout's own copy and a task never writes through it into yours.
        let Ok(meta) = std::fs::symlink_metadata(&source) else {
            missing.push(p.clone());
            continue;
        };
        let target = to.join(p);
        if let Ok(old) = std::fs::symlink_metadata(&target) {
            if old.is_dir() {
                std::fs::remove_dir_all(&target)?;
            } else {
                std::fs::remove_file(&target)?;
            }
        }
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        copy_entry(&source, &target, &meta, Some(from))
            .with_context(|| format!("could not copy {} into the checkout", source.display()))?;
    }
    Ok(missing)
}

/// Copies the directories `dirs` that `from` has and `to` does not yet from one checkout into
/// another; returns those it copied.
pub fn seed(from: &Path, to: &Path, dirs: &[String]) -> anyhow::Result<Vec<String>> {
    let mut seeded = Vec::new();
    for d in dirs {
        let source = from.join(d);
        let target = to.join(d);
        let Ok(meta) = std::fs::symlink_metadata(&source) else {
            continue;
        };
        if !meta.is_dir() || std::fs::symlink_metadata(&target).is_ok() {
            continue;
        }
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        copy_entry(&source, &target, &meta, None)
            .with_context(|| format!("could not copy {} into the checkout", source.display()))?;
        seeded.push(d.clone());
    }
    Ok(seeded)
}

/// Copies a file, link or directory tree: links as links (one by an absolute path into
/// `rebase`, the tree it is copied from, made relative so it leads to its copy), files with
/// their permissions through `std::fs::copy` (which on Linux uses `copy_file_range`, so a file
/// system with reflinks, btrfs or XFS, shares the blocks instead of writing them), directories
/// with their permissions once their contents are in; files and directories keep their times.
fn copy_entry(
    from: &Path,
    to: &Path,
    meta: &std::fs::Metadata,
    rebase: Option<&Path>,
) -> std::io::Result<()> {
    let kind = meta.file_type();
    if kind.is_symlink() {
        let mut target = std::fs::read_link(from)?;
        if let Some(root) = rebase
            && let Ok(inside) = target.strip_prefix(root)
        {
            let depth = from
                .strip_prefix(root)
                .map_or(0, |p| p.components().count().saturating_sub(1));
            let mut relative: PathBuf = std::iter::repeat_n("..", depth).collect();
            relative.push(inside);
            target = relative;
        }
        std::os::unix::fs::symlink(target, to)
    } else if kind.is_dir() {
        std::fs::create_dir(to)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            let meta = std::fs::symlink_metadata(entry.path())?;
            copy_entry(&entry.path(), &to.join(entry.file_name()), &meta, rebase)?;
        }
        std::fs::set_permissions(to, meta.permissions())?;
        keep_times(to, meta)
    } else if kind.is_file() {
        std::fs::copy(from, to)?;
        keep_times(to, meta)
    } else {
        // Sockets, fifos and devices are no build's cache.
        Ok(())
    }
}

/// Gives the copy `to` the access and modification times of the original (`meta`). Build
/// tools compare the times of outputs with each other: cargo rebuilds a crate whose
/// dependency's output is newer than its own, so a copy stamped in the order it was written
/// would look stale to it throughout.
fn keep_times(to: &Path, meta: &std::fs::Metadata) -> std::io::Result<()> {
    let times = std::fs::FileTimes::new()
        .set_accessed(meta.accessed()?)
        .set_modified(meta.modified()?);
    std::fs::File::open(to)?.set_times(times)
}

/// Moves the directories `dirs` of a checkout into its git directory, out of reach of a
/// cleaning checkout; `restore_kept` puts them back.
pub(super) fn set_kept_aside(
    checkout: &Path,
    dirs: &[String],
) -> anyhow::Result<Vec<(PathBuf, PathBuf)>> {
    let store = checkout.join(".git").join(KEPT_DIR);
    let mut moved = Vec::new();
    for (n, d) in dirs.iter().enumerate() {
        let from = checkout.join(d);
        if !std::fs::symlink_metadata(&from).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        std::fs::create_dir_all(&store)?;
        let to = store.join(n.to_string());
        std::fs::rename(&from, &to)
            .with_context(|| format!("could not keep {}", from.display()))?;
        moved.push((to, from));
    }
    Ok(moved)
}

/// Puts kept directories back where they were; one the new commit has files in is dropped
/// instead (a cache is meant to be untracked).
pub(super) fn restore_kept(checkout: &Path, moved: &[(PathBuf, PathBuf)]) -> anyhow::Result<()> {
    for (kept, back) in moved {
        if std::fs::symlink_metadata(back).is_ok() {
            std::fs::remove_dir_all(kept)?;
            continue;
        }
        if let Some(parent) = back.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::rename(kept, back)
            .with_context(|| format!("could not put {} back", back.display()))?;
    }
    let _ = std::fs::remove_dir(checkout.join(".git").join(KEPT_DIR));
    Ok(())
}

/// Whether `path` (relative to the top, `/`-separated) is one of `paths` or inside one.
pub(super) fn is_under(path: &[u8], paths: &[String]) -> bool {
    paths.iter().any(|p| {
        let p = p.trim_end_matches('/').as_bytes();
        path.strip_prefix(p)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(b"/"))
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{LOCKFILES, cache_key, check_included, copy_included, is_under, seed};

    fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        dir
    }

    #[test]
    fn same_lockfiles_give_the_same_key() {
        let a = dir_with(&[("Cargo.lock", "v1"), ("src.rs", "a")]);
        let b = dir_with(&[("Cargo.lock", "v1"), ("src.rs", "b")]);
        assert_eq!(cache_key(a.path(), &[]), cache_key(b.path(), &[]));
    }

    #[test]
    fn a_changed_added_or_removed_lockfile_changes_the_key() {
        let base = cache_key(dir_with(&[("Cargo.lock", "v1")]).path(), &[]);
        let changed = cache_key(dir_with(&[("Cargo.lock", "v2")]).path(), &[]);
        let added = cache_key(
            dir_with(&[("Cargo.lock", "v1"), ("package-lock.json", "{}")]).path(),
            &[],
        );
        let none = cache_key(dir_with(&[]).path(), &[]);
        assert_ne!(base, changed);
        assert_ne!(base, added);
        assert_ne!(base, none);
        assert_eq!(none, cache_key(dir_with(&[("README", "x")]).path(), &[]));
    }

    #[test]
    fn the_same_contents_under_another_name_is_another_key() {
        let cargo = cache_key(dir_with(&[("Cargo.lock", "x")]).path(), &[]);
        let yarn = cache_key(dir_with(&[("yarn.lock", "x")]).path(), &[]);
        assert_ne!(cargo, yarn);
    }

    #[test]
    fn cache_key_files_replace_the_lockfiles() {
        let files = vec!["deps.txt".to_owned()];
        let a = dir_with(&[("deps.txt", "1"), ("Cargo.lock", "v1")]);
        let b = dir_with(&[("deps.txt", "1"), ("Cargo.lock", "v2")]);
        let c = dir_with(&[("deps.txt", "2"), ("Cargo.lock", "v1")]);
        assert_eq!(cache_key(a.path(), &files), cache_key(b.path(), &files));
        assert_ne!(cache_key(a.path(), &files), cache_key(c.path(), &files));
        assert!(LOCKFILES.contains(&"Cargo.lock"));
    }

    #[test]
    fn the_key_is_a_stable_hash() {
        // The git blob id of "Cargo.lock\0<blob id of `v1`>\n" (as `git hash-object` gives
        // it): the same on every machine and with every build of swarm.
        let key = cache_key(dir_with(&[("Cargo.lock", "v1")]).path(), &[]);
        assert_eq!(key, "087cb7fa4a5deb325636e14fc6920123fc73a484");
    }

    #[test]
    fn included_files_are_copied_and_links_as_links_to_the_checkouts_own_files() {
        let user = dir_with(&[(".env", "SECRET=1\n")]);
        std::os::unix::fs::symlink(user.path().join(".env"), user.path().join("linked")).unwrap();
        let checkout = dir_with(&[("linked", "old\n")]);
        let paths = vec![".env".to_owned(), "linked".to_owned(), "gone".to_owned()];
        let missing = copy_included(user.path(), checkout.path(), &paths).unwrap();
        assert_eq!(missing, ["gone"]);
        // A link by an absolute path to a file of yours leads to the checkout's copy.
        let linked = checkout.path().join("linked");
        assert_eq!(std::fs::read_link(&linked).unwrap(), Path::new(".env"));
        std::fs::write(&linked, "CHANGED=1\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(user.path().join(".env")).unwrap(),
            "SECRET=1\n"
        );
    }

    #[test]
    fn an_included_link_out_of_the_top_or_the_top_itself_is_refused() {
        let outside = tempfile::tempdir().unwrap();
        let user = dir_with(&[("a.txt", "a\n")]);
        std::os::unix::fs::symlink(outside.path(), user.path().join("away")).unwrap();
        std::os::unix::fs::symlink("..", user.path().join("up")).unwrap();
        std::os::unix::fs::symlink("a.txt", user.path().join("near")).unwrap();
        std::fs::create_dir(user.path().join("d")).unwrap();
        std::os::unix::fs::symlink("../../x", user.path().join("d/deep")).unwrap();
        let check = |p: &str| check_included(user.path(), &[p.to_owned()]);
        assert!(check("near").is_ok());
        assert!(check("a.txt").is_ok());
        for p in ["away", "away/file", "up", "d", "."] {
            assert!(check(p).is_err(), "{p}");
        }
        assert!(
            check("d")
                .unwrap_err()
                .contains("d/deep is a link to ../../x")
        );
    }

    #[test]
    fn a_seed_copies_trees_with_links_and_modes_and_leaves_what_is_there() {
        use std::os::unix::fs::PermissionsExt as _;
        let from = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(from.path().join("target/debug")).unwrap();
        std::fs::write(from.path().join("target/debug/app"), "bin").unwrap();
        let mode = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(from.path().join("target/debug/app"), mode).unwrap();
        std::os::unix::fs::symlink("debug/app", from.path().join("target/latest")).unwrap();
        std::fs::create_dir_all(from.path().join("node_modules")).unwrap();
        let to = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(to.path().join("node_modules")).unwrap();
        let dirs = vec![
            "target".to_owned(),
            "node_modules".to_owned(),
            "none".to_owned(),
        ];
        assert_eq!(seed(from.path(), to.path(), &dirs).unwrap(), ["target"]);
        let app = to.path().join("target/debug/app");
        assert_eq!(std::fs::read_to_string(&app).unwrap(), "bin");
        let mode = std::fs::metadata(&app).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
        let link = std::fs::read_link(to.path().join("target/latest")).unwrap();
        assert_eq!(link, std::path::Path::new("debug/app"));
    }

    #[test]
    fn a_seed_keeps_the_times_of_files_and_directories() {
        use std::time::{Duration, SystemTime};
        let from = tempfile::tempdir().unwrap();
        let build = from.path().join("target/debug/build");
        std::fs::create_dir_all(&build).unwrap();
        std::fs::write(build.join("output"), "cfg").unwrap();
        std::fs::write(from.path().join("target/debug/liba.rlib"), "lib").unwrap();
        // A dependency's output older than what was built on it, as cargo leaves them.
        let stamp = |path: &std::path::Path, secs: u64| {
            let at = SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
            let times = std::fs::FileTimes::new().set_modified(at).set_accessed(at);
            std::fs::File::open(path).unwrap().set_times(times).unwrap();
        };
        stamp(&build.join("output"), 1_600_000_000);
        stamp(&from.path().join("target/debug/liba.rlib"), 1_600_000_100);
        stamp(&build, 1_600_000_200);
        let to = tempfile::tempdir().unwrap();
        seed(from.path(), to.path(), &["target".to_owned()]).unwrap();
        for path in [
            "target/debug/build/output",
            "target/debug/liba.rlib",
            "target/debug/build",
        ] {
            let mtime = |dir: &std::path::Path| {
                std::fs::metadata(dir.join(path))
                    .unwrap()
                    .modified()
                    .unwrap()
            };
            assert_eq!(mtime(to.path()), mtime(from.path()), "{path}");
        }
    }

    #[test]
    fn excluded_paths_are_anchored_and_taken_literally_by_git() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        std::fs::create_dir_all(dir.path().join(".git/info")).unwrap();
        std::fs::write(dir.path().join(".git/info/exclude"), "*.log\n").unwrap();
        let paths = vec![
            ".env".to_owned(),
            "target/".to_owned(),
            "odd*name#".to_owned(),
        ];
        super::exclude(dir.path(), &paths).unwrap();
        let text = std::fs::read_to_string(dir.path().join(".git/info/exclude")).unwrap();
        assert!(
            text.starts_with("*.log\n"),
            "the user's rules stay first: {text}"
        );
        let ignored = |p: &str| repo.is_path_ignored(p).unwrap();
        assert!(ignored(".env"));
        assert!(ignored("target/debug/app"));
        assert!(ignored("odd*name#"));
        assert!(!ignored("oddXname#"), "a `*` in a path is no wildcard");
        assert!(!ignored("sub/.env"), "anchored at the top");
        assert!(ignored("x.log"));
    }

    #[test]
    fn paths_under_a_listed_path_match_it_and_no_others() {
        let paths = vec![".env".to_owned(), "config/local/".to_owned()];
        assert!(is_under(b".env", &paths));
        assert!(is_under(b"config/local/x.toml", &paths));
        assert!(is_under(b"config/local", &paths));
        assert!(!is_under(b".envrc", &paths));
        assert!(!is_under(b"config/localx", &paths));
    }
}
