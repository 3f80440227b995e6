//! The executor's part of forecasting conflicts: the running writers' checkouts handed to
//! git's look (`git::foresee`), and what it found said as the core takes it, the later of two
//! writers first. What the core asked for in `Effect::Forecast`, for `Input::Forecast`.

use super::super::Checkout;
use super::super::core::{Core, Foreseen, Looked};
use super::Exec;
use crate::git::{CommitId, Live, foresee};

/// Compares the running `writers` with each other and with what was merged since each
/// started (the integration tip is `tip`).
pub(super) fn look(
    core: &Core<'_>,
    ex: &Exec<'_>,
    writers: &[usize],
    tip: &CommitId,
) -> anyhow::Result<Looked> {
    let live: Vec<Live> = writers
        .iter()
        .filter_map(|&i| {
            Some(Live {
                key: i,
                start: core.slots[i].start_commit.clone()?,
                dir: ex.out.layout.worktree(core.id(i), Checkout::Task),
            })
        })
        .collect();
    let (probes, clashes) = foresee(ex.out.repo, &live, tip)?;
    let foreseen = clashes
        .into_iter()
        .map(|c| match c.b {
            // The writer that started later is the one told.
            Some(b) if core.slots[b].started > core.slots[c.a].started => Foreseen {
                later: b,
                with: Some(c.a),
                paths: c.paths,
            },
            with => Foreseen {
                later: c.a,
                with,
                paths: c.paths,
            },
        })
        .collect();
    Ok(Looked {
        writers: writers.len(),
        probes,
        foreseen,
    })
}
