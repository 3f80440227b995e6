//! The board: run state in `SQLite` (`<git common dir>/swarm/board.db`, WAL), its versioned
//! schema, and each run's append-only event log (`runs/<run>/events.jsonl`). Every change is one
//! transaction, written before anything that depends on it happens. Used from one thread only.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use rusqlite::{Connection, OptionalExtension as _, params};
use serde_json::Value;

mod event;
mod goals;
mod history;
mod memory;
mod open;
mod queue;
mod record;
mod schema;
mod tidy;
mod write;

pub use event::{Delivery, Logged, Moved, Parking, PickedCandidate, RunEvent, RungTried};
pub use goals::Goals;
pub use history::{History, TimeMark};
pub use memory::{Lesson, Memories, Memory, words};
use open::{BUSY_WAIT, damaged, is_busy, refuse_emptied};
pub use open::{damage_hint, is_full};
pub use queue::Queue;
pub use record::{
    AttemptEnd, AttemptRecord, AttemptStart, Event, GoalRecord, GoalStatus, Need, QueueItem,
    QueueRemoval, RunListing, RunRecord, RunStatus, TaskRecord, TaskStatus, TaskUpdate,
};
use schema::migrate;
pub use tidy::Reopening;
use write::{append_event, apply_update, insert_tasks};

/// The board's database, in the swarm directory.
const BOARD_FILE: &str = "board.db";

/// The board's database in `swarm_dir`.
pub fn board_path(swarm_dir: &Path) -> PathBuf {
    swarm_dir.join(BOARD_FILE)
}

/// `e`, met using the board at `board`: when `SQLite` found the disk full, it says which disk
/// (its own words name no file).
pub fn name_full_board(e: anyhow::Error, board: &Path) -> anyhow::Error {
    if is_full(&e) && crate::disk::full(&e).is_none() {
        e.context(crate::disk::Full::at(board))
    } else {
        e
    }
}

/// The board of one repository.
pub struct Board {
    conn: Connection,
    dir: PathBuf,
    log: Option<(String, File)>,
    /// Where the event log's lines go besides its file (`--progress json`, a run's trace).
    echo: Vec<Echo>,
    /// Who is told each attempt's end as it is recorded (a run's trace).
    ended: Option<Ended>,
    /// The event-log lines of a batch not yet committed, by run (see `begin_batch`).
    batch: Option<Vec<(String, Vec<String>)>>,
}

/// Where the event log's lines are copied as they are written.
pub type Echo = Box<dyn FnMut(&str)>;

/// Told each attempt's end as it is recorded: its task, its number and what it used.
pub type Ended = Box<dyn FnMut(&str, u32, &AttemptEnd<'_>)>;

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Board {
    /// Opens (creating and migrating as needed) the board in `swarm_dir`.
    pub fn open(swarm_dir: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(swarm_dir)
            .with_context(|| format!("could not create {}", swarm_dir.display()))?;
        let path = swarm_dir.join(BOARD_FILE);
        refuse_emptied(swarm_dir, &path)?;
        let mut conn = Connection::open(&path)
            .with_context(|| format!("could not open the board {}", path.display()))?;
        let setup = |conn: &mut Connection| -> rusqlite::Result<()> {
            conn.busy_timeout(BUSY_WAIT)?;
            // WAL with synchronous=NORMAL: a commit survives the process being killed at any
            // moment (the case swarm resumes from); only an OS crash can lose the last commits.
            conn.pragma_update(None, "journal_mode", "wal")?;
            conn.pragma_update(None, "synchronous", "normal")?;
            conn.pragma_update(None, "foreign_keys", "on")
        };
        // Swarms opening a fresh board at once: turning on WAL takes the board whole, and
        // SQLite answers "busy" at once instead of waiting for it; so wait here.
        let started = std::time::Instant::now();
        loop {
            match setup(&mut conn)
                .map_err(anyhow::Error::from)
                .and_then(|()| migrate(&mut conn))
            {
                Ok(()) => break,
                Err(e) if is_busy(&e) && started.elapsed() < BUSY_WAIT => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => return Err(damaged(&path, e)),
            }
        }
        open::opened(&path);
        Ok(Self {
            conn,
            dir: swarm_dir.to_owned(),
            log: None,
            echo: Vec::new(),
            ended: None,
            batch: None,
        })
    }

    /// Opens a batch: every write until `commit_batch` goes into one transaction, each still
    /// whole on its own (a savepoint), and their event-log lines wait for the commit. The run
    /// loop writes a pass's records this way; nothing that depends on them may happen before
    /// the commit. Opening a batch while one is open changes nothing.
    pub fn begin_batch(&mut self) -> anyhow::Result<()> {
        if self.batch.is_none() {
            self.conn.execute_batch("BEGIN")?;
            self.batch = Some(Vec::new());
        }
        Ok(())
    }

    /// Commits the open batch, if one is open, then writes its event-log lines. A commit that
    /// fails rolls the whole batch back: none of it is on record.
    pub fn commit_batch(&mut self) -> anyhow::Result<()> {
        let Some(held) = self.batch.take() else {
            return Ok(());
        };
        if let Err(e) = self.conn.execute_batch("COMMIT") {
            if !self.conn.is_autocommit() {
                let _ = self.conn.execute_batch("ROLLBACK");
            }
            return Err(e.into());
        }
        for (run, lines) in held {
            self.write_log(&run, &lines)?;
        }
        Ok(())
    }

    /// Whether a batch is open.
    pub fn batching(&self) -> bool {
        self.batch.is_some()
    }

    /// The board's database file.
    pub fn path(&self) -> PathBuf {
        board_path(&self.dir)
    }

    /// The directory of a run's files.
    pub fn run_dir(&self, run: &str) -> PathBuf {
        self.dir.join("runs").join(run)
    }

    pub fn events_path(&self, run: &str) -> PathBuf {
        self.run_dir(run).join("events.jsonl")
    }

    /// The goals of its runs, to read.
    pub fn goals(&self) -> Goals<&Self> {
        Goals { board: self }
    }

    /// The goals of its runs, to change.
    pub fn goals_mut(&mut self) -> Goals<&mut Self> {
        Goals { board: self }
    }

    /// The repository's queue of goals, to read.
    pub fn queue(&self) -> Queue<&Self> {
        Queue { board: self }
    }

    /// The repository's queue of goals, to change.
    pub fn queue_mut(&mut self) -> Queue<&mut Self> {
        Queue { board: self }
    }

    /// The repository's memory of past goals, to read.
    pub fn memory(&self) -> Memories<&Self> {
        Memories { board: self }
    }

    /// The repository's memory of past goals, to change.
    pub fn memory_mut(&mut self) -> Memories<&mut Self> {
        Memories { board: self }
    }

    /// Reads for looking back at runs.
    pub fn history(&self) -> History<'_> {
        History { board: self }
    }

    /// Records a new run and its tasks.
    pub fn create_run(&mut self, run: &RunRecord, tasks: &[(String, Value)]) -> anyhow::Result<()> {
        std::fs::create_dir_all(self.run_dir(&run.id).join("attempts"))?;
        let tx = self.conn.savepoint()?;
        tx.execute(
            "INSERT INTO runs (id, created_at, status, source, base_commit, integration_ref, options, tip)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?5)",
            params![
                run.id,
                run.created_at,
                run.status.as_str(),
                run.source,
                run.base_commit,
                run.integration_ref,
                run.options.to_string()
            ],
        )?;
        {
            let mut insert = tx.prepare(
                "INSERT INTO tasks (run_id, id, position, spec, status) VALUES (?1, ?2, ?3, ?4, 'pending')",
            )?;
            for (pos, (id, spec)) in tasks.iter().enumerate() {
                insert.execute(params![run.id, id, pos as i64, spec.to_string()])?;
            }
        }
        let lines = vec![append_event(
            &tx,
            &run.id,
            &Event::run(RunEvent::RunStarted {
                tasks: tasks.len(),
                base: run.base_commit.clone(),
            }),
        )?];
        tx.commit()?;
        self.write_log(&run.id, &lines)
    }

    /// Adds the tasks of a run whose plan came after the run was recorded (a planned goal).
    pub fn add_tasks(&mut self, run: &str, tasks: &[(String, Value)]) -> anyhow::Result<()> {
        let tx = self.conn.savepoint()?;
        insert_tasks(&tx, run, tasks)?;
        let line = append_event(
            &tx,
            run,
            &Event::run(RunEvent::PlanReady { tasks: tasks.len() }),
        )?;
        tx.commit()?;
        self.write_log(run, &[line])
    }

    /// Applies one task change and its event in one transaction.
    pub fn update_task(
        &mut self,
        run: &str,
        task: &str,
        update: &TaskUpdate<'_>,
        event: &Event<'_>,
    ) -> anyhow::Result<()> {
        let tx = self.conn.savepoint()?;
        apply_update(&tx, run, task, update)?;
        let line = append_event(&tx, run, event)?;
        tx.commit()?;
        self.write_log(run, &[line])
    }

    /// Records a merge: the task change, the integration tip it made, and its event, in one
    /// transaction.
    pub fn record_merge(
        &mut self,
        run: &str,
        task: &str,
        update: &TaskUpdate<'_>,
        tip: &str,
        event: &Event<'_>,
    ) -> anyhow::Result<()> {
        let tx = self.conn.savepoint()?;
        apply_update(&tx, run, task, update)?;
        tx.prepare_cached("UPDATE runs SET tip = ?1 WHERE id = ?2")?
            .execute(params![tip, run])?;
        let line = append_event(&tx, run, event)?;
        tx.commit()?;
        self.write_log(run, &[line])
    }

    /// Sets the integration tip swarm recorded, with the event that says why.
    pub fn set_tip(&mut self, run: &str, tip: &str, event: &Event<'_>) -> anyhow::Result<()> {
        let tx = self.conn.savepoint()?;
        tx.execute("UPDATE runs SET tip = ?1 WHERE id = ?2", params![tip, run])?;
        let line = append_event(&tx, run, event)?;
        tx.commit()?;
        self.write_log(run, &[line])
    }

    /// Records the newest tip the gate passed on, with its event.
    pub fn set_green(&mut self, run: &str, tip: &str, event: &Event<'_>) -> anyhow::Result<()> {
        let tx = self.conn.savepoint()?;
        tx.execute(
            "UPDATE runs SET green = ?1 WHERE id = ?2",
            params![tip, run],
        )?;
        let line = append_event(&tx, run, event)?;
        tx.commit()?;
        self.write_log(run, &[line])
    }

    /// Sets the integration tip and the newest green tip to `tip`, with its event.
    pub fn set_tip_and_green(
        &mut self,
        run: &str,
        tip: &str,
        event: &Event<'_>,
    ) -> anyhow::Result<()> {
        let tx = self.conn.savepoint()?;
        tx.execute(
            "UPDATE runs SET tip = ?1, green = ?1 WHERE id = ?2",
            params![tip, run],
        )?;
        let line = append_event(&tx, run, event)?;
        tx.commit()?;
        self.write_log(run, &[line])
    }

    /// The newest tip the gate passed on in a run, if any.
    pub fn green(&self, run: &str) -> anyhow::Result<Option<String>> {
        Ok(self
            .conn
            .query_row("SELECT green FROM runs WHERE id = ?1", [run], |r| r.get(0))
            .optional()?
            .flatten())
    }

    /// The integration tip swarm recorded for a run (`None` for runs recorded before swarm
    /// kept it).
    pub fn tip(&self, run: &str) -> anyhow::Result<Option<String>> {
        Ok(self
            .conn
            .query_row("SELECT tip FROM runs WHERE id = ?1", [run], |r| r.get(0))
            .optional()?
            .flatten())
    }

    /// Starts an attempt: the task is running and the attempt is recorded, with the agent's
    /// session when it is known up front (the next attempt continues it, should this one be
    /// cut short) and whether it continues an earlier one.
    pub fn start_attempt(
        &mut self,
        run: &str,
        task: &str,
        start: &AttemptStart<'_>,
        event: &Event<'_>,
    ) -> anyhow::Result<()> {
        let AttemptStart {
            number,
            transcript,
            session,
            continued,
        } = *start;
        let now = now_ms();
        let tx = self.conn.savepoint()?;
        tx.prepare_cached(
            "INSERT OR REPLACE INTO attempts
                 (run_id, task_id, number, started_at, transcript, session, continued)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?
        .execute(params![
            run, task, number, now, transcript, session, continued
        ])?;
        apply_update(
            &tx,
            run,
            task,
            &TaskUpdate {
                status: Some(TaskStatus::Running),
                attempts: Some(number),
                transcript: Some(transcript),
                started_at: Some(now),
                session: Some(session),
                ..TaskUpdate::default()
            },
        )?;
        let line = append_event(&tx, run, event)?;
        tx.commit()?;
        self.write_log(run, &[line])
    }

    /// Ends an attempt and applies the task change it causes, in one transaction.
    pub fn finish_attempt(
        &mut self,
        run: &str,
        task: &str,
        number: u32,
        end: &AttemptEnd<'_>,
        update: &TaskUpdate<'_>,
        events: &[Event<'_>],
    ) -> anyhow::Result<()> {
        let tx = self.conn.savepoint()?;
        // The tasks the attempt spawned join with its end: both, or neither, are on record.
        insert_tasks(&tx, run, end.spawned)?;
        tx.prepare_cached(
            "UPDATE attempts SET finished_at = ?1, outcome = ?2, tokens = ?3, cost = ?4,
                 prompt_tokens = ?5, cached_tokens = ?6
             WHERE run_id = ?7 AND task_id = ?8 AND number = ?9",
        )?
        .execute(params![
            now_ms(),
            end.outcome,
            end.tokens as i64,
            end.cost,
            end.prompt_tokens as i64,
            end.cached_tokens as i64,
            run,
            task,
            number
        ])?;
        apply_update(&tx, run, task, update)?;
        let mut lines = Vec::with_capacity(events.len());
        for e in events {
            lines.push(append_event(&tx, run, e)?);
        }
        tx.commit()?;
        if let Some(ended) = &mut self.ended {
            ended(task, number, end);
        }
        self.write_log(run, &lines)
    }

    /// Marks several tasks with one status (skips, interrupts) in one transaction.
    pub fn mark_tasks(
        &mut self,
        run: &str,
        changes: &[(&str, TaskStatus, Option<&str>)],
        event: fn(Option<String>) -> RunEvent,
    ) -> anyhow::Result<()> {
        if changes.is_empty() {
            return Ok(());
        }
        let tx = self.conn.savepoint()?;
        let mut lines = Vec::with_capacity(changes.len());
        for (task, status, why) in changes {
            apply_update(
                &tx,
                run,
                task,
                &TaskUpdate {
                    status: Some(*status),
                    error: Some(*why),
                    ..TaskUpdate::default()
                },
            )?;
            let what = event(why.map(str::to_owned));
            lines.push(append_event(&tx, run, &Event::task(task, what))?);
        }
        tx.commit()?;
        self.write_log(run, &lines)
    }

    /// Records a run-level event.
    pub fn event(&mut self, run: &str, event: &Event<'_>) -> anyhow::Result<()> {
        let tx = self.conn.savepoint()?;
        let line = append_event(&tx, run, event)?;
        tx.commit()?;
        self.write_log(run, &[line])
    }

    pub fn set_run_status(
        &mut self,
        run: &str,
        status: RunStatus,
        exit_code: Option<i32>,
        event: &Event<'_>,
    ) -> anyhow::Result<()> {
        let tx = self.conn.savepoint()?;
        let finished = (status == RunStatus::Finished).then(now_ms);
        tx.execute(
            "UPDATE runs SET status = ?1, exit_code = ?2, finished_at = ?3 WHERE id = ?4",
            params![status.as_str(), exit_code, finished, run],
        )?;
        let line = append_event(&tx, run, event)?;
        tx.commit()?;
        self.write_log(run, &[line])
    }

    /// Replaces the stored options of a run (a resume may change some).
    pub fn set_run_options(&mut self, run: &str, options: &Value) -> anyhow::Result<()> {
        self.conn.execute(
            "UPDATE runs SET options = ?1 WHERE id = ?2",
            params![options.to_string(), run],
        )?;
        Ok(())
    }

    /// Every run's id, oldest first.
    pub fn run_ids(&self) -> anyhow::Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id FROM runs ORDER BY created_at, id")?;
        let ids = stmt.query_map([], |r| r.get(0))?;
        Ok(ids.collect::<Result<_, _>>()?)
    }

    /// The newest run, or the newest one not finished.
    pub fn latest_run(&self, unfinished: bool) -> anyhow::Result<Option<String>> {
        let sql = if unfinished {
            "SELECT id FROM runs WHERE status != 'finished' ORDER BY created_at DESC, id DESC LIMIT 1"
        } else {
            "SELECT id FROM runs ORDER BY created_at DESC, id DESC LIMIT 1"
        };
        Ok(self.conn.query_row(sql, [], |r| r.get(0)).optional()?)
    }

    pub fn load_run(&self, run: &str) -> anyhow::Result<Option<RunRecord>> {
        self.conn
            .query_row(
                "SELECT id, created_at, finished_at, status, exit_code, source, base_commit,
                        integration_ref, options FROM runs WHERE id = ?1",
                [run],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get::<_, String>(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                        r.get(7)?,
                        r.get::<_, String>(8)?,
                    ))
                },
            )
            .optional()?
            .map(
                |(id, created_at, finished_at, status, exit_code, source, base, integ, opts)| {
                    Ok(RunRecord {
                        id,
                        created_at,
                        finished_at,
                        status: RunStatus::parse(&status)?,
                        exit_code,
                        source,
                        base_commit: base,
                        integration_ref: integ,
                        options: serde_json::from_str(&opts).context("stored run options")?,
                    })
                },
            )
            .transpose()
    }

    /// The tasks of a run in plan order.
    pub fn load_tasks(&self, run: &str) -> anyhow::Result<Vec<TaskRecord>> {
        let mut stmt = self.conn.prepare(
            "SELECT id, spec, status, attempts, failures, result, error, transcript, started_at,
                    finished_at, elapsed_ms, branch, start_commit, commit_id, tokens, cost,
                    session, prompt_tokens, cached_tokens
             FROM tasks WHERE run_id = ?1 ORDER BY position",
        )?;
        let rows = stmt.query_map([run], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                TaskRecord {
                    id: String::new(),
                    spec: Value::Null,
                    status: TaskStatus::Pending,
                    attempts: r.get(3)?,
                    failures: r.get(4)?,
                    result: r.get(5)?,
                    error: r.get(6)?,
                    transcript: r.get(7)?,
                    started_at: r.get(8)?,
                    finished_at: r.get(9)?,
                    elapsed_ms: r.get(10)?,
                    branch: r.get(11)?,
                    start_commit: r.get(12)?,
                    commit_id: r.get(13)?,
                    tokens: r.get::<_, i64>(14)?.max(0) as u64,
                    cost: r.get(15)?,
                    session: r.get(16)?,
                    prompt_tokens: r.get::<_, i64>(17)?.max(0) as u64,
                    cached_tokens: r.get::<_, i64>(18)?.max(0) as u64,
                },
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, spec, status, mut rec) = row?;
            rec.id = id;
            rec.spec = serde_json::from_str(&spec).context("stored task")?;
            rec.status = TaskStatus::parse(&status)?;
            out.push(rec);
        }
        Ok(out)
    }

    /// Why task `task` of run `run` ended as it did, as the board says (`error`), if it says.
    pub fn task_error(&self, run: &str, task: &str) -> anyhow::Result<Option<String>> {
        let error = self
            .conn
            .prepare_cached("SELECT error FROM tasks WHERE run_id = ?1 AND id = ?2")?
            .query_row([run, task], |r| r.get::<_, Option<String>>(0))
            .optional()?;
        Ok(error.flatten())
    }

    /// The attempts of a run that continued an earlier attempt's session: (task, number).
    pub fn continued_attempts(&self, run: &str) -> anyhow::Result<Vec<(String, u32)>> {
        let mut stmt = self.conn.prepare(
            "SELECT task_id, number FROM attempts WHERE run_id = ?1 AND continued != 0
             ORDER BY task_id, number",
        )?;
        let rows = stmt.query_map([run], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Updates a task with no event: for what the log need not tell (the session a task's next
    /// attempt continues, its totals after a rung of the conflict ladder).
    pub fn update_task_quietly(
        &mut self,
        run: &str,
        task: &str,
        update: &TaskUpdate<'_>,
    ) -> anyhow::Result<()> {
        let tx = self.conn.savepoint()?;
        apply_update(&tx, run, task, update)?;
        tx.commit()?;
        Ok(())
    }

    /// Attempts of a run whose outcome is not success, for reports: (task, number, outcome,
    /// transcript).
    pub fn failed_attempts(&self, run: &str) -> anyhow::Result<Vec<(String, u32, String, String)>> {
        let mut stmt = self.conn.prepare(
            "SELECT task_id, number, COALESCE(outcome, 'unfinished'), transcript FROM attempts
             WHERE run_id = ?1 AND (outcome IS NULL OR outcome != 'succeeded')
             ORDER BY started_at, task_id, number",
        )?;
        let rows = stmt.query_map([run], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn write_log(&mut self, run: &str, lines: &[String]) -> anyhow::Result<()> {
        if let Some(held) = &mut self.batch {
            match held.last_mut() {
                Some((r, kept)) if r == run => kept.extend_from_slice(lines),
                _ => held.push((run.to_owned(), lines.to_vec())),
            }
            return Ok(());
        }
        let (_, file) = match self.log.take() {
            Some(open) if open.0 == run => self.log.insert(open),
            _ => {
                let path = self.events_path(run);
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .map_err(|e| crate::disk::name(&path, e))
                    .with_context(|| format!("could not open {}", path.display()))?;
                self.log.insert((run.to_owned(), file))
            }
        };
        let mut buf = String::new();
        for l in lines {
            buf.push_str(l);
            buf.push('\n');
        }
        file.write_all(buf.as_bytes())
            .map_err(|e| crate::disk::name(&self.events_path(run), e))?;
        for echo in &mut self.echo {
            for l in lines {
                echo(l);
            }
        }
        Ok(())
    }

    /// Hands every line the event log gets to `echo` too, once it is written (after those
    /// handed it before).
    pub fn echo_events(&mut self, echo: Echo) {
        self.echo.push(echo);
    }

    /// Tells `ended` each attempt's end as it is recorded, before its events' lines.
    pub fn tell_attempt_ends(&mut self, ended: Ended) {
        self.ended = Some(ended);
    }
}

#[cfg(test)]
mod tests;
