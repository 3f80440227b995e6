//! A failed attempt as its user sees it: the failure line with the end of its stderr under
//! it, the retry on a line of its own, and the report's "Needs attention" before the summary.

use super::{assert_output, swarm};
use crate::{TestRepo, outside};

#[test]
fn a_retried_failure_shows_its_stderr_and_its_retry_on_lines_of_their_own() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[
        r#"{"id": "boom", "run": "echo 'first <line>' >&2; echo 'last line' >&2; exit 3", "title": "Fail | loudly", "mode": "read"}"#,
    ]);
    let report = outside(&repo, "report.md");

    let out = swarm(
        &repo,
        &[
            "run",
            tasks.to_str().unwrap(),
            "--retries",
            "1",
            "--final-out",
            report.to_str().unwrap(),
        ],
    );

    assert_eq!(out.code(), Some(1), "{out}");
    assert_output!("retried_failure_run", out);
    assert_output!(
        "retried_failure_report",
        std::fs::read_to_string(&report).unwrap()
    );
}
