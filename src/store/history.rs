//! Reads for looking at runs afterwards (`swarm runs`, `swarm show`, `swarm status`): the runs
//! of the repository, one task's attempts and one task's events. They change nothing.

use rusqlite::OptionalExtension as _;

use super::{AttemptRecord, Board, RunEvent, RunListing, RunStatus};

/// Where a swarm running a run stopped or a new one took it up (see `History::time_marks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeMark {
    /// A swarm took the run up again; `before` is when the run's log last heard of it.
    Resumed { before: Option<i64> },
    /// The swarm running it ended it (finished, stopped, or gave it up while planning).
    Ended,
}

/// The board read for looking back at runs, borrowed from it (`board.history()`).
pub struct History<'b> {
    pub(super) board: &'b Board,
}

impl History<'_> {
    /// Every run of the repository, newest first, with its task count and its last event
    /// (when it was, and what: for a run that ended, the one that ended it).
    pub fn runs(&self) -> anyhow::Result<Vec<RunListing>> {
        let mut stmt = self.board.conn.prepare(
            "SELECT r.id, r.created_at, r.finished_at, r.status, r.exit_code, r.source,
                    (SELECT COUNT(*) FROM tasks t WHERE t.run_id = r.id),
                    e.at, e.kind, e.detail
             FROM runs r
             LEFT JOIN events e ON e.run_id = r.id
                 AND e.seq = (SELECT MAX(seq) FROM events WHERE run_id = r.id)
             ORDER BY r.created_at DESC, r.id DESC",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                RunListing {
                    id: r.get(0)?,
                    created_at: r.get(1)?,
                    finished_at: r.get(2)?,
                    status: RunStatus::Running,
                    exit_code: r.get(4)?,
                    source: r.get(5)?,
                    tasks: r.get::<_, i64>(6)?.max(0) as usize,
                    last_event_at: r.get(7)?,
                    last_event: None,
                },
                r.get::<_, String>(3)?,
                r.get::<_, Option<String>>(8)?,
                r.get::<_, Option<String>>(9)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (mut listing, status, kind, detail) = row?;
            listing.status = RunStatus::parse(&status)?;
            listing.last_event = kind.and_then(|k| typed(&k, detail.as_deref().unwrap_or("null")));
            out.push(listing);
        }
        Ok(out)
    }

    /// The time of a run's last event, if it has one.
    pub fn last_event_at(&self, run: &str) -> anyhow::Result<Option<i64>> {
        Ok(self
            .board
            .conn
            .query_row(
                "SELECT at FROM events WHERE run_id = ?1 ORDER BY seq DESC LIMIT 1",
                [run],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// When each swarm that ran a run stopped and the next took it up, from its log, in order:
    /// each end (`run_ended`, `run_abandoned`) and each resume, with the time of the event
    /// before it (where the swarm before it stopped when it was killed and said nothing).
    pub fn time_marks(&self, run: &str) -> anyhow::Result<Vec<(i64, TimeMark)>> {
        let mut stmt = self.board.conn.prepare_cached(
            "SELECT e.at, e.kind,
                    (SELECT p.at FROM events p WHERE p.run_id = e.run_id AND p.seq = e.seq - 1)
             FROM events e
             WHERE e.run_id = ?1 AND e.kind IN ('run_resumed', 'run_ended', 'run_abandoned')
             ORDER BY e.seq",
        )?;
        let rows = stmt.query_map([run], |r| {
            let at: i64 = r.get(0)?;
            let kind: String = r.get(1)?;
            let before: Option<i64> = r.get(2)?;
            Ok((
                at,
                if kind == "run_resumed" {
                    TimeMark::Resumed { before }
                } else {
                    TimeMark::Ended
                },
            ))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The runs that have a task `task`, newest first.
    pub fn runs_with_task(&self, task: &str) -> anyhow::Result<Vec<String>> {
        let mut stmt = self.board.conn.prepare(
            "SELECT r.id FROM runs r JOIN tasks t ON t.run_id = r.id AND t.id = ?1
             ORDER BY r.created_at DESC, r.id DESC",
        )?;
        let ids = stmt.query_map([task], |r| r.get(0))?;
        Ok(ids.collect::<Result<_, _>>()?)
    }

    /// A task's attempts, first first.
    pub fn attempts(&self, run: &str, task: &str) -> anyhow::Result<Vec<AttemptRecord>> {
        let mut stmt = self.board.conn.prepare(
            "SELECT number, started_at, finished_at, outcome, transcript, session, continued,
                    tokens, cost, prompt_tokens, cached_tokens
             FROM attempts WHERE run_id = ?1 AND task_id = ?2 ORDER BY number",
        )?;
        let rows = stmt.query_map([run, task], |r| {
            Ok(AttemptRecord {
                number: r.get(0)?,
                started_at: r.get(1)?,
                finished_at: r.get(2)?,
                outcome: r.get(3)?,
                transcript: r.get(4)?,
                session: r.get(5)?,
                continued: r.get::<_, i64>(6)? != 0,
                tokens: r.get::<_, i64>(7)?.max(0) as u64,
                cost: r.get(8)?,
                prompt_tokens: r.get::<_, i64>(9)?.max(0) as u64,
                cached_tokens: r.get::<_, i64>(10)?.max(0) as u64,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// What happened to one task, in order: (time, event). An event this swarm does not know
    /// (a newer swarm's) is left out.
    pub fn task_events(&self, run: &str, task: &str) -> anyhow::Result<Vec<(i64, RunEvent)>> {
        let mut stmt = self.board.conn.prepare(
            "SELECT at, kind, detail FROM events WHERE run_id = ?1 AND task_id = ?2 ORDER BY seq",
        )?;
        let rows = stmt.query_map([run, task], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (at, kind, detail) = row?;
            if let Some(event) = typed(&kind, &detail) {
                out.push((at, event));
            }
        }
        Ok(out)
    }
}

/// An event as the board stores it (`kind`, and `detail` as JSON text), read back; `None` for
/// one this swarm does not know (a newer swarm's).
fn typed(kind: &str, detail: &str) -> Option<RunEvent> {
    let mut line = serde_json::json!({ "kind": kind });
    let detail: serde_json::Value = serde_json::from_str(detail).unwrap_or_default();
    if !detail.is_null() {
        line["detail"] = detail;
    }
    serde_json::from_value(line).ok()
}
