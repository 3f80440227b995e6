//! A swarm killed while writers run or merge: `resume` merges every writer exactly once.

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use super::{events, path_str, show, swarm_branches, tasks_of};
use crate::lifeline::Lifeline;
use crate::{TestRepo, assert_exit, extra_worktrees, outside, rev, run_id};

/// Ten writers of different lengths, holding `lifeline`, and a reducer reading all they wrote.
const CRASH_WRITERS: usize = 10;

fn crash_tasks(repo: &TestRepo, lifeline: &Lifeline) -> PathBuf {
    let sleeps = [
        "0.05", "0.4", "0.1", "0.6", "0.2", "0", "0.3", "0.05", "0.5", "0.15",
    ];
    let mut lines: Vec<String> = (0..CRASH_WRITERS)
        .map(|n| {
            serde_json::json!({
                "id": format!("w{n:02}"),
                "run": format!("{}; sleep {}; echo w{n:02} > f{n:02}.txt", lifeline.shell(), sleeps[n]),
            })
            .to_string()
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

/// Starts `args`, kills it with SIGKILL after `after` (the moment is the test's point); whether
/// it had ended by then.
fn kill_after(repo: &TestRepo, lifeline: &mut Lifeline, args: &[&str], after: Duration) -> bool {
    let mut child = repo
        .swarm_cmd()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("starting swarm");
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let (ended, end) = mpsc::channel();
    std::thread::spawn(move || ended.send(child.wait().unwrap()));
    if end.recv_timeout(after).is_ok() {
        return true;
    }
    // Until the thread has reaped swarm its pid is no other process's; if swarm ended just
    // now, the kill finds nothing.
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
    end.recv().unwrap();
    // Agents run in their own process groups and outlive a SIGKILL of swarm; they end.
    lifeline.ended();
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
        let mut lifeline = Lifeline::new(&outside(&repo, "lifelines"), "writers");
        let tasks = crash_tasks(&repo, &lifeline);
        let report = outside(&repo, "report.md");
        let run_args = [
            "run",
            path_str(&tasks),
            "-j",
            "4",
            "--final-out",
            path_str(&report),
        ];
        let mut ended = kill_after(
            &repo,
            &mut lifeline,
            &run_args,
            Duration::from_millis(first),
        );
        // Killed before the run was on the board: nothing ran, and the user starts it again.
        let unrecorded = !ended && !repo.swarm(&["status"]).status.success();
        if unrecorded {
            assert_exit(&repo.swarm(&run_args), 0);
            ended = true;
        }
        if !ended && let Some(ms) = second {
            ended = kill_after(&repo, &mut lifeline, &["resume"], Duration::from_millis(ms));
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
        &serde_json::json!({
            "id": "late",
            "run": format!(
                "{}; echo late > late.txt",
                crate::after_event(&repo, "merged", "early")
            ),
        })
        .to_string(),
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
