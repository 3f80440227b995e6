//! Writers: worktrees on their own branches, in-memory merges into the integration branch,
//! parking on conflicts, landing, resume after a crash, and `swarm gc`. Assertions compare
//! trees, branches, files and exit codes, not messages, where they can.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{TestRepo, assert_exit, extra_worktrees, outside, status_json, stderr, stdout};

/// The id of the repository's newest run.
fn run_id(repo: &TestRepo) -> String {
    let status = status_json(repo);
    status["run"]["id"].as_str().expect("a run id").to_owned()
}

/// Each task of the newest run: id → its record as `status --json` shows it.
fn tasks_of(repo: &TestRepo) -> BTreeMap<String, Value> {
    status_json(repo)["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| (t["id"].as_str().unwrap().to_owned(), t.clone()))
        .collect()
}

fn events(repo: &TestRepo, run: &str) -> Vec<Value> {
    let path = repo.swarm_dir().join("runs").join(run).join("events.jsonl");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Local branches under `swarm/`.
fn swarm_branches(repo: &TestRepo) -> Vec<String> {
    repo.git(&[
        "for-each-ref",
        "--format=%(refname:short)",
        "refs/heads/swarm/",
    ])
    .lines()
    .map(str::to_owned)
    .collect()
}

/// Worktrees git knows of, other than the user's checkout.
fn rev(repo: &TestRepo, name: &str) -> String {
    repo.git(&["rev-parse", name]).trim().to_owned()
}

/// Paths in a commit's tree.
fn tree_paths(repo: &TestRepo, rev: &str) -> Vec<String> {
    repo.git(&["ls-tree", "-r", "--name-only", rev])
        .lines()
        .map(str::to_owned)
        .collect()
}

fn show(repo: &TestRepo, rev: &str, path: &str) -> String {
    repo.git(&["show", &format!("{rev}:{path}")])
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

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
    let tasks = repo.tasks(&[
        // Leaves ignored output behind, deletes a file and adds one; its check (run after the
        // commit) dirties a tracked file.
        r#"{"id":"a","run":"echo A > a.txt && rm old.txt && mkdir -p build && echo junk > build/out && echo scratch > notes.tmp","check":"echo dirty >> src/lib.rs"}"#,
        // Fails unless it sees exactly the integration tip: a's change, none of a's leftovers.
        r#"{"id":"b","run":"test -f a.txt && test ! -e old.txt && test ! -e build && test ! -e notes.tmp && test \"$(git status --porcelain)\" = '' && echo B > b.txt","deps":["a"]}"#,
        r#"{"id":"c","run":"test -f b.txt && test -f a.txt && echo C > c.txt","deps":["b"]}"#,
    ]);
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

/// Two writers start from the same tip and change the same line; `b` finishes later, so `a`
/// merges and `b` is parked. `after` depends on `b`.
fn run_with_a_conflict(repo: &TestRepo, extra: &[&str]) -> (std::process::Output, String) {
    let tasks = repo.tasks(&[
        r#"{"id":"a","run":"printf 'pub fn one() -> u32 {\n    2\n}\n' > src/lib.rs"}"#,
        r#"{"id":"b","run":"sleep 0.5; printf 'pub fn one() -> u32 {\n    3\n}\n' > src/lib.rs"}"#,
        r#"{"id":"after","run":"echo after > after.txt","deps":["b"]}"#,
    ]);
    let mut args = vec!["run", path_str(&tasks), "-j", "2"];
    args.extend_from_slice(extra);
    let out = repo.swarm(&args);
    let run = run_id(repo);
    (out, run)
}

#[test]
fn conflicting_writer_is_parked_and_branch_kept() {
    let repo = TestRepo::new();
    let report = outside(&repo, "report.md");
    let hook_log = outside(&repo, "escalations.jsonl");
    let hook = format!("cat >> '{0}'; echo >> '{0}'", hook_log.display());

    let (out, run) = run_with_a_conflict(
        &repo,
        &["--final-out", path_str(&report), "--on-escalate", &hook],
    );

    assert_exit(&out, 3);
    let parked = format!("swarm/{run}-b");
    let tasks = tasks_of(&repo);
    assert_eq!(tasks["a"]["status"], "done");
    assert_eq!(tasks["b"]["status"], "parked");
    assert_eq!(tasks["after"]["status"], "skipped");
    // The parked branch and its commit are intact.
    let commit = rev(&repo, &parked);
    assert_eq!(
        show(&repo, &commit, "src/lib.rs"),
        "pub fn one() -> u32 {\n    3\n}\n"
    );
    assert_eq!(
        show(&repo, &format!("swarm/{run}"), "src/lib.rs"),
        "pub fn one() -> u32 {\n    2\n}\n"
    );
    assert!(!tree_paths(&repo, &format!("swarm/{run}")).contains(&"after.txt".to_owned()));
    // The report says what needs a human and how to resolve it.
    let text = std::fs::read_to_string(&report).unwrap();
    let attention = &text[text
        .find("Needs attention")
        .expect("a Needs attention section")..];
    assert!(attention.contains("`src/lib.rs`"), "{attention}");
    assert!(
        attention.contains(&format!("git merge {parked}")),
        "{attention}"
    );
    assert!(
        attention.contains(&format!("git diff swarm/{run}...{parked}")),
        "{attention}"
    );
    // The hook ran exactly once, with the details.
    let calls: Vec<Value> = std::fs::read_to_string(&hook_log)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("the hook got JSON"))
        .collect();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["task"], "b");
    assert_eq!(calls[0]["branch"], parked.as_str());
    assert_eq!(calls[0]["commit"], commit.as_str());
    assert_eq!(calls[0]["paths"], serde_json::json!(["src/lib.rs"]));
    let escalated = events(&repo, &run)
        .iter()
        .filter(|e| e["kind"] == "escalated")
        .count();
    assert_eq!(escalated, 1);
}

#[test]
fn dirty_checkout_is_left_alone_and_the_run_stays_on_its_branch() {
    let repo = TestRepo::new();
    repo.write("README.md", "# demo\nmy unsaved edit\n");
    repo.write("notes.txt", "not tracked\n");
    let before = repo.state();
    let main_before = rev(&repo, "main");
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo new > new.txt"}"#]);

    let out = repo.swarm(&["run", path_str(&tasks)]);

    assert_exit(&out, 0);
    let run = run_id(&repo);
    assert_eq!(repo.state(), before, "the user's checkout changed");
    assert_eq!(rev(&repo, "main"), main_before, "the user's branch moved");
    assert!(
        stdout(&out).contains(&format!("git merge --ff-only swarm/{run}")),
        "{}",
        stdout(&out)
    );
    assert_eq!(show(&repo, &format!("swarm/{run}"), "new.txt"), "new\n");
}

#[test]
fn an_untracked_file_out_of_the_way_does_not_stop_landing_and_is_kept() {
    let repo = TestRepo::new();
    repo.write("scratch.txt", "mine\n");
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo new > new.txt"}"#]);

    let out = repo.swarm(&["run", path_str(&tasks)]);

    assert_exit(&out, 0);
    assert_eq!(repo.read("scratch.txt"), "mine\n");
    assert_eq!(repo.read("new.txt"), "new\n");
    assert_eq!(repo.git(&["status", "--porcelain"]), "?? scratch.txt\n");
}

#[test]
fn an_untracked_file_the_landing_would_overwrite_keeps_the_run_on_its_branch() {
    let repo = TestRepo::new();
    repo.write("new.txt", "mine\n");
    let before = repo.state();
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo theirs > new.txt"}"#]);

    let out = repo.swarm(&["run", path_str(&tasks)]);

    assert_exit(&out, 0);
    let run = run_id(&repo);
    assert_eq!(repo.state(), before, "the user's checkout changed");
    assert!(
        stdout(&out).contains(&format!("git merge --ff-only swarm/{run}")),
        "{}",
        stdout(&out)
    );
    assert_eq!(show(&repo, &format!("swarm/{run}"), "new.txt"), "theirs\n");
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

/// Ten writers of different lengths and a reducer reading all they wrote.
const CRASH_WRITERS: usize = 10;

fn crash_tasks(repo: &TestRepo) -> PathBuf {
    let sleeps = [
        "0.05", "0.4", "0.1", "0.6", "0.2", "0", "0.3", "0.05", "0.5", "0.15",
    ];
    let mut lines: Vec<String> = (0..CRASH_WRITERS)
        .map(|n| {
            format!(
                r#"{{"id":"w{n:02}","run":"sleep {}; echo w{n:02} > f{n:02}.txt"}}"#,
                sleeps[n]
            )
        })
        .collect();
    let deps: Vec<String> = (0..CRASH_WRITERS).map(|n| format!("\"w{n:02}\"")).collect();
    lines.push(format!(
        r#"{{"id":"sum","run":"cat f*.txt","deps":[{}],"lane":"reducer","mode":"read"}}"#,
        deps.join(",")
    ));
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    repo.tasks(&lines)
}

/// Starts `args`, kills it with SIGKILL after `after`; whether it had ended by then.
fn kill_after(repo: &TestRepo, args: &[&str], after: Duration) -> bool {
    let mut child = repo
        .swarm_cmd()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("starting swarm");
    let start = Instant::now();
    while start.elapsed() < after {
        if child.try_wait().unwrap().is_some() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // Agents run in their own process groups and outlive a SIGKILL of swarm; let them end.
    std::thread::sleep(Duration::from_millis(700));
    false
}

#[test]
fn kill_9_at_any_moment_then_resume_merges_every_writer_exactly_once() {
    // (kill the run after, kill the first resume after)
    let plans: [(u64, Option<u64>); 5] = [
        (40, None),
        (150, Some(60)),
        (300, None),
        (450, Some(120)),
        (700, Some(30)),
    ];
    for (round, (first, second)) in plans.into_iter().enumerate() {
        let repo = TestRepo::new();
        let base = rev(&repo, "main");
        let tasks = crash_tasks(&repo);
        let report = outside(&repo, "report.md");
        let run_args = [
            "run",
            path_str(&tasks),
            "-j",
            "4",
            "--final-out",
            path_str(&report),
        ];
        let mut ended = kill_after(&repo, &run_args, Duration::from_millis(first));
        // Killed before the run was on the board: nothing ran, and the user starts it again.
        let unrecorded = !ended && !repo.swarm(&["status"]).status.success();
        if unrecorded {
            assert_exit(&repo.swarm(&run_args), 0);
            ended = true;
        }
        if !ended && let Some(ms) = second {
            ended = kill_after(&repo, &["resume"], Duration::from_millis(ms));
        }
        if !ended {
            let mut last = None;
            for _ in 0..5 {
                let out = repo.swarm(&["resume"]);
                let code = out.status.code();
                last = Some(out);
                if code != Some(75) {
                    break;
                }
            }
            assert_exit(last.as_ref().unwrap(), 0);
        }

        let context = format!("round {round} (kill after {first} ms, then {second:?})");
        let merges = repo.git(&["log", "--merges", "--format=%s", "main"]);
        assert_eq!(merges.lines().count(), CRASH_WRITERS, "{context}\n{merges}");
        let commits = repo.git(&[
            "log",
            "--no-merges",
            "--format=%s",
            &format!("{base}..main"),
        ]);
        for n in 0..CRASH_WRITERS {
            let id = format!("w{n:02}");
            let times = merges
                .lines()
                .filter(|s| s.contains(&format!("task {id} of run")))
                .count();
            assert_eq!(times, 1, "{context}: {id} merged {times} times\n{merges}");
            let own = commits.lines().filter(|s| *s == id).count();
            assert_eq!(
                own, 1,
                "{context}: {id} has {own} commits on main\n{commits}"
            );
            assert_eq!(
                show(&repo, "main", &format!("f{n:02}.txt")),
                format!("{id}\n"),
                "{context}"
            );
        }
        assert_eq!(
            commits.lines().count(),
            CRASH_WRITERS,
            "{context}\n{commits}"
        );
        let text = std::fs::read_to_string(&report).unwrap();
        let want: String = (0..CRASH_WRITERS)
            .flat_map(|n| [format!("w{n:02}"), "\n".into()])
            .collect();
        assert!(text.starts_with(&want), "{context}\n{text}");
        assert_eq!(repo.git(&["status", "--porcelain"]), "", "{context}");
        // At most an empty integration branch of a run killed before it was recorded.
        let left = swarm_branches(&repo);
        assert!(left.len() <= usize::from(unrecorded), "{context}: {left:?}");
        assert!(
            left.iter().all(|b| rev(&repo, b) == base),
            "{context}: {left:?}"
        );
        assert_eq!(extra_worktrees(&repo), Vec::<String>::new(), "{context}");
    }
}

/// Puts a finished run back into the state a `kill -9` leaves between a writer's commit and the
/// record of its merge: the run running, `committed` committed, `pending` not started. The
/// window is microseconds wide, too narrow to hit by timing a kill.
fn rewind_board(repo: &TestRepo, run: &str, tip: &str, committed: &[&str], pending: &[&str]) {
    let db = rusqlite::Connection::open(repo.swarm_dir().join("board.db")).unwrap();
    db.execute(
        "UPDATE runs SET status = 'running', exit_code = NULL, finished_at = NULL, tip = ?2 WHERE id = ?1",
        [run, tip],
    )
    .unwrap();
    for id in committed {
        db.execute(
            "UPDATE tasks SET status = 'committed' WHERE run_id = ?1 AND id = ?2",
            [run, id],
        )
        .unwrap();
    }
    for id in pending {
        db.execute(
            "UPDATE tasks SET status = 'pending', result = NULL, attempts = 0 WHERE run_id = ?1 AND id = ?2",
            [run, id],
        )
        .unwrap();
    }
}

#[test]
fn resume_after_a_crash_between_commit_and_merge_merges_each_writer_once() {
    let repo = TestRepo::new();
    let base = rev(&repo, "main");
    let report = outside(&repo, "report.md");
    let tasks = repo.tasks(&[
        r#"{"id":"early","run":"echo early > early.txt"}"#,
        r#"{"id":"late","run":"sleep 0.3; echo late > late.txt"}"#,
        r#"{"id":"sum","run":"cat early.txt late.txt","deps":["early","late"],"lane":"reducer","mode":"read"}"#,
    ]);
    let out = repo.swarm(&["run", path_str(&tasks), "--land", "none"]);
    assert_exit(&out, 0);
    let run = run_id(&repo);
    let integration = format!("swarm/{run}");
    // `early` merged and recorded as committed only; `late` committed but not merged yet.
    let late_merge = events(&repo, &run)
        .into_iter()
        .find(|e| e["kind"] == "merged" && e["task"] == "late")
        .expect("late merged");
    let before_late = late_merge["detail"]["before"].as_str().unwrap();
    repo.git(&[
        "update-ref",
        &format!("refs/heads/{integration}"),
        before_late,
    ]);
    // The board's tip is the base: `early`'s merge moved the ref, and the kill came before
    // its record.
    rewind_board(&repo, &run, &base, &["early", "late"], &["sum"]);
    // A kill while the ref moved also leaves its lock file.
    let lock = repo
        .root
        .join(".git/refs/heads")
        .join(format!("{integration}.lock"));
    std::fs::write(&lock, before_late).unwrap();

    let out = repo.swarm(&["resume", "--final-out", path_str(&report), "--land", "auto"]);

    assert_exit(&out, 0);
    let merges = repo.git(&["log", "--merges", "--format=%s", "main"]);
    assert_eq!(merges.lines().count(), 2, "{merges}");
    for id in ["early", "late"] {
        assert_eq!(
            merges
                .lines()
                .filter(|s| s.contains(&format!("task {id} of run")))
                .count(),
            1,
            "{merges}"
        );
        assert_eq!(show(&repo, "main", &format!("{id}.txt")), format!("{id}\n"));
    }
    let commits = repo.git(&[
        "log",
        "--no-merges",
        "--format=%s",
        &format!("{base}..main"),
    ]);
    assert_eq!(
        commits.lines().collect::<Vec<_>>(),
        ["late", "early"],
        "{commits}"
    );
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.starts_with("early\nlate\n"), "{text}");
    let tasks = tasks_of(&repo);
    assert!(tasks.values().all(|t| t["status"] == "done"), "{tasks:?}");
    assert_eq!(swarm_branches(&repo), Vec::<String>::new());
}

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

#[test]
fn a_writer_that_writes_into_the_users_checkout_fails_and_is_not_merged() {
    let repo = TestRepo::new();
    let main_before = rev(&repo, "main");
    let stolen = repo.root.join("stolen.txt");
    let line = serde_json::json!({
        "id": "w",
        "run": format!("echo own > own.txt; echo x > '{}'", stolen.display()),
    })
    .to_string();
    let tasks = repo.tasks(&[&line]);

    let out = repo.swarm(&["run", path_str(&tasks), "--retries", "0"]);

    assert_exit(&out, 1);
    let w = &tasks_of(&repo)["w"];
    assert_eq!(w["status"], "failed");
    let error = w["error"].as_str().unwrap();
    assert!(
        error.contains("changed your checkout") && error.contains("stolen.txt"),
        "{error}"
    );
    assert!(
        stdout(&out).contains("changed your checkout"),
        "{}",
        stdout(&out)
    );
    assert_eq!(rev(&repo, "main"), main_before);
    let everywhere = repo.git(&["log", "--all", "--format=%H", "--", "own.txt", "stolen.txt"]);
    assert_eq!(everywhere, "", "the writer's work reached a branch");
    // swarm never deletes anything in the user's checkout, not even what a stray agent wrote.
    assert_eq!(std::fs::read_to_string(&stolen).unwrap(), "x\n");
}

#[test]
fn gc_dry_run_lists_a_parked_worktree_and_gc_removes_it_but_keeps_the_branch() {
    let repo = TestRepo::new();
    let (out, run) = run_with_a_conflict(&repo, &[]);
    assert_exit(&out, 3);
    let parked = format!("swarm/{run}-b");
    let parked_commit = rev(&repo, &parked);
    let worktrees = extra_worktrees(&repo);
    assert_eq!(worktrees.len(), 1, "{worktrees:?}");
    assert!(worktrees[0].ends_with(&format!("{run}/b")), "{worktrees:?}");
    let worktree = PathBuf::from(&worktrees[0]);
    let branches = swarm_branches(&repo);

    let dry = repo.swarm(&["gc", "--dry-run"]);

    assert_exit(&dry, 0);
    assert!(
        stdout(&dry).contains(&format!("{run}/b")),
        "{}",
        stdout(&dry)
    );
    assert!(
        worktree.join("src/lib.rs").exists(),
        "--dry-run deleted the worktree"
    );
    assert_eq!(extra_worktrees(&repo), worktrees);
    assert_eq!(swarm_branches(&repo), branches);

    let gc = repo.swarm(&["gc"]);

    assert_exit(&gc, 0);
    assert!(!worktree.exists(), "gc left the parked worktree");
    assert_eq!(extra_worktrees(&repo), Vec::<String>::new());
    assert_eq!(
        rev(&repo, &parked),
        parked_commit,
        "gc deleted a branch with unmerged work"
    );
    assert_eq!(
        show(&repo, &parked, "src/lib.rs"),
        "pub fn one() -> u32 {\n    3\n}\n"
    );
}

#[test]
fn land_branch_leaves_the_integration_branch_and_the_users_branch_alone() {
    let repo = TestRepo::new();
    let before = repo.state();
    let main_before = rev(&repo, "main");
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo new > new.txt"}"#]);

    let out = repo.swarm(&["run", path_str(&tasks), "--land", "branch"]);

    assert_exit(&out, 0);
    let run = run_id(&repo);
    assert_eq!(rev(&repo, "main"), main_before);
    assert_eq!(repo.state(), before);
    assert_eq!(show(&repo, &format!("swarm/{run}"), "new.txt"), "new\n");
    assert!(
        stdout(&out).contains(&format!("git merge --ff-only swarm/{run}")),
        "{}",
        stdout(&out)
    );
    assert_eq!(swarm_branches(&repo), vec![format!("swarm/{run}")]);
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

/// Two writers changing the same line of `shared.txt`; the second one finishes last.
fn same_line_writers(repo: &TestRepo) -> PathBuf {
    repo.write("shared.txt", "top\nshared\nbottom\n");
    repo.commit_all("add shared.txt");
    repo.tasks(&[
        r#"{"id":"first","run":"sed -i 's/shared/from first/' shared.txt"}"#,
        r#"{"id":"second","run":"sleep 0.5; sed -i 's/shared/from second/' shared.txt"}"#,
    ])
}

#[test]
fn a_conflict_the_resolver_settles_is_merged_once_and_nothing_is_parked() {
    let repo = TestRepo::new();
    let tasks = same_line_writers(&repo);
    // The "agent" keeps both sides: it drops the marker lines.
    let agent = "exec:sed -i '/^<<<<<<< /d; /^=======$/d; /^>>>>>>> /d' shared.txt";

    let out = repo.swarm(&[
        "run",
        path_str(&tasks),
        "--resolve-conflicts",
        "--agent",
        agent,
    ]);

    assert_exit(&out, 0);
    assert_eq!(
        repo.read("shared.txt"),
        "top\nfrom first\nfrom second\nbottom\n"
    );
    assert!(
        swarm_branches(&repo).is_empty(),
        "{:?}",
        swarm_branches(&repo)
    );
    assert!(
        extra_worktrees(&repo).is_empty(),
        "{:?}",
        extra_worktrees(&repo)
    );
    let merges = repo.git(&["log", "--merges", "--format=%s"]);
    // One merge per task: the resolver's merge commit is the one for `second`.
    assert_eq!(
        merges
            .lines()
            .filter(|l| l.starts_with("Merge swarm task second"))
            .count(),
        1,
        "{merges}"
    );
    assert_eq!(merges.lines().count(), 2, "{merges}");
}

#[test]
fn a_resolver_that_leaves_markers_parks_the_writer_with_the_reason() {
    let repo = TestRepo::new();
    let tasks = same_line_writers(&repo);
    let report = outside(&repo, "report.md");

    let out = repo.swarm(&[
        "run",
        path_str(&tasks),
        "--resolve-conflicts",
        "--agent",
        "exec:true",
        "--final-out",
        path_str(&report),
    ]);

    assert_exit(&out, 3);
    let run = run_id(&repo);
    assert_eq!(
        show(&repo, &format!("swarm/{run}-second"), "shared.txt"),
        "top\nfrom second\nbottom\n"
    );
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(
        text.contains("conflict markers are left in shared.txt"),
        "{text}"
    );
    assert_eq!(repo.read("shared.txt"), "top\nfrom first\nbottom\n");
}

#[test]
fn writers_changing_different_lines_of_one_file_are_both_merged() {
    let repo = TestRepo::new();
    repo.write("lines.txt", "one\ntwo\nthree\nfour\nfive\n");
    repo.commit_all("lines");
    let tasks = repo.tasks(&[
        r#"{"id":"top","run":"sed -i 's/^one$/ONE/' lines.txt"}"#,
        r#"{"id":"bottom","run":"sleep 0.3; sed -i 's/^five$/FIVE/' lines.txt"}"#,
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
fn gc_deletes_only_the_branches_swarm_made() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo w > w.txt"}"#]);
    let out = repo.swarm(&["run", path_str(&tasks), "--land", "branch"]);
    assert_exit(&out, 0);
    let run = run_id(&repo);
    let integration = format!("swarm/{run}");
    repo.git(&["merge", "-q", "--ff-only", &integration]);
    // Names of the user's own under swarm/, every commit of them held by main.
    for mine in ["swarm/mine", &format!("swarm/{run}-not-a-task")] {
        repo.git(&["branch", mine, "main"]);
    }

    let out = repo.swarm(&["gc"]);

    assert_exit(&out, 0);
    assert_eq!(
        swarm_branches(&repo),
        [format!("swarm/{run}-not-a-task"), "swarm/mine".to_owned()],
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("keep branch swarm/mine (not swarm's)"),
        "{}",
        stdout(&out)
    );
}
