//! Writers that fail: their own check, the global check, or writing into the user's checkout;
//! none of them is merged.

use super::{path_str, swarm_branches, tasks_of};
use crate::{TestRepo, assert_exit, rev, run_id, stdout};

#[test]
fn a_writer_whose_check_fails_is_retried_then_failed_and_not_merged() {
    let repo = TestRepo::new();
    let main_before = rev(&repo, "main");
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo x > x.txt","check":"test -f nope"}"#]);

    let out = repo.swarm(&["run", path_str(&tasks), "--retries", "1"]);

    assert_exit(&out, 1);
    let tasks = tasks_of(&repo);
    assert_eq!(tasks["w"]["status"], "failed");
    assert_eq!(tasks["w"]["attempts"], 2);
    assert!(
        tasks["w"]["error"]
            .as_str()
            .unwrap()
            .contains("test -f nope"),
        "{:?}",
        tasks["w"]
    );
    assert_eq!(rev(&repo, "main"), main_before);
    assert!(!repo.root.join("x.txt").exists());
    let run = run_id(&repo);
    assert!(
        !swarm_branches(&repo).contains(&format!("swarm/{run}")),
        "an empty integration branch was left"
    );
}

#[test]
fn a_writer_failing_the_global_check_is_not_merged() {
    let repo = TestRepo::new();
    let main_before = rev(&repo, "main");
    let tasks = repo.tasks(&[
        r#"{"id":"w","run":"echo x > x.txt"}"#,
        r#"{"id":"after","run":"echo y > y.txt","deps":["w"]}"#,
    ]);

    let out = repo.swarm(&[
        "run",
        path_str(&tasks),
        "--check",
        "false",
        "--retries",
        "0",
    ]);

    assert_exit(&out, 1);
    let tasks = tasks_of(&repo);
    assert_eq!(tasks["w"]["status"], "failed");
    assert_eq!(tasks["w"]["attempts"], 1);
    assert_eq!(tasks["after"]["status"], "skipped");
    assert_eq!(rev(&repo, "main"), main_before);
}

#[test]
fn a_writer_that_writes_into_the_users_checkout_stops_the_run_and_is_not_merged() {
    let repo = TestRepo::new();
    let main_before = rev(&repo, "main");
    let stolen = repo.root.join("stolen.txt");
    let line = serde_json::json!({
        "id": "w",
        "run": format!("echo own > own.txt; echo x > '{}'", stolen.display()),
    })
    .to_string();
    let tasks = repo.tasks(&[&line]);

    // Confined (the default where the kernel can), the write is refused as it is made: the
    // script fails on it, and your checkout has nothing of it.
    let out = repo.swarm(&["run", path_str(&tasks), "--retries", "0"]);

    assert_exit(&out, 1);
    assert!(!stolen.exists());
    assert!(
        crate::stderr(&out).contains("stolen.txt: Permission denied"),
        "{}",
        crate::stderr(&out)
    );
    assert_eq!(rev(&repo, "main"), main_before);

    // Where the kernel cannot confine, the change is found after the attempt and stops the run.
    let out = repo.swarm(&[
        "run",
        path_str(&tasks),
        "--retries",
        "0",
        "--confine",
        "off",
    ]);

    assert_exit(&out, 75);
    let w = &tasks_of(&repo)["w"];
    assert_eq!(w["status"], "interrupted");
    assert_eq!(w["failures"], 0);
    let said = stdout(&out);
    assert!(
        said.contains("Stopped: your checkout")
            && said.contains("changed while an attempt ran (stolen.txt)"),
        "{said}"
    );
    assert_eq!(rev(&repo, "main"), main_before);
    let everywhere = repo.git(&["log", "main", "--format=%H", "--", "own.txt", "stolen.txt"]);
    assert_eq!(everywhere, "", "the writer's work reached main");
    // swarm never deletes anything in the user's checkout, not even what a stray agent wrote.
    assert_eq!(std::fs::read_to_string(&stolen).unwrap(), "x\n");
}

#[test]
fn what_a_refused_attempt_left_is_named_by_the_run_and_the_report_even_after_a_retry() {
    let repo = TestRepo::new();
    let report = crate::outside(&repo, "report.md");
    // Attempt 1 moves its HEAD off its branch with a commit: refused, kept on `…@1`; attempt
    // 2 fails on its own.
    let tasks = repo.tasks(&[&serde_json::json!({
        "id": "w",
        "run": "if [ \"$SWARM_ATTEMPT\" = 1 ]; then git checkout -q -b other && echo x > x.txt && git add x.txt && git -c user.name=A -c user.email=a@example.com commit -qm x; else exit 3; fi",
    })
    .to_string()]);

    let out = repo.swarm(&[
        "--json",
        "run",
        tasks.to_str().unwrap(),
        "--final-out",
        report.to_str().unwrap(),
    ]);

    assert_exit(&out, 1);
    let run = crate::run_id(&repo);
    let kept = format!("swarm/{run}-w@1");
    assert_eq!(repo.git(&["show", &format!("{kept}:x.txt")]), "x\n");
    let summary: serde_json::Value = serde_json::from_str(&crate::stdout(&out)).unwrap();
    assert_eq!(
        summary["tasks"][0]["kept_branches"],
        serde_json::json!([kept])
    );
    let text = std::fs::read_to_string(&report).unwrap();
    let attention = text.split("## Needs attention").nth(1).unwrap();
    assert!(
        attention.contains(&format!("what an attempt left is kept on branch `{kept}`")),
        "{text}"
    );
    let plain = repo.swarm(&["run", tasks.to_str().unwrap()]);
    let run = crate::run_id(&repo);
    assert!(
        crate::stdout(&plain).contains(&format!(
            "kept: what an attempt of w left is on branch swarm/{run}-w@1"
        )),
        "{}",
        crate::stdout(&plain)
    );
}
