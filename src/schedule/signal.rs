//! Signals: the first SIGINT/SIGTERM becomes a message to the run loop; the second kills every
//! attempt and exits at once.

use std::sync::mpsc::Sender;

use super::Message;
use crate::agent::Watchdog;

/// Turns SIGINT/SIGTERM into messages; a second one kills every attempt and exits at once
/// (exit 75: the run is resumable).
pub(super) struct SignalWatch {
    handle: signal_hook::iterator::Handle,
    armed: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl SignalWatch {
    /// From now on the next signal is the second one.
    pub(super) fn armed(&self) {
        self.armed.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub(super) fn close(&self) {
        self.handle.close();
    }
}

pub(super) fn watch_signals(
    tx: Sender<Message>,
    watchdog: Watchdog,
) -> anyhow::Result<SignalWatch> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    let handle = signals.handle();
    let armed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = armed.clone();
    std::thread::Builder::new()
        .name("swarm-signals".into())
        .spawn(move || {
            for _ in signals.forever() {
                if flag.load(std::sync::atomic::Ordering::SeqCst) {
                    watchdog.kill_all_now();
                    // The board is as a kill -9 would leave it: resumable.
                    std::process::exit(i32::from(crate::exit::RESUMABLE));
                }
                let _ = tx.send(Message::Signal);
            }
        })?;
    Ok(SignalWatch { handle, armed })
}
