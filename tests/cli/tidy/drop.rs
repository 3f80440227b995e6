//! `swarm drop`: an unfinished run goes (its record, checkouts, directory and the branches
//! something else holds) and `resume` no longer picks it; a branch with work nowhere else is
//! kept; a finished run, one another swarm holds, and a drop off a terminal without `--yes`
//! are refused with nothing done.

use serde_json::Value;

use super::{
    interrupted_with_a_parked_writer, refusing_server, runs_json, swarm_branches, with_model,
};
use crate::gate::Gate;
use crate::pty::Terminal;
use crate::{TestRepo, assert_exit, extra_worktrees, outside, rev, run_id, stderr, stdout};

/// How many rows of `run` each table of the board holds.
fn board_rows(repo: &TestRepo, run: &str) -> Vec<(String, i64)> {
    let db = rusqlite::Connection::open(repo.swarm_dir().join("board.db")).unwrap();
    let mut rows = vec![(
        "runs".to_owned(),
        db.query_row("SELECT COUNT(*) FROM runs WHERE id = ?1", [run], |r| {
            r.get(0)
        })
        .unwrap(),
    )];
    for table in ["tasks", "attempts", "merges", "events", "goals"] {
        let n = db
            .query_row(
                &format!("SELECT COUNT(*) FROM {table} WHERE run_id = ?1"),
                [run],
                |r| r.get(0),
            )
            .unwrap();
        rows.push((table.to_owned(), n));
    }
    rows
}

#[test]
fn dropping_an_interrupted_run_removes_it_and_keeps_the_work_no_other_branch_has() {
    let repo = TestRepo::new();
    let run = interrupted_with_a_parked_writer(&repo);
    let parked = format!("swarm/{run}-b");
    let parked_commit = rev(&repo, &parked);
    // The user took the run's merged work: its integration branch is held by theirs.
    repo.git(&["merge", "-q", "--ff-only", &format!("swarm/{run}")]);
    let checkouts = extra_worktrees(&repo);
    assert!(!checkouts.is_empty(), "the parked writer's checkout");
    let rows = board_rows(&repo, &run);
    for table in ["runs", "tasks", "attempts", "events"] {
        assert!(!rows.contains(&(table.to_owned(), 0)), "{rows:?}");
    }

    // Off a terminal, without --yes: refused, nothing done.
    let out = repo.swarm(&["drop"]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("--yes"), "{}", stderr(&out));
    assert_eq!(runs_json(&repo).len(), 1);
    assert_eq!(extra_worktrees(&repo), checkouts);
    assert_eq!(swarm_branches(&repo).len(), 2);

    let out = repo.swarm(&["drop", "--yes", "--json"]);

    assert_exit(&out, 0);
    let said: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(said["run"], run.as_str());
    assert_eq!(said["dropped"], true);
    let branch_actions: Vec<(&str, &str)> = said["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| Some((a["action"].as_str()?, a["branch"].as_str()?)))
        .collect();
    let integration = format!("swarm/{run}");
    assert_eq!(
        branch_actions,
        [
            ("delete-branch", integration.as_str()),
            ("keep-branch", parked.as_str())
        ],
        "{said:#}"
    );
    // Gone from the board, from the machine and from resume's choices.
    assert_eq!(runs_json(&repo), Vec::<Value>::new());
    for (table, n) in board_rows(&repo, &run) {
        assert_eq!(n, 0, "rows of the run left in {table}");
    }
    assert_eq!(extra_worktrees(&repo), Vec::<String>::new());
    assert!(!repo.swarm_dir().join("runs").join(&run).exists());
    // The parked writer's work, held by no other branch, is kept as it was.
    assert_eq!(swarm_branches(&repo), [(parked.clone(), parked_commit)]);
    assert_eq!(repo.read("src/lib.rs"), super::lib(2));
    let out = repo.swarm(&["resume"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("there is no unfinished run to resume"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_finished_run_and_one_another_swarm_holds_are_not_dropped() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo w > w.txt"}"#]);
    assert_exit(&repo.swarm(&["run", tasks.to_str().unwrap()]), 0);
    let finished = run_id(&repo);

    let out = repo.swarm(&["drop", &finished, "--yes"]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("swarm gc"), "{}", stderr(&out));
    let out = repo.swarm(&["drop", "--yes"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("there is no unfinished run to drop"),
        "{}",
        stderr(&out)
    );
    assert_eq!(runs_json(&repo).len(), 1);

    let gate = Gate::new(&outside(&repo, "gates"), "hold");
    let held = repo.tasks(&[
        &serde_json::json!({"id": "hold", "run": gate.shell(), "mode": "read"}).to_string(),
    ]);
    let mut child = repo.spawn(&["run", held.to_str().unwrap()]);
    gate.reached(&mut child);
    let running = run_id(&repo);
    let out = repo.swarm(&["drop", &running, "--yes"]);
    gate.release();
    assert_exit(&out, 4);
    assert_exit(&child.wait_with_output().unwrap(), 0);
    assert_eq!(runs_json(&repo).len(), 2);
}

#[test]
fn the_goals_a_dropped_run_took_from_the_queue_go_back_to_the_queue() {
    let repo = TestRepo::new();
    let llm = refusing_server();
    for goal in ["Say hi", "Say hello"] {
        assert_exit(&repo.swarm(&["queue", "add", goal]), 0);
    }
    let out = with_model(&repo, &llm, &["queue", "run"]);
    assert_exit(&out, 2);
    let taken = |repo: &TestRepo| -> Vec<Value> {
        let out = repo.swarm(&["queue", "list", "--json"]);
        assert_exit(&out, 0);
        let items: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        items.iter().map(|i| i["run_id"].clone()).collect()
    };
    let run = run_id(&repo);
    assert_eq!(
        taken(&repo),
        [Value::from(run.as_str()), Value::from(run.as_str())]
    );

    let out = repo.swarm(&["drop", "--yes"]);

    assert_exit(&out, 0);
    assert!(
        stdout(&out).contains("put goal 1 back in the queue"),
        "{}",
        stdout(&out)
    );
    assert_eq!(taken(&repo), [Value::Null, Value::Null]);
}

#[test]
fn at_a_terminal_drop_asks_first_and_only_yes_drops() {
    let repo = TestRepo::new();
    let llm = refusing_server();
    assert_exit(&with_model(&repo, &llm, &["--goal", "Say hi"]), 2);
    let run = run_id(&repo);
    let on_terminal = || {
        let mut cmd = repo.swarm_cmd();
        cmd.env("TERM", "dumb").arg("drop");
        Terminal::start(cmd, 200, 40)
    };
    let question = format!("Drop run {run} (interrupted, 0 tasks)? [y/N] ");

    let mut swarm = on_terminal();
    let shown = swarm.read_until(&question);
    assert!(shown.contains(&format!("forget run {run}")), "{shown}");
    swarm.type_line("n");
    let screen = swarm.finish();
    assert_eq!(screen.code(), 0, "{}", screen.printed);
    assert_eq!(runs_json(&repo).len(), 1, "{}", screen.printed);

    let mut swarm = on_terminal();
    swarm.read_until(&question);
    swarm.type_line("y");
    let screen = swarm.finish();
    assert_eq!(screen.code(), 0, "{}", screen.printed);
    assert!(
        screen.printed.contains(&format!("dropped run {run}")),
        "{}",
        screen.printed
    );
    assert_eq!(runs_json(&repo), Vec::<Value>::new());
}
