//! Writers are untrusted: `run` writers stand in for agents that commit, reset, stash, check
//! out, rewrite config and refs, change file types and write what they should not. Each test
//! checks what the user's repository looks like afterwards: its branch, its refs, stash,
//! config and hooks, what landed and what was kept.

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use serde_json::Value;

use crate::{TestRepo, assert_exit, outside, status_json, stdout};

fn rev(repo: &TestRepo, name: &str) -> String {
    repo.git(&["rev-parse", name]).trim().to_owned()
}

fn run_id(repo: &TestRepo) -> String {
    status_json(repo)["run"]["id"]
        .as_str()
        .expect("a run id")
        .to_owned()
}

fn task(repo: &TestRepo, id: &str) -> Value {
    status_json(repo)["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .find(|t| t["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("no task {id}"))
}

fn run_tasks(repo: &TestRepo, lines: &[&str], extra: &[&str]) -> std::process::Output {
    let tasks = repo.tasks(lines);
    let mut args = vec!["run", tasks.to_str().unwrap()];
    args.extend_from_slice(extra);
    repo.swarm(&args)
}

/// Runs one writer per script, `t0`, `t1`, …
fn run_scripts(repo: &TestRepo, scripts: &[&str], extra: &[&str]) -> std::process::Output {
    let lines: Vec<String> = scripts
        .iter()
        .enumerate()
        .map(|(n, s)| serde_json::json!({ "id": format!("t{n}"), "run": s }).to_string())
        .collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    run_tasks(repo, &lines, extra)
}

/// Everything of the user's repository that no agent may change: every ref outside swarm's
/// own namespace (with what it points at), the stash and its log, the config and the hooks.
/// `Landed` leaves out `main`, which a landing fast-forwards.
fn untouchable(repo: &TestRepo, main: Main) -> BTreeMap<String, Vec<u8>> {
    let git = repo.root.join(".git");
    let mut out = BTreeMap::new();
    let refs: Vec<String> = repo
        .git(&["for-each-ref", "--format=%(refname) %(objectname)"])
        .lines()
        .filter(|l| !l.starts_with("refs/heads/swarm/"))
        .filter(|l| main == Main::Same || !l.starts_with("refs/heads/main "))
        .map(str::to_owned)
        .collect();
    let refs = refs.join("\n");
    out.insert("refs".to_owned(), refs.into_bytes());
    out.insert(
        "stash list".to_owned(),
        repo.git(&["stash", "list"]).into_bytes(),
    );
    for file in ["config", "HEAD", "logs/refs/stash", "packed-refs"] {
        out.insert(
            file.to_owned(),
            std::fs::read(git.join(file)).unwrap_or_default(),
        );
    }
    for entry in std::fs::read_dir(git.join("hooks")).unwrap() {
        let path = entry.unwrap().path();
        let name = format!("hooks/{}", path.file_name().unwrap().to_string_lossy());
        out.insert(name, std::fs::read(&path).unwrap());
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Main {
    Same,
    Landed,
}

/// `git -c` identity for agents' own commits (they run with a cleared git environment).
const AGENT_GIT: &str = "git -c user.name=Agent -c user.email=agent@example.com";

#[test]
fn a_writers_own_commits_are_merged_with_their_messages_and_what_it_left_on_top() {
    let repo = TestRepo::new();
    let before = untouchable(&repo, Main::Landed);
    let base = rev(&repo, "main");
    let cmd = format!(
        "echo one > one.txt && git add one.txt && {AGENT_GIT} commit -qm 'mine: one' && echo two > two.txt"
    );
    let line = serde_json::json!({ "id": "w", "run": cmd }).to_string();
    // This one leaves nothing uncommitted: its commit alone is its result.
    let only =
        format!("echo three > three.txt && git add -A && {AGENT_GIT} commit -qm 'mine: three'");
    let only = serde_json::json!({ "id": "only", "deps": ["w"], "run": only }).to_string();

    let out = run_tasks(&repo, &[&line, &only], &[]);

    assert_exit(&out, 0);
    // Landed: the files, the agents' commits with their messages and author, swarm's on top.
    assert_eq!(repo.read("one.txt"), "one\n");
    assert_eq!(repo.read("two.txt"), "two\n");
    assert_eq!(repo.read("three.txt"), "three\n");
    let log = repo.git(&["log", "--format=%an|%s", &format!("{base}..main")]);
    assert!(log.contains("Agent|mine: one"), "{log}");
    assert!(log.contains("Agent|mine: three"), "{log}");
    assert_eq!(
        repo.git(&["log", "-1", "--format=%s", "main^1^2"]).trim(),
        "w",
        "swarm commits what was left uncommitted on top of the agent's commit"
    );
    assert_eq!(
        repo.git(&["log", "-1", "--format=%s", "main^2"]).trim(),
        "mine: three"
    );
    assert_eq!(task(&repo, "only")["status"], "done");
    assert!(
        repo.git(&["merge-base", "--is-ancestor", &base, "main"])
            .is_empty()
    );
    assert_eq!(task(&repo, "w")["status"], "done");
    assert_eq!(untouchable(&repo, Main::Landed), before);
}

#[test]
fn a_writer_that_resets_below_its_start_fails_and_its_work_is_kept_on_a_branch() {
    let repo = TestRepo::new();
    repo.write("second.txt", "second\n");
    repo.commit_all("second");
    let base = rev(&repo, "main");
    let before = untouchable(&repo, Main::Same);
    let line = r#"{"id":"w","run":"git reset -q --hard HEAD~1 && echo z > z.txt"}"#;

    let out = run_tasks(&repo, &[line], &["--retries", "0"]);

    assert_exit(&out, 1);
    // Nothing merged: the base's last commit is not reverted anywhere.
    assert_eq!(rev(&repo, "main"), base);
    assert_eq!(repo.read("second.txt"), "second\n");
    let t = task(&repo, "w");
    assert_eq!(t["status"], "failed");
    let error = t["error"].as_str().unwrap();
    assert!(
        error.contains("no longer descends from its start"),
        "{error}"
    );
    // What the agent left is kept, not lost: its reset history with its edit on top.
    let run = run_id(&repo);
    let kept = format!("swarm/{run}-w@1");
    assert!(error.contains(&kept), "{error}");
    assert_eq!(repo.git(&["show", &format!("{kept}:z.txt")]), "z\n");
    assert_eq!(
        repo.git(&["ls-tree", "--name-only", &kept, "second.txt"]),
        "",
        "the kept branch is what the agent left"
    );
    assert_eq!(untouchable(&repo, Main::Same), before);
}

#[test]
fn a_writer_that_points_its_head_at_another_branch_fails_and_main_is_untouched() {
    let repo = TestRepo::new();
    let base = rev(&repo, "main");
    let before = untouchable(&repo, Main::Same);
    let lines = [
        r#"{"id":"sym","run":"git symbolic-ref HEAD refs/heads/main && echo x > x.txt"}"#,
        r#"{"id":"other","run":"git checkout -q -b other && echo y > y.txt"}"#,
    ];

    let out = run_tasks(&repo, &lines, &["--retries", "0"]);

    assert_exit(&out, 1);
    assert_eq!(rev(&repo, "main"), base);
    assert_eq!(repo.git(&["branch", "--list", "other"]), "");
    let run = run_id(&repo);
    for (id, names, file, text) in [
        ("sym", "refs/heads/main", "x.txt", "x\n"),
        ("other", "refs/heads/other", "y.txt", "y\n"),
    ] {
        let t = task(&repo, id);
        assert_eq!(t["status"], "failed", "{t}");
        let error = t["error"].as_str().unwrap();
        assert!(error.contains(&format!("HEAD names {names}")), "{error}");
        let kept = format!("swarm/{run}-{id}@1");
        assert_eq!(repo.git(&["show", &format!("{kept}:{file}")]), text);
    }
    assert_eq!(untouchable(&repo, Main::Same), before);
}

#[test]
fn a_writer_moving_refs_in_its_checkout_moves_no_one_elses() {
    let repo = TestRepo::new();
    let base = rev(&repo, "main");
    let before = untouchable(&repo, Main::Landed);
    // The second writer starts from the first's merge, then points the run's integration
    // branch (by name, in its own checkout) at its start and its start's parent.
    let lines = [
        r#"{"id":"a","run":"echo a > a.txt"}"#,
        r#"{"id":"b","deps":["a"],"run":"git update-ref refs/heads/swarm/$SWARM_RUN_ID HEAD && git update-ref refs/heads/main HEAD~1 && echo b > b.txt"}"#,
        r#"{"id":"c","deps":["b"],"run":"git update-ref refs/heads/swarm/$SWARM_RUN_ID HEAD~1 && echo c > c.txt"}"#,
    ];

    let out = run_tasks(&repo, &lines, &[]);

    assert_exit(&out, 0);
    for f in ["a.txt", "b.txt", "c.txt"] {
        assert_eq!(repo.read(f), format!("{}\n", &f[..1]), "{f}");
    }
    // Landed forwards: main descends from where it was, with every merge on it.
    assert!(
        repo.git(&["merge-base", "--is-ancestor", &base, "main"])
            .is_empty()
    );
    let merges = repo.git(&["log", "--merges", "--format=%s", "main"]);
    assert_eq!(merges.lines().count(), 3, "{merges}");
    // Only main moved, by the landing's fast-forward.
    assert_eq!(untouchable(&repo, Main::Landed), before);
}

#[test]
fn an_integration_branch_moved_from_outside_stops_the_merges_and_resume_finishes() {
    let repo = TestRepo::new();
    let base = rev(&repo, "main");
    let report = outside(&repo, "report.md");
    let user = repo.root.display().to_string();
    // `b` reaches into the user's repository by path and moves the run's integration branch
    // back to the base, dropping `a`'s merge.
    let b = format!(
        "git -C '{user}' update-ref refs/heads/swarm/$SWARM_RUN_ID {base} && echo b > b.txt"
    );
    let b = serde_json::json!({ "id": "b", "deps": ["a"], "run": b }).to_string();
    let lines = [r#"{"id":"a","run":"echo a > a.txt"}"#, b.as_str()];

    let out = run_tasks(&repo, &lines, &["--final-out", report.to_str().unwrap()]);

    assert_exit(&out, 3);
    let run = run_id(&repo);
    let integration = format!("swarm/{run}");
    // Nothing was built on the moved ref: it is back where swarm left it, with a's merge,
    // what was found there is kept, and main has not moved.
    assert_eq!(rev(&repo, "main"), base);
    assert_eq!(repo.git(&["show", &format!("{integration}:a.txt")]), "a\n");
    let backup = format!("{integration}@moved-{}", &base[..12]);
    assert_eq!(rev(&repo, &backup), base);
    assert_eq!(task(&repo, "b")["status"], "committed");
    let text = std::fs::read_to_string(&report).unwrap();
    let attention = &text[text.find("Needs attention").expect("Needs attention")..];
    assert!(attention.contains(&backup), "{attention}");

    let out = repo.swarm(&["resume", "--final-out", report.to_str().unwrap()]);

    assert_exit(&out, 0);
    assert_eq!(repo.read("a.txt"), "a\n");
    assert_eq!(repo.read("b.txt"), "b\n");
    let merges = repo.git(&["log", "--merges", "--format=%s", "main"]);
    assert_eq!(merges.lines().count(), 2, "{merges}");
}

#[test]
fn stash_config_hooks_branches_and_tags_of_a_writer_stay_in_its_own_checkout() {
    let repo = TestRepo::new();
    let before = untouchable(&repo, Main::Landed);
    let planted = outside(&repo, "hook-ran");
    let cmd = format!(
        "echo stashed > s.txt && git add s.txt && {AGENT_GIT} stash -q \
         && git config user.name Mallory && git config core.hooksPath /tmp \
         && mkdir -p .git/hooks && printf '#!/bin/sh\\ntouch {0}\\n' > .git/hooks/post-merge && chmod +x .git/hooks/post-merge \
         && git branch stray && git tag stray-tag && echo kept > kept.txt",
        planted.display()
    );
    let line = serde_json::json!({ "id": "w", "run": cmd }).to_string();

    let out = run_tasks(&repo, &[&line], &[]);

    assert_exit(&out, 0);
    assert_eq!(repo.read("kept.txt"), "kept\n");
    assert_eq!(untouchable(&repo, Main::Landed), before);
    assert_eq!(repo.git(&["branch", "--list", "stray"]), "");
    assert_eq!(repo.git(&["tag", "--list"]), "");
    assert!(!planted.exists(), "a hook the agent planted ran");
    // The merge commit carries the user's identity, not the one the agent configured.
    let author = repo.git(&["log", "-1", "--format=%an", "main"]);
    assert_ne!(author.trim(), "Mallory");
}

/// The tree git itself makes of these writers' changes, each applied to `base` on a branch
/// and merged one after another.
fn tree_git_makes(repo: &TestRepo, base: &str, scripts: &[&str]) -> String {
    let scratch = outside(repo, "scratch");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "--detach",
        scratch.to_str().unwrap(),
        base,
    ]);
    let in_scratch = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(&scratch)
            .env_clear()
            .env("PATH", crate::search_path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "T")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "T")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", repo.cache.parent().unwrap())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let mut tip = base.to_owned();
    for script in scripts {
        in_scratch(&["checkout", "-q", "--detach", base]);
        let ran = std::process::Command::new("sh")
            .args(["-c", script])
            .current_dir(&scratch)
            .env_clear()
            .env("PATH", crate::search_path())
            .status()
            .unwrap();
        assert!(ran.success());
        in_scratch(&["add", "-A"]);
        in_scratch(&["commit", "-qm", "w"]);
        let writer = in_scratch(&["rev-parse", "HEAD"]).trim().to_owned();
        let out = in_scratch(&[
            "merge-tree",
            "--write-tree",
            &format!("--merge-base={base}"),
            &tip,
            &writer,
        ]);
        let tree = out.lines().next().unwrap().to_owned();
        let commit = in_scratch(&["commit-tree", &tree, "-p", &tip, "-p", &writer, "-m", "m"]);
        commit.trim().clone_into(&mut tip);
    }
    in_scratch(&["rev-parse", &format!("{tip}^{{tree}}")])
        .trim()
        .to_owned()
}

#[test]
fn type_changes_are_merged_as_git_merges_them() {
    let repo = TestRepo::new();
    repo.write("to-link.txt", "a file\n");
    repo.write("dir-to-file/inner.txt", "inner\n");
    repo.write("file-to-dir", "a file\n");
    std::os::unix::fs::symlink("README.md", repo.root.join("link-to-file")).unwrap();
    repo.commit_all("types");
    let base = rev(&repo, "main");
    let scripts = [
        "rm to-link.txt && ln -s README.md to-link.txt",
        "rm link-to-file && echo now a file > link-to-file",
        "rm file-to-dir && mkdir file-to-dir && echo inside > file-to-dir/new.txt",
        "rm -r dir-to-file && echo now a file > dir-to-file",
    ];
    let out = run_scripts(&repo, &scripts, &["-j", "4"]);

    assert_exit(&out, 0);
    let ours = rev(&repo, "main^{tree}");
    // Whatever order swarm merged them in, the changes are disjoint: git's tree is the one.
    assert_eq!(ours, tree_git_makes(&repo, &base, &scripts));
    let link = std::fs::read_link(repo.root.join("to-link.txt")).unwrap();
    assert_eq!(link, Path::new("README.md"));
    assert_eq!(repo.read("file-to-dir/new.txt"), "inside\n");
    assert_eq!(repo.read("dir-to-file"), "now a file\n");
}

#[test]
fn files_whose_names_are_not_utf8_are_edited_and_deleted_exactly() {
    let repo = TestRepo::new();
    let cafe = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    let naive = std::ffi::OsStr::from_bytes(b"na\xefve.txt");
    std::fs::write(repo.root.join(cafe), "old\n").unwrap();
    std::fs::write(repo.root.join(naive), "gone soon\n").unwrap();
    repo.commit_all("latin-1 names");
    let base = rev(&repo, "main");
    let scripts = [
        r"printf 'new\n' > $(printf 'caf\351.txt')",
        r"rm $(printf 'na\357ve.txt')",
        "echo other > other.txt",
    ];
    let out = run_scripts(&repo, &scripts, &["-j", "3"]);

    assert_exit(&out, 0);
    assert_eq!(std::fs::read(repo.root.join(cafe)).unwrap(), b"new\n");
    assert!(!repo.root.join(naive).exists());
    assert_eq!(
        rev(&repo, "main^{tree}"),
        tree_git_makes(&repo, &base, &scripts)
    );
}

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
fn a_merge_cut_short_by_a_stale_ref_lock_finishes_on_resume() {
    let repo = TestRepo::new();
    let lock_dir = repo.root.join(".git/refs/heads/swarm");
    // The writer leaves a lock on the run's integration branch, as a process killed while
    // moving it would: the merge cannot move the ref.
    let cmd = format!(
        "touch '{}'/$SWARM_RUN_ID.lock && echo w > w.txt",
        lock_dir.display()
    );
    let line = serde_json::json!({ "id": "w", "run": cmd }).to_string();

    let out = run_tasks(&repo, &[&line], &[]);

    assert_ne!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(!repo.root.join("w.txt").exists());

    let out = repo.swarm(&["resume"]);

    assert_exit(&out, 0);
    assert_eq!(repo.read("w.txt"), "w\n");
}

#[test]
fn a_reader_that_commits_in_its_snapshot_fails() {
    let repo = TestRepo::new();
    let before = untouchable(&repo, Main::Same);
    let cmd = format!("{AGENT_GIT} commit -q --allow-empty -m sneaky");
    let reader = serde_json::json!({ "id": "r", "run": cmd, "mode": "read" }).to_string();

    let out = run_tasks(&repo, &[&reader], &["--retries", "0"]);

    assert_exit(&out, 1);
    let error = task(&repo, "r")["error"].as_str().unwrap().to_owned();
    assert!(error.contains("changed its snapshot (HEAD)"), "{error}");
    assert_eq!(untouchable(&repo, Main::Same), before);
}

#[test]
fn a_writer_that_reaches_into_the_users_git_directory_by_path_fails_and_is_not_merged() {
    let repo = TestRepo::new();
    let base = rev(&repo, "main");
    let user = repo.root.display().to_string();
    let scripts = [
        format!("git -C '{user}' config user.name Mallory && echo a > a.txt"),
        format!("printf '#!/bin/sh\\n' > '{user}/.git/hooks/pre-commit' && echo b > b.txt"),
        format!("git -C '{user}' tag planted && echo c > c.txt"),
    ];
    let scripts: Vec<&str> = scripts.iter().map(String::as_str).collect();

    let out = run_scripts(&repo, &scripts, &["--retries", "0", "-j", "1"]);

    assert_exit(&out, 1);
    assert_eq!(rev(&repo, "main"), base);
    for (n, changed) in [
        ".git/config",
        ".git/hooks/pre-commit",
        ".git/refs/tags/planted",
    ]
    .iter()
    .enumerate()
    {
        let t = task(&repo, &format!("t{n}"));
        assert_eq!(t["status"], "failed");
        let error = t["error"].as_str().unwrap();
        assert!(error.contains("changed your checkout"), "{error}");
        assert!(error.contains(changed), "{error}");
    }
    for f in ["a.txt", "b.txt", "c.txt"] {
        assert!(!repo.root.join(f).exists(), "{f} was merged");
    }
}

#[test]
fn a_checkout_whose_git_dir_an_agent_points_at_the_users_is_refused() {
    let repo = TestRepo::new();
    let before = untouchable(&repo, Main::Same);
    let base = rev(&repo, "main");
    let user_git = repo.root.join(".git");
    let writer = format!(
        "rm -rf .git && ln -s '{}' .git && echo x > x.txt",
        user_git.display()
    );
    let reader = format!(
        "rm -rf .git && printf 'gitdir: {}\\n' > .git",
        user_git.display()
    );
    let writer = serde_json::json!({ "id": "w", "run": writer }).to_string();
    let reader = serde_json::json!({ "id": "r", "run": reader, "mode": "read" }).to_string();

    let out = run_tasks(&repo, &[&writer, &reader], &["--retries", "0"]);

    assert_exit(&out, 1);
    assert_eq!(rev(&repo, "main"), base);
    assert!(!repo.root.join("x.txt").exists());
    let error = task(&repo, "w")["error"].as_str().unwrap().to_owned();
    assert!(
        error.contains(".git is no longer the directory swarm made"),
        "{error}"
    );
    assert_eq!(task(&repo, "r")["status"], "failed");
    assert_eq!(untouchable(&repo, Main::Same), before);
}

#[test]
fn a_checkout_whose_config_points_its_worktree_at_the_users_commits_only_its_own_files() {
    let repo = TestRepo::new();
    repo.write("mine.txt", "the user's own, uncommitted\n");
    let cmd = format!(
        "git config core.worktree '{}' && echo x > x.txt",
        repo.root.display()
    );
    let line = serde_json::json!({ "id": "w", "run": cmd }).to_string();

    let out = run_tasks(&repo, &[&line], &[]);

    assert_exit(&out, 0);
    assert_eq!(repo.read("x.txt"), "x\n");
    assert_eq!(
        repo.git(&["ls-files", "mine.txt"]),
        "",
        "the user's file was committed"
    );
    assert_eq!(repo.read("mine.txt"), "the user's own, uncommitted\n");
}

#[test]
fn a_graft_in_the_checkout_does_not_pass_off_a_reset_as_descending_from_the_start() {
    let repo = TestRepo::new();
    repo.write("second.txt", "second\n");
    repo.commit_all("second");
    let base = rev(&repo, "main");
    // Reset below the start, commit there, and graft the start under that commit so git in
    // the checkout sees it descend from the start.
    let cmd = format!(
        "git reset -q --hard HEAD~1 && echo z > z.txt && git add z.txt && {AGENT_GIT} commit -qm z \
         && echo \"$(git rev-parse HEAD) {base}\" > .git/info/grafts"
    );
    let line = serde_json::json!({ "id": "w", "run": cmd }).to_string();

    let out = run_tasks(&repo, &[&line], &["--retries", "0"]);

    assert_exit(&out, 1);
    assert_eq!(rev(&repo, "main"), base);
    assert_eq!(repo.read("second.txt"), "second\n");
    let error = task(&repo, "w")["error"].as_str().unwrap().to_owned();
    assert!(error.contains("does not descend from its start"), "{error}");
    // What the agent made is kept, not lost.
    let kept = format!("swarm/{}-w@1", run_id(&repo));
    assert!(error.contains(&kept), "{error}");
    assert_eq!(repo.git(&["show", &format!("{kept}:z.txt")]), "z\n");
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

#[test]
fn a_writer_sees_the_users_branches_and_tags_as_copies_of_its_own() {
    let repo = TestRepo::new();
    repo.git(&["tag", "v1"]);
    let before = untouchable(&repo, Main::Landed);
    let cmd = format!(
        "git log -1 --format=%s main > seen.txt && git rev-parse v1 >> seen.txt \
         && git branch -f main HEAD && git tag -d v1 && {AGENT_GIT} commit -q --allow-empty -m mine"
    );
    let line = serde_json::json!({ "id": "w", "run": cmd }).to_string();

    let out = run_tasks(&repo, &[&line], &[]);

    assert_exit(&out, 0);
    let seen = repo.read("seen.txt");
    assert!(seen.starts_with("initial\n"), "{seen}");
    assert!(seen.contains(&rev(&repo, "v1")), "{seen}");
    // Its moves of them were its own.
    assert_eq!(repo.git(&["tag", "--list"]), "v1\n");
    assert_eq!(untouchable(&repo, Main::Landed), before);
}
