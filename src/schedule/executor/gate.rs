//! The gate's runs as jobs on the pool: each in the gate's own checkout at the tip it tests,
//! recorded as started. What their verdicts mean is the core's (`core::merges`, and the
//! bisection in `core::gate`).

use std::time::Instant;

use super::super::Layout;
use super::super::core::gate::Probe;
use super::super::job::{Job, JobKind};
use super::Exec;
use crate::agent::Invocation;
use crate::git::CommitId;
use crate::store::RunEvent;
use crate::ui::Told;

/// The gate's key for its block of ports and its temporary directory (tasks' keys are their
/// indices).
pub(super) const GATE_KEY: usize = usize::MAX;

/// Gate run `number` on `tip`, testing the merges of `batch` (their ids), recorded as started;
/// and what the live display shows of it, from when.
pub(super) fn job(
    ex: &mut Exec<'_>,
    number: u32,
    probe: &Probe,
    tip: &CommitId,
    batch: &[String],
) -> anyhow::Result<(Job, (String, Instant))> {
    let (settings, layout) = (ex.out.settings, ex.out.layout);
    let Some(command) = settings.gate.clone() else {
        anyhow::bail!("a gate run without a gate");
    };
    let name = format!("gate-{number}");
    let transcript = layout.run_dir.join("attempts").join(format!("{name}.log"));
    let tmp = ex.scratch.acquire(GATE_KEY);
    let cwd = gate_checkout_path(layout);
    let mut env = vec![
        ("SWARM_RUN_ID".to_owned(), layout.run.clone()),
        ("SWARM_ACTIVE".to_owned(), "1".to_owned()),
        ("SWARM_GATE_TIP".to_owned(), tip.to_string()),
    ];
    if settings.trace.is_some() {
        // The gate run's span in the run's trace, for a gate that exports its own.
        env.push((
            "TRACEPARENT".to_owned(),
            crate::trace::gate_traceparent(&layout.run, number),
        ));
    }
    // Its own TMPDIR and block of ports, as an attempt's.
    env.extend(super::super::attempt_env(&mut ex.ports, GATE_KEY, &tmp));
    let header = format!(
        "swarm run {} gate run {number} ({}) on {}\ncommand: {command}\ncwd: {}\n",
        layout.run,
        probe.as_str(),
        tip,
        cwd.display()
    );
    let mut invocation = Invocation::shell(
        &command,
        cwd,
        settings.task_timeout,
        transcript.clone(),
        settings.transcript_cap,
        header,
    );
    let confined = settings.confine.confines().then(|| {
        super::confined(
            &ex.out,
            true,
            &invocation.cwd,
            &tmp,
            &env,
            Vec::new(),
            Vec::new(),
        )
    });
    invocation.env = env;
    let job = Job {
        task: 0,
        attempt: number,
        kind: JobKind::Gate { tip: tip.clone() },
        invocation,
        builtin: None,
        parser: None,
        acp: None,
        deps_dir: None,
        user_checkout: ex.out.repo.workdir().to_owned(),
        session: None,
        prepare: settings.prepare.clone(),
        tmp,
        spawn_file: None,
        confined,
    };
    ex.out.record.run_event(RunEvent::GateStarted {
        run: number,
        probe: probe.as_str().to_owned(),
        tip: tip.to_string(),
        batch: batch.to_vec(),
        transcript: transcript.display().to_string(),
    })?;
    ex.tell(&Told::GateStarted {
        tip: tip.short().to_owned(),
        batch: batch.to_vec(),
        base: *probe == Probe::Base,
    });
    let shown = match probe {
        Probe::Base => format!("the base {}", tip.short()),
        Probe::Batch { .. } => format!("{} on {}", batch.join(", "), tip.short()),
        Probe::Step { .. } => format!("bisecting: {} on {}", batch.join(", "), tip.short()),
    };
    Ok((job, (shown, Instant::now())))
}

/// Gate runs an earlier process of this run made, by their transcripts: the numbers of this
/// process's go on from them.
pub(super) fn runs_before(layout: &Layout) -> u32 {
    std::fs::read_dir(layout.run_dir.join("attempts"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("gate-") && name.ends_with(".log")
        })
        .count()
        .try_into()
        .unwrap_or(u32::MAX)
}

/// The gate's own checkout: a name no task id can take.
pub(in crate::schedule) fn gate_checkout_path(layout: &Layout) -> std::path::PathBuf {
    layout.worktrees.join("(gate)")
}
