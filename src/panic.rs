//! Internal errors. A panic is a bug in swarm, never the input's fault, and must not take a run
//! down with its agents still running: the hook keeps what the panic said and where, and prints
//! nothing; every thread swarm starts runs its work under `catch`, which turns a panic into an
//! error of its task, goal or command, reported through the one error printer.

use std::any::Any;
use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};

thread_local! {
    /// The last panic on this thread, as the hook saw it.
    static LAST: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs the hook, once, before anything else runs.
pub fn install() {
    panic::set_hook(Box::new(|info| {
        let place = info
            .location()
            .map(|l| format!(" (at {}:{})", l.file(), l.line()))
            .unwrap_or_default();
        let said = payload_text(info.payload());
        LAST.with_borrow_mut(|last| *last = Some(format!("{said}{place}")));
    }));
}

/// Runs `f`; a panic in it comes back as `Err` saying what it said and where.
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    panic::catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        LAST.with_borrow_mut(Option::take)
            .unwrap_or_else(|| payload_text(payload.as_ref()))
    })
}

fn payload_text(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        return (*s).to_owned();
    }
    payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_else(|| "a panic with no message".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_comes_back_with_what_it_said() {
        // Without the hook (installing it would silence the harness's own panic messages), so
        // the place is not known.
        let caught = catch(|| -> u32 { panic!("the sky fell") });
        assert_eq!(caught, Err("the sky fell".to_owned()));
        let owned = catch(|| -> u32 { panic!("{} fell", "the sky") });
        assert_eq!(owned, Err("the sky fell".to_owned()));
        assert_eq!(catch(|| 7), Ok(7));
    }
}
