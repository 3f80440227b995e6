//! The agents of the configuration as a run uses them: the profiles, each one's
//! `max-concurrent`, and the pools (`pool:NAME`) that route attempts among profiles; checked
//! before anything runs, each error naming its file and line or its flag.

use std::collections::BTreeMap;

use crate::agent::Agent;
use crate::agent::cli::Profile;
use crate::config::PoolDef;

/// The configuration's agent profiles with their caps, and its pools.
#[derive(Debug, Clone, Default)]
pub(super) struct Agents {
    /// Profiles by name (those of the configuration; the built-in ones are added when a run
    /// resolves names).
    pub(super) profiles: BTreeMap<String, Profile>,
    /// `max-concurrent` by profile name.
    pub(super) caps: BTreeMap<String, usize>,
    pub(super) pools: BTreeMap<String, PoolDef>,
}

/// The pools a run uses, resolved: each pool's members in order, and each member's agent.
#[derive(Debug, Default)]
pub(super) struct Routed {
    pub(super) pools: BTreeMap<String, Vec<String>>,
    pub(super) members: BTreeMap<String, Agent>,
}

impl Agents {
    /// Checks that pool `name` exists.
    pub(super) fn known_pool(&self, name: &str) -> Result<(), String> {
        if self.pools.contains_key(name) {
            return Ok(());
        }
        let known: Vec<&str> = self.pools.keys().map(String::as_str).collect();
        Err(if known.is_empty() {
            format!("unknown pool {name:?}: no [pools.NAME] table is configured")
        } else {
            format!("unknown pool {name:?} (known: {})", known.join(", "))
        })
    }

    /// The pools named by `used` (pool names), each with its members resolved by `resolve`
    /// (an agent name to its agent, as `--agent` takes it); an error names the pool's file
    /// and line.
    pub(super) fn route<'n>(
        &self,
        used: impl IntoIterator<Item = &'n str>,
        resolve: impl Fn(&str) -> Result<Option<Agent>, String>,
    ) -> Result<Routed, String> {
        let mut routed = Routed::default();
        for name in used {
            let Some(def) = self.pools.get(name) else {
                continue;
            };
            let at = match def.line {
                Some(line) => format!("{}:{line}", def.file.display()),
                None => def.file.display().to_string(),
            };
            for member in &def.members {
                let agent = match resolve(member) {
                    Ok(Some(agent)) if member != "auto" => agent,
                    Ok(_) => {
                        return Err(format!(
                            "{at}: pool `{name}`: member `{member}` names no agent: list profiles (or claude, codex, openai, exec:CMD, acp:CMD)"
                        ));
                    }
                    Err(e) => return Err(format!("{at}: pool `{name}`: member `{member}`: {e}")),
                };
                routed.members.insert(member.clone(), agent);
            }
            routed.pools.insert(name.to_owned(), def.members.clone());
        }
        Ok(routed)
    }
}
