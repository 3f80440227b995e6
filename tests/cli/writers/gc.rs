//! `swarm gc`: it removes a parked writer's worktree but keeps its branch, and deletes only the
//! branches swarm made.

use std::path::PathBuf;

use super::{path_str, run_with_a_conflict, show, swarm_branches};
use crate::{TestRepo, assert_exit, extra_worktrees, rev, run_id, stdout};

#[test]
fn gc_dry_run_lists_a_parked_worktree_and_gc_removes_it_but_keeps_the_branch() {
    let repo = TestRepo::new();
    let (out, run) = run_with_a_conflict(&repo, &[]);
    assert_exit(&out, 3);
    let parked = format!("swarm/{run}-b");
    let parked_commit = rev(&repo, &parked);
    let worktrees = extra_worktrees(&repo);
    assert_eq!(worktrees.len(), 1, "{worktrees:?}");
    assert!(worktrees[0].ends_with(&format!("{run}/b")), "{worktrees:?}");
    let worktree = PathBuf::from(&worktrees[0]);
    let branches = swarm_branches(&repo);

    let dry = repo.swarm(&["gc", "--dry-run"]);

    assert_exit(&dry, 0);
    assert!(
        stdout(&dry).contains(&format!("{run}/b")),
        "{}",
        stdout(&dry)
    );
    assert!(
        worktree.join("src/lib.rs").exists(),
        "--dry-run deleted the worktree"
    );
    assert_eq!(extra_worktrees(&repo), worktrees);
    assert_eq!(swarm_branches(&repo), branches);

    let gc = repo.swarm(&["gc"]);

    assert_exit(&gc, 0);
    assert!(!worktree.exists(), "gc left the parked worktree");
    assert_eq!(extra_worktrees(&repo), Vec::<String>::new());
    assert_eq!(
        rev(&repo, &parked),
        parked_commit,
        "gc deleted a branch with unmerged work"
    );
    assert_eq!(
        show(&repo, &parked, "src/lib.rs"),
        "pub fn one() -> u32 {\n    3\n}\n"
    );
}

#[test]
fn gc_deletes_only_the_branches_swarm_made() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo w > w.txt"}"#]);
    let out = repo.swarm(&["run", path_str(&tasks), "--land", "branch"]);
    assert_exit(&out, 0);
    let run = run_id(&repo);
    let integration = format!("swarm/{run}");
    repo.git(&["merge", "-q", "--ff-only", &integration]);
    // Names of the user's own under swarm/, every commit of them held by main.
    for mine in ["swarm/mine", &format!("swarm/{run}-not-a-task")] {
        repo.git(&["branch", mine, "main"]);
    }

    let out = repo.swarm(&["gc"]);

    assert_exit(&out, 0);
    assert_eq!(
        swarm_branches(&repo),
        [format!("swarm/{run}-not-a-task"), "swarm/mine".to_owned()],
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("keep branch swarm/mine (not swarm's)"),
        "{}",
        stdout(&out)
    );
}
