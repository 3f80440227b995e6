//! `[pools.NAME]` tables: agents that take a task's attempts in turn (`--agent pool:NAME`).
//! Checks what one file can tell (a pool's keys, an empty pool, a pool in a pool, a member
//! named twice); whether each member names an agent is known only once every file is read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How a pool is named wherever an agent is: `pool:NAME`.
pub const POOL_PREFIX: &str = "pool:";

/// The pool an agent name routes to, when it is `pool:NAME`.
pub fn pool_name(agent: &str) -> Option<&str> {
    agent.strip_prefix(POOL_PREFIX)
}

/// The keys of a `[pools.NAME]` table.
pub(super) const POOL_KEYS: [&str; 1] = ["members"];

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

/// The file's pools, each checked; an error is `(line, message)`. `line_of` gives the line of
/// the value at a path of keys.
pub(super) fn check(
    pools: BTreeMap<String, PoolSpec>,
    file: &Path,
    line_of: impl Fn(&[&str]) -> Option<usize>,
) -> Result<BTreeMap<String, PoolDef>, (Option<usize>, String)> {
    let mut out = BTreeMap::new();
    for (name, spec) in pools {
        let line = line_of(&["pools", &name, "members"]).or_else(|| line_of(&["pools", &name]));
        if spec.members.is_empty() {
            return Err((
                line,
                format!("pool `{name}` has no members: list agent profiles in `members`"),
            ));
        }
        for (n, member) in spec.members.iter().enumerate() {
            if member.starts_with(POOL_PREFIX) {
                return Err((
                    line,
                    format!(
                        "pool `{name}`: member `{member}` is a pool; a pool's members are agents"
                    ),
                ));
            }
            if spec.members[..n].contains(member) {
                return Err((
                    line,
                    format!("pool `{name}`: member `{member}` is named twice"),
                ));
            }
        }
        out.insert(
            name,
            PoolDef {
                members: spec.members,
                file: file.to_owned(),
                line,
            },
        );
    }
    Ok(out)
}
