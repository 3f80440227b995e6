//! A run's goals and the repository's queue of goals on the board.

use anyhow::Context as _;
use rusqlite::{OptionalExtension as _, TransactionBehavior, params};

use super::write::{append_event, insert_goals};
use super::{Board, Event, GoalRecord, GoalStatus, Need, QueueItem, QueueRemoval, now_ms};

impl Board {
    /// Adds goals to a run, after its existing ones.
    pub fn add_goals(&mut self, run: &str, goals: &[GoalRecord]) -> anyhow::Result<()> {
        let tx = self.conn.transaction()?;
        let lines = insert_goals(&tx, run, goals)?;
        tx.commit()?;
        self.write_log(run, &lines)
    }

    /// Stores the result of the dependency pass: each goal's needs (replacing) and its events.
    pub fn set_goal_needs(
        &mut self,
        run: &str,
        needs: &[(String, Vec<Need>)],
        events: &[Event<'_>],
    ) -> anyhow::Result<()> {
        let tx = self.conn.transaction()?;
        for (goal, goal_needs) in needs {
            let changed = tx.execute(
                "UPDATE goals SET needs = ?1 WHERE run_id = ?2 AND id = ?3",
                params![serde_json::to_string(goal_needs)?, run, goal],
            )?;
            anyhow::ensure!(changed == 1, "goal {goal} of run {run} is not in the board");
        }
        let mut lines = Vec::with_capacity(events.len());
        for e in events {
            lines.push(append_event(&tx, run, e)?);
        }
        tx.commit()?;
        self.write_log(run, &lines)
    }

    /// Sets a goal's status and reason (`None` clears it) with its event.
    pub fn set_goal_status(
        &mut self,
        run: &str,
        goal: &str,
        status: GoalStatus,
        reason: Option<&str>,
        event: &Event<'_>,
    ) -> anyhow::Result<()> {
        let tx = self.conn.transaction()?;
        let reason = reason.map(|r| crate::secret::redact(r).into_owned());
        let changed = tx.execute(
            "UPDATE goals SET status = ?1, reason = ?2 WHERE run_id = ?3 AND id = ?4",
            params![status.as_str(), reason, run, goal],
        )?;
        anyhow::ensure!(changed == 1, "goal {goal} of run {run} is not in the board");
        let line = append_event(&tx, run, event)?;
        tx.commit()?;
        self.write_log(run, &[line])
    }

    /// The goals of a run in the order they were added.
    pub fn load_goals(&self, run: &str) -> anyhow::Result<Vec<GoalRecord>> {
        let mut stmt = self.conn.prepare(
            "SELECT id, text, needs, status, reason, queue_id FROM goals
             WHERE run_id = ?1 ORDER BY position",
        )?;
        let rows = stmt.query_map([run], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, Option<i64>>(5)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, text, needs, status, reason, queue_id) = row?;
            out.push(GoalRecord {
                needs: needs
                    .map(|n| serde_json::from_str(&n))
                    .transpose()
                    .with_context(|| format!("stored needs of goal {id}"))?,
                status: GoalStatus::parse(&status)?,
                id,
                text,
                reason,
                queue_id,
            });
        }
        Ok(out)
    }

    /// Queues a goal for the next run to take; returns its id. Called from another process
    /// than the one running, hence the immediate transaction: it waits for the write lock up
    /// front instead of failing on a lock upgrade.
    pub fn queue_add(&mut self, text: &str) -> anyhow::Result<i64> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO queue (text, added_at) VALUES (?1, ?2)",
            params![text, now_ms()],
        )?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
    }

    /// Items not taken yet, and items taken by runs that have not finished, in queue order.
    pub fn queue_items(&self) -> anyhow::Result<Vec<QueueItem>> {
        let mut stmt = self.conn.prepare(
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

    /// Removes a queue item no run has taken yet.
    pub fn queue_remove(&mut self, id: i64) -> anyhow::Result<QueueRemoval> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
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
    pub fn take_queue(&mut self, run: &str) -> anyhow::Result<Vec<GoalRecord>> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
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
        self.write_log(run, &lines)?;
        Ok(goals)
    }
}
