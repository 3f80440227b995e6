//! git itself, run as a command in the merge test's repository: what swarm's merges are
//! compared against.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::tree::{Entry, Tree};
use crate::git::CommitId;

/// The git command line in a repository, hermetic: no user or system configuration, a fixed
/// identity and date.
pub(super) struct Git {
    pub(super) dir: PathBuf,
    pub(super) home: PathBuf,
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

    pub(super) fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Makes the working tree exactly `tree` and commits it on the current branch.
    pub(super) fn commit(&self, tree: &Tree, message: &str) -> CommitId {
        write_tree(&self.dir, tree);
        // A fresh index: every file is hashed again, whatever its size and time stamps.
        std::fs::remove_file(self.dir.join(".git/index")).ok();
        self.ok(&["add", "-A"]);
        self.ok(&["commit", "-q", "--allow-empty", "-m", message]);
        CommitId::new(self.ok(&["rev-parse", "HEAD"]).trim())
    }

    /// git's merge of `theirs` into `ours` from `base`.
    pub(super) fn merge_tree(
        &self,
        base: &CommitId,
        ours: &CommitId,
        theirs: &CommitId,
    ) -> GitMerge {
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
    pub(super) fn renamed(&self, base: &CommitId, sides: [&CommitId; 2], paths: &[String]) -> bool {
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
    pub(super) fn binary_with_mode_change(
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
pub(super) struct GitMerge {
    /// The merged tree; with a conflict, the tree holding conflict markers.
    pub(super) tree: String,
    pub(super) clean: bool,
    /// The conflicted entries and git's messages about them.
    pub(super) messages: String,
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
