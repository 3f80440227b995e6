//! Conflicts seen coming: what each running writer changed since it started, committed or
//! not, read from its checkout; the files two of them changed (or one of them and the merges
//! since it started) trial-merged in memory, three sides each, nothing checked out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use git2::{DiffOptions, Oid, Repository, Tree};

use super::CommitId;

/// Files larger than this are not trial-merged: a conflict in them is not foreseen.
const PROBE_CAP: u64 = 1 << 20;

/// What a writer's checkout holds of a path it changed: its bytes, or `None` when deleted.
type Changed = BTreeMap<String, Option<Vec<u8>>>;

/// A running writer: its key, the commit it started from, its checkout.
pub struct Live {
    pub key: usize,
    pub start: CommitId,
    pub dir: PathBuf,
}

/// Writers `a` and `b` (`None`: `a` and what was merged since it started) would conflict in
/// `paths`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clash {
    pub a: usize,
    pub b: Option<usize>,
    pub paths: Vec<String>,
}

/// Compares the running writers with each other and with what was merged since each started
/// (the integration tip is `tip`): the conflicts foreseen, and how many files were
/// trial-merged. A checkout that cannot be read now (being made, or gone) is left out.
pub fn foresee(
    common_dir: &Path,
    live: &[Live],
    tip: &CommitId,
) -> anyhow::Result<(usize, Vec<Clash>)> {
    let repo = &Repository::open(common_dir)?;
    let changed: Vec<(&Live, Changed)> = live
        .iter()
        .filter_map(|w| Some((w, changes(&w.dir, &w.start).ok()?)))
        .collect();
    let tip_tree = repo.find_commit(tip.oid()?)?.tree()?;
    let (mut probes, mut clashes) = (0, Vec::new());
    for (k, (w, mine)) in changed.iter().enumerate() {
        for (other, theirs) in &changed[k + 1..] {
            let both: Vec<&String> = mine.keys().filter(|p| theirs.contains_key(*p)).collect();
            if both.is_empty() {
                continue;
            }
            let Ok(base) = repo.merge_base(w.start.oid()?, other.start.oid()?) else {
                continue;
            };
            let base = repo.find_commit(base)?.tree()?;
            let mut paths = Vec::new();
            for path in both {
                probes += 1;
                let sides = [
                    in_tree(&base, path),
                    written(repo, mine[path].as_ref())?,
                    written(repo, theirs[path].as_ref())?,
                ];
                if conflicts(repo, path, sides)? {
                    paths.push(path.clone());
                }
            }
            if !paths.is_empty() {
                clashes.push(Clash {
                    a: w.key,
                    b: Some(other.key),
                    paths,
                });
            }
        }
        if w.start == *tip {
            continue;
        }
        let start_tree = repo.find_commit(w.start.oid()?)?.tree()?;
        let merged = repo.diff_tree_to_tree(Some(&start_tree), Some(&tip_tree), None)?;
        let mut paths = Vec::new();
        for d in merged.deltas() {
            let Some(path) = d
                .new_file()
                .path()
                .or_else(|| d.old_file().path())
                .and_then(Path::to_str)
            else {
                continue;
            };
            let Some(content) = mine.get(path) else {
                continue;
            };
            probes += 1;
            let sides = [
                in_tree(&start_tree, path),
                in_tree(&tip_tree, path),
                written(repo, content.as_ref())?,
            ];
            if conflicts(repo, path, sides)? {
                paths.push(path.to_owned());
            }
        }
        if !paths.is_empty() {
            clashes.push(Clash {
                a: w.key,
                b: None,
                paths,
            });
        }
    }
    Ok((probes, clashes))
}

/// The paths the checkout at `dir` changed since `start`, committed or not, untracked files
/// included, with what it holds of each now (files past `PROBE_CAP` left out).
fn changes(dir: &Path, start: &CommitId) -> anyhow::Result<Changed> {
    let wt = Repository::open(dir)?;
    let start = wt.find_commit(start.oid()?)?.tree()?;
    let mut opts = DiffOptions::new();
    opts.include_untracked(true).recurse_untracked_dirs(true);
    let diff = wt.diff_tree_to_workdir_with_index(Some(&start), Some(&mut opts))?;
    let mut out = Changed::new();
    for d in diff.deltas() {
        let Some(path) = d
            .new_file()
            .path()
            .or_else(|| d.old_file().path())
            .and_then(Path::to_str)
        else {
            continue;
        };
        let file = dir.join(path);
        let content = match std::fs::symlink_metadata(&file) {
            Ok(m) if m.is_file() && m.len() <= PROBE_CAP => Some(std::fs::read(&file)?),
            Ok(_) => continue,
            Err(_) => None,
        };
        out.insert(path.to_owned(), content);
    }
    Ok(out)
}

/// The blob of `path` in `tree`, if it has one.
fn in_tree(tree: &Tree<'_>, path: &str) -> Option<Oid> {
    tree.get_path(Path::new(path))
        .ok()
        .filter(|e| e.kind() == Some(git2::ObjectType::Blob))
        .map(|e| e.id())
}

/// What a checkout holds of a path, as a blob in the repository (`None`: deleted).
fn written(repo: &Repository, content: Option<&Vec<u8>>) -> anyhow::Result<Option<Oid>> {
    content
        .map(|bytes| repo.blob(bytes).map_err(anyhow::Error::from))
        .transpose()
}

/// Whether git's merge of `path` from these three sides (base, ours, theirs; `None` where a
/// side has no such file) conflicts: a merge of three trees holding that one file.
fn conflicts(repo: &Repository, path: &str, sides: [Option<Oid>; 3]) -> anyhow::Result<bool> {
    let empty = repo.treebuilder(None)?.write()?;
    let empty = repo.find_tree(empty)?;
    let mut trees = Vec::new();
    for side in sides {
        let mut update = git2::build::TreeUpdateBuilder::new();
        if let Some(blob) = side {
            update.upsert(path, blob, git2::FileMode::Blob);
        }
        trees.push(repo.find_tree(update.create_updated(repo, &empty)?)?);
    }
    let index = repo.merge_trees(&trees[0], &trees[1], &trees[2], None)?;
    Ok(index.has_conflicts())
}
