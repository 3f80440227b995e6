//! The run's token budget: what the tasks' attempts have used, this run and before a resume,
//! against `--budget-tokens`. Past it nothing new starts: running attempts finish (and finished
//! writers are merged), then the loop ends, resumable.

use crate::schedule::run::Run;
use crate::store::RunEvent;

pub(super) struct Budget {
    limit: Option<u64>,
    used: u64,
    spent: bool,
}

impl Budget {
    pub(super) fn new(limit: Option<u64>, used: u64) -> Self {
        Self {
            limit,
            used,
            spent: false,
        }
    }

    pub(super) fn add(&mut self, tokens: u64) {
        self.used += tokens;
    }

    /// Whether the run stops because the budget is spent.
    pub(super) fn spent(&self) -> bool {
        self.spent
    }

    /// The first time the budget is spent: recorded, and why the run winds down.
    pub(super) fn check(
        &mut self,
        run: &mut Run<'_>,
        running: usize,
    ) -> anyhow::Result<Option<String>> {
        let Some(budget) = self.limit else {
            return Ok(None);
        };
        if self.spent || self.used < budget {
            return Ok(None);
        }
        self.spent = true;
        run.record.run_event(RunEvent::BudgetSpent {
            budget,
            used: self.used,
            running,
        })?;
        Ok(Some(format!(
            "the token budget is spent ({} of {budget} tokens); {running} running task(s) finish, nothing new starts",
            self.used
        )))
    }
}
