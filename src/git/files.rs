//! The files an agent may see in a directory: git's view of it when it is a working tree,
//! else a plain walk.

use std::path::Path;

use anyhow::Context as _;
use git2::{Repository, Status, StatusOptions};

/// The files an agent may see in `dir`: tracked files (from the index, minus deleted ones and
/// submodules) plus untracked files that are not ignored, sorted, relative to `dir` with `/`
/// separators. When `dir` is not the top of a git working tree, a plain recursive walk that
/// leaves out `.git` and does not follow symbolic links.
pub fn list_files(dir: &Path) -> anyhow::Result<Vec<String>> {
    // A gitlink (submodule) is a directory, not a file an agent can read.
    const GITLINK: u32 = 0o160_000;
    let repo = match Repository::open(dir) {
        Ok(repo)
            if repo.workdir().and_then(|w| w.canonicalize().ok()) == dir.canonicalize().ok() =>
        {
            repo
        }
        _ => {
            let mut files = Vec::new();
            walk_files(dir, "", &mut files)?;
            files.sort();
            return Ok(files);
        }
    };
    let mut files: std::collections::BTreeSet<String> = repo
        .index()?
        .iter()
        .filter(|e| e.mode != GITLINK)
        .map(|e| String::from_utf8_lossy(&e.path).into_owned())
        .collect();
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(true);
    for entry in repo.statuses(Some(&mut opts))?.iter() {
        let path = String::from_utf8_lossy(entry.path_bytes()).into_owned();
        let status = entry.status();
        if status.intersects(Status::WT_DELETED | Status::INDEX_DELETED) {
            files.remove(&path);
        } else if status.contains(Status::WT_NEW) && !path.ends_with('/') {
            // A trailing '/' marks a nested repository, which is not ours to show.
            files.insert(path);
        }
    }
    Ok(files.into_iter().collect())
}

fn walk_files(dir: &Path, prefix: &str, out: &mut Vec<String>) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == ".git" {
            continue;
        }
        let rel = format!("{prefix}{name}");
        if entry.file_type()?.is_dir() {
            walk_files(&entry.path(), &format!("{rel}/"), out)?;
        } else {
            out.push(rel);
        }
    }
    Ok(())
}
