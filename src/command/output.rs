//! The files a run writes for the user (`--final-out`, `--final-out-dir`, `--plan-out`):
//! checked before anything runs, so a bad one is an input error with nothing done, and written
//! whole (a temporary file beside the target, then a rename), so a crash never leaves half of
//! one.

use std::fs::Permissions;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::error::Usage;
use crate::git::{Repo, Tracked};
use crate::ui::Verb;

/// What an output path must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    File,
    Dir,
}

/// Checks the output `path` given to `flag` (relative to `dir`) before anything runs, and
/// returns it absolute. It must not be in the git directory, must be a file (or a directory,
/// for `Kind::Dir`) in a writable directory that exists, must not be a file the run reads
/// (`reads`), and must not be a tracked file with uncommitted changes. A tracked, clean file is
/// allowed: `Ok((path, true))` says it is one.
pub(super) fn check(
    repo: &Repo,
    dir: &Path,
    path: &Path,
    flag: &str,
    kind: Kind,
    reads: &[PathBuf],
) -> anyhow::Result<(PathBuf, bool)> {
    let bad = |why: String| -> anyhow::Error {
        Usage::new(format!("{flag} {}: {why}", path.display()))
            .hint("choose another path; nothing was run")
            .into()
    };
    let abs = dir.join(path);
    let Some(name) = abs.file_name() else {
        return Err(bad("names no file".to_owned()));
    };
    let parent = abs.parent().unwrap_or(Path::new("/"));
    let parent = std::fs::canonicalize(parent)
        .map_err(|_| bad(format!("the directory {} does not exist", parent.display())))?;
    if !parent.is_dir() {
        return Err(bad(format!("{} is not a directory", parent.display())));
    }
    // Through a symbolic link, the file it names.
    let target = std::fs::canonicalize(parent.join(name)).unwrap_or_else(|_| parent.join(name));
    for git in [repo.git_dir(), repo.common_dir()] {
        let git = std::fs::canonicalize(git).unwrap_or_else(|_| git.to_owned());
        if target.starts_with(&git) {
            return Err(bad(format!(
                "it is inside the git directory {}",
                git.display()
            )));
        }
    }
    match (kind, std::fs::metadata(&target)) {
        (Kind::File, Ok(m)) if m.is_dir() => return Err(bad("it is a directory".to_owned())),
        (Kind::Dir, Ok(m)) if !m.is_dir() => return Err(bad("it is not a directory".to_owned())),
        _ => {}
    }
    if reads
        .iter()
        .any(|r| std::fs::canonicalize(r).is_ok_and(|r| r == target))
    {
        return Err(bad("the run reads that file".to_owned()));
    }
    let writable_dir = if kind == Kind::Dir && target.is_dir() {
        &target
    } else {
        &parent
    };
    // A file made there and removed, as the write will make one: permission bits alone do
    // not tell (root passes them, and /proc or a read-only mount refuse all the same).
    let probe = writable_dir.join(format!(".swarm-check-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(bad(format!(
                "no file can be written in {} ({e})",
                writable_dir.display()
            )));
        }
    }
    let tracked = match kind {
        Kind::File => repo.tracked_state(&target)?,
        Kind::Dir => Tracked::No,
    };
    if tracked == Tracked::Changed {
        return Err(bad(
            "it is a tracked file with uncommitted changes, which the report would overwrite"
                .to_owned(),
        ));
    }
    Ok((target, tracked == Tracked::Clean))
}

/// Writes `bytes` to `path` whole: into a temporary file in the same directory, then renamed
/// over it, so a reader (or a crash) sees the old file or the new one. A file it replaces keeps
/// its mode; a new one gets the mode the umask gives, as any file a program creates does (a
/// temporary file's own 0600 would leave a report a web server or a CI step cannot read).
pub(super) fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let write = || -> std::io::Result<()> {
        let kept = kept_mode(path);
        // The mode goes to `open`, where the kernel applies the umask (or a default ACL):
        // meanwhile the temporary file is never more open than the file it becomes.
        let mut file = tempfile::Builder::new()
            .permissions(Permissions::from_mode(kept.unwrap_or(0o666)))
            .tempfile_in(dir)?;
        if let Some(mode) = kept {
            // Through the open file, not its path: nothing else's mode can change.
            file.as_file()
                .set_permissions(Permissions::from_mode(mode))?;
        }
        file.write_all(bytes)?;
        file.as_file().sync_all()?;
        file.persist(path).map_err(|e| e.error)?;
        Ok(())
    };
    write()
        .map_err(|e| crate::disk::name(path, e))
        .with_context(|| format!("could not write {}", path.display()))
}

/// The permission bits of the regular file at `path`, which a replacement keeps. A symbolic
/// link is not followed (the rename replaces the link, not the file it names), and the
/// set-id and sticky bits are not carried over to a file swarm wrote.
fn kept_mode(path: &Path) -> Option<u32> {
    std::fs::symlink_metadata(path)
        .ok()
        .filter(std::fs::Metadata::is_file)
        .map(|m| m.permissions().mode() & 0o777)
}

/// Checks every output of a run before it starts (see `check`); says so for a tracked file
/// it will replace.
pub(super) fn check_all(
    repo: &Repo,
    dir: &Path,
    quiet: bool,
    outputs: &[(&str, Option<&Path>, Kind)],
    reads: &[PathBuf],
) -> anyhow::Result<()> {
    for (flag, path, kind) in outputs {
        let Some(path) = path else {
            continue;
        };
        let (target, tracked) = check(repo, dir, path, flag, *kind, reads)?;
        if tracked {
            crate::ui::say(
                quiet,
                Verb::Note,
                &format!(
                    "{flag} {} is a tracked file; the run will replace it (it has no uncommitted changes)",
                    target.display()
                ),
            );
        }
    }
    Ok(())
}
