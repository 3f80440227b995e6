//! A run's goals on the board: adding them, their needs and status, reading them back.

use anyhow::Context as _;
use rusqlite::params;

use super::write::{append_event, insert_goals};
use super::{Board, Event, GoalRecord, GoalStatus, Need};

/// The goals of the board's runs, borrowed from the board: `board.goals()` reads them,
/// `board.goals_mut()` changes them.
pub struct Goals<B> {
    pub(super) board: B,
}

impl Goals<&Board> {
    /// The goals of a run in the order they were added.
    pub fn load(&self, run: &str) -> anyhow::Result<Vec<GoalRecord>> {
        let mut stmt = self.board.conn.prepare(
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
}

impl Goals<&mut Board> {
    /// Adds goals to a run, after its existing ones.
    pub fn add(&mut self, run: &str, goals: &[GoalRecord]) -> anyhow::Result<()> {
        let tx = self.board.conn.savepoint()?;
        let lines = insert_goals(&tx, run, goals)?;
        tx.commit()?;
        self.board.write_log(run, &lines)
    }

    /// Stores the result of the dependency pass: each goal's needs (replacing) and its events.
    pub fn set_needs(
        &mut self,
        run: &str,
        needs: &[(String, Vec<Need>)],
        events: &[Event<'_>],
    ) -> anyhow::Result<()> {
        let tx = self.board.conn.savepoint()?;
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
        self.board.write_log(run, &lines)
    }

    /// Sets a goal's status and reason (`None` clears it) with its event.
    pub fn set_status(
        &mut self,
        run: &str,
        goal: &str,
        status: GoalStatus,
        reason: Option<&str>,
        event: &Event<'_>,
    ) -> anyhow::Result<()> {
        let tx = self.board.conn.savepoint()?;
        let reason = reason.map(|r| crate::secret::redact(r).into_owned());
        let changed = tx.execute(
            "UPDATE goals SET status = ?1, reason = ?2 WHERE run_id = ?3 AND id = ?4",
            params![status.as_str(), reason, run, goal],
        )?;
        anyhow::ensure!(changed == 1, "goal {goal} of run {run} is not in the board");
        let line = append_event(&tx, run, event)?;
        tx.commit()?;
        self.board.write_log(run, &[line])
    }
}
