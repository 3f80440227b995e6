//! The live display on a terminal: a header that counts true, one row per running task that
//! leaves when its task does, colours only where they are wanted; and events as JSON lines
//! for CI systems.

use std::path::PathBuf;

use crate::pty::{Screen, Terminal};
use crate::{TestRepo, assert_exit, stderr};

/// Twenty tasks: ten writers, each on a file of its own, and ten readers after them.
fn twenty_tasks(repo: &TestRepo) -> PathBuf {
    for n in 1..=10 {
        repo.write(&format!("docs/{n:02}.txt"), &format!("file {n}\n"));
    }
    repo.commit_all("ten files");
    let mut lines = Vec::new();
    for n in 1..=10 {
        lines.push(format!(
            r#"{{"id":"w{n:02}","title":"Write file {n}","mode":"write","run":"echo changed >> docs/{n:02}.txt"}}"#
        ));
    }
    for n in 1..=10 {
        lines.push(format!(
            r#"{{"id":"r{n:02}","title":"Read file {n}","mode":"read","deps":["w{n:02}"],"run":"cat docs/{n:02}.txt"}}"#
        ));
    }
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    repo.tasks(&lines)
}

fn on_terminal(repo: &TestRepo, args: &[&str], color: bool) -> Screen {
    let mut cmd = repo.swarm_cmd();
    cmd.args(args).env("TERM", "xterm-256color");
    if color {
        cmd.env_remove("NO_COLOR");
    }
    Terminal::start(cmd, 120, 200).finish()
}

/// Select Graphic Rendition sequences: colours and bold, not the cursor's moves.
fn colour_codes(bytes: &[u8]) -> usize {
    let text = String::from_utf8_lossy(bytes);
    regex::Regex::new(r"\x1b\[[0-9;]*m")
        .unwrap()
        .find_iter(&text)
        .count()
}

#[test]
fn a_run_of_twenty_tasks_with_ten_writers_ends_on_a_header_of_twenty_with_no_row_left() {
    let repo = TestRepo::new();
    let tasks = twenty_tasks(&repo);

    let screen = on_terminal(&repo, &["run", tasks.to_str().unwrap(), "-j", "4"], false);

    assert!(screen.status.success(), "{}", screen.text);
    let lines: Vec<&str> = screen.text.lines().collect();
    let header = lines
        .iter()
        .rev()
        .find(|l| l.contains("running ·"))
        .unwrap_or_else(|| panic!("no header on the screen:\n{}", screen.text));
    assert!(header.contains("20/20"), "{header}\n{}", screen.text);
    assert!(
        header.contains("0 running · 10 merged · 0 parked · 0 failed"),
        "{header}"
    );
    // A row is `Running <id> — <title>`; every one has left.
    let rows: Vec<&&str> = lines.iter().filter(|l| l.contains(" — ")).collect();
    assert!(
        rows.is_empty(),
        "rows left on the screen: {rows:#?}\n{}",
        screen.text
    );
    // The permanent lines stay, one per task.
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.trim_start().starts_with("Merged w"))
            .count(),
        10,
        "{}",
        screen.text
    );
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.trim_start().starts_with("Finished r"))
            .count(),
        10,
        "{}",
        screen.text
    );
    assert_eq!(colour_codes(&screen.bytes), 0, "NO_COLOR is set");
    assert_eq!(
        repo.git(&["log", "--merges", "--format=%s", "main"])
            .lines()
            .count(),
        10
    );
}

#[test]
fn colours_follow_the_terminal_the_flag_and_no_color() {
    let repo = TestRepo::new();
    let tasks = twenty_tasks(&repo);
    let tasks = tasks.to_str().unwrap();

    let coloured = on_terminal(&repo, &["run", tasks], true);
    assert!(coloured.status.success(), "{}", coloured.text);
    assert!(colour_codes(&coloured.bytes) > 0, "a terminal gets colours");

    let repo = TestRepo::new();
    let tasks = twenty_tasks(&repo);
    let never = on_terminal(
        &repo,
        &["run", tasks.to_str().unwrap(), "--color", "never"],
        true,
    );
    assert!(never.status.success(), "{}", never.text);
    assert_eq!(colour_codes(&never.bytes), 0);

    // Off a terminal, --color always colours the plain lines.
    let repo = TestRepo::new();
    let tasks = twenty_tasks(&repo);
    let out = repo
        .swarm_cmd()
        .args(["run", tasks.to_str().unwrap(), "--color", "always"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert!(colour_codes(&out.stderr) > 0, "{}", stderr(&out));
}

#[test]
fn progress_json_prints_each_event_of_the_log_as_one_line() {
    let repo = TestRepo::new();
    let tasks = twenty_tasks(&repo);

    let out = repo.swarm(&["run", tasks.to_str().unwrap(), "--progress", "json"]);

    assert_exit(&out, 0);
    let events: Vec<serde_json::Value> = stderr(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["kind"].as_str()).collect();
    assert_eq!(kinds.first(), Some(&"run_started"), "{kinds:?}");
    assert_eq!(
        kinds.iter().filter(|k| **k == "merged").count(),
        10,
        "{kinds:?}"
    );
    assert!(kinds.contains(&"run_ended"), "{kinds:?}");
    // The same lines as the run's log.
    let run = crate::run_id(&repo);
    let log = std::fs::read_to_string(
        repo.swarm_dir()
            .join("runs")
            .join(&run)
            .join("events.jsonl"),
    )
    .unwrap();
    let logged: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let printed: Vec<&serde_json::Value> =
        events.iter().filter(|e| e.get("seq").is_some()).collect();
    assert_eq!(printed.len(), logged.len());
    assert!(printed.iter().zip(&logged).all(|(p, l)| *p == l));
}

/// Six readers that run `run`, three at once, on a terminal; returns once three rows show.
fn sleeping_run(repo: &TestRepo, run: &str, kill_grace: &str) -> Terminal {
    let mut cmd = repo.swarm_cmd();
    cmd.args(sleeping_args(repo, run, kill_grace));
    on_screen(cmd)
}

/// `sleeping_run` with the terminal as swarm's controlling terminal, as a user's shell makes it:
/// Ctrl-C typed there is echoed (`^C`) and sent to swarm by the terminal itself.
fn sleeping_run_at_its_terminal(repo: &TestRepo, run: &str) -> Terminal {
    let mut cmd = repo.command("setsid");
    cmd.args(["--ctty", "--wait", env!("CARGO_BIN_EXE_swarm")])
        .args(sleeping_args(repo, run, "0"));
    on_screen(cmd)
}

fn sleeping_args(repo: &TestRepo, run: &str, kill_grace: &str) -> Vec<String> {
    let lines: Vec<String> = (1..=6)
        .map(|n| format!(r#"{{"id":"s{n}","title":"Sleep {n}","mode":"read","run":"{run}"}}"#))
        .collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let tasks = repo.tasks(&lines);
    [
        "run",
        tasks.to_str().unwrap(),
        "-j",
        "3",
        "--kill-grace",
        kill_grace,
    ]
    .map(str::to_owned)
    .to_vec()
}

fn on_screen(mut cmd: std::process::Command) -> Terminal {
    cmd.env("TERM", "xterm-256color");
    let mut terminal = Terminal::start(cmd, 120, 100);
    terminal.read_until("Running s3 — Sleep 3");
    terminal
}

fn interrupt(terminal: &Terminal) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(terminal.pid() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
}

/// The header lines on the screen (`[00:00:01] [    ] 0/6 · 3 running · …`).
fn headers(screen: &Screen) -> Vec<&str> {
    screen
        .text
        .lines()
        .filter(|l| l.contains("/6 · "))
        .collect()
}

#[test]
fn ctrl_c_leaves_no_row_and_no_stale_copy_of_the_display() {
    let repo = TestRepo::new();
    let terminal = sleeping_run(&repo, "sleep 30", "0");

    interrupt(&terminal);
    let screen = terminal.finish();

    assert_eq!(screen.code(), 75, "{}", screen.text);
    let rows: Vec<&str> = screen.text.lines().filter(|l| l.contains(" — ")).collect();
    assert!(rows.is_empty(), "rows left: {rows:#?}\n{}", screen.text);
    assert_one_header_saying(&screen, "0/6 · interrupted · 0 merged");
}

/// The screen holds one header, not a frozen copy of an earlier one, and it says `words`.
fn assert_one_header_saying(screen: &Screen, words: &str) {
    let headers = headers(screen);
    assert_eq!(
        headers.len(),
        1,
        "one header, not a frozen copy:\n{}",
        screen.text
    );
    assert!(headers[0].contains(words), "{}", screen.text);
}

#[test]
fn ctrl_c_typed_at_the_terminal_leaves_one_header_that_says_the_run_was_interrupted() {
    let repo = TestRepo::new();
    let mut terminal = sleeping_run_at_its_terminal(&repo, "sleep 30");

    terminal.type_bytes(b"\x03");
    let screen = terminal.finish();

    assert_eq!(screen.code(), 75, "{}", screen.text);
    assert_one_header_saying(
        &screen,
        "0/6 · interrupted · 0 merged · 0 parked · 0 failed",
    );
    assert!(!screen.text.contains(" — "), "rows left:\n{}", screen.text);
    assert!(
        screen
            .text
            .contains("continues the run; nothing was merged yet."),
        "{}",
        screen.text
    );
    assert!(screen.echoctl, "the terminal's echo of Ctrl-C was left off");
}

#[test]
fn a_second_ctrl_c_ends_swarm_at_once_and_takes_the_display_with_it() {
    let repo = TestRepo::new();
    // Tasks that outlast the first Ctrl-C: the run is still stopping them at the second.
    let mut terminal = sleeping_run(&repo, "trap '' TERM; sleep 30", "60s");

    interrupt(&terminal);
    terminal.read_until("press Ctrl-C again");
    interrupt(&terminal);
    let screen = terminal.finish();

    assert_eq!(screen.code(), 75, "{}", screen.text);
    assert!(
        !screen.text.contains(" — ") && !screen.text.contains("running ·"),
        "the display stayed behind:\n{}",
        screen.text
    );
}
