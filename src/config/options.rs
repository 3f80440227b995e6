//! The run options, each declared once in [`run_options!`]: its field and type, its key (the
//! name in files and of the flag), its flag, its `SWARM_*` variable, whether files may set it,
//! the shape of its value, its check, its default, and its help. Everything else is made from
//! that one declaration: the [`Options`] the layers produce, what the commands and the run's
//! settings read and the board keeps (see `record`); the form of a config file; the per-key
//! parsing, checking and merging of the layers (`key`); what `swarm config` shows; and the
//! command line's flags, which `cli` makes from the same table so that clap stays there.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::check::Shape;
use super::choice::{
    Choice, Confine, ConfineNet, Deliver, Forecast, ForgeKind, Land, Lessons, Pick, ReportFormat,
    Spawning,
};
use super::key::{
    Key, Spec, candidates, duration, machine_paths, price, repo_paths, rungs, slots,
    transcript_cap, wait,
};
use super::pool::PoolSpec;
use super::setting::Setting;
use super::{DEFAULT_TRANSCRIPT_CAP, ProfileSpec};

/// Every run option, declared once; hands the table to the macro `$then`, which makes what its
/// module needs of it (here: [`Options`], [`Defaults`], the file's form and the keys' table; in
/// `cli`: the flags).
///
/// An entry, in this order (`?`: may be left out):
///
/// - its help (doc comments): the flag's `--help` text, word for word; for an option without a
///   flag, what it does;
/// - `field: Type`: the field of [`Options`] and its type: `Option<T>`, `Vec<String>` or `bool`.
///   The field's name is also its name in the board's record of a run's options, so renaming one
///   is a new version of that record (see `record`);
/// - `key`: the name in files, in `swarm config` and of the flag (`--key`);
/// - `flag`: `none` (no flag), `switch` (a flag without a value), or the flag's value name;
///   `short`?: its one-letter form;
/// - `var`: the `SWARM_*` variable, or `none`; `file`: whether a config file may set it (`no`:
///   it belongs to one run, so only a flag gives it);
/// - `shape`: what its value is in a file (a [`Shape`]; `OneOf(T)` for a [`Choice`] type `T`,
///   whose words are the values; `Agent` for an agent's name);
/// - `check`?: what its value must be besides its shape (a function in `key`);
/// - `default`?: `Type = value`: what applies when no layer sets it, as `swarm config` shows it
///   and as [`Defaults`] gives it to the code that uses it; `follows`?: the key whose value it
///   takes instead;
/// - `listed`: its place in `swarm config`'s list (a new option goes last), which need not be
///   its place in `--help`: that is its place in this table among the options with a flag.
///
/// The names the table uses (types, defaults' values) are looked up where `$then` expands it,
/// so each module that takes the table imports those it makes code of.
macro_rules! run_options {
    ($then:ident) => {
        $then! {
            /// Run at most N tasks at once [default: 4].
            jobs: Option<u32> {
                key: "jobs", flag: "N", short: 'j', var: "SWARM_JOBS", file: yes,
                shape: Count, check: slots, default: u32 = 4, listed: 0,
            }
            /// Run at most N writers at once [default: the value of --jobs].
            max_writers: Option<u32> {
                key: "max-writers", flag: "N", var: "SWARM_MAX_WRITERS", file: yes,
                shape: Count, check: slots, follows: "jobs", listed: 1,
            }
            /// The agent for prompt tasks: auto, openai (built in), claude, codex, a profile from
            /// the configuration, exec:CMD (CMD run with `sh -c`, prompt on stdin, result on
            /// stdout), or acp:CMD (CMD run with `sh -c`, spoken to in the Agent Client Protocol),
            /// or pool:NAME (each attempt to the member of `[pools.NAME]` with room)
            /// [default: auto].
            agent: Option<String> {
                key: "agent", flag: "NAME", var: "SWARM_AGENT", file: yes,
                shape: Agent, default: &'static str = "auto", listed: 2,
            }
            /// The model of the built-in agent and the planner (else SWARM_MODEL)
            /// [default: gpt-4o-mini].
            model: Option<String> {
                key: "model", flag: "NAME", var: "SWARM_MODEL", file: yes, shape: Text, listed: 3,
            }
            /// The OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 (else SWARM_API_BASE,
            /// OPENAI_BASE_URL) [default: https://api.openai.com/v1]. The key comes from
            /// SWARM_API_KEY or OPENAI_API_KEY only.
            api_base: Option<String> {
                key: "api-base", flag: "URL", var: "SWARM_API_BASE", file: yes,
                shape: Text, listed: 4,
            }
            /// The longest a model request may stay silent: waiting for its answer to start (the
            /// server reading the prompt included) or between two pieces of a streamed answer. A
            /// request that met it with nothing back is sent once more; an answer cut by it is
            /// kept and continued, never asked for again as it was [default: 5m].
            request_timeout: Option<String> {
                key: "request-timeout", flag: "DURATION", var: "SWARM_REQUEST_TIMEOUT", file: yes,
                shape: Duration, check: duration, default: &'static str = "5m", listed: 5,
            }
            /// When the model endpoint stops answering (connections refused or timing out, several
            /// in a row): how long new attempts wait while swarm checks it every few seconds,
            /// before the run stops, resumable (exit 75); 0 stops at once [default: 5m].
            endpoint_wait: Option<String> {
                key: "endpoint-wait", flag: "DURATION", var: "SWARM_ENDPOINT_WAIT", file: yes,
                shape: Duration, check: wait, default: &'static str = "5m", listed: 6,
            }
            /// The built-in agent's cap on model turns per attempt [default: 40].
            max_turns: Option<u32> {
                key: "max-turns", flag: "N", var: "SWARM_MAX_TURNS", file: yes,
                shape: Count, default: u32 = 40, listed: 7,
            }
            /// The built-in agent's cap on tokens per attempt [default: 400000].
            max_task_tokens: Option<u64> {
                key: "max-task-tokens", flag: "N", var: "SWARM_MAX_TASK_TOKENS", file: yes,
                shape: Tokens, default: u64 = 400_000, listed: 8,
            }
            /// The most tokens the planner's answer may take (max_tokens of each planning
            /// request); 0 sends no cap [default: 8192].
            plan_answer_tokens: Option<u64> {
                key: "plan-answer-tokens", flag: "N", var: "SWARM_PLAN_ANSWER_TOKENS", file: yes,
                shape: Tokens, default: u64 = 8192, listed: 48,
            }
            /// The most tokens one answer of the built-in agent may take (max_tokens of each
            /// turn); an answer cut there is continued, 3 times in a row at most; 0 sends no cap
            /// [default: 4096].
            turn_answer_tokens: Option<u64> {
                key: "turn-answer-tokens", flag: "N", var: "SWARM_TURN_ANSWER_TOKENS", file: yes,
                shape: Tokens, default: u64 = 4096, listed: 49,
            }
            /// Once the run's tasks have used N tokens in all, start nothing new: running tasks
            /// finish and finished writers are merged, then the run stops, resumable (exit 75);
            /// resume it with a larger --budget-tokens [default: no budget].
            budget_tokens: Option<u64> {
                key: "budget-tokens", flag: "N", var: "SWARM_BUDGET_TOKENS", file: yes,
                shape: Tokens, listed: 9,
            }
            /// What the built-in agent's model costs, in dollars per million tokens:
            /// PROMPT,CACHED,ANSWER (prompt tokens, those of them the provider read from its
            /// cache, answer tokens; e.g. 2.5,1.25,10), or PROMPT,ANSWER when cached tokens cost
            /// the same. Its attempts' cost is then known: the report, `swarm show` and the JSON
            /// give it [default: none; the cost is unknown].
            price: Option<String> {
                key: "price", flag: "PRICES", var: "SWARM_PRICE", file: yes,
                shape: Text, check: price, listed: 50,
            }
            /// Let the built-in agent run PROGRAM (no shell; repeat for several).
            allow_program: Vec<String> {
                key: "allow-program", flag: "PROGRAM", var: "SWARM_ALLOW_PROGRAMS", file: yes,
                shape: Strings, listed: 10,
            }
            /// Stop an attempt after this long (e.g. 90s, 20m, 1h) [default: 30m].
            task_timeout: Option<String> {
                key: "task-timeout", flag: "DURATION", var: "SWARM_TASK_TIMEOUT", file: yes,
                shape: Duration, check: duration, default: &'static str = "30m", listed: 11,
            }
            /// Stop an attempt as hung when it writes nothing (stdout or stderr) for DURATION; it
            /// counts as a failed attempt, like a timeout. For agents that show progress as they go
            /// (codex --json, scripts that log); Claude's JSON output, for one, comes only at the
            /// end [default: off].
            stall_timeout: Option<String> {
                key: "stall-timeout", flag: "DURATION", var: "SWARM_STALL_TIMEOUT", file: yes,
                shape: Duration, check: duration, listed: 12,
            }
            /// How long a stopped attempt (a timeout, a hang, Ctrl-C) has between SIGTERM and
            /// SIGKILL to clean up; 0 kills at once [default: 2s].
            kill_grace: Option<String> {
                key: "kill-grace", flag: "DURATION", var: "SWARM_KILL_GRACE", file: yes,
                shape: Duration, check: wait, default: &'static str = "2s", listed: 13,
            }
            /// The most an attempt's transcript keeps of what it prints: a size like `64MiB`,
            /// `512k` or `1GiB`, in units of 1024; past it, the first and last parts are kept
            /// and the cut between them is marked.
            transcript_cap: Option<String> {
                key: "transcript-cap", flag: none, var: "SWARM_TRANSCRIPT_CAP", file: yes,
                shape: Size, check: transcript_cap,
                default: &'static str = DEFAULT_TRANSCRIPT_CAP, listed: 37,
            }
            /// Retry a failed attempt up to N times, with backoff [default: 1].
            retries: Option<u32> {
                key: "retries", flag: "N", var: "SWARM_RETRIES", file: yes,
                shape: Count, default: u32 = 1, listed: 14,
            }
            /// Verify each writer with CMD (run with `sh -c` in its checkout) before it is merged.
            check: Option<String> {
                key: "check", flag: "CMD", var: "SWARM_CHECK", file: yes, shape: Text, listed: 15,
            }
            /// Prepare each new writer's checkout with CMD (run with `sh -c` there before its agent
            /// starts, e.g. `npm ci`; its output and time go into the attempt's transcript); not
            /// again in a reused checkout whose lockfiles did not change. A failing setup stops the
            /// run, resumable (exit 75). The `.swarm.toml` keys `include`, `cache` and `cache-key`
            /// prepare checkouts further; every attempt gets its own TMPDIR and ports (SWARM_PORT,
            /// SWARM_PORTS).
            setup: Option<String> {
                key: "setup", flag: "CMD", var: "SWARM_SETUP", file: yes, shape: Text, listed: 22,
            }
            /// Files copied from the user's checkout into every new checkout and snapshot, never
            /// committed by swarm (paths in the repository).
            include: Vec<String> {
                key: "include", flag: none, var: "SWARM_INCLUDE", file: yes,
                shape: Strings, check: repo_paths, listed: 21,
            }
            /// Directories kept when a checkout is reused, and seeded into new ones (paths in the
            /// repository).
            cache: Vec<String> {
                key: "cache", flag: none, var: "SWARM_CACHE", file: yes,
                shape: Strings, check: repo_paths, listed: 24,
            }
            /// The files whose contents decide whether a cache fits (paths in the repository;
            /// unset: the lockfiles).
            cache_key: Vec<String> {
                key: "cache-key", flag: none, var: "SWARM_CACHE_KEY", file: yes,
                shape: Strings, check: repo_paths, listed: 25,
            }
            /// Test what is merged with CMD (run with `sh -c` on the integration tip after merges);
            /// only a passing tip lands.
            ///
            /// It runs in a checkout of its own, prepared as a writer's, taking a job slot; when
            /// merges come faster than it runs, one run tests the batch of them. A failing batch is
            /// bisected to the first merge that fails it, which is taken out, parked (exit 3) and
            /// its dependents skipped; the merges after it are merged again. A writer's dependents
            /// start once the gate passed on a tip holding it. A gate failing on the base stops the
            /// run (exit 2). See "The gate" in the manual.
            gate: Option<String> {
                key: "gate", flag: "CMD", var: "SWARM_GATE", file: yes, shape: Text, listed: 23,
            }
            /// Serve the run's live page while it runs, as `swarm web` does: its URL (with its
            /// token) is printed on stderr when the run starts, and the page goes when swarm exits.
            web: bool {
                key: "web", flag: switch, var: none, file: no, shape: Switch, listed: 31,
            }
            /// The form of the report --final-out writes: markdown, or html (one self-contained
            /// page with the task graph drawn and a timeline of the attempts) [default: by FILE's
            /// extension: html for .html and .htm, else markdown].
            report_format: Option<ReportFormat> {
                key: "report-format", flag: "FORMAT", var: none, file: no,
                shape: OneOf(ReportFormat), listed: 30,
            }
            /// Spread the run over machines through the git remote NAME (or URL): the run is
            /// published under refs/swarm/<run>/ there, `swarm worker --remote` on other machines
            /// runs its tasks, and this swarm merges their results and lands as a local run does.
            /// It runs no task itself unless --jobs says how many. See "Runs over many machines" in
            /// the manual.
            remote: Option<String> {
                key: "remote", flag: "NAME|URL", var: none, file: no, shape: Text, listed: 29,
            }
            /// Write the reducer's result and the run summary to FILE. With several goals: one
            /// section per goal (its reducer's result), then one run summary with the goal graph
            /// and the task graph.
            final_out: Option<PathBuf> {
                key: "final-out", flag: "FILE", var: none, file: no, shape: Path, listed: 26,
            }
            /// With several goals, also write one report per goal to DIR/<goal id>.md (its section
            /// and its tasks); DIR is created if needed.
            final_out_dir: Option<PathBuf> {
                key: "final-out-dir", flag: "DIR", var: none, file: no, shape: Path, listed: 27,
            }
            /// Start the run from REV [default: HEAD].
            base: Option<String> {
                key: "base", flag: "REV", var: none, file: no,
                shape: Text, default: &'static str = "HEAD", listed: 28,
            }
            /// What to do with the finished integration branch [default: auto].
            land: Option<Land> {
                key: "land", flag: "HOW", var: "SWARM_LAND", file: yes,
                shape: OneOf(Land), default: Land = Land::Auto, listed: 16,
            }
            /// Put task checkouts and snapshots under DIR [default: the user cache dir].
            worktree_dir: Option<PathBuf> {
                key: "worktree-dir", flag: "DIR", var: "SWARM_WORKTREE_DIR", file: yes,
                shape: Path, listed: 17,
            }
            /// Before parking a conflicting writer, give its agent one attempt at resolving the
            /// conflict (in a fresh checkout holding the conflicted merge; checked like any
            /// writer).
            resolve_conflicts: bool {
                key: "resolve-conflicts", flag: switch, var: "SWARM_RESOLVE_CONFLICTS", file: yes,
                shape: Switch, listed: 18,
            }
            /// Take a writer whose agent changed nothing (a Claude, Codex or ACP agent with no
            /// change, the built-in agent with no tool call) as done; without it the attempt fails
            /// with "the agent made no change" and is retried (a task may say
            /// `"may-be-empty": true`).
            allow_no_change: bool {
                key: "allow-no-change", flag: switch, var: "SWARM_ALLOW_NO_CHANGE", file: yes,
                shape: Switch, listed: 47,
            }
            /// Start every retry afresh. Without it, a retry after a timeout, a usage-limit pause,
            /// an interruption or a crash continues the Claude or Codex session of the attempt it
            /// follows, in the same checkout, so the work already paid for is not redone.
            fresh_retries: bool {
                key: "fresh-retries", flag: switch, var: "SWARM_FRESH_RETRIES", file: yes,
                shape: Switch, listed: 19,
            }
            /// Run CMD once per escalation (parked branch), with the details as JSON on stdin.
            on_escalate: Option<String> {
                key: "on-escalate", flag: "CMD", var: "SWARM_ON_ESCALATE", file: yes,
                shape: Text, listed: 20,
            }
            /// The most tasks one task may spawn.
            max_children: Option<u32> {
                key: "max-children", flag: none, var: "SWARM_MAX_CHILDREN", file: yes,
                shape: Count, default: u32 = 50, listed: 32,
            }
            /// The most levels of spawning below the plan's tasks.
            max_depth: Option<u32> {
                key: "max-depth", flag: none, var: "SWARM_MAX_DEPTH", file: yes,
                shape: Count, default: u32 = 3, listed: 33,
            }
            /// The most tasks spawned in one run.
            max_spawned: Option<u32> {
                key: "max-spawned", flag: none, var: "SWARM_MAX_SPAWNED", file: yes,
                shape: Count, default: u32 = 500, listed: 34,
            }
            /// The most tasks spawned in any minute.
            spawns_per_minute: Option<u32> {
                key: "spawns-per-minute", flag: none, var: "SWARM_SPAWNS_PER_MINUTE", file: yes,
                shape: Count, default: u32 = 120, listed: 35,
            }
            /// Which tasks may add tasks while they run: those whose `spawn` allows it, up to what
            /// it allows (plan), none (off), or every task within the run's limits (all)
            /// [default: plan].
            spawning: Option<Spawning> {
                key: "spawning", flag: "WHICH", var: "SWARM_SPAWNING", file: yes,
                shape: OneOf(Spawning), default: Spawning = Spawning::Plan, listed: 36,
            }
            /// Confine every process of a task by the kernel (Landlock): it writes only its
            /// checkout, its TMPDIR and what its profile declares, and reads none of your secret
            /// stores (auto: where the kernel can; require: or nothing runs; off) [default: auto].
            confine: Option<Confine> {
                key: "confine", flag: "WHEN", var: "SWARM_CONFINE", file: yes,
                shape: OneOf(Confine), default: Confine = Confine::Auto, listed: 38,
            }
            /// Paths no confined task reads, besides the secret stores (`~/` for your home).
            read_deny: Vec<String> {
                key: "read-deny", flag: none, var: "SWARM_READ_DENY", file: yes,
                shape: Strings, check: machine_paths, listed: 39,
            }
            /// Paths confined tasks may read although they are denied (a secret store, say).
            read_allow: Vec<String> {
                key: "read-allow", flag: none, var: "SWARM_READ_ALLOW", file: yes,
                shape: Strings, check: machine_paths, listed: 40,
            }
            /// Paths confined tasks may write besides their checkout, TMPDIR and what their
            /// agent's profile declares (a shared build cache, say).
            write_allow: Vec<String> {
                key: "write-allow", flag: none, var: "SWARM_WRITE_ALLOW", file: yes,
                shape: Strings, check: machine_paths, listed: 41,
            }
            /// The TCP connections confined tasks may make: any (open), or only to the model
            /// endpoint's port and the task's own ports (endpoint).
            confine_net: Option<ConfineNet> {
                key: "confine-net", flag: none, var: "SWARM_CONFINE_NET", file: yes,
                shape: OneOf(ConfineNet), default: ConfineNet = ConfineNet::Open, listed: 42,
            }
            /// The rungs a conflicting writer's merge climbs after git's merge, in order, each
            /// once, before it is parked: a syntax-aware merge with mergiraf (structural) and its
            /// agent's one attempt at resolving it (resolve) [default: structural, and resolve
            /// with --resolve-conflicts].
            conflicts: Vec<String> {
                key: "conflicts", flag: none, var: "SWARM_CONFLICTS", file: yes,
                shape: Strings, check: rungs, listed: 43,
            }
            /// While writers run, compare their changes with each other's and the integration
            /// tip's and say where a merge would conflict (watch), also telling the later
            /// writer's agent (tell), or not (off) [default: watch].
            forecast: Option<Forecast> {
                key: "forecast", flag: none, var: "SWARM_FORECAST", file: yes,
                shape: OneOf(Forecast), default: Forecast = Forecast::Watch, listed: 45,
            }
            /// How often running writers' changes are compared [default: 30s].
            forecast_interval: Option<String> {
                key: "forecast-interval", flag: none, var: "SWARM_FORECAST_INTERVAL", file: yes,
                shape: Duration, check: duration, default: &'static str = "30s", listed: 46,
            }
            /// How the run's result reaches you: landed on your branch as --land says (land), kept on
            /// its branch (branch), or pushed to the remote and opened as one pull request (pr), one
            /// per merged writer (pr-per-task) or stacked along the chains of writers (stack)
            /// [default: land].
            deliver: Option<Deliver> {
                key: "deliver", flag: "HOW", var: "SWARM_DELIVER", file: yes,
                shape: OneOf(Deliver), default: Deliver = Deliver::Land, listed: 51,
            }
            /// The remote that pull requests' branches are pushed to, a remote's name or a URL; its
            /// URL (as written, before any insteadOf) tells the forge [default: origin].
            deliver_remote: Option<String> {
                key: "deliver-remote", flag: "REMOTE", var: "SWARM_DELIVER_REMOTE", file: yes,
                shape: Text, default: &'static str = "origin", listed: 52,
            }
            /// The forge of the delivery remote, where its host does not say (github or gitlab).
            forge: Option<ForgeKind> {
                key: "forge", flag: none, var: "SWARM_FORGE", file: yes,
                shape: OneOf(ForgeKind), listed: 53,
            }
            /// The name of the pull requests' branch on the remote; a task's is NAME-<task id>
            /// [default: swarm/ and the task file's name, or the goal's first words].
            pr_branch: Option<String> {
                key: "pr-branch", flag: "NAME", var: "SWARM_PR_BRANCH", file: yes,
                shape: Text, listed: 54,
            }
            /// The title of each pull request: {title} is the run's (the goal, or the task file's
            /// name) or the task's (its id and first line), {run} the run's id, {task} the task's id
            /// [default: {title}].
            pr_title: Option<String> {
                key: "pr-title", flag: none, var: "SWARM_PR_TITLE", file: yes,
                shape: Text, default: &'static str = "{title}", listed: 55,
            }
            /// Open pull requests as drafts.
            pr_draft: bool {
                key: "pr-draft", flag: switch, var: "SWARM_PR_DRAFT", file: yes,
                shape: Switch, listed: 56,
            }
            /// Labels put on each pull request swarm opens.
            pr_labels: Vec<String> {
                key: "pr-labels", flag: none, var: "SWARM_PR_LABELS", file: yes,
                shape: Strings, listed: 57,
            }
            /// Reviewers asked on each pull request swarm opens (logins, or GitLab usernames).
            pr_reviewers: Vec<String> {
                key: "pr-reviewers", flag: none, var: "SWARM_PR_REVIEWERS", file: yes,
                shape: Strings, listed: 58,
            }
            /// Plan without the repository's memory: no past goal is recalled for the planner,
            /// and what this run's goals come to is not kept (SWARM_RECALL=0 does the same).
            no_memory: bool {
                key: "no-memory", flag: switch, var: "SWARM_NO_MEMORY", file: yes,
                shape: Switch, listed: 59,
            }
            /// How a finished goal's run teaches lessons: from the checks that failed and the
            /// merges that conflicted (checks), or as well by one short call to the planner's
            /// model, which spends tokens on every finished run (model) [default: checks].
            lessons: Option<Lessons> {
                key: "lessons", flag: "HOW", var: "SWARM_LESSONS", file: yes,
                shape: OneOf(Lessons), default: Lessons = Lessons::Checks, listed: 60,
            }
            /// Run every writer of the plan (and of goals planned during the run) as N candidates
            /// side by side, merging the one --select picks; a task's own "candidates" wins
            /// [default: 1].
            candidates: Option<u32> {
                key: "candidates", flag: "N", var: "SWARM_CANDIDATES", file: yes,
                shape: Count, check: candidates, default: u32 = 1, listed: 61,
            }
            /// How a task with candidates picks the one it merges, when the task does not say
            /// [default: smallest-green].
            select: Option<Pick> {
                key: "select", flag: "RULE", var: "SWARM_SELECT", file: yes,
                shape: OneOf(Pick), default: Pick = Pick::SmallestGreen, listed: 62,
            }
            /// The syntax-aware merge program of the structural rung [default: mergiraf, found on
            /// PATH].
            mergiraf: Option<PathBuf> {
                key: "mergiraf", flag: none, var: "SWARM_MERGIRAF", file: yes,
                shape: Path, listed: 44,
            }
            /// Export the run as an OpenTelemetry trace over OTLP/HTTP, to the collector the
            /// OTEL_EXPORTER_OTLP_* variables name or to http://localhost:4318; without it, a run
            /// is exported when one of those variables names an endpoint. See "Traces" in the
            /// manual.
            otel: bool {
                key: "otel", flag: switch, var: "SWARM_OTEL", file: yes,
                shape: Switch, listed: 63,
            }
        }
    };
}
pub(crate) use run_options;

/// Makes, from the table, the options and everything of config that is per key.
macro_rules! declare {
    ($(
        $(#[doc = $doc:literal])*
        $field:ident: $ty:ty {
            key: $key:literal, flag: $flag:tt, $(short: $short:literal,)? var: $var:tt,
            file: $file:ident, shape: $shape:ident $(($choice:ty))?, $(check: $check:path,)?
            $(default: $default_ty:ty = $default:expr,)? $(follows: $follows:literal,)?
            listed: $listed:literal,
        }
    )*) => {
        /// A run's options; `None` (empty, false) is unset: a lower layer or the default applies.
        ///
        /// The serde names (the fields' names) are the stored format (see `record`): renaming a
        /// flag or a config key does not change what the board holds.
        #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(default)]
        pub(crate) struct Options {
            $(pub(crate) $field: $ty,)*
        }

        /// The defaults of the options that have one, for the code that uses them: the same
        /// values `swarm config` shows.
        pub(crate) enum Defaults {}

        impl Defaults {
            $($(
                pub(crate) fn $field() -> $default_ty {
                    $default
                }
            )?)*
        }

        /// The run options and profiles of one config file, with the keys it sets. A key that
        /// files may not set is refused by the checks before this is read.
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub(super) struct FileOptions {
            $(
                #[serde(rename = $key)]
                $field: Option<$ty>,
            )*
            #[serde(default)]
            agents: BTreeMap<String, ProfileSpec>,
            #[serde(default)]
            pools: BTreeMap<String, PoolSpec>,
        }

        impl FileOptions {
            /// The options the file sets, its profiles and its pools.
            pub(super) fn into_parts(
                self,
            ) -> (
                Options,
                BTreeMap<String, ProfileSpec>,
                BTreeMap<String, PoolSpec>,
            ) {
                let mut options = Options::default();
                $(
                    if let Some(value) = self.$field {
                        options.$field = value;
                    }
                )*
                (options, self.agents, self.pools)
            }
        }

        /// Every option's declaration, in the table's order; [`Key`] is an index into it.
        pub(super) const SPECS: &[Spec] = &[$(
            Spec {
                name: $key,
                var: or_none!(var $var),
                in_files: in_files!($file),
                shape: Shape::$shape $((<$choice as Choice>::WORDS))?,
                listed: $listed,
                follows: or_none!($($follows)?),
                default: or_none!($(|| json::<$default_ty>(&Defaults::$field()))?),
                is_set: |o| Setting::is_set(&o.$field),
                copy: |from, to| to.$field.clone_from(&from.$field),
                parse: |text, o| {
                    o.$field = Setting::from_var(text)?;
                    Ok(())
                },
                check: checked!($field $(, $check)?),
                resolve_paths: |o, resolve| o.$field.resolve_paths(resolve),
                value: |o| json(&o.$field),
            },
        )*];
    };
}

/// `None`, or `Some` of what is given; `var none` is `None` too.
macro_rules! or_none {
    () => {
        None
    };
    (var none) => {
        None
    };
    (var $var:literal) => {
        Some($var)
    };
    ($($value:tt)+) => {
        Some($($value)+)
    };
}

/// `file: yes` or `file: no`, as a bool.
macro_rules! in_files {
    (yes) => {
        true
    };
    (no) => {
        false
    };
}

/// An option's check: its shape alone, or `check` too.
macro_rules! checked {
    ($field:ident) => {
        |_| Ok(())
    };
    ($field:ident, $check:path) => {
        |o| Setting::check(&o.$field, |value| $check(value))
    };
}

run_options!(declare);

/// A value as JSON: JSON scalars and arrays of strings are also TOML, so `swarm config` shows
/// them as they would be written in a file.
fn json<T: Serialize + ?Sized>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or_default()
}

/// `base` with every option `newer` sets replaced by `newer`'s value: a resume's flags over the
/// options the run was started with.
pub(crate) fn overlay(mut base: Options, newer: &Options) -> Options {
    for key in Key::ALL.into_iter().filter(|k| k.is_set(newer)) {
        key.copy(newer, &mut base);
    }
    base
}
