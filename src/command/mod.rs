//! The subcommands: each gathers its inputs, then hands the work to plan, schedule, git, store
//! and report, and returns the exit code. This file is the dispatch, which subcommand runs what;
//! what they share is in `context`.

use std::path::PathBuf;

use anyhow::{Context as _, bail};

use crate::cli::{Cli, Command, MemoryAction, QueueAction};
use crate::config::Options;
use crate::error::{Usage, exit};
use crate::git::Repo;
use crate::ui;

mod ci;
mod context;
mod deliver;
mod drop;
mod facts;
mod gc;
mod goal;
mod inspect;
mod layout;
mod memory;
mod mirror;
mod output;
mod pools;
mod queue;
mod reason;
mod resume;
mod retry;
mod run;
mod runs;
mod settings;
mod show;
mod steer;
mod stored;
mod trace;
mod tui;
mod web;
mod worker;

use context::Globals;
use gc::gc;
use inspect::{graph, logs, status};
use resume::resume;
use run::run_file;
use settings::{CONFIG_SHOW_HINT, configure, in_hook, land_from_hook, load_config};

pub fn dispatch(cli: Cli) -> anyhow::Result<u8> {
    let dir = match &cli.directory {
        Some(d) => d.clone(),
        None => std::env::current_dir().context("could not read the current directory")?,
    };
    // SQLite's words for a full disk name no file: the board's path is the repository's.
    dispatch_in(cli, dir.clone()).map_err(|e| {
        if !crate::store::is_full(&e) {
            return e;
        }
        match Repo::discover(&dir) {
            Ok(repo) => crate::store::name_full_board(
                e,
                &crate::store::board_path(&repo.common_dir().join("swarm")),
            ),
            Err(_) => e,
        }
    })
}

fn dispatch_in(cli: Cli, dir: PathBuf) -> anyhow::Result<u8> {
    let g = Globals {
        dir,
        quiet: cli.quiet,
        json: cli.json,
        progress: match cli.progress {
            crate::cli::ProgressHow::Auto => ui::Progress::Auto,
            crate::cli::ProgressHow::Plain => ui::Progress::Plain,
            crate::cli::ProgressHow::Json => ui::Progress::Json,
        },
    };
    let explicit = cli.config.as_deref();
    let flags = Options::from(cli.options);
    if cli.command.is_some()
        && (!cli.goal.is_empty()
            || cli.goals_file.is_some()
            || cli.plan_out.is_some()
            || cli.plan.is_some()
            || cli.plan_only
            || cli.yes
            || flags != Options::default())
    {
        bail!(Usage::new(
            "--goal, --plan, --plan-out, --plan-only, --yes and run options go without a subcommand; a subcommand's options go after it"
        )
        .hint("e.g. `swarm run tasks.jsonl -j 8`, or `swarm --goal \"…\" -j 8`"));
    }
    let Some(command) = cli.command else {
        let mut goals = cli.goal;
        if let Some(file) = &cli.goals_file {
            goals.extend(goal::read_goals_file(&g.dir.join(file))?);
        }
        let goals: Vec<String> = goals
            .iter()
            .map(|text| goal::without_secrets(&g, text))
            .collect();
        let mut configured = configure(&g, &flags, explicit)?;
        land_from_hook(&mut configured.options, cli.from_hook);
        if let [one] = goals.as_slice()
            && cli.goals_file.is_none()
        {
            let asked = goal::Question::unless(cli.yes || in_hook(cli.from_hook));
            let given = cli.plan.as_deref().map(|f| g.dir.join(f));
            let output = goal::PlanOutput {
                file: cli.plan_out.as_deref(),
                only: cli.plan_only,
                given: given.as_deref(),
            };
            return goal::run_goal(&g, one, output, asked, &configured);
        }
        if cli.plan_out.is_some() || cli.plan_only || cli.plan.is_some() {
            bail!(Usage::new("--plan, --plan-out and --plan-only take one goal").hint(
                "with several goals, a goal that needs others is planned only once they are merged"
            ));
        }
        return goal::run_goals(&g, &goals, false, &configured);
    };
    match command {
        Command::Run { tasks, options } => {
            let mut configured = configure(&g, &options.into(), explicit)?;
            land_from_hook(&mut configured.options, cli.from_hook);
            run_file(&g, &tasks, &configured)
        }
        Command::Resume { run, yes, options } => {
            // A run keeps the options it started with; only the profiles are read anew.
            let configured = configure(&g, &Options::default(), explicit)?;
            let asked = goal::Question::unless(yes || in_hook(cli.from_hook));
            resume(
                &g,
                run.as_deref(),
                &options.into(),
                &configured.profiles,
                asked,
            )
        }
        Command::Retry { task, run, options } => {
            // A run keeps the options it started with; only the profiles are read anew.
            let configured = configure(&g, &Options::default(), explicit)?;
            retry::retry(&g, &task, run.as_deref(), &options.into(), &configured)
        }
        Command::Steer { task, message, run } => steer::steer(&g, &task, &message, run.as_deref()),
        Command::Drop { run, yes } => drop::drop_run(&g, run.as_deref(), yes),
        Command::Config { options } => {
            let config = load_config(&g, &options.into(), explicit, CONFIG_SHOW_HINT)?;
            let in_force = settings::confine_setting(&config.options).in_force();
            if g.json {
                let mut shown = crate::config::to_json(&config);
                shown["confinement"] = in_force.to_json();
                ui::out(&serde_json::to_string_pretty(&shown)?)?;
            } else {
                ui::out(&format!(
                    "{}# confinement in force here: {in_force}\n",
                    crate::config::describe(&config)
                ))?;
            }
            Ok(exit::OK)
        }
        Command::Status { run } => status(&g, run.as_deref()),
        Command::Runs => runs::runs(&g),
        Command::Show { task, run } => show::show(&g, &task, run.as_deref()),
        Command::Logs {
            run,
            errors,
            tail,
            follow,
            path,
        } => logs(&g, run.as_deref(), errors, tail, follow, path),
        Command::Graph { source, format } => graph(&g, source.as_deref(), format),
        Command::Gc { dry_run, remote } => gc(&g, dry_run, remote.as_deref()),
        Command::Web { run, bind, port } => {
            if g.json {
                bail!(
                    Usage::new("swarm web has no JSON output")
                        .hint("the page's own /state and /task answers are JSON")
                );
            }
            web::web(&g, run.as_deref(), &bind, port)
        }
        Command::Worker {
            remote,
            run,
            jobs,
            wait,
            lease,
        } => {
            if g.json {
                bail!(
                    Usage::new("swarm worker has no JSON output")
                        .hint("`--progress json` prints its events as JSON lines on stderr")
                );
            }
            let configured = configure(&g, &Options::default(), explicit)?;
            let asked = worker::Asked {
                remote: &remote,
                run: run.as_deref(),
                jobs,
                wait: &wait,
                lease: &lease,
            };
            worker::worker(&g, &asked, &configured.profiles)
        }
        Command::Tui => tui::tui(&g, explicit),
        Command::Memory { action } => memory::memory(
            &g,
            &match action {
                MemoryAction::List => memory::MemoryCommand::List,
                MemoryAction::Show { id } => memory::MemoryCommand::Show(id),
                MemoryAction::Forget { id, .. } => memory::MemoryCommand::Forget(id),
                MemoryAction::Curate => memory::MemoryCommand::Curate,
            },
        ),
        Command::Queue { action } => match action {
            QueueAction::Add { text } => queue::add(&g, &text.join(" ")),
            QueueAction::List => queue::list(&g),
            QueueAction::Rm { id } => queue::remove(&g, id),
            QueueAction::Run { options } => {
                let mut configured = configure(&g, &(*options).into(), explicit)?;
                land_from_hook(&mut configured.options, cli.from_hook);
                queue::run(&g, &configured)
            }
        },
        Command::Completions { shell } => {
            if g.json {
                bail!(
                    Usage::new("swarm completions has no JSON output")
                        .hint(format!("`swarm completions {shell}` prints the script"))
                );
            }
            ui::out(&String::from_utf8(crate::complete::script(shell)?)?)?;
            Ok(exit::OK)
        }
        Command::Ci {
            target,
            workers,
            out,
            force,
            plan,
            install,
            remote,
        } => ci::ci(
            &g,
            ci::Asked {
                target,
                workers,
                out,
                force,
                plan,
                install,
                remote,
            },
        ),
    }
}
