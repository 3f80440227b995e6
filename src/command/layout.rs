//! Where a run's things live and who holds the repository: the lock, run ids, the checkout
//! directory and the deps' directory.

use std::fs::File;
use std::io::{Read as _, Seek as _, Write as _};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use crate::error::{Busy, Usage};
use crate::git::Repo;

/// The repository's run lock: held for the life of the process, released by the OS when the
/// process ends however it ends, so a holder that died never blocks.
pub(super) struct Lock {
    _file: File,
}

impl Lock {
    pub(super) fn acquire(repo: &Repo, run: &str) -> anyhow::Result<Self> {
        let dir = repo.common_dir().join("swarm");
        std::fs::create_dir_all(&dir)?;
        let path = dir.join("lock");
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("could not open {}", path.display()))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(Busy {
                    holder: if holder.is_empty() {
                        "a process that has not yet said which run".to_owned()
                    } else {
                        holder.to_owned()
                    },
                }
                .into());
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("could not lock {}", path.display()));
            }
        }
        file.set_len(0)?;
        file.rewind()?;
        writeln!(file, "pid {}, run {run}", std::process::id())?;
        Ok(Self { _file: file })
    }
}

/// Run ids: UTC time and four hex digits, `20261129-071300-ab12`.
pub(super) fn new_run_id() -> String {
    let salt = fastrand::u16(..);
    format!(
        "{}-{salt:04x}",
        crate::time::run_id_stamp(jiff::Timestamp::now())
    )
}

/// Where worktrees go by default: the user cache dir.
fn cache_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(x);
    }
    match std::env::var_os("HOME") {
        Some(h) if cfg!(target_os = "macos") => PathBuf::from(h).join("Library/Caches"),
        Some(h) => PathBuf::from(h).join(".cache"),
        None => std::env::temp_dir(),
    }
}

/// `<root>/<repo name>-<hash of its git dir>`: one folder per repository.
pub(super) fn worktree_root(repo: &Repo, configured: Option<&Path>) -> anyhow::Result<PathBuf> {
    let root = match configured {
        Some(d) => std::path::absolute(d)?,
        None => cache_dir().join("swarm").join("worktrees"),
    };
    let name = repo
        .workdir()
        .file_name()
        .map_or_else(|| "repo".into(), |n| n.to_string_lossy().into_owned());
    // FNV-1a: stable across versions, unlike the std hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in repo.common_dir().as_os_str().as_encoded_bytes() {
        hash = (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    let dir = root.join(format!("{name}-{:08x}", hash as u32));
    let workdir = std::fs::canonicalize(repo.workdir())?;
    // Decided before anything is made: a refused directory is never created.
    if canonical_to_be(&dir)?.starts_with(&workdir) {
        bail!(
            Usage::new(format!(
                "the worktree directory {} is inside your checkout {}",
                dir.display(),
                workdir.display()
            ))
            .hint("point --worktree-dir (or SWARM_WORKTREE_DIR) outside the repository")
        );
    }
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("could not create the worktree directory {}", dir.display()))?;
    Ok(dir)
}

/// Where `path` will be once made: its deepest existing ancestor with links resolved, and
/// the rest of it as given.
fn canonical_to_be(path: &Path) -> anyhow::Result<PathBuf> {
    let mut rest = Vec::new();
    let mut at = path;
    loop {
        match std::fs::canonicalize(at) {
            Ok(real) => return Ok(rest.iter().rev().fold(real, |p, c| p.join(c))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let (Some(parent), Some(name)) = (at.parent(), at.file_name()) else {
                    return Err(e.into());
                };
                rest.push(name.to_owned());
                at = parent;
            }
            Err(e) => {
                return Err(e).with_context(|| format!("could not resolve {}", at.display()));
            }
        }
    }
}

/// Where `run` tasks find their deps' results (`$SWARM_DEPS_DIR`): a directory of the user's
/// own in memory (`/dev/shm/swarm-<uid>/<run>`) where the system has one, since thousands of
/// small files cost far more to create on a disk file system than a trivial task costs to run;
/// else `deps/` in the run's directory. Either way it is only a view of results the board
/// holds, rewritten for every attempt and removed when the run stops.
pub(super) fn deps_root(run_dir: &Path, run: &str) -> PathBuf {
    use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
    let on_disk = run_dir.join("deps");
    let shm = Path::new("/dev/shm");
    let Ok(me) = std::fs::metadata(run_dir).map(|m| m.uid()) else {
        return on_disk;
    };
    if !shm.is_dir() {
        return on_disk;
    }
    let mine = shm.join(format!("swarm-{me}"));
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&mine);
    // Anyone can create names in /dev/shm: use the directory only if it is ours and private.
    match std::fs::symlink_metadata(&mine) {
        Ok(m) if m.is_dir() && m.uid() == me && !has_any(m.mode(), 0o077) => mine.join(run),
        _ => on_disk,
    }
}

/// Whether any of the permission bits in `bits` are set in `mode`.
fn has_any(mode: u32, bits: u32) -> bool {
    mode & bits != 0
}
