//! A run mirrored to Telegram chats (`crate::mirror`): its variables checked before a run
//! starts, the mirror started with the run's loop and told its start and its end, and the
//! chats' commands answered as `swarm status`, `swarm queue add` and Ctrl-C would: from a board
//! of the reading thread's own and through the signal path.

use std::path::Path;

use crate::git::Repo;
use crate::mirror::{Command, Config, Mirror, words};
use crate::schedule::Layout;
use crate::store::Board;

/// The file in a run's directory where the mirror notes what it ignored or could not send.
pub(super) const LOG_FILE: &str = "mirror.log";

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Refuses bad values of the mirror's variables (exit 2), before anything runs.
pub(super) fn check() -> anyhow::Result<()> {
    Config::from_env(&env)?;
    Ok(())
}

/// The mirror of the run `layout` says, told it started (or `resumed`), when its variables are
/// set: `what` it runs (a task file, a goal) and its count of tasks.
pub(super) fn start(
    repo: &Repo,
    layout: &Layout,
    what: &str,
    tasks: usize,
    resumed: bool,
) -> anyhow::Result<Option<Mirror>> {
    let Some(config) = Config::from_env(&env)? else {
        return Ok(None);
    };
    let swarm_dir = repo.common_dir().join("swarm");
    let run = layout.run.clone();
    let mirror = Mirror::start(
        config,
        layout.run_dir.join(LOG_FILE),
        Box::new(move |command| answer(&swarm_dir, &run, command)),
    )?;
    mirror
        .outbox()
        .send(words::started(&layout.run, what, tasks, resumed));
    Ok(Some(mirror))
}

/// What a chat's command does, and the answer it gets.
fn answer(swarm_dir: &Path, run: &str, command: Command) -> String {
    match command {
        Command::Status => match Board::open(swarm_dir).and_then(|b| b.load_tasks(run)) {
            Ok(tasks) => {
                let stopping = if crate::signal::requested() {
                    " (stopping)"
                } else {
                    ""
                };
                format!(
                    "run {run}: {}{stopping}",
                    crate::report::counts_line(&tasks)
                )
            }
            Err(e) => format!("could not read run {run} from the board: {e:#}"),
        },
        Command::Goal(text) => {
            // As `swarm queue add` keeps it: a secret's value is kept as [redacted].
            let text = crate::secret::redact(text.trim()).into_owned();
            match Board::open(swarm_dir).and_then(|mut b| b.queue_mut().add(&text)) {
                Ok(id) => format!("queued goal {id}: {text}"),
                Err(e) => format!("could not queue the goal: {e:#}"),
            }
        }
        Command::Stop => {
            if crate::signal::ask_to_stop() {
                format!(
                    "stopping run {run} as Ctrl-C does: no task starts, the running ones are stopped; `swarm resume {run}` continues it"
                )
            } else {
                format!("run {run} is stopping already, or past where a stop changes anything")
            }
        }
        Command::Resume => format!(
            "swarm resume {run}\n(run it in the repository, on the machine that ran the run, once it has stopped)"
        ),
        Command::Steer { task, text } => {
            match Board::open(swarm_dir)
                .and_then(|mut b| super::steer::send(&mut b, run, &task, &text, true))
            {
                Ok(()) => format!("sent to {task}: {}", super::steer::DELIVERY),
                Err(e) => format!("could not steer {task}: {e:#}"),
            }
        }
        Command::Help => words::HELP.to_owned(),
    }
}
