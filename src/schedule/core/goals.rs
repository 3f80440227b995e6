//! The goals of a multi-goal run, as the core decides them: the dependency pass over goals
//! whose needs are not known, planning a goal once the goals it needs are done and merged,
//! its tasks joining the running DAG, a goal settled when its tasks end, goals skipped when
//! what they need cannot be, goals from the queue, and what can never become ready. The
//! executor asks the model (`Effect::InferNeeds`, `Effect::PlanGoal`) and reads the queue
//! (`Effect::PollQueue`); its answers come back as inputs.

use std::time::{Duration, Instant};

use crate::agent::Fault;
use crate::plan::{Plan, Task};
use crate::planner::needs::{Edge, Inferred};
use crate::store::{GoalRecord, GoalStatus, Need, RunEvent};
use crate::ui::{GoalEnd, Told};

use super::dag::{Dag, State};
use super::{Core, Effect, Rec};

/// How often a run draining the queue looks for goals added since it started.
pub(in crate::schedule) const QUEUE_POLL: Duration = Duration::from_secs(1);

/// What a goal's planning came to, as the executor hands it over.
#[derive(Debug)]
pub(in crate::schedule) enum Planned {
    /// The plan, its tasks named into the goal's namespace.
    Tasks {
        tasks: Vec<Task>,
        /// Each repair made to the planner's draft: its kind and what it did.
        repairs: Vec<(String, String)>,
        requests: u32,
        tokens: u64,
    },
    /// The endpoint or the machine failed it: the goal stays pending, the run stops.
    Cut(Fault),
    /// The planner failed (a bad plan, a refusal): why.
    Failed(String),
}

/// One goal, as the loop tracks it.
#[derive(Debug)]
pub(in crate::schedule) struct Goal {
    pub(in crate::schedule) id: String,
    pub(in crate::schedule) text: String,
    pub(in crate::schedule) needs: Option<Vec<Need>>,
    pub(in crate::schedule) status: GoalStatus,
    /// Its tasks' indices in the plan, once planned.
    pub(in crate::schedule) tasks: Vec<usize>,
    /// The tasks its tasks spawned: it ends once they have, too.
    joined: Vec<usize>,
    pub(in crate::schedule) planning: bool,
}

/// The goals of the run.
#[derive(Debug)]
pub(in crate::schedule) struct Goals {
    from_queue: bool,
    pub(in crate::schedule) list: Vec<Goal>,
    /// The goals whose needs the dependency pass in flight decides.
    pass: Option<Vec<usize>>,
    polled: Option<Instant>,
    /// A read of the queue is out: the goals wait for it before they move on.
    polling: bool,
    /// The queue was read once more after the run had nothing left to do.
    final_poll: bool,
}

impl Goals {
    /// The goals of a run, `plan` holding the tasks of those already planned.
    pub(super) fn new(goals: Vec<GoalRecord>, from_queue: bool, plan: &Plan) -> Self {
        let list = goals
            .into_iter()
            .map(|g| {
                let (joined, tasks): (Vec<usize>, Vec<usize>) = plan
                    .goal_tasks(&g.id)
                    .into_iter()
                    .partition(|&i| plan.tasks[i].parent.is_some());
                // Tasks on the board mean the goal was planned, even if a kill came before
                // its status was.
                let status = if g.status == GoalStatus::Pending && !tasks.is_empty() {
                    GoalStatus::Planned
                } else {
                    g.status
                };
                Goal {
                    id: g.id,
                    text: g.text,
                    needs: g.needs,
                    status,
                    tasks,
                    joined,
                    planning: false,
                }
            })
            .collect();
        Self {
            from_queue,
            list,
            pass: None,
            polled: None,
            polling: false,
            final_poll: false,
        }
    }

    /// A dependency pass, a planner or a read of the queue is out.
    pub(super) fn busy(&self) -> bool {
        self.pass.is_some() || self.polling || self.list.iter().any(|g| g.planning)
    }

    pub(super) fn drains_queue(&self) -> bool {
        self.from_queue
    }

    /// When the queue is to be read next, for a run draining it.
    pub(super) fn next_poll(&self) -> Option<Instant> {
        if !self.from_queue || self.polling {
            return None;
        }
        self.polled.map(|t| t + QUEUE_POLL)
    }

    /// Goal `gi`'s place by id.
    pub(in crate::schedule) fn index(&self, id: &str) -> Option<usize> {
        self.list.iter().position(|g| g.id == id)
    }

    /// Each goal as the dependency pass sees it: its id, its text, and whether it has started
    /// (planned or planning), so that no need is put on it after the fact.
    pub(in crate::schedule) fn texts(&self) -> Vec<(String, String, bool)> {
        self.list
            .iter()
            .map(|g| {
                let started = g.status != GoalStatus::Pending || g.planning;
                (g.id.clone(), g.text.clone(), started)
            })
            .collect()
    }

    /// The needs known so far, as edges.
    pub(in crate::schedule) fn known_edges(&self) -> Vec<Edge> {
        self.list
            .iter()
            .flat_map(|g| {
                g.needs.iter().flatten().map(|n| Edge {
                    goal: g.id.clone(),
                    needs: n.goal.clone(),
                    reason: n.reason.clone(),
                })
            })
            .collect()
    }

    /// Before the loop ends for want of work: a queue-draining run reads the queue once more.
    /// Returns whether it should go on.
    pub(super) fn poll_before_ending(&mut self) -> bool {
        if !self.from_queue || self.final_poll {
            return false;
        }
        self.final_poll = true;
        self.polled = None;
        true
    }

    /// Goals the queue held, now the run's.
    pub(super) fn queued(&mut self, taken: Vec<GoalRecord>, fx: &mut Vec<Effect>) {
        self.polling = false;
        if !taken.is_empty() {
            self.final_poll = false;
        }
        for g in taken {
            fx.push(Effect::Tell(Told::Queued {
                goal: g.id.clone(),
                text: g.text.clone(),
            }));
            self.list.push(Goal {
                id: g.id,
                text: g.text,
                needs: None,
                status: GoalStatus::Pending,
                tasks: Vec::new(),
                joined: Vec::new(),
                planning: false,
            });
        }
    }

    /// Tasks that joined the plan at `added`: those spawned below a goal's tasks are its too.
    pub(super) fn learn(&mut self, plan: &Plan, added: std::ops::Range<usize>) {
        for i in added {
            if plan.tasks[i].parent.is_none() {
                continue;
            }
            let id = plan.tasks[i].id.as_str();
            let goal = self.list.iter_mut().find(|g| {
                id.strip_prefix(g.id.as_str())
                    .is_some_and(|r| r.starts_with('.'))
            });
            if let Some(g) = goal {
                g.joined.push(i);
            }
        }
    }

    /// Planned goals whose tasks have all ended get their final status. Whether any did.
    pub(super) fn settle(&mut self, dag: &Dag, fx: &mut Vec<Effect>) -> bool {
        let mut changed = false;
        for g in &mut self.list {
            if g.status != GoalStatus::Planned {
                continue;
            }
            // From the last task back: a goal's reducer ends last, so an unfinished goal is
            // told at once, however many of its tasks have ended.
            let state = |&i: &usize| dag.state(i);
            let all = || g.tasks.iter().chain(&g.joined);
            if !g
                .joined
                .iter()
                .rev()
                .chain(g.tasks.iter().rev())
                .map(state)
                .all(State::is_final)
            {
                continue;
            }
            let ends: Vec<State> = all().map(state).collect();
            let (status, how, reason) = if ends.contains(&State::Parked) {
                let why = "a writer's merge conflicted and is parked";
                (GoalStatus::Parked, GoalEnd::Parked, Some(why))
            } else if ends.iter().all(|s| *s == State::Done) {
                (GoalStatus::Done, GoalEnd::Done, None)
            } else {
                let why = "some of its tasks failed";
                (GoalStatus::Failed, GoalEnd::Failed, Some(why))
            };
            g.status = status;
            changed = true;
            fx.push(Effect::Record(Rec::GoalStatus {
                goal: g.id.clone(),
                status,
                reason: reason.map(str::to_owned),
                event: RunEvent::GoalEnded {
                    goal: g.id.clone(),
                    status: status.as_str().to_owned(),
                },
            }));
            fx.push(Effect::Tell(Told::GoalEnded {
                goal: g.id.clone(),
                text: g.text.clone(),
                how,
            }));
        }
        changed
    }

    /// Pending goals that need a goal which failed, was parked or was skipped are skipped.
    /// Whether any was.
    fn skip_unreachable(&mut self, fx: &mut Vec<Effect>) -> bool {
        let mut skips = Vec::new();
        for (gi, g) in self.list.iter().enumerate() {
            if g.status != GoalStatus::Pending || g.planning {
                continue;
            }
            let Some(needs) = &g.needs else { continue };
            let blocked = needs.iter().find_map(|n| {
                let other = &self.list[self.index(&n.goal)?];
                let what = match other.status {
                    GoalStatus::Failed => "failed",
                    GoalStatus::Parked => "was parked",
                    GoalStatus::Skipped => "was skipped",
                    _ => return None,
                };
                Some(format!("needs goal {}, which {what}", other.id))
            });
            if let Some(reason) = blocked {
                skips.push((gi, reason));
            }
        }
        for (gi, reason) in &skips {
            let g = &mut self.list[*gi];
            g.status = GoalStatus::Skipped;
            fx.push(Effect::Record(Rec::GoalStatus {
                goal: g.id.clone(),
                status: GoalStatus::Skipped,
                reason: Some(reason.clone()),
                event: RunEvent::GoalSkipped {
                    goal: g.id.clone(),
                    reason: reason.clone(),
                },
            }));
            fx.push(Effect::Tell(Told::GoalSkipped {
                goal: g.id.clone(),
                reason: reason.clone(),
            }));
        }
        !skips.is_empty()
    }

    /// The dependency pass ended: the goals it covered get their needs, or none if it failed.
    pub(super) fn needs_inferred(
        &mut self,
        covered: &[usize],
        result: Result<Inferred, String>,
        fx: &mut Vec<Effect>,
    ) {
        self.pass = None;
        match result {
            Ok(inferred) => {
                let mut rows = Vec::new();
                for &gi in covered {
                    let id = self.list[gi].id.clone();
                    let needs: Vec<Need> = inferred
                        .edges
                        .iter()
                        .filter(|e| e.goal == id)
                        .map(|e| Need {
                            goal: e.needs.clone(),
                            reason: e.reason.clone(),
                        })
                        .collect();
                    rows.push((id, needs));
                }
                let mut events: Vec<RunEvent> = inferred
                    .edges
                    .iter()
                    .map(|e| RunEvent::GoalNeeds {
                        goal: e.goal.clone(),
                        needs: e.needs.clone(),
                        reason: e.reason.clone(),
                    })
                    .collect();
                events.extend(
                    inferred
                        .dropped
                        .iter()
                        .map(|(e, why)| RunEvent::GoalNeedDropped {
                            goal: e.goal.clone(),
                            needs: e.needs.clone(),
                            reason: e.reason.clone(),
                            why: why.clone(),
                        }),
                );
                events.push(RunEvent::GoalsInferred {
                    goals: rows.iter().map(|(id, _)| id.clone()).collect(),
                    edges: inferred.edges.len(),
                    dropped: inferred.dropped.len(),
                    requests: inferred.requests,
                    tokens: inferred.usage.total_tokens,
                });
                fx.push(Effect::Record(Rec::GoalNeeds {
                    rows: rows.clone(),
                    events,
                }));
                for e in &inferred.edges {
                    fx.push(Effect::Tell(Told::Needs {
                        goal: e.goal.clone(),
                        needs: e.needs.clone(),
                        reason: e.reason.clone(),
                    }));
                }
                for (e, why) in &inferred.dropped {
                    fx.push(Effect::Tell(Told::NeedDropped {
                        goal: e.goal.clone(),
                        needs: e.needs.clone(),
                        why: why.clone(),
                    }));
                }
                for (id, needs) in rows {
                    if let Some(gi) = self.index(&id) {
                        self.list[gi].needs = Some(needs);
                    }
                }
            }
            Err(error) => {
                let rows: Vec<(String, Vec<Need>)> = covered
                    .iter()
                    .map(|&gi| (self.list[gi].id.clone(), Vec::new()))
                    .collect();
                let event = RunEvent::GoalNeedsFailed {
                    goals: rows.iter().map(|(id, _)| id.clone()).collect(),
                    error: error.clone(),
                };
                fx.push(Effect::Record(Rec::GoalNeeds {
                    rows,
                    events: vec![event],
                }));
                fx.push(Effect::Tell(Told::Independent(error)));
                for &gi in covered {
                    self.list[gi].needs = Some(Vec::new());
                }
            }
        }
    }

    /// After the loop ran out of work: goals that were never planned are stuck. Says which
    /// and why, and marks them skipped. Returns the lines to say.
    pub(super) fn report_stuck(&mut self, fx: &mut Vec<Effect>) -> Vec<String> {
        let stuck: Vec<usize> = (0..self.list.len())
            .filter(|&gi| self.list[gi].status == GoalStatus::Pending)
            .collect();
        let whys: Vec<String> = stuck
            .iter()
            .map(|&gi| {
                let waits: Vec<String> = self.list[gi]
                    .needs
                    .iter()
                    .flatten()
                    .filter_map(|n| {
                        let o = &self.list[self.index(&n.goal)?];
                        (o.status != GoalStatus::Done)
                            .then(|| format!("goal {} ({})", o.id, o.status.as_str()))
                    })
                    .collect();
                if waits.is_empty() {
                    "its dependencies were never settled".to_owned()
                } else {
                    format!("waits for {}", waits.join(", "))
                }
            })
            .collect();
        let mut lines = Vec::new();
        for (&gi, why) in stuck.iter().zip(&whys) {
            let g = &mut self.list[gi];
            g.status = GoalStatus::Skipped;
            let reason = format!("deadlock: {why}");
            fx.push(Effect::Record(Rec::GoalStatus {
                goal: g.id.clone(),
                status: GoalStatus::Skipped,
                reason: Some(reason.clone()),
                event: RunEvent::GoalStuck {
                    goal: g.id.clone(),
                    reason,
                },
            }));
            lines.push(format!("goal {}: {why}", g.id));
        }
        lines
    }
}

impl Core<'_> {
    /// Moves the goals on: reads the queue when due, settles goals whose tasks have all
    /// ended, skips goals whose needs cannot be met (until nothing changes, so a chain of
    /// skips settles at once), starts the dependency pass, and starts planning the goals
    /// whose needs are all done and merged.
    pub(super) fn advance_goals(&mut self, now: Instant, fx: &mut Vec<Effect>) {
        let Some(g) = &mut self.goals else {
            return;
        };
        if g.polling {
            return;
        }
        if g.from_queue
            && g.polled
                .is_none_or(|t| now.saturating_duration_since(t) >= QUEUE_POLL)
        {
            g.polled = Some(now);
            g.polling = true;
            fx.push(Effect::PollQueue);
            return;
        }
        loop {
            let mut changed = g.settle(&self.dag, fx);
            changed |= g.skip_unreachable(fx);
            if !changed {
                break;
            }
        }
        self.start_needs_pass(fx);
        self.start_planning(fx);
    }

    /// Starts one dependency pass over the goals whose needs are not known yet; one goal
    /// alone needs nothing, and no one is asked.
    fn start_needs_pass(&mut self, fx: &mut Vec<Effect>) {
        let Some(g) = &mut self.goals else {
            return;
        };
        if g.pass.is_some() {
            return;
        }
        let open: Vec<usize> = (0..g.list.len())
            .filter(|&gi| g.list[gi].needs.is_none())
            .collect();
        if open.is_empty() {
            return;
        }
        if g.list.len() == 1 {
            let none = Inferred {
                edges: Vec::new(),
                dropped: Vec::new(),
                usage: crate::llm::Usage::default(),
                requests: 0,
            };
            g.needs_inferred(&open, Ok(none), fx);
            return;
        }
        let names: Vec<String> = open.iter().map(|&gi| g.list[gi].id.clone()).collect();
        g.pass = Some(open.clone());
        fx.push(Effect::Tell(Told::Inferring(names)));
        fx.push(Effect::InferNeeds(open));
    }

    /// Starts planning every pending goal whose needs are all done.
    fn start_planning(&mut self, fx: &mut Vec<Effect>) {
        let Some(g) = &mut self.goals else {
            return;
        };
        let mut start = Vec::new();
        for (gi, goal) in g.list.iter().enumerate() {
            if goal.status != GoalStatus::Pending || goal.planning {
                continue;
            }
            let Some(needs) = &goal.needs else { continue };
            let met = needs.iter().all(|n| {
                g.index(&n.goal)
                    .is_none_or(|o| g.list[o].status == GoalStatus::Done)
            });
            if met {
                start.push(gi);
            }
        }
        for gi in start {
            let goal = &mut g.list[gi];
            goal.planning = true;
            fx.push(Effect::Tell(Told::Planning {
                goal: goal.id.clone(),
                text: goal.text.clone(),
            }));
            fx.push(Effect::PlanGoal(gi));
        }
    }

    /// A goal's planning ended: its tasks join the run, or the goal fails; or, failed by a
    /// fault outside it, it stays pending and the run stops for the fault.
    pub(super) fn planned(&mut self, gi: usize, answer: Planned, fx: &mut Vec<Effect>) {
        let stopping = self.stopping();
        let Some(g) = &mut self.goals else {
            return;
        };
        let Some(goal) = g.list.get_mut(gi).filter(|goal| goal.planning) else {
            self.refused.push(format!(
                "goal {gi} was planned while no planning of it was out"
            ));
            return;
        };
        goal.planning = false;
        let id = goal.id.clone();
        let (tasks, repairs, requests, tokens) = match answer {
            Planned::Tasks {
                tasks,
                repairs,
                requests,
                tokens,
            } => (tasks, repairs, requests, tokens),
            // Stopped while planning: the goal stays pending and a resume plans it again.
            _ if stopping => return,
            // So it does when the endpoint or the machine failed it: the run stops for that.
            Planned::Cut(fault) => {
                fx.push(Effect::Tell(Told::PlanningCut {
                    goal: id,
                    why: fault.why.clone(),
                }));
                self.stop.fault.get_or_insert(fault);
                return;
            }
            Planned::Failed(why) => return self.goal_failed(gi, &why, fx),
        };
        // The plan joins the run's DAG, or the goal fails; the run's DAG is left as it was.
        let mut tasks = tasks;
        if let Some(c) = self.settings.candidates {
            crate::plan::candidates::give(&mut tasks, c);
        }
        let added = match self.plan.extend(tasks) {
            Ok(added) => added,
            Err(_) if stopping => return,
            Err(e) => return self.goal_failed(gi, &format!("{e:#}"), fx),
        };
        // As they joined: with the candidates of those that have any.
        let specs: Vec<(String, serde_json::Value)> = self.plan.tasks[added.clone()]
            .iter()
            .map(|t| (t.id.to_string(), t.to_json()))
            .collect();
        for (kind, message) in &repairs {
            fx.push(Effect::Record(Rec::Run(RunEvent::PlanRepair {
                goal: Some(id.clone()),
                kind: kind.clone(),
                message: message.clone(),
            })));
        }
        fx.push(Effect::Record(Rec::TasksAdded(specs.clone())));
        fx.push(Effect::Record(Rec::GoalStatus {
            goal: id.clone(),
            status: GoalStatus::Planned,
            reason: None,
            event: RunEvent::GoalPlanned {
                goal: id.clone(),
                tasks: specs.len(),
                requests,
                tokens,
                repairs: repairs.len(),
            },
        }));
        fx.push(Effect::WritePlan);
        if let Some(g) = &mut self.goals {
            g.list[gi].status = GoalStatus::Planned;
            g.list[gi].tasks = added.clone().collect();
        }
        // No one is asked about a goal planned inside the run: what its tasks may add is said.
        let ceiling = crate::schedule::Ceiling::of_tasks(
            &self.plan.tasks[added.clone()],
            &self.settings.spawn,
        );
        fx.push(Effect::Tell(Told::Planned {
            goal: id,
            tasks: added.len(),
            repairs: repairs.len(),
            tokens,
            spawning: ceiling.describe(),
        }));
        self.grow(added, fx);
    }

    /// Goal `gi`'s planning failed for `why`: the goal fails, and the goals needing it are
    /// skipped in turn.
    fn goal_failed(&mut self, gi: usize, why: &str, fx: &mut Vec<Effect>) {
        let Some(g) = &mut self.goals else {
            return;
        };
        let goal = &mut g.list[gi];
        let reason = format!("planning failed: {why}");
        goal.status = GoalStatus::Failed;
        fx.push(Effect::Record(Rec::GoalStatus {
            goal: goal.id.clone(),
            status: GoalStatus::Failed,
            reason: Some(reason.clone()),
            event: RunEvent::GoalPlanningFailed {
                goal: goal.id.clone(),
                error: reason.clone(),
            },
        }));
        fx.push(Effect::Tell(Told::PlanningFailed {
            goal: goal.id.clone(),
            reason,
        }));
    }
}
