//! The report's "Agents" section: what each member of the run's pools did (attempts, usage
//! limits met, tokens, cost), for runs whose attempts went through a pool.

use std::fmt::Write as _;

use super::{Facts, cost, escape};

/// One pool member's attempts in the run, as the report lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentUsage {
    /// The member's agent name (a profile).
    pub agent: String,
    pub attempts: u32,
    /// Those of its attempts that ended at its provider's usage limit.
    pub limited: u32,
    pub tokens: u64,
    /// The cost of its attempts whose agent said; `None` when none did.
    pub cost: Option<f64>,
}

/// `### Agents` with a row per member, or nothing when no attempt went through a pool.
pub(super) fn section(f: &Facts<'_>) -> String {
    if f.agents.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\n### Agents\n\n| agent | attempts | usage limits | tokens | cost |\n|---|---|---|---|---|\n",
    );
    for a in f.agents {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            escape::code(&a.agent),
            a.attempts,
            a.limited,
            a.tokens,
            cost(a.cost)
        );
    }
    out
}
