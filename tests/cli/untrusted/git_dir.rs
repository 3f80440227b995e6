//! The user's git directory is out of a writer's reach: by path, through a checkout's git dir,
//! or through its config pointing the worktree at the user's.

use super::{Main, run_scripts, run_tasks, task, untouchable};
use crate::{TestRepo, assert_exit, rev};

#[test]
fn a_writer_that_reaches_into_the_users_git_directory_by_path_fails_and_is_not_merged() {
    let repo = TestRepo::new();
    let base = rev(&repo, "main");
    let user = repo.root.display().to_string();
    let scripts = [
        format!("git -C '{user}' config user.name Mallory && echo a > a.txt"),
        format!("printf '#!/bin/sh\\n' > '{user}/.git/hooks/pre-commit' && echo b > b.txt"),
        format!("git -C '{user}' tag planted && echo c > c.txt"),
    ];
    let scripts: Vec<&str> = scripts.iter().map(String::as_str).collect();

    let out = run_scripts(&repo, &scripts, &["--retries", "0", "-j", "1"]);

    assert_exit(&out, 1);
    assert_eq!(rev(&repo, "main"), base);
    for (n, changed) in [
        ".git/config",
        ".git/hooks/pre-commit",
        ".git/refs/tags/planted",
    ]
    .iter()
    .enumerate()
    {
        let t = task(&repo, &format!("t{n}"));
        assert_eq!(t["status"], "failed");
        let error = t["error"].as_str().unwrap();
        assert!(error.contains("changed your checkout"), "{error}");
        assert!(error.contains(changed), "{error}");
    }
    for f in ["a.txt", "b.txt", "c.txt"] {
        assert!(!repo.root.join(f).exists(), "{f} was merged");
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
