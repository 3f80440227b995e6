//! The gate's bookkeeping, on the owner thread, and pure: which merges since the last green tip
//! wait for the gate, which tip it runs on next, and the bisection of a red batch down to the
//! first merge whose tip fails. No git, no board, no processes: the merge queue carries out
//! what it decides (see the manual's "The gate" (docs/src/gate.md)).

use crate::git::CommitId;

/// One merge the gate has yet to pass: the writer merged and the integration tip it made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::schedule) struct Merged {
    pub(in crate::schedule) task: usize,
    pub(in crate::schedule) tip: CommitId,
}

/// What a gate run tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::schedule) enum Probe {
    /// The newest tip, for the batch of every merge since the last green tip (`len` of them).
    Batch { len: usize },
    /// A step of the bisection: the tip of the batch's merge `at` (1-based).
    Step { at: usize },
    /// The base itself, never tested, when the batch's first merge looks guilty.
    Base,
}

impl Probe {
    pub(in crate::schedule) fn as_str(&self) -> &'static str {
        match self {
            Probe::Batch { .. } => "batch",
            Probe::Step { .. } => "bisect",
            Probe::Base => "base",
        }
    }
}

/// A binary search over a red batch of `n` merges: the tip before the batch is green (`lo` =
/// 0), the batch's last tip red (`hi` = n); each probe halves the span until the first red
/// merge is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::schedule) struct Bisect {
    lo: usize,
    hi: usize,
}

impl Bisect {
    /// A batch of `n` (at least 1) merges whose last tip failed.
    pub(in crate::schedule) fn new(n: usize) -> Self {
        Self { lo: 0, hi: n }
    }

    /// The merge (1-based) whose tip to test next, while the culprit is not known.
    pub(in crate::schedule) fn probe(&self) -> Option<usize> {
        (self.hi - self.lo > 1).then(|| self.lo + (self.hi - self.lo) / 2)
    }

    /// The gate passed (`green`) or failed on the tip of merge `at`.
    pub(in crate::schedule) fn verdict(&mut self, at: usize, green: bool) {
        if green {
            self.lo = self.lo.max(at);
        } else {
            self.hi = self.hi.min(at);
        }
    }

    /// The first merge (1-based) whose tip fails, once known.
    pub(in crate::schedule) fn culprit(&self) -> Option<usize> {
        (self.hi - self.lo == 1).then_some(self.hi)
    }
}

/// What the gate knows of the integration branch.
pub(in crate::schedule) struct GateState {
    pub(in crate::schedule) command: String,
    /// The newest tip the gate passed on; the base until then.
    pub(in crate::schedule) green: CommitId,
    /// Whether `green` was tested (the base is not, until a bisection needs it).
    pub(in crate::schedule) tested: bool,
    /// The merges since `green`, oldest first: the integration tip is the last one's.
    pub(in crate::schedule) pending: Vec<Merged>,
    /// The run going on, if one is.
    pub(in crate::schedule) running: Option<(Probe, CommitId)>,
    /// A red batch being bisected: its first `len` merges of `pending`.
    pub(in crate::schedule) bisect: Option<(Bisect, usize)>,
    /// Gate runs started by this process, for their transcripts' names.
    pub(in crate::schedule) runs: u32,
    /// The last lines of the newest red run: the culprit is parked with them.
    pub(in crate::schedule) red_tail: Vec<String>,
}

/// What the merge queue is to do after a gate run's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::schedule) enum Next {
    /// Nothing more to do now.
    Wait,
    /// These merges (the first `n` of `pending`) passed: their writers are done.
    Passed(usize),
    /// Merge `at` (1-based) of `pending` is the culprit: the tip goes back to before it, it is
    /// parked and the merges after it are merged again.
    Culprit(usize),
    /// The gate fails on the base itself.
    BaseFails,
}

impl GateState {
    pub(in crate::schedule) fn new(command: String, green: CommitId, tested: bool) -> Self {
        Self {
            command,
            green,
            tested,
            pending: Vec::new(),
            running: None,
            bisect: None,
            runs: 0,
            red_tail: Vec::new(),
        }
    }

    /// Whether the run must wait for the gate before it ends.
    pub(in crate::schedule) fn busy(&self) -> bool {
        self.running.is_some() || !self.pending.is_empty()
    }

    /// The tip of merge `at` (1-based) of `pending`; 0 is the green tip.
    fn tip_of(&self, at: usize) -> &CommitId {
        match at {
            0 => &self.green,
            n => &self.pending[n - 1].tip,
        }
    }

    /// The next run to start, when none runs: a bisection's probe, the base, or the newest tip
    /// when it is past the green one.
    pub(in crate::schedule) fn next_run(&self) -> Option<(Probe, CommitId)> {
        if self.running.is_some() {
            return None;
        }
        if let Some((bisect, _)) = &self.bisect {
            return match (bisect.probe(), bisect.culprit()) {
                (Some(at), _) => Some((Probe::Step { at }, self.tip_of(at).clone())),
                (None, Some(1)) if !self.tested => Some((Probe::Base, self.green.clone())),
                _ => None,
            };
        }
        let len = self.pending.len();
        (len > 0).then(|| (Probe::Batch { len }, self.tip_of(len).clone()))
    }

    /// Takes the verdict of the run that was going on.
    pub(in crate::schedule) fn finished(&mut self, green: bool) -> Next {
        let Some((probe, _)) = self.running.take() else {
            return Next::Wait;
        };
        match probe {
            Probe::Batch { len } if green => Next::Passed(len),
            Probe::Batch { len } => {
                self.bisect = Some((Bisect::new(len), len));
                self.settled()
            }
            Probe::Step { at } => {
                if let Some((b, _)) = &mut self.bisect {
                    b.verdict(at, green);
                }
                self.settled()
            }
            Probe::Base if green => {
                self.tested = true;
                self.settled()
            }
            Probe::Base => Next::BaseFails,
        }
    }

    /// After a bisection's verdict: the culprit if it is known (and the base, if it matters,
    /// was tested), else wait for the next probe.
    fn settled(&mut self) -> Next {
        match self.bisect.as_ref().and_then(|(b, _)| b.culprit()) {
            Some(1) if !self.tested => Next::Wait,
            Some(at) => {
                self.bisect = None;
                Next::Culprit(at)
            }
            None => Next::Wait,
        }
    }

    /// The first `n` pending merges passed: the green tip moves to the last one's.
    pub(in crate::schedule) fn pass(&mut self, n: usize) -> Vec<Merged> {
        let passed: Vec<Merged> = self.pending.drain(..n).collect();
        if let Some(last) = passed.last() {
            self.green = last.tip.clone();
        }
        self.tested = true;
        passed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probes a bisection of `n` merges makes when the first failing merge is `culprit`
    /// (every tip from it on fails), and the culprit it names.
    fn bisect(n: usize, culprit: usize) -> (Vec<usize>, usize) {
        let mut b = Bisect::new(n);
        let mut probes = Vec::new();
        while let Some(at) = b.probe() {
            probes.push(at);
            b.verdict(at, at < culprit);
        }
        (probes, b.culprit().unwrap())
    }

    #[test]
    fn bisection_finds_the_first_failing_merge_in_few_probes() {
        let cases: &[(usize, usize, &[usize])] = &[
            (1, 1, &[]),
            (2, 1, &[1]),
            (2, 2, &[1]),
            (5, 1, &[2, 1]),
            (5, 3, &[2, 3]),
            (5, 4, &[2, 3, 4]),
            (5, 5, &[2, 3, 4]),
            (8, 6, &[4, 6, 5]),
        ];
        for &(n, culprit, probes) in cases {
            let (made, found) = bisect(n, culprit);
            assert_eq!((made.as_slice(), found), (probes, culprit), "{n} merges");
        }
        for n in 1..40 {
            for culprit in 1..=n {
                let (made, found) = bisect(n, culprit);
                assert_eq!(found, culprit);
                assert!(made.len() <= n.next_power_of_two().trailing_zeros() as usize);
            }
        }
    }

    fn state(merges: usize, tested: bool) -> GateState {
        let mut g = GateState::new("gate".into(), CommitId::new("c0"), tested);
        for i in 1..=merges {
            g.pending.push(Merged {
                task: i - 1,
                tip: CommitId::new(&format!("c{i}")),
            });
        }
        g
    }

    /// Runs the gate until it decides, `red_from` being the first failing tip (0: the base).
    fn drive(g: &mut GateState, red_from: usize) -> (Vec<(&'static str, String)>, Next) {
        let mut runs = Vec::new();
        loop {
            let Some((probe, tip)) = g.next_run() else {
                return (runs, Next::Wait);
            };
            let at: usize = tip.as_str()[1..].parse().unwrap();
            runs.push((probe.as_str(), tip.to_string()));
            g.running = Some((probe, tip));
            match g.finished(at < red_from) {
                Next::Wait => {}
                next => return (runs, next),
            }
        }
    }

    #[test]
    fn a_green_batch_passes_every_merge_in_it() {
        let mut g = state(3, true);
        let (runs, next) = drive(&mut g, 99);
        assert_eq!(runs, [("batch", "c3".to_owned())]);
        assert_eq!(next, Next::Passed(3));
        assert_eq!(g.pass(3).len(), 3);
        assert_eq!(g.green.as_str(), "c3");
        assert!(!g.busy());
    }

    #[test]
    fn a_red_batch_is_bisected_to_its_culprit() {
        let mut g = state(5, true);
        let (runs, next) = drive(&mut g, 3);
        let tips: Vec<&str> = runs.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(tips, ["c5", "c2", "c3"]);
        assert_eq!(next, Next::Culprit(3));
    }

    #[test]
    fn an_untested_base_is_tested_before_the_first_merge_is_blamed() {
        let mut g = state(2, false);
        let (runs, next) = drive(&mut g, 1);
        assert_eq!(
            runs,
            [
                ("batch", "c2".to_owned()),
                ("bisect", "c1".to_owned()),
                ("base", "c0".to_owned())
            ]
        );
        assert_eq!(next, Next::Culprit(1));
        let mut g = state(2, false);
        assert_eq!(drive(&mut g, 0).1, Next::BaseFails);
        // A tested green tip is not tested again.
        let mut g = state(1, true);
        assert_eq!(drive(&mut g, 1).1, Next::Culprit(1));
    }
}
