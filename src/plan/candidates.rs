//! Candidates: a writer run as several attempts side by side, one of which is merged. A task
//! with `candidates: N` (N ≥ 2) becomes N candidate tasks `<id>.c1` … `<id>.cN` (each the task
//! itself, with its deps, in a checkout and on a branch of its own) and the task, which now
//! waits for them and picks the one merged as its result by its `select` rule.

use serde_json::Value;

use super::{Problem, Task, TaskId};

/// The most candidates a task may have: each is a whole attempt of an agent.
pub const MAX_CANDIDATES: u32 = 8;

/// How a task picks the candidate it merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Select {
    /// The first candidate whose check passed.
    FirstGreen,
    /// The green candidate with the smallest change (lines added and removed).
    #[default]
    SmallestGreen,
    /// The model compares the green candidates' changes with the task and says which.
    Judge,
}

impl Select {
    pub const NAMES: &'static [&'static str] = &["first-green", "smallest-green", "judge"];

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "first-green" => Self::FirstGreen,
            "smallest-green" => Self::SmallestGreen,
            "judge" => Self::Judge,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::FirstGreen => "first-green",
            Self::SmallestGreen => "smallest-green",
            Self::Judge => "judge",
        }
    }
}

/// A task's candidates: how many, and how the one merged is picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidates {
    pub n: u32,
    pub select: Select,
}

/// The id of candidate `k` (from 1) of task `id`: git refuses `~` in a branch name, so it is
/// `<id>.c<k>`, its branch `swarm/<run>-<id>.c<k>`.
pub fn candidate_id(id: &TaskId, k: u32) -> Result<TaskId, String> {
    TaskId::parse(&format!("{id}.c{k}"))
}

/// `tasks` with every task that has candidates and none yet (a plan read from a task file, or
/// tasks joining a run) preceded by its candidates, and waiting for them in place of its
/// deps. Tasks whose candidates are there already (a stored plan) are left as they are; a
/// candidate id git would refuse is a problem, and its task is left alone.
pub(super) fn expand(tasks: Vec<Task>, problems: &mut Vec<Problem>) -> Vec<Task> {
    let expanded: std::collections::HashSet<TaskId> = tasks
        .iter()
        .filter_map(|t| t.candidate_of.clone())
        .collect();
    let mut out = Vec::with_capacity(tasks.len());
    for mut t in tasks {
        let Some(c) = t
            .candidates
            .filter(|c| c.n >= 2 && !expanded.contains(&t.id))
        else {
            out.push(t);
            continue;
        };
        let ids: Result<Vec<TaskId>, String> = (1..=c.n).map(|k| candidate_id(&t.id, k)).collect();
        let ids = match ids {
            Ok(ids) => ids,
            Err(e) => {
                problems.push(Problem {
                    line: t.line,
                    task: Some(t.id.to_string()),
                    message: format!("its candidates' ids: {e}"),
                });
                out.push(t);
                continue;
            }
        };
        for (k, id) in (1..).zip(&ids) {
            let mut candidate = t.clone();
            candidate.id = id.clone();
            candidate.candidates = None;
            candidate.candidate_of = Some(t.id.clone());
            candidate.title = Some(format!(
                "{} (candidate {k} of {})",
                t.title.as_deref().unwrap_or(t.id.as_str()),
                c.n
            ));
            out.push(candidate);
        }
        t.deps = ids;
        out.push(t);
    }
    out
}

/// `c` for every writer of `tasks` that says nothing of candidates itself and may have them
/// (not one that spawns, a candidate, or a reducer).
pub fn give(tasks: &mut [Task], c: Candidates) {
    for t in tasks {
        let may = t.mode == super::Mode::Write
            && t.candidates.is_none()
            && t.candidate_of.is_none()
            && t.spawn.unwrap_or(0) == 0
            && !t.lane.runs_on_what_finished();
        if may {
            t.candidates = Some(c);
        }
    }
}

/// The task-file fields of a task's candidates.
pub(super) fn to_json(task: &Task, m: &mut serde_json::Map<String, Value>) {
    if let Some(c) = task.candidates {
        m.insert("candidates".into(), c.n.into());
        m.insert("select".into(), c.select.as_str().into());
    }
    if let Some(of) = &task.candidate_of {
        m.insert("candidate-of".into(), of.as_str().into());
    }
}
