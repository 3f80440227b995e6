//! A seeded differential test of `Repo::merge` against `git merge-tree`: random base trees and
//! random writers' edits, merged one at a time by both, must give the same tree, or swarm must
//! park a case listed in `KNOWN_DIFFERENCES`. A failure prints the seed and case to replay.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fmt;
use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::git::{CommitId, Merge, Repo};

/// The cases where swarm may park (`Conflicted` or `Refused`) a merge that git makes. Swarm must
/// never merge where git conflicts, nor merge to another tree than git's.
///
/// 0. A directory one side removed (or renamed) while the other added files in it: git's
///    directory-rename detection may move those files, so swarm refuses.
/// 1. A rename: git and libgit2 score similarity differently, so one may pair a deleted and an
///    added file that the other leaves apart. Every path swarm conflicts on must be one end of
///    a rename git finds.
/// 2. A binary file one side changed and the other only made executable or not: libgit2 wants
///    a content merge there, which binary files do not have; git takes each side's change.
/// 3. A file both sides deleted while one of them added files: libgit2's rename detection
///    skips small files, so where git sees a rename/delete or rename/rename conflict libgit2
///    merges; swarm refuses all such cases, also those git merges.
const KNOWN_DIFFERENCES: [&str; 4] = [
    "a directory one side removed",
    "a rename",
    "a binary file's mode",
    "a file both sides deleted",
];

/// An index into `KNOWN_DIFFERENCES`.
#[derive(Clone, Copy)]
enum Known {
    RemovedDirectory = 0,
    Rename = 1,
    BinaryMode = 2,
    DeletedOnBoth = 3,
}

const DEFAULT_SEED: u64 = 0x5eed_5eed;
const DEFAULT_CASES: u64 = 300;

#[test]
#[expect(
    clippy::print_stderr,
    reason = "what the generated cases covered, to see the test still reaches the interesting ones"
)]
fn merge_matches_git_merge_tree_on_generated_writers() {
    let seed = env_number("SWARM_MERGE_SEED").unwrap_or(DEFAULT_SEED);
    let cases = env_number("SWARM_MERGE_CASES").unwrap_or(DEFAULT_CASES);
    // One case alone, to replay a failure.
    let only = env_number("SWARM_MERGE_CASE");
    let mut tally = Tally::default();
    let mut failures = Vec::new();
    for case in (0..cases).filter(|c| only.is_none_or(|o| o == *c)) {
        if let Err(failure) = run_case(seed, case, &mut tally) {
            failures.push(failure);
        }
    }
    eprintln!("seed {seed}: {tally}");
    assert!(
        failures.is_empty(),
        "{} case(s) differ from git merge-tree; {tally}\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// What the merges came to, over all cases.
#[derive(Default)]
struct Tally {
    cases: u64,
    steps: u64,
    /// Writers whose edits cancelled out, never merged.
    unchanged: u64,
    clean: u64,
    conflicts: u64,
    /// Per known difference: swarm parked where git merged, and where git conflicted too.
    known: [(u64, u64); KNOWN_DIFFERENCES.len()],
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} cases, {} merges ({} unchanged writers skipped): {} clean as git, {} conflicted as git",
            self.cases, self.steps, self.unchanged, self.clean, self.conflicts
        )?;
        for (what, (git_merged, git_conflicted)) in KNOWN_DIFFERENCES.iter().zip(self.known) {
            write!(
                f,
                "; parked for {what}: {git_merged} git merged, {git_conflicted} git conflicted"
            )?;
        }
        Ok(())
    }
}

/// One case: a base, 2–4 writers started from it, merged into `int` in a random order by
/// swarm and by git. `Err` describes the first step where they disagree.
fn run_case(seed: u64, case: u64, tally: &mut Tally) -> Result<(), String> {
    let mut rng = Rng::new(seed, case);
    let base_tree = random_base(&mut rng);
    let shared = Shared::new(&mut rng);
    let scripts: Vec<Script> = (1..=2 + rng.below(3))
        .map(|w| script(&mut rng, &base_tree, w, &shared))
        .collect();
    let mut order: Vec<usize> = (0..scripts.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i + 1));
    }
    tally.cases += 1;

    let mut tmp = tempfile::tempdir().unwrap();
    // Left behind to look into, when replaying a case.
    tmp.disable_cleanup(std::env::var_os("SWARM_MERGE_KEEP").is_some());
    let git = Git {
        dir: tmp.path().join("repo"),
        home: tmp.path().to_owned(),
    };
    std::fs::create_dir(&git.dir).unwrap();
    git.ok(&["init", "-q", "-b", "main"]);
    let base = git.commit(&base_tree, "base");
    git.ok(&["branch", "int"]);
    let mut writers = Vec::new();
    for (i, s) in scripts.iter().enumerate() {
        if s.tree == base_tree {
            tally.unchanged += 1;
            writers.push(None);
            continue;
        }
        git.ok(&[
            "checkout",
            "-q",
            "-b",
            &format!("w{}", i + 1),
            base.as_str(),
        ]);
        writers.push(Some(git.commit(&s.tree, &format!("w{}", i + 1))));
    }

    let repo = Repo::discover(&git.dir).unwrap();
    let mut tip = base.clone();
    for (step, &w) in order.iter().enumerate() {
        let Some(theirs) = &writers[w] else {
            continue;
        };
        tally.steps += 1;
        let fail = |what: String| {
            let mut out = format!(
                "seed {seed} case {case}, step {step} (w{} into int at {tip}): {what}\n\
                 replay: SWARM_MERGE_SEED={seed} SWARM_MERGE_CASE={case} cargo test --lib merge_matches\n\
                 (SWARM_MERGE_KEEP=1 keeps the repository, {})\n\
                 base:\n{}",
                w + 1,
                git.dir.display(),
                show_tree(&base_tree)
            );
            for (i, s) in scripts.iter().enumerate() {
                writeln!(out, "w{}: {:?}", i + 1, s.ops).unwrap();
            }
            let order: Vec<String> = order.iter().map(|w| format!("w{}", w + 1)).collect();
            write!(out, "merge order: {}", order.join(", ")).unwrap();
            out
        };
        let by_git = git.merge_tree(&base, &tip, theirs);
        let swarm = super::merge(&repo, "refs/heads/int", &tip, theirs, &base, "m")
            .map_err(|e| fail(format!("swarm's merge failed: {e:#}")))?;
        let parked = match swarm {
            Merge::Merged { before, after } => {
                let tree = git.ok(&["rev-parse", &format!("{after}^{{tree}}")]);
                let tree = tree.trim();
                let parents = repo.parents(&after).unwrap();
                if !by_git.clean
                    || tree != by_git.tree
                    || before != tip
                    || parents != [tip.clone(), theirs.clone()]
                {
                    let verdict = if by_git.clean { "merges" } else { "conflicts" };
                    let diff = git.ok(&["diff-tree", "-r", "-p", &by_git.tree, tree]);
                    return Err(fail(format!(
                        "git {verdict}, swarm merged {before}..{after}\n\
                         git says:\n{}\n\
                         git's tree {} → swarm's {tree}:\n{diff}",
                        by_git.messages, by_git.tree
                    )));
                }
                tally.clean += 1;
                tip = after;
                continue;
            }
            Merge::Conflicted { .. } if !by_git.clean => {
                tally.conflicts += 1;
                None
            }
            Merge::Conflicted { paths } => {
                let sides = [&tip, theirs];
                if git.renamed(&base, sides, &paths) {
                    Some(Known::Rename)
                } else if git.binary_with_mode_change(&base, sides, &paths) {
                    Some(Known::BinaryMode)
                } else {
                    return Err(fail(format!(
                        "git merges cleanly, swarm conflicts on {paths:?}"
                    )));
                }
            }
            Merge::Refused { why, paths } => {
                if why.contains("removed (or renamed) a directory") {
                    Some(Known::RemovedDirectory)
                } else if why.contains("both sides deleted a file") {
                    Some(Known::DeletedOnBoth)
                } else {
                    return Err(fail(format!("swarm refused ({why}) on {paths:?}")));
                }
            }
            Merge::Moved { found } => {
                return Err(fail(format!("swarm found int moved, at {found:?}")));
            }
        };
        if let Some(kind) = parked {
            let (git_merged, git_conflicted) = &mut tally.known[kind as usize];
            if by_git.clean {
                *git_merged += 1;
            } else {
                *git_conflicted += 1;
            }
        }
        let at = repo.ref_target("refs/heads/int").unwrap();
        if at.as_ref() != Some(&tip) {
            return Err(fail(format!("nothing merged, but int moved to {at:?}")));
        }
    }
    Ok(())
}

/// A tree as a map of paths (bytes, `/`-separated) to entries; directories are implied.
type Tree = BTreeMap<Vec<u8>, Entry>;

#[derive(Clone, PartialEq, Eq)]
enum Entry {
    File { data: Vec<u8>, exec: bool },
    Link(Vec<u8>),
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Entry::File { data, exec: false } => write!(f, "file {:?}", Bytes(data.clone())),
            Entry::File { data, exec: true } => write!(f, "exec {:?}", Bytes(data.clone())),
            Entry::Link(target) => write!(f, "link -> {:?}", Bytes(target.clone())),
        }
    }
}

/// Bytes shown as an escaped string, so paths that are not UTF-8 read back exactly.
#[derive(Clone, PartialEq, Eq)]
struct Bytes(Vec<u8>);

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\"", self.0.escape_ascii())
    }
}

fn show_tree(t: &Tree) -> String {
    let mut out = String::new();
    for (path, entry) in t {
        writeln!(out, "  {:?}: {entry:?}", Bytes(path.clone())).unwrap();
    }
    out
}

/// One writer's change to a tree. Lines are counted from 0 and keep their own line ending.
#[derive(Debug, Clone)]
enum Op {
    Add {
        path: Bytes,
        entry: Entry,
    },
    EditLine {
        path: Bytes,
        line: usize,
        text: Bytes,
    },
    InsertLine {
        path: Bytes,
        line: usize,
        text: Bytes,
    },
    Delete {
        path: Bytes,
    },
    Rename {
        from: Bytes,
        to: Bytes,
    },
    RenameDir {
        from: Bytes,
        to: Bytes,
    },
    Chmod {
        path: Bytes,
        exec: bool,
    },
    ToLink {
        path: Bytes,
        target: Bytes,
    },
    ToFile {
        path: Bytes,
        data: Bytes,
    },
    /// `path` becomes a directory holding `path/inner`.
    FileToDir {
        path: Bytes,
        data: Bytes,
    },
    /// Everything under `path/` goes, `path` becomes a file.
    DirToFile {
        path: Bytes,
        data: Bytes,
    },
    Binary {
        path: Bytes,
        data: Bytes,
    },
    /// LF to CRLF, or CRLF back to LF.
    LineEndings {
        path: Bytes,
    },
}

struct Script {
    ops: Vec<Op>,
    tree: Tree,
}

/// What writers of one case may do alike: the same line text, the same added file.
struct Shared {
    line: Vec<u8>,
    add: (Vec<u8>, Entry),
}

impl Shared {
    fn new(rng: &mut Rng) -> Self {
        Self {
            line: format!("shared {}", rng.below(1000)).into_bytes(),
            add: (
                b"new/shared.txt".to_vec(),
                Entry::File {
                    data: text(rng, LF),
                    exec: false,
                },
            ),
        }
    }
}

const NON_UTF8: &[u8] = b"caf\xe9.txt";
const DIRS: &[&str] = &[
    "", "src/", "src/sub/", "docs/", "assets/", "new/", "src/new/",
];
const NAMES: &[&[u8]] = &[
    b"a.txt",
    b"b.txt",
    b"notes.md",
    b"x.rs",
    b"data.bin",
    b"caf\xe9.txt",
];
const WORDS: &[&str] = &["alpha", "beta", "gamma", "delta", "omega"];
/// Lines many files share, so that diffs have more than one way to line files up.
const COMMON_LINES: &[&str] = &["}", "", "    x += 1;", "end"];

fn random_base(rng: &mut Rng) -> Tree {
    let mut t = Tree::new();
    let file = |data, exec| Entry::File { data, exec };
    let candidates = [
        (b"README.md".to_vec(), file(text(rng, LF), false)),
        (b"src/lib.rs".to_vec(), file(text(rng, LF), false)),
        (b"src/sub/mod.rs".to_vec(), file(text(rng, LF), false)),
        (b"docs/guide.txt".to_vec(), file(text(rng, CRLF), false)),
        (b"assets/logo.bin".to_vec(), file(binary(rng), false)),
        (b"run.sh".to_vec(), file(text(rng, LF), true)),
        (b"link".to_vec(), Entry::Link(b"README.md".to_vec())),
        (NON_UTF8.to_vec(), file(text(rng, LF), false)),
    ];
    for (path, entry) in candidates {
        if rng.chance(85) {
            t.insert(path, entry);
        }
    }
    for _ in 0..rng.below(4) {
        if let Some(path) = new_path(rng, &t) {
            let eol = random_eol(rng);
            let data = text(rng, eol);
            t.insert(path, file(data, false));
        }
    }
    t
}

fn text(rng: &mut Rng, eol: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let n = 3 + rng.below(10);
    for i in 0..n {
        if rng.chance(20) {
            out.extend_from_slice(rng.pick(COMMON_LINES).as_bytes());
        } else {
            let word = rng.pick(WORDS);
            out.extend_from_slice(format!("{word} {}", rng.below(1000)).as_bytes());
        }
        // Now and then a last line with no line ending.
        if i + 1 < n || rng.chance(90) {
            out.extend_from_slice(eol);
        }
    }
    out
}

const LF: &[u8] = b"\n";
const CRLF: &[u8] = b"\r\n";

fn random_eol(rng: &mut Rng) -> &'static [u8] {
    if rng.chance(20) { CRLF } else { LF }
}

fn binary(rng: &mut Rng) -> Vec<u8> {
    let mut out: Vec<u8> = (0..8 + rng.below(32)).map(|_| rng.next() as u8).collect();
    let at = rng.below(out.len());
    out[at] = 0;
    out
}

fn script(rng: &mut Rng, base: &Tree, w: usize, shared: &Shared) -> Script {
    let mut tree = base.clone();
    let mut ops = Vec::new();
    let n = 1 + rng.below(4);
    for _ in 0..n {
        // Most kinds of change need something to change; try another kind when it is missing.
        if let Some(op) = (0..20).find_map(|_| random_op(rng, &tree, w, shared)) {
            apply(&mut tree, &op);
            ops.push(op);
        }
    }
    Script { ops, tree }
}

fn random_op(rng: &mut Rng, t: &Tree, w: usize, shared: &Shared) -> Option<Op> {
    let paths = |keep: fn(&Entry) -> bool| -> Vec<Vec<u8>> {
        t.iter()
            .filter(|(_, e)| keep(e))
            .map(|(p, _)| p.clone())
            .collect()
    };
    let texts = paths(|e| matches!(e, Entry::File { data, .. } if !data.contains(&0)));
    let files = paths(|e| matches!(e, Entry::File { .. }));
    let links = paths(|e| matches!(e, Entry::Link(_)));
    let all = paths(|_| true);
    let dirs = directories(t);
    // A quarter of the edited lines read the same in every writer: identical changes merge.
    let line_text = |rng: &mut Rng| {
        Bytes(if rng.chance(25) {
            shared.line.clone()
        } else {
            format!("w{w} {}", rng.below(1000)).into_bytes()
        })
    };
    let line_count = |path: &[u8]| match &t[path] {
        Entry::File { data, .. } => lines(data).len(),
        Entry::Link(_) => 0,
    };
    let op = match rng.below(100) {
        0..30 => {
            let path = rng.pick_some(&texts)?;
            let n = line_count(&path);
            // Low lines only, so writers often edit the same or neighbouring lines.
            let line = rng.below(n.clamp(1, 6));
            (n > 0).then(|| Op::EditLine {
                path: Bytes(path),
                line,
                text: line_text(rng),
            })?
        }
        30..38 => {
            let path = rng.pick_some(&texts)?;
            let n = line_count(&path);
            let line = rng.below(n.clamp(1, 6));
            (n > 0).then(|| Op::InsertLine {
                path: Bytes(path),
                line,
                text: line_text(rng),
            })?
        }
        38..50 if rng.chance(30) => {
            let (path, entry) = shared.add.clone();
            free(t, &path).then_some(Op::Add {
                path: Bytes(path),
                entry,
            })?
        }
        38..50 => {
            let path = Bytes(new_path(rng, t)?);
            let eol = random_eol(rng);
            let entry = Entry::File {
                data: text(rng, eol),
                exec: rng.chance(10),
            };
            Op::Add { path, entry }
        }
        50..57 => Op::Delete {
            path: Bytes(rng.pick_some(&all)?),
        },
        57..64 => Op::Rename {
            from: Bytes(rng.pick_some(&all)?),
            to: Bytes(new_path(rng, t)?),
        },
        64..67 => {
            let from = rng.pick_some(&dirs)?;
            let to = rng
                .pick(&["lib", "src/moved", "pkg", "docs/old"])
                .as_bytes();
            (free(t, to) && !to.starts_with(&[from.as_slice(), b"/"].concat())).then(|| {
                Op::RenameDir {
                    from: Bytes(from),
                    to: Bytes(to.to_vec()),
                }
            })?
        }
        67..72 => {
            let path = rng.pick_some(&files)?;
            let Entry::File { exec, .. } = t[&path] else {
                unreachable!()
            };
            Op::Chmod {
                path: Bytes(path),
                exec: !exec,
            }
        }
        72..77 if rng.chance(50) => Op::ToLink {
            path: Bytes(rng.pick_some(&files)?),
            target: Bytes(rng.pick_some(&all)?),
        },
        72..77 => Op::ToFile {
            path: Bytes(rng.pick_some(&links)?),
            data: Bytes(text(rng, LF)),
        },
        77..81 => {
            let path = rng.pick_some(&files)?;
            // Half the time the same content moves into the new directory: a rename.
            let data = match &t[&path] {
                Entry::File { data, .. } if rng.chance(50) => data.clone(),
                _ => text(rng, LF),
            };
            Op::FileToDir {
                path: Bytes(path),
                data: Bytes(data),
            }
        }
        81..84 => Op::DirToFile {
            path: Bytes(rng.pick_some(&dirs)?),
            data: Bytes(text(rng, LF)),
        },
        84..89 => {
            let path = if rng.chance(50) {
                rng.pick_some(&files)?
            } else {
                new_path(rng, t)?
            };
            Op::Binary {
                path: Bytes(path),
                data: Bytes(binary(rng)),
            }
        }
        89..93 => Op::LineEndings {
            path: Bytes(rng.pick_some(&texts)?),
        },
        _ => {
            let path = NON_UTF8.to_vec();
            let n = texts.contains(&path).then(|| line_count(&path))?;
            if n > 0 && rng.chance(60) {
                Op::EditLine {
                    path: Bytes(path),
                    line: rng.below(n.min(6)),
                    text: line_text(rng),
                }
            } else {
                Op::Delete { path: Bytes(path) }
            }
        }
    };
    Some(op)
}

fn apply(t: &mut Tree, op: &Op) {
    match op {
        Op::Add { path, entry } => {
            t.insert(path.0.clone(), entry.clone());
        }
        Op::EditLine { path, line, text } => edit_text(t, &path.0, |ls, _| {
            let old = ls[*line].clone();
            let end = old.len() - old.iter().rev().take_while(|b| b"\r\n".contains(b)).count();
            ls[*line] = [&text.0[..], &old[end..]].concat();
        }),
        Op::InsertLine { path, line, text } => edit_text(t, &path.0, |ls, eol| {
            ls.insert(*line, [&text.0[..], eol].concat());
        }),
        Op::Delete { path } => {
            t.remove(&path.0);
        }
        Op::Rename { from, to } => {
            let entry = t.remove(&from.0).unwrap();
            t.insert(to.0.clone(), entry);
        }
        Op::RenameDir { from, to } => {
            let inside = [&from.0[..], b"/"].concat();
            let moved: Vec<Vec<u8>> = t
                .keys()
                .filter(|p| p.starts_with(&inside))
                .cloned()
                .collect();
            for p in moved {
                let entry = t.remove(&p).unwrap();
                t.insert([&to.0[..], &p[from.0.len()..]].concat(), entry);
            }
        }
        Op::Chmod { path, exec } => {
            if let Some(Entry::File { exec: e, .. }) = t.get_mut(&path.0) {
                *e = *exec;
            }
        }
        Op::ToLink { path, target } => {
            t.insert(path.0.clone(), Entry::Link(target.0.clone()));
        }
        Op::ToFile { path, data } => {
            t.insert(
                path.0.clone(),
                Entry::File {
                    data: data.0.clone(),
                    exec: false,
                },
            );
        }
        Op::FileToDir { path, data } => {
            t.remove(&path.0);
            let entry = Entry::File {
                data: data.0.clone(),
                exec: false,
            };
            t.insert([&path.0[..], b"/inner"].concat(), entry);
        }
        Op::DirToFile { path, data } => {
            let inside = [&path.0[..], b"/"].concat();
            t.retain(|p, _| !p.starts_with(&inside));
            let entry = Entry::File {
                data: data.0.clone(),
                exec: false,
            };
            t.insert(path.0.clone(), entry);
        }
        Op::Binary { path, data } => {
            let exec = matches!(t.get(&path.0), Some(Entry::File { exec: true, .. }));
            let data = data.0.clone();
            t.insert(path.0.clone(), Entry::File { data, exec });
        }
        Op::LineEndings { path } => {
            if let Some(Entry::File { data, .. }) = t.get_mut(&path.0) {
                *data = if is_crlf(data) {
                    replace(data, CRLF, LF)
                } else {
                    replace(data, LF, CRLF)
                };
            }
        }
    }
}

/// Changes a text file's lines (each with its line ending); `eol` is the file's line ending.
fn edit_text(t: &mut Tree, path: &[u8], change: impl FnOnce(&mut Vec<Vec<u8>>, &[u8])) {
    let Some(Entry::File { data, .. }) = t.get_mut(path) else {
        unreachable!("edits are only generated for files")
    };
    let eol = if is_crlf(data) { CRLF } else { LF };
    let mut ls: Vec<Vec<u8>> = lines(data).into_iter().map(<[u8]>::to_vec).collect();
    change(&mut ls, eol);
    *data = ls.concat();
}

fn is_crlf(data: &[u8]) -> bool {
    data.windows(2).any(|w| w == CRLF)
}

fn lines(data: &[u8]) -> Vec<&[u8]> {
    data.split_inclusive(|&b| b == b'\n').collect()
}

fn replace(data: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        if rest.starts_with(from) {
            out.extend_from_slice(to);
            rest = &rest[from.len()..];
        } else {
            out.push(rest[0]);
            rest = &rest[1..];
        }
    }
    out
}

/// Every directory the tree implies, without the trailing `/`.
fn directories(t: &Tree) -> Vec<Vec<u8>> {
    let mut dirs: Vec<Vec<u8>> = t
        .keys()
        .flat_map(|p| {
            p.iter()
                .enumerate()
                .filter(|&(_, &b)| b == b'/')
                .map(|(i, _)| p[..i].to_vec())
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// Whether a file could be added at `path`: nothing there, no file where one of its
/// directories would be, no directory at it.
fn free(t: &Tree, path: &[u8]) -> bool {
    let inside = [path, b"/"].concat();
    !t.contains_key(path)
        && !path
            .iter()
            .enumerate()
            .any(|(i, &b)| b == b'/' && t.contains_key(&path[..i]))
        && !t.keys().any(|p| p.starts_with(&inside))
}

fn new_path(rng: &mut Rng, t: &Tree) -> Option<Vec<u8>> {
    (0..10)
        .map(|_| [rng.pick(DIRS).as_bytes(), *rng.pick(NAMES)].concat())
        .find(|p| free(t, p))
}

/// splitmix64: small, seedable, and the same everywhere.
struct Rng(u64);

impl Rng {
    fn new(seed: u64, case: u64) -> Self {
        let mut rng = Self(seed ^ case.wrapping_mul(0xA076_1D64_78BD_642F));
        rng.next();
        rng
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn pick_some<T: Clone>(&mut self, items: &[T]) -> Option<T> {
        (!items.is_empty()).then(|| self.pick(items).clone())
    }
}

fn env_number(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a number")),
    )
}

/// The git command line in a repository, hermetic: no user or system configuration, a fixed
/// identity and date.
struct Git {
    dir: PathBuf,
    home: PathBuf,
}

impl Git {
    fn run(&self, args: &[&str]) -> Output {
        Command::new("git")
            .args(args)
            .current_dir(&self.dir)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "Test User")
            .env("GIT_AUTHOR_EMAIL", "test@example.com")
            .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
            .env("GIT_COMMITTER_NAME", "Test User")
            .env("GIT_COMMITTER_EMAIL", "test@example.com")
            .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
            .output()
            .expect("running git")
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Makes the working tree exactly `tree` and commits it on the current branch.
    fn commit(&self, tree: &Tree, message: &str) -> CommitId {
        write_tree(&self.dir, tree);
        // A fresh index: every file is hashed again, whatever its size and time stamps.
        std::fs::remove_file(self.dir.join(".git/index")).ok();
        self.ok(&["add", "-A"]);
        self.ok(&["commit", "-q", "--allow-empty", "-m", message]);
        CommitId::new(self.ok(&["rev-parse", "HEAD"]).trim())
    }

    /// git's merge of `theirs` into `ours` from `base`.
    fn merge_tree(&self, base: &CommitId, ours: &CommitId, theirs: &CommitId) -> GitMerge {
        let merge_base = format!("--merge-base={base}");
        let args = [
            "merge-tree",
            "--write-tree",
            &merge_base,
            ours.as_str(),
            theirs.as_str(),
        ];
        let out = self.run(&args);
        let clean = match out.status.code() {
            Some(0) => true,
            Some(1) => false,
            _ => panic!(
                "git {args:?} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ),
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        let (tree, messages) = stdout.split_once('\n').unwrap_or_default();
        GitMerge {
            tree: tree.to_owned(),
            clean,
            messages: messages.to_owned(),
        }
    }

    /// What `git diff-tree` reports from one commit to another, `option` deciding renames.
    fn changes(&self, from: &CommitId, to: &CommitId, option: &str) -> Vec<Change> {
        let out = self.ok(&["diff-tree", "-r", "-z", option, from.as_str(), to.as_str()]);
        let mut fields = out.split('\0').filter(|f| !f.is_empty());
        let mut changes = Vec::new();
        while let Some(meta) = fields.next() {
            let meta: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
            let &[old_mode, new_mode, old_blob, new_blob, status] = &meta[..] else {
                panic!("unexpected diff-tree output {meta:?}");
            };
            let ends = if status.starts_with('R') { 2 } else { 1 };
            changes.push(Change {
                modes: [old_mode.to_owned(), new_mode.to_owned()],
                blobs: [old_blob.to_owned(), new_blob.to_owned()],
                renamed: ends == 2,
                paths: fields.by_ref().take(ends).map(str::to_owned).collect(),
            });
        }
        changes
    }

    /// Whether every one of `paths` is an end of a rename git finds on one of the sides.
    fn renamed(&self, base: &CommitId, sides: [&CommitId; 2], paths: &[String]) -> bool {
        let ends: Vec<String> = sides
            .iter()
            .flat_map(|side| self.changes(base, side, "-M"))
            .filter(|c| c.renamed)
            .flat_map(|c| c.paths)
            .collect();
        paths.iter().all(|p| ends.contains(p))
    }

    /// Whether every one of `paths` is a binary file one side changed and the other only
    /// changed the mode of.
    fn binary_with_mode_change(
        &self,
        base: &CommitId,
        [ours, theirs]: [&CommitId; 2],
        paths: &[String],
    ) -> bool {
        let ours = self.changes(base, ours, "--no-renames");
        let theirs = self.changes(base, theirs, "--no-renames");
        let find = |changes: &[Change], path: &String| {
            changes.iter().find(|c| c.paths[0] == *path).cloned()
        };
        let mode_only = |c: &Change| c.blobs[0] == c.blobs[1] && c.modes[0] != c.modes[1];
        let binary = |c: &Change| {
            c.blobs[0] != c.blobs[1] && self.ok(&["cat-file", "blob", &c.blobs[1]]).contains('\0')
        };
        paths
            .iter()
            .all(|p| match (find(&ours, p), find(&theirs, p)) {
                (Some(a), Some(b)) => {
                    (mode_only(&a) && binary(&b)) || (mode_only(&b) && binary(&a))
                }
                _ => false,
            })
    }
}

/// One entry of `git diff-tree`'s raw output; paths are as swarm reports them, lossy.
#[derive(Clone)]
struct Change {
    modes: [String; 2],
    blobs: [String; 2],
    renamed: bool,
    /// The path, or a rename's old and new paths.
    paths: Vec<String>,
}

/// git's answer to one merge.
struct GitMerge {
    /// The merged tree; with a conflict, the tree holding conflict markers.
    tree: String,
    clean: bool,
    /// The conflicted entries and git's messages about them.
    messages: String,
}

/// Replaces everything in `dir` but `.git` with `tree`.
fn write_tree(dir: &Path, tree: &Tree) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() == ".git" {
            continue;
        }
        if entry.file_type().unwrap().is_dir() {
            std::fs::remove_dir_all(entry.path()).unwrap();
        } else {
            std::fs::remove_file(entry.path()).unwrap();
        }
    }
    for (path, entry) in tree {
        let full = dir.join(OsStr::from_bytes(path));
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        match entry {
            Entry::File { data, exec } => {
                std::fs::write(&full, data).unwrap();
                let mode = if *exec { 0o755 } else { 0o644 };
                std::fs::set_permissions(&full, std::fs::Permissions::from_mode(mode)).unwrap();
            }
            Entry::Link(target) => {
                std::os::unix::fs::symlink(OsStr::from_bytes(target), &full).unwrap();
            }
        }
    }
}
