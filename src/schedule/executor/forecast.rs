//! The executor's part of forecasting conflicts: the running writers' checkouts handed to
//! git's look (`git::foresee`) on a thread of its own, so that the loop never waits for a look
//! at many checkouts; what it found comes back as a message, the later of two writers first.
//! What the core asked for in `Effect::Forecast`, for `Input::Forecast`.

use std::sync::mpsc::Sender;

use super::super::core::{Core, Foreseen, Looked};
use super::super::{Checkout, Message};
use super::Exec;
use crate::git::{CommitId, Live, foresee};

/// Starts the comparison of the running `writers` with each other and with what was merged
/// since each started (the integration tip is `tip`); its result comes as
/// `Message::Foreseen`. A look that fails finds nothing.
pub(super) fn look(core: &Core<'_>, ex: &Exec<'_>, writers: &[usize], tip: &CommitId) {
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
    let started: Vec<_> = core.slots.iter().map(|s| s.started).collect();
    let (common_dir, tip, count) = (
        ex.out.repo.common_dir().to_owned(),
        tip.clone(),
        writers.len(),
    );
    let tx: Sender<Message> = ex.tx.clone();
    // A look that cannot start finds nothing: the core then asks again an interval later.
    let unstarted = ex.tx.clone();
    let spawned = std::thread::Builder::new()
        .name("swarm-forecast".into())
        .spawn(move || {
            let (probes, clashes) = foresee(&common_dir, &live, &tip).unwrap_or_default();
            let foreseen = clashes
                .into_iter()
                .map(|c| match c.b {
                    // The writer that started later is the one told.
                    Some(b) if started[b] > started[c.a] => Foreseen {
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
            let _ = tx.send(Message::Foreseen(Looked {
                writers: count,
                probes,
                foreseen,
            }));
        });
    if spawned.is_err() {
        let _ = unstarted.send(Message::Foreseen(Looked {
            writers: count,
            ..Looked::default()
        }));
    }
}
