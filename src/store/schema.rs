//! The board's schema: append-only migrations counted by `PRAGMA user_version`, read and applied
//! in one exclusive transaction, so swarms opening a fresh board at once migrate it once. A
//! board made by a newer swarm is refused, never touched.

use anyhow::bail;
use rusqlite::{Connection, TransactionBehavior};

/// Schema migrations, append-only: migration `i` takes the board from version `i` to `i + 1`.
pub(super) const MIGRATIONS: &[&str] = &[
    r"
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,
    finished_at INTEGER,
    status TEXT NOT NULL,
    exit_code INTEGER,
    source TEXT NOT NULL,
    base_commit TEXT NOT NULL,
    integration_ref TEXT NOT NULL,
    options TEXT NOT NULL
);
CREATE TABLE tasks (
    run_id TEXT NOT NULL REFERENCES runs(id),
    id TEXT NOT NULL,
    position INTEGER NOT NULL,
    spec TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    failures INTEGER NOT NULL DEFAULT 0,
    result TEXT,
    error TEXT,
    transcript TEXT,
    started_at INTEGER,
    finished_at INTEGER,
    elapsed_ms INTEGER NOT NULL DEFAULT 0,
    branch TEXT,
    start_commit TEXT,
    commit_id TEXT,
    PRIMARY KEY (run_id, id)
);
CREATE TABLE attempts (
    run_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    number INTEGER NOT NULL,
    started_at INTEGER NOT NULL,
    finished_at INTEGER,
    outcome TEXT,
    transcript TEXT NOT NULL,
    PRIMARY KEY (run_id, task_id, number)
);
CREATE TABLE merges (
    run_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    commit_id TEXT NOT NULL,
    before TEXT NOT NULL,
    after TEXT,
    state TEXT NOT NULL,
    paths TEXT,
    at INTEGER NOT NULL,
    PRIMARY KEY (run_id, task_id)
);
CREATE TABLE events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    at INTEGER NOT NULL,
    kind TEXT NOT NULL,
    task_id TEXT,
    detail TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
",
    r"
ALTER TABLE tasks ADD COLUMN tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN cost REAL;
ALTER TABLE attempts ADD COLUMN tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN cost REAL;
",
    r"
CREATE TABLE goals (
    run_id TEXT NOT NULL,
    id TEXT NOT NULL,
    position INTEGER NOT NULL,
    text TEXT NOT NULL,
    needs TEXT,
    status TEXT NOT NULL,
    reason TEXT,
    queue_id INTEGER,
    PRIMARY KEY (run_id, id)
);
CREATE TABLE queue (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    text TEXT NOT NULL,
    added_at INTEGER NOT NULL,
    run_id TEXT,
    goal_id TEXT
);
",
    // The integration tip swarm itself set: merges compare-and-swap against it, never against
    // a value read back from the ref. NULL for runs recorded before it (read from the ref).
    r"
ALTER TABLE runs ADD COLUMN tip TEXT;
",
    // The agent's own session a task's next attempt continues (NULL: it starts afresh), and
    // for each attempt the session it ran in and whether it continued an earlier one.
    r"
ALTER TABLE tasks ADD COLUMN session TEXT;
ALTER TABLE attempts ADD COLUMN session TEXT;
ALTER TABLE attempts ADD COLUMN continued INTEGER NOT NULL DEFAULT 0;
",
    // The newest integration tip the gate passed on (NULL: none yet, or no gate).
    r"
ALTER TABLE runs ADD COLUMN green TEXT;
",
    // Of the tokens, the prompts' and, of those, the ones the provider had cached (0 where the
    // agent does not say, and for what was recorded before swarm kept them).
    r"
ALTER TABLE tasks ADD COLUMN prompt_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN prompt_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
",
    // The repository's memory: what each goal of a past run came to, searched by FTS5 when a
    // later goal is planned (see `memory`).
    r"
CREATE TABLE memory (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    goal_id TEXT NOT NULL,
    at INTEGER NOT NULL,
    goal TEXT NOT NULL,
    skeleton TEXT NOT NULL,
    outcome TEXT NOT NULL,
    tokens INTEGER NOT NULL DEFAULT 0,
    elapsed_ms INTEGER NOT NULL DEFAULT 0,
    UNIQUE (run_id, goal_id)
);
CREATE VIRTUAL TABLE memory_text USING fts5(
    goal, skeleton, outcome, content = 'memory', content_rowid = 'id'
);
CREATE TRIGGER memory_added AFTER INSERT ON memory BEGIN
    INSERT INTO memory_text (rowid, goal, skeleton, outcome)
    VALUES (new.id, new.goal, new.skeleton, new.outcome);
END;
CREATE TRIGGER memory_removed AFTER DELETE ON memory BEGIN
    INSERT INTO memory_text (memory_text, rowid, goal, skeleton, outcome)
    VALUES ('delete', old.id, old.goal, old.skeleton, old.outcome);
END;
CREATE TABLE lessons (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    at INTEGER NOT NULL,
    text TEXT NOT NULL,
    paths TEXT NOT NULL,
    lanes TEXT NOT NULL,
    taught INTEGER NOT NULL DEFAULT 1,
    UNIQUE (text, paths)
);
",
    // How many finished runs gave each lesson to a planner or an agent (the curator retires
    // lessons never used).
    r"
ALTER TABLE lessons ADD COLUMN used INTEGER NOT NULL DEFAULT 0;
",
];

pub(super) fn migrate(conn: &mut Connection) -> anyhow::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Exclusive)?;
    let version: usize = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version > MIGRATIONS.len() {
        bail!(
            "the board has schema version {version}, newer than this swarm knows ({}); use a newer swarm",
            MIGRATIONS.len()
        );
    }
    if version == MIGRATIONS.len() {
        return Ok(());
    }
    for m in &MIGRATIONS[version..] {
        tx.execute_batch(m)?;
    }
    tx.pragma_update(None, "user_version", MIGRATIONS.len())?;
    tx.commit()?;
    Ok(())
}
