//! Run options by their key: names in files and flags, environment variables, defaults, and
//! the per-key copying, parsing and checking the layers need.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::check::Shape;
use super::{Land, Options};
use crate::schedule::SpawnLimits;

/// Jobs and writers are bounded as the flags are.
const MAX_SLOTS: u32 = 1024;

/// A run option, by its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Key {
    Jobs,
    MaxWriters,
    Agent,
    Model,
    ApiBase,
    RequestTimeout,
    EndpointWait,
    MaxTurns,
    MaxTaskTokens,
    BudgetTokens,
    AllowProgram,
    TaskTimeout,
    StallTimeout,
    KillGrace,
    Retries,
    Check,
    Land,
    WorktreeDir,
    ResolveConflicts,
    FreshRetries,
    OnEscalate,
    Include,
    Setup,
    Gate,
    Cache,
    CacheFiles,
    FinalOut,
    FinalOutDir,
    Base,
    Remote,
    ReportFormat,
    Web,
    MaxChildren,
    MaxDepth,
    MaxSpawned,
    SpawnsPerMinute,
    Spawning,
    TranscriptCap,
}

impl Key {
    pub(super) const ALL: [Key; 38] = [
        Key::Jobs,
        Key::MaxWriters,
        Key::Agent,
        Key::Model,
        Key::ApiBase,
        Key::RequestTimeout,
        Key::EndpointWait,
        Key::MaxTurns,
        Key::MaxTaskTokens,
        Key::BudgetTokens,
        Key::AllowProgram,
        Key::TaskTimeout,
        Key::StallTimeout,
        Key::KillGrace,
        Key::Retries,
        Key::Check,
        Key::Land,
        Key::WorktreeDir,
        Key::ResolveConflicts,
        Key::FreshRetries,
        Key::OnEscalate,
        Key::Include,
        Key::Setup,
        Key::Gate,
        Key::Cache,
        Key::CacheFiles,
        Key::FinalOut,
        Key::FinalOutDir,
        Key::Base,
        Key::Remote,
        Key::ReportFormat,
        Key::Web,
        Key::MaxChildren,
        Key::MaxDepth,
        Key::MaxSpawned,
        Key::SpawnsPerMinute,
        Key::Spawning,
        Key::TranscriptCap,
    ];

    /// The key in files, and the flag's long name.
    pub(super) fn name(self) -> &'static str {
        match self {
            Key::Jobs => "jobs",
            Key::MaxWriters => "max-writers",
            Key::Agent => "agent",
            Key::Model => "model",
            Key::ApiBase => "api-base",
            Key::RequestTimeout => "request-timeout",
            Key::EndpointWait => "endpoint-wait",
            Key::MaxTurns => "max-turns",
            Key::MaxTaskTokens => "max-task-tokens",
            Key::BudgetTokens => "budget-tokens",
            Key::AllowProgram => "allow-program",
            Key::TaskTimeout => "task-timeout",
            Key::StallTimeout => "stall-timeout",
            Key::KillGrace => "kill-grace",
            Key::Retries => "retries",
            Key::Check => "check",
            Key::Land => "land",
            Key::WorktreeDir => "worktree-dir",
            Key::ResolveConflicts => "resolve-conflicts",
            Key::FreshRetries => "fresh-retries",
            Key::OnEscalate => "on-escalate",
            Key::Include => "include",
            Key::Setup => "setup",
            Key::Gate => "gate",
            Key::Cache => "cache",
            Key::CacheFiles => "cache-key",
            Key::FinalOut => "final-out",
            Key::FinalOutDir => "final-out-dir",
            Key::Base => "base",
            Key::Remote => "remote",
            Key::ReportFormat => "report-format",
            Key::Web => "web",
            Key::MaxChildren => "max-children",
            Key::MaxDepth => "max-depth",
            Key::MaxSpawned => "max-spawned",
            Key::SpawnsPerMinute => "spawns-per-minute",
            Key::Spawning => "spawning",
            Key::TranscriptCap => "transcript-cap",
        }
    }

    /// The environment variable, for options that are not per run.
    pub(super) fn var(self) -> Option<&'static str> {
        Some(match self {
            Key::Jobs => "SWARM_JOBS",
            Key::MaxWriters => "SWARM_MAX_WRITERS",
            Key::Agent => "SWARM_AGENT",
            Key::Model => "SWARM_MODEL",
            Key::ApiBase => "SWARM_API_BASE",
            Key::RequestTimeout => "SWARM_REQUEST_TIMEOUT",
            Key::EndpointWait => "SWARM_ENDPOINT_WAIT",
            Key::MaxTurns => "SWARM_MAX_TURNS",
            Key::MaxTaskTokens => "SWARM_MAX_TASK_TOKENS",
            Key::BudgetTokens => "SWARM_BUDGET_TOKENS",
            Key::AllowProgram => "SWARM_ALLOW_PROGRAMS",
            Key::TaskTimeout => "SWARM_TASK_TIMEOUT",
            Key::StallTimeout => "SWARM_STALL_TIMEOUT",
            Key::KillGrace => "SWARM_KILL_GRACE",
            Key::Retries => "SWARM_RETRIES",
            Key::Check => "SWARM_CHECK",
            Key::Land => "SWARM_LAND",
            Key::WorktreeDir => "SWARM_WORKTREE_DIR",
            Key::ResolveConflicts => "SWARM_RESOLVE_CONFLICTS",
            Key::FreshRetries => "SWARM_FRESH_RETRIES",
            Key::OnEscalate => "SWARM_ON_ESCALATE",
            Key::Include => "SWARM_INCLUDE",
            Key::Setup => "SWARM_SETUP",
            Key::Gate => "SWARM_GATE",
            Key::Cache => "SWARM_CACHE",
            Key::CacheFiles => "SWARM_CACHE_KEY",
            Key::MaxChildren => "SWARM_MAX_CHILDREN",
            Key::MaxDepth => "SWARM_MAX_DEPTH",
            Key::MaxSpawned => "SWARM_MAX_SPAWNED",
            Key::SpawnsPerMinute => "SWARM_SPAWNS_PER_MINUTE",
            Key::Spawning => "SWARM_SPAWNING",
            Key::TranscriptCap => "SWARM_TRANSCRIPT_CAP",
            Key::FinalOut
            | Key::FinalOutDir
            | Key::Base
            | Key::Remote
            | Key::ReportFormat
            | Key::Web => {
                return None;
            }
        })
    }

    /// Per-run options are flags only.
    pub(super) fn in_files(self) -> bool {
        !matches!(
            self,
            Key::FinalOut
                | Key::FinalOutDir
                | Key::Base
                | Key::Remote
                | Key::ReportFormat
                | Key::Web
        )
    }

    /// What the option's value must be in a file.
    pub(super) fn shape(self) -> Shape {
        match self {
            Key::Jobs
            | Key::MaxWriters
            | Key::MaxTurns
            | Key::Retries
            | Key::MaxChildren
            | Key::MaxDepth
            | Key::MaxSpawned
            | Key::SpawnsPerMinute => Shape::Count,
            Key::MaxTaskTokens | Key::BudgetTokens => Shape::Tokens,
            Key::Agent
            | Key::Model
            | Key::ApiBase
            | Key::Check
            | Key::OnEscalate
            | Key::Setup
            | Key::Gate
            | Key::Base
            | Key::Remote => Shape::Text,
            Key::RequestTimeout
            | Key::EndpointWait
            | Key::TaskTimeout
            | Key::StallTimeout
            | Key::KillGrace => Shape::Duration,
            Key::TranscriptCap => Shape::Size,
            Key::WorktreeDir | Key::FinalOut | Key::FinalOutDir => Shape::Path,
            Key::AllowProgram | Key::Include | Key::Cache | Key::CacheFiles => Shape::Strings,
            Key::ResolveConflicts | Key::FreshRetries | Key::Web => Shape::Switch,
            Key::Land => Shape::OneOf(&["auto", "branch", "none"]),
            Key::ReportFormat => Shape::OneOf(&["markdown", "html"]),
            Key::Spawning => Shape::OneOf(&["off", "plan", "all"]),
        }
    }

    /// What applies when nothing sets the option; null when it stays unset, and for
    /// max-writers, whose default is the value of jobs.
    pub(super) fn default_value(self) -> Value {
        match self {
            Key::Jobs => json!(4),
            Key::Agent | Key::Land => json!("auto"),
            Key::RequestTimeout | Key::EndpointWait => json!("5m"),
            Key::KillGrace => json!("2s"),
            Key::MaxTurns => json!(40),
            Key::MaxTaskTokens => json!(400_000),
            Key::TaskTimeout => json!("30m"),
            Key::Retries => json!(1),
            Key::Base => json!("HEAD"),
            Key::MaxChildren => json!(SpawnLimits::default().children),
            Key::MaxDepth => json!(SpawnLimits::default().depth),
            Key::MaxSpawned => json!(SpawnLimits::default().tasks),
            Key::SpawnsPerMinute => json!(SpawnLimits::default().per_minute),
            Key::Spawning => json!(super::Spawning::default().as_str()),
            Key::TranscriptCap => json!(super::DEFAULT_TRANSCRIPT_CAP),
            Key::MaxWriters
            | Key::Model
            | Key::ApiBase
            | Key::AllowProgram
            | Key::Check
            | Key::WorktreeDir
            | Key::ResolveConflicts
            | Key::FreshRetries
            | Key::OnEscalate
            | Key::Include
            | Key::Setup
            | Key::Gate
            | Key::Cache
            | Key::CacheFiles
            | Key::FinalOut
            | Key::FinalOutDir
            | Key::Remote
            | Key::ReportFormat
            | Key::Web
            | Key::BudgetTokens
            | Key::StallTimeout => Value::Null,
        }
    }

    /// Whether the command line gave this option (a flag left out is `None`, empty or false).
    pub(super) fn is_set(self, o: &Options) -> bool {
        match self {
            Key::Jobs => o.jobs.is_some(),
            Key::MaxWriters => o.max_writers.is_some(),
            Key::Agent => o.agent.is_some(),
            Key::Model => o.model.is_some(),
            Key::ApiBase => o.api_base.is_some(),
            Key::RequestTimeout => o.request_timeout.is_some(),
            Key::EndpointWait => o.endpoint_wait.is_some(),
            Key::MaxTurns => o.max_turns.is_some(),
            Key::MaxTaskTokens => o.max_task_tokens.is_some(),
            Key::BudgetTokens => o.budget_tokens.is_some(),
            Key::AllowProgram => !o.allow_program.is_empty(),
            Key::TaskTimeout => o.task_timeout.is_some(),
            Key::StallTimeout => o.stall_timeout.is_some(),
            Key::KillGrace => o.kill_grace.is_some(),
            Key::Retries => o.retries.is_some(),
            Key::Check => o.check.is_some(),
            Key::Land => o.land.is_some(),
            Key::WorktreeDir => o.worktree_dir.is_some(),
            Key::ResolveConflicts => o.resolve_conflicts,
            Key::FreshRetries => o.fresh_retries,
            Key::OnEscalate => o.on_escalate.is_some(),
            Key::Include => !o.include.is_empty(),
            Key::Setup => o.setup.is_some(),
            Key::Gate => o.gate.is_some(),
            Key::Cache => !o.cache.is_empty(),
            Key::CacheFiles => !o.cache_key.is_empty(),
            Key::FinalOut => o.final_out.is_some(),
            Key::FinalOutDir => o.final_out_dir.is_some(),
            Key::Base => o.base.is_some(),
            Key::Remote => o.remote.is_some(),
            Key::ReportFormat => o.report_format.is_some(),
            Key::Web => o.web,
            Key::MaxChildren => o.max_children.is_some(),
            Key::MaxDepth => o.max_depth.is_some(),
            Key::MaxSpawned => o.max_spawned.is_some(),
            Key::SpawnsPerMinute => o.spawns_per_minute.is_some(),
            Key::Spawning => o.spawning.is_some(),
            Key::TranscriptCap => o.transcript_cap.is_some(),
        }
    }

    /// Copies this option's value from one set of options to another.
    pub(super) fn copy(self, from: &Options, to: &mut Options) {
        match self {
            Key::Jobs => to.jobs = from.jobs,
            Key::MaxWriters => to.max_writers = from.max_writers,
            Key::Agent => to.agent.clone_from(&from.agent),
            Key::Model => to.model.clone_from(&from.model),
            Key::ApiBase => to.api_base.clone_from(&from.api_base),
            Key::RequestTimeout => to.request_timeout.clone_from(&from.request_timeout),
            Key::EndpointWait => to.endpoint_wait.clone_from(&from.endpoint_wait),
            Key::MaxTurns => to.max_turns = from.max_turns,
            Key::MaxTaskTokens => to.max_task_tokens = from.max_task_tokens,
            Key::BudgetTokens => to.budget_tokens = from.budget_tokens,
            Key::AllowProgram => to.allow_program.clone_from(&from.allow_program),
            Key::TaskTimeout => to.task_timeout.clone_from(&from.task_timeout),
            Key::StallTimeout => to.stall_timeout.clone_from(&from.stall_timeout),
            Key::KillGrace => to.kill_grace.clone_from(&from.kill_grace),
            Key::Retries => to.retries = from.retries,
            Key::Check => to.check.clone_from(&from.check),
            Key::Land => to.land = from.land,
            Key::WorktreeDir => to.worktree_dir.clone_from(&from.worktree_dir),
            Key::ResolveConflicts => to.resolve_conflicts = from.resolve_conflicts,
            Key::FreshRetries => to.fresh_retries = from.fresh_retries,
            Key::OnEscalate => to.on_escalate.clone_from(&from.on_escalate),
            Key::Include => to.include.clone_from(&from.include),
            Key::Setup => to.setup.clone_from(&from.setup),
            Key::Gate => to.gate.clone_from(&from.gate),
            Key::Cache => to.cache.clone_from(&from.cache),
            Key::CacheFiles => to.cache_key.clone_from(&from.cache_key),
            Key::FinalOut => to.final_out.clone_from(&from.final_out),
            Key::FinalOutDir => to.final_out_dir.clone_from(&from.final_out_dir),
            Key::Base => to.base.clone_from(&from.base),
            Key::Remote => to.remote.clone_from(&from.remote),
            Key::ReportFormat => to.report_format = from.report_format,
            Key::Web => to.web = from.web,
            Key::MaxChildren => to.max_children = from.max_children,
            Key::MaxDepth => to.max_depth = from.max_depth,
            Key::MaxSpawned => to.max_spawned = from.max_spawned,
            Key::SpawnsPerMinute => to.spawns_per_minute = from.spawns_per_minute,
            Key::Spawning => to.spawning = from.spawning,
            Key::TranscriptCap => to.transcript_cap.clone_from(&from.transcript_cap),
        }
    }

    /// Sets this option from an environment variable's text.
    pub(super) fn parse_into(self, text: &str, o: &mut Options) -> Result<(), String> {
        let text = text.trim();
        let owned = || Some(text.to_owned());
        match self {
            Key::Jobs => o.jobs = Some(number(text)?),
            Key::MaxWriters => o.max_writers = Some(number(text)?),
            Key::MaxTurns => o.max_turns = Some(number(text)?),
            Key::MaxTaskTokens => o.max_task_tokens = Some(number(text)?),
            Key::BudgetTokens => o.budget_tokens = Some(number(text)?),
            Key::Retries => o.retries = Some(number(text)?),
            Key::MaxChildren => o.max_children = Some(number(text)?),
            Key::MaxDepth => o.max_depth = Some(number(text)?),
            Key::MaxSpawned => o.max_spawned = Some(number(text)?),
            Key::SpawnsPerMinute => o.spawns_per_minute = Some(number(text)?),
            Key::Agent => o.agent = owned(),
            Key::Model => o.model = owned(),
            Key::ApiBase => o.api_base = owned(),
            Key::RequestTimeout => o.request_timeout = owned(),
            Key::EndpointWait => o.endpoint_wait = owned(),
            Key::TaskTimeout => o.task_timeout = owned(),
            Key::StallTimeout => o.stall_timeout = owned(),
            Key::KillGrace => o.kill_grace = owned(),
            Key::TranscriptCap => o.transcript_cap = owned(),
            Key::Check => o.check = owned(),
            Key::OnEscalate => o.on_escalate = owned(),
            Key::Base => o.base = owned(),
            Key::Remote => o.remote = owned(),
            Key::ReportFormat => {
                o.report_format = Some(match text.to_ascii_lowercase().as_str() {
                    "markdown" => super::ReportFormat::Markdown,
                    "html" => super::ReportFormat::Html,
                    _ => return Err(format!("`{text}` is not markdown or html")),
                });
            }
            Key::FinalOut => o.final_out = Some(PathBuf::from(text)),
            Key::FinalOutDir => o.final_out_dir = Some(PathBuf::from(text)),
            Key::WorktreeDir => o.worktree_dir = Some(PathBuf::from(text)),
            Key::AllowProgram => o.allow_program = list(text),
            Key::Include => o.include = list(text),
            Key::Cache => o.cache = list(text),
            Key::CacheFiles => o.cache_key = list(text),
            Key::Setup => o.setup = owned(),
            Key::Gate => o.gate = owned(),
            Key::Land => {
                o.land = Some(match text.to_ascii_lowercase().as_str() {
                    "auto" => Land::Auto,
                    "branch" => Land::Branch,
                    "none" => Land::None,
                    _ => return Err(format!("`{text}` is not auto, branch or none")),
                });
            }
            Key::ResolveConflicts => o.resolve_conflicts = switch(text)?,
            Key::Web => o.web = switch(text)?,
            Key::FreshRetries => o.fresh_retries = switch(text)?,
            Key::Spawning => {
                o.spawning = Some(match text.to_ascii_lowercase().as_str() {
                    "off" => super::Spawning::Off,
                    "plan" => super::Spawning::Plan,
                    "all" => super::Spawning::All,
                    _ => return Err(format!("`{text}` is not off, plan or all")),
                });
            }
        }
        Ok(())
    }

    /// Checks what the types alone do not: the same bounds the flags have.
    pub(super) fn check(self, o: &Options) -> Result<(), String> {
        let slots = |n: Option<u32>| match n {
            Some(n) if !(1..=MAX_SLOTS).contains(&n) => {
                Err(format!("{n} is out of range: use 1 to {MAX_SLOTS}"))
            }
            _ => Ok(()),
        };
        let duration = |d: Option<&str>| match d {
            Some(d) => crate::plan::parse_duration(d).map(drop),
            None => Ok(()),
        };
        match self {
            Key::Jobs => slots(o.jobs),
            Key::MaxWriters => slots(o.max_writers),
            Key::TaskTimeout => duration(o.task_timeout.as_deref()),
            Key::StallTimeout => duration(o.stall_timeout.as_deref()),
            Key::KillGrace => o
                .kill_grace
                .as_deref()
                .map_or(Ok(()), |d| crate::plan::parse_wait(d).map(drop)),
            Key::RequestTimeout => duration(o.request_timeout.as_deref()),
            Key::EndpointWait => o
                .endpoint_wait
                .as_deref()
                .map_or(Ok(()), |d| crate::plan::parse_wait(d).map(drop)),
            Key::TranscriptCap => o
                .transcript_cap
                .as_deref()
                .map_or(Ok(()), |s| super::parse_transcript_cap(s).map(drop)),
            Key::Include => repo_paths(&o.include),
            Key::Cache => repo_paths(&o.cache),
            Key::CacheFiles => repo_paths(&o.cache_key),
            _ => Ok(()),
        }
    }

    /// The option's value in `o` as JSON (null when unset); JSON scalars and arrays of strings
    /// are also TOML, so `describe` shows them as they would be written in a file.
    pub(super) fn value(self, o: &Options) -> Value {
        let all = serde_json::to_value(o).unwrap_or_default();
        all.get(self.name().replace('-', "_"))
            .cloned()
            .unwrap_or_default()
    }
}

/// A comma-separated list, as the variables of list options hold it.
fn list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Paths in the repository, relative to its top: none absolute, none climbing out with `..`,
/// none into `.git` (swarm copies and keeps them in checkouts, outside of which nothing is
/// touched).
fn repo_paths(paths: &[String]) -> Result<(), String> {
    use std::path::Component;
    for p in paths {
        let path = std::path::Path::new(p);
        if p.trim().is_empty() {
            return Err(
                "an empty path: name a file or directory relative to the repository's top"
                    .to_owned(),
            );
        }
        if path.is_absolute() {
            return Err(format!(
                "`{p}` is absolute: name it relative to the repository's top"
            ));
        }
        if !path
            .components()
            .any(|c| matches!(c, Component::Normal(_) | Component::ParentDir))
        {
            return Err(format!(
                "`{p}` is the whole repository: name files or directories in it"
            ));
        }
        for c in path.components() {
            match c {
                Component::ParentDir => {
                    return Err(format!(
                        "`{p}` climbs out with `..`: name a path inside the repository"
                    ));
                }
                Component::Normal(n) if n == ".git" => {
                    return Err(format!("`{p}` is in .git: name a path of the working tree"));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// An on/off variable: `1`/`true`/`yes`/`on` or `0`/`false`/`no`/`off`.
fn switch(text: &str) -> Result<bool, String> {
    match text.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("`{text}` is not 1/true/yes or 0/false/no")),
    }
}

fn number<T: std::str::FromStr>(text: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("`{text}` is not {}", Shape::Count.words()))
}
