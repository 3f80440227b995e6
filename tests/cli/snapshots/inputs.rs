//! Usage errors of what the command line names or where it runs: task files and goals files
//! that are missing or hold nothing to run, a directory that is not a git checkout, a checkout
//! with an operation open, a repository another run holds, and swarm started by its own task.
//! The task file with bad lines is `engine::task_files`'s.

use std::io::Write as _;

use serde_json::json;

use super::{CommandOutput, assert_output, swarm, swarm_with};
use crate::{TestRepo, outside};

/// `name` beside the repository holding `text`, as an argument.
fn file(repo: &TestRepo, name: &str, text: &str) -> String {
    let path = outside(repo, name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

fn check(cases: &[(&str, CommandOutput)], code: i32) {
    for (name, out) in cases {
        assert_eq!(out.code(), Some(code), "{name}: {out}");
        assert_output!(*name, out);
    }
}

#[test]
fn task_files_and_goals_files_with_nothing_to_run_are_refused() {
    let repo = TestRepo::new();
    let missing = outside(&repo, "missing.jsonl");
    let empty = file(&repo, "empty.jsonl", "\n\n");
    let array = file(&repo, "array.jsonl", "[{\"id\":\"a\",\"run\":\"true\"}]\n");
    let marker = outside(&repo, "ran");
    let touch = format!("touch {}", marker.display());
    let tasks = [
        json!({"id": "a", "run": touch}),
        json!({"id": "b", "run": touch, "deps": ["a"]}),
    ];
    let pretty_array = file(
        &repo,
        "tasks.json",
        &serde_json::to_string_pretty(&tasks).unwrap(),
    );
    let pretty_tasks = file(
        &repo,
        "pretty.jsonl",
        &tasks
            .iter()
            .map(|t| serde_json::to_string_pretty(t).unwrap() + "\n")
            .collect::<String>(),
    );
    let misspelt = file(
        &repo,
        "misspelt.jsonl",
        &format!(
            "{}\n{}\n{}\n",
            json!({"id": "a", "run": touch}),
            json!({"id": "b", "run": touch, "Mode": "read"}),
            json!({"id": "c", "run": touch, "dpes": ["a"]}),
        ),
    );
    let agent = file(
        &repo,
        "agent.jsonl",
        "{\"id\":\"p\",\"prompt\":\"Review it.\",\"agent\":\"nobody\"}\n",
    );
    let no_goals = file(&repo, "goals.txt", "# nothing yet\n\n");
    let cases = [
        (
            "task_file_missing",
            swarm(&repo, &["run", missing.to_str().unwrap()]),
        ),
        ("task_file_empty", swarm(&repo, &["run", &empty])),
        ("task_file_with_an_array", swarm(&repo, &["run", &array])),
        (
            "task_file_with_a_pretty_printed_array",
            swarm(&repo, &["run", &pretty_array]),
        ),
        (
            "task_file_with_pretty_printed_tasks",
            swarm(&repo, &["run", &pretty_tasks]),
        ),
        (
            "task_file_with_misspelt_fields",
            swarm(&repo, &["run", &misspelt]),
        ),
        (
            "graph_of_a_pretty_printed_array",
            swarm(&repo, &["graph", &pretty_array]),
        ),
        (
            "task_file_naming_an_unknown_agent",
            swarm(&repo, &["run", &agent]),
        ),
        (
            "graph_of_a_missing_task_file",
            swarm(&repo, &["graph", "missing.jsonl"]),
        ),
        (
            "goals_file_missing",
            swarm(&repo, &["--goals-file", "missing.txt"]),
        ),
        (
            "goals_file_without_goals",
            swarm(&repo, &["--goals-file", &no_goals]),
        ),
        (
            "queue_add_an_empty_goal",
            swarm(&repo, &["queue", "add", " "]),
        ),
        (
            "queue_rm_an_unknown_goal",
            swarm(&repo, &["queue", "rm", "7"]),
        ),
    ];
    check(&cases, 2);
    assert!(!marker.exists(), "a task ran");
}

#[test]
fn a_directory_that_is_not_a_git_checkout_is_refused() {
    let repo = TestRepo::new();
    let plain = outside(&repo, "plain");
    std::fs::create_dir_all(&plain).unwrap();
    let plain = plain.to_str().unwrap();
    let gone = outside(&repo, "gone");
    let t = repo.tasks(&[r#"{"id":"a","run":"echo a","mode":"read"}"#]);
    let cases = [
        (
            "status_outside_a_checkout",
            swarm(&repo, &["-C", plain, "status"]),
        ),
        (
            "run_outside_a_checkout",
            swarm(&repo, &["-C", plain, "run", t.to_str().unwrap()]),
        ),
        (
            "directory_missing",
            swarm(&repo, &["-C", gone.to_str().unwrap(), "status"]),
        ),
    ];
    check(&cases, 2);
}

#[test]
fn a_repository_with_no_commit_yet_is_refused_with_the_commit_to_make() {
    let repo = TestRepo::new();
    let empty = outside(&repo, "empty");
    std::fs::create_dir_all(&empty).unwrap();
    let init = repo
        .command("git")
        .args(["init", "-q", "-b", "main"])
        .current_dir(&empty)
        .status()
        .unwrap();
    assert!(init.success());
    let t = repo.tasks(&[r#"{"id":"a","run":"echo a","mode":"read"}"#]);
    let empty = empty.to_str().unwrap();
    let cases = [(
        "run_in_a_repository_with_no_commit",
        swarm(&repo, &["-C", empty, "run", t.to_str().unwrap()]),
    )];
    check(&cases, 2);
    // The commit the hint gives makes the run possible.
    let made = repo
        .command("git")
        .args(["commit", "-q", "--allow-empty", "-m", "init"])
        .current_dir(empty)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .status()
        .unwrap();
    assert!(made.success());
    let out = repo
        .swarm_cmd()
        .args(["-C", empty, "run", t.to_str().unwrap()])
        .output()
        .unwrap();
    crate::assert_exit(&out, 0);
    // A count of one is singular.
    let said = crate::stdout(&out);
    assert!(said.contains(": 1 task: 1 done"), "{said}");
}

#[test]
fn a_run_that_would_land_during_an_open_bisect_is_refused() {
    let repo = TestRepo::new();
    repo.git(&["bisect", "start"]);
    let t = repo.tasks(&[r#"{"id":"w","run":"echo w > w.txt"}"#]);
    let out = swarm(&repo, &["run", t.to_str().unwrap()]);
    check(&[("open_bisect", out)], 2);
}

#[test]
fn a_repository_another_run_holds_is_refused_with_the_holder_named() {
    let repo = TestRepo::new();
    std::fs::create_dir_all(repo.swarm_dir()).unwrap();
    let mut lock = std::fs::File::create(repo.swarm_dir().join("lock")).unwrap();
    writeln!(lock, "pid 4242, run 20260101-000000-abcd").unwrap();
    lock.lock().unwrap();
    let t = repo.tasks(&[r#"{"id":"a","run":"echo a","mode":"read"}"#]);
    let out = swarm(&repo, &["run", t.to_str().unwrap()]);
    check(&[("repository_held_by_another_run", out)], 4);
}

#[test]
fn swarm_started_by_a_swarm_task_does_nothing() {
    let repo = TestRepo::new();
    let t = repo.tasks(&[r#"{"id":"a","run":"echo a","mode":"read"}"#]);
    let out = swarm_with(
        &repo,
        &[("SWARM_ACTIVE", "1")],
        &["run", t.to_str().unwrap()],
    );
    check(&[("nested_in_a_swarm_task", out)], 0);
    assert!(
        !repo.swarm_dir().join("runs").exists(),
        "a run was recorded"
    );
}
