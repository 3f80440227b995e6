//! The trees the merge test generates and compares: paths as bytes, so that names which are
//! not UTF-8 survive.

use std::collections::BTreeMap;
use std::fmt;
use std::fmt::Write as _;

/// A tree as a map of paths (bytes, `/`-separated) to entries; directories are implied.
pub(super) type Tree = BTreeMap<Vec<u8>, Entry>;

#[derive(Clone, PartialEq, Eq)]
pub(super) enum Entry {
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
pub(super) struct Bytes(pub(super) Vec<u8>);

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\"", self.0.escape_ascii())
    }
}

pub(super) fn show_tree(t: &Tree) -> String {
    let mut out = String::new();
    for (path, entry) in t {
        writeln!(out, "  {:?}: {entry:?}", Bytes(path.clone())).unwrap();
    }
    out
}
