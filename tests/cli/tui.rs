//! The interface (`swarm tui`, and `swarm` alone at a terminal) on a pseudo-terminal: a goal
//! typed in the composer is planned by the scripted model, shown and asked about, run and
//! followed to its end; a task's transcript; a run started elsewhere stopped with `/stop` and
//! continued with `/resume`, its gate shown; `/goal` queues; `/quit` leaves the terminal as it was. Screens at
//! 80×24 and 160×48 are snapshots, with the times and run ids that change from run to run
//! taken out.

use serde_json::{Value, json};

use crate::gate::Gate;
use crate::goal::{good_server, llm_cmd};
use crate::pty::Terminal;
use crate::{TestRepo, assert_exit, outside, status_json, stdout};

const ENTER: &[u8] = b"\r";
const DOWN: &[u8] = b"\x1b[B";

/// The interface of `repo` on a terminal of `cols` × `rows`, with the scripted model.
fn open(repo: &TestRepo, llm: &crate::fake_llm::FakeLlm, cols: u16, rows: u16) -> Terminal {
    let mut cmd = llm_cmd(repo, llm);
    cmd.env("TERM", "xterm-256color");
    Terminal::start(cmd, cols, rows)
}

/// A screen with what changes from run to run (times, dates, run ids) replaced, and the
/// spaces that pad them to a column made one, so that it reads the same each time.
fn steady(screen: &str) -> String {
    let id = regex::Regex::new(r"\d{8}-\d{6}-[0-9a-f]{4}").unwrap();
    let date = regex::Regex::new(r"\d\d-\d\d \d\d:\d\d").unwrap();
    let time = regex::Regex::new(r"\b\d+(\.\d+)?(ms|s|m|h)\b").unwrap();
    let spaces = regex::Regex::new(r" {2,}").unwrap();
    let screen = id.replace_all(screen, "<run>");
    let screen = date.replace_all(&screen, "<date>");
    let screen = time.replace_all(&screen, "<time>");
    let screen = screen.replace("/tmp/", "<tmp>/");
    let tmp = regex::Regex::new(r"\.tmp[A-Za-z0-9]{6}").unwrap();
    let hash = regex::Regex::new(r"(repo|snap)-[0-9a-f]{8,12}").unwrap();
    let screen = tmp.replace_all(&screen, ".tmpXXXXXX");
    let screen = hash.replace_all(&screen, "$1-<hash>");
    screen
        .lines()
        .map(|l| spaces.replace_all(l, " ").trim_end().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Types a goal, answers its plan's question with y and waits until its run has finished.
fn run_a_goal(terminal: &mut Terminal) -> (String, String) {
    terminal.screen_until("Type a goal and press Enter, or /help.");
    terminal.type_bytes(b"Survey the repository and leave notes");
    terminal.type_bytes(ENTER);
    let asked = terminal.screen_until("Run 4 tasks (1 writer)? [Y/n/e]");
    terminal.type_bytes(b"y");
    // Said once the run's swarm has ended, below the tasks it finished.
    let done =
        terminal.screen_until("The run of Survey the repository and leave notes finished (exit 0)");
    assert!(done.contains("4 tasks: 4 done"), "{done}");
    (asked, done)
}

#[test]
fn the_interface_runs_a_goal_it_was_given_after_asking_and_shows_its_tasks_at_80_by_24() {
    let repo = TestRepo::new();
    let llm = good_server();
    let mut terminal = open(&repo, &llm, 80, 24);
    // The keys' line is the frame's last.
    let first = terminal.screen_until("?: keys  /quit");
    insta::assert_snapshot!("tui_80x24_empty", steady(&first));

    let (asked, done) = run_a_goal(&mut terminal);
    // The plan, as `--goal` shows it, before anything ran.
    assert!(asked.contains("notes"), "{asked}");
    insta::assert_snapshot!("tui_80x24_asked", steady(&asked));
    insta::assert_snapshot!("tui_80x24_done", steady(&done));
    // A task's transcript, selected in the tree.
    // The writer, the tree's third row; its transcript's line, drawn after the pane's title.
    terminal.type_bytes(DOWN);
    terminal.type_bytes(DOWN);
    let shown = terminal.screen_until("wrote NOTES.md (21 bytes)");
    assert!(shown.contains("task notes"), "{shown}");

    terminal.type_bytes(b"\t\t/quit");
    terminal.type_bytes(ENTER);
    let left = terminal.finish();
    assert_eq!(left.code(), 0);
    // The goal was run once, from the plan asked about: one planning request in all.
    let plannings = llm
        .requests()
        .iter()
        .filter(|r| crate::fake_llm::has_tool(r, "submit_plan"))
        .count();
    assert_eq!(plannings, 1);
    assert_eq!(repo.read("NOTES.md"), "notes from the agent\n");
    let status = status_json(&repo);
    assert_eq!(
        status["run"]["source"],
        "goal: Survey the repository and leave notes"
    );
    assert_eq!(status["run"]["status"], "finished");
}

#[test]
fn the_interface_at_160_by_48_shows_the_runs_the_tree_and_the_detail_side_by_side() {
    let repo = TestRepo::new();
    let llm = good_server();
    let mut terminal = open(&repo, &llm, 160, 48);
    let (_, done) = run_a_goal(&mut terminal);
    terminal.type_bytes(DOWN);
    // The transcript's end, the pane's last line.
    let shown = terminal.screen_until("assistant: finding of TASK readme");
    insta::assert_snapshot!("tui_160x48_done", steady(&shown));
    assert!(done.contains("✓"), "{done}");
    terminal.type_bytes(b"q");
    assert_eq!(terminal.finish().code(), 0);
}

#[test]
fn the_interface_stops_a_run_started_elsewhere_resumes_it_and_queues_a_goal() {
    let repo = TestRepo::new();
    let llm = good_server();
    let gate = Gate::new(&outside(&repo, "gates"), "slow");
    let tasks = repo.tasks(&[
        &json!({"id": "slow", "run": format!("{}; echo slow > slow.txt", gate.shell_once())})
            .to_string(),
        &json!({"id": "after", "run": "echo after > after.txt", "deps": ["slow"]}).to_string(),
    ]);
    // A run started elsewhere, waiting at its gate.
    let mut elsewhere = repo.spawn(&["run", tasks.to_str().unwrap(), "--gate", "true"]);
    gate.reached(&mut elsewhere);

    let mut terminal = open(&repo, &llm, 80, 24);
    // Its mark in the runs, drawn after the tree's title that counts it running.
    let running = terminal.screen_until("▶");
    assert!(running.contains("1 running"), "{running}");
    terminal.type_bytes(b"/stop");
    terminal.type_bytes(ENTER);
    terminal.screen_until("Stopping run");
    let stopped = elsewhere.wait_with_output().unwrap();
    assert_eq!(stopped.status.code(), Some(75));
    terminal.screen_until("■");

    terminal.type_bytes(b"/resume");
    terminal.type_bytes(ENTER);
    terminal.screen_until("2 tasks: 2 done");
    // The gate's last run, under the tree.
    terminal.screen_until("green on");

    terminal.type_bytes(b"/goal Document the slow task");
    terminal.type_bytes(ENTER);
    terminal.screen_until("Queued");
    terminal.type_bytes(b"/frobnicate");
    terminal.type_bytes(ENTER);
    terminal.screen_until("/frobnicate is no command here: /help lists them");
    terminal.type_bytes(b"/quit");
    terminal.type_bytes(ENTER);
    assert_eq!(terminal.finish().code(), 0);

    assert_eq!(repo.read("after.txt"), "after\n");
    let queued = repo.swarm(&["queue", "list", "--json"]);
    assert_exit(&queued, 0);
    let queued: Value = serde_json::from_str(&stdout(&queued)).unwrap();
    assert_eq!(queued[0]["text"], "Document the slow task", "{queued}");
}

#[test]
fn the_interface_needs_a_terminal_and_swarm_alone_off_one_prints_its_help() {
    let repo = TestRepo::new();
    let out = repo.swarm(&["tui"]);
    assert_exit(&out, 2);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("the interface needs a terminal (its stdin and stdout)")
    );
    let out = repo.swarm(&[]);
    assert_exit(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("Usage: swarm"));
}
