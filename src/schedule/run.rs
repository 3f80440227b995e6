//! What every owner of the loop reads and writes: the plan, each task's state in the `Dag`
//! and its memory (`Slot`), and the outlets (the board through `Recorder`, the terminal
//! through `Ui`). Carries out the `Dag`'s effects; starts, merges and plans nothing itself.

use crate::git::{CommitId, Repo};
use crate::plan::Plan;
use crate::store::{RunEvent, TaskRecord, TaskStatus};
use crate::ui::{Ui, Verb};

use super::dag::{Dag, Effect, State, Transition};
use super::record::{Recorder, Totals};
use super::spawn::Joined;
use super::{Layout, Settings};

/// Per-task memory of the loop.
pub(super) struct Slot {
    pub(super) attempts: u32,
    pub(super) failures: u32,
    pub(super) result: Option<String>,
    pub(super) start_commit: Option<CommitId>,
    pub(super) commit: Option<CommitId>,
    /// The snapshot a running reader holds.
    pub(super) snapshot: Option<CommitId>,
    /// LLM tokens used by all attempts so far.
    pub(super) tokens: u64,
    /// Their cost in dollars, where the agent says.
    pub(super) cost: Option<f64>,
    /// Conflicting paths of a merge waiting for its resolver; empty otherwise.
    pub(super) conflict: Vec<String>,
    pub(super) resolver_tried: bool,
    /// The integration tip a running resolver attempt started from.
    pub(super) resolving_from: Option<CommitId>,
    /// The agent's session the next attempt continues, if it is to.
    pub(super) session: Option<String>,
    /// The member of its pool its last attempt went to (the one its session belongs to), for
    /// a task whose agent is a pool.
    pub(super) member: Option<String>,
    /// On a worker of a run spread over machines, where the task's state is the
    /// coordinator's: why it ended without a result, as the coordinator said.
    pub(super) missing: Option<String>,
    /// When its attempt (or resolver attempt) now running started.
    pub(super) started: Option<std::time::Instant>,
    /// How long its attempt that succeeded took, in this process: what the display's ETA
    /// goes by.
    pub(super) took: Option<std::time::Duration>,
}

impl Slot {
    /// A task nothing has happened to yet.
    pub(super) fn waiting() -> Self {
        Self {
            attempts: 0,
            failures: 0,
            result: None,
            start_commit: None,
            commit: None,
            snapshot: None,
            tokens: 0,
            cost: None,
            conflict: Vec::new(),
            resolver_tried: false,
            resolving_from: None,
            member: None,
            missing: None,
            session: None,
            started: None,
            took: None,
        }
    }

    /// A task as the board left it.
    pub(super) fn recorded(r: &TaskRecord) -> Self {
        Self {
            attempts: r.attempts,
            failures: r.failures,
            result: r.result.clone(),
            start_commit: r.start_commit.as_deref().map(CommitId::new),
            commit: r.commit_id.as_deref().map(CommitId::new),
            tokens: r.tokens,
            cost: r.cost,
            session: r.session.clone(),
            ..Self::waiting()
        }
    }

    pub(super) fn totals(&self) -> Totals {
        Totals {
            tokens: self.tokens,
            cost: self.cost,
        }
    }
}

/// A task's state in the dag as the board left it: what had not ended waits.
pub(super) fn recorded_state(status: TaskStatus) -> State {
    match status {
        TaskStatus::Done => State::Done,
        TaskStatus::Failed => State::Failed,
        TaskStatus::Skipped => State::Skipped,
        TaskStatus::Parked => State::Parked,
        TaskStatus::Committed => State::Committed,
        TaskStatus::Pending | TaskStatus::Running | TaskStatus::Interrupted => State::Waiting,
    }
}

/// The run's shared state, lent to each owner in turn by the dispatcher.
pub(super) struct Run<'a> {
    /// Grows when a goal is planned.
    pub(super) plan: Plan,
    pub(super) dag: Dag,
    pub(super) slots: Vec<Slot>,
    pub(super) record: Recorder<'a>,
    pub(super) ui: &'a mut Ui,
    pub(super) repo: &'a Repo,
    /// Stops the run's processes: its attempts and the escalation hook.
    pub(super) watchdog: crate::agent::Watchdog,
    /// The loop's channel, for what runs on threads of its own (the escalation hook).
    pub(super) tx: std::sync::mpsc::Sender<super::Message>,
    /// Escalation hooks still running; the run ends only once they have.
    pub(super) hooks_running: usize,
    /// The blocks of ports running attempts hold.
    pub(super) ports: super::ports::Ports,
    /// The attempts' own temporary directories.
    pub(super) scratch: super::scratch::Scratch,
    /// What tasks have spawned, against the limits.
    pub(super) spawns: super::spawn::Spawns,
    pub(super) settings: &'a Settings,
    pub(super) layout: &'a Layout,
}

impl Run<'_> {
    /// Task `i`'s id.
    pub(super) fn id(&self, i: usize) -> &str {
        self.plan.tasks[i].id.as_str()
    }

    /// Hands a transition to the dag and carries out what it says: skipped tasks are recorded
    /// and told.
    pub(super) fn transition(&mut self, t: Transition) -> anyhow::Result<()> {
        let skips: Vec<(usize, String)> = self
            .dag
            .on(&self.plan, t)
            .into_iter()
            .filter_map(|e| match e {
                Effect::Skipped { task, why } => Some((task, why)),
                Effect::Stuck { .. } => None,
            })
            .collect();
        if skips.is_empty() {
            return Ok(());
        }
        self.record_skips(&skips)?;
        for (i, why) in &skips {
            let line = format!("{} ({why})", self.id(*i));
            self.ui.note(Verb::Skipped, &line);
        }
        Ok(())
    }

    /// Tasks still waiting when nothing runs and nothing is ready can never start; they are
    /// skipped, each with what it waits for. Returns one line per task.
    pub(super) fn skip_stuck(&mut self) -> anyhow::Result<Vec<String>> {
        let effects = self.dag.on(&self.plan, Transition::Stuck);
        let mut skips = Vec::new();
        let mut lines = Vec::new();
        for e in effects {
            if let Effect::Stuck { task, waits_for } = e {
                let on: Vec<&str> = waits_for.iter().map(|&d| self.id(d)).collect();
                let waits = format!("waits for {}", on.join(", "));
                lines.push(format!("task {}: {waits}", self.id(task)));
                skips.push((task, format!("deadlock: {waits}")));
            }
        }
        self.record_skips(&skips)?;
        Ok(lines)
    }

    fn record_skips(&mut self, skips: &[(usize, String)]) -> anyhow::Result<()> {
        let named: Vec<(&str, &str)> = skips
            .iter()
            .map(|(i, why)| (self.plan.tasks[*i].id.as_str(), why.as_str()))
            .collect();
        self.record.skipped(&named)
    }

    /// The deps of task `i` that ended without a result for it (failed, skipped or parked),
    /// each with why, as a task that runs on what finished (a reducer) is told of them.
    pub(super) fn missing_deps(&self, i: usize) -> anyhow::Result<Vec<(String, String)>> {
        let mut out = Vec::new();
        for d in self.plan.deps(i) {
            let id = self.id(d);
            let state = self.dag.state(d);
            let why = match &self.slots[d].missing {
                Some(why) => why.clone(),
                None if state.ended_badly() => {
                    let what = match state {
                        State::Failed => "failed",
                        State::Parked => "parked",
                        _ => "skipped",
                    };
                    match self.record.task_error(id)? {
                        Some(e) => format!("{what}: {e}"),
                        None => what.to_owned(),
                    }
                }
                None => continue,
            };
            out.push((id.to_owned(), why));
        }
        Ok(out)
    }

    /// The paths a writer's commit changed, once it has one.
    pub(super) fn changed_paths(&self, i: usize) -> Option<Vec<String>> {
        let s = &self.slots[i];
        let (Some(from), Some(to)) = (&s.start_commit, &s.commit) else {
            return None;
        };
        crate::git::changed_paths(self.repo.common_dir(), from, to).ok()
    }

    /// The run stops short: the tasks out with workers (`out`) and those waiting that have had
    /// an attempt are marked for a resume.
    pub(super) fn interrupt_unfinished(&mut self, out: Vec<usize>) -> anyhow::Result<()> {
        let mut marks = Vec::new();
        for i in out {
            self.dag.on(&self.plan, Transition::Interrupted(i));
            marks.push(i);
        }
        for i in 0..self.slots.len() {
            // Still running once nothing runs: a task whose end the board could not take.
            if matches!(
                self.dag.state(i),
                State::Waiting | State::Ready | State::Delayed(_) | State::Running
            ) && self.slots[i].attempts > 0
            {
                self.dag.on(&self.plan, Transition::Interrupted(i));
                marks.push(i);
            }
        }
        let ids: Vec<&str> = marks
            .iter()
            .map(|&i| self.plan.tasks[i].id.as_str())
            .collect();
        self.record.interrupted(&ids)
    }

    /// Processes still carrying the run's id when none of its attempts runs were left behind
    /// out of reach of their process groups: they are stopped, recorded and told.
    pub(super) fn stop_strays(&mut self) -> anyhow::Result<()> {
        let strays = crate::agent::stray::find(&self.layout.run);
        if strays.is_empty() {
            return Ok(());
        }
        crate::agent::stray::stop(&strays, self.settings.kill_grace);
        let processes: Vec<String> = strays
            .iter()
            .map(|s| format!("{} {}", s.pid, s.command))
            .collect();
        let line = format!(
            "{} process(es) the run's tasks left behind: {}",
            processes.len(),
            processes.join("; ")
        );
        self.ui.note(Verb::Stopped, &line);
        self.record.run_event(RunEvent::StraysStopped { processes })
    }

    /// Tasks joined the plan at `added` (a goal planned, a spawn, tasks learnt from the
    /// remote): each gets its slot, its place in the limits on spawning and in the dag. Every
    /// way tasks join a running plan goes through here.
    pub(super) fn grow(&mut self, added: std::ops::Range<usize>) -> anyhow::Result<()> {
        for _ in added.clone() {
            self.slots.push(Slot::waiting());
        }
        self.spawns.learn(&self.plan, added.clone());
        self.transition(Transition::Added(added))
    }

    /// Tasks an attempt of task `id` spawned joined the plan (the board has them): they get
    /// slots and join the dag, the stored plan is written again, and the terminal is told.
    pub(super) fn joined(&mut self, id: &str, spawned: &Joined) -> anyhow::Result<()> {
        if !spawned.specs.is_empty() {
            crate::disk::write(
                &self.layout.run_dir.join("plan.jsonl"),
                self.plan.to_jsonl(),
            )?;
            let more = spawned.specs.len() - spawned.children.len();
            let then = if more > 0 {
                " and its continuation"
            } else {
                ""
            };
            self.ui.note(
                Verb::Planned,
                &format!(
                    "{id} spawned {}{then}",
                    crate::ui::count(spawned.children.len(), "task", "tasks")
                ),
            );
            self.grow(spawned.added.clone())?;
        }
        if let Some(why) = &spawned.refused {
            self.ui
                .note(Verb::Note, &format!("{id}: spawn refused: {why}"));
        }
        Ok(())
    }
}
