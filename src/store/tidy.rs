//! The board's side of tidying runs by hand: a run dropped whole (`swarm drop`), and a task of
//! an unfinished run put back to run again (`swarm retry`). Each is one transaction.

use rusqlite::params;

use super::write::append_event;
use super::{Board, Event, GoalStatus, RunEvent, TaskStatus};

/// What dropping a run took out of the board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// How many tasks it had.
    pub tasks: usize,
    /// The queue's goals it had taken, back in the queue (their numbers).
    pub requeued: Vec<i64>,
}

/// A task of an unfinished run put back to run again, and what goes back with it.
#[derive(Debug, Clone)]
pub struct Reopening<'a> {
    pub task: &'a str,
    /// The branch its earlier work is kept on, if it had any.
    pub kept: Option<&'a str>,
    /// Its attempt count from now on: its next attempt is the one after.
    pub attempts: u32,
    /// Its dependents skipped because of it: they wait again.
    pub dependents: &'a [String],
    /// Goals that open again, each with the status it goes back to.
    pub goals: &'a [(String, GoalStatus)],
}

impl Board {
    /// Takes a run out of the board: its record, tasks, attempts, merges, events and goals.
    /// The goals it took from the queue go back to the queue, waiting for the next run that
    /// drains it. Its files (the run's directory) are the caller's.
    pub fn drop_run(&mut self, run: &str) -> anyhow::Result<Dropped> {
        let tx = self.conn.savepoint()?;
        let tasks: i64 =
            tx.query_row("SELECT COUNT(*) FROM tasks WHERE run_id = ?1", [run], |r| {
                r.get(0)
            })?;
        let requeued: Vec<i64> = {
            let mut stmt = tx.prepare("SELECT id FROM queue WHERE run_id = ?1 ORDER BY id")?;
            stmt.query_map([run], |r| r.get(0))?
                .collect::<Result<_, _>>()?
        };
        tx.execute(
            "UPDATE queue SET run_id = NULL, goal_id = NULL WHERE run_id = ?1",
            [run],
        )?;
        for table in ["events", "attempts", "merges", "goals", "tasks"] {
            tx.execute(&format!("DELETE FROM {table} WHERE run_id = ?1"), [run])?;
        }
        let gone = tx.execute("DELETE FROM runs WHERE id = ?1", [run])?;
        anyhow::ensure!(gone == 1, "run {run} is not in the board");
        tx.commit()?;
        if self.log.as_ref().is_some_and(|(open, _)| open == run) {
            self.log = None;
        }
        Ok(Dropped {
            tasks: tasks.max(0) as usize,
            requeued,
        })
    }

    /// Puts a parked or failed task of an unfinished run back to pending, afresh: no failure
    /// counted, no error, no session to continue, no commit; its skipped dependents and the
    /// goals given go back with it. A resume then runs them.
    pub fn reopen_task(&mut self, run: &str, r: &Reopening<'_>) -> anyhow::Result<()> {
        let tx = self.conn.savepoint()?;
        let changed = tx.execute(
            "UPDATE tasks SET status = ?1, attempts = ?2, failures = 0, result = NULL,
                    error = NULL, started_at = NULL, finished_at = NULL, start_commit = NULL,
                    commit_id = NULL, session = NULL
             WHERE run_id = ?3 AND id = ?4",
            params![TaskStatus::Pending.as_str(), r.attempts, run, r.task],
        )?;
        anyhow::ensure!(
            changed == 1,
            "task {} of run {run} is not in the board",
            r.task
        );
        let mut lines = vec![append_event(
            &tx,
            run,
            &Event::task(
                r.task,
                RunEvent::TaskRetried {
                    kept: r.kept.map(str::to_owned),
                    after: None,
                },
            ),
        )?];
        for d in r.dependents {
            tx.execute(
                "UPDATE tasks SET status = ?1, error = NULL
                 WHERE run_id = ?2 AND id = ?3 AND status = ?4",
                params![
                    TaskStatus::Pending.as_str(),
                    run,
                    d,
                    TaskStatus::Skipped.as_str()
                ],
            )?;
            let back = RunEvent::TaskRetried {
                kept: None,
                after: Some(r.task.to_owned()),
            };
            lines.push(append_event(&tx, run, &Event::task(d, back))?);
        }
        for (goal, status) in r.goals {
            tx.execute(
                "UPDATE goals SET status = ?1, reason = NULL WHERE run_id = ?2 AND id = ?3",
                params![status.as_str(), run, goal],
            )?;
            let reopened = RunEvent::GoalReopened {
                goal: goal.clone(),
                status: status.as_str().to_owned(),
                after: r.task.to_owned(),
            };
            lines.push(append_event(&tx, run, &Event::run(reopened))?);
        }
        tx.commit()?;
        self.write_log(run, &lines)
    }
}
