//! The user's checkout and the readers' snapshot: runs leave every byte of the checkout alone,
//! and a reader that changes its snapshot fails without later readers seeing it.

use serde_json::json;

use super::{path_arg, sh, task_field, task_file, task_status};
use crate::{TestRepo, assert_exit, outside, status_json, stderr};

/// A success, a failure and a reader that writes into its snapshot leave every byte alone.
fn runs_leave_checkout_alone(repo: &TestRepo) {
    let before = repo.state();
    let tasks = task_file(
        repo,
        &[
            json!({"id": "good", "run": "cat README.md", "mode": "read"}),
            json!({"id": "bad", "run": "exit 1", "mode": "read"}),
            json!({"id": "scribbler", "run": "echo x >> README.md; echo new > new.txt", "mode": "read"}),
        ],
    );
    let out = repo.swarm(&["run", path_arg(&tasks), "--retries", "0"]);
    assert_exit(&out, 1);
    assert_eq!(repo.state(), before, "the user's checkout changed");
    let ok = task_file(
        repo,
        &[json!({"id": "fine", "run": "echo fine", "mode": "read"})],
    );
    let out = repo.swarm(&["run", path_arg(&ok)]);
    assert_exit(&out, 0);
    assert_eq!(repo.state(), before, "the user's checkout changed");
}

#[test]
fn runs_leave_a_clean_checkout_byte_identical() {
    let repo = TestRepo::new();
    runs_leave_checkout_alone(&repo);
}

#[test]
fn runs_leave_a_dirty_checkout_byte_identical() {
    let repo = TestRepo::new();
    repo.write("README.md", "# demo\nlocal edit, not committed\n");
    repo.write("scratch.txt", "untracked notes\n");
    repo.write("src/staged.rs", "// staged only\n");
    repo.git(&["add", "src/staged.rs"]);
    runs_leave_checkout_alone(&repo);
    assert_eq!(
        repo.read("README.md"),
        "# demo\nlocal edit, not committed\n"
    );
}

#[test]
fn reader_that_changes_its_snapshot_fails_and_later_readers_see_the_original() {
    let repo = TestRepo::new();
    let seen = outside(&repo, "seen.txt");
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "scribbler", "run": "echo x >> README.md; echo junk > junk.txt", "mode": "read"}),
            json!({"id": "slow", "run": crate::after_event(&repo, "task_failed", "scribbler"), "mode": "read"}),
            json!({"id": "later", "run": format!("cat README.md > {}; ls", sh(&seen)), "deps": ["slow"], "mode": "read"}),
        ],
    );
    // The check after a reader ran, for a run the kernel cannot confine (confined, the
    // scribbler's writes are refused as they happen).
    let out = repo.swarm(&[
        "run",
        path_arg(&tasks),
        "--retries",
        "0",
        "--confine",
        "off",
    ]);
    assert_exit(&out, 1);
    assert!(
        stderr(&out).contains("changed its snapshot"),
        "the failure is not loud:\n{}",
        stderr(&out)
    );
    let status = status_json(&repo);
    assert_eq!(task_status(&status, "scribbler"), "failed");
    let error = task_field(&status, "scribbler", "error")
        .as_str()
        .unwrap_or_default();
    assert!(error.contains("changed its snapshot"), "error: {error}");
    assert_eq!(task_status(&status, "later"), "done");
    assert_eq!(
        std::fs::read_to_string(&seen).unwrap(),
        "# demo\n",
        "the later reader saw the scribble"
    );
    let listing = task_field(&status, "later", "result").as_str().unwrap();
    assert!(
        !listing.contains("junk.txt"),
        "a new file survived in the snapshot: {listing}"
    );
}
