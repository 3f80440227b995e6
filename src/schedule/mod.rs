//! The run loop: readiness, priority, slots, retries, the merge queue and signals. One thread
//! (the caller's) owns the board, the terminal and the merges; attempts run on a dedicated pool
//! and report back over a channel. Prints only through `Ui`; reaches git only through `git`.

use std::path::PathBuf;
use std::time::Duration;

use crate::agent::Agent;
use crate::git::CommitId;
use crate::store::RunEvent;

mod checkouts;
mod core;
pub(crate) mod eta;
mod executor;
mod job;
mod outcome;
mod ports;
mod prompt;
mod scratch;

pub use self::core::Ending;
pub use self::core::spawn::Ceiling;
use crate::config::SpawnLimits;
use job::Report;

pub use executor::{Dispatcher, GoalRun, Recall, WorkerEnd, WorkerSetup, work};

/// The file in a run's directory that names the directory of its checkouts.
pub const CHECKOUTS_FILE: &str = "checkouts";

/// A dependency's result is cut to this many bytes inside a prompt.
pub const DEP_RESULT_CAP: usize = 16 * 1024;

/// How the run behaves; fixed for the run's lifetime.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Files of the repository swarm reads commands from (`.swarm.toml`, the run's task file
    /// or config file when they are tracked there), relative to its top: a writer's change to
    /// one is parked for review, never merged.
    pub guarded: Vec<String>,
    pub jobs: usize,
    pub max_writers: usize,
    pub retries: u32,
    pub task_timeout: Duration,
    /// An attempt that writes nothing for this long is stopped as hung.
    pub stall_timeout: Option<Duration>,
    /// Between SIGTERM and SIGKILL when an attempt is stopped.
    pub kill_grace: Duration,
    /// The most bytes of what an attempt prints its transcript keeps.
    pub transcript_cap: u64,
    /// The first retry waits this long; each further one twice as long (capped at a minute).
    pub backoff: Duration,
    pub agent: Option<Agent>,
    pub check: Option<String>,
    pub on_escalate: Option<String>,
    /// Where escalations and pauses are mirrored (a Telegram chat), when they are.
    pub mirror: Option<crate::mirror::Outbox>,
    /// Where the run's trace goes, when it is exported: each attempt's agent is then told
    /// its span (`TRACEPARENT`).
    pub trace: Option<crate::trace::Feed>,
    /// Where the run's result is to be delivered as pull requests, given to the
    /// `--on-escalate` hook as `deliver`; `None` when it opens none.
    pub delivery: Option<serde_json::Value>,
    /// What earlier runs of the repository taught about some of its files: an agent whose
    /// task changes one of them is told (see the manual's "Memory").
    pub lessons: Vec<crate::store::Lesson>,
    /// The rungs a conflicting writer's merge climbs after git's merge, in order, each once,
    /// before the writer is parked.
    pub ladder: Vec<Rung>,
    /// The syntax-aware merge program of the structural rung, when one was found.
    pub structural: Option<Structural>,
    /// Whether running writers' changes are compared for conflicts coming, and what is done
    /// with one foreseen.
    pub forecast: crate::config::Forecast,
    /// How often they are compared.
    pub forecast_interval: Duration,
    /// A retry never continues the session of the attempt it follows.
    pub fresh_retries: bool,
    /// A writer whose agent changed nothing is done (else its attempt fails).
    pub allow_no_change: bool,
    /// The model client of the built-in agent, when it is configured.
    pub llm: Option<crate::llm::Client>,
    pub builtin: BuiltinLimits,
    /// Agents named by tasks (`"agent": "claude"`) and the members of the pools the run
    /// uses, resolved.
    pub named_agents: std::collections::BTreeMap<String, Agent>,
    /// The pool the run's agent is (`--agent pool:NAME`), by name.
    pub pool: Option<String>,
    /// The pools the run uses, by name: their members' agent names in order of preference.
    pub pools: std::collections::BTreeMap<String, Vec<String>>,
    /// How many attempts of a profile (by name) may run at once; no cap for one not named.
    pub max_concurrent: std::collections::BTreeMap<String, usize>,
    /// The longest a provider's usage limit may pause the run; a later reset stops the run
    /// (resumable) instead.
    pub max_limit_wait: Duration,
    /// How long attempts wait for a model endpoint that stopped answering before the run
    /// stops; zero stops it at once.
    pub endpoint_wait: Duration,
    /// Tokens the run's tasks may use in all before nothing new starts.
    pub budget_tokens: Option<u64>,
    /// How new checkouts are made ready for their tasks.
    pub prepare: Prepare,
    /// Run with `sh -c` on the integration tip after merges (see the manual's "The gate" (docs/src/gate.md)).
    pub gate: Option<String>,
    /// How many tasks running tasks may add, and how fast.
    pub spawn: SpawnLimits,
    /// The git remote the run is spread over machines through (see `crate::remote`).
    pub remote: Option<Remote>,
    /// How many tasks this process runs itself: `jobs`, or with a remote only as many as
    /// `--jobs` said (none by default); the gate and conflict resolvers run here either way.
    pub local_jobs: usize,
    /// What confines the processes of tasks (see `agent::confine`).
    pub confine: std::sync::Arc<crate::agent::confine::Confiner>,
    /// The candidates every writer of a goal planned during the run gets (`--candidates`,
    /// `--select`), when more than one.
    pub candidates: Option<crate::plan::candidates::Candidates>,
}

/// A run spread over machines through a git remote (see `crate::remote`).
#[derive(Debug, Clone)]
pub struct Remote {
    /// A remote's name or a URL, as git takes it.
    pub name: String,
    /// How often it is fetched.
    pub poll: Duration,
    /// The key the run's records are signed with, which its workers share.
    pub key: Option<crate::remote::Key>,
}

/// How a checkout is made ready to build: files copied in, directories kept and seeded, a
/// setup command run (see the manual's "Checkouts that build" (docs/src/checkouts.md)).
#[derive(Debug, Clone, Default)]
pub struct Prepare {
    /// Files copied from the user's checkout into every new checkout and snapshot; never
    /// committed by swarm.
    pub include: Vec<String>,
    /// Run with `sh -c` once in each new writer's checkout before its agent starts.
    pub setup: Option<String>,
    /// Directories kept when a set-aside checkout is reused, and seeded into new ones from a
    /// checkout whose cache key matches.
    pub cache: Vec<String>,
    /// The files whose contents make the cache key; empty: the usual lockfiles.
    pub cache_key: Vec<String>,
}

impl Settings {
    /// The agent for a task: the one its `agent` field names, else the run's. Names were
    /// checked when the settings were made; an unknown one here gives `None`.
    pub fn agent_for(&self, name: Option<&str>) -> Option<Agent> {
        match name {
            None | Some("auto") => self.agent.clone(),
            Some(n) => self.named_agents.get(n).cloned(),
        }
    }

    /// The pool a task's attempts go to, by name: the one its `agent` names (`pool:NAME`), or
    /// the run's for a task without its own agent.
    pub fn pool_for<'s>(&'s self, name: Option<&'s str>) -> Option<&'s str> {
        match name {
            None | Some("auto") => self.pool.as_deref(),
            Some(n) => crate::config::pool_name(n),
        }
    }

    /// The agent an attempt runs: the pool's member chosen for it, else as `agent_for`.
    pub fn attempt_agent(&self, name: Option<&str>, member: Option<&str>) -> Option<Agent> {
        match member {
            Some(m) => self.named_agents.get(m).cloned(),
            None => self.agent_for(name),
        }
    }

    /// The agent that may resolve a task's merge conflict: the task's agent or the run's, if
    /// usable; for a pool's task, the member that wrote it (`member`), or the pool's first
    /// (outside the pool's caps and pauses: one bounded attempt).
    pub fn resolver_agent(&self, name: Option<&str>, member: Option<&str>) -> Option<Agent> {
        let member = member.or_else(|| {
            let pool = self.pool_for(name)?;
            self.pools.get(pool)?.first().map(String::as_str)
        });
        self.attempt_agent(name, member)
            .filter(|a| *a != Agent::OpenAi || self.llm.is_some())
    }
}

#[cfg(test)]
impl Settings {
    /// A run of `jobs` slots whose prompts go to an `exec` agent, with no gate, budget,
    /// pools or remote, one retry, and every other limit at swarm's default: what the tests of
    /// the run loop's core start from.
    pub(crate) fn sample(jobs: usize) -> Self {
        Self {
            guarded: Vec::new(),
            jobs,
            max_writers: jobs,
            retries: 1,
            task_timeout: Duration::from_secs(1800),
            stall_timeout: None,
            kill_grace: Duration::from_secs(5),
            transcript_cap: 64 << 20,
            backoff: Duration::from_secs(1),
            agent: Some(Agent::Exec("agent".to_owned())),
            check: None,
            on_escalate: None,
            mirror: None,
            trace: None,
            delivery: None,
            lessons: Vec::new(),
            ladder: vec![Rung::Structural, Rung::Redo],
            structural: None,
            forecast: crate::config::Forecast::Off,
            forecast_interval: Duration::from_secs(30),
            fresh_retries: false,
            allow_no_change: false,
            llm: None,
            builtin: BuiltinLimits {
                max_turns: 50,
                max_tokens: 0,
                allowed_programs: Vec::new(),
            },
            named_agents: std::collections::BTreeMap::new(),
            pool: None,
            pools: std::collections::BTreeMap::new(),
            max_concurrent: std::collections::BTreeMap::new(),
            max_limit_wait: Duration::from_secs(900),
            endpoint_wait: Duration::ZERO,
            budget_tokens: None,
            prepare: Prepare::default(),
            gate: None,
            spawn: SpawnLimits::default(),
            remote: None,
            local_jobs: jobs,
            confine: crate::agent::confine::Confiner::new(crate::agent::confine::Setting {
                off: true,
                ..Default::default()
            }),
            candidates: None,
        }
    }
}

/// Caps of the built-in agent, per attempt.
#[derive(Debug, Clone)]
pub struct BuiltinLimits {
    pub max_turns: u32,
    pub max_tokens: u64,
    /// Programs the agent may run (none by default).
    pub allowed_programs: Vec<String>,
}

/// Where the run's files and branches live.
pub struct Layout {
    pub run: String,
    pub base: CommitId,
    /// Full ref name of the integration branch, `refs/heads/swarm/<run>`.
    pub integration_ref: String,
    /// This run's worktrees and snapshots.
    pub worktrees: PathBuf,
    /// This run's files in the board directory.
    pub run_dir: PathBuf,
    /// The directories behind `$SWARM_DEPS_DIR`, one per `run` task with deps.
    pub deps: PathBuf,
}

/// Whether the branch `name` is one a run of `run` with these tasks makes: its integration
/// branch, a writer's or resolver's branch, what a refused attempt left, or what was found on
/// a moved integration branch (see `Layout`).
pub fn made_by_run(name: &str, run: &str, tasks: &[&str]) -> bool {
    let Some(rest) = name
        .strip_prefix("swarm/")
        .and_then(|n| n.strip_prefix(run))
    else {
        return false;
    };
    if rest.is_empty() || rest.starts_with("@moved-") {
        return true;
    }
    let Some(rest) = rest.strip_prefix('-') else {
        return false;
    };
    // `<task>`, `<task>-resolve`, each perhaps with `@<attempt>`; task ids hold no `@`.
    let (rest, attempt) = rest.split_once('@').unwrap_or((rest, ""));
    if !attempt.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    tasks.contains(&rest)
        || rest
            .strip_suffix("-resolve")
            .is_some_and(|t| tasks.contains(&t))
}

/// Which of a writer's checkouts: its own, or the one its conflict resolver works in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Checkout {
    Task,
    Resolver,
}

impl Layout {
    /// Before the run's first attempt: stale locks on its refs go, and its directories are
    /// made.
    fn open(&self, repo: &crate::git::Repo, plan: &crate::plan::Plan) -> anyhow::Result<()> {
        // This process holds the run lock and has not started anything yet, so a lock on one
        // of the run's refs was left by a `kill -9` of an earlier process and would block it.
        repo.clear_stale_ref_lock(&self.integration_ref)?;
        for task in plan
            .tasks
            .iter()
            .filter(|t| t.mode == crate::plan::Mode::Write)
        {
            for checkout in [Checkout::Task, Checkout::Resolver] {
                let branch = self.branch(task.id.as_str(), checkout);
                repo.clear_stale_ref_lock(&format!("refs/heads/{branch}"))?;
            }
        }
        std::fs::create_dir_all(self.deps.join(executor::NO_DEPS_DIR))?;
        // Where this run's checkouts are, for `swarm gc`.
        crate::disk::write(
            &self.run_dir.join(CHECKOUTS_FILE),
            self.worktrees.as_os_str().as_encoded_bytes(),
        )?;
        Ok(())
    }

    /// At the end of the run: its checkouts (the gate's first, if it has one, then those
    /// `checkouts` holds; the run's directory goes with the last one), and the attempts'
    /// temporary and dependency directories.
    fn remove_checkouts(
        &self,
        gate: bool,
        checkouts: &mut checkouts::Checkouts,
    ) -> anyhow::Result<()> {
        let mut cleanup = if gate {
            crate::git::remove_checkout(&executor::gate_checkout_path(self))
        } else {
            Ok(())
        };
        cleanup = cleanup.and(checkouts.close());
        // The attempts' temporary directories, each emptied by its last attempt.
        for dir in [self.run_dir.join("tmp"), self.deps.clone()] {
            if let Err(e) = std::fs::remove_dir_all(&dir)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                cleanup = cleanup.and(Err(e.into()));
            }
        }
        cleanup
    }

    /// A writer's branch: `swarm/<run>-<task>` (`…-resolve` for its resolver).
    fn branch(&self, task: &str, checkout: Checkout) -> String {
        match checkout {
            Checkout::Task => format!("swarm/{}-{task}", self.run),
            Checkout::Resolver => format!("swarm/{}-{task}-resolve", self.run),
        }
    }

    /// Where an attempt whose result was refused keeps what its agent left:
    /// `swarm/<run>-<task>@<attempt>` (no task id holds an `@`).
    fn kept_branch(&self, task: &str, checkout: Checkout, attempt: u32) -> String {
        format!("{}@{attempt}", self.branch(task, checkout))
    }

    /// A writer's checkout.
    fn worktree(&self, task: &str, checkout: Checkout) -> PathBuf {
        match checkout {
            Checkout::Task => self.worktrees.join(task),
            Checkout::Resolver => self.worktrees.join(format!("{task}.resolve")),
        }
    }
}

/// The variables every attempt of task `i` gets for its own temporary directory `tmp` and
/// its block of ports (when one was free).
/// The file in an attempt's `TMPDIR` where swarm leaves it notes while it runs (`SWARM_NOTES`):
/// a conflict foreseen, with `forecast = "tell"`.
const NOTES: &str = "swarm-notes.md";

fn attempt_env(ports: &mut ports::Ports, i: usize, tmp: &std::path::Path) -> Vec<(String, String)> {
    let notes = tmp.join(NOTES).display().to_string();
    let tmp = tmp.display().to_string();
    let mut env: Vec<(String, String)> = ["TMPDIR", "TMP", "TEMP"]
        .into_iter()
        .map(|v| (v.to_owned(), tmp.clone()))
        .chain([("SWARM_NOTES".to_owned(), notes)])
        .collect();
    if let Some(block) = ports.acquire(i, ports::is_free) {
        env.push(("SWARM_PORT".to_owned(), block.first.to_string()));
        env.push(("SWARM_PORTS".to_owned(), block.range()));
    }
    env
}

/// The transcript's line on the included files: which were copied, which the user's checkout
/// does not have (skipped).
fn included_note(include: &[String], missing: &[String]) -> String {
    if include.is_empty() {
        return String::new();
    }
    let copied: Vec<&str> = include
        .iter()
        .filter(|p| !missing.contains(p))
        .map(String::as_str)
        .collect();
    let mut note = format!(
        "include: copied {}",
        if copied.is_empty() {
            "nothing".to_owned()
        } else {
            copied.join(", ")
        }
    );
    if !missing.is_empty() {
        note.push_str("; not in your checkout, skipped: ");
        note.push_str(&missing.join(", "));
    }
    note.push('\n');
    note
}

enum Message {
    Done(Report),
    /// A fetch of the remote of a run spread over machines (see `dispatch::remote`).
    Remote(crate::remote::link::Seen),
    /// A gate run ended.
    Gated(Report),
    /// Something the built-in agent's model client met on the way (a throttled request, a
    /// retry), for the event log.
    Notice {
        task: usize,
        notice: crate::llm::Notice,
    },
    Signal,
    /// The dependency pass over these goals (indices) ended.
    Needs {
        goals: Vec<usize>,
        result: anyhow::Result<crate::planner::needs::Inferred>,
    },
    /// Planning a goal ended.
    Planned {
        goal: usize,
        result: anyhow::Result<crate::planner::Planned>,
    },
    /// Something the planner's model client met on the way.
    GoalNotice {
        notice: crate::llm::Notice,
    },
    /// The model endpoint answers again (`None`), or stayed away for as long as the run waits
    /// (the last cause).
    Endpoint(Option<String>),
    /// A look for conflicts coming ended, with what it found.
    Foreseen(core::Looked),
    /// An escalation hook ended: what it did, for the escalation's event.
    Escalated {
        task: Option<String>,
        hook: serde_json::Value,
    },
}

/// A model client's notice as an event.
pub fn notice_event(notice: &crate::llm::Notice) -> RunEvent {
    use crate::llm::Notice;
    match notice {
        Notice::Throttled {
            status,
            wait,
            attempt,
            ..
        } => RunEvent::LlmThrottled {
            status: *status,
            wait_ms: wait.as_millis() as u64,
            attempt: *attempt,
        },
        Notice::Retrying {
            why, wait, attempt, ..
        } => RunEvent::LlmRetrying {
            why: why.clone(),
            wait_ms: wait.as_millis() as u64,
            attempt: *attempt,
        },
        Notice::Concurrency { limit } => RunEvent::LlmConcurrency { limit: *limit },
        Notice::Answer {
            what,
            request,
            text,
        } => RunEvent::ModelAnswer {
            what: (*what).to_owned(),
            request: *request,
            text: text.clone(),
        },
        Notice::NoFunctionCall { what } => RunEvent::NoFunctionCall {
            what: (*what).to_owned(),
        },
        Notice::Fitted { context, cut } => RunEvent::PromptFitted {
            context: *context,
            cut: *cut,
        },
    }
}

/// What the terminal says when a request that offered tools came back without a call.
const NO_CALL: &str = "the model answered without a function call: the server may not pass tools on (llama.cpp: start it with --jinja; Ollama: a model with tool support); asking for JSON instead";

/// A model client's notice as a line for the terminal, when it is a retry:
/// `model retry 2/8 in 4.0s: connection refused`.
pub fn notice_line(notice: &crate::llm::Notice) -> Option<String> {
    use crate::llm::Notice;
    let (why, wait, attempt, attempts) = match notice {
        Notice::Throttled {
            status,
            wait,
            attempt,
            attempts,
        } => (
            format!("throttled (HTTP {status})"),
            wait,
            attempt,
            attempts,
        ),
        Notice::Retrying {
            why,
            wait,
            attempt,
            attempts,
        } => (why.clone(), wait, attempt, attempts),
        Notice::Concurrency { .. } | Notice::Answer { .. } | Notice::Fitted { .. } => {
            return None;
        }
        Notice::NoFunctionCall { .. } => return Some(NO_CALL.to_owned()),
    };
    Some(format!(
        "model retry {}/{attempts} in {}: {}",
        attempt + 1,
        crate::ui::duration(*wait),
        crate::ui::one_line(&crate::secret::redact(&why), 200)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_branches_a_run_makes_are_known_by_name() {
        let tasks = ["a", "b-c"];
        for name in [
            "swarm/r1",
            "swarm/r1-a",
            "swarm/r1-b-c",
            "swarm/r1-a-resolve",
            "swarm/r1-a@2",
            "swarm/r1-b-c-resolve@1",
            "swarm/r1@moved-0123456789ab",
        ] {
            assert!(made_by_run(name, "r1", &tasks), "{name}");
        }
        for name in [
            "swarm/r2-a",
            "swarm/r1-x",
            "swarm/r1-a@x",
            "swarm/r1a",
            "swarm/mine",
            "r1-a",
        ] {
            assert!(!made_by_run(name, "r1", &tasks), "{name}");
        }
    }

    #[test]
    fn a_model_retry_is_one_line_with_its_number_wait_and_cause() {
        use crate::llm::Notice;
        let retry = Notice::Retrying {
            why: "connection refused".into(),
            wait: Duration::from_secs(4),
            attempt: 1,
            attempts: 8,
        };
        assert_eq!(
            notice_line(&retry).as_deref(),
            Some("model retry 2/8 in 4.0s: connection refused")
        );
        let throttled = Notice::Throttled {
            status: 429,
            wait: Duration::from_millis(1500),
            attempt: 3,
            attempts: 8,
        };
        assert_eq!(
            notice_line(&throttled).as_deref(),
            Some("model retry 4/8 in 1.5s: throttled (HTTP 429)")
        );
        assert_eq!(notice_line(&Notice::Concurrency { limit: 2 }), None);
    }
}

/// A rung of the ladder a conflicting merge climbs after git's line merge fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rung {
    /// A syntax-aware merge of each conflicted file (`mergiraf`), accepted when it leaves no
    /// conflict, drops no line either side added, and the writer's check passes.
    Structural,
    /// The writer's task done again by its agent on the current integration tip, told what
    /// its earlier attempt changed and where that conflicted.
    Redo,
    /// The writer's agent's one attempt at resolving the conflict.
    Resolve,
}

impl Rung {
    /// Its name in `conflicts` and in the board.
    pub fn as_str(self) -> &'static str {
        match self {
            Rung::Structural => "structural",
            Rung::Redo => "redo",
            Rung::Resolve => "resolve",
        }
    }

    /// The rung `name` names, in `conflicts`.
    pub fn named(name: &str) -> Option<Self> {
        match name {
            "structural" => Some(Rung::Structural),
            "redo" => Some(Rung::Redo),
            "resolve" => Some(Rung::Resolve),
            _ => None,
        }
    }
}

/// The syntax-aware merge program the structural rung runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Structural {
    pub program: std::path::PathBuf,
    /// What `--version` said (`mergiraf 0.20.0`), for the report.
    pub version: String,
}
