//! A stored run read back: its plan, from the specs its tasks were stored with, and its event
//! log. Reads only and knows no subcommand, so that the commands that run a stored run
//! (`resume`, `retry`) and those that show one (`status`, `logs`, `show`, `web`) share it
//! without reaching into each other.

use std::path::Path;

use anyhow::Context as _;

use crate::plan::Plan;
use crate::store::TaskRecord;

/// The plan of a stored run, from its tasks' specs.
pub(super) fn stored_plan(records: &[TaskRecord]) -> anyhow::Result<Plan> {
    if records.is_empty() {
        // A multi-goal run stopped before any goal was planned.
        return Plan::from_tasks(Vec::new());
    }
    let text: String = records
        .iter()
        .flat_map(|r| [r.spec.to_string(), "\n".to_owned()])
        .collect();
    Plan::parse(&text, "the stored plan").map_err(anyhow::Error::new)
}

/// Every line of a run's event log that reads as a `T`; none when the log is not there yet.
pub(super) fn read_events<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<Vec<T>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("could not read {}", path.display())),
    };
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}
