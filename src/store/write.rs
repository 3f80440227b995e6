//! The writes several of `Board`'s transactions share: a task's update, new goals, and an event
//! appended to the board (returning its `events.jsonl` line). Each runs inside a transaction its
//! caller opened and commits.

use rusqlite::{Connection, params};

use super::{Event, GoalRecord, RunEvent, TaskUpdate, now_ms};

/// Sets the fields `u` gives on one task; an update that gives none writes nothing.
pub(super) fn apply_update(
    tx: &Connection,
    run: &str,
    task: &str,
    u: &TaskUpdate<'_>,
) -> anyhow::Result<()> {
    use rusqlite::types::Value as V;
    let mut sets: Vec<&str> = Vec::new();
    let mut values: Vec<rusqlite::types::Value> = Vec::new();
    let mut set = |col: &'static str, v: rusqlite::types::Value| {
        sets.push(col);
        values.push(v);
    };
    let text = |s: &str| V::Text(crate::secret::redact(s).into_owned());
    if let Some(s) = u.status {
        set("status", text(s.as_str()));
    }
    if let Some(n) = u.attempts {
        set("attempts", V::Integer(n.into()));
    }
    if let Some(n) = u.failures {
        set("failures", V::Integer(n.into()));
    }
    if let Some(r) = u.result {
        set("result", text(r));
    }
    if let Some(e) = u.error {
        set("error", e.map_or(V::Null, text));
    }
    if let Some(t) = u.transcript {
        set("transcript", text(t));
    }
    if let Some(t) = u.started_at {
        set("started_at", V::Integer(t));
    }
    if let Some(t) = u.finished_at {
        set("finished_at", V::Integer(t));
    }
    if let Some(t) = u.elapsed_ms {
        set("elapsed_ms", V::Integer(t));
    }
    if let Some(b) = u.branch {
        set("branch", text(b));
    }
    if let Some(c) = u.start_commit {
        set("start_commit", text(c));
    }
    if let Some(c) = u.commit_id {
        set("commit_id", text(c));
    }
    if let Some(t) = u.tokens {
        set("tokens", V::Integer(t as i64));
    }
    if let Some(t) = u.prompt_tokens {
        set("prompt_tokens", V::Integer(t as i64));
    }
    if let Some(t) = u.cached_tokens {
        set("cached_tokens", V::Integer(t as i64));
    }
    if let Some(c) = u.cost {
        set("cost", V::Real(c));
    }
    if let Some(s) = u.session {
        set("session", s.map_or(V::Null, text));
    }
    if sets.is_empty() {
        return Ok(());
    }
    let assignments: Vec<String> = sets
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{c} = ?{}", i + 1))
        .collect();
    let sql = format!(
        "UPDATE tasks SET {} WHERE run_id = ?{} AND id = ?{}",
        assignments.join(", "),
        values.len() + 1,
        values.len() + 2
    );
    values.push(text(run));
    values.push(text(task));
    // Cached: a run repeats a handful of shapes of this update thousands of times.
    let changed = tx
        .prepare_cached(&sql)?
        .execute(rusqlite::params_from_iter(values))?;
    anyhow::ensure!(changed == 1, "task {task} of run {run} is not in the board");
    Ok(())
}

/// Adds tasks to a run, after its tasks so far (goals planned and tasks spawned one after
/// another keep their order), each pending.
pub(super) fn insert_tasks(
    tx: &Connection,
    run: &str,
    tasks: &[(String, serde_json::Value)],
) -> anyhow::Result<()> {
    if tasks.is_empty() {
        return Ok(());
    }
    let first: i64 = tx.query_row(
        "SELECT COALESCE(MAX(position) + 1, 0) FROM tasks WHERE run_id = ?1",
        [run],
        |r| r.get(0),
    )?;
    let mut insert = tx.prepare_cached(
        "INSERT INTO tasks (run_id, id, position, spec, status) VALUES (?1, ?2, ?3, ?4, 'pending')",
    )?;
    for (pos, (id, spec)) in tasks.iter().enumerate() {
        insert.execute(rusqlite::params![
            run,
            id,
            first + pos as i64,
            spec.to_string()
        ])?;
    }
    Ok(())
}

/// Inserts goals after the run's existing ones and returns their `goal_added` event lines.
pub(super) fn insert_goals(
    tx: &Connection,
    run: &str,
    goals: &[GoalRecord],
) -> anyhow::Result<Vec<String>> {
    let next: i64 = tx.query_row(
        "SELECT COALESCE(MAX(position), -1) + 1 FROM goals WHERE run_id = ?1",
        [run],
        |r| r.get(0),
    )?;
    let mut insert = tx.prepare(
        "INSERT INTO goals (run_id, id, position, text, needs, status, reason, queue_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    let mut lines = Vec::with_capacity(goals.len());
    for (pos, g) in (next..).zip(goals) {
        let needs = g.needs.as_ref().map(serde_json::to_string).transpose()?;
        insert.execute(params![
            run,
            g.id,
            pos,
            g.text,
            needs,
            g.status.as_str(),
            g.reason,
            g.queue_id
        ])?;
        let added = RunEvent::GoalAdded {
            goal: g.id.clone(),
            text: g.text.clone(),
        };
        lines.push(append_event(tx, run, &Event::run(added))?);
    }
    Ok(lines)
}

/// Appends an event to the board and returns its `events.jsonl` line.
pub(super) fn append_event(tx: &Connection, run: &str, e: &Event<'_>) -> anyhow::Result<String> {
    let at = now_ms();
    let seq: i64 = tx
        .prepare_cached("SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE run_id = ?1")?
        .query_row([run], |r| r.get(0))?;
    let (kind, mut value) = e.what.kind_and_detail();
    // Hidden in the value, not its text: the text of a secret holding `"` or `\` is escaped.
    crate::secret::redact_json(&mut value);
    let detail = value.to_string();
    tx.prepare_cached(
        "INSERT INTO events (run_id, seq, at, kind, task_id, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![run, seq, at, kind, e.task, detail])?;
    let mut line = serde_json::json!({ "seq": seq, "at": at, "kind": kind });
    if let Some(t) = e.task {
        line["task"] = t.into();
    }
    if !value.is_null() {
        line["detail"] = value;
    }
    Ok(line.to_string())
}
