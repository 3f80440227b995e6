//! The plan as the run loop sees it: each task's state, how many of its deps have not ended
//! well, the ready queue (longest remaining path first), tasks held back until a time, and
//! skips flowing down to dependents. It decides without doing: `on(plan, Transition)` returns
//! the `Effect`s for the loop to carry out. No git, no board, no processes, no clock but the
//! instants it is given.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;
use std::time::Instant;

use crate::plan::Plan;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::schedule) enum State {
    Waiting,
    Ready,
    Delayed(Instant),
    Running,
    Committed,
    /// A conflicting writer waiting for, or running, its one resolver attempt.
    Resolving,
    Done,
    Failed,
    Skipped,
    Parked,
    Interrupted,
}

impl State {
    /// Whether the task has reached its end in this run.
    pub(in crate::schedule) fn is_final(self) -> bool {
        matches!(
            self,
            Self::Done | Self::Failed | Self::Skipped | Self::Parked
        )
    }

    /// Whether it has not started, so a failure upstream skips it.
    fn is_pending(self) -> bool {
        matches!(self, Self::Waiting | Self::Ready | Self::Delayed(_))
    }

    /// Whether it ended without a result for its dependents: failed, skipped or parked.
    pub(in crate::schedule) fn ended_badly(self) -> bool {
        matches!(self, Self::Failed | Self::Skipped | Self::Parked)
    }
}

/// Something that happened to a task, or to the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::schedule) enum Transition {
    /// The run starts (or resumes) with the states it was made with: deps are counted, what can
    /// never run is skipped, what can is queued.
    Settle,
    /// Tasks of a planned goal joined the plan.
    Added(Range<usize>),
    Started(usize),
    Committed(usize),
    Resolving(usize),
    /// It ended well (merged, for a writer): its dependents may become ready.
    Done(usize),
    Failed(usize),
    Parked(usize),
    Interrupted(usize),
    /// Held back until a time (a retry's backoff, a usage limit's reset).
    Delayed(usize, Instant),
    /// The time is now: held-back tasks whose time came are ready.
    Tick(Instant),
    /// Nothing runs and nothing can become ready: whatever still waits is stuck.
    Stuck,
}

impl Transition {
    /// The task it is about, if one.
    fn task(&self) -> Option<usize> {
        match *self {
            Self::Started(i)
            | Self::Committed(i)
            | Self::Resolving(i)
            | Self::Done(i)
            | Self::Failed(i)
            | Self::Parked(i)
            | Self::Interrupted(i)
            | Self::Delayed(i, _) => Some(i),
            Self::Settle | Self::Added(_) | Self::Tick(_) | Self::Stuck => None,
        }
    }

    /// Whether a task in state `from` can take it.
    fn allowed_from(&self, from: State) -> bool {
        use State::{Committed, Delayed, Done, Interrupted, Ready, Resolving, Running, Waiting};
        match self {
            // Waiting or interrupted: taken up from the remote, or claimed by a worker.
            Self::Started(_) => matches!(from, Waiting | Ready | Interrupted),
            // Done: merged, and to be tested by the gate again on a resume.
            Self::Committed(_) => matches!(from, Running | Resolving | Done),
            Self::Resolving(_) => from == Committed,
            Self::Done(_) => matches!(from, Running | Committed),
            Self::Failed(_) | Self::Delayed(..) => from == Running,
            Self::Parked(_) => matches!(from, Committed | Resolving),
            Self::Interrupted(_) => matches!(from, Running | Waiting | Ready | Delayed(_)),
            Self::Settle | Self::Added(_) | Self::Tick(_) | Self::Stuck => true,
        }
    }
}

/// What the loop must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::schedule) enum Effect {
    /// This task is skipped: record it, and say why.
    Skipped { task: usize, why: String },
    /// This task waits for tasks that will never end well: it is skipped as a deadlock.
    Stuck { task: usize, waits_for: Vec<usize> },
}

/// The tasks' states and the queues over them.
pub(in crate::schedule) struct Dag {
    states: Vec<State>,
    waiting_on: Vec<usize>,
    priority: Vec<u32>,
    ready: BinaryHeap<(u32, Reverse<usize>)>,
    delayed: Vec<usize>,
    /// How many of `states` are final.
    finished: usize,
}

impl Dag {
    /// The plan's tasks in these states (fresh tasks `Waiting`); nothing is queued before
    /// `Transition::Settle`.
    pub(in crate::schedule) fn new(plan: &Plan, states: Vec<State>) -> Self {
        Self {
            waiting_on: vec![0; states.len()],
            finished: states.iter().filter(|s| s.is_final()).count(),
            states,
            priority: plan.priorities(),
            ready: BinaryHeap::new(),
            delayed: Vec::new(),
        }
    }

    pub(in crate::schedule) fn state(&self, i: usize) -> State {
        self.states[i]
    }

    /// How many tasks have reached their end (`State::is_final`).
    pub(in crate::schedule) fn finished(&self) -> usize {
        self.finished
    }

    fn set(&mut self, i: usize, state: State) {
        self.finished += usize::from(state.is_final());
        self.finished -= usize::from(self.states[i].is_final());
        self.states[i] = state;
    }

    /// The ready task with the longest remaining path, taken off the queue.
    pub(in crate::schedule) fn pop_ready(&mut self) -> Option<usize> {
        // A task started otherwise meanwhile (taken up from the remote) is no longer ready.
        while let Some((_, Reverse(i))) = self.ready.pop() {
            if self.states[i] == State::Ready {
                return Some(i);
            }
        }
        None
    }

    /// Puts tasks taken off the queue back (ones that found no free slot).
    pub(in crate::schedule) fn requeue(&mut self, tasks: impl IntoIterator<Item = usize>) {
        for i in tasks {
            self.ready.push((self.priority[i], Reverse(i)));
        }
    }

    pub(in crate::schedule) fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// When the next held-back task is due.
    pub(in crate::schedule) fn next_delay(&self) -> Option<Instant> {
        self.delayed
            .iter()
            .filter_map(|&i| match self.states[i] {
                State::Delayed(at) => Some(at),
                _ => None,
            })
            .min()
    }

    /// Takes a transition, or refuses one the task's state makes impossible (a second end, a
    /// commit of a task never started), changing nothing then: why.
    pub(in crate::schedule) fn on(
        &mut self,
        plan: &Plan,
        t: Transition,
    ) -> Result<Vec<Effect>, String> {
        if let Some(i) = t.task()
            && !t.allowed_from(self.states[i])
        {
            return Err(format!(
                "{:?} of task {} came while it was {:?}",
                t, plan.tasks[i].id, self.states[i]
            ));
        }
        let mut effects = Vec::new();
        match t {
            Transition::Settle => self.settle(plan, 0..self.states.len(), &mut effects),
            Transition::Added(range) => {
                self.states.resize(range.end, State::Waiting);
                self.waiting_on.resize(range.end, 0);
                self.priority = plan.priorities();
                // The heap's priorities were computed for the smaller plan: rebuild it.
                let queued: Vec<usize> = std::iter::from_fn(|| self.pop_ready()).collect();
                self.requeue(queued);
                self.settle(plan, range, &mut effects);
            }
            Transition::Started(i) => self.set(i, State::Running),
            Transition::Committed(i) => self.set(i, State::Committed),
            Transition::Resolving(i) => self.set(i, State::Resolving),
            Transition::Interrupted(i) => self.set(i, State::Interrupted),
            Transition::Done(i) => {
                self.set(i, State::Done);
                for d in plan.dependents(i) {
                    if self.states[d] == State::Waiting {
                        self.waiting_on[d] -= 1;
                        if self.waiting_on[d] == 0 {
                            self.make_ready(d);
                        }
                    }
                }
            }
            Transition::Failed(i) => {
                self.set(i, State::Failed);
                self.skip_below(plan, i, &mut effects);
            }
            Transition::Parked(i) => {
                self.set(i, State::Parked);
                self.skip_below(plan, i, &mut effects);
            }
            Transition::Delayed(i, until) => {
                self.set(i, State::Delayed(until));
                self.delayed.push(i);
            }
            Transition::Tick(now) => {
                let states = &self.states;
                let (due, later): (Vec<usize>, Vec<usize>) = self
                    .delayed
                    .iter()
                    .partition(|&&i| matches!(states[i], State::Delayed(at) if at <= now));
                // Tasks no longer delayed (skipped meanwhile) leave the list.
                self.delayed = later
                    .into_iter()
                    .filter(|&i| matches!(self.states[i], State::Delayed(_)))
                    .collect();
                for i in due {
                    self.make_ready(i);
                }
            }
            Transition::Stuck => {
                for i in 0..self.states.len() {
                    if self.states[i] == State::Waiting {
                        let waits_for = plan
                            .deps(i)
                            .filter(|&d| self.states[d] != State::Done)
                            .collect();
                        self.set(i, State::Skipped);
                        effects.push(Effect::Stuck { task: i, waits_for });
                    }
                }
            }
        }
        Ok(effects)
    }

    /// Counts the unfinished deps of the waiting tasks among `tasks`, skips those below a dep
    /// that failed, was skipped or parked (but a reducer, which waits only for its deps to
    /// end), and queues those with none.
    fn settle(&mut self, plan: &Plan, tasks: Range<usize>, effects: &mut Vec<Effect>) {
        for i in plan.topological_order() {
            if !tasks.contains(&i) || self.states[i] != State::Waiting {
                continue;
            }
            let on_what_finished = plan.tasks[i].runs_on_what_finished();
            if !on_what_finished
                && let Some(bad) = plan.deps(i).find(|&d| self.states[d].ended_badly())
            {
                self.skip_below(plan, bad, effects);
                continue;
            }
            self.waiting_on[i] = plan
                .deps(i)
                .filter(|&d| self.states[d] != State::Done && !self.states[d].ended_badly())
                .count();
            if self.waiting_on[i] == 0 {
                self.make_ready(i);
            }
        }
    }

    fn make_ready(&mut self, i: usize) {
        self.set(i, State::Ready);
        self.ready.push((self.priority[i], Reverse(i)));
    }

    /// Skips every task below `i` that has not started, saying why; a reducer among them is
    /// not skipped but no longer waits for the task above it that ended so.
    fn skip_below(&mut self, plan: &Plan, i: usize, effects: &mut Vec<Effect>) {
        let cause = &plan.tasks[i].id;
        let why = match self.states[i] {
            State::Parked => format!("dependency {cause} is parked"),
            State::Skipped => format!("dependency {cause} was skipped"),
            _ => format!("dependency {cause} failed"),
        };
        let mut stack: Vec<usize> = plan.dependents(i).collect();
        let mut skipped = false;
        while let Some(d) = stack.pop() {
            if plan.tasks[d].runs_on_what_finished() {
                // A waiting task with nothing left to wait for is one `settle` has not
                // counted yet: it counts what ended when it gets there.
                if self.states[d] == State::Waiting && self.waiting_on[d] > 0 {
                    self.waiting_on[d] -= 1;
                    if self.waiting_on[d] == 0 {
                        self.make_ready(d);
                    }
                }
            } else if self.states[d].is_pending() {
                self.set(d, State::Skipped);
                skipped = true;
                effects.push(Effect::Skipped {
                    task: d,
                    why: why.clone(),
                });
                stack.extend(plan.dependents(d));
            }
        }
        if skipped {
            let states = &self.states;
            self.ready
                .retain(|(_, Reverse(t))| states[*t] == State::Ready);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A plan from `(id, deps)` pairs, every task a `true` command.
    fn plan(tasks: &[(&str, &[&str])]) -> Plan {
        let lines: Vec<String> = tasks
            .iter()
            .map(|(id, deps)| {
                serde_json::json!({ "id": id, "run": "true", "deps": deps }).to_string()
            })
            .collect();
        Plan::parse(&lines.join("\n"), "test").unwrap()
    }

    fn dag(plan: &Plan) -> Dag {
        let mut dag = Dag::new(plan, vec![State::Waiting; plan.len()]);
        assert_eq!(dag.on(plan, Transition::Settle).unwrap(), []);
        dag
    }

    fn drain(dag: &mut Dag) -> Vec<usize> {
        std::iter::from_fn(|| dag.pop_ready()).collect()
    }

    fn skipped(task: usize, why: &str) -> Effect {
        Effect::Skipped {
            task,
            why: why.to_owned(),
        }
    }

    // a → b → d, a → c; e alone. Longest remaining path first: a (3), then e and c (1).
    const DIAMOND: &[(&str, &[&str])] = &[
        ("a", &[]),
        ("b", &["a"]),
        ("c", &["a"]),
        ("d", &["b"]),
        ("e", &[]),
    ];

    #[test]
    fn settle_queues_the_roots_longest_path_first() {
        let p = plan(DIAMOND);
        let mut dag = dag(&p);
        assert_eq!(drain(&mut dag), [0, 4]);
        assert_eq!(dag.state(1), State::Waiting);
    }

    #[test]
    fn done_releases_dependents_once_all_their_deps_are_done() {
        let p = plan(&[("a", &[]), ("b", &[]), ("c", &["a", "b"])]);
        let mut dag = dag(&p);
        drain(&mut dag);
        for t in [Transition::Started(0), Transition::Started(1)] {
            dag.on(&p, t).unwrap();
        }
        assert_eq!(dag.on(&p, Transition::Done(0)).unwrap(), []);
        assert_eq!(dag.state(2), State::Waiting);
        assert_eq!(dag.on(&p, Transition::Done(1)).unwrap(), []);
        assert_eq!(drain(&mut dag), [2]);
    }

    #[test]
    fn a_failure_skips_everything_below_it_and_nothing_else() {
        let p = plan(DIAMOND);
        let mut dag = dag(&p);
        drain(&mut dag);
        dag.on(&p, Transition::Started(0)).unwrap();
        let effects = dag.on(&p, Transition::Failed(0)).unwrap();
        let mut tasks: Vec<usize> = effects
            .iter()
            .map(|e| match e {
                Effect::Skipped { task, why } => {
                    assert_eq!(why, "dependency a failed");
                    *task
                }
                Effect::Stuck { .. } => panic!("{e:?}"),
            })
            .collect();
        tasks.sort_unstable();
        assert_eq!(tasks, [1, 2, 3]);
        assert_eq!(dag.state(4), State::Ready);
    }

    /// As `plan`, with the last task a reducer.
    fn with_reducer(tasks: &[(&str, &[&str])]) -> Plan {
        let n = tasks.len();
        let lines: Vec<String> = tasks
            .iter()
            .enumerate()
            .map(|(k, (id, deps))| {
                let lane = if k + 1 == n { "reducer" } else { "worker" };
                serde_json::json!({ "id": id, "run": "true", "deps": deps, "lane": lane })
                    .to_string()
            })
            .collect();
        Plan::parse(&lines.join("\n"), "test").unwrap()
    }

    #[test]
    fn a_reducer_runs_once_its_deps_have_ended_whatever_became_of_them() {
        // w1 is parked, w2 fails, x (after w2) is skipped, w3 is done: the reducer runs once
        // the last of them has ended, and is never skipped.
        let p = with_reducer(&[
            ("w1", &[]),
            ("w2", &[]),
            ("x", &["w2"]),
            ("w3", &[]),
            ("report", &["w1", "x", "w3"]),
        ]);
        let mut dag = dag(&p);
        assert_eq!(drain(&mut dag), [1, 0, 3]);
        for i in [0, 1, 3] {
            dag.on(&p, Transition::Started(i)).unwrap();
        }
        dag.on(&p, Transition::Committed(0)).unwrap();
        assert_eq!(dag.on(&p, Transition::Parked(0)).unwrap(), []);
        assert_eq!(
            dag.on(&p, Transition::Failed(1)).unwrap(),
            [skipped(2, "dependency w2 failed")]
        );
        assert_eq!(dag.state(4), State::Waiting);
        assert_eq!(dag.on(&p, Transition::Done(3)).unwrap(), []);
        assert_eq!(drain(&mut dag), [4]);
    }

    #[test]
    fn a_reducer_below_what_ended_badly_before_a_resume_is_ready_at_once() {
        let p = with_reducer(&[("w", &[]), ("x", &["w"]), ("report", &["w", "x"])]);
        let mut dag = Dag::new(&p, vec![State::Failed, State::Waiting, State::Waiting]);
        assert_eq!(
            dag.on(&p, Transition::Settle).unwrap(),
            [skipped(1, "dependency w failed")]
        );
        assert_eq!(drain(&mut dag), [2]);
    }

    #[test]
    fn a_parked_writer_skips_its_dependents_saying_so() {
        let p = plan(&[("w", &[]), ("after", &["w"])]);
        let mut dag = dag(&p);
        drain(&mut dag);
        dag.on(&p, Transition::Started(0)).unwrap();
        dag.on(&p, Transition::Committed(0)).unwrap();
        assert_eq!(
            dag.on(&p, Transition::Parked(0)).unwrap(),
            [skipped(1, "dependency w is parked")]
        );
    }

    #[test]
    fn a_delayed_task_is_ready_when_its_time_comes() {
        let p = plan(&[("a", &[])]);
        let mut dag = dag(&p);
        drain(&mut dag);
        let now = Instant::now();
        let later = now + Duration::from_secs(5);
        dag.on(&p, Transition::Started(0)).unwrap();
        dag.on(&p, Transition::Delayed(0, later)).unwrap();
        assert_eq!(dag.next_delay(), Some(later));
        dag.on(&p, Transition::Tick(now)).unwrap();
        assert_eq!(dag.state(0), State::Delayed(later));
        dag.on(&p, Transition::Tick(later)).unwrap();
        assert_eq!(drain(&mut dag), [0]);
        assert_eq!(dag.next_delay(), None);
    }

    #[test]
    fn a_delayed_task_interrupted_meanwhile_leaves_the_delays() {
        let p = plan(&[("a", &[]), ("b", &["a"])]);
        let mut dag = dag(&p);
        drain(&mut dag);
        let at = Instant::now();
        dag.on(&p, Transition::Started(0)).unwrap();
        dag.on(&p, Transition::Delayed(0, at)).unwrap();
        // The run stops before the retry is due.
        dag.on(&p, Transition::Interrupted(0)).unwrap();
        dag.on(&p, Transition::Tick(at)).unwrap();
        assert!(!dag.has_ready());
        assert_eq!(dag.next_delay(), None);
        assert_eq!(dag.state(0), State::Interrupted);
        assert_eq!(dag.state(1), State::Waiting);
    }

    #[test]
    fn a_task_that_runs_or_ended_is_not_skipped_by_a_later_failure() {
        let p = plan(&[("a", &[]), ("b", &[]), ("c", &["a", "b"])]);
        let mut dag = dag(&p);
        drain(&mut dag);
        dag.on(&p, Transition::Started(0)).unwrap();
        dag.on(&p, Transition::Started(1)).unwrap();
        dag.on(&p, Transition::Done(0)).unwrap();
        assert_eq!(
            dag.on(&p, Transition::Failed(1)).unwrap(),
            [skipped(2, "dependency b failed")]
        );
        assert_eq!(dag.state(0), State::Done);
        // Failing again is refused, and changes nothing below.
        assert!(dag.on(&p, Transition::Failed(1)).is_err());
        assert_eq!(dag.state(2), State::Skipped);
    }

    #[test]
    fn settle_on_resume_skips_below_what_failed_and_counts_what_is_done() {
        let p = plan(DIAMOND);
        let states = vec![
            State::Done,
            State::Failed,
            State::Waiting,
            State::Waiting,
            State::Interrupted,
        ];
        let mut dag = Dag::new(&p, states);
        assert_eq!(
            dag.on(&p, Transition::Settle).unwrap(),
            [skipped(3, "dependency b failed")]
        );
        assert_eq!(drain(&mut dag), [2]);
    }

    #[test]
    fn tasks_a_goal_adds_join_and_may_wait_on_existing_ones() {
        let first = plan(&[("a", &[])]);
        let mut dag = dag(&first);
        drain(&mut dag);
        dag.on(&first, Transition::Started(0)).unwrap();
        let grown = plan(&[("a", &[]), ("g.x", &["a"]), ("g.y", &[])]);
        assert_eq!(dag.on(&grown, Transition::Added(1..3)).unwrap(), []);
        assert_eq!(dag.state(1), State::Waiting);
        assert_eq!(drain(&mut dag), [2]);
        dag.on(&grown, Transition::Done(0)).unwrap();
        assert_eq!(drain(&mut dag), [1]);
    }

    #[test]
    fn added_tasks_below_a_failure_are_skipped_at_once() {
        let first = plan(&[("a", &[])]);
        let mut dag = dag(&first);
        drain(&mut dag);
        dag.on(&first, Transition::Started(0)).unwrap();
        dag.on(&first, Transition::Failed(0)).unwrap();
        let grown = plan(&[("a", &[]), ("g.x", &["a"])]);
        assert_eq!(
            dag.on(&grown, Transition::Added(1..2)).unwrap(),
            [skipped(1, "dependency a failed")]
        );
    }

    #[test]
    fn stuck_tasks_are_skipped_with_what_they_wait_for() {
        let p = plan(&[("a", &[]), ("b", &["a"])]);
        let mut dag = Dag::new(&p, vec![State::Interrupted, State::Waiting]);
        dag.on(&p, Transition::Settle).unwrap();
        assert_eq!(
            dag.on(&p, Transition::Stuck).unwrap(),
            [Effect::Stuck {
                task: 1,
                waits_for: vec![0]
            }]
        );
        assert_eq!(dag.state(1), State::Skipped);
    }

    #[test]
    fn impossible_steps_are_refused_and_change_nothing() {
        let p = plan(&[("a", &[]), ("b", &["a"]), ("c", &["a"])]);
        let mut dag = dag(&p);
        drain(&mut dag);
        // Committed, done or failed before it started.
        for t in [
            Transition::Committed(0),
            Transition::Done(0),
            Transition::Failed(0),
        ] {
            assert!(dag.on(&p, t).is_err());
        }
        dag.on(&p, Transition::Started(0)).unwrap();
        dag.on(&p, Transition::Done(0)).unwrap();
        assert_eq!(drain(&mut dag), [1, 2]);
        // A second end does not release the dependents twice.
        assert!(dag.on(&p, Transition::Done(0)).is_err());
        assert!(dag.on(&p, Transition::Started(0)).is_err());
        assert!(dag.on(&p, Transition::Parked(1)).is_err());
        assert_eq!(dag.state(0), State::Done);
        assert_eq!(dag.finished(), 1);
    }

    #[test]
    fn requeued_tasks_come_back_in_priority_order() {
        let p = plan(DIAMOND);
        let mut dag = dag(&p);
        let taken = drain(&mut dag);
        dag.requeue(taken.iter().rev().copied());
        assert_eq!(drain(&mut dag), [0, 4]);
    }

    #[test]
    fn the_final_states_are_done_failed_skipped_and_parked() {
        let finals: Vec<bool> = [
            State::Waiting,
            State::Ready,
            State::Delayed(Instant::now()),
            State::Running,
            State::Committed,
            State::Resolving,
            State::Done,
            State::Failed,
            State::Skipped,
            State::Parked,
            State::Interrupted,
        ]
        .iter()
        .map(|s| s.is_final())
        .collect();
        assert_eq!(
            finals,
            [
                false, false, false, false, false, false, true, true, true, true, false
            ]
        );
    }

    #[test]
    fn the_finished_count_follows_every_transition() {
        let p = plan(&[("a", &[]), ("b", &["a"]), ("c", &["b"]), ("d", &[])]);
        let mut d = dag(&p);
        assert_eq!(d.finished(), 0);
        d.on(&p, Transition::Started(0)).unwrap();
        d.on(&p, Transition::Failed(0)).unwrap();
        // a failed, b and c are skipped below it.
        assert_eq!(d.finished(), 3);
        d.on(&p, Transition::Started(3)).unwrap();
        d.on(&p, Transition::Done(3)).unwrap();
        assert_eq!(d.finished(), 4);
        let resumed = Dag::new(
            &p,
            vec![State::Done, State::Waiting, State::Parked, State::Failed],
        );
        assert_eq!(resumed.finished(), 3);
    }
}
