//! Faults of the environment and of swarm itself: whatever happens, a run ends in one of the
//! documented exit codes, with nothing lost.

use std::process::Stdio;

use crate::{TestRepo, assert_exit, stderr};

/// Runs `args` with a stdout whose reader has already gone away.
fn with_stdout_closed(repo: &TestRepo, args: &[&str]) -> std::process::Output {
    let mut child = repo
        .swarm_cmd()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

#[test]
fn a_reader_of_stdout_that_went_away_ends_a_command_quietly() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[
        r#"{"id":"a","run":"echo a"}"#,
        r#"{"id":"b","run":"echo b","deps":["a"]}"#,
    ]);
    // The run's summary goes nowhere; the run still ends as it ended.
    let run = with_stdout_closed(&repo, &["run", tasks.to_str().unwrap()]);
    assert_exit(&run, 0);
    assert!(!stderr(&run).contains("error:"), "{}", stderr(&run));
    for args in [&["logs"][..], &["status"], &["status", "--json"]] {
        let out = with_stdout_closed(&repo, args);
        assert_exit(&out, 0);
        assert_eq!(stderr(&out), "", "swarm {args:?}");
    }
}

#[test]
fn a_failed_run_whose_summary_reader_went_away_still_exits_1() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[r#"{"id":"a","run":"exit 3"}"#]);
    let run = with_stdout_closed(&repo, &["run", "--retries", "0", tasks.to_str().unwrap()]);
    assert_exit(&run, 1);
    assert!(!stderr(&run).contains("error:"), "{}", stderr(&run));
}
