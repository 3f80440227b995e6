//! `swarm resume` and the options a run keeps in the board: boards older swarms wrote still
//! resume with their options, and a record a newer swarm wrote is refused, not misread.

use crate::{TestRepo, assert_exit, outside, status_json, stderr, stdout};

/// A finished run of one writer, left with its integration branch (`--land none`); its id.
fn finished_run(repo: &TestRepo) -> String {
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo w > w.txt"}"#]);
    let out = repo.swarm(&["run", tasks.to_str().unwrap(), "--land", "none"]);
    assert_exit(&out, 0);
    status_json(repo)["run"]["id"]
        .as_str()
        .expect("a run id")
        .to_owned()
}

/// Makes the run interrupted, with `options` as the stored text of its options.
fn store_options(repo: &TestRepo, run: &str, options: &str) {
    let db = rusqlite::Connection::open(repo.swarm_dir().join("board.db")).unwrap();
    db.execute(
        "UPDATE runs SET status = 'interrupted', exit_code = NULL, finished_at = NULL, options = ?2 WHERE id = ?1",
        [run, options],
    )
    .unwrap();
}

fn stored_options(repo: &TestRepo, run: &str) -> serde_json::Value {
    let db = rusqlite::Connection::open(repo.swarm_dir().join("board.db")).unwrap();
    let text: String = db
        .query_row("SELECT options FROM runs WHERE id = ?1", [run], |r| {
            r.get(0)
        })
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_run_whose_options_have_no_version_resumes_with_them() {
    let repo = TestRepo::new();
    let run = finished_run(&repo);
    let report = outside(&repo, "report.md");
    // The shape swarm stored before the record had a version.
    let old = serde_json::json!({
        "agent": null, "allow_program": [], "api_base": null, "base": null,
        "budget_tokens": null, "check": null, "final_out": report, "final_out_dir": null,
        "jobs": 2, "land": "branch", "max_task_tokens": null, "max_turns": null,
        "max_writers": null, "model": null, "on_escalate": null, "request_timeout": null,
        "resolve_conflicts": false, "retries": null, "stall_timeout": null,
        "task_timeout": null, "worktree_dir": null,
    });
    store_options(&repo, &run, &old.to_string());

    let out = repo.swarm(&["resume", &run]);
    assert_exit(&out, 0);
    // `land = branch` and `final_out` came from the stored options.
    assert!(
        stdout(&out).contains(&format!("The merged work is on `swarm/{run}`")),
        "{}",
        stdout(&out)
    );
    assert!(std::fs::read_to_string(&report).is_ok());
    let mut now = stored_options(&repo, &run);
    assert_eq!(now["version"], 1);
    now.as_object_mut().unwrap().remove("version");
    // As they were, with the options added since unset.
    let mut expected = old.clone();
    expected["endpoint_wait"] = serde_json::Value::Null;
    expected["fresh_retries"] = false.into();
    expected["allow_no_change"] = false.into();
    expected["kill_grace"] = serde_json::Value::Null;
    expected["include"] = serde_json::json!([]);
    expected["setup"] = serde_json::Value::Null;
    expected["gate"] = serde_json::Value::Null;
    expected["cache"] = serde_json::json!([]);
    expected["cache_key"] = serde_json::json!([]);
    expected["remote"] = serde_json::Value::Null;
    expected["report_format"] = serde_json::Value::Null;
    expected["web"] = false.into();
    expected["otel"] = false.into();
    for key in [
        "max_children",
        "max_depth",
        "max_spawned",
        "spawns_per_minute",
        "spawning",
        "transcript_cap",
        "confine",
        "confine_net",
        "mergiraf",
        "forecast",
        "forecast_interval",
        "plan_answer_tokens",
        "turn_answer_tokens",
        "price",
        "deliver",
        "deliver_remote",
        "forge",
        "pr_branch",
        "pr_title",
        "lessons",
        "candidates",
        "select",
    ] {
        expected[key] = serde_json::Value::Null;
    }
    for key in [
        "read_deny",
        "read_allow",
        "write_allow",
        "conflicts",
        "pr_labels",
        "pr_reviewers",
    ] {
        expected[key] = serde_json::json!([]);
    }
    expected["pr_draft"] = false.into();
    expected["no_memory"] = false.into();
    assert_eq!(now, expected);
    // `status --json` shows them so too, without the record's version.
    assert_eq!(status_json(&repo)["run"]["options"], expected);
}

#[test]
fn a_run_whose_options_a_newer_swarm_stored_is_refused_and_left_as_it_was() {
    let repo = TestRepo::new();
    let run = finished_run(&repo);
    let newer = r#"{"version":99,"jobs":2}"#;
    store_options(&repo, &run, newer);

    let out = repo.swarm(&["resume", &run]);
    assert_exit(&out, 1);
    let board = repo.swarm_dir().join("board.db");
    assert_eq!(
        stderr(&out),
        format!(
            "error: run {run} in the board {}\ncaused by: the stored options have version 99, newer than this swarm knows (1); use a newer swarm\n",
            board.display()
        )
    );
    assert_eq!(
        stored_options(&repo, &run),
        serde_json::json!({"version": 99, "jobs": 2})
    );
    assert_eq!(status_json(&repo)["run"]["status"], "interrupted");
    assert_eq!(status_json(&repo)["run"]["options"]["version"], 99);
}

#[test]
fn after_plan_only_there_is_nothing_to_resume() {
    let repo = TestRepo::new();
    let llm = crate::goal::good_server();
    let out = repo
        .swarm_cmd()
        .env("SWARM_API_BASE", llm.base_url())
        .args(["--goal", "Survey the repository", "--plan-only"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let before = repo.state();

    let out = repo.swarm(&["resume"]);

    assert_exit(&out, 2);
    assert_eq!(
        stderr(&out),
        "error: there is no unfinished run to resume\n\
         hint: every run of this repository finished; `swarm runs` lists them, and `swarm run \
         TASKS.jsonl` or `swarm --goal TEXT` starts a new one\n"
    );
    assert_eq!(repo.state(), before);
    let runs = repo.swarm(&["runs", "--json"]);
    let runs: serde_json::Value = serde_json::from_slice(&runs.stdout).unwrap();
    assert_eq!(runs[0]["status"], "finished", "{runs:#}");
    assert_eq!(runs[0]["reason"], "planned only", "{runs:#}");
}

/// The ids of the tasks the board has done in its newest run.
fn done_on_the_board(repo: &TestRepo) -> std::collections::BTreeSet<String> {
    let db = rusqlite::Connection::open(repo.swarm_dir().join("board.db")).unwrap();
    let mut stmt = db
        .prepare(
            "SELECT id FROM tasks WHERE status = 'done'
             AND run_id = (SELECT id FROM runs ORDER BY created_at DESC LIMIT 1)",
        )
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// A run of 1,000 tasks (0 to 4 deps each), each writing `start` and `end` lines with its id
/// to a log outside the repository, is killed with `kill -9` at three random moments (after a
/// random number of tasks ended; the second and third kill its resumes), then resumed to its
/// end. After each kill, every task that started had its deps done on the board: the board's
/// batched writes are committed before any dependent starts. And no task the board had done
/// at a kill starts again after it.
#[test]
fn a_thousand_task_run_killed_at_random_moments_loses_nothing_a_dependent_saw_and_runs_nothing_done_again()
 {
    const TASKS: usize = 1000;
    let repo = TestRepo::new();
    let log = outside(&repo, "ran.log");
    std::fs::write(&log, "").unwrap();
    // A fixed generator: the same graph and the same moments on every run of the test.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move |below: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        usize::try_from(state % below as u64).unwrap()
    };
    let mut deps: Vec<Vec<usize>> = Vec::new();
    let lines: Vec<String> = (0..TASKS)
        .map(|i| {
            let mut mine: Vec<usize> = (0..next(5).min(i)).map(|_| next(i)).collect();
            mine.sort_unstable();
            mine.dedup();
            let task = serde_json::json!({
                "id": format!("t{i}"),
                "mode": "read",
                "run": format!("echo start t{i} >> '{0}'; echo end t{i} >> '{0}'", log.display()),
                "deps": mine.iter().map(|d| format!("t{d}")).collect::<Vec<_>>(),
            });
            deps.push(mine);
            task.to_string()
        })
        .collect();
    let line_refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let tasks = repo.tasks(&line_refs);
    let read_log = || std::fs::read_to_string(&log).unwrap();
    let ended = |text: &str| text.lines().filter(|l| l.starts_with("end ")).count();
    let started = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.strip_prefix("start "))
            .map(str::to_owned)
            .collect()
    };

    // What the board had done at each kill, and where the log stood then.
    let mut kills: Vec<(std::collections::BTreeSet<String>, usize)> = Vec::new();
    let run = [
        "run",
        tasks.to_str().unwrap(),
        "-j",
        "4",
        "-q",
        "--land",
        "none",
    ];
    for kill in 0..3 {
        let args: &[&str] = if kill == 0 { &run } else { &["resume", "-q"] };
        let mut child = repo
            .swarm_cmd()
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let goal = ended(&read_log()) + 1 + next(TASKS / 4);
        while ended(&read_log()) < goal && child.try_wait().unwrap().is_none() {
            std::thread::yield_now();
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let done = done_on_the_board(&repo);
        let text = read_log();
        let context = format!("kill {kill}, {} tasks ended so far", ended(&text));
        // Every task that started (its deps' results in hand) had its deps done on record.
        for id in started(&text) {
            let i: usize = id[1..].parse().unwrap();
            for d in &deps[i] {
                assert!(
                    done.contains(&format!("t{d}")),
                    "{context}: {id} started after t{d} ended, and the board lost t{d}"
                );
            }
        }
        kills.push((done, text.len()));
    }
    let out = repo.swarm(&["resume", "-q"]);
    assert_exit(&out, 0);
    assert_eq!(
        done_on_the_board(&repo).len(),
        TASKS,
        "every task done at the end"
    );
    let text = read_log();
    for (k, (done, at)) in kills.iter().enumerate() {
        for id in started(&text[*at..]) {
            assert!(
                !done.contains(&id),
                "{id} was done at kill {k}, and ran again"
            );
        }
    }
}
