//! Task files and what a run makes of them: the reducer's report, every problem of a bad file
//! at once (and nothing run), the example plan, and where flags go on the command line.

use std::path::Path;

use serde_json::{Value, json};

use super::{path_arg, run_dirs, sh, swarm_branches, task_file};
use crate::{TestRepo, assert_exit, outside, stderr, stdout};

#[test]
fn a_reducer_assembles_its_deps_results_into_the_final_report() {
    let repo = TestRepo::new();
    let before = repo.state();
    let tasks = repo.tasks(&[
        r#"{"id":"a","run":"echo alpha","mode":"read"}"#,
        r#"{"id":"b","run":"echo beta","mode":"read"}"#,
        r#"{"id":"sum","run":"cat \"$SWARM_DEPS_DIR\"/a.txt \"$SWARM_DEPS_DIR\"/b.txt; echo \"$SWARM_DEPS_DIR\" > \"$WHERE\"; ls -ld \"$SWARM_DEPS_DIR/../..\" >> \"$WHERE\"","deps":["a","b"],"lane":"reducer","mode":"read"}"#,
    ]);
    let report = repo.cache.join("report.md");
    let where_file = crate::outside(&repo, "where");
    let out = repo
        .swarm_cmd()
        .env("WHERE", &where_file)
        .args([
            "run",
            tasks.to_str().unwrap(),
            "--final-out",
            report.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.starts_with("alpha\nbeta\n"), "{text}");
    // The deps' files lived in a private directory in memory (where the system has one),
    // and are gone with the run.
    let seen = std::fs::read_to_string(&where_file).unwrap();
    let dir = seen.lines().next().unwrap();
    if Path::new("/dev/shm").is_dir() {
        assert!(dir.starts_with("/dev/shm/swarm-"), "{seen}");
        assert!(
            seen.lines().nth(1).unwrap().starts_with("drwx------"),
            "{seen}"
        );
    }
    assert!(!Path::new(dir).exists(), "{dir} is left");
    assert!(text.contains("## Run summary"), "{text}");
    assert!(text.contains("```mermaid"), "{text}");
    assert!(stdout(&out).contains("3 tasks: 3 done"), "{}", stdout(&out));
    assert_eq!(repo.state(), before, "the user's checkout changed");
}

#[test]
fn bad_task_file_reports_every_problem_with_lines_and_runs_nothing() {
    let repo = TestRepo::new();
    let marker = outside(&repo, "marker");
    let touch = format!("touch {}", sh(&marker));
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "fine", "run": touch, "mode": "read"}),
            json!({"id": "a", "run": touch, "deps": ["b"], "mode": "read"}),
            json!({"id": "b", "run": touch, "deps": ["a"], "mode": "read"}),
            json!({"id": "fine", "run": touch, "mode": "read"}),
            json!({"id": "c", "run": touch, "deps": ["nowhere"], "mode": "read"}),
        ],
    );
    let before = repo.state();
    let out = repo.swarm(&["run", path_arg(&tasks)]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    let file = tasks.display().to_string();
    let line_with = |n: usize, needle: &str| {
        err.lines()
            .any(|l| l.contains(&format!("{file}:{n}:")) && l.contains(needle))
    };
    assert!(
        line_with(4, "duplicate id"),
        "duplicate not reported on line 4:\n{err}"
    );
    assert!(
        line_with(5, "unknown dependency \"nowhere\""),
        "unknown dep not reported on line 5:\n{err}"
    );
    assert!(
        line_with(2, "cycle") && (err.contains("a → b → a") || err.contains("b → a → b")),
        "cycle not reported with its path on line 2:\n{err}"
    );
    assert!(!marker.exists(), "a task ran");
    assert!(
        run_dirs(&repo).is_empty(),
        "a run directory was made: {:?}",
        run_dirs(&repo)
    );
    assert_eq!(swarm_branches(&repo), "", "a swarm branch was made");
    assert_eq!(repo.state(), before);
}

#[test]
fn bad_task_file_error_reads_as_one_block_with_every_problem() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[
        r#"{"id":"a","run":"true","deps":["b"],"mode":"read"}"#,
        r#"{"id":"b","run":"true","deps":["a"],"mode":"read"}"#,
        r#"{"id":"a","run":"true"}"#,
        r#"{"id":"c","prompt":"x","run":"y","deps":["zz"],"colour":"red"}"#,
        r#"{"id":"bad id!","run":"true","timeout":"soon"}"#,
        "not json",
    ]);
    let out = repo.swarm(&["run", path_arg(&tasks)]);
    assert_exit(&out, 2);
    let text = stderr(&out).replace(&tasks.display().to_string(), "[TASKS]");
    insta::assert_snapshot!(text);
    assert_eq!(swarm_branches(&repo), "", "a swarm branch was made");
}

#[test]
fn the_example_report_plan_runs_and_names_the_repository() {
    let repo = TestRepo::new();
    let plan = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/repo-report.jsonl");
    let report = outside(&repo, "report.md");

    let out = repo.swarm(&[
        "run",
        plan.to_str().unwrap(),
        "--final-out",
        report.to_str().unwrap(),
    ]);

    assert_exit(&out, 0);
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.starts_with("# Repository report: repo\n"), "{text}");
    for section in ["## Layout", "## Lines by file type", "## Run summary"] {
        assert!(text.contains(section), "{section}: {text}");
    }
    // Commands cost nothing: each row's cost is `-`, and so is the total.
    assert!(text.contains("; cost of the tasks: -.  \n"), "{text}");
    assert!(!text.contains("$0.0000"), "{text}");
}

#[test]
fn global_flags_work_before_the_subcommand_and_run_options_after_it() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[r#"{"id":"a","run":"echo hi","mode":"read"}"#]);
    let out = repo.swarm(&["-q", "--json", "run", path_arg(&tasks), "-j", "2"]);
    assert_exit(&out, 0);
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
    let summary: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(summary["exit_code"], 0);

    let misplaced = repo.swarm(&["-j", "2", "run", path_arg(&tasks)]);
    assert_exit(&misplaced, 2);
    assert!(stderr(&misplaced).contains("after it"));
}
