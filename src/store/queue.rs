//! The repository's queue of goals on the board: goals queued from any process for the next
//! run (or the running one) to take.

use rusqlite::{OptionalExtension as _, TransactionBehavior, params};

use super::write::insert_goals;
use super::{Board, GoalRecord, GoalStatus, QueueItem, QueueRemoval, now_ms};

/// The repository's queue of goals, borrowed from the board: `board.queue()` reads it,
/// `board.queue_mut()` changes it.
pub struct Queue<B> {
    pub(super) board: B,
}

impl Queue<&Board> {
    /// Items not taken yet, and items taken by runs that have not finished, in queue order.
    pub fn items(&self) -> anyhow::Result<Vec<QueueItem>> {
        let mut stmt = self.board.conn.prepare(
            "SELECT q.id, q.text, q.added_at, q.run_id, q.goal_id, g.status
             FROM queue q
             LEFT JOIN runs r ON r.id = q.run_id
             LEFT JOIN goals g ON g.run_id = q.run_id AND g.id = q.goal_id
             WHERE q.run_id IS NULL OR r.status IS NULL OR r.status != 'finished'
             ORDER BY q.id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                QueueItem {
                    id: r.get(0)?,
                    text: r.get(1)?,
                    added_at: r.get(2)?,
                    run_id: r.get(3)?,
                    goal_id: r.get(4)?,
                    goal_status: None,
                },
                r.get::<_, Option<String>>(5)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (mut item, status) = row?;
            item.goal_status = status.as_deref().map(GoalStatus::parse).transpose()?;
            out.push(item);
        }
        Ok(out)
    }
}

impl Queue<&mut Board> {
    /// An immediate transaction: it takes the write lock up front. None can open inside a
    /// batch (see `Board::begin_batch`), so what a batch holds is committed first.
    fn immediate(&mut self) -> anyhow::Result<rusqlite::Transaction<'_>> {
        self.board.commit_batch()?;
        Ok(self
            .board
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?)
    }

    /// Queues a goal for the next run to take; returns its id. Called from another process
    /// than the one running, hence the immediate transaction: it waits for the write lock up
    /// front instead of failing on a lock upgrade.
    pub fn add(&mut self, text: &str) -> anyhow::Result<i64> {
        let tx = self.immediate()?;
        tx.execute(
            "INSERT INTO queue (text, added_at) VALUES (?1, ?2)",
            params![text, now_ms()],
        )?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
    }

    /// Removes a queue item no run has taken yet.
    pub fn remove(&mut self, id: i64) -> anyhow::Result<QueueRemoval> {
        let tx = self.immediate()?;
        let taken: Option<(Option<String>, Option<String>)> = tx
            .query_row(
                "SELECT run_id, goal_id FROM queue WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let removal = match taken {
            None => QueueRemoval::NotFound,
            Some((Some(run), goal)) => QueueRemoval::Taken {
                run,
                goal: goal.unwrap_or_default(),
            },
            Some((None, _)) => {
                tx.execute("DELETE FROM queue WHERE id = ?1", [id])?;
                QueueRemoval::Removed
            }
        };
        tx.commit()?;
        Ok(removal)
    }

    /// Makes every item nobody took yet a pending goal of `run`, in one immediate transaction
    /// so that two runs never take the same item; returns the new goals.
    pub fn take(&mut self, run: &str) -> anyhow::Result<Vec<GoalRecord>> {
        let tx = self.immediate()?;
        let items: Vec<(i64, String)> = {
            let mut stmt =
                tx.prepare("SELECT id, text FROM queue WHERE run_id IS NULL ORDER BY id")?;
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?
        };
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let existing: i64 =
            tx.query_row("SELECT COUNT(*) FROM goals WHERE run_id = ?1", [run], |r| {
                r.get(0)
            })?;
        let goals: Vec<GoalRecord> = items
            .into_iter()
            .zip(existing + 1..)
            .map(|((queue_id, text), n)| GoalRecord {
                id: format!("g{n}"),
                text,
                needs: None,
                status: GoalStatus::Pending,
                reason: None,
                queue_id: Some(queue_id),
            })
            .collect();
        let lines = insert_goals(&tx, run, &goals)?;
        {
            let mut take =
                tx.prepare("UPDATE queue SET run_id = ?1, goal_id = ?2 WHERE id = ?3")?;
            for g in &goals {
                take.execute(params![run, g.id, g.queue_id])?;
            }
        }
        tx.commit()?;
        self.board.write_log(run, &lines)?;
        Ok(goals)
    }
}
