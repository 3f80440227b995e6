//! Denying by allowing: the read rules that leave out a set of paths. Landlock grants access
//! beneath the paths it is given and nothing else, so to deny `~/.ssh` every sibling of it is
//! granted, and every sibling of `~` and of `/home`, up to `/`; the directories on the way
//! (`/`, `/home`, `~`) are granted only their listing, so their other files' names can be seen
//! but only the granted entries read.
//!
//! What this cannot do: an entry made in one of those directories after the rules were made
//! (a new file directly in `~`) is not readable until the next run; and a link is never
//! followed to grant what it points at (its target is granted where it lives, if anywhere).

use std::path::{Path, PathBuf};

/// How much of a path is granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reach {
    /// Its listing only (it leads to a denied path).
    List,
    /// Everything beneath it: reading, listing, executing.
    Read,
}

/// The paths to grant so that everything but `denied` (real paths, links resolved) and what is
/// beneath them can be read, starting at `/`.
pub(super) fn reads(denied: &[PathBuf]) -> Vec<(PathBuf, Reach)> {
    reads_from(Path::new("/"), denied)
}

/// The same from `root` down.
pub(super) fn reads_from(root: &Path, denied: &[PathBuf]) -> Vec<(PathBuf, Reach)> {
    let mut out = Vec::new();
    if denied.iter().any(|d| d == root) {
        return out;
    }
    cover(root, denied, &mut out);
    out
}

/// Grants `dir`'s listing, and each of its entries: whole when no denied path is in it,
/// else covered the same way; a denied entry not at all.
fn cover(dir: &Path, denied: &[PathBuf], out: &mut Vec<(PathBuf, Reach)>) {
    out.push((dir.to_owned(), Reach::List));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<(PathBuf, bool)> = entries
        .filter_map(Result::ok)
        .map(|e| (e.path(), e.file_type().is_ok_and(|t| t.is_symlink())))
        .collect();
    entries.sort();
    for (path, is_link) in entries {
        // A link is reached through, not granted: what it points at is granted (or not)
        // where it is.
        if is_link || denied.contains(&path) {
            continue;
        }
        if denied.iter().any(|d| d.starts_with(&path)) {
            cover(&path, denied, out);
        } else {
            out.push((path, Reach::Read));
        }
    }
}
