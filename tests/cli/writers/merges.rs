//! Writers that merge: many at once, one after another, a reader after a writer, deletions and
//! new directories, different lines of one file, and a writer that changes nothing.

use serde_json::Value;

use super::{events, path_str, show, swarm_branches, tasks_of, tree_paths};
use crate::{TestRepo, assert_exit, extra_worktrees, outside, rev, run_id, stderr};

#[test]
fn twelve_writers_on_different_files_are_all_merged_and_landed() {
    let repo = TestRepo::new();
    for n in 1..=12 {
        repo.write(&format!("docs/{n:02}.txt"), &format!("file {n}\n"));
    }
    repo.commit_all("twelve files");
    // swarm's own commits carry the repository's identity.
    repo.git(&["config", "user.name", "Swarm Tester"]);
    repo.git(&["config", "user.email", "tester@example.com"]);
    let base = rev(&repo, "main");
    let lines: Vec<String> = (1..=12)
        .map(|n| format!(r#"{{"id":"w{n:02}","run":"echo changed {n} >> docs/{n:02}.txt"}}"#))
        .collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let tasks = repo.tasks(&lines);

    let out = repo.swarm(&["run", path_str(&tasks), "-j", "4"]);

    assert_exit(&out, 0);
    let merges = repo.git(&["log", "--merges", "--format=%s", "main"]);
    assert_eq!(merges.lines().count(), 12, "{merges}");
    for n in 1..=12 {
        let want = format!("file {n}\nchanged {n}\n");
        assert_eq!(show(&repo, "main", &format!("docs/{n:02}.txt")), want);
        assert_eq!(
            repo.read(&format!("docs/{n:02}.txt")),
            want,
            "the checkout was not updated"
        );
    }
    assert!(
        repo.git(&["merge-base", "--is-ancestor", &base, "main"])
            .is_empty(),
        "main was not fast-forwarded from its base"
    );
    assert_eq!(
        repo.git(&["status", "--porcelain"]),
        "",
        "the checkout is not clean after landing"
    );
    let authors = repo.git(&["log", "--format=%an <%ae>", &format!("{base}..main")]);
    assert_eq!(authors.lines().count(), 24, "{authors}");
    assert!(
        authors
            .lines()
            .all(|a| a == "Swarm Tester <tester@example.com>"),
        "{authors}"
    );
    assert_eq!(extra_worktrees(&repo), Vec::<String>::new());
    assert_eq!(swarm_branches(&repo), Vec::<String>::new());
}

#[test]
fn a_merged_writers_worktree_is_reused_and_the_next_writer_sees_a_clean_checkout_of_the_tip() {
    let repo = TestRepo::new();
    repo.write(".gitignore", "build/\n*.tmp\n");
    repo.write("old.txt", "old\n");
    repo.commit_all("ignore build output");
    let seen = outside(&repo, "seen");
    std::fs::create_dir_all(&seen).unwrap();
    let s = path_str(&seen);
    let a = format!(
        // Leaves ignored output behind, deletes a file and adds one; its check (run after the
        // commit) dirties a tracked file.
        r#"{{"id":"a","run":"pwd -P > {s}/a && echo A > a.txt && rm old.txt && mkdir -p build && echo junk > build/out && echo scratch > notes.tmp","check":"echo dirty >> src/lib.rs"}}"#
    );
    // Fails unless it sees exactly the integration tip: a's change, none of a's leftovers.
    let b = format!(
        r#"{{"id":"b","run":"pwd -P > {s}/b && test -f a.txt && test ! -e old.txt && test ! -e build && test ! -e notes.tmp && test \"$(git status --porcelain)\" = '' && echo B > b.txt","deps":["a"]}}"#
    );
    let c = format!(
        r#"{{"id":"c","run":"pwd -P > {s}/c && test -f b.txt && test -f a.txt && echo C > c.txt","deps":["b"]}}"#
    );
    let tasks = repo.tasks(&[&a, &b, &c]);
    let out = repo.swarm(&["run", path_str(&tasks), "-j", "1"]);
    assert_exit(&out, 0);
    for (file, text) in [("a.txt", "A\n"), ("b.txt", "B\n"), ("c.txt", "C\n")] {
        assert_eq!(show(&repo, "main", file), text);
    }
    assert!(!tree_paths(&repo, "main").contains(&"old.txt".to_owned()));
    // b and c each got the worktree the writer before them had left, under their own name.
    let run = run_id(&repo);
    let worktree_events: Vec<Value> = events(&repo, &run)
        .into_iter()
        .filter(|e| e["kind"] == "worktree")
        .collect();
    assert_eq!(worktree_events.len(), 3);
    assert!(worktree_events[0]["detail"]["reuses"].is_null());
    for e in &worktree_events[1..] {
        assert!(e["detail"]["reuses"].is_string(), "{e}");
        assert!(
            e["detail"]["path"]
                .as_str()
                .unwrap()
                .ends_with(e["task"].as_str().unwrap())
        );
    }
    // The checkout stayed where a's was made: what a build cached under its path holds.
    let read = |name: &str| std::fs::read_to_string(seen.join(name)).unwrap();
    let at = read("a");
    assert!(at.trim_end().ends_with("(checkouts)/a"), "{at}");
    assert_eq!(read("b"), at);
    assert_eq!(read("c"), at);
    // b's commit holds b's change only.
    let b_commit = repo.git(&[
        "log",
        "--no-merges",
        "--format=%H",
        "--grep=task b of run",
        "main",
    ]);
    let changed = repo.git(&["show", "--name-only", "--format=", b_commit.trim()]);
    assert_eq!(changed.trim(), "b.txt");
    assert_eq!(extra_worktrees(&repo), Vec::<String>::new());
    assert_eq!(swarm_branches(&repo), Vec::<String>::new());
}

#[test]
fn a_reader_after_a_writer_reads_the_merged_file() {
    let repo = TestRepo::new();
    let report = outside(&repo, "report.md");
    let tasks = repo.tasks(&[
        r#"{"id":"w","run":"echo 'hello from the writer' > greeting.txt"}"#,
        r#"{"id":"r","run":"cat greeting.txt","deps":["w"],"lane":"reducer","mode":"read"}"#,
    ]);

    let out = repo.swarm(&["run", path_str(&tasks), "--final-out", path_str(&report)]);

    assert_exit(&out, 0);
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.starts_with("hello from the writer\n"), "{text}");
}

#[test]
fn a_writer_after_a_writer_starts_from_its_merge() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[
        r#"{"id":"first","run":"echo one > one.txt"}"#,
        r#"{"id":"second","run":"cp one.txt two.txt","deps":["first"]}"#,
    ]);

    let out = repo.swarm(&["run", path_str(&tasks)]);

    assert_exit(&out, 0);
    assert_eq!(show(&repo, "main", "two.txt"), "one\n");
    assert_eq!(
        repo.git(&["log", "--merges", "--format=%s", "main"])
            .lines()
            .count(),
        2
    );
}

#[test]
fn deletions_and_new_directories_are_merged_and_ignored_files_are_not() {
    let repo = TestRepo::new();
    repo.write(".gitignore", "*.log\nbuild/\n");
    repo.commit_all("ignore");
    let tasks = repo.tasks(&[
        r#"{"id":"w","run":"rm README.md && mkdir -p a/b/c build && echo deep > a/b/c/d.txt && echo noise > debug.log && echo obj > build/out.o"}"#,
    ]);

    let out = repo.swarm(&["run", path_str(&tasks)]);

    assert_exit(&out, 0);
    let paths = tree_paths(&repo, "main");
    assert_eq!(paths, vec![".gitignore", "a/b/c/d.txt", "src/lib.rs"]);
    assert_eq!(repo.read("a/b/c/d.txt"), "deep\n");
    assert!(
        !repo.root.join("README.md").exists(),
        "the deletion did not reach the checkout"
    );
    assert!(!repo.root.join("debug.log").exists());
    assert!(!repo.root.join("build").exists());
}

#[test]
fn writers_changing_different_lines_of_one_file_are_both_merged() {
    let repo = TestRepo::new();
    repo.write("lines.txt", "one\ntwo\nthree\nfour\nfive\n");
    repo.commit_all("lines");
    let tasks = repo.tasks(&[
        r#"{"id":"top","run":"sed -i 's/^one$/ONE/' lines.txt"}"#,
        &serde_json::json!({
            "id": "bottom",
            "run": format!(
                "{}; sed -i 's/^five$/FIVE/' lines.txt",
                crate::after_event(&repo, "merged", "top")
            ),
        })
        .to_string(),
        r#"{"id":"elsewhere","run":"mkdir -p deep/er && echo x > deep/er/new.txt && rm README.md"}"#,
    ]);

    let out = repo.swarm(&["run", path_str(&tasks), "-j", "3"]);

    assert_exit(&out, 0);
    assert_eq!(repo.read("lines.txt"), "ONE\ntwo\nthree\nfour\nFIVE\n");
    assert_eq!(repo.read("deep/er/new.txt"), "x\n");
    assert!(!repo.root.join("README.md").exists());
    assert_eq!(
        repo.git(&["log", "--merges", "--format=%s"])
            .lines()
            .count(),
        3
    );
}

#[test]
fn a_writer_that_changes_nothing_is_done_without_a_branch() {
    let repo = TestRepo::new();
    let before = repo.state();
    let tasks = repo.tasks(&[r#"{"id":"w","run":"cat README.md"}"#]);

    let out = repo.swarm(&["run", path_str(&tasks)]);

    assert_exit(&out, 0);
    assert!(stderr(&out).contains("no changes"), "{}", stderr(&out));
    assert_eq!(tasks_of(&repo)["w"]["status"], "done");
    assert_eq!(swarm_branches(&repo), Vec::<String>::new());
    assert_eq!(extra_worktrees(&repo), Vec::<String>::new());
    assert_eq!(repo.state(), before);
}
