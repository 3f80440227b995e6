use super::schema::MIGRATIONS;
use super::*;

#[test]
fn a_board_from_a_newer_swarm_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    drop(Board::open(dir.path()).unwrap());
    let conn = Connection::open(dir.path().join("board.db")).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    let err = Board::open(dir.path()).err().unwrap();
    assert!(
        format!("{err:#}").contains("newer than this swarm knows"),
        "{err:#}"
    );
}

fn board_with_run(dir: &Path, run: &str) -> Board {
    let mut board = Board::open(dir).unwrap();
    create_run(&mut board, run);
    board
}

fn create_run(board: &mut Board, run: &str) {
    board.create_run(&run_record(run), &[]).unwrap();
}

fn run_record(run: &str) -> RunRecord {
    RunRecord {
        id: run.to_owned(),
        created_at: now_ms(),
        finished_at: None,
        status: RunStatus::Running,
        exit_code: None,
        source: "goal".to_owned(),
        base_commit: "0000000".to_owned(),
        integration_ref: format!("refs/swarm/{run}"),
        options: Value::Null,
    }
}

/// A board with run `run` of one task, `t`.
fn board_with_task(dir: &Path, run: &str) -> Board {
    let mut board = Board::open(dir).unwrap();
    let spec = serde_json::json!({"id": "t", "prompt": "p"});
    board
        .create_run(&run_record(run), &[("t".to_owned(), spec)])
        .unwrap();
    board
}

/// Task `t`'s first attempt starts.
fn start_t(board: &mut Board, run: &str) {
    let start = AttemptStart {
        number: 1,
        transcript: "t-1.log",
        session: None,
        continued: false,
    };
    let started = RunEvent::TaskStarted {
        attempt: 1,
        cwd: ".".to_owned(),
        agent: None,
    };
    board
        .start_attempt(run, "t", &start, &Event::task("t", started))
        .unwrap();
}

fn goal(id: &str, needs: Option<Vec<Need>>) -> GoalRecord {
    GoalRecord {
        id: id.to_owned(),
        text: format!("do {id}"),
        needs,
        status: GoalStatus::Pending,
        reason: None,
        queue_id: None,
    }
}

fn ids(goals: &[GoalRecord]) -> Vec<&str> {
    goals.iter().map(|g| g.id.as_str()).collect()
}

fn event_kinds(board: &Board, run: &str) -> Vec<String> {
    std::fs::read_to_string(board.events_path(run))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[test]
fn a_board_at_version_2_migrates_and_keeps_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let conn = Connection::open(dir.path().join("board.db")).unwrap();
    conn.execute_batch(MIGRATIONS[0]).unwrap();
    conn.execute_batch(MIGRATIONS[1]).unwrap();
    conn.pragma_update(None, "user_version", 2).unwrap();
    conn.execute(
        "INSERT INTO runs (id, created_at, status, source, base_commit, integration_ref, options)
         VALUES ('r1', 1, 'finished', 'tasks.toml', 'abc', 'refs/x', 'null')",
        [],
    )
    .unwrap();
    drop(conn);

    let mut board = Board::open(dir.path()).unwrap();
    let version: usize = board
        .conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, MIGRATIONS.len());
    assert_eq!(
        board.load_run("r1").unwrap().unwrap().status,
        RunStatus::Finished
    );
    // A run recorded before swarm kept the integration tip has none.
    assert_eq!(board.tip("r1").unwrap(), None);
    board.goals_mut().add("r1", &[goal("g1", None)]).unwrap();
    assert_eq!(ids(&board.goals().load("r1").unwrap()), ["g1"]);
}

#[test]
fn an_attempts_tokens_and_its_tasks_totals_with_their_cached_share_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut board = board_with_task(dir.path(), "r1");
    start_t(&mut board, "r1");
    let end = AttemptEnd {
        outcome: "succeeded",
        tokens: 1200,
        prompt_tokens: 1000,
        cached_tokens: 900,
        cost: Some(0.01),
        spawned: &[],
    };
    let totals = TaskUpdate {
        status: Some(TaskStatus::Done),
        tokens: Some(1500),
        prompt_tokens: Some(1250),
        cached_tokens: Some(1000),
        cost: Some(0.02),
        ..TaskUpdate::default()
    };
    let succeeded = RunEvent::TaskSucceeded {
        attempt: 1,
        elapsed_ms: 5,
    };
    board
        .finish_attempt("r1", "t", 1, &end, &totals, &[Event::task("t", succeeded)])
        .unwrap();
    drop(board);

    let board = Board::open(dir.path()).unwrap();
    let task = &board.load_tasks("r1").unwrap()[0];
    assert_eq!(
        (
            task.tokens,
            task.prompt_tokens,
            task.cached_tokens,
            task.cost
        ),
        (1500, 1250, 1000, Some(0.02))
    );
    let attempt = &board.history().attempts("r1", "t").unwrap()[0];
    assert_eq!(
        (attempt.tokens, attempt.prompt_tokens, attempt.cached_tokens),
        (1200, 1000, 900)
    );
}

#[test]
fn a_batch_is_on_record_with_its_log_lines_once_committed_and_not_at_all_before() {
    let dir = tempfile::tempdir().unwrap();
    let mut board = board_with_task(dir.path(), "r1");
    let running = |board: &Board| board.load_tasks("r1").unwrap()[0].status == TaskStatus::Running;

    // Killed before its commit (the connection closed with the batch open): none of it.
    board.begin_batch().unwrap();
    start_t(&mut board, "r1");
    assert!(running(&board), "the batch reads its own writes");
    drop(board);
    let mut board = Board::open(dir.path()).unwrap();
    assert!(!running(&board));
    assert_eq!(event_kinds(&board, "r1"), ["run_started"]);

    board.begin_batch().unwrap();
    start_t(&mut board, "r1");
    assert_eq!(
        event_kinds(&board, "r1"),
        ["run_started"],
        "no line before the commit"
    );
    board.commit_batch().unwrap();
    drop(board);
    let board = Board::open(dir.path()).unwrap();
    assert!(running(&board));
    assert_eq!(event_kinds(&board, "r1"), ["run_started", "task_started"]);
}

#[test]
fn goals_round_trip_with_and_without_needs() {
    let dir = tempfile::tempdir().unwrap();
    let mut board = board_with_run(dir.path(), "r1");
    let needs = vec![Need {
        goal: "g1".to_owned(),
        reason: "uses its API".to_owned(),
    }];
    let mut done = goal("g3", Some(Vec::new()));
    done.status = GoalStatus::Done;
    done.reason = Some("landed".to_owned());
    done.queue_id = Some(7);
    board
        .goals_mut()
        .add(
            "r1",
            &[goal("g1", None), goal("g2", Some(needs.clone())), done],
        )
        .unwrap();

    let goals = board.goals().load("r1").unwrap();
    assert_eq!(ids(&goals), ["g1", "g2", "g3"]);
    assert_eq!(goals[0].needs, None);
    assert_eq!(goals[0].text, "do g1");
    assert_eq!(goals[1].needs.as_ref(), Some(&needs));
    assert_eq!(goals[2].needs, Some(Vec::new()));
    assert_eq!(goals[2].status, GoalStatus::Done);
    assert_eq!(goals[2].reason.as_deref(), Some("landed"));
    assert_eq!(goals[2].queue_id, Some(7));
    assert_eq!(
        event_kinds(&board, "r1"),
        ["run_started", "goal_added", "goal_added", "goal_added"]
    );
}

#[test]
fn goal_positions_continue_across_two_additions() {
    let dir = tempfile::tempdir().unwrap();
    let mut board = board_with_run(dir.path(), "r1");
    // Ids sort the other way round, so only the positions give this order.
    board
        .goals_mut()
        .add("r1", &[goal("z", None), goal("y", None)])
        .unwrap();
    board
        .goals_mut()
        .add("r1", &[goal("b", None), goal("a", None)])
        .unwrap();
    assert_eq!(
        ids(&board.goals().load("r1").unwrap()),
        ["z", "y", "b", "a"]
    );
}

#[test]
fn goal_needs_are_replaced_and_their_events_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let mut board = board_with_run(dir.path(), "r1");
    board
        .goals_mut()
        .add("r1", &[goal("g1", None), goal("g2", None)])
        .unwrap();
    let need = |goal: &str| Need {
        goal: goal.to_owned(),
        reason: "because".to_owned(),
    };
    board
        .goals_mut()
        .set_needs("r1", &[("g2".to_owned(), vec![need("g1")])], &[])
        .unwrap();
    board
        .goals_mut()
        .set_needs(
            "r1",
            &[
                ("g1".to_owned(), Vec::new()),
                ("g2".to_owned(), vec![need("g3")]),
            ],
            &[Event::run(RunEvent::GoalsInferred {
                goals: vec!["g1".into(), "g2".into()],
                edges: 1,
                dropped: 0,
                requests: 1,
                tokens: 0,
            })],
        )
        .unwrap();

    let goals = board.goals().load("r1").unwrap();
    assert_eq!(goals[0].needs, Some(Vec::new()));
    assert_eq!(goals[1].needs, Some(vec![need("g3")]));
    assert_eq!(event_kinds(&board, "r1").last().unwrap(), "goals_inferred");
    assert!(
        board
            .goals_mut()
            .set_needs("r1", &[("g9".to_owned(), Vec::new())], &[])
            .is_err()
    );
}

#[test]
fn goal_status_and_reason_are_set_with_their_event() {
    let dir = tempfile::tempdir().unwrap();
    let mut board = board_with_run(dir.path(), "r1");
    board.goals_mut().add("r1", &[goal("g1", None)]).unwrap();
    let parked = Event::run(RunEvent::GoalEnded {
        goal: "g1".into(),
        status: "parked".into(),
    });
    board
        .goals_mut()
        .set_status("r1", "g1", GoalStatus::Parked, Some("conflict"), &parked)
        .unwrap();
    let g = &board.goals().load("r1").unwrap()[0];
    assert_eq!(
        (g.status, g.reason.as_deref()),
        (GoalStatus::Parked, Some("conflict"))
    );
    assert_eq!(event_kinds(&board, "r1").last().unwrap(), "goal_ended");

    board
        .goals_mut()
        .set_status("r1", "g1", GoalStatus::Planned, None, &parked)
        .unwrap();
    assert_eq!(board.goals().load("r1").unwrap()[0].reason, None);
    assert!(
        board
            .goals_mut()
            .set_status("r1", "g9", GoalStatus::Done, None, &parked)
            .is_err()
    );
}

#[test]
fn take_queue_takes_only_untaken_items_and_numbers_goals_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut board = board_with_run(dir.path(), "r1");
    assert!(board.queue_mut().take("r1").unwrap().is_empty());
    let first: Vec<i64> = ["one", "two", "three"]
        .iter()
        .map(|t| board.queue_mut().add(t).unwrap())
        .collect();

    let taken = board.queue_mut().take("r1").unwrap();
    assert_eq!(ids(&taken), ["g1", "g2", "g3"]);
    assert_eq!(taken[1].text, "two");
    assert_eq!(taken[1].queue_id, Some(first[1]));
    assert!(
        taken
            .iter()
            .all(|g| g.status == GoalStatus::Pending && g.needs.is_none())
    );
    assert!(board.queue_mut().take("r1").unwrap().is_empty());

    let four = board.queue_mut().add("four").unwrap();
    let taken = board.queue_mut().take("r1").unwrap();
    assert_eq!(ids(&taken), ["g4"]);
    assert_eq!(taken[0].queue_id, Some(four));

    let stored = board.goals().load("r1").unwrap();
    assert_eq!(ids(&stored), ["g1", "g2", "g3", "g4"]);
    assert_eq!(stored[3].text, "four");
    let items = board.queue().items().unwrap();
    assert!(items.iter().all(|i| i.run_id.as_deref() == Some("r1")));
    assert_eq!(items[3].goal_id.as_deref(), Some("g4"));
    assert_eq!(
        event_kinds(&board, "r1")
            .iter()
            .filter(|k| *k == "goal_added")
            .count(),
        4
    );
}

#[test]
fn queue_items_hide_finished_runs_and_show_running_ones_with_goal_status() {
    let dir = tempfile::tempdir().unwrap();
    let mut board = board_with_run(dir.path(), "old");
    board.queue_mut().add("finished work").unwrap();
    board.queue_mut().take("old").unwrap();
    let end = Event::run(RunEvent::RunEnded {
        status: "finished".into(),
        exit_code: 0,
        landing: None,
        reason: None,
    });
    board
        .set_run_status("old", RunStatus::Finished, Some(0), &end)
        .unwrap();

    create_run(&mut board, "new");
    let running = board.queue_mut().add("running work").unwrap();
    board.queue_mut().take("new").unwrap();
    let planned = Event::run(RunEvent::GoalPlanned {
        goal: "g1".into(),
        tasks: 1,
        requests: 1,
        tokens: 0,
        repairs: 0,
    });
    board
        .goals_mut()
        .set_status("new", "g1", GoalStatus::Planned, None, &planned)
        .unwrap();
    let waiting = board.queue_mut().add("waiting work").unwrap();

    let items = board.queue().items().unwrap();
    assert_eq!(
        items.iter().map(|i| i.id).collect::<Vec<_>>(),
        [running, waiting]
    );
    assert_eq!(items[0].text, "running work");
    assert_eq!(items[0].run_id.as_deref(), Some("new"));
    assert_eq!(items[0].goal_id.as_deref(), Some("g1"));
    assert_eq!(items[0].goal_status, Some(GoalStatus::Planned));
    assert_eq!(
        (items[1].run_id.as_deref(), items[1].goal_status),
        (None, None)
    );
}

#[test]
fn queue_remove_deletes_untaken_items_and_keeps_taken_ones() {
    let dir = tempfile::tempdir().unwrap();
    let mut board = board_with_run(dir.path(), "r1");
    let taken = board.queue_mut().add("taken").unwrap();
    board.queue_mut().take("r1").unwrap();
    let free = board.queue_mut().add("free").unwrap();

    assert_eq!(
        board.queue_mut().remove(taken).unwrap(),
        QueueRemoval::Taken {
            run: "r1".to_owned(),
            goal: "g1".to_owned()
        }
    );
    assert_eq!(
        board.queue_mut().remove(free).unwrap(),
        QueueRemoval::Removed
    );
    assert_eq!(
        board.queue_mut().remove(free).unwrap(),
        QueueRemoval::NotFound
    );
    let items = board.queue().items().unwrap();
    assert_eq!(items.iter().map(|i| i.id).collect::<Vec<_>>(), [taken]);
}

#[test]
fn two_boards_on_one_file_both_queue() {
    let dir = tempfile::tempdir().unwrap();
    let mut running = board_with_run(dir.path(), "r1");
    let mut other = Board::open(dir.path()).unwrap();
    let a = other.queue_mut().add("from the other process").unwrap();
    let b = running.queue_mut().add("from the running process").unwrap();
    let c = other.queue_mut().add("again from the other").unwrap();
    assert!(a < b && b < c);
    assert_eq!(
        ids(&running.queue_mut().take("r1").unwrap()),
        ["g1", "g2", "g3"]
    );
    assert!(
        other
            .queue()
            .items()
            .unwrap()
            .iter()
            .all(|i| i.goal_id.is_some())
    );
}

#[test]
fn take_queue_waits_for_another_writer_and_sees_its_items() {
    let dir = tempfile::tempdir().unwrap();
    let mut board = board_with_run(dir.path(), "r1");
    board.queue_mut().add("before").unwrap();
    // Another process is in the middle of a write. A deferred transaction would read the
    // old snapshot, then fail to upgrade to a writer once that write commits (SQLITE_BUSY).
    let writer = Connection::open(dir.path().join("board.db")).unwrap();
    writer.execute_batch("BEGIN IMMEDIATE").unwrap();
    writer
        .execute(
            "INSERT INTO queue (text, added_at) VALUES ('during', 0)",
            [],
        )
        .unwrap();
    let commit = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        writer.execute_batch("COMMIT").unwrap();
    });
    let taken = board.queue_mut().take("r1").unwrap();
    commit.join().unwrap();
    assert_eq!(
        taken.iter().map(|g| g.text.as_str()).collect::<Vec<_>>(),
        ["before", "during"]
    );
}
