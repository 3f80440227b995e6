//! The repository's memory on the board: what each goal of a past run came to (its text, its
//! plan's skeleton, its outcome, what it cost), kept for later planners, found again by
//! full-text search (`SQLite`'s FTS5, in the board, so it never leaves `.git/swarm/`).

use rusqlite::{OptionalExtension as _, params};
use serde::Serialize;

use super::Board;

/// What a goal of a run came to, as memory keeps it. Nothing in it holds a secret's value:
/// the caller redacts before it is stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Memory {
    pub id: i64,
    pub run_id: String,
    /// The goal's id in a run of several goals; `goal` for a single goal's run.
    pub goal_id: String,
    /// When it was stored, in milliseconds since the epoch.
    pub at: i64,
    pub goal: String,
    /// The plan, a task a line: its id, lane and mode, the files it declared, its first words.
    pub skeleton: String,
    /// What became of each task, and why where it did not merge or succeed.
    pub outcome: String,
    pub tokens: u64,
    pub elapsed_ms: i64,
}

/// The memory, borrowed from the board: `board.memory()` reads it, `board.memory_mut()`
/// changes it.
pub struct Memories<B> {
    pub(super) board: B,
}

/// How many of a past goal's words a new goal must share with it to recall it.
const SHARED_WORDS: usize = 2;

/// Words too common to tell goals apart.
const COMMON: &[&str] = &[
    "about", "after", "again", "also", "and", "each", "every", "from", "have", "into", "make",
    "more", "that", "their", "them", "then", "there", "these", "they", "this", "what", "when",
    "where", "which", "with", "your",
];

/// The words of `text` that tell goals apart: four letters or more, lower-case, not common,
/// each once, at most 32.
pub fn words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in text.split(|c: char| !c.is_alphanumeric()) {
        let w = w.to_lowercase();
        if w.chars().count() >= 4 && !COMMON.contains(&w.as_str()) && !out.contains(&w) {
            out.push(w);
        }
        if out.len() == 32 {
            break;
        }
    }
    out
}

fn read(r: &rusqlite::Row<'_>) -> rusqlite::Result<Memory> {
    Ok(Memory {
        id: r.get(0)?,
        run_id: r.get(1)?,
        goal_id: r.get(2)?,
        at: r.get(3)?,
        goal: r.get(4)?,
        skeleton: r.get(5)?,
        outcome: r.get(6)?,
        tokens: r.get::<_, i64>(7)?.try_into().unwrap_or(0),
        elapsed_ms: r.get(8)?,
    })
}

const COLUMNS: &str =
    "m.id, m.run_id, m.goal_id, m.at, m.goal, m.skeleton, m.outcome, m.tokens, m.elapsed_ms";

impl Memories<&Board> {
    /// Every memory, newest first.
    pub fn list(&self) -> anyhow::Result<Vec<Memory>> {
        let mut stmt = self.board.conn.prepare(&format!(
            "SELECT {COLUMNS} FROM memory m ORDER BY m.at DESC, m.id DESC"
        ))?;
        let rows = stmt.query_map([], read)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn get(&self, id: i64) -> anyhow::Result<Option<Memory>> {
        Ok(self
            .board
            .conn
            .query_row(
                &format!("SELECT {COLUMNS} FROM memory m WHERE m.id = ?1"),
                [id],
                read,
            )
            .optional()?)
    }

    /// The past goals most like `goal`, best first, at most `most`, none of run `except`: those
    /// sharing at least two of its words (all of them, when it has fewer), ranked by FTS5's
    /// bm25 over their goals, plans and outcomes, a goal's words counting most.
    pub fn recall(&self, goal: &str, except: &str, most: usize) -> anyhow::Result<Vec<Memory>> {
        let words = words(goal);
        if words.is_empty() || most == 0 {
            return Ok(Vec::new());
        }
        let needed = SHARED_WORDS.min(words.len());
        let query = words
            .iter()
            .map(|w| format!("\"{}\"", w.replace('"', "")))
            .collect::<Vec<_>>()
            .join(" OR ");
        let mut stmt = self.board.conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM memory_text
             JOIN memory m ON m.id = memory_text.rowid
             WHERE memory_text MATCH ?1 AND m.run_id != ?2
             ORDER BY bm25(memory_text, 10.0, 1.0, 1.0), m.at DESC
             LIMIT 50"
        ))?;
        let rows = stmt.query_map(params![query, except], read)?;
        let mut out = Vec::new();
        for m in rows {
            let m = m?;
            let theirs = self::words(&m.goal);
            if words.iter().filter(|w| theirs.contains(w)).count() >= needed {
                out.push(m);
            }
            if out.len() == most {
                break;
            }
        }
        Ok(out)
    }
}

impl Memories<&mut Board> {
    /// Keeps what goal `m.goal_id` of run `m.run_id` came to, replacing what an earlier end of
    /// the same run kept (a resumed run ends again). `id` and `at` are the board's.
    pub fn remember(&mut self, m: &Memory) -> anyhow::Result<()> {
        let tx = self.board.conn.transaction()?;
        tx.execute(
            "DELETE FROM memory WHERE run_id = ?1 AND goal_id = ?2",
            params![m.run_id, m.goal_id],
        )?;
        tx.execute(
            "INSERT INTO memory (run_id, goal_id, at, goal, skeleton, outcome, tokens, elapsed_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                m.run_id,
                m.goal_id,
                super::now_ms(),
                m.goal,
                m.skeleton,
                m.outcome,
                i64::try_from(m.tokens).unwrap_or(i64::MAX),
                m.elapsed_ms
            ],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Forgets memory `id`, or all of it: how many were forgotten.
    pub fn forget(&mut self, id: Option<i64>) -> anyhow::Result<usize> {
        Ok(match id {
            Some(id) => self
                .board
                .conn
                .execute("DELETE FROM memory WHERE id = ?1", [id])?,
            None => self.board.conn.execute("DELETE FROM memory", [])?,
        })
    }
}

/// Something a run taught about some files of the repository (a check that failed on them, a
/// conflict between writers changing them, or what the planner's model distilled), for later
/// agents whose tasks change those files and later planners; secrets hidden.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lesson {
    pub id: i64,
    /// The newest run that taught it.
    pub run_id: String,
    pub at: i64,
    pub text: String,
    /// The files (or directories, ending in `/`) it is about.
    pub paths: Vec<String>,
    /// The lanes of the tasks it came from.
    pub lanes: Vec<String>,
    /// How many runs taught it.
    pub taught: u32,
    /// How many finished runs gave it to a planner or an agent.
    pub used: u32,
}

impl Lesson {
    /// Whether it is about one of `files`: a file of them, or a directory (ending in `/`)
    /// holding one.
    pub fn about(&self, files: &[String]) -> bool {
        self.paths.iter().any(|p| {
            files
                .iter()
                .any(|f| f == p || (p.ends_with('/') && f.starts_with(p.as_str())))
        })
    }
}

/// Lessons kept at most: past it, the curator forgets the ones taught least, oldest first.
const MOST_LESSONS: usize = 200;

fn read_lesson(r: &rusqlite::Row<'_>) -> rusqlite::Result<Lesson> {
    let list = |s: String| serde_json::from_str::<Vec<String>>(&s).unwrap_or_default();
    Ok(Lesson {
        id: r.get(0)?,
        run_id: r.get(1)?,
        at: r.get(2)?,
        text: r.get(3)?,
        paths: list(r.get(4)?),
        lanes: list(r.get(5)?),
        taught: r.get(6)?,
        used: r.get(7)?,
    })
}

impl Memories<&Board> {
    /// How many runs kept what their goals came to after `at` (milliseconds since the epoch).
    pub fn runs_since(&self, at: i64) -> anyhow::Result<u32> {
        Ok(self.board.conn.query_row(
            "SELECT COUNT(DISTINCT run_id) FROM memory WHERE at > ?1",
            [at],
            |r| r.get(0),
        )?)
    }

    /// Every lesson, newest first.
    pub fn lessons(&self) -> anyhow::Result<Vec<Lesson>> {
        let mut stmt = self.board.conn.prepare(
            "SELECT id, run_id, at, text, paths, lanes, taught, used FROM lessons
             ORDER BY at DESC, id DESC",
        )?;
        let rows = stmt.query_map([], read_lesson)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

impl Memories<&mut Board> {
    /// Keeps `lesson` (its `text`, `paths`, `lanes` and `run_id`): the same lesson taught again
    /// by another run counts once more and is dated anew (taught again by the same run, as a
    /// resumed run's end is, it counts once). Then the curator keeps at most `MOST_LESSONS`.
    /// Its number.
    pub fn learn(&mut self, lesson: &Lesson) -> anyhow::Result<i64> {
        let tx = self.board.conn.transaction()?;
        let id = tx.query_row(
            "INSERT INTO lessons (run_id, at, text, paths, lanes) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (text, paths) DO UPDATE SET
                 taught = taught + (run_id <> excluded.run_id),
                 run_id = excluded.run_id, at = excluded.at
             RETURNING id",
            params![
                lesson.run_id,
                super::now_ms(),
                lesson.text,
                serde_json::to_string(&lesson.paths)?,
                serde_json::to_string(&lesson.lanes)?
            ],
            |r| r.get(0),
        )?;
        tx.execute(
            "DELETE FROM lessons WHERE id NOT IN
                 (SELECT id FROM lessons ORDER BY taught DESC, at DESC, id DESC LIMIT ?1)",
            [i64::try_from(MOST_LESSONS).unwrap_or(i64::MAX)],
        )?;
        tx.commit()?;
        Ok(id)
    }

    /// Counts lessons `ids` used once more: a finished run gave them to a planner or an agent.
    pub fn used(&mut self, ids: &[i64]) -> anyhow::Result<()> {
        let tx = self.board.conn.transaction()?;
        for id in ids {
            tx.execute("UPDATE lessons SET used = used + 1 WHERE id = ?1", [id])?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Makes lesson `into` the one of `merged` too: their runs' teaching and their uses count
    /// for it, it is about all their files, and they are forgotten.
    pub fn merge(&mut self, into: &Lesson, merged: &[&Lesson]) -> anyhow::Result<()> {
        let mut paths = into.paths.clone();
        let mut lanes = into.lanes.clone();
        for l in merged {
            for p in &l.paths {
                if !paths.contains(p) {
                    paths.push(p.clone());
                }
            }
            for lane in &l.lanes {
                if !lanes.contains(lane) {
                    lanes.push(lane.clone());
                }
            }
        }
        let taught: u32 = merged.iter().map(|l| l.taught).sum::<u32>() + into.taught;
        let used: u32 = merged.iter().map(|l| l.used).sum::<u32>() + into.used;
        let tx = self.board.conn.transaction()?;
        for l in merged {
            tx.execute("DELETE FROM lessons WHERE id = ?1", [l.id])?;
        }
        // Another lesson may already say the same about the same files: it is merged too.
        tx.execute(
            "DELETE FROM lessons WHERE text = ?1 AND paths = ?2 AND id <> ?3",
            params![into.text, serde_json::to_string(&paths)?, into.id],
        )?;
        tx.execute(
            "UPDATE lessons SET paths = ?1, lanes = ?2, taught = ?3, used = ?4 WHERE id = ?5",
            params![
                serde_json::to_string(&paths)?,
                serde_json::to_string(&lanes)?,
                taught,
                used,
                into.id
            ],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Forgets the lessons `retired` says are no longer true: how many.
    pub fn retire(&mut self, retired: &dyn Fn(&Lesson) -> bool) -> anyhow::Result<usize> {
        let gone: Vec<i64> = Memories {
            board: &*self.board,
        }
        .lessons()?
        .into_iter()
        .filter(|l| retired(l))
        .map(|l| l.id)
        .collect();
        for id in &gone {
            self.board
                .conn
                .execute("DELETE FROM lessons WHERE id = ?1", [id])?;
        }
        Ok(gone.len())
    }

    /// Forgets lesson `id`, or every lesson: how many were forgotten.
    pub fn forget_lessons(&mut self, id: Option<i64>) -> anyhow::Result<usize> {
        Ok(match id {
            Some(id) => self
                .board
                .conn
                .execute("DELETE FROM lessons WHERE id = ?1", [id])?,
            None => self.board.conn.execute("DELETE FROM lessons", [])?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{Lesson, MOST_LESSONS, Memory, words};
    use crate::store::Board;

    fn memory(run: &str, goal: &str) -> Memory {
        Memory {
            id: 0,
            run_id: run.to_owned(),
            goal_id: "goal".to_owned(),
            at: 0,
            goal: goal.to_owned(),
            skeleton: "a (coder, write; files src/a.rs): change a\n".to_owned(),
            outcome: "done (writers merged): a".to_owned(),
            tokens: 10,
            elapsed_ms: 1,
        }
    }

    fn recalled(board: &Board, goal: &str, except: &str) -> Vec<String> {
        board
            .memory()
            .recall(goal, except, 3)
            .unwrap()
            .into_iter()
            .map(|m| m.run_id)
            .collect()
    }

    #[test]
    fn words_are_the_long_uncommon_ones_once() {
        assert_eq!(
            words("Add the tracing to EVERY handler, and tracing again"),
            ["tracing", "handler"]
        );
    }

    #[test]
    fn recall_takes_goals_sharing_two_words_best_first_none_of_the_run_itself() {
        let dir = tempfile::tempdir().unwrap();
        let mut board = Board::open(dir.path()).unwrap();
        for (run, goal) in [
            ("r1", "Add request tracing to every handler"),
            (
                "r2",
                "Add request tracing to the billing handler and document tracing",
            ),
            ("r3", "Translate the changelog into French"),
            ("r4", "Document the tracing"),
        ] {
            board.memory_mut().remember(&memory(run, goal)).unwrap();
        }
        let got = recalled(&board, "Request tracing for every handler", "now");
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got.contains(&"r1".to_owned()) && got.contains(&"r2".to_owned()));
        assert!(recalled(&board, "Translate the changelog", "now") == ["r3"]);
        assert!(recalled(&board, "Translate the changelog", "r3").is_empty());
        assert!(recalled(&board, "Refactor the parser", "now").is_empty());
        // Remembered again, a run's goal replaces what it kept; forgotten, it is gone.
        board
            .memory_mut()
            .remember(&memory("r3", "Translate the changelog into German"))
            .unwrap();
        assert_eq!(board.memory().list().unwrap().len(), 4);
        assert_eq!(board.memory_mut().forget(None).unwrap(), 4);
        assert!(recalled(&board, "Request tracing for every handler", "now").is_empty());
    }

    fn lesson(text: &str, paths: &[&str]) -> Lesson {
        Lesson {
            id: 0,
            run_id: "r".to_owned(),
            at: 0,
            text: text.to_owned(),
            paths: paths.iter().map(|p| (*p).to_owned()).collect(),
            lanes: vec!["coder".to_owned()],
            taught: 1,
            used: 0,
        }
    }

    #[test]
    fn lessons_count_again_are_about_files_or_directories_and_stay_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let mut board = Board::open(dir.path()).unwrap();
        let mut l = lesson("the check failed", &["src/a.rs", "docs/"]);
        let id = board.memory_mut().learn(&l).unwrap();
        // Taught again by the same run (a resumed run ending once more) it counts once; by
        // another, twice.
        assert_eq!(board.memory_mut().learn(&l).unwrap(), id);
        assert_eq!(board.memory().lessons().unwrap()[0].taught, 1);
        l.run_id = "r2".to_owned();
        assert_eq!(board.memory_mut().learn(&l).unwrap(), id);
        let kept = board.memory().lessons().unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].taught, 2);
        assert!(kept[0].about(&["src/a.rs".to_owned()]));
        assert!(kept[0].about(&["docs/guide.md".to_owned()]));
        assert!(!kept[0].about(&["src/b.rs".to_owned()]));
        for n in 0..MOST_LESSONS + 5 {
            board
                .memory_mut()
                .learn(&lesson(&format!("lesson {n}"), &["x"]))
                .unwrap();
        }
        let kept = board.memory().lessons().unwrap();
        assert_eq!(kept.len(), MOST_LESSONS);
        // The one taught twice is kept; the oldest taught once are not.
        assert!(kept.iter().any(|l| l.text == "the check failed"));
        assert!(!kept.iter().any(|l| l.text == "lesson 0"));
        let retired = board
            .memory_mut()
            .retire(&|l: &Lesson| l.text == "the check failed")
            .unwrap();
        assert_eq!(retired, 1);
    }
}
