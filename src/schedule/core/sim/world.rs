//! The simulation's world: what the executor, git, the board, the agents, the model and the
//! user would do, decided by a seed. Each task's fate (how often it fails, what it spawns,
//! whether its merge conflicts or breaks the gate) is a function of the seed and its id
//! alone, so that a run killed and resumed meets the same world as one that is not.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use crate::git::CommitId;
use crate::plan::Plan;
use crate::store::{GoalRecord, GoalStatus, Need, TaskRecord, TaskStatus};

use super::super::Rec;
use super::super::found::History;
use super::super::slot::Totals;

/// A deterministic 64-bit mix of the seed and a name.
pub(super) fn hash(seed: u64, name: &str) -> u64 {
    let mut h = seed ^ 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^ (h >> 29)
}

/// What the world holds in store for one task, by its id.
#[derive(Debug, Clone)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "a task's fate is a handful of yes-or-no turns"
)]
pub(super) struct Fate {
    /// Failed attempts before the one that succeeds.
    pub(super) failures: u32,
    /// Attempts cut short on the way (a usage limit, the endpoint away), no failure counted.
    pub(super) hiccups: u32,
    /// A usage limit it meets lasts (no wait ends it).
    pub(super) lasting_limit: bool,
    /// A writer's success changes nothing.
    pub(super) no_changes: bool,
    /// A writer's first merge conflicts.
    pub(super) conflicts: bool,
    /// Its resolver attempt resolves the conflict.
    pub(super) resolves: bool,
    /// The structural merge of its conflict succeeds.
    pub(super) merges_structurally: bool,
    /// Its task done again on the tip succeeds.
    pub(super) redoes: bool,
    /// Its merge makes the gate fail.
    pub(super) breaks_gate: bool,
    /// Its change must be seen by a human (it touches what swarm reads commands from).
    pub(super) held: bool,
    /// Tokens each attempt uses.
    pub(super) tokens: u64,
    /// How long each attempt takes.
    pub(super) takes: Duration,
    /// Tasks a success asks to spawn, when the task may.
    pub(super) spawns: usize,
    /// Its agent reaches out of its checkout once (writes your checkout): refused by the
    /// kernel in a confined run, found after the attempt in one that is not.
    pub(super) reaches_out: bool,
}

impl Fate {
    pub(super) fn of(seed: u64, id: &str, greedy: bool) -> Self {
        let mut rng = fastrand::Rng::with_seed(hash(seed, id));
        let failures = match rng.u32(0..100) {
            0..70 => 0,
            70..85 => 1,
            _ => rng.u32(2..5),
        };
        Self {
            failures,
            hiccups: if rng.u32(0..100) < 25 {
                rng.u32(1..3)
            } else {
                0
            },
            lasting_limit: rng.u32(0..100) < 5,
            no_changes: rng.u32(0..100) < 10,
            conflicts: rng.u32(0..100) < 15,
            resolves: rng.bool(),
            breaks_gate: rng.u32(0..100) < 10,
            held: rng.u32(0..100) < 3,
            tokens: rng.u64(10..400),
            takes: Duration::from_secs(rng.u64(1..120)),
            spawns: if greedy {
                rng.usize(2..6)
            } else if rng.u32(0..100) < 40 {
                rng.usize(1..5)
            } else {
                0
            },
            // Drawn last: the turns above stay what each seed dealt before.
            reaches_out: rng.u32(0..100) < 6,
            merges_structurally: rng.u32(0..100) < 50,
            redoes: rng.u32(0..100) < 60,
        }
    }
}

/// A commit of the world's repository: its parents, and the writers whose changes it holds.
#[derive(Debug, Clone, Default)]
pub(super) struct Commit {
    pub(super) parents: Vec<CommitId>,
    pub(super) holds: BTreeSet<usize>,
}

/// The world's repository: commits and the integration branch.
#[derive(Debug)]
pub(super) struct Git {
    pub(super) commits: HashMap<CommitId, Commit>,
    /// Where the integration branch is.
    pub(super) head: CommitId,
    made: u64,
}

impl Git {
    pub(super) fn new(base: &CommitId) -> Self {
        let mut commits = HashMap::new();
        commits.insert(base.clone(), Commit::default());
        Self {
            commits,
            head: base.clone(),
            made: 0,
        }
    }

    /// A new commit with these parents: a writer's (`task` none), holding what its first
    /// parent holds; or a merge of writer `task`, holding what its first parent holds and
    /// that writer's own change (swarm merges a writer's change from its start, not what
    /// came before it).
    pub(super) fn commit(
        &mut self,
        prefix: &str,
        parents: Vec<CommitId>,
        task: Option<usize>,
    ) -> CommitId {
        self.made += 1;
        let id = CommitId::new(&format!("{prefix}{}", self.made));
        let mut holds = parents
            .first()
            .and_then(|p| self.commits.get(p))
            .map(|c| c.holds.clone())
            .unwrap_or_default();
        holds.extend(task);
        self.commits.insert(id.clone(), Commit { parents, holds });
        id
    }

    pub(super) fn holds(&self, at: &CommitId) -> &BTreeSet<usize> {
        static NONE: BTreeSet<usize> = BTreeSet::new();
        self.commits.get(at).map_or(&NONE, |c| &c.holds)
    }
}

/// The simulated history answers always.
impl History for Git {
    fn parents(&self, commit: &CommitId) -> anyhow::Result<Vec<CommitId>> {
        Ok(Git::parents(self, commit).to_vec())
    }

    fn contains(&self, tip: &CommitId, commit: &CommitId) -> anyhow::Result<bool> {
        Ok(Git::contains(self, tip, commit))
    }
}

impl Git {
    pub(super) fn parents(&self, at: &CommitId) -> &[CommitId] {
        self.commits.get(at).map_or(&[], |c| c.parents.as_slice())
    }

    /// Whether `commit` is `at` or one of its ancestors.
    pub(super) fn contains(&self, at: &CommitId, commit: &CommitId) -> bool {
        let mut stack = vec![at.clone()];
        let mut seen = BTreeSet::new();
        while let Some(c) = stack.pop() {
            if c == *commit {
                return true;
            }
            if seen.insert(c.clone()) {
                stack.extend(self.parents(&c).iter().cloned());
            }
        }
        false
    }
}

/// What the board would hold of the run: what a resumed run starts from.
#[derive(Debug, Clone)]
pub(super) struct Board {
    pub(super) tasks: Vec<TaskRecord>,
    /// The plan, its tasks in the board's order.
    pub(super) plan: Plan,
    pub(super) tip: CommitId,
    pub(super) green: Option<CommitId>,
    pub(super) gate_runs: u32,
    pub(super) goals: Vec<GoalRecord>,
}

pub(in crate::schedule::core) fn record(id: &str, spec: serde_json::Value) -> TaskRecord {
    TaskRecord {
        id: id.to_owned(),
        spec,
        status: TaskStatus::Pending,
        attempts: 0,
        failures: 0,
        result: None,
        error: None,
        transcript: None,
        started_at: None,
        finished_at: None,
        elapsed_ms: 0,
        branch: None,
        start_commit: None,
        commit_id: None,
        tokens: 0,
        prompt_tokens: 0,
        cached_tokens: 0,
        cost: None,
        session: None,
    }
}

impl Board {
    pub(super) fn new(plan: &Plan, base: &CommitId, goals: &[GoalRecord]) -> Self {
        Self {
            tasks: plan
                .tasks
                .iter()
                .map(|t| record(t.id.as_str(), t.to_json()))
                .collect(),
            plan: plan.clone(),
            tip: base.clone(),
            green: None,
            gate_runs: 0,
            goals: goals.to_vec(),
        }
    }

    pub(super) fn task(&mut self, id: &str) -> &mut TaskRecord {
        let i = self
            .tasks
            .iter()
            .position(|t| t.id == id)
            .unwrap_or_else(|| panic!("the board has no task {id}"));
        &mut self.tasks[i]
    }

    fn add(&mut self, specs: &[(String, serde_json::Value)]) {
        let text: Vec<String> = specs.iter().map(|(_, v)| v.to_string()).collect();
        let (tasks, problems) = Plan::read(&text.join("\n"));
        assert!(problems.is_empty(), "{problems:?}");
        let mut all = self.plan.tasks.clone();
        all.extend(tasks);
        self.plan = Plan::from_tasks(all).expect("the board's plan links");
        for (id, spec) in specs {
            self.tasks.push(record(id, spec.clone()));
        }
    }

    fn goal(&mut self, id: &str) -> &mut GoalRecord {
        let i = self
            .goals
            .iter()
            .position(|g| g.id == id)
            .unwrap_or_else(|| panic!("the board has no goal {id}"));
        &mut self.goals[i]
    }

    /// An attempt of task `id` started (a writer's from `start`).
    pub(super) fn started(&mut self, id: &str, attempt: u32, start: Option<&CommitId>) {
        let t = self.task(id);
        t.status = TaskStatus::Running;
        t.attempts = attempt;
        if let Some(s) = start {
            t.start_commit = Some(s.to_string());
        }
    }

    /// What the store does with a record of the core's.
    pub(super) fn take(&mut self, rec: &Rec) {
        match rec {
            Rec::Run(_) | Rec::Task(..) => {}
            Rec::Session(id, s) => self.task(id).session.clone_from(s),
            Rec::Spent { id, totals } => spend(self.task(id), totals),
            Rec::Succeeded {
                id,
                totals,
                result,
                commit,
                joined,
                kept,
                start,
                ..
            } => {
                let t = self.task(id);
                t.status = if commit.is_some() && !kept {
                    TaskStatus::Committed
                } else {
                    TaskStatus::Done
                };
                t.result = Some(result.clone());
                spend(t, totals);
                t.commit_id = commit.as_ref().map(ToString::to_string);
                if let Some(start) = start {
                    t.start_commit = Some(start.to_string());
                }
                self.add(&joined.specs);
            }
            Rec::Failed {
                id,
                totals,
                failures,
                status,
                why,
                ..
            } => {
                let t = self.task(id);
                t.status = *status;
                t.failures = *failures;
                spend(t, totals);
                t.error = Some(why.clone());
            }
            Rec::Interrupted { id, totals, .. } | Rec::Faulted { id, totals, .. } => {
                let t = self.task(id);
                t.status = TaskStatus::Interrupted;
                spend(t, totals);
            }
            Rec::Limited {
                id,
                totals,
                stops_run,
                ..
            } => {
                let t = self.task(id);
                t.status = if *stops_run {
                    TaskStatus::Interrupted
                } else {
                    TaskStatus::Pending
                };
                spend(t, totals);
            }
            Rec::MarkInterrupted(ids) => {
                for id in ids {
                    self.task(id).status = TaskStatus::Interrupted;
                }
            }
            Rec::Skipped(skips) => {
                for (id, why) in skips {
                    let t = self.task(id);
                    t.status = TaskStatus::Skipped;
                    t.error = Some(why.clone());
                }
            }
            Rec::Merged { id, after, .. } => {
                self.task(id).status = TaskStatus::Done;
                self.tip = after.clone();
            }
            Rec::MergeRecovered { id, .. } => self.task(id).status = TaskStatus::Done,
            Rec::TipRecovered { after, .. } => self.tip = after.clone(),
            Rec::Resolved {
                id, commit, from, ..
            } => {
                let t = self.task(id);
                t.commit_id = Some(commit.to_string());
                t.start_commit = Some(from.to_string());
            }
            Rec::GatePassed { tip, .. } => self.green = Some(tip.clone()),
            Rec::MergeAgain(ids) => {
                for id in ids {
                    self.task(id).status = TaskStatus::Committed;
                }
            }
            Rec::GoalStatus {
                goal,
                status,
                reason,
                ..
            } => {
                let g = self.goal(goal);
                g.status = *status;
                g.reason.clone_from(reason);
            }
            Rec::GoalNeeds { rows, .. } => {
                for (goal, needs) in rows {
                    self.goal(goal).needs = Some(needs.clone());
                }
            }
            Rec::TasksAdded(specs) => self.add(specs),
        }
    }

    /// The parked writer `id`.
    pub(super) fn parked(&mut self, id: &str) {
        self.task(id).status = TaskStatus::Parked;
    }

    /// Goals the queue held, now the run's.
    pub(super) fn queued(&mut self, goals: &[GoalRecord]) {
        self.goals.extend(goals.iter().cloned());
    }
}

/// The goals the world plans: each goal's tasks and what it needs, by the goal's place.
#[derive(Debug, Clone)]
pub(super) struct GoalFate {
    /// Its tasks as task-file lines, ids within the goal.
    pub(super) lines: Vec<String>,
    /// Goals (earlier in the list) it needs.
    pub(super) needs: Vec<usize>,
    /// Its planning fails.
    pub(super) fails: bool,
    /// Its first planning is cut short by a fault of the endpoint.
    pub(super) cut: bool,
}

/// How each goal of a run would be planned.
pub(super) fn goal_fates(seed: u64, n: usize, greedy: bool) -> Vec<GoalFate> {
    (0..n)
        .map(|g| {
            let mut rng = fastrand::Rng::with_seed(hash(seed, &format!("goal{g}")));
            let tasks = rng.usize(1..5);
            let lines = (0..tasks)
                .map(|k| {
                    let mode = if rng.bool() { "write" } else { "read" };
                    let deps: Vec<String> = (0..k)
                        .filter(|_| rng.u32(0..100) < 30)
                        .map(|d| format!("t{d}"))
                        .collect();
                    let spawn = if greedy || rng.u32(0..100) < 25 {
                        format!(r#","spawn":{}"#, rng.u32(1..6))
                    } else {
                        String::new()
                    };
                    format!(
                        r#"{{"id":"t{k}","prompt":"do {k}","mode":"{mode}","deps":{}{spawn}}}"#,
                        serde_json::to_string(&deps).unwrap_or_default()
                    )
                })
                .collect();
            GoalFate {
                lines,
                needs: (0..g).filter(|_| rng.u32(0..100) < 30).collect(),
                fails: !greedy && rng.u32(0..100) < 8,
                cut: !greedy && rng.u32(0..100) < 4,
            }
        })
        .collect()
}

/// A goal as the queue or the run's start gives it.
pub(super) fn goal_record(g: usize) -> GoalRecord {
    GoalRecord {
        id: format!("g{g}"),
        text: format!("goal number {g}"),
        needs: None,
        status: GoalStatus::Pending,
        reason: None,
        queue_id: None,
    }
}

/// The needs the dependency pass infers for goals `covered`, as edges the model gives.
pub(super) fn needs_of(
    fates: &[GoalFate],
    covered: &[usize],
    ids: &[String],
) -> Vec<(String, Vec<Need>)> {
    covered
        .iter()
        .map(|&g| {
            let needs = fates
                .get(g)
                .map(|f| f.needs.clone())
                .unwrap_or_default()
                .into_iter()
                .filter_map(|n| ids.get(n))
                .map(|n| Need {
                    goal: n.clone(),
                    reason: "it builds on it".to_owned(),
                })
                .collect();
            (ids[g].clone(), needs)
        })
        .collect()
}

/// What the store writes of a task's totals.
fn spend(t: &mut TaskRecord, totals: &Totals) {
    t.tokens = totals.tokens;
    t.prompt_tokens = totals.prompt_tokens;
    t.cached_tokens = totals.cached_tokens;
    t.cost = totals.cost;
}
