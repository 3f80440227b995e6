//! The merge test's generator: random base trees and random writers' edits to them, from a
//! seeded generator so that a failing case replays.

use super::tree::{Bytes, Entry, Tree};

/// One writer's change to a tree. Lines are counted from 0 and keep their own line ending.
#[derive(Debug, Clone)]
pub(super) enum Op {
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

pub(super) struct Script {
    pub(super) ops: Vec<Op>,
    pub(super) tree: Tree,
}

/// What writers of one case may do alike: the same line text, the same added file.
pub(super) struct Shared {
    line: Vec<u8>,
    add: (Vec<u8>, Entry),
}

impl Shared {
    pub(super) fn new(rng: &mut Rng) -> Self {
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

pub(super) fn random_base(rng: &mut Rng) -> Tree {
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

pub(super) fn script(rng: &mut Rng, base: &Tree, w: usize, shared: &Shared) -> Script {
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
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64, case: u64) -> Self {
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

    pub(super) fn below(&mut self, n: usize) -> usize {
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
