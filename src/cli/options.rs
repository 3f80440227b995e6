//! A run's options as flags, and their conversion into `config::Options`.
#![expect(
    clippy::doc_markdown,
    reason = "doc comments here are --help text for users, not rustdoc"
)]

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use clap_complete::engine::ArgValueCandidates;

/// Options of a run. Unset options come from the run being resumed, then from the defaults.
#[derive(Debug, Clone, Default, Args)]
pub struct RunOptions {
    /// Run at most N tasks at once [default: 4].
    #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: Option<u32>,

    /// Run at most N writers at once [default: the value of --jobs].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub max_writers: Option<u32>,

    /// The agent for prompt tasks: auto, openai (built in), claude, codex, a profile from the
    /// configuration, exec:CMD (CMD run with `sh -c`, prompt on stdin, result on stdout), or
    /// acp:CMD (CMD run with `sh -c`, spoken to in the Agent Client Protocol), or pool:NAME
    /// (each attempt to the member of `[pools.NAME]` with room) [default: auto].
    #[arg(long, value_name = "NAME", add = ArgValueCandidates::new(crate::complete::agents))]
    pub agent: Option<String>,

    /// The model of the built-in agent and the planner (else SWARM_MODEL) [default: gpt-4o-mini].
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,

    /// The OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 (else SWARM_API_BASE,
    /// OPENAI_BASE_URL) [default: https://api.openai.com/v1]. The key comes from SWARM_API_KEY or
    /// OPENAI_API_KEY only.
    #[arg(long, value_name = "URL")]
    pub api_base: Option<String>,

    /// Give up on a model request that has not answered after this long, and retry it
    /// [default: 5m].
    #[arg(long, value_name = "DURATION")]
    pub request_timeout: Option<String>,

    /// When the model endpoint stops answering (connections refused or timing out, several in
    /// a row): how long new attempts wait while swarm checks it every few seconds, before the
    /// run stops, resumable (exit 75); 0 stops at once [default: 5m].
    #[arg(long, value_name = "DURATION")]
    pub endpoint_wait: Option<String>,

    /// The built-in agent's cap on model turns per attempt [default: 40].
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,

    /// The built-in agent's cap on tokens per attempt [default: 400000].
    #[arg(long, value_name = "N")]
    pub max_task_tokens: Option<u64>,

    /// Once the run's tasks have used N tokens in all, start nothing new: running tasks finish
    /// and finished writers are merged, then the run stops, resumable (exit 75); resume it
    /// with a larger --budget-tokens [default: no budget].
    #[arg(long, value_name = "N")]
    pub budget_tokens: Option<u64>,

    /// Let the built-in agent run PROGRAM (no shell; repeat for several).
    #[arg(long, value_name = "PROGRAM")]
    pub allow_program: Vec<String>,

    /// Stop an attempt after this long (e.g. 90s, 20m, 1h) [default: 30m].
    #[arg(long, value_name = "DURATION")]
    pub task_timeout: Option<String>,

    /// Stop an attempt as hung when it writes nothing (stdout or stderr) for DURATION; it
    /// counts as a failed attempt, like a timeout. For agents that show progress as they go
    /// (codex --json, scripts that log); Claude's JSON output, for one, comes only at the end
    /// [default: off].
    #[arg(long, value_name = "DURATION")]
    pub stall_timeout: Option<String>,

    /// How long a stopped attempt (a timeout, a hang, Ctrl-C) has between SIGTERM and SIGKILL
    /// to clean up; 0 kills at once [default: 2s].
    #[arg(long, value_name = "DURATION")]
    pub kill_grace: Option<String>,

    /// Retry a failed attempt up to N times, with backoff [default: 1].
    #[arg(long, value_name = "N")]
    pub retries: Option<u32>,

    /// Verify each writer with CMD (run with `sh -c` in its checkout) before it is merged.
    #[arg(long, value_name = "CMD")]
    pub check: Option<String>,

    /// Prepare each new writer's checkout with CMD (run with `sh -c` there before its agent
    /// starts, e.g. `npm ci`; its output and time go into the attempt's transcript); not again
    /// in a reused checkout whose lockfiles did not change. A failing setup stops the run,
    /// resumable (exit 75). The `.swarm.toml` keys `include`, `cache` and `cache-key` prepare
    /// checkouts further; every attempt gets its own TMPDIR and ports (SWARM_PORT, SWARM_PORTS).
    #[arg(long, value_name = "CMD")]
    pub setup: Option<String>,

    /// Test what is merged with CMD (run with `sh -c` on the integration tip after merges);
    /// only a passing tip lands.
    ///
    /// It runs in a checkout of its own, prepared as a writer's, taking a job slot; when merges
    /// come faster than it runs, one run tests the batch of them. A failing batch is bisected
    /// to the first merge that fails it, which is taken out, parked (exit 3) and its dependents
    /// skipped; the merges after it are merged again. A writer's dependents start once the
    /// gate passed on a tip holding it. A gate failing on the base stops the run (exit 2). See
    /// "The gate" in the README.
    #[arg(long, value_name = "CMD")]
    pub gate: Option<String>,

    /// Serve the run's live page while it runs, as `swarm web` does: its URL (with its token)
    /// is printed on stderr when the run starts, and the page goes when swarm exits.
    #[arg(long)]
    pub web: bool,

    /// The form of the report --final-out writes: markdown, or html (one self-contained page
    /// with the task graph drawn and a timeline of the attempts) [default: by FILE's
    /// extension: html for .html and .htm, else markdown].
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub report_format: Option<ReportFormat>,

    /// Spread the run over machines through the git remote NAME (or URL): the run is published
    /// under refs/swarm/<run>/ there, `swarm worker --remote` on other machines runs its tasks,
    /// and this swarm merges their results and lands as a local run does. It runs no task
    /// itself unless --jobs says how many. See "Runs over many machines" in the README.
    #[arg(long, value_name = "NAME|URL")]
    pub remote: Option<String>,

    /// Write the reducer's result and the run summary to FILE. With several goals: one
    /// section per goal (its reducer's result), then one run summary with the goal graph and
    /// the task graph.
    #[arg(long, value_name = "FILE")]
    pub final_out: Option<PathBuf>,

    /// With several goals, also write one report per goal to DIR/<goal id>.md (its section
    /// and its tasks); DIR is created if needed.
    #[arg(long, value_name = "DIR")]
    pub final_out_dir: Option<PathBuf>,

    /// Start the run from REV [default: HEAD].
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,

    /// What to do with the finished integration branch [default: auto].
    #[arg(long, value_enum, value_name = "HOW")]
    pub land: Option<Land>,

    /// Put task checkouts and snapshots under DIR [default: the user cache dir].
    #[arg(long, value_name = "DIR")]
    pub worktree_dir: Option<PathBuf>,

    /// Before parking a conflicting writer, give its agent one attempt at resolving the conflict
    /// (in a fresh checkout holding the conflicted merge; checked like any writer).
    #[arg(long)]
    pub resolve_conflicts: bool,

    /// Start every retry afresh. Without it, a retry after a timeout, a usage-limit pause, an
    /// interruption or a crash continues the Claude or Codex session of the attempt it follows,
    /// in the same checkout, so the work already paid for is not redone.
    #[arg(long)]
    pub fresh_retries: bool,

    /// Run CMD once per escalation (parked branch), with the details as JSON on stdin.
    #[arg(long, value_name = "CMD")]
    pub on_escalate: Option<String>,

    /// Which tasks may add tasks while they run: those whose `spawn` allows it, up to what
    /// it allows (plan), none (off), or every task within the run's limits (all)
    /// [default: plan].
    #[arg(long, value_enum, value_name = "WHICH")]
    pub spawning: Option<Spawning>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Spawning {
    /// No task adds tasks, whatever the plan says.
    Off,
    /// The tasks whose `spawn` allows it, up to what it allows.
    Plan,
    /// Every task, within max-children, max-depth, max-spawned and spawns-per-minute.
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Markdown,
    Html,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Land {
    /// Fast-forward the user's branch when it is clean and still at the base; else keep the branch.
    Auto,
    /// Always keep the integration branch and say how to take it.
    Branch,
    /// Keep the integration branch and say nothing about it.
    None,
}

/// The flags as swarm's own options: the one place flags become configuration, so a flag's
/// name is free to change without touching config files or what the board stores. A flag that
/// is left out here fails `every_run_flag_reaches_the_options`.
impl From<RunOptions> for crate::config::Options {
    fn from(flags: RunOptions) -> Self {
        Self {
            jobs: flags.jobs,
            max_writers: flags.max_writers,
            agent: flags.agent,
            model: flags.model,
            api_base: flags.api_base,
            request_timeout: flags.request_timeout,
            endpoint_wait: flags.endpoint_wait,
            max_turns: flags.max_turns,
            max_task_tokens: flags.max_task_tokens,
            budget_tokens: flags.budget_tokens,
            allow_program: flags.allow_program,
            task_timeout: flags.task_timeout,
            stall_timeout: flags.stall_timeout,
            kill_grace: flags.kill_grace,
            retries: flags.retries,
            check: flags.check,
            final_out: flags.final_out,
            final_out_dir: flags.final_out_dir,
            base: flags.base,
            land: flags.land.map(|land| match land {
                Land::Auto => crate::config::Land::Auto,
                Land::Branch => crate::config::Land::Branch,
                Land::None => crate::config::Land::None,
            }),
            worktree_dir: flags.worktree_dir,
            resolve_conflicts: flags.resolve_conflicts,
            fresh_retries: flags.fresh_retries,
            on_escalate: flags.on_escalate,
            setup: flags.setup,
            gate: flags.gate,
            remote: flags.remote,
            web: flags.web,
            report_format: flags.report_format.map(|f| match f {
                ReportFormat::Markdown => crate::config::ReportFormat::Markdown,
                ReportFormat::Html => crate::config::ReportFormat::Html,
            }),
            // Lists of paths of the repository: `.swarm.toml` keys, not flags.
            include: Vec::new(),
            cache: Vec::new(),
            cache_key: Vec::new(),
            // Limits on spawning: configuration, not flags.
            max_children: None,
            max_depth: None,
            max_spawned: None,
            spawns_per_minute: None,
            // What transcripts keep: configuration, not a flag.
            transcript_cap: None,
            spawning: flags.spawning.map(|s| match s {
                Spawning::Off => crate::config::Spawning::Off,
                Spawning::Plan => crate::config::Spawning::Plan,
                Spawning::All => crate::config::Spawning::All,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::{Args as _, FromArgMatches as _, Parser as _};

    use crate::cli::{Cli, Command, RunOptions};
    use crate::config::{Land, Options};

    #[test]
    fn flags_become_the_options_they_name() {
        let cli = Cli::try_parse_from([
            "swarm",
            "run",
            "t.jsonl",
            "-j",
            "3",
            "--land",
            "none",
            "--allow-program",
            "cargo",
            "--resolve-conflicts",
            "--final-out",
            "out.md",
            "--base",
            "main",
        ])
        .unwrap();
        let Some(Command::Run { options, .. }) = cli.command else {
            panic!("not a run: {:?}", cli.command);
        };
        let expected = Options {
            jobs: Some(3),
            land: Some(Land::None),
            allow_program: vec!["cargo".into()],
            resolve_conflicts: true,
            final_out: Some("out.md".into()),
            base: Some("main".into()),
            ..Options::default()
        };
        assert_eq!(Options::from(options), expected);
        assert_eq!(Options::from(RunOptions::default()), Options::default());
    }

    #[test]
    fn every_run_flag_reaches_the_options() {
        let command = RunOptions::augment_args(clap::Command::new("swarm"));
        for arg in command.get_arguments() {
            let flag = format!("--{}", arg.get_long().unwrap());
            let mut line = vec!["swarm".to_owned(), flag.clone()];
            if arg.get_action().takes_values() {
                let value = arg
                    .get_possible_values()
                    .first()
                    .map(|v| v.get_name().to_owned());
                line.push(value.unwrap_or_else(|| "1".to_owned()));
            }
            let matches = command.clone().try_get_matches_from(&line).unwrap();
            let flags = RunOptions::from_arg_matches(&matches).unwrap();
            assert_ne!(Options::from(flags), Options::default(), "{flag}");
        }
    }
}
