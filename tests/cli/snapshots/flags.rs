//! Usage errors of the command line: unknown flags and subcommands, missing arguments, and a
//! bad value for each flag whose value is checked, by clap or by swarm. Each exits 2 and runs
//! nothing.

use std::path::Path;

use super::{CommandOutput, assert_output, swarm};
use crate::{TestRepo, outside};

/// A task file that would run if nothing were wrong with the command line.
fn good_tasks(repo: &TestRepo) -> String {
    path(&repo.tasks(&[r#"{"id":"a","run":"echo a","mode":"read"}"#]))
}

/// A task file with a prompt task, which needs an agent.
fn prompt_tasks(repo: &TestRepo) -> String {
    let file = outside(repo, "prompt.jsonl");
    std::fs::write(&file, "{\"id\":\"p\",\"prompt\":\"Review the README.\"}\n").unwrap();
    path(&file)
}

fn path(p: &Path) -> String {
    p.to_str().unwrap().to_owned()
}

/// Each case's snapshot; every case exits 2, and none starts a run.
fn check(repo: &TestRepo, cases: &[(&str, CommandOutput)]) {
    for (name, out) in cases {
        assert_eq!(out.code(), Some(2), "{name}: {out}");
        assert_output!(*name, out);
    }
    assert!(
        !repo.swarm_dir().join("runs").exists(),
        "a run was recorded"
    );
}

#[test]
fn unknown_flags_subcommands_and_missing_arguments_are_usage_errors() {
    let repo = TestRepo::new();
    let t = good_tasks(&repo);
    let t = t.as_str();
    let cases = [
        ("unknown_flag", swarm(&repo, &["--frobnicate"])),
        ("unknown_subcommand", swarm(&repo, &["frob"])),
        (
            "unknown_flag_of_a_subcommand",
            swarm(&repo, &["run", t, "--nope"]),
        ),
        ("run_without_a_task_file", swarm(&repo, &["run"])),
        ("goal_without_its_text", swarm(&repo, &["--goal"])),
        ("plan_only_without_a_goal", swarm(&repo, &["--plan-only"])),
        (
            "goal_after_a_subcommand",
            swarm(&repo, &["run", t, "--goal", "x"]),
        ),
        (
            "run_options_before_the_subcommand",
            swarm(&repo, &["-j", "2", "run", t]),
        ),
        ("queue_without_an_action", swarm(&repo, &["queue"])),
        ("queue_add_without_a_goal", swarm(&repo, &["queue", "add"])),
        (
            "queue_rm_without_a_number",
            swarm(&repo, &["queue", "rm", "two"]),
        ),
        (
            "completions_without_a_shell",
            swarm(&repo, &["completions"]),
        ),
    ];
    check(&repo, &cases);
}

#[test]
fn a_bad_value_of_a_flag_clap_checks_is_a_usage_error() {
    let repo = TestRepo::new();
    let t = good_tasks(&repo);
    let run = |flag: &str, value: &str| swarm(&repo, &["run", &t, flag, value]);
    let cases = [
        ("jobs_zero", run("-j", "0")),
        ("jobs_over_the_limit", run("--jobs", "1025")),
        ("jobs_not_a_number", run("-j", "x")),
        ("max_writers_zero", run("--max-writers", "0")),
        ("land_unknown", run("--land", "sometimes")),
        ("budget_tokens_not_a_number", run("--budget-tokens", "lots")),
        ("budget_tokens_negative", run("--budget-tokens", "-5")),
        ("max_turns_not_a_number", run("--max-turns", "many")),
        ("max_task_tokens_negative", run("--max-task-tokens", "-1")),
        ("retries_not_a_number", run("--retries", "twice")),
        (
            "logs_tail_not_a_number",
            swarm(&repo, &["logs", "--tail", "x"]),
        ),
        (
            "graph_format_unknown",
            swarm(&repo, &["graph", "--format", "svg"]),
        ),
        (
            "completions_unknown_shell",
            swarm(&repo, &["completions", "nosh"]),
        ),
    ];
    check(&repo, &cases);
}

#[test]
fn a_bad_value_of_a_flag_swarm_checks_is_refused_before_anything_runs() {
    let repo = TestRepo::new();
    let t = good_tasks(&repo);
    let p = prompt_tasks(&repo);
    let run = |flag: &str, value: &str| swarm(&repo, &["run", &t, flag, value]);
    let nowhere = outside(&repo, "nowhere/report.md");
    let cases = [
        (
            "task_timeout_too_long",
            run("--task-timeout", "99999999999999999999h"),
        ),
        ("task_timeout_not_a_duration", run("--task-timeout", "soon")),
        ("task_timeout_zero", run("--task-timeout", "0")),
        ("stall_timeout_zero", run("--stall-timeout", "0s")),
        (
            "request_timeout_not_a_duration",
            run("--request-timeout", "soon"),
        ),
        (
            "endpoint_wait_not_a_duration",
            run("--endpoint-wait", "soon"),
        ),
        (
            "agent_unknown",
            swarm(&repo, &["run", &p, "--agent", "nope"]),
        ),
        (
            "agent_openai_without_an_endpoint",
            swarm(&repo, &["run", &p, "--agent", "openai"]),
        ),
        ("prompt_task_without_an_agent", swarm(&repo, &["run", &p])),
        ("base_unknown", run("--base", "nope")),
        (
            "final_out_in_a_missing_directory",
            run("--final-out", &path(&nowhere)),
        ),
        (
            "final_out_in_the_git_dir",
            run("--final-out", ".git/report.md"),
        ),
        ("final_out_a_directory", run("--final-out", "src")),
        ("final_out_the_task_file", run("--final-out", &t)),
        ("final_out_dir_a_file", run("--final-out-dir", "README.md")),
    ];
    check(&repo, &cases);
}

#[test]
fn a_final_out_with_uncommitted_changes_is_refused() {
    let repo = TestRepo::new();
    let t = good_tasks(&repo);
    repo.write("README.md", "# demo\nmy uncommitted edit\n");
    let out = swarm(&repo, &["run", &t, "--final-out", "README.md"]);
    check(&repo, &[("final_out_tracked_with_changes", out)]);
}

#[test]
fn a_worktree_dir_inside_the_checkout_is_refused() {
    let repo = TestRepo::new();
    let t = good_tasks(&repo);
    let before = repo.state();
    let out = swarm(&repo, &["run", &t, "--worktree-dir", "checkouts"]);
    check(&repo, &[("worktree_dir_inside_the_checkout", out)]);
    // Refused before anything was made.
    assert!(!repo.root.join("checkouts").exists());
    assert_eq!(repo.state(), before);
}

#[test]
fn goals_that_cannot_be_planned_are_refused() {
    let repo = TestRepo::new();
    let cases = [
        ("goal_empty", swarm(&repo, &["--goal", " "])),
        (
            "second_goal_empty",
            swarm(&repo, &["--goal", "a", "--goal", ""]),
        ),
        (
            "goal_without_a_model",
            swarm(&repo, &["--goal", "Add tests"]),
        ),
        (
            "goal_with_an_exec_agent_and_no_model",
            swarm(&repo, &["--goal", "Add tests", "--agent", "exec:cat"]),
        ),
        (
            "goals_without_a_model",
            swarm(&repo, &["--goal", "Add tests", "--goal", "Fix docs"]),
        ),
        (
            "plan_out_with_two_goals",
            swarm(
                &repo,
                &["--goal", "a", "--goal", "b", "--plan-out", "plan.jsonl"],
            ),
        ),
    ];
    check(&repo, &cases);
}
