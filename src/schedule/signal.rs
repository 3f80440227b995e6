//! Signals, counted where they arrive: the first SIGINT/SIGTERM becomes a message to the run
//! loop; the second kills every attempt and exits at once, whatever the owner thread is busy
//! with (a merge, a checkout, the escalation hook).

use std::sync::mpsc::Sender;

use super::Message;
use crate::agent::Watchdog;

/// Watches SIGINT/SIGTERM for the run loop until closed.
pub(super) struct SignalWatch {
    handle: signal_hook::iterator::Handle,
}

impl SignalWatch {
    pub(super) fn close(&self) {
        self.handle.close();
    }
}

/// The first signal is sent to the loop as `Message::Signal`; the second kills every attempt
/// and exits 75 at once (the board is as a `kill -9` would leave it: resumable).
pub(super) fn watch_signals(
    tx: Sender<Message>,
    watchdog: Watchdog,
) -> anyhow::Result<SignalWatch> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    let handle = signals.handle();
    std::thread::Builder::new()
        .name("swarm-signals".into())
        .spawn(move || {
            for (n, _) in signals.forever().enumerate() {
                if n > 0 {
                    watchdog.kill_all_now();
                    std::process::exit(i32::from(crate::exit::RESUMABLE));
                }
                let _ = tx.send(Message::Signal);
            }
        })?;
    Ok(SignalWatch { handle })
}
