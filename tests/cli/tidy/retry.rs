//! `swarm retry TASK`: a parked or failed writer runs again on the current tip. In a run that
//! has not finished, the run goes on with it (and what was skipped because of it); after a run
//! ended, a new run of the one task starts from the user's HEAD and lands.

use serde_json::json;

use super::{conflicting, interrupted_with_a_parked_writer, lib, runs_json, sh, swarm_branches};
use crate::{TestRepo, assert_exit, outside, rev, run_id, status_json, stderr, tasks_with_status};

#[test]
fn a_parked_writer_retried_after_its_run_ended_lands_on_the_users_branch_and_its_branch_stays() {
    let repo = TestRepo::new();
    let go = outside(&repo, "go");
    let tasks = conflicting(&repo, &go, &[]);
    let out = repo.swarm(&["run", tasks.to_str().unwrap(), "-j", "2"]);
    assert_exit(&out, 3);
    let old = run_id(&repo);
    let parked = format!("swarm/{old}-b");
    let parked_commit = rev(&repo, &parked);
    assert_eq!(repo.read("src/lib.rs"), lib(2), "a landed");
    // The user goes on: their branch moves past what the run landed.
    repo.write("NOTES.md", "mine\n");
    repo.commit_all("notes of the user's");
    let head = rev(&repo, "HEAD");
    // On the new tip, b's command does its work at once.
    std::fs::write(&go, "").unwrap();

    let out = repo.swarm(&["retry", "b"]);

    assert_exit(&out, 0);
    // b's work, on top of a's and the user's, is on the user's branch and in the checkout.
    assert_eq!(repo.read("src/lib.rs"), lib(3));
    assert_eq!(repo.read("NOTES.md"), "mine\n");
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    assert_eq!(
        repo.git(&["rev-parse", "HEAD^1"]).trim(),
        head,
        "merged on top of the user's HEAD"
    );
    // Only the task itself ran: its dependent stays as the old run left it.
    assert!(!repo.root.join("after.txt").exists());
    // The old parked branch is as it was.
    assert_eq!(rev(&repo, &parked), parked_commit);
    let runs = runs_json(&repo);
    assert_eq!(runs.len(), 2, "{runs:#?}");
    assert_eq!(runs[0]["source"], format!("retry of b from run {old}"));
    assert_eq!(runs[0]["status"], "finished");
    assert_eq!(runs[0]["tasks"], 1);
    assert_eq!(runs[1]["id"], old.as_str());
    assert_eq!(runs[1]["exit_code"], 3);
    let new = runs[0]["id"].as_str().unwrap();
    assert_eq!(status_json(&repo)["run"]["base_commit"], head.as_str());
    assert!(
        !swarm_branches(&repo).iter().any(|(b, _)| b.contains(new)),
        "the new run's branches went with its landing: {:?}",
        swarm_branches(&repo)
    );
}

#[test]
fn a_failed_writer_retried_after_its_run_ended_runs_again_and_lands() {
    let repo = TestRepo::new();
    let fixed = outside(&repo, "fixed");
    let tasks = repo.tasks(&[&json!({
        "id": "w",
        "run": format!("test -e {} && echo w > w.txt", sh(&fixed)),
    })
    .to_string()]);
    let out = repo.swarm(&["run", tasks.to_str().unwrap(), "--retries", "0"]);
    assert_exit(&out, 1);
    std::fs::write(&fixed, "").unwrap();

    let out = repo.swarm(&["retry", "w"]);

    assert_exit(&out, 0);
    assert_eq!(repo.read("w.txt"), "w\n");
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

#[test]
fn a_parked_writer_retried_in_an_interrupted_run_goes_on_its_integration_tip_and_the_run_ends() {
    let repo = TestRepo::new();
    let run = interrupted_with_a_parked_writer(&repo);
    let parked_commit = rev(&repo, &format!("swarm/{run}-b"));
    let base = rev(&repo, "HEAD");

    let out = repo.swarm(&["retry", "b", "--json"]);

    assert_exit(&out, 0);
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["run"], run.as_str(), "the same run went on");
    let status = status_json(&repo);
    assert_eq!(
        tasks_with_status(&status, "done"),
        ["a", "b", "after", "slow"],
        "{status:#}"
    );
    // b ran again on the integration tip (a's work), so both landed, and its dependent ran.
    assert_eq!(repo.read("src/lib.rs"), super::lib(3));
    assert_eq!(repo.read("after.txt"), "after\n");
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    let log = repo.git(&["log", "--format=%s", &format!("{base}..HEAD")]);
    assert!(log.contains("Merge swarm task a"), "{log}");
    assert!(log.contains("Merge swarm task b"), "{log}");
    // Its parked work is kept under the number of the attempt that made it.
    assert_eq!(rev(&repo, &format!("swarm/{run}-b@1")), parked_commit);
    let b = status["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "b")
        .unwrap();
    assert_eq!(b["attempts"], 2, "{b:#}");
    assert!(
        stderr(&out).contains(&format!("swarm/{run}-b@1")),
        "{}",
        stderr(&out)
    );
    assert_eq!(runs_json(&repo)[0]["reason"], "done");
}
