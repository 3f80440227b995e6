//! Conflicts seen coming: while writers run, the core asks the executor at an interval to
//! compare their changes (committed or not) with each other's and with what was merged since
//! each started (`Effect::Forecast`); the executor trial-merges, in memory, only the files two
//! of them both changed, and says what would conflict (`Input::Forecast`). Each pair's
//! conflict is recorded and said once; with `forecast = "tell"` the later writer's agent is
//! told too.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use crate::config::Forecast as Mode;
use crate::store::RunEvent;
use crate::ui::Told;

use super::dag::State;
use super::{Core, Effect, Rec};

/// A conflict the executor foresees: writer `later`'s change against writer `with`'s (`None`:
/// against what was merged since `later` started), in `paths`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::schedule) struct Foreseen {
    pub(in crate::schedule) later: usize,
    pub(in crate::schedule) with: Option<usize>,
    pub(in crate::schedule) paths: Vec<String>,
}

/// What one look found: the conflicts foreseen, and how many files it trial-merged.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(in crate::schedule) struct Looked {
    pub(in crate::schedule) writers: usize,
    pub(in crate::schedule) probes: usize,
    pub(in crate::schedule) foreseen: Vec<Foreseen>,
}

/// When the next look is due, whether one is out, which pairs were said, and (with `hold`)
/// the writers whose merge waits for another's.
#[derive(Debug, Default)]
pub(super) struct Forecasts {
    next: Option<Instant>,
    out: bool,
    said: BTreeSet<(usize, Option<usize>)>,
    /// Later writers foreseen to conflict with a running writer, and that writer.
    against: BTreeMap<usize, usize>,
    /// Committed writers whose merge waits for that writer's end.
    held: BTreeMap<usize, usize>,
}

impl Forecasts {
    /// When the loop must wake for the next look, if one is to come.
    pub(super) fn next_wake(&self) -> Option<Instant> {
        self.next.filter(|_| !self.out)
    }

    /// The look asked for was not made.
    pub(super) fn not_looked(&mut self) {
        self.out = false;
    }

    /// Whether a committed writer's merge waits for another's.
    pub(super) fn holds(&self) -> bool {
        !self.held.is_empty()
    }
}

impl Core<'_> {
    /// The writers running in this process, with the tip each started from: what a look
    /// compares.
    fn live_writers(&self) -> Vec<usize> {
        (0..self.plan.len())
            .filter(|&i| {
                self.dag.state(i) == State::Running
                    && self.plan.tasks[i].mode == crate::plan::Mode::Write
                    && !self.plan.tasks[i].picks()
                    && !self.counts.remote.contains(&i)
                    && self.slots[i].start_commit.is_some()
            })
            .collect()
    }

    /// Asks for a look when one is due: at the forecast interval while writers run, when
    /// there is something to compare (two of them, or one that started before the tip moved).
    pub(super) fn forecast(&mut self, now: Instant, fx: &mut Vec<Effect>) {
        if self.settings.forecast == Mode::Off || self.forecasts.out {
            return;
        }
        if self.stopping() {
            self.forecasts.next = None;
            return;
        }
        let live = self.live_writers();
        let tip = self.tip().clone();
        let comparable = live.len() >= 2
            || live
                .iter()
                .any(|&i| self.slots[i].start_commit.as_ref() != Some(&tip));
        if !comparable {
            self.forecasts.next = None;
            return;
        }
        let due = *self
            .forecasts
            .next
            .get_or_insert(now + self.settings.forecast_interval);
        if now < due {
            return;
        }
        // The next is due an interval after this one comes back.
        self.forecasts.out = true;
        self.forecasts.next = None;
        fx.push(Effect::Forecast { writers: live, tip });
    }

    /// A look came back: each conflict foreseen between writers still running is recorded
    /// and said, once a pair.
    pub(super) fn foreseen(&mut self, looked: Looked, fx: &mut Vec<Effect>) {
        if !self.forecasts.out {
            self.refused
                .push("a forecast came back that was not asked for".to_owned());
            return;
        }
        self.forecasts.out = false;
        fx.push(Effect::Record(Rec::Run(RunEvent::ForecastLooked {
            writers: looked.writers,
            probes: looked.probes,
        })));
        for f in looked.foreseen {
            let running = |i: usize| self.dag.state(i) == State::Running;
            if !running(f.later) || f.with.is_some_and(|w| !running(w)) {
                continue;
            }
            if !self.forecasts.said.insert((f.later, f.with)) {
                continue;
            }
            let id = self.id(f.later).to_owned();
            let with = f.with.map(|w| self.id(w).to_owned());
            fx.push(Effect::Record(Rec::Task(
                id.clone(),
                RunEvent::ConflictForecast {
                    with: with.clone(),
                    paths: f.paths.clone(),
                },
            )));
            fx.push(Effect::Tell(Told::Forecast {
                id,
                with: with.clone(),
                paths: f.paths.clone(),
            }));
            if let Some(w) = f.with {
                self.forecasts.against.insert(f.later, w);
            }
            if self.settings.forecast == Mode::Tell {
                let other = match &with {
                    Some(w) => format!("the change of task {w}, running beside you,"),
                    None => "work merged since you started".to_owned(),
                };
                fx.push(Effect::Note {
                    task: f.later,
                    text: format!(
                        "swarm: your change to {} is likely to conflict with {other} when it is merged. Keep your edits there small, and do not reformat or move code you do not need to change.\n",
                        f.paths.join(", ")
                    ),
                });
            }
        }
    }
}

impl Core<'_> {
    /// Whether writer `w` may still be merged in this run: it runs, waits for its merge or its
    /// retry, or climbs the conflict ladder.
    fn may_merge(&self, w: usize) -> bool {
        matches!(
            self.dag.state(w),
            State::Running | State::Committed | State::Resolving | State::Ready | State::Delayed(_)
        )
    }

    /// Writer `i` is committed: with `forecast = "hold"`, when it was foreseen to conflict with
    /// a writer that may still be merged (and that writer's merge does not wait for it), its
    /// merge waits for that writer's end, said; else it joins the merge queue.
    pub(super) fn merge_when_due(&mut self, i: usize, fx: &mut Vec<Effect>) {
        if self.settings.forecast == Mode::Hold
            && let Some(&w) = self.forecasts.against.get(&i)
            && self.may_merge(w)
            && self.forecasts.held.get(&w) != Some(&i)
        {
            self.forecasts.held.insert(i, w);
            let (id, with) = (self.id(i).to_owned(), self.id(w).to_owned());
            fx.push(Effect::Record(Rec::Task(
                id.clone(),
                RunEvent::HeldForMerge { with: with.clone() },
            )));
            fx.push(Effect::Tell(Told::HeldForMerge { id, with }));
            return;
        }
        self.enqueue(i, fx);
    }

    /// Held writers whose other writer has ended (merged, or not to be) join the merge queue.
    pub(super) fn release_held(&mut self, fx: &mut Vec<Effect>) {
        let free: Vec<usize> = self
            .forecasts
            .held
            .iter()
            .filter(|&(_, &w)| !self.may_merge(w))
            .map(|(&i, _)| i)
            .collect();
        for i in free {
            self.forecasts.held.remove(&i);
            if self.dag.state(i) == State::Committed {
                self.enqueue(i, fx);
            }
        }
    }
}
