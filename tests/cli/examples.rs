//! The examples the README shows, run as it says: the first plan, the getting-started plan, the
//! git hook and the CI batch job (in a shallow clone, as CI checks a repository out), and the
//! workflow that runs it checked against GitHub's published schema.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::landing::shallow_clone;
use crate::writers::swarm_branches;
use crate::{TestRepo, assert_exit, rev, stderr, stdout};

/// This repository's `examples/NAME`.
fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
}

/// `PATH` with the swarm under test first, as a user's install puts it there.
fn path_with_swarm() -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_swarm")).parent().unwrap();
    format!(
        "{}:{}",
        bin.display(),
        crate::search_path().to_string_lossy()
    )
}

/// `program args` in `repo` with swarm's clean environment, swarm on `PATH` and the test
/// identity for the commits git makes.
fn run_in(repo: &TestRepo, program: &str, args: &[&str]) -> Output {
    repo.command(program)
        .args(args)
        .env("PATH", path_with_swarm())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Test User")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test User")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .output()
        .expect("running the example")
}

#[test]
fn the_first_plan_merges_two_writers_parks_the_third_and_delivers_what_it_says() {
    let repo = TestRepo::new();
    let plan = example("first-plan.jsonl");

    let out = repo.swarm(&["run", plan.to_str().unwrap(), "--final-out", "report.md"]);

    // One greeting conflicts with the other and is parked: a person has to look.
    assert_exit(&out, 3);
    assert_eq!(repo.read("hello.txt"), "Hello from swarm\n");
    let greeting = repo.read("motd.txt");
    let parked = match greeting.as_str() {
        "Welcome\n" => "motd-fr",
        "Bienvenue\n" => "motd-en",
        other => panic!("motd.txt holds {other:?}"),
    };
    assert!(
        stdout(&out).contains(&format!("parked: {parked} on branch swarm/")),
        "{}",
        stdout(&out)
    );
    assert!(
        swarm_branches(&repo)
            .iter()
            .any(|b| b.ends_with(&format!("-{parked}"))),
        "{:?}",
        swarm_branches(&repo)
    );
    let report = repo.read("report.md");
    let deliverable: Vec<&str> = report.lines().take(3).collect();
    assert!(
        deliverable[0].starts_with("Before the run: 2 files at "),
        "{report}"
    );
    assert_eq!(
        deliverable[1],
        "Now: README.md hello.txt motd.txt src/lib.rs "
    );
    assert_eq!(deliverable[2], format!("Not merged: {parked}"));
    assert!(report.contains("## Needs attention"), "{report}");
}

#[test]
fn the_getting_started_plan_reports_on_a_clone_of_swarm_and_leaves_it_clean() {
    // A clone of this repository as the README's set-up finds it (its committed files), with
    // the `target/` that `cargo install --path .` makes.
    let repo = TestRepo::new();
    std::fs::remove_dir_all(&repo.root).unwrap();
    let url = format!("file://{}", env!("CARGO_MANIFEST_DIR"));
    let cloned = Command::new("git")
        .args(["clone", "-q", "--depth", "1", &url])
        .arg(&repo.root)
        .env_clear()
        .env("PATH", crate::search_path())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(cloned.status.success(), "{}", stderr(&cloned));
    std::fs::create_dir(repo.root.join("target")).unwrap();
    let head = rev(&repo, "HEAD");

    let out = repo.swarm(&[
        "run",
        "examples/repo-report.jsonl",
        "--final-out",
        "target/repo-report.md",
    ]);

    assert_exit(&out, 0);
    let report = repo.read("target/repo-report.md");
    for section in ["## Layout", "## Lines by file type", "## Recent commits"] {
        assert!(report.contains(section), "no {section}:\n{report}");
    }
    assert_eq!(repo.git(&["status", "--porcelain", "--ignored=no"]), "");
    assert_eq!(rev(&repo, "HEAD"), head);
}

#[test]
fn the_pre_push_hook_stops_a_push_whose_checks_fail_and_lets_a_green_one_through() {
    let repo = TestRepo::new();
    let remote = repo.cache.parent().unwrap().join("remote.git");
    repo.git(&["init", "-q", "--bare", remote.to_str().unwrap()]);
    repo.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
    let hook = repo.root.join(".git/hooks/pre-push");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::copy(example("hooks/pre-push"), &hook).unwrap();
    let plan = |check: &str| {
        repo.write(
            ".swarm/pre-push.jsonl",
            &format!(r#"{{"id":"check","mode":"read","run":"{check}"}}"#),
        );
    };

    plan("test -f LICENSE");
    let refused = run_in(&repo, "git", &["push", "-q", "origin", "main"]);
    assert!(!refused.status.success(), "{}", stderr(&refused));
    assert_eq!(
        repo.git(&["--git-dir", remote.to_str().unwrap(), "branch", "--list"]),
        "",
        "a push whose check failed went through"
    );

    plan("test -f README.md");
    let pushed = run_in(&repo, "git", &["push", "-q", "origin", "main"]);
    assert!(pushed.status.success(), "{}", stderr(&pushed));
    assert_eq!(
        repo.git(&["--git-dir", remote.to_str().unwrap(), "rev-parse", "main"]),
        repo.git(&["rev-parse", "main"])
    );
    // Checks that only look leave no branch behind.
    assert_eq!(swarm_branches(&repo), Vec::<String>::new());
}

#[test]
fn the_ci_batch_job_runs_a_plan_in_a_shallow_clone_and_leaves_the_work_on_its_branch() {
    let source = TestRepo::new();
    for k in 0..3 {
        source.write("history.txt", &format!("{k}\n"));
        source.commit_all(&format!("commit {k}"));
    }
    let repo = shallow_clone(&source);
    let head = rev(&repo, "HEAD");
    let plan = repo.tasks(&[
        r#"{"id":"audit","mode":"read","run":"git ls-files | wc -l"}"#,
        r#"{"id":"notes","run":"echo reviewed > notes.txt"}"#,
        r#"{"id":"history","run":"echo 3 >> history.txt"}"#,
    ]);
    let job = example("ci/batch-job.sh");

    let out = run_in(
        &repo,
        "sh",
        &[
            job.to_str().unwrap(),
            plan.to_str().unwrap(),
            "swarm-report.md",
        ],
    );

    assert_exit(&out, 0);
    // The CI checkout is as it was; the work waits on the run's branch, for review.
    assert_eq!(rev(&repo, "HEAD"), head);
    assert!(!repo.root.join("notes.txt").exists());
    let branches = swarm_branches(&repo);
    assert_eq!(branches.len(), 1, "{branches:?}");
    let branch = &branches[0];
    assert_eq!(
        repo.git(&["show", &format!("{branch}:notes.txt")]),
        "reviewed\n"
    );
    assert_eq!(
        repo.git(&["show", &format!("{branch}:history.txt")]),
        "2\n3\n"
    );
    assert!(repo.read("swarm-report.md").contains("## Run summary"));
}

#[test]
fn the_nightly_workflow_matches_githubs_schema_and_runs_the_batch_job() {
    let text = std::fs::read_to_string(example("ci/batch-job.yml")).unwrap();
    let (schemas, index) = crate::ci_templates::schema("github-workflow.json");
    let docs = crate::ci_templates::documents(&text);
    assert_eq!(docs.len(), 1);
    if let Err(e) = schemas.validate(&docs[0], index) {
        panic!("examples/ci/batch-job.yml does not match GitHub's schema: {e:#}");
    }
    let runs: Vec<&str> = docs[0]["jobs"]["batch"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|step| step["run"].as_str())
        .collect();
    assert!(
        runs.iter()
            .any(|r| r.trim() == "examples/ci/batch-job.sh .swarm/nightly.jsonl swarm-report.md"),
        "{runs:?}"
    );
}

/// The lines of the fenced `sh` blocks of `text`'s section `heading`, in order.
fn shell_lines(text: &str, heading: &str) -> Vec<String> {
    let section = text
        .split("\n## ")
        .find(|s| s.starts_with(heading))
        .unwrap_or_else(|| panic!("no section {heading:?}"));
    let mut lines = Vec::new();
    let mut inside = false;
    for line in section.lines() {
        match (inside, line) {
            (false, "```sh") => inside = true,
            (true, "```") => inside = false,
            (true, line) => lines.push(line.to_owned()),
            _ => {}
        }
    }
    lines
}

#[test]
fn the_readmes_two_set_up_commands_are_what_ci_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    let commands = shell_lines(&readme, "Install");
    assert_eq!(
        commands,
        [
            "cargo install --path . --locked && swarm run examples/repo-report.jsonl --final-out target/repo-report.md",
            "cargo test --locked",
        ]
    );
    for command in &commands {
        // The command as a whole, its input from /dev/null (`cargo test --locked -p xtask` is
        // another command).
        let runs = ci
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .any(|l| {
                l.split_once(command.as_str())
                    .is_some_and(|(_, rest)| rest.is_empty() || rest.starts_with(" </dev/null"))
            });
        assert!(runs, ".ci/run does not run {command:?}");
    }
    // The manual says the same.
    let manual = std::fs::read_to_string(root.join("docs/src/getting-started.md")).unwrap();
    assert_eq!(
        shell_lines(&format!("\n## {manual}"), "# Getting started")[0],
        commands[0]
    );
}
