//! The files a run writes for the user: every output path is checked before anything runs
//! (exit 2, nothing done), and a good one is written whole.

use crate::{TestRepo, assert_exit, stderr};

fn rev(repo: &TestRepo, name: &str) -> String {
    repo.git(&["rev-parse", name]).trim().to_owned()
}

#[test]
fn a_bad_final_out_is_refused_before_any_task_runs_and_nothing_is_written() {
    let repo = TestRepo::new();
    repo.write("README.md", "# demo\nmy uncommitted edit\n");
    std::fs::create_dir_all(repo.root.join("adir")).unwrap();
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo w > w.txt"}"#]);
    let base = rev(&repo, "main");
    let git_head = std::fs::read(repo.root.join(".git/HEAD")).unwrap();
    let git_config = std::fs::read(repo.root.join(".git/config")).unwrap();
    let plan = tasks.to_str().unwrap().to_owned();
    let cases = [
        ("README.md", "tracked file with uncommitted changes"),
        (".git/HEAD", "inside the git directory"),
        (".git/config", "inside the git directory"),
        (plan.as_str(), "the run reads that file"),
        ("adir", "is a directory"),
        ("/nonexistent/x", "does not exist"),
    ];
    for (out, why) in cases {
        let run = repo.swarm(&["run", &plan, "--final-out", out]);

        assert_exit(&run, 2);
        let err = stderr(&run);
        assert!(
            err.contains("--final-out") && err.contains(why),
            "{out}: {err}"
        );
        // Nothing ran and nothing was written.
        assert_eq!(rev(&repo, "main"), base, "{out}");
        assert!(!repo.root.join("w.txt").exists(), "{out}");
        assert_eq!(repo.read("README.md"), "# demo\nmy uncommitted edit\n");
        assert_eq!(
            std::fs::read(repo.root.join(".git/HEAD")).unwrap(),
            git_head
        );
        assert_eq!(
            std::fs::read(repo.root.join(".git/config")).unwrap(),
            git_config
        );
        assert!(std::fs::read_to_string(&tasks).unwrap().contains("echo w"));
        assert!(
            !repo.swarm_dir().join("runs").exists(),
            "{out}: a run was recorded"
        );
    }
    let dir = repo.swarm(&["run", &plan, "--final-out-dir", "README.md"]);
    assert_exit(&dir, 2);
    assert!(stderr(&dir).contains("not a directory"), "{}", stderr(&dir));
}

#[test]
fn a_tracked_clean_final_out_is_replaced_whole_and_said_so() {
    let repo = TestRepo::new();
    repo.write("REPORT.md", "old report\n");
    repo.commit_all("a report");
    let tasks = repo.tasks(&[r#"{"id":"r","run":"echo the findings","mode":"read"}"#]);

    let run = repo.swarm(&["run", tasks.to_str().unwrap(), "--final-out", "REPORT.md"]);

    assert_exit(&run, 0);
    assert!(
        stderr(&run).contains("REPORT.md is a tracked file"),
        "{}",
        stderr(&run)
    );
    let text = repo.read("REPORT.md");
    assert!(text.contains("the findings"), "{text}");
    assert!(text.contains("Run summary"), "{text}");
    // Written through a temporary file beside it, which is gone.
    let stray: Vec<_> = std::fs::read_dir(&repo.root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tmp"))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
}
