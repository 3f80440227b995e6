//! Merging a writer's commit into the integration branch, in memory: a fast path for changes
//! that touch different paths, libgit2's three-way merge for the rest, and a compare-and-swap
//! of the integration ref against the tip swarm recorded. Paths are bytes throughout.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use git2::{Delta, Diff, FileMode, MergeOptions, Oid, Tree};

use super::{CommitId, Merge, Repo};

/// Merges `theirs` (a writer's commit, started from `base`) into `expected`, the tip of
/// `into_ref` swarm recorded, and moves the ref there only if it still points at
/// `expected`. The ref is never re-read to build on: a ref moved by anyone else is
/// `Merge::Moved`, with nothing merged.
pub fn merge(
    repo: &Repo,
    into_ref: &str,
    expected: &CommitId,
    theirs: &CommitId,
    base: &CommitId,
    message: &str,
) -> anyhow::Result<Merge> {
    let found = repo.ref_target(into_ref)?;
    if found.as_ref() != Some(expected) {
        return Ok(Merge::Moved { found });
    }
    let ours_commit = repo.repo.find_commit(expected.oid()?)?;
    let theirs_commit = repo.repo.find_commit(theirs.oid()?)?;
    let base_tree = repo.repo.find_commit(base.oid()?)?.tree()?;
    let ours_tree = ours_commit.tree()?;
    let theirs_tree = theirs_commit.tree()?;
    let ours_diff = repo
        .repo
        .diff_tree_to_tree(Some(&base_tree), Some(&ours_tree), None)?;
    let theirs_diff = repo
        .repo
        .diff_tree_to_tree(Some(&base_tree), Some(&theirs_tree), None)?;
    let removed = removed_directories(&base_tree, &ours_tree, &theirs_diff)
        .into_iter()
        .chain(removed_directories(&base_tree, &theirs_tree, &ours_diff))
        .collect::<Vec<_>>();
    if !removed.is_empty() {
        return Ok(Merge::Refused {
            why: "one side removed (or renamed) a directory the other side added files to; git may move those files or report a conflict, swarm leaves that to you".to_owned(),
            paths: removed,
        });
    }
    // libgit2 carries a change of an entry's kind (a file that became a link, or back)
    // over to where the other side moved the file; git reports a conflict.
    let retyped = retyped_and_changed(&ours_diff, &theirs_diff)
        .into_iter()
        .chain(retyped_and_changed(&theirs_diff, &ours_diff))
        .collect::<Vec<_>>();
    if !retyped.is_empty() {
        return Ok(Merge::Conflicted { paths: retyped });
    }
    // Both sides add one file with different modes: git conflicts, libgit2 takes one.
    let modes = added_with_other_modes(&ours_diff, &theirs_diff);
    if !modes.is_empty() {
        return Ok(Merge::Conflicted { paths: modes });
    }
    let gone = deleted_on_both_with_additions(&ours_diff, &theirs_diff);
    if !gone.is_empty() {
        return Ok(Merge::Refused {
            why: "both sides deleted a file and one of them added files: git may take that for a rename (a rename/delete or rename/rename conflict) where libgit2's rename detection, which skips small files, does not; swarm leaves that to you".to_owned(),
            paths: gone,
        });
    }
    // The fast path steps aside for anything it does not handle exactly, errors included.
    let fast = apply_disjoint(repo, &ours_diff, &theirs_diff, &ours_tree).unwrap_or(None);
    let merged_tree = match fast {
        Some(tree) => tree,
        None => match merge_whole_trees(repo, &base_tree, &ours_tree, &theirs_tree) {
            Ok(Ok(tree)) => tree,
            Ok(Err(paths)) => return Ok(Merge::Conflicted { paths }),
            Err(e) => {
                return Ok(Merge::Refused {
                    why: format!("the three-way merge failed: {e:#}"),
                    paths: Vec::new(),
                });
            }
        },
    };
    let tree = repo.repo.find_tree(merged_tree)?;
    let sig = repo.signature()?;
    let merged = repo.repo.commit(
        None,
        &sig,
        &sig,
        message,
        &tree,
        &[&ours_commit, &theirs_commit],
    )?;
    if let Err(e) = repo
        .repo
        .reference_matching(into_ref, merged, true, ours_commit.id(), message)
    {
        return repo.not_moved(into_ref, expected, e);
    }
    Ok(Merge::Merged {
        before: expected.clone(),
        after: merged.into(),
    })
}

/// The merge when the writer's changes and those merged since it started touch different
/// paths (none the same, none inside another) and change no entry's kind: the integration
/// tree with the writer's changes applied, found from two tree diffs that skip unchanged
/// subtrees, instead of a walk of the whole tree. `None` when that would not be exact.
fn apply_disjoint(
    repo: &Repo,
    ours_diff: &Diff<'_>,
    theirs_diff: &Diff<'_>,
    ours: &Tree<'_>,
) -> anyhow::Result<Option<Oid>> {
    let Some(ours_paths) = delta_paths(ours_diff) else {
        return Ok(None);
    };
    let Some(theirs_paths) = delta_paths(theirs_diff) else {
        return Ok(None);
    };
    // A path twice (a type change seen as a deletion and an addition), or a path inside
    // another the writer changed (a file that became a directory, or back).
    if theirs_paths.len() != theirs_diff.deltas().len() || nests(&theirs_paths) {
        return Ok(None);
    }
    let mut update = git2::build::TreeUpdateBuilder::new();
    for d in theirs_diff.deltas() {
        let Some(path) = delta_path(&d) else {
            return Ok(None);
        };
        if touches(&ours_paths, path) {
            return Ok(None);
        }
        match d.status() {
            Delta::Deleted => {
                update.remove(path);
            }
            Delta::Added | Delta::Modified
                if d.status() == Delta::Added
                    || kind(d.old_file().mode()) == kind(d.new_file().mode()) =>
            {
                let mode = match d.new_file().mode() {
                    FileMode::BlobExecutable => FileMode::BlobExecutable,
                    FileMode::Link => FileMode::Link,
                    FileMode::Commit => FileMode::Commit,
                    _ => FileMode::Blob,
                };
                update.upsert(path, d.new_file().id(), mode);
            }
            _ => return Ok(None),
        }
    }
    Ok(Some(update.create_updated(&repo.repo, ours)?))
}

/// libgit2's three-way merge of whole trees: the merged tree, or the conflicting paths.
fn merge_whole_trees(
    repo: &Repo,
    base: &Tree<'_>,
    ours: &Tree<'_>,
    theirs: &Tree<'_>,
) -> anyhow::Result<Result<Oid, Vec<String>>> {
    let mut index = repo.repo.merge_trees(
        base,
        ours,
        theirs,
        Some(MergeOptions::new().fail_on_conflict(false)),
    )?;
    if index.has_conflicts() {
        let mut paths = BTreeSet::new();
        for c in index.conflicts()? {
            let c = c?;
            for entry in [c.ancestor, c.our, c.their].into_iter().flatten() {
                paths.insert(String::from_utf8_lossy(&entry.path).into_owned());
            }
        }
        return Ok(Err(paths.into_iter().collect()));
    }
    Ok(Ok(index.write_tree_to(&repo.repo)?))
}

/// The entry kinds a merge must not mix up: a file (plain or executable), a link, a submodule.
fn kind(mode: FileMode) -> u8 {
    match mode {
        FileMode::Link => 1,
        FileMode::Commit => 2,
        FileMode::Tree => 3,
        _ => 0,
    }
}

fn delta_path<'a>(d: &git2::DiffDelta<'a>) -> Option<&'a [u8]> {
    d.new_file()
        .path_bytes()
        .or_else(|| d.old_file().path_bytes())
}

/// Every path a diff touches; `None` if a delta names none.
fn delta_paths(diff: &Diff<'_>) -> Option<BTreeSet<Vec<u8>>> {
    diff.deltas()
        .map(|d| delta_path(&d).map(<[u8]>::to_vec))
        .collect()
}

/// Whether `path`, a directory holding one of `paths`, or a file `path` lies inside, is in
/// `paths`.
fn touches(paths: &BTreeSet<Vec<u8>>, path: &[u8]) -> bool {
    if paths.contains(path) {
        return true;
    }
    let mut inner = path.to_vec();
    inner.push(b'/');
    if paths
        .range(inner.clone()..)
        .next()
        .is_some_and(|p| p.starts_with(&inner))
    {
        return true;
    }
    path.iter()
        .enumerate()
        .any(|(i, &b)| b == b'/' && paths.contains(&path[..i]))
}

/// Whether one of `paths` lies inside another.
fn nests(paths: &BTreeSet<Vec<u8>>) -> bool {
    paths.iter().any(|p| {
        let mut inner = p.clone();
        inner.push(b'/');
        paths
            .range(inner.clone()..)
            .next()
            .is_some_and(|q| q.starts_with(&inner))
    })
}

/// Paths that `retyped` (a diff from the base) turns into another kind of entry (a file into a
/// link, or back), and that `other` changes in any other way: edits, deletes or moves. git
/// reports a conflict there; libgit2 carries the new kind over to where `other` moved the file.
fn retyped_and_changed(retyped: &Diff<'_>, other: &Diff<'_>) -> Vec<String> {
    let entries = |diff: &Diff<'_>, status| {
        diff.deltas()
            .filter(|d| d.status() == status)
            .filter_map(|d| {
                let new = (d.new_file().id(), d.new_file().mode());
                delta_path(&d).map(|p| (p.to_vec(), new))
            })
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let deleted = entries(retyped, Delta::Deleted);
    let other_added = entries(other, Delta::Added);
    let other_touched = delta_paths(other).unwrap_or_default();
    entries(retyped, Delta::Added)
        .into_iter()
        .filter(|(p, new)| {
            deleted.contains_key(p) && other_touched.contains(p) && other_added.get(p) != Some(new)
        })
        .map(|(p, _)| String::from_utf8_lossy(&p).into_owned())
        .collect()
}

/// Paths both diffs add with the same content but different modes.
fn added_with_other_modes(ours: &Diff<'_>, theirs: &Diff<'_>) -> Vec<String> {
    let added = |diff: &Diff<'_>| {
        diff.deltas()
            .filter(|d| d.status() == Delta::Added)
            .filter_map(|d| {
                let f = d.new_file();
                f.path_bytes().map(|p| (p.to_vec(), (f.id(), f.mode())))
            })
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let theirs = added(theirs);
    added(ours)
        .into_iter()
        .filter(|(p, (id, mode))| {
            theirs
                .get(p)
                .is_some_and(|(tid, tmode)| tid == id && tmode != mode)
        })
        .map(|(p, _)| String::from_utf8_lossy(&p).into_owned())
        .collect()
}

/// Paths of the base both diffs delete, when one of them also adds a file (which git's rename
/// detection may pair with the deleted one).
fn deleted_on_both_with_additions(ours: &Diff<'_>, theirs: &Diff<'_>) -> Vec<String> {
    let with = |diff: &Diff<'_>, status| {
        diff.deltas()
            .filter(|d| d.status() == status)
            .filter_map(|d| delta_path(&d).map(<[u8]>::to_vec))
            .collect::<BTreeSet<_>>()
    };
    let adds = !with(ours, Delta::Added).is_empty() || !with(theirs, Delta::Added).is_empty();
    if !adds {
        return Vec::new();
    }
    with(ours, Delta::Deleted)
        .intersection(&with(theirs, Delta::Deleted))
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect()
}

/// Paths that `added` (a diff from `base`) adds inside a directory that `base` has and `other`
/// no longer has at all: the case where git's directory-rename detection may move them.
fn removed_directories(base: &Tree<'_>, other: &Tree<'_>, added: &Diff<'_>) -> Vec<String> {
    let mut out = Vec::new();
    let mut gone = std::collections::HashMap::<Vec<u8>, bool>::new();
    for d in added.deltas().filter(|d| d.status() == Delta::Added) {
        let Some(path) = d.new_file().path_bytes() else {
            continue;
        };
        let removed = path.iter().enumerate().any(|(i, &b)| {
            b == b'/'
                && *gone.entry(path[..i].to_vec()).or_insert_with(|| {
                    let dir = Path::new(OsStr::from_bytes(&path[..i]));
                    let is_tree = |t: &Tree<'_>| {
                        t.get_path(dir)
                            .is_ok_and(|e| e.kind() == Some(git2::ObjectType::Tree))
                    };
                    is_tree(base) && !is_tree(other)
                })
        });
        if removed {
            out.push(String::from_utf8_lossy(path).into_owned());
        }
    }
    out
}

/// What a change holds that a human must see before it is merged.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Scan {
    /// Guarded paths it adds, changes or deletes.
    pub guarded: Vec<String>,
    /// Files it adds or changes that contain one of the needles: (path, needle index).
    pub found: Vec<(String, usize)>,
}

/// Looks at the change from `from` to `to`: which of the `guarded` paths it touches, and
/// which files it adds or changes contain one of `needles`.
pub fn scan_change(
    repo: &Repo,
    from: &CommitId,
    to: &CommitId,
    guarded: &[String],
    needles: &[&[u8]],
) -> anyhow::Result<Scan> {
    let a = repo.repo.find_commit(from.oid()?)?.tree()?;
    let b = repo.repo.find_commit(to.oid()?)?.tree()?;
    let diff = repo.repo.diff_tree_to_tree(Some(&a), Some(&b), None)?;
    let mut scan = Scan::default();
    for d in diff.deltas() {
        for path in [d.old_file().path_bytes(), d.new_file().path_bytes()]
            .into_iter()
            .flatten()
        {
            if guarded.iter().any(|g| g.as_bytes() == path) {
                scan.guarded
                    .push(String::from_utf8_lossy(path).into_owned());
                break;
            }
        }
        if needles.is_empty() || d.status() == Delta::Deleted {
            continue;
        }
        let Ok(blob) = repo.repo.find_blob(d.new_file().id()) else {
            continue;
        };
        // A secret the file held before is not the writer's doing.
        let old = repo.repo.find_blob(d.old_file().id()).ok();
        let holds = |content: &[u8], n: &[u8]| memchr::memmem::find(content, n).is_some();
        if let Some(n) = needles.iter().position(|n| {
            holds(blob.content(), n) && !old.as_ref().is_some_and(|o| holds(o.content(), n))
        }) {
            let path = delta_path(&d).unwrap_or_default();
            scan.found
                .push((String::from_utf8_lossy(path).into_owned(), n));
        }
    }
    Ok(scan)
}

#[cfg(test)]
#[path = "merge_tests/mod.rs"]
mod tests;
