//! Landing the integration branch in the user's checkout: only where nothing of the user's is
//! in the way, else the run stays on its branch; `--land branch` never lands.

use super::{path_str, show, swarm_branches};
use crate::{TestRepo, assert_exit, rev, run_id, stdout};

#[test]
fn dirty_checkout_is_left_alone_and_the_run_stays_on_its_branch() {
    let repo = TestRepo::new();
    repo.write("README.md", "# demo\nmy unsaved edit\n");
    repo.write("notes.txt", "not tracked\n");
    let before = repo.state();
    let main_before = rev(&repo, "main");
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo new > new.txt"}"#]);

    let out = repo.swarm(&["run", path_str(&tasks)]);

    assert_exit(&out, 0);
    let run = run_id(&repo);
    assert_eq!(repo.state(), before, "the user's checkout changed");
    assert_eq!(rev(&repo, "main"), main_before, "the user's branch moved");
    assert!(
        stdout(&out).contains(&format!("git merge --ff-only swarm/{run}")),
        "{}",
        stdout(&out)
    );
    assert_eq!(show(&repo, &format!("swarm/{run}"), "new.txt"), "new\n");
}

#[test]
fn an_untracked_file_out_of_the_way_does_not_stop_landing_and_is_kept() {
    let repo = TestRepo::new();
    repo.write("scratch.txt", "mine\n");
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo new > new.txt"}"#]);

    let out = repo.swarm(&["run", path_str(&tasks)]);

    assert_exit(&out, 0);
    assert_eq!(repo.read("scratch.txt"), "mine\n");
    assert_eq!(repo.read("new.txt"), "new\n");
    assert_eq!(repo.git(&["status", "--porcelain"]), "?? scratch.txt\n");
}

#[test]
fn an_untracked_file_the_landing_would_overwrite_keeps_the_run_on_its_branch() {
    let repo = TestRepo::new();
    repo.write("new.txt", "mine\n");
    let before = repo.state();
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo theirs > new.txt"}"#]);

    let out = repo.swarm(&["run", path_str(&tasks)]);

    assert_exit(&out, 0);
    let run = run_id(&repo);
    assert_eq!(repo.state(), before, "the user's checkout changed");
    assert!(
        stdout(&out).contains(&format!("git merge --ff-only swarm/{run}")),
        "{}",
        stdout(&out)
    );
    assert_eq!(show(&repo, &format!("swarm/{run}"), "new.txt"), "theirs\n");
}

#[test]
fn land_branch_leaves_the_integration_branch_and_the_users_branch_alone() {
    let repo = TestRepo::new();
    let before = repo.state();
    let main_before = rev(&repo, "main");
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo new > new.txt"}"#]);

    let out = repo.swarm(&["run", path_str(&tasks), "--land", "branch"]);

    assert_exit(&out, 0);
    let run = run_id(&repo);
    assert_eq!(rev(&repo, "main"), main_before);
    assert_eq!(repo.state(), before);
    assert_eq!(show(&repo, &format!("swarm/{run}"), "new.txt"), "new\n");
    assert!(
        stdout(&out).contains(&format!("git merge --ff-only swarm/{run}")),
        "{}",
        stdout(&out)
    );
    assert_eq!(swarm_branches(&repo), vec![format!("swarm/{run}")]);
}
