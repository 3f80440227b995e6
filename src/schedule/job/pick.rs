//! A task's pick among its candidates, on a pool thread: the winner by the task's `select`
//! rule (the first green, the smallest green change, or the model's judgement), the task's
//! branch put at the winner's commit, and the pick written to the task's transcript. What the
//! candidates were and did was gathered by the executor; this only decides and says.

use std::fmt::Write as _;
use std::path::Path;

use super::{Spent, Verdict};
use crate::git::CommitId;
use crate::plan::candidates::Select;
use crate::store::{PickedCandidate, RunEvent};

/// What a pick is given.
pub(in crate::schedule) struct Pick {
    pub(in crate::schedule) task: String,
    /// The task's prompt or command, for the judge.
    pub(in crate::schedule) text: String,
    pub(in crate::schedule) select: Select,
    /// The task's branch, put at the winner's commit.
    pub(in crate::schedule) branch: String,
    /// In the order they finished.
    pub(in crate::schedule) candidates: Vec<Candidate>,
    pub(in crate::schedule) llm: Option<crate::llm::Client>,
}

/// One candidate, as it ended.
pub(in crate::schedule) struct Candidate {
    pub(in crate::schedule) id: String,
    /// Set for a candidate whose check passed with a change.
    pub(in crate::schedule) green: Option<Green>,
    /// Why it is not green, for one that is not.
    pub(in crate::schedule) why: String,
}

/// A green candidate's change.
pub(in crate::schedule) struct Green {
    pub(in crate::schedule) start: CommitId,
    pub(in crate::schedule) commit: CommitId,
    pub(in crate::schedule) result: String,
    pub(in crate::schedule) added: u64,
    pub(in crate::schedule) removed: u64,
    /// Its change as a diff, for the judge (empty unless the rule is `judge`).
    pub(in crate::schedule) patch: String,
}

impl Green {
    fn lines(&self) -> u64 {
        self.added + self.removed
    }
}

/// What a pick decided.
#[derive(Debug)]
pub(in crate::schedule) struct Picked {
    pub(in crate::schedule) result: String,
    pub(in crate::schedule) commit: CommitId,
    pub(in crate::schedule) start: CommitId,
    pub(in crate::schedule) event: RunEvent,
}

/// Picks, puts the branch at the winner and writes the transcript.
pub(super) fn run(
    pick: &Pick,
    repo: &crate::git::Repo,
    transcript: &Path,
    stop: &dyn Fn() -> bool,
    spent: &mut Spent,
) -> anyhow::Result<Verdict> {
    let mut said = format!(
        "swarm task {} picks one of {} candidates ({})\n",
        pick.task,
        pick.candidates.len(),
        pick.select.as_str()
    );
    for c in &pick.candidates {
        let _ = match &c.green {
            Some(g) => writeln!(said, "  {}: green, +{} -{}", c.id, g.added, g.removed),
            None => writeln!(said, "  {}: {}", c.id, c.why),
        };
    }
    let chosen = match pick.select {
        Select::Judge => judged(pick, stop, spent, &mut said),
        rule => Ok(choose(rule, &pick.candidates).map(|w| (w, None))),
    };
    let chosen = match chosen {
        Ok(chosen) => chosen,
        Err(e) => {
            let _ = writeln!(said, "{e:#}");
            crate::disk::write(transcript, said)?;
            return Err(e);
        }
    };
    let Some((winner, reasons)) = chosen else {
        let why = format!(
            "no candidate was green: {}",
            pick.candidates
                .iter()
                .map(|c| format!("{} {}", c.id, c.why))
                .collect::<Vec<_>>()
                .join("; ")
        );
        let _ = writeln!(said, "{why}");
        crate::disk::write(transcript, said)?;
        return Ok(Verdict::Failed(why));
    };
    let won = &pick.candidates[winner];
    let Some(green) = won.green.as_ref() else {
        anyhow::bail!("the pick named {}, which is not green", won.id);
    };
    repo.set_branch(&pick.branch, &green.commit)?;
    let _ = writeln!(said, "picked {}", won.id);
    if let Some(r) = &reasons {
        let _ = writeln!(said, "reasons: {r}");
    }
    crate::disk::write(transcript, said)?;
    let candidates = pick
        .candidates
        .iter()
        .enumerate()
        .map(|(k, c)| PickedCandidate {
            id: c.id.clone(),
            green: c.green.is_some(),
            added: c.green.as_ref().map(|g| g.added),
            removed: c.green.as_ref().map(|g| g.removed),
            why: lost(pick.select, k, winner, &pick.candidates),
        })
        .collect();
    Ok(Verdict::Picked(Box::new(Picked {
        result: green.result.clone(),
        commit: green.commit.clone(),
        start: green.start.clone(),
        event: RunEvent::Picked {
            select: pick.select.as_str().to_owned(),
            winner: won.id.clone(),
            reasons,
            candidates,
        },
    })))
}

/// The winner by a rule that needs no model: the first green, or the green with the fewest
/// lines changed (the first of them on a tie). `None` when none is green.
pub(super) fn choose(rule: Select, candidates: &[Candidate]) -> Option<usize> {
    let greens = candidates
        .iter()
        .enumerate()
        .filter_map(|(k, c)| Some((k, c.green.as_ref()?)));
    match rule {
        Select::SmallestGreen => greens.min_by_key(|(k, g)| (g.lines(), *k)).map(|(k, _)| k),
        Select::FirstGreen | Select::Judge => greens.map(|(k, _)| k).next(),
    }
}

/// The judge's winner among the greens, and its reasons; with one green there is nothing to
/// ask.
fn judged(
    pick: &Pick,
    stop: &dyn Fn() -> bool,
    spent: &mut Spent,
    said: &mut String,
) -> anyhow::Result<Option<(usize, Option<String>)>> {
    let greens: Vec<(usize, &Green)> = pick
        .candidates
        .iter()
        .enumerate()
        .filter_map(|(k, c)| Some((k, c.green.as_ref()?)))
        .collect();
    match greens.as_slice() {
        [] => return Ok(None),
        [(k, _)] => return Ok(Some((*k, Some("the only green candidate".to_owned())))),
        _ => {}
    }
    let client = pick
        .llm
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("`select: judge` needs a model, and none is configured"))?;
    let shown: Vec<crate::planner::judge::Shown<'_>> = greens
        .iter()
        .map(|(k, g)| crate::planner::judge::Shown {
            id: &pick.candidates[*k].id,
            patch: &g.patch,
        })
        .collect();
    let verdict = crate::planner::judge::judge(client, &pick.text, &shown, stop, &mut |_| {})?;
    let u = &verdict.usage;
    spent.used.add(super::Totals {
        tokens: u.total_tokens,
        prompt_tokens: u.prompt_tokens,
        cached_tokens: u.cached_tokens,
        cost: None,
    });
    let _ = writeln!(
        said,
        "the judge ({} tokens) said {}: {}",
        u.total_tokens, verdict.winner, verdict.reasons
    );
    let k = pick
        .candidates
        .iter()
        .position(|c| c.id == verdict.winner)
        .ok_or_else(|| anyhow::anyhow!("the judge named no candidate"))?;
    Ok(Some((k, Some(verdict.reasons))))
}

/// Why candidate `k` lost to `winner` (or `picked`).
fn lost(rule: Select, k: usize, winner: usize, candidates: &[Candidate]) -> String {
    let (c, w) = (&candidates[k], &candidates[winner]);
    if k == winner {
        return "picked".to_owned();
    }
    let (Some(g), Some(wg)) = (&c.green, &w.green) else {
        return c.why.clone();
    };
    match rule {
        Select::FirstGreen => format!("green after {}", w.id),
        Select::SmallestGreen => format!(
            "a larger change ({} lines) than {} ({} lines)",
            g.lines(),
            w.id,
            wg.lines()
        ),
        Select::Judge => format!("the judge preferred {}", w.id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(id: &str, lines: Option<u64>) -> Candidate {
        Candidate {
            id: id.to_owned(),
            green: lines.map(|n| Green {
                start: CommitId::new("a"),
                commit: CommitId::new("b"),
                result: String::new(),
                added: n,
                removed: 0,
                patch: String::new(),
            }),
            why: if lines.is_some() {
                String::new()
            } else {
                "failed its check".to_owned()
            },
        }
    }

    #[test]
    fn each_rule_picks_its_winner_and_says_why_the_others_lost() {
        let c = [
            candidate("t.c1", None),
            candidate("t.c2", Some(40)),
            candidate("t.c3", Some(12)),
        ];
        assert_eq!(choose(Select::FirstGreen, &c), Some(1));
        assert_eq!(choose(Select::SmallestGreen, &c), Some(2));
        assert_eq!(lost(Select::SmallestGreen, 0, 2, &c), "failed its check");
        assert_eq!(
            lost(Select::SmallestGreen, 1, 2, &c),
            "a larger change (40 lines) than t.c3 (12 lines)"
        );
        assert_eq!(lost(Select::FirstGreen, 2, 1, &c), "green after t.c2");
        assert_eq!(lost(Select::SmallestGreen, 2, 2, &c), "picked");
    }

    #[test]
    fn a_tie_goes_to_the_first_and_no_green_picks_nothing() {
        let c = [candidate("t.c1", Some(5)), candidate("t.c2", Some(5))];
        assert_eq!(choose(Select::SmallestGreen, &c), Some(0));
        let none = [candidate("t.c1", None), candidate("t.c2", None)];
        assert_eq!(choose(Select::SmallestGreen, &none), None);
        assert_eq!(choose(Select::FirstGreen, &none), None);
    }
}
