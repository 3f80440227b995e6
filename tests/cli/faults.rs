//! Faults of the environment and of swarm itself: whatever happens, a run ends in one of the
//! documented exit codes, with nothing lost.

use std::process::Stdio;

use crate::fake_llm::{FakeLlm, Reply};
use crate::gate::Gate;
use crate::{TestRepo, assert_exit, status_json, stderr, stdout, tasks_with_status};

/// A loopback port nothing listens on (until a test starts a server there).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Why `swarm runs` says the newest run stands where it stands, in its JSON and its text.
fn newest_reason(repo: &TestRepo) -> String {
    let out = repo.swarm(&["runs", "--json"]);
    assert_exit(&out, 0);
    let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let reason = runs[0]["reason"].as_str().unwrap_or_default().to_owned();
    // The table cuts a long one short.
    let text = repo.swarm(&["runs"]);
    let newest = stdout(&text).lines().nth(1).unwrap_or_default().to_owned();
    let shown: String = reason.chars().take(30).collect();
    assert!(newest.contains(&shown), "{newest}");
    reason
}

/// A task file of `n` prompt readers `t0…`.
fn prompt_readers(repo: &TestRepo, n: usize) -> std::path::PathBuf {
    let lines: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"id":"t{i}","prompt":"Say {i}","mode":"read"}}"#))
        .collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    repo.tasks(&refs)
}

/// Runs `args` with a stdout whose reader has already gone away.
fn with_stdout_closed(repo: &TestRepo, args: &[&str]) -> std::process::Output {
    let mut child = repo
        .swarm_cmd()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

#[test]
fn a_reader_of_stdout_that_went_away_ends_a_command_quietly() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[
        r#"{"id":"a","run":"echo a"}"#,
        r#"{"id":"b","run":"echo b","deps":["a"]}"#,
    ]);
    // The run's summary goes nowhere; the run still ends as it ended.
    let run = with_stdout_closed(&repo, &["run", tasks.to_str().unwrap()]);
    assert_exit(&run, 0);
    assert!(!stderr(&run).contains("error:"), "{}", stderr(&run));
    for args in [&["logs"][..], &["status"], &["status", "--json"]] {
        let out = with_stdout_closed(&repo, args);
        assert_exit(&out, 0);
        assert_eq!(stderr(&out), "", "swarm {args:?}");
    }
}

#[test]
fn a_failed_run_whose_summary_reader_went_away_still_exits_1() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[r#"{"id":"a","run":"exit 3"}"#]);
    let run = with_stdout_closed(&repo, &["run", "--retries", "0", tasks.to_str().unwrap()]);
    assert_exit(&run, 1);
    assert!(!stderr(&run).contains("error:"), "{}", stderr(&run));
}

#[test]
fn swarms_adding_to_the_queue_of_a_fresh_board_at_once_lose_no_goal() {
    for round in 0..50 {
        let repo = TestRepo::new();
        let adds: Vec<_> = (0..8)
            .map(|i| repo.spawn(&["queue", "add", &format!("goal {i}")]))
            .collect();
        for add in adds {
            let out = add.wait_with_output().unwrap();
            assert_exit(&out, 0);
        }
        let listed = repo.swarm(&["queue", "list", "--json"]);
        assert_exit(&listed, 0);
        let items: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
        assert_eq!(
            items.as_array().map(Vec::len),
            Some(8),
            "round {round}: {items}"
        );
    }
}

/// A repository with one finished run on its board.
fn repo_with_a_run() -> TestRepo {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[r#"{"id":"a","run":"echo a"}"#]);
    assert_exit(&repo.swarm(&["run", tasks.to_str().unwrap()]), 0);
    repo
}

#[test]
fn a_damaged_board_is_refused_with_its_path_and_left_as_it_is() {
    let repo = repo_with_a_run();
    let board = repo.swarm_dir().join("board.db");
    for side in ["board.db-wal", "board.db-shm"] {
        let _ = std::fs::remove_file(repo.swarm_dir().join(side));
    }
    let garbage = b"this is no database, only text that took its place\n".repeat(100);
    std::fs::write(&board, &garbage).unwrap();
    for args in [&["status"][..], &["queue", "list"]] {
        let out = repo.swarm(args);
        assert_exit(&out, 1);
        let err = stderr(&out);
        assert!(err.contains("is damaged"), "{err}");
        assert!(err.contains(&board.display().to_string()), "{err}");
        assert!(err.contains(".damaged"), "{err}");
    }
    assert_eq!(std::fs::read(&board).unwrap(), garbage);
}

#[test]
fn a_board_damaged_in_its_middle_is_named_with_its_path_and_advice_when_it_is_read() {
    let repo = TestRepo::new();
    // Enough runs that the tasks' table spans pages past the schema's.
    let lines: Vec<String> = (0..200)
        .map(|k| format!(r#"{{"id":"t{k}","run":"echo {k}","mode":"read"}}"#))
        .collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let tasks = repo.tasks(&refs);
    assert_exit(&repo.swarm(&["run", tasks.to_str().unwrap(), "-q"]), 0);
    let board = repo.swarm_dir().join("board.db");
    // Folded back into the board, then every page but the first (the header and schema)
    // overwritten.
    let vacuum = repo.swarm(&["status", "--json"]);
    assert_exit(&vacuum, 0);
    for side in ["board.db-wal", "board.db-shm"] {
        let _ = std::fs::remove_file(repo.swarm_dir().join(side));
    }
    let mut bytes = std::fs::read(&board).unwrap();
    let page = usize::from(u16::from_be_bytes([bytes[16], bytes[17]]));
    assert!(bytes.len() > 4 * page, "{} bytes", bytes.len());
    for b in &mut bytes[2 * page..] {
        *b = 0x5a;
    }
    std::fs::write(&board, &bytes).unwrap();
    let out = repo.swarm(&["status"]);
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains("malformed") || err.contains("is damaged"),
        "{err}"
    );
    assert!(err.contains(&board.display().to_string()), "{err}");
    assert!(
        err.contains(&format!("mv {0} {0}.damaged", board.display())),
        "{err}"
    );
    assert_eq!(std::fs::read(&board).unwrap(), bytes);
}

#[test]
fn an_emptied_board_with_runs_on_record_is_refused_not_recreated() {
    let repo = repo_with_a_run();
    let board = repo.swarm_dir().join("board.db");
    for side in ["board.db-wal", "board.db-shm"] {
        let _ = std::fs::remove_file(repo.swarm_dir().join(side));
    }
    std::fs::write(&board, b"").unwrap();
    let out = repo.swarm(&["status"]);
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(err.contains("is empty, but runs are on record"), "{err}");
    assert!(err.contains(&board.display().to_string()), "{err}");
    assert_eq!(std::fs::metadata(&board).unwrap().len(), 0);
}

#[test]
fn a_refused_key_stops_the_run_at_once_with_exit_2_and_resume_finishes_it() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[
        r#"{"id":"a","prompt":"Say a","mode":"read"}"#,
        r#"{"id":"b","prompt":"Say b","mode":"read"}"#,
        r#"{"id":"c","prompt":"Say c","mode":"read","deps":["a","b"]}"#,
    ]);
    // The endpoint takes one key only.
    let llm = FakeLlm::start(|req, _| {
        if req.header("authorization") == Some("Bearer sk-right") {
            Reply::text("done")
        } else {
            Reply::error(401, "invalid api key")
        }
    });
    let swarm = |key: &str, args: &[&str]| {
        repo.swarm_cmd()
            .env("SWARM_API_BASE", llm.base_url())
            .env("SWARM_API_KEY", key)
            .args(args)
            .output()
            .unwrap()
    };
    let out = swarm(
        "sk-wrong",
        &["run", "-j", "1", "--retries", "3", tasks.to_str().unwrap()],
    );
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("check SWARM_API_KEY"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).contains("swarm resume"), "{}", stdout(&out));
    // One request, not one per task and retry.
    assert_eq!(llm.requests().len(), 1);
    let status = status_json(&repo);
    assert_eq!(status["run"]["status"], "interrupted");
    assert_eq!(newest_reason(&repo), "the model endpoint refused the key");

    let resumed = swarm("sk-right", &["resume"]);
    assert_exit(&resumed, 0);
    let status = status_json(&repo);
    assert_eq!(tasks_with_status(&status, "done").len(), 3, "{status:#}");
    // The refused attempt spent no retry.
    for t in status["tasks"].as_array().unwrap() {
        assert_eq!(t["failures"], 0, "{t:#}");
    }
}

#[test]
fn durations_past_the_calendar_are_input_errors_not_panics() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[r#"{"id":"a","run":"echo a"}"#]);
    for flag in ["99999999999999999999h", "1e300", "366d"] {
        let out = repo.swarm(&["run", "--task-timeout", flag, tasks.to_str().unwrap()]);
        assert_exit(&out, 2);
        assert!(
            stderr(&out).contains("bad duration"),
            "{flag}: {}",
            stderr(&out)
        );
    }
    for timeout in ["1e300", "1e19"] {
        let tasks = repo.tasks(&[&format!(
            r#"{{"id":"a","run":"echo a","timeout":{timeout}}}"#
        )]);
        let out = repo.swarm(&["run", tasks.to_str().unwrap()]);
        assert_exit(&out, 2);
        assert!(stderr(&out).contains(":1: task \"a\""), "{}", stderr(&out));
    }
    assert!(!repo.swarm_dir().join("runs").exists(), "a run was made");
}

#[test]
fn an_endpoint_that_never_answers_stops_the_run_resumably_instead_of_failing_every_task() {
    let repo = TestRepo::new();
    // A port nothing listens on: every connection is refused.
    let port = free_port();
    let tasks = prompt_readers(&repo, 6);
    let out = repo
        .swarm_cmd()
        .env("SWARM_API_BASE", format!("http://127.0.0.1:{port}/v1"))
        .env("SWARM_API_KEY", "sk-any")
        .args(["run", "-j", "2", "--retries", "3", "--endpoint-wait", "2s"])
        .arg(&tasks)
        .output()
        .unwrap();
    assert_exit(&out, 75);
    let said = stdout(&out);
    assert!(
        said.contains("Stopped: the model endpoint has not answered for"),
        "{said}"
    );
    assert!(
        stderr(&out).contains("no new attempts while swarm checks the model endpoint"),
        "{}",
        stderr(&out)
    );
    let status = status_json(&repo);
    assert_eq!(status["run"]["status"], "interrupted");
    for t in status["tasks"].as_array().unwrap() {
        assert_eq!(t["failures"], 0, "{t:#}");
        assert_ne!(t["status"], "failed", "{t:#}");
    }
    let reason = newest_reason(&repo);
    assert!(
        reason.starts_with("the model endpoint has not answered for "),
        "{reason}"
    );

    // Told not to wait, the run stops at the first attempt that meets it.
    let impatient = TestRepo::new();
    let tasks = prompt_readers(&impatient, 6);
    let out = impatient
        .swarm_cmd()
        .env("SWARM_API_BASE", format!("http://127.0.0.1:{port}/v1"))
        .env("SWARM_API_KEY", "sk-any")
        .args(["run", "-j", "2", "--endpoint-wait", "0"])
        .arg(&tasks)
        .output()
        .unwrap();
    assert_exit(&out, 75);
    assert!(
        stdout(&out).contains("Stopped: the model endpoint does not answer"),
        "{}",
        stdout(&out)
    );
    assert!(
        !stderr(&out).contains("checks the model endpoint"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        newest_reason(&impatient),
        "the model endpoint did not answer"
    );
}

#[test]
fn too_few_file_descriptors_stop_the_run_resumably_and_resume_finishes_it() {
    let repo = TestRepo::new();
    let tasks: Vec<String> = (0..8)
        .map(|i| format!(r#"{{"id":"t{i}","run":"echo {i}","mode":"read"}}"#))
        .collect();
    let lines: Vec<&str> = tasks.iter().map(String::as_str).collect();
    let tasks = repo.tasks(&lines);
    let swarm = env!("CARGO_BIN_EXE_swarm");
    let out = repo
        .command("sh")
        .args([
            "-c",
            &format!("ulimit -n 24; exec {swarm} run -j 8 {}", tasks.display()),
        ])
        .output()
        .unwrap();
    assert_exit(&out, 75);
    assert!(
        stderr(&out).contains("Too many open files"),
        "{}",
        stderr(&out)
    );
    let resumed = repo.swarm(&["resume"]);
    assert_exit(&resumed, 0);
    let status = status_json(&repo);
    assert_eq!(tasks_with_status(&status, "done").len(), 8, "{status:#}");
    // No failure is counted against a task: not even where libgit2 reports a read cut short
    // by the limit as another error (a reference that "cannot be peeled").
    for t in status["tasks"].as_array().unwrap() {
        assert_eq!(t["failures"], 0, "{t:#}");
    }
}

#[test]
fn a_model_request_in_flight_ends_with_its_attempts_timeout() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[r#"{"id":"a","prompt":"Say a","mode":"read"}"#]);
    let llm = FakeLlm::start(|_, _| Reply::Hang);
    let child = repo
        .swarm_cmd()
        .env("SWARM_API_BASE", llm.base_url())
        .env("SWARM_API_KEY", "sk-any")
        .args([
            "run",
            "--task-timeout",
            "1s",
            "--request-timeout",
            "10m",
            "--retries",
            "0",
            tasks.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The attempt's timeout, not the request's own ten minutes, ends it (a swarm that waited
    // for the request would never get here).
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 1);
    let status = status_json(&repo);
    let error = status["tasks"][0]["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(error, "timed out after 1.0s");
}

#[test]
fn the_users_checkout_changing_under_a_task_stops_the_run_and_resume_reruns_it_unspent() {
    let repo = TestRepo::new();
    let gate = Gate::new(&crate::outside(&repo, "gates"), "w");
    let line = serde_json::json!({
        "id": "w",
        "run": format!("echo work > w.txt && {}", gate.shell()),
    })
    .to_string();
    let tasks = repo.tasks(&[&line]);
    let mut swarm = repo.spawn(&["run", "--retries", "0", tasks.to_str().unwrap()]);
    gate.reached(&mut swarm);
    // The user goes on working while the task runs.
    repo.write("mine.txt", "the user's own\n");
    gate.release();
    let out = swarm.wait_with_output().unwrap();

    assert_exit(&out, 75);
    let said = stdout(&out);
    assert!(
        said.contains("changed while an attempt ran (mine.txt)"),
        "{said}"
    );
    assert!(!repo.root.join("w.txt").exists(), "the attempt was merged");
    let status = status_json(&repo);
    let w = &status["tasks"][0];
    assert_eq!(w["status"], "interrupted", "{status:#}");
    assert_eq!(w["failures"], 0, "{status:#}");

    // Done with the checkout, the user resumes: the task runs again, with no retry spent
    // (it had none), and lands beside the user's file.
    let mut resume = repo.spawn(&["resume"]);
    gate.reached(&mut resume);
    gate.release();
    let out = resume.wait_with_output().unwrap();
    assert_exit(&out, 0);
    assert_eq!(repo.read("w.txt"), "work\n");
    assert_eq!(repo.read("mine.txt"), "the user's own\n");
}

#[test]
#[cfg_attr(
    not(can_mount_tmpfs),
    ignore = "needs root: mounting a tmpfs needs CAP_SYS_ADMIN, not held here; run the tests as root"
)]
fn a_disk_that_fills_under_a_writer_stops_the_run_and_resume_finishes_it_unspent() {
    let repo = TestRepo::new();
    let mount = repo.cache.parent().unwrap().join("small");
    let disk = crate::SmallDisk::mount(&mount, "2m");
    // The writer's checkout is on the small disk; its file does not fit there.
    let tasks = repo.tasks(&[r#"{"id":"big","run":"head -c 3000000 /dev/zero > big.bin"}"#]);
    let worktrees = mount.join("worktrees");
    let worktrees = worktrees.to_str().unwrap();

    let out = repo.swarm(&[
        "run",
        "--retries",
        "0",
        "--worktree-dir",
        worktrees,
        tasks.to_str().unwrap(),
    ]);

    assert_exit(&out, 75);
    let said = stdout(&out);
    assert!(said.contains("Stopped: the disk holding"), "{said}");
    let status = status_json(&repo);
    let big = &status["tasks"][0];
    assert_eq!(big["status"], "interrupted", "{status:#}");
    assert_eq!(big["failures"], 0, "{status:#}");
    assert!(!repo.root.join("big.bin").exists());

    // With room again, resume runs the writer again (it had no retry to spend) and lands it.
    disk.grow("32m");
    let out = repo.swarm(&["resume", "--worktree-dir", worktrees]);
    assert_exit(&out, 0);
    assert_eq!(
        std::fs::metadata(repo.root.join("big.bin")).unwrap().len(),
        3_000_000
    );
    drop(disk);
}

/// The repository's swarm directory (the board, the runs' records and the attempts'
/// `TMPDIR`s) on a small disk of its own, mounted for the test.
fn records_on_a_small_disk(repo: &TestRepo) -> crate::SmallDisk {
    crate::SmallDisk::mount(&repo.swarm_dir(), "8m")
}

/// What a run stopped by a full disk says of it: the disk holding a path of the small disk
/// at `mount`, by its device and mount point.
fn assert_names_the_full_disk(said: &str, mount: &std::path::Path) {
    let mount = mount.canonicalize().unwrap();
    let named = regex::Regex::new(&format!(
        r"Stopped: the disk holding {}/\S+ \(device \d+:\d+, mounted at {}\) is full",
        regex::escape(&mount.display().to_string()),
        regex::escape(&mount.display().to_string()),
    ))
    .unwrap();
    assert!(named.is_match(said), "{said}");
}

#[test]
#[cfg_attr(
    not(can_mount_tmpfs),
    ignore = "needs root: mounting a tmpfs needs CAP_SYS_ADMIN, not held here; run the tests as root"
)]
fn a_task_filling_its_tmpdir_stops_the_run_naming_the_disk_and_resume_finishes_it() {
    let repo = TestRepo::new();
    let disk = records_on_a_small_disk(&repo);
    let filled = crate::outside(&repo, "filled");
    // The first attempt fills its TMPDIR, which is on the disk of the run's records.
    let fill = format!(
        "[ -e '{0}' ] && exit 0; touch '{0}'; head -c 64000000 /dev/zero > \"$TMPDIR/fill\"",
        filled.display()
    );
    let tasks =
        repo.tasks(&[&serde_json::json!({"id": "fill", "run": fill, "mode": "read"}).to_string()]);

    let out = repo.swarm(&["run", "--retries", "0", tasks.to_str().unwrap()]);

    assert_exit(&out, 75);
    assert_names_the_full_disk(&stdout(&out), &repo.swarm_dir());
    let status = status_json(&repo);
    assert_eq!(status["tasks"][0]["status"], "interrupted", "{status:#}");
    assert_eq!(status["tasks"][0]["failures"], 0, "{status:#}");

    let out = repo.swarm(&["resume"]);
    assert_exit(&out, 0);
    assert_eq!(status_json(&repo)["tasks"][0]["status"], "done");
    drop(disk);
}

#[test]
#[cfg_attr(
    not(can_mount_tmpfs),
    ignore = "needs root: mounting a tmpfs needs CAP_SYS_ADMIN, not held here; run the tests as root"
)]
fn a_board_that_meets_a_full_disk_stops_the_run_resumably_with_its_tasks_interrupted() {
    let repo = TestRepo::new();
    let disk = records_on_a_small_disk(&repo);
    let (ran, filled) = (
        crate::outside(&repo, "hog-ran"),
        crate::outside(&repo, "filled"),
    );
    // `hog` fills the disk and holds it full (its TMPDIR is emptied only when it ends); `other`
    // ends once it is full, so that its end is what the board has no room for.
    let hog = format!(
        "[ -e '{ran}' ] && exit 0; touch '{ran}'; head -c 64000000 /dev/zero > \"$TMPDIR/hog\"; touch '{filled}'; exec sleep 600",
        ran = ran.display(),
        filled = filled.display()
    );
    let other = format!(
        "for _ in $(seq 3000); do [ -e '{}' ] && break; sleep 0.01; done; echo done",
        filled.display()
    );
    let tasks = repo.tasks(&[
        &serde_json::json!({"id": "hog", "run": hog, "mode": "read"}).to_string(),
        &serde_json::json!({"id": "other", "run": other, "mode": "read"}).to_string(),
    ]);

    let out = repo.swarm(&["run", "-j", "2", tasks.to_str().unwrap()]);

    assert_exit(&out, 75);
    let said = stdout(&out);
    assert_names_the_full_disk(&said, &repo.swarm_dir());
    assert!(said.contains("board.db (device"), "{said}");
    let status = status_json(&repo);
    assert_eq!(status["run"]["status"], "interrupted", "{status:#}");
    // Neither left `running`: `other`, whose end the board had no room for, neither.
    assert_eq!(
        tasks_with_status(&status, "interrupted"),
        ["hog", "other"],
        "{status:#}"
    );

    let out = repo.swarm(&["resume"]);
    assert_exit(&out, 0);
    assert_eq!(
        tasks_with_status(&status_json(&repo), "done"),
        ["hog", "other"]
    );
    drop(disk);
}

#[test]
fn attempts_wait_for_an_endpoint_that_went_away_and_go_on_when_it_answers() {
    let repo = TestRepo::new();
    // A port nothing listens on yet.
    let port = free_port();
    let tasks = prompt_readers(&repo, 4);
    let mut swarm = repo
        .swarm_cmd()
        .env("SWARM_API_BASE", format!("http://127.0.0.1:{port}/v1"))
        .env("SWARM_API_KEY", "sk-any")
        .args(["run", "-j", "2", "--retries", "0"])
        .arg(&tasks)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once swarm says it waits, the endpoint comes up.
    let mut err = std::io::BufReader::new(swarm.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let n = std::io::BufRead::read_line(&mut err, &mut line).unwrap();
        assert!(
            n > 0,
            "swarm ended without waiting for the endpoint:\n{seen}"
        );
        seen.push_str(&line);
        if line.contains("no new attempts while swarm checks the model endpoint") {
            break;
        }
    }
    let _llm = FakeLlm::start_on(port, |_, _| Reply::text("said"));
    let rest = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut rest);
        rest
    });
    let status = swarm.wait().unwrap();
    let seen = seen + &rest.join().unwrap();

    assert_eq!(status.code(), Some(0), "{seen}");
    assert!(
        seen.contains("the model endpoint answers again after"),
        "{seen}"
    );
    let status = status_json(&repo);
    assert_eq!(tasks_with_status(&status, "done").len(), 4, "{status:#}");
    for t in status["tasks"].as_array().unwrap() {
        assert_eq!(t["failures"], 0, "{t:#}");
    }
}

/// A server on `port` (0: any) that plans one task, `a`, and answers it; a request with any
/// key but `key` is refused with a 401.
fn planning_server(port: u16, key: &'static str) -> FakeLlm {
    FakeLlm::start_on(port, move |req, _| {
        if req.header("authorization") != Some(&format!("Bearer {key}")) {
            Reply::error(401, "invalid api key")
        } else if crate::fake_llm::has_tool(req, "submit_plan") {
            Reply::ToolCalls(vec![(
                "p".into(),
                "submit_plan".into(),
                serde_json::json!({"tasks": [{"id": "a", "prompt": "TASK a: say hi", "deps": []}]}),
            )])
        } else if crate::fake_llm::tool_results(req).is_empty()
            && crate::fake_llm::system_text(req).contains("write")
            && req.body["tools"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t["function"]["name"] == "write_file"))
        {
            // The writer writes its greeting.
            Reply::ToolCalls(vec![(
                "w".into(),
                "write_file".into(),
                serde_json::json!({"path": "hi.txt", "content": "hi\n"}),
            )])
        } else {
            Reply::text("hi")
        }
    })
}

#[test]
fn a_refused_key_while_planning_a_goal_exits_2_and_resume_plans_it_once_the_key_is_fixed() {
    let repo = TestRepo::new();
    let llm = planning_server(0, "sk-right");
    let with_key = |key: &str| {
        let mut cmd = repo.swarm_cmd();
        cmd.env("SWARM_API_BASE", llm.base_url())
            .env("SWARM_API_KEY", key);
        cmd
    };

    let out = with_key("sk-wrong")
        .args(["--goal", "Say hi"])
        .output()
        .unwrap();

    assert_exit(&out, 2);
    let said = stderr(&out);
    assert!(said.contains("check SWARM_API_KEY"), "{said}");
    assert!(said.contains("plans the goal again"), "{said}");
    assert_eq!(status_json(&repo)["run"]["status"], "interrupted");
    assert_eq!(newest_reason(&repo), "the model endpoint refused the key");
    let out = with_key("sk-right").arg("resume").output().unwrap();
    assert_exit(&out, 0);
    let status = status_json(&repo);
    assert_eq!(
        tasks_with_status(&status, "done"),
        ["a", "reduce"],
        "{status:#}"
    );
}

#[test]
fn a_plan_only_start_a_refused_key_stopped_is_resumed_to_plan_only() {
    let repo = TestRepo::new();
    let llm = planning_server(0, "sk-right");
    let plan = crate::outside(&repo, "plan.jsonl");
    let swarm = |key: &str, args: &[&str]| {
        repo.swarm_cmd()
            .env("SWARM_API_BASE", llm.base_url())
            .env("SWARM_API_KEY", key)
            .args(args)
            .output()
            .unwrap()
    };
    let plan_out = plan.to_str().unwrap();
    let out = swarm(
        "sk-wrong",
        &["--goal", "Say hi", "--plan-only", "--plan-out", plan_out],
    );
    assert_exit(&out, 2);
    assert_eq!(newest_reason(&repo), "the model endpoint refused the key");
    let before = repo.state();

    let out = swarm("sk-right", &["resume"]);

    assert_exit(&out, 0);
    assert!(
        stdout(&out).contains("To run it: swarm run"),
        "{}",
        stdout(&out)
    );
    // Planned, and nothing run: no task, no branch, the checkout as it was.
    assert!(
        std::fs::read_to_string(&plan)
            .unwrap()
            .contains("\"id\":\"a\"")
    );
    assert_eq!(status_json(&repo)["tasks"], serde_json::json!([]));
    assert_eq!(repo.git(&["branch", "--list", "swarm/*"]), "");
    assert_eq!(repo.state(), before);
    assert_eq!(newest_reason(&repo), "planned only");
    let again = swarm("sk-right", &["resume"]);
    assert_exit(&again, 2);
    assert!(
        stderr(&again).contains("there is no unfinished run to resume"),
        "{}",
        stderr(&again)
    );
}

#[test]
fn goals_a_dead_endpoint_keeps_from_being_planned_stay_pending_and_resume_plans_them() {
    let repo = TestRepo::new();
    let port = free_port();
    let goals = repo.cache.parent().unwrap().join("goals.txt");
    std::fs::write(&goals, "Say hi\nSay hello\n").unwrap();
    let swarm = |args: &[&str]| {
        repo.swarm_cmd()
            .env("SWARM_API_BASE", format!("http://127.0.0.1:{port}/v1"))
            .env("SWARM_API_KEY", "sk-right")
            .args(args)
            .output()
            .unwrap()
    };

    let out = swarm(&["--goals-file", goals.to_str().unwrap()]);

    assert_exit(&out, 75);
    assert!(
        stdout(&out).contains("Stopped: the model endpoint does not answer"),
        "{}",
        stdout(&out)
    );
    let status = status_json(&repo);
    for goal in status["goals"].as_array().unwrap() {
        assert_eq!(goal["status"], "pending", "{status:#}");
    }
    assert_eq!(newest_reason(&repo), "the model endpoint did not answer");
    let _llm = planning_server(port, "sk-right");
    let out = swarm(&["resume"]);
    assert_exit(&out, 0);
    let status = status_json(&repo);
    for goal in status["goals"].as_array().unwrap() {
        assert_eq!(goal["status"], "done", "{status:#}");
    }
}

#[test]
fn a_fault_under_a_resolver_stops_the_run_and_resume_resolves_the_conflict() {
    let repo = TestRepo::new();
    repo.write("shared.txt", "top\nshared\nbottom\n");
    repo.commit_all("add shared.txt");
    let tasks = repo.tasks(&[
        r#"{"id":"first","run":"sed -i 's/shared/from first/' shared.txt"}"#,
        r#"{"id":"second","run":"sed -i 's/shared/from second/' shared.txt"}"#,
    ]);
    let gate = Gate::new(&crate::outside(&repo, "gates"), "resolver");
    // The resolver keeps both sides, once it is let through the gate.
    let agent = format!(
        "exec:{} && sed -i '/^<<<<<<< /d; /^=======$/d; /^>>>>>>> /d' shared.txt",
        gate.shell()
    );
    let args = [
        "run",
        tasks.to_str().unwrap(),
        "--resolve-conflicts",
        "--agent",
        &agent,
    ];
    let mut swarm = repo.spawn(&args);
    gate.reached(&mut swarm);
    // The user's edit while the resolver runs: the resolver's attempt cannot be trusted.
    repo.write("mine.txt", "the user's own\n");
    gate.release();
    let out = swarm.wait_with_output().unwrap();

    assert_exit(&out, 75);
    assert!(
        stdout(&out).contains("Stopped: your checkout"),
        "{}",
        stdout(&out)
    );
    assert_eq!(repo.read("shared.txt"), "top\nshared\nbottom\n");

    let mut resume = repo.spawn(&["resume"]);
    gate.reached(&mut resume);
    gate.release();
    let out = resume.wait_with_output().unwrap();
    assert_exit(&out, 0);
    let merged = repo.read("shared.txt");
    assert!(
        merged.contains("from first") && merged.contains("from second"),
        "{merged}"
    );
}
