//! Reading the integration branch when a run begins: whether the tip git holds is swarm's own,
//! which merges the gate has yet to pass, and which committed writers the tip holds already.
//! Pure over a [`History`]: the executor asks the repository, the simulation its world, so the
//! simulation checks the executor's own reading.

use std::collections::BTreeSet;

use anyhow::Context as _;

use crate::git::CommitId;

use super::dag::State;
use super::{Core, Found};

/// What a run's reading of its integration branch asks of git.
pub(in crate::schedule) trait History {
    /// The parents of `commit`, first parent first.
    fn parents(&self, commit: &CommitId) -> anyhow::Result<Vec<CommitId>>;
    /// Whether `commit` is `tip` or one of its ancestors.
    fn contains(&self, tip: &CommitId, commit: &CommitId) -> anyhow::Result<bool>;
}

impl Core<'_> {
    /// Whether the integration branch, found at `at` and not at the recorded tip, is where swarm
    /// left it: one merge ahead, its first parent the recorded tip and merging (or being) the
    /// commit of a writer waiting to be merged (a kill before the merge was recorded); or, with
    /// a gate, a tip the gate was moving it back to. Anything else moved it.
    pub(in crate::schedule) fn takes(
        &self,
        history: &impl History,
        at: &CommitId,
    ) -> anyhow::Result<bool> {
        let tip = self.tip();
        let committed = |c: &CommitId| {
            (0..self.slots.len()).any(|i| {
                self.dag.state(i) == State::Committed && self.slots[i].commit.as_ref() == Some(c)
            })
        };
        let parents = history.parents(at)?;
        let own = parents.first() == Some(tip)
            && (committed(at) || parents.get(1).is_some_and(committed));
        Ok(own || (self.settings.gate.is_some() && self.rewound_to(history, at)?))
    }

    /// Whether `at` is where the gate was moving the branch back to when swarm was stopped: an
    /// earlier tip on the recorded tip's first-parent line, every merge after it one of a
    /// culprit (parked) or of a writer waiting to be merged again.
    fn rewound_to(&self, history: &impl History, at: &CommitId) -> anyhow::Result<bool> {
        let mut tip = self.tip().clone();
        for _ in 0..=self.slots.len() {
            if tip == *at {
                return Ok(true);
            }
            let parents = history.parents(&tip)?;
            let ours = (0..self.slots.len()).any(|i| {
                matches!(self.dag.state(i), State::Parked | State::Committed)
                    && self.merged_by(i, &tip, &parents)
            });
            let Some(first) = parents.first().filter(|_| ours) else {
                return Ok(false);
            };
            tip = first.clone();
        }
        Ok(false)
    }

    /// The rest of what a run finds, its branch at `tip`: the merges since the last green tip
    /// (oldest first), whether that tip is off the branch, and the committed writers `tip`
    /// holds already.
    pub(in crate::schedule) fn read_branch(
        &self,
        history: &impl History,
        tip: &CommitId,
        found: &mut Found,
    ) -> anyhow::Result<()> {
        if let Some(green) = self.gate_green() {
            let mut chain = Vec::new();
            let mut at = tip.clone();
            while at != green {
                let parents = history.parents(&at)?;
                let Some(first) = parents.first().cloned() else {
                    break;
                };
                if let Some(task) =
                    (0..self.slots.len()).find(|&i| self.merged_by(i, &at, &parents))
                {
                    chain.push((task, at.clone()));
                }
                at = first;
            }
            chain.reverse();
            found.green_lost = at != green;
            found.ungated = chain;
        }
        let chain: BTreeSet<usize> = found.ungated.iter().map(|(i, _)| *i).collect();
        for i in 0..self.slots.len() {
            if self.dag.state(i) != State::Committed || chain.contains(&i) {
                continue;
            }
            let commit = self.slots[i]
                .commit
                .as_ref()
                .context("a committed task has no commit")?;
            if history.contains(tip, commit)? {
                found.merged.insert(i);
            }
        }
        Ok(())
    }

    /// Whether `at` (with `parents`) is writer `i`'s merge: its commit, or merging it. Never a
    /// candidate's: its commit, once picked, is merged as its task's, which shares it.
    fn merged_by(&self, i: usize, at: &CommitId, parents: &[CommitId]) -> bool {
        self.plan.tasks[i].candidate_of.is_none()
            && self.slots[i]
                .commit
                .as_ref()
                .is_some_and(|c| c == at || parents.get(1) == Some(c))
    }
}
