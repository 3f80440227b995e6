//! The merge queue's hands in git: a committed writer merged into the integration branch (or
//! held for a human first), parked with its branch kept, cleaned up once merged; the branch put
//! back when something else moved it; and, when a run resumes, what its integration branch
//! holds: a merge a crash left unrecorded, the merges the gate has yet to pass. The core
//! decides which writer is merged when and what its outcome means.

use std::time::Instant;

use anyhow::Context as _;

use super::super::Checkout;
use super::super::core::found::History;
use super::super::core::{Core, Found, Hold, MergeOutcome};
use super::Exec;
use crate::git::{CommitId, Merge, Repo};
use crate::store::{Moved, Parking, RunEvent};

/// Merges writer `i`'s commit into the integration branch at `tip` (moving onto it, `onto`,
/// when it is a resolved merge of that very tip); holds it instead when its change must be
/// seen by a human first.
pub(super) fn merge(
    core: &Core<'_>,
    ex: &mut Exec<'_>,
    i: usize,
    tip: &CommitId,
    onto: bool,
) -> anyhow::Result<MergeOutcome> {
    let (repo, layout) = (ex.out.repo, ex.out.layout);
    let slot = &core.slots[i];
    let commit = slot
        .commit
        .clone()
        .context("merging a task without a commit")?;
    let base = slot
        .start_commit
        .clone()
        .context("merging a task without a start commit")?;
    if let Some(hold) = review(ex, &base, &commit)? {
        return Ok(MergeOutcome::Held(hold));
    }
    let started = Instant::now();
    let message = format!("Merge swarm task {} of run {}", core.id(i), layout.run);
    let outcome = if onto {
        repo.advance(&layout.integration_ref, &base, &commit, &message)?
    } else {
        crate::git::merge(repo, &layout.integration_ref, tip, &commit, &base, &message)?
    };
    Ok(match outcome {
        Merge::Merged { before, after } => MergeOutcome::Merged {
            before,
            after,
            ms: started.elapsed().as_secs_f64() * 1000.0,
        },
        Merge::Conflicted { paths } => MergeOutcome::Conflicted { paths },
        Merge::Refused { why, paths } => MergeOutcome::Held(Hold::Review { why, paths }),
        Merge::Moved { found } => MergeOutcome::Moved(Box::new(put_back(ex, tip, found.as_ref())?)),
    })
}

/// The integration ref is not at `tip`, where swarm left it: someone else moved it. What they
/// put there is kept on a branch of its own and the ref goes back to swarm's tip (or is made
/// again, when it was deleted). What happened, for the core to halt the merges with.
fn put_back(ex: &Exec<'_>, tip: &CommitId, found: Option<&CommitId>) -> anyhow::Result<Moved> {
    let (repo, layout) = (ex.out.repo, ex.out.layout);
    let integration = integration_branch(ex).to_owned();
    let backup = found.map(|f| format!("{integration}@moved-{}", f.short()));
    if let (Some(f), Some(b)) = (found, &backup) {
        repo.set_branch(b, f)?;
        repo.move_ref(
            &layout.integration_ref,
            f,
            tip,
            "swarm: put back where swarm left it",
        )?;
    } else {
        repo.create_branch(&integration, tip)?;
    }
    let what = match &backup {
        Some(b) => format!("what it found there is kept as branch {b}"),
        None => "it had been deleted".to_owned(),
    };
    let reason = format!(
        "the integration branch {integration} was moved by something other than swarm; swarm put it back at {} ({what}) and merges nothing more this run; look at it, then `swarm resume {}` merges the rest",
        tip.short(),
        layout.run
    );
    Ok(Moved {
        integration,
        found: found.map(CommitId::to_string),
        backup,
        tip: tip.to_string(),
        reason,
    })
}

/// Removes a writer's checkouts (its own and its resolver's) and the branches that hold
/// nothing of value any more: merged ones whose tips the integration branch at `tip`
/// contains, or, for a writer with no changes, a branch still at its start. Its own checkout
/// is set aside for the next writer when it holds a merged result.
pub(super) fn clean_up(
    core: &Core<'_>,
    ex: &mut Exec<'_>,
    i: usize,
    merged: bool,
    tip: &CommitId,
) -> anyhow::Result<()> {
    let (repo, layout) = (ex.out.repo, ex.out.layout);
    let id = core.id(i);
    for checkout in [Checkout::Task, Checkout::Resolver] {
        let path = layout.worktree(id, checkout);
        let branch = layout.branch(id, checkout);
        let at = repo.ref_target(&format!("refs/heads/{branch}"))?;
        match checkout {
            Checkout::Task => ex.checkouts.retire(&path, at.as_ref())?,
            Checkout::Resolver => ex.checkouts.remove_later(&path)?,
        }
        let Some(at) = at else {
            continue;
        };
        let worthless = if merged {
            repo.contains(tip, &at)?
        } else {
            core.slots[i].start_commit.as_ref() == Some(&at)
        };
        if worthless {
            repo.delete_branch_at(&branch, &at)?;
        }
    }
    Ok(())
}

/// Parks writer `i` for `hold`: its branch stays (made again when the gate took its merge
/// out), the board says where its work is and why, and a human is told once.
pub(super) fn park(
    core: &Core<'_>,
    ex: &mut Exec<'_>,
    i: usize,
    hold: &Hold,
) -> anyhow::Result<()> {
    let (repo, layout) = (ex.out.repo, ex.out.layout);
    let id = core.id(i).to_owned();
    let mut parking = Parking {
        branch: layout.branch(&id, Checkout::Task),
        commit: core.slots[i]
            .commit
            .as_ref()
            .map(CommitId::to_string)
            .unwrap_or_default(),
        integration: integration_branch(ex).to_owned(),
        paths: Vec::new(),
        resolver: None,
        rungs: Vec::new(),
        reason: None,
        gate_output: Vec::new(),
    };
    let error = match hold {
        Hold::Conflict { paths, climbed } => {
            parking.paths.clone_from(paths);
            parking.resolver = climbed
                .iter()
                .find(|(r, _)| *r == crate::schedule::Rung::Resolve)
                .map(|(_, why)| why.clone());
            parking.rungs = climbed
                .iter()
                .map(|(rung, why)| crate::store::RungTried {
                    rung: rung.as_str().to_owned(),
                    why: why.clone(),
                })
                .collect();
            format!("merge conflict in {}", paths.join(", "))
        }
        Hold::Review { why, paths } => {
            parking.paths.clone_from(paths);
            parking.reason = Some(why.clone());
            why.clone()
        }
        Hold::Gate { why, output } => {
            parking.reason = Some(why.clone());
            parking.gate_output.clone_from(output);
            why.clone()
        }
    };
    // A writer parked after its merge was taken out (by the gate) lost its branch when it was
    // merged: it is made again for a look.
    if let Some(commit) = &core.slots[i].commit
        && repo
            .ref_target(&format!("refs/heads/{}", parking.branch))?
            .is_none()
    {
        repo.set_branch(&parking.branch, commit)?;
    }
    let info = serde_json::to_value(&parking)?;
    ex.out.record.parked(&id, &error, parking)?;
    ex.escalate(Some(&id), info)
}

/// Moves the integration branch back from `from` to `to` (the gate took a merge out), green.
/// Found elsewhere, it is put at `to` all the same, what was there kept on a branch: the move,
/// for the core to halt the merges with.
pub(super) fn rewind(
    ex: &mut Exec<'_>,
    from: &CommitId,
    to: &CommitId,
    event: RunEvent,
) -> anyhow::Result<Option<Moved>> {
    let layout = ex.out.layout;
    let msg = "swarm: the gate took a merge out";
    let moved = match ex.out.repo.move_ref(&layout.integration_ref, from, to, msg) {
        Ok(()) => None,
        Err(e) => {
            let found = ex.out.repo.ref_target(&layout.integration_ref)?;
            if found.as_ref() == Some(from) {
                return Err(e);
            }
            // Someone else moved it while the gate ran: what they put there is kept, and the
            // branch goes where the gate would have taken it.
            Some(put_back(ex, to, found.as_ref())?)
        }
    };
    ex.out.record.tip_rewound(to, event)?;
    Ok(moved)
}

/// What a run starting or resumed finds on its integration branch, swarm's tip being `tip`:
/// the ref should be there. A kill between moving it and recording the merge leaves it one
/// merge ahead, which the core takes as swarm's own, as it does a tip the gate was moving it
/// back to (`Core::takes`). Anything else moved it: swarm puts it back. Then what the core
/// reads of the branch (`Core::read_branch`).
pub(super) fn find(core: &Core<'_>, ex: &Exec<'_>) -> anyhow::Result<Found> {
    let (repo, layout) = (ex.out.repo, ex.out.layout);
    let mut found = Found::default();
    let mut tip = core.tip().clone();
    match repo.ref_target(&layout.integration_ref)? {
        None => {
            let landed = match repo.resolve("HEAD") {
                Ok(head) => repo.contains(&head, &tip)?,
                Err(_) => false,
            };
            if tip == layout.base || landed {
                // The run was killed before its branch was made, or after its landing
                // deleted it.
                repo.create_branch(integration_branch(ex), &tip)?;
            } else {
                found.moved = Some(put_back(ex, &tip, None)?);
            }
        }
        Some(f) if f == tip => {}
        Some(f) => {
            if core.takes(repo, &f)? {
                found.tip = Some(f.clone());
                tip = f;
            } else {
                found.moved = Some(put_back(ex, &tip, Some(&f))?);
            }
        }
    }
    core.read_branch(repo, &tip, &mut found)?;
    Ok(found)
}

impl History for Repo {
    fn parents(&self, commit: &CommitId) -> anyhow::Result<Vec<CommitId>> {
        Repo::parents(self, commit)
    }

    fn contains(&self, tip: &CommitId, commit: &CommitId) -> anyhow::Result<bool> {
        Repo::contains(self, tip, commit)
    }
}

/// The integration branch's short name, `swarm/<run>`.
fn integration_branch<'a>(ex: &Exec<'a>) -> &'a str {
    ex.out
        .layout
        .integration_ref
        .trim_start_matches("refs/heads/")
}

/// Whether a writer's change must be seen by a human before it is merged: it changes a file
/// swarm reads commands from, or holds the value of a secret swarm hides.
fn review(ex: &Exec<'_>, base: &CommitId, commit: &CommitId) -> anyhow::Result<Option<Hold>> {
    let secrets = crate::secret::named();
    let needles: Vec<&[u8]> = secrets.iter().map(|(_, v)| v.as_bytes()).collect();
    let scan = crate::git::scan_change(
        ex.out.repo,
        base,
        commit,
        &ex.out.settings.guarded,
        &needles,
    )?;
    if !scan.guarded.is_empty() {
        return Ok(Some(Hold::Review {
            why: format!(
                "it changes {}, which names commands swarm runs; swarm merges no such change without you",
                scan.guarded.join(", ")
            ),
            paths: scan.guarded,
        }));
    }
    if scan.found.is_empty() {
        return Ok(None);
    }
    let mut names: Vec<&str> = scan
        .found
        .iter()
        .map(|(_, n)| secrets[*n].0.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    let paths: Vec<String> = scan.found.into_iter().map(|(p, _)| p).collect();
    Ok(Some(Hold::Review {
        why: format!(
            "{} holds the value of {}, a secret swarm hides; swarm merges no such change without you",
            paths.join(", "),
            names.join(", ")
        ),
        paths,
    }))
}
