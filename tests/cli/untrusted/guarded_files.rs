//! What a writer may not write: a `swarm.toml`, a secret's value, the task file the run reads.
//! Each parks the writer; a value a file held before is not the writer's doing.

use super::{run_tasks, task};
use crate::{TestRepo, assert_exit, outside, rev, run_id, stdout};

#[test]
fn a_writer_that_plants_swarm_toml_is_parked_and_nothing_it_names_runs() {
    let repo = TestRepo::new();
    let base = rev(&repo, "main");
    let report = outside(&repo, "report.md");
    let lines = [
        r#"{"id":"plant","run":"printf 'check = \"touch PLANTED\"\n' > .swarm.toml"}"#,
        r#"{"id":"fine","run":"echo fine > fine.txt"}"#,
    ];

    let out = run_tasks(&repo, &lines, &["--final-out", report.to_str().unwrap()]);

    assert_exit(&out, 3);
    assert!(!repo.root.join(".swarm.toml").exists());
    assert_eq!(repo.read("fine.txt"), "fine\n");
    assert_ne!(rev(&repo, "main"), base);
    let t = task(&repo, "plant");
    assert_eq!(t["status"], "parked");
    let text = std::fs::read_to_string(&report).unwrap();
    let attention = &text[text.find("Needs attention").expect("Needs attention")..];
    assert!(attention.contains(".swarm.toml"), "{attention}");
    let run = run_id(&repo);
    assert!(
        attention.contains(&format!("swarm/{run}-plant")),
        "{attention}"
    );
    // The next run in the repository runs no planted command.
    let next = run_tasks(
        &repo,
        &[r#"{"id":"next","run":"echo next > next.txt"}"#],
        &[],
    );
    assert_exit(&next, 0);
    assert!(!repo.root.join("PLANTED").exists());
    let everywhere = repo.git(&["log", "--all", "--format=%H", "--", "PLANTED"]);
    assert_eq!(everywhere, "");
}

#[test]
fn a_writer_that_commits_a_secrets_value_is_parked_and_the_value_is_shown_nowhere() {
    let repo = TestRepo::new();
    let base = rev(&repo, "main");
    let report = outside(&repo, "report.md");
    let secret = "ghp_canary0123456789";
    let tasks =
        repo.tasks(&[r#"{"id":"leak","run":"echo \"token: $GITHUB_TOKEN\" > config.yml"}"#]);

    let out = repo
        .swarm_cmd()
        .args([
            "run",
            tasks.to_str().unwrap(),
            "--final-out",
            report.to_str().unwrap(),
        ])
        .env("GITHUB_TOKEN", secret)
        .output()
        .unwrap();

    assert_exit(&out, 3);
    assert_eq!(rev(&repo, "main"), base);
    assert!(!repo.root.join("config.yml").exists());
    assert_eq!(task(&repo, "leak")["status"], "parked");
    let text = std::fs::read_to_string(&report).unwrap();
    let attention = &text[text.find("Needs attention").expect("Needs attention")..];
    assert!(attention.contains("config.yml"), "{attention}");
    assert!(attention.contains("GITHUB_TOKEN"), "{attention}");
    for shown in [stdout(&out), crate::stderr(&out), text] {
        assert!(!shown.contains(secret), "{shown}");
    }
}

#[test]
fn a_file_that_held_a_secrets_value_before_is_merged_when_a_writer_edits_it() {
    let repo = TestRepo::new();
    let secret = "ghp_canary0123456789";
    repo.write("fixture.txt", &format!("token: {secret}\n"));
    repo.commit_all("a fixture holding the value");
    let tasks = repo.tasks(&[r#"{"id":"edit","run":"echo more >> fixture.txt"}"#]);

    let out = repo
        .swarm_cmd()
        .args(["run", tasks.to_str().unwrap()])
        .env("GITHUB_TOKEN", secret)
        .output()
        .unwrap();

    assert_exit(&out, 0);
    assert_eq!(repo.read("fixture.txt"), format!("token: {secret}\nmore\n"));
}

#[test]
fn a_writer_that_changes_the_task_file_the_run_reads_from_the_repository_is_parked() {
    let repo = TestRepo::new();
    // The plan is tracked in the repository, as a nightly job's would be.
    repo.write(
        "plans/nightly.jsonl",
        "{\"id\":\"w\",\"run\":\"echo '{\\\"id\\\":\\\"evil\\\",\\\"run\\\":\\\"touch PLANTED\\\"}' >> plans/nightly.jsonl\"}\n",
    );
    repo.commit_all("a plan");
    let base = rev(&repo, "main");

    let out = repo.swarm(&["run", "plans/nightly.jsonl"]);

    assert_exit(&out, 3);
    assert_eq!(rev(&repo, "main"), base);
    let t = task(&repo, "w");
    assert_eq!(t["status"], "parked");
    assert!(
        t["error"].as_str().unwrap().contains("plans/nightly.jsonl"),
        "{t}"
    );
    assert_eq!(repo.read("plans/nightly.jsonl").lines().count(), 1);
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}
