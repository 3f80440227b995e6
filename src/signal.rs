//! The one signal path of the process, installed when swarm starts. SIGINT, SIGTERM and SIGHUP
//! (the terminal closed, the ssh session lost: the agents, in process groups of their own, would
//! not hear of it and run on) are counted where they arrive, on a thread of their own, so the second works whatever the rest
//! of swarm is doing. A phase that can stop resumably (planning, the run loop) says how while it
//! runs (`handle`): the first signal asks it to stop, the second kills what it started and ends
//! swarm at once with exit 75. With no such phase, the first signal ends swarm with 128 plus the
//! signal's number (130 for Ctrl-C), as a shell expects of a command it interrupts.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

/// Signals received so far.
static COUNT: AtomicUsize = AtomicUsize::new(0);

type Callback = Box<dyn Fn() + Send>;

/// What the phase running now does on a signal.
struct Handler {
    /// The first signal: ask it to stop.
    stop: Callback,
    /// The second: kill what it started, now.
    kill: Callback,
    /// SIGINT is not counted while this phase runs (a program it started owns the terminal and
    /// Ctrl-C is that program's).
    ignores_interrupts: bool,
}

/// The handlers of the phases running now, innermost last: a phase within a phase (the run
/// loop within a run's life) handles signals while it runs, and the outer one again after.
static HANDLERS: Mutex<Vec<Handler>> = Mutex::new(Vec::new());

/// Starts counting SIGINT, SIGTERM and SIGHUP.
pub fn install() -> anyhow::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new()
        .name("swarm-signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                let handlers = HANDLERS.lock().unwrap_or_else(PoisonError::into_inner);
                if signal == SIGINT && handlers.last().is_some_and(|h| h.ignores_interrupts) {
                    continue;
                }
                let first = COUNT.fetch_add(1, Ordering::SeqCst) == 0;
                match (handlers.last(), first) {
                    (None, true) => std::process::exit(128 + signal),
                    // A second signal after the phase that took the first has ended: what it
                    // stopped is recorded and resumable.
                    (None, false) => std::process::exit(i32::from(crate::error::exit::RESUMABLE)),
                    (Some(h), true) => (h.stop)(),
                    (Some(h), false) => {
                        (h.kill)();
                        crate::ui::leave_screen();
                        // What ran is on the board as a `kill -9` would leave it: resumable.
                        std::process::exit(i32::from(crate::error::exit::RESUMABLE));
                    }
                }
            }
        })?;
    Ok(())
}

/// Keeps `phase`'s handling until swarm exits: for a phase whose work is done and on record, so
/// that a first signal while swarm exits does not turn its exit code into an interruption.
pub fn keep_until_exit(phase: Handling) {
    std::mem::forget(phase);
}

/// Whether a signal asked swarm to stop.
pub fn requested() -> bool {
    COUNT.load(Ordering::SeqCst) > 0
}

/// Asks the phase running now to stop as a first signal does (`/stop` from a chat the mirror
/// reads). Never a second: from afar a run is stopped, not killed. Whether it was asked.
pub fn ask_to_stop() -> bool {
    let handlers = HANDLERS.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(h) = handlers.last().filter(|h| !h.ignores_interrupts) else {
        return false;
    };
    if COUNT
        .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        return false;
    }
    (h.stop)();
    true
}

/// While the returned guard lives, the first signal calls `stop` and the second `kill`, then
/// ends swarm with 75.
#[must_use]
pub fn handle(stop: impl Fn() + Send + 'static, kill: impl Fn() + Send + 'static) -> Handling {
    HANDLERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Handler {
            stop: Box::new(stop),
            kill: Box::new(kill),
            ignores_interrupts: false,
        });
    Handling(())
}

/// While the returned guard lives, SIGINT is not counted (as git does while the user's editor
/// runs: Ctrl-C there is the editor's); SIGTERM ends swarm as with no phase running.
#[must_use]
pub fn ignore_interrupts() -> Handling {
    HANDLERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Handler {
            stop: Box::new(|| std::process::exit(128 + signal_hook::consts::SIGTERM)),
            kill: Box::new(|| {}),
            ignores_interrupts: true,
        });
    Handling(())
}

/// A phase's hold on the signals; dropping it gives them back to the phase around it. Guards
/// are dropped in the reverse order of their making, as scopes nest.
pub struct Handling(());

impl Drop for Handling {
    fn drop(&mut self) {
        HANDLERS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
    }
}
