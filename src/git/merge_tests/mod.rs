//! A seeded differential test of `Repo::merge` against `git merge-tree`: random base trees and
//! random writers' edits, merged one at a time by both, must give the same tree, or swarm must
//! park a case listed in `KNOWN_DIFFERENCES`. A failure prints the seed and case to replay.

mod generate;
mod git_cli;
mod tree;

use std::fmt;
use std::fmt::Write as _;

use crate::git::{Merge, Repo};
use generate::{Rng, Script, Shared, random_base, script};
use git_cli::Git;
use tree::show_tree;

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

fn env_number(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a number")),
    )
}
