//! A run exported as an OpenTelemetry trace (`crate::trace`): its variables checked before a
//! run starts, the export started with the run (or its resume) and handed every line of its
//! event log and every attempt's figures as the board records them, told who runs what once
//! the run's settings are known, and ended with the run, saying once if spans were lost.

use std::collections::HashMap;

use crate::config::Options;
use crate::plan::Plan;
use crate::schedule::Settings;
use crate::store::Board;
use crate::trace::{AgentInfo, Agents, Asked, Config, Figures, Tracer, agent_info};
use crate::ui;

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

fn asked(options: &Options) -> Asked {
    if options.otel {
        Asked::Yes
    } else {
        Asked::IfSet
    }
}

/// Refuses bad values of the `OTEL_*` variables (exit 2), before anything runs.
pub(super) fn check(options: &Options) -> anyhow::Result<()> {
    Config::from_env(&env, asked(options))?;
    Ok(())
}

/// The export of run `run`'s trace, when it is asked for: `board`'s events and attempts'
/// ends go to it from now on.
pub(super) fn start(
    board: &mut Board,
    run: &str,
    options: &Options,
) -> anyhow::Result<Option<Tracer>> {
    let Some(config) = Config::from_env(&env, asked(options))? else {
        return Ok(None);
    };
    let tracer = Tracer::start(config, run, lost_root(board, run)?)?;
    let feed = tracer.feed();
    board.echo_events(Box::new(move |line| feed.line(line)));
    let feed = tracer.feed();
    board.tell_attempt_ends(Box::new(move |task, number, end| {
        feed.figures(
            task,
            number,
            Figures {
                outcome: end.outcome.to_owned(),
                tokens: end.tokens,
                prompt_tokens: end.prompt_tokens,
                cached_tokens: end.cached_tokens,
                cost: end.cost,
            },
        );
    }));
    Ok(Some(tracer))
}

/// When run `run` was made, if no swarm that ran it before ended it with its record of an end
/// (each was killed): none of them sent the run's own span, so this one does. `None` for a
/// run that starts now, or one a swarm before ended (that swarm sent it).
fn lost_root(board: &Board, run: &str) -> anyhow::Result<Option<i64>> {
    // (A run that starts now is not on the board yet.)
    let ended = board
        .history()
        .time_marks(run)?
        .iter()
        .any(|(_, m)| matches!(m, crate::store::TimeMark::Ended));
    let killed_before = !ended && board.history().last_event_at(run)?.is_some();
    Ok(match (killed_before, board.load_run(run)?) {
        (true, Some(record)) => Some(record.created_at),
        _ => None,
    })
}

/// Tells the trace who runs `plan`'s tasks and plans, as `settings` say (each attempt's
/// agent is told as it starts; this is for what is not).
pub(super) fn know(tracer: &Tracer, plan: &Plan, settings: &Settings) {
    let llm = settings.llm.as_ref();
    let members: HashMap<String, AgentInfo> = settings
        .named_agents
        .iter()
        .map(|(name, agent)| (name.clone(), agent_info(Some(name), agent, llm)))
        .collect();
    let tasks = plan
        .tasks
        .iter()
        .filter_map(|t| {
            let name = t.agent.as_deref()?;
            let agent = settings.agent_for(Some(name))?;
            Some((t.id.to_string(), agent_info(Some(name), &agent, llm)))
        })
        .collect();
    tracer.feed().know(Agents {
        run: settings.agent.as_ref().map(|a| agent_info(None, a, llm)),
        tasks,
        members,
        planner: llm.map(|c| AgentInfo {
            name: "swarm".to_owned(),
            provider: Some("openai".to_owned()),
            model: Some(c.model().to_owned()),
            ..AgentInfo::default()
        }),
    });
}

/// Tells the trace the model that plans, before its planning span ends.
pub(super) fn planner(tracer: &Tracer, client: &crate::llm::Client) {
    tracer.feed().know(Agents {
        planner: Some(AgentInfo {
            name: "swarm".to_owned(),
            provider: Some("openai".to_owned()),
            model: Some(client.model().to_owned()),
            ..AgentInfo::default()
        }),
        ..Agents::default()
    });
}

/// Ends the trace, waiting a short while for its last spans; says once if spans were lost.
pub(super) fn finish(tracer: Tracer, quiet: bool) {
    if let Some(why) = tracer.finish() {
        ui::say(
            quiet,
            ui::Verb::Note,
            &format!(
                "the run's trace is incomplete at the collector: {why}; the run went on without it"
            ),
        );
    }
}
