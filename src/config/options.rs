//! The options of a run, in swarm's own terms: what the configuration layers produce, what the
//! commands and the run's settings read, and (with a version, see `record`) what the board keeps.
//! The command line's flags are converted into them where they are parsed.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::key::Key;

/// A run's options; `None` (empty, false) is unset: a lower layer or the default applies.
///
/// The serde names are the stored format (see `record`), so each is written out: renaming a
/// field, a flag or a config key must not change what the board holds. They are also the keys'
/// names in snake case, which is how `Key::value` finds a value to show.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Options {
    #[serde(rename = "jobs")]
    pub(crate) jobs: Option<u32>,
    #[serde(rename = "max_writers")]
    pub(crate) max_writers: Option<u32>,
    #[serde(rename = "agent")]
    pub(crate) agent: Option<String>,
    #[serde(rename = "model")]
    pub(crate) model: Option<String>,
    #[serde(rename = "api_base")]
    pub(crate) api_base: Option<String>,
    #[serde(rename = "request_timeout")]
    pub(crate) request_timeout: Option<String>,
    #[serde(rename = "endpoint_wait")]
    pub(crate) endpoint_wait: Option<String>,
    #[serde(rename = "max_turns")]
    pub(crate) max_turns: Option<u32>,
    #[serde(rename = "max_task_tokens")]
    pub(crate) max_task_tokens: Option<u64>,
    #[serde(rename = "budget_tokens")]
    pub(crate) budget_tokens: Option<u64>,
    #[serde(rename = "allow_program")]
    pub(crate) allow_program: Vec<String>,
    #[serde(rename = "task_timeout")]
    pub(crate) task_timeout: Option<String>,
    #[serde(rename = "stall_timeout")]
    pub(crate) stall_timeout: Option<String>,
    #[serde(rename = "kill_grace")]
    pub(crate) kill_grace: Option<String>,
    #[serde(rename = "retries")]
    pub(crate) retries: Option<u32>,
    #[serde(rename = "check")]
    pub(crate) check: Option<String>,
    #[serde(rename = "final_out")]
    pub(crate) final_out: Option<PathBuf>,
    #[serde(rename = "final_out_dir")]
    pub(crate) final_out_dir: Option<PathBuf>,
    #[serde(rename = "base")]
    pub(crate) base: Option<String>,
    #[serde(rename = "land")]
    pub(crate) land: Option<Land>,
    #[serde(rename = "worktree_dir")]
    pub(crate) worktree_dir: Option<PathBuf>,
    #[serde(rename = "resolve_conflicts")]
    pub(crate) resolve_conflicts: bool,
    #[serde(rename = "fresh_retries")]
    pub(crate) fresh_retries: bool,
    #[serde(rename = "on_escalate")]
    pub(crate) on_escalate: Option<String>,
    /// Files copied from the user's checkout into every new checkout, never committed.
    #[serde(rename = "include")]
    pub(crate) include: Vec<String>,
    /// Run with `sh -c` once in each new writer's checkout before its agent.
    #[serde(rename = "setup")]
    pub(crate) setup: Option<String>,
    /// Run with `sh -c` on the integration tip after merges; only a green tip lands.
    #[serde(rename = "gate")]
    pub(crate) gate: Option<String>,
    /// Directories kept when a checkout is reused, and seeded into new ones.
    #[serde(rename = "cache")]
    pub(crate) cache: Vec<String>,
    /// The files whose contents decide whether a cache fits (default: the lockfiles).
    #[serde(rename = "cache_key")]
    pub(crate) cache_key: Vec<String>,
    /// The git remote (a name or a URL) a run spread over machines is coordinated through.
    #[serde(rename = "remote")]
    pub(crate) remote: Option<String>,
    /// What `final_out` gets; unset: by its extension.
    #[serde(rename = "report_format")]
    pub(crate) report_format: Option<ReportFormat>,
    /// Serve the run's live page (`swarm web`) while it runs.
    #[serde(rename = "web")]
    pub(crate) web: bool,
    /// The most tasks one task may spawn.
    #[serde(rename = "max_children")]
    pub(crate) max_children: Option<u32>,
    /// The most levels of spawning below the plan's tasks.
    #[serde(rename = "max_depth")]
    pub(crate) max_depth: Option<u32>,
    /// The most tasks spawned in one run.
    #[serde(rename = "max_spawned")]
    pub(crate) max_spawned: Option<u32>,
    /// The most tasks spawned in any minute.
    #[serde(rename = "spawns_per_minute")]
    pub(crate) spawns_per_minute: Option<u32>,
    /// Which tasks may add tasks.
    #[serde(rename = "spawning")]
    pub(crate) spawning: Option<Spawning>,
    /// The most an attempt's transcript keeps of what it prints, as a size (`64MiB`).
    #[serde(rename = "transcript_cap")]
    pub(crate) transcript_cap: Option<String>,
}

/// Which tasks may add tasks while they run (see the README's "Tasks that add tasks"). The
/// serde names are both the values of `spawning` in config files and the stored format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Spawning {
    /// No task, whatever the plan says.
    #[serde(rename = "off")]
    Off,
    /// The tasks whose `spawn` allows it, up to what it allows.
    #[default]
    #[serde(rename = "plan")]
    Plan,
    /// Every task, within the run's limits alone.
    #[serde(rename = "all")]
    All,
}

impl Spawning {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Plan => "plan",
            Self::All => "all",
        }
    }
}

/// The form of the report `--final-out` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum ReportFormat {
    #[serde(rename = "markdown")]
    Markdown,
    #[serde(rename = "html")]
    Html,
}

/// What to do with a run's finished integration branch. The serde names are both the values of
/// `land` in config files and the stored format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Land {
    /// Fast-forward the user's branch when it is clean and still at the base; else keep the
    /// branch.
    #[serde(rename = "auto")]
    Auto,
    /// Keep the integration branch and say how to take it.
    #[serde(rename = "branch")]
    Branch,
    /// Keep the integration branch and say nothing about it.
    #[serde(rename = "none")]
    None,
}

/// `base` with every option `newer` sets replaced by `newer`'s value: a resume's flags over the
/// options the run was started with.
pub(crate) fn overlay(mut base: Options, newer: &Options) -> Options {
    for key in Key::ALL.into_iter().filter(|k| k.is_set(newer)) {
        key.copy(newer, &mut base);
    }
    base
}
