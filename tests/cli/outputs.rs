//! The files a run writes for the user: every output path is checked before anything runs
//! (exit 2, nothing done), and a good one is written whole.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Output;

use crate::fake_llm::{FakeLlm, Reply};
use crate::{TestRepo, assert_exit, outside, rev, stderr};

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
        // Writable by its permission bits for root, and still no file can be made there.
        ("/proc/report.md", "no file can be written in /proc"),
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

/// swarm with `args`, started by a shell whose umask is `umask`.
fn swarm_with_umask(repo: &TestRepo, umask: &str, args: &[&str]) -> Output {
    repo.command("sh")
        .arg("-c")
        .arg(format!("umask {umask} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_swarm"))
        .args(args)
        .output()
        .expect("running swarm")
}

/// The permission bits of the file at `path`, in octal.
fn mode(path: &Path) -> String {
    format!(
        "{:o}",
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    )
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Runs `write` (swarm writing the file at `path`, under the umask it is given) for a new file
/// and over an existing one, and checks the modes: a new file gets what the umask gives, a
/// replaced one keeps its own.
fn check_modes(path: &Path, write: &dyn Fn(&str) -> Output) {
    for (umask, expected) in [("022", "644"), ("077", "600"), ("002", "664")] {
        let _ = std::fs::remove_file(path);
        let out = write(umask);
        assert_exit(&out, 0);
        assert_eq!(
            mode(path),
            expected,
            "{} new under umask {umask}",
            path.display()
        );
    }
    for (kept, umask) in [(0o644, "077"), (0o640, "077"), (0o600, "022")] {
        std::fs::write(path, "old\n").unwrap();
        set_mode(path, kept);
        let out = write(umask);
        assert_exit(&out, 0);
        assert_ne!(std::fs::read_to_string(path).unwrap(), "old\n");
        assert_eq!(
            mode(path),
            format!("{kept:o}"),
            "{} replaced under umask {umask}",
            path.display()
        );
    }
}

#[test]
fn a_final_out_gets_the_mode_of_the_umask_and_a_replaced_one_keeps_its_mode() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[r#"{"id":"r","run":"echo the findings","mode":"read"}"#]);
    let tasks = tasks.to_str().unwrap();
    for name in ["report.md", "report.html"] {
        let report = outside(&repo, name);
        check_modes(&report, &|umask| {
            swarm_with_umask(
                &repo,
                umask,
                &["run", tasks, "--final-out", report.to_str().unwrap()],
            )
        });
    }
}

#[test]
fn a_final_out_dirs_files_get_the_mode_of_the_umask() {
    let repo = TestRepo::new();
    let dir = outside(&repo, "reports");
    std::fs::create_dir_all(&dir).unwrap();
    let llm = FakeLlm::start(|_, _| {
        Reply::tool_call(
            "plan-1",
            "submit_plan",
            serde_json::json!({"tasks": [
                {"id": "r", "run": "echo the findings", "mode": "read", "lane": "reducer"}
            ]}),
        )
    });
    let config = outside(&repo, "swarm.toml");
    std::fs::write(&config, format!("api-base = \"{}\"\n", llm.base_url())).unwrap();
    for (umask, expected) in [("022", "644"), ("077", "600")] {
        for old in std::fs::read_dir(&dir).unwrap() {
            std::fs::remove_file(old.unwrap().path()).unwrap();
        }
        let out = swarm_with_umask(
            &repo,
            umask,
            &[
                "--config",
                config.to_str().unwrap(),
                "--goal",
                "Summarise the findings",
                "--goal",
                "Summarise them again",
                "--final-out-dir",
                dir.to_str().unwrap(),
            ],
        );
        assert_exit(&out, 0);
        let files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert!(!files.is_empty(), "{}", stderr(&out));
        for file in files {
            assert_eq!(
                mode(&file),
                expected,
                "{} under umask {umask}",
                file.display()
            );
        }
    }
}

#[test]
fn a_plan_out_gets_the_mode_of_the_umask_and_a_replaced_one_keeps_its_mode() {
    let repo = TestRepo::new();
    let llm = FakeLlm::start(|_, _| {
        Reply::tool_call(
            "plan-1",
            "submit_plan",
            serde_json::json!({"tasks": [
                {"id": "scan", "prompt": "List the handlers.", "lane": "researcher"},
                {"id": "report", "prompt": "Summarise.", "deps": ["scan"], "lane": "reducer"}
            ]}),
        )
    });
    let config = outside(&repo, "swarm.toml");
    std::fs::write(&config, format!("api-base = \"{}\"\n", llm.base_url())).unwrap();
    let plan = outside(&repo, "plan.jsonl");
    check_modes(&plan, &|umask| {
        swarm_with_umask(
            &repo,
            umask,
            &[
                "--config",
                config.to_str().unwrap(),
                "--goal",
                "Find the handlers",
                "--plan-only",
                "--plan-out",
                plan.to_str().unwrap(),
            ],
        )
    });
}

#[test]
fn a_ci_out_gets_the_mode_of_the_umask_and_a_replaced_one_keeps_its_mode() {
    let repo = TestRepo::new();
    let workflow = repo.root.join("swarm.yml");
    check_modes(&workflow, &|umask| {
        swarm_with_umask(
            &repo,
            umask,
            &[
                "ci",
                "github",
                "--out",
                workflow.to_str().unwrap(),
                "--force",
            ],
        )
    });
}

/// Runs git in the repository with extra environment; panics on failure, else returns what it
/// printed.
fn git_with(repo: &TestRepo, env: &[(&str, &str)], args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(&repo.root)
        .env_clear()
        .env("PATH", crate::search_path())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Test User")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test User")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", repo.cache.parent().unwrap())
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// An operation git leaves open, and how to leave it open in a repository.
type Setup<'a> = (&'a str, &'a dyn Fn(&TestRepo));

#[test]
fn an_open_merge_rebase_or_bisect_is_named_and_the_run_refused_unless_it_cannot_land() {
    let tasks_line = r#"{"id":"w","run":"echo w > w.txt"}"#;
    let setups: [Setup<'_>; 3] = [
        ("merge", &|repo| {
            // An open merge whose index is clean: the other side changes nothing.
            repo.git(&["checkout", "-q", "-b", "other"]);
            repo.git(&["commit", "-q", "--allow-empty", "-m", "theirs"]);
            repo.git(&["checkout", "-q", "main"]);
            repo.git(&["commit", "-q", "--allow-empty", "-m", "mine"]);
            git_with(
                repo,
                &[],
                &["merge", "-q", "--no-commit", "--no-ff", "other"],
            );
        }),
        ("rebase", &|repo| {
            repo.write("b.txt", "b\n");
            repo.commit_all("b");
            git_with(
                repo,
                &[("GIT_SEQUENCE_EDITOR", "sed -i s/^pick/edit/")],
                &["rebase", "-q", "-i", "HEAD~1"],
            );
        }),
        ("bisect", &|repo| {
            repo.git(&["bisect", "start"]);
        }),
    ];
    for (op, setup) in setups {
        let repo = TestRepo::new();
        setup(&repo);
        let head = rev(&repo, "HEAD");
        let tasks = repo.tasks(&[tasks_line]);

        let run = repo.swarm(&["run", tasks.to_str().unwrap()]);

        assert_exit(&run, 2);
        assert!(
            stderr(&run).contains(&format!("a {op} is in progress")),
            "{op}: {}",
            stderr(&run)
        );
        assert_eq!(rev(&repo, "HEAD"), head);
        assert!(
            !repo.swarm_dir().join("runs").exists(),
            "{op}: a run was recorded"
        );

        // A run that cannot touch the checkout goes ahead.
        let run = repo.swarm(&["run", tasks.to_str().unwrap(), "--land", "branch"]);
        assert_exit(&run, 0);
        assert_eq!(rev(&repo, "HEAD"), head, "{op}");
    }
}

#[test]
fn swarm_in_a_pre_commit_hook_leaves_the_users_commit_alone_and_its_work_on_its_branch() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo w > w.txt"}"#]);
    // The example hook of the README, finding swarm on PATH.
    let hook = repo.root.join(".git/hooks/pre-commit");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/hooks/pre-commit");
    std::fs::copy(example, &hook).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_swarm")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        crate::search_path().to_string_lossy()
    );
    let before = rev(&repo, "main");

    let said = git_with(
        &repo,
        &[
            ("PATH", &path),
            ("SWARM_PLAN", tasks.to_str().unwrap()),
            ("XDG_CACHE_HOME", repo.cache.to_str().unwrap()),
        ],
        &["commit", "--allow-empty", "-m", "the user's commit"],
    );

    // The user's commit went in on top of where main was; swarm's work waits on its branch.
    assert_eq!(rev(&repo, "main^"), before);
    assert_eq!(
        repo.git(&["log", "-1", "--format=%s", "main"]).trim(),
        "the user's commit"
    );
    assert!(!repo.root.join("w.txt").exists());
    let branch = repo
        .git(&[
            "for-each-ref",
            "--format=%(refname:short)",
            "refs/heads/swarm/",
        ])
        .trim()
        .to_owned();
    assert!(!branch.is_empty(), "{said}");
    assert_eq!(repo.git(&["show", &format!("{branch}:w.txt")]), "w\n");
    assert!(
        said.contains(&format!("git merge --ff-only {branch}")),
        "{said}"
    );
}
