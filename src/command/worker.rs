//! `swarm worker`: finds the run on the remote, makes it known to this clone's board with the
//! plan and options the coordinator published, and works on its tasks (`schedule::work`).

use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::config::from_record;
use crate::error::{Usage, exit};
use crate::git::CommitId;
use crate::plan::Plan;
use crate::remote::{self, KEY_VAR, Key, Kind, Records, Transport, Unread};
use crate::schedule::{Layout, WorkerEnd, WorkerSetup};
use crate::store::{Event, RunEvent, RunRecord, RunStatus};
use crate::ui::{Ui, Verb};

use super::context::{Globals, open_repo, open_run_board, refuse_when_nested};
use super::layout::{Lock, deps_root, worktree_root};
use super::settings::settings;

/// The flags of `swarm worker`.
pub(super) struct Asked<'a> {
    pub(super) remote: &'a str,
    pub(super) run: Option<&'a str>,
    pub(super) jobs: Option<u32>,
    pub(super) wait: &'a str,
    pub(super) lease: &'a str,
}

pub(super) fn worker(
    g: &Globals,
    asked: &Asked<'_>,
    profiles: &super::pools::Agents,
) -> anyhow::Result<u8> {
    if let Some(code) = refuse_when_nested(g) {
        return Ok(code);
    }
    let wait =
        crate::plan::parse_wait(asked.wait).map_err(|e| Usage::new(format!("--wait: {e}")))?;
    let lease = crate::plan::parse_duration(asked.lease)
        .map_err(|e| Usage::new(format!("--lease: {e}")))?;
    let poll = remote::poll()?;
    // A lease is renewed when the worker polls, a third through its time.
    if poll > lease / 3 {
        return Err(Usage::new(format!(
            "{}={}: a worker renews its leases when it polls the remote, so the poll must be at most a third of --lease ({})",
            remote::POLL_VAR,
            poll.as_secs_f64(),
            crate::ui::duration(lease)
        ))
        .hint(format!(
            "give a longer --lease, or a shorter {}",
            remote::POLL_VAR
        ))
        .into());
    }
    let key = Key::from_env()?;
    let repo = open_repo(g)?;
    let transport = Transport::new(repo.workdir(), asked.remote);
    let mut ui = Ui::new(g.quiet, g.progress);
    let looking = Looking {
        run: asked.run,
        wait,
        poll,
        key: key.as_ref(),
    };
    let Some(found) = find_run(&repo, &transport, &looking, &mut ui)? else {
        ui.finish();
        return Ok(exit::OK);
    };
    let Found { run, info } = match found {
        Ok(found) => found,
        Err(code) => {
            ui.finish();
            return Ok(code);
        }
    };
    if info.version > remote::VERSION {
        return Err(Usage::new(format!(
            "run {run} on {} was published by a newer swarm (record version {}; this one reads {})",
            asked.remote,
            info.version,
            remote::VERSION
        ))
        .hint("install the coordinator's version of swarm on this machine")
        .into());
    }
    let plan = Plan::parse(&info.tasks, "the published plan").map_err(anyhow::Error::new)?;
    let mut options = from_record(&info.options)
        .with_context(|| format!("the options of run {run} on {}", asked.remote))?;
    // This machine's slots, and no remote of its own: it runs what it claims.
    options.jobs = Some(asked.jobs.unwrap_or(DEFAULT_JOBS));
    options.max_writers = None;
    options.remote = None;
    let settings = settings(&options, &plan, profiles)?;
    let lock = Lock::acquire(&repo, &run)?;
    let base = CommitId::new(&info.base);
    let mut board = open_run_board(g, &repo)?;
    if board.load_run(&run)?.is_none() {
        let record = RunRecord {
            id: run.clone(),
            created_at: crate::store::now_ms(),
            finished_at: None,
            status: RunStatus::Running,
            exit_code: None,
            source: format!("worker of {}", asked.remote),
            base_commit: base.to_string(),
            integration_ref: format!("refs/heads/swarm/{run}"),
            options: info.options.clone(),
        };
        let specs: Vec<(String, serde_json::Value)> = plan
            .tasks
            .iter()
            .map(|t| (t.id.to_string(), t.to_json()))
            .collect();
        board.create_run(&record, &specs)?;
    }
    let layout = Layout {
        worktrees: worktree_root(&repo, options.worktree_dir.as_deref())?.join(&run),
        deps: deps_root(&board.run_dir(&run), &run),
        run_dir: board.run_dir(&run),
        run: run.clone(),
        base,
        integration_ref: format!("refs/heads/swarm/{run}"),
    };
    let setup = WorkerSetup {
        transport,
        id: remote::worker_id(),
        lease,
        poll,
        key,
    };
    ui.note(
        Verb::Started,
        &format!(
            "worker {} on run {run} of {}, {} slot(s)",
            setup.id, asked.remote, settings.jobs
        ),
    );
    if let crate::agent::confine::InForce::Unavailable(why) = &settings.confine.in_force {
        ui.note(Verb::Note, &format!("tasks run unconfined: {why}"));
    }
    let ended = crate::schedule::work(plan, &repo, &mut board, &mut ui, &settings, &layout, &setup);
    ui.finish();
    drop(lock);
    let code = match ended? {
        WorkerEnd::Finished => exit::OK,
        WorkerEnd::Stopped => exit::RESUMABLE,
    };
    let status = if code == exit::OK {
        RunStatus::Finished
    } else {
        RunStatus::Interrupted
    };
    board.set_run_status(
        &run,
        status,
        Some(i32::from(code)),
        &Event::run(RunEvent::RunEnded {
            status: status.as_str().to_owned(),
            exit_code: code,
            landing: None,
            reason: (code != exit::OK).then(|| super::reason::WORKER_STOPPED.to_owned()),
        }),
    )?;
    crate::ui::say(
        g.quiet,
        Verb::Finished,
        &match code {
            exit::OK => format!("run {run} has no work left for this worker"),
            _ => format!("stopped; the attempts it held are given back to run {run}"),
        },
    );
    Ok(code)
}

/// Slots of a worker without --jobs.
const DEFAULT_JOBS: u32 = 4;

struct Found {
    run: String,
    info: remote::RunInfo,
}

/// What a worker looks for on the remote.
struct Looking<'a> {
    /// The run asked for (`--run`), or none: the newest.
    run: Option<&'a str>,
    wait: Duration,
    poll: Duration,
    /// The key its records must be signed with.
    key: Option<&'a Key>,
}

/// The run to work on: `run`, or the newest one the remote has (signed with the key, when
/// there is one), waited for up to `wait`. `None` when there is none (the run ended, or none
/// appeared); `Err` with the exit code when the remote did not answer in all that time.
fn find_run(
    repo: &crate::git::Repo,
    transport: &Transport,
    looking: &Looking<'_>,
    ui: &mut Ui,
) -> anyhow::Result<Option<Result<Found, u8>>> {
    let Looking {
        run,
        wait,
        poll,
        key,
    } = *looking;
    let started = Instant::now();
    let asked_run = run;
    let (mut fails, mut reached) = (0, false);
    // Runs not signed with the key, said once each.
    let mut skipped = std::collections::BTreeSet::new();
    loop {
        let prefix = run.map_or_else(|| "refs/swarm/".to_owned(), remote::prefix);
        match transport.fetch(&prefix) {
            Ok(refs) => {
                if !reached && fails > 0 {
                    ui.note(Verb::Retrying, "the remote answers again");
                }
                (reached, fails) = (true, 0);
                // The run asked for, or the newest that has not ended.
                let mut runs: Vec<(String, CommitId)> = match run {
                    Some(r) => refs
                        .get("run")
                        .map(|c| (r.to_owned(), c.clone()))
                        .into_iter()
                        .collect(),
                    None => refs
                        .iter()
                        .filter_map(|(name, c)| {
                            Some((name.strip_suffix("/run")?.to_owned(), c.clone()))
                        })
                        .filter(|(r, _)| !r.contains('/'))
                        .collect(),
                };
                runs.sort();
                for (id, commit) in runs.into_iter().rev() {
                    let records = Records {
                        repo,
                        run: &id,
                        key,
                    };
                    let info = match records.read::<remote::RunInfo>(Kind::Run, &commit) {
                        Ok(info) => info,
                        Err(Unread::Broken(why)) => {
                            anyhow::bail!("the record of run {id} on {}: {why}", transport.remote())
                        }
                        Err(why) => {
                            let line = format!(
                                "run {id} on {}: {why}; this worker runs only runs signed with its {KEY_VAR}",
                                transport.remote()
                            );
                            if asked_run.is_some() {
                                return Err(Usage::new(line)
                                    .hint(format!("give this worker the coordinator's {KEY_VAR}"))
                                    .into());
                            }
                            if skipped.insert(id.clone()) {
                                ui.note(Verb::Skipping, &line);
                            }
                            continue;
                        }
                    };
                    if info.signed && key.is_none() && !info.ended {
                        return Err(Usage::new(format!(
                            "run {id} on {} is signed: a worker on it needs {KEY_VAR}, the key its coordinator has",
                            transport.remote()
                        ))
                        .hint(format!(
                            "set {KEY_VAR} here to the coordinator's (the manual's \"Runs over many machines\" says how CI gives it)"
                        ))
                        .into());
                    }
                    if !info.ended {
                        return Ok(Some(Ok(Found { run: id, info })));
                    }
                    if asked_run.is_some() {
                        ui.note(Verb::Skipping, &format!("run {id} ended"));
                        return Ok(None);
                    }
                }
                if let Some(r) = run {
                    ui.note(
                        Verb::Skipping,
                        &format!(
                            "run {r} is not on {}: it ended, or was never published",
                            transport.remote()
                        ),
                    );
                    return Ok(None);
                }
            }
            Err(e) => {
                fails += 1;
                if fails == 1 {
                    ui.note(
                        Verb::Retrying,
                        &format!(
                            "the remote {} does not answer ({}); trying again",
                            transport.remote(),
                            e.0
                        ),
                    );
                }
            }
        }
        if started.elapsed() >= wait {
            if reached {
                ui.note(
                    Verb::Skipping,
                    &format!(
                        "no run appeared on {} in {}",
                        transport.remote(),
                        crate::ui::duration(wait)
                    ),
                );
                return Ok(None);
            }
            ui.note(
                Verb::Stopped,
                &format!(
                    "the remote {} did not answer in {}",
                    transport.remote(),
                    crate::ui::duration(wait)
                ),
            );
            return Ok(Some(Err(exit::RESUMABLE)));
        }
        let pause = if fails > 0 {
            remote::transport::retry_wait(fails)
        } else {
            poll
        };
        std::thread::sleep(
            pause
                .min(wait.saturating_sub(started.elapsed()))
                .max(Duration::from_millis(10)),
        );
    }
}
