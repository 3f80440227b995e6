//! The user's git directory is out of a writer's reach: by path, through a checkout's git dir,
//! or through its config pointing the worktree at the user's.

use super::{Main, run_scripts, run_tasks, task, untouchable};
use crate::{TestRepo, assert_exit, rev};

#[test]
fn a_writer_that_reaches_into_the_users_git_directory_by_path_stops_the_run_and_is_not_merged() {
    for (script, changed) in [
        ("git -C '{user}' config user.name Mallory", ".git/config"),
        (
            "printf '#!/bin/sh\\n' > '{user}/.git/hooks/pre-commit'",
            ".git/hooks/pre-commit",
        ),
        ("git -C '{user}' tag planted", ".git/refs/tags/planted"),
    ] {
        let repo = TestRepo::new();
        let base = rev(&repo, "main");
        let script = format!(
            "{} && echo a > a.txt",
            script.replace("{user}", &repo.root.display().to_string())
        );

        let before = untouchable(&repo, Main::Same);

        // Confined, the kernel refuses it: the script fails, and nothing of yours changed.
        let out = run_scripts(&repo, &[&script], &["--retries", "0"]);

        assert_exit(&out, 1);
        assert_eq!(untouchable(&repo, Main::Same), before, "{script}");
        let t = task(&repo, "t0");
        assert_eq!(t["status"], "failed", "{script}");
        assert!(!repo.root.join("a.txt").exists(), "{script}: merged");

        // Where the kernel cannot confine, the change is found and stops the run.
        let out = run_scripts(&repo, &[&script], &["--retries", "0", "--confine", "off"]);

        assert_exit(&out, 75);
        assert_eq!(rev(&repo, "main"), base);
        let t = task(&repo, "t0");
        assert_eq!(t["status"], "interrupted", "{script}");
        assert_eq!(t["failures"], 0, "{script}");
        let said = crate::stdout(&out);
        assert!(said.contains("Stopped: your checkout"), "{said}");
        assert!(said.contains(changed), "{said}");
        assert!(!repo.root.join("a.txt").exists(), "{script}: merged");
    }
}

#[test]
fn a_checkout_whose_git_dir_an_agent_points_at_the_users_is_refused() {
    let repo = TestRepo::new();
    let before = untouchable(&repo, Main::Same);
    let base = rev(&repo, "main");
    let user_git = repo.root.join(".git");
    let writer = format!(
        "rm -rf .git && ln -s '{}' .git && echo x > x.txt",
        user_git.display()
    );
    let reader = format!(
        "rm -rf .git && printf 'gitdir: {}\\n' > .git",
        user_git.display()
    );
    let writer = serde_json::json!({ "id": "w", "run": writer }).to_string();
    let reader = serde_json::json!({ "id": "r", "run": reader, "mode": "read" }).to_string();

    let out = run_tasks(&repo, &[&writer, &reader], &["--retries", "0"]);

    assert_exit(&out, 1);
    assert_eq!(rev(&repo, "main"), base);
    assert!(!repo.root.join("x.txt").exists());
    let error = task(&repo, "w")["error"].as_str().unwrap().to_owned();
    assert!(
        error.contains(".git is no longer the directory swarm made"),
        "{error}"
    );
    assert_eq!(task(&repo, "r")["status"], "failed");
    assert_eq!(untouchable(&repo, Main::Same), before);
}

#[test]
fn a_checkout_whose_config_points_its_worktree_at_the_users_commits_only_its_own_files() {
    let repo = TestRepo::new();
    repo.write("mine.txt", "the user's own, uncommitted\n");
    let cmd = format!(
        "git config core.worktree '{}' && echo x > x.txt",
        repo.root.display()
    );
    let line = serde_json::json!({ "id": "w", "run": cmd }).to_string();

    let out = run_tasks(&repo, &[&line], &[]);

    assert_exit(&out, 0);
    assert_eq!(repo.read("x.txt"), "x\n");
    assert_eq!(
        repo.git(&["ls-files", "mine.txt"]),
        "",
        "the user's file was committed"
    );
    assert_eq!(repo.read("mine.txt"), "the user's own, uncommitted\n");
}
