//! The user's checkout, watched while attempts run: a look at it (`Repo::fingerprint`: the
//! status of its files, its HEAD, refs, config and hooks) when an attempt starts and another
//! after it ends; any difference stops the run, since swarm cannot tell whether the user or an
//! agent reaching out of its directory made it. Looks are shared: the attempts that start in
//! one pass of the loop take the same look, and one look after the attempts whose reports a
//! pass takes in serves them all, and the attempts that start after them. A look that fails
//! (too few file descriptors, say) is never an error of the loop's: each attempt it was for
//! ends as it would have had it failed in the attempt.

use std::collections::HashMap;
use std::rc::Rc;

use super::super::job::Verdict;
use crate::agent::{Fault, FaultKind};
use crate::git::{Fingerprint, Repo};

/// A look at the checkout, or why it could not be taken.
type Look = Result<Rc<Fingerprint>, Rc<anyhow::Error>>;

#[derive(Default)]
pub(super) struct Watch {
    /// The newest look, while it is new enough to stand for "now": taken in this pass.
    fresh: Option<Look>,
    /// The look each running attempt started after, by its key (a task, or the gate's).
    before: HashMap<usize, Look>,
}

impl Watch {
    /// A new pass begins: the last look is older than what happens from now on.
    pub(super) fn next_pass(&mut self) {
        self.fresh = None;
    }

    /// The attempt `key` starts now: the look it is held to is this pass's, taken now if
    /// the pass has none yet.
    pub(super) fn started(&mut self, repo: &Repo, key: usize) {
        let look = self.look(repo);
        self.before.insert(key, look);
    }

    /// Attempts have ended: a look after them all (one for the pass, however many ended).
    pub(super) fn ended(&mut self, repo: &Repo) {
        self.fresh = Some(repo.fingerprint().map(Rc::new).map_err(Rc::new));
    }

    /// How the attempt `key` ends instead of as it reported, after `ended`: a change to the
    /// user's checkout while it ran is a fault of the environment; a look that failed ends it
    /// as that failure would have. `None` when nothing changed or it was not watched.
    pub(super) fn verdict(&mut self, key: usize, checkout: &std::path::Path) -> Option<Verdict> {
        let before = self.before.remove(&key)?;
        let (before, after) = match (before, self.fresh.clone()?) {
            (Ok(before), Ok(after)) => (before, after),
            (Err(e), _) | (_, Err(e)) => {
                return Some(match Fault::of_error(&e) {
                    Some(fault) => Verdict::Fault(fault),
                    None => Verdict::Failed(format!(
                        "could not look at your checkout {}: {e:#}",
                        checkout.display()
                    )),
                });
            }
        };
        let touched = before.changed_paths(&after);
        (!touched.is_empty()).then(|| {
            Verdict::Fault(Fault {
                kind: FaultKind::Environment,
                why: format!(
                    "your checkout {} changed while an attempt ran ({}); swarm cannot tell whether you or an agent changed it, so nothing of that attempt is merged (an agent that did will do it again: fix its task before resuming)",
                    checkout.display(),
                    touched.join(", ")
                ),
            })
        })
    }

    fn look(&mut self, repo: &Repo) -> Look {
        self.fresh
            .get_or_insert_with(|| repo.fingerprint().map(Rc::new).map_err(Rc::new))
            .clone()
    }
}
