//! `[pools.NAME]` tables: agents that take a task's attempts in turn (`--agent pool:NAME`).
//! Checks what one file can tell (a pool's keys, an empty pool, a pool in a pool, a member
//! named twice); whether each member names an agent is known only once every file is read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::check::Shape;

/// How a pool is named wherever an agent is: `pool:NAME`.
pub const POOL_PREFIX: &str = "pool:";

/// The pool an agent name routes to, when it is `pool:NAME`.
pub fn pool_name(agent: &str) -> Option<&str> {
    agent.strip_prefix(POOL_PREFIX)
}

/// The keys of a `[pools.NAME]` table, with what each must be.
pub(super) const POOL_KEYS: [(&str, Shape); 1] = [("members", Shape::Strings)];

/// A pool as written: `[pools.NAME] members = [...]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct PoolSpec {
    #[serde(default)]
    members: Vec<String>,
}

/// A pool of the configuration: its members (agent names, in order of preference) and where
/// it is written, for errors about them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolDef {
    pub members: Vec<String>,
    pub file: PathBuf,
    /// The line of its `members`.
    pub line: Option<usize>,
}

/// The file's pools that hold, each checked; a problem is `(line, message)`, each added to
/// `problems`. `line_of` gives the line of the value at a path of keys.
pub(super) fn check(
    pools: BTreeMap<String, PoolSpec>,
    file: &Path,
    line_of: impl Fn(&[&str]) -> Option<usize>,
    problems: &mut Vec<(Option<usize>, String)>,
) -> BTreeMap<String, PoolDef> {
    let mut out = BTreeMap::new();
    for (name, spec) in pools {
        let line = line_of(&["pools", &name, "members"]).or_else(|| line_of(&["pools", &name]));
        let before = problems.len();
        if spec.members.is_empty() {
            problems.push((
                line,
                format!("pool `{name}` has no members: list agent profiles in `members`"),
            ));
        }
        for (n, member) in spec.members.iter().enumerate() {
            if member.starts_with(POOL_PREFIX) {
                problems.push((
                    line,
                    format!(
                        "pool `{name}`: member `{member}` is a pool; a pool's members are agents"
                    ),
                ));
            } else if spec.members[..n].contains(member) {
                problems.push((
                    line,
                    format!("pool `{name}`: member `{member}` is named twice"),
                ));
            }
        }
        if problems.len() == before {
            out.insert(
                name,
                PoolDef {
                    members: spec.members,
                    file: file.to_owned(),
                    line,
                },
            );
        }
    }
    out
}
