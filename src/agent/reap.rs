//! The end of an attempt's process: waiting for it to exit, then killing what it left in its
//! process group, the same way on every Unix. Knows nothing of what the attempt was.

use std::process::{Child, ExitStatus};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// How the end of an attempt's process is waited for before its group is killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wait {
    /// `waitid(WNOWAIT)`: the process has exited but is not reaped when the group is killed, so
    /// its pid (the group's id) cannot have been reused.
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    Unreaped,
    /// Reaped first, then the group killed: a process group's id is not reused while any
    /// process of the group is left, so the kill still reaches only the attempt's leftovers.
    /// Every Unix has it.
    Reaped,
}

impl Wait {
    /// The way of this system.
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    pub(super) const NATIVE: Self = Self::Unreaped;
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    pub(super) const NATIVE: Self = Self::Reaped;
}

/// Waits for `child` (the leader of its own process group) to exit, then kills every process
/// left in its group; returns how the child ended.
pub(super) fn wait_and_clear(child: &mut Child, way: Wait) -> std::io::Result<ExitStatus> {
    let group = Pid::from_raw(child.id() as i32);
    match way {
        #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
        Wait::Unreaped => {
            if exited_unreaped(group).is_err() {
                // A system that refuses `waitid` (a sandbox filtering it): the other way.
                return wait_and_clear(child, Wait::Reaped);
            }
            let _ = killpg(group, Signal::SIGKILL);
            child.wait()
        }
        Wait::Reaped => {
            let status = child.wait()?;
            let _ = killpg(group, Signal::SIGKILL);
            Ok(status)
        }
    }
}

/// Blocks until the process `pid` has exited, leaving it unreaped.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
fn exited_unreaped(pid: Pid) -> nix::Result<()> {
    use nix::sys::wait::{Id, WaitPidFlag, waitid};
    loop {
        match waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT) {
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e),
            Ok(_) => return Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    use std::path::Path;
    use std::time::Duration;

    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    use nix::sys::signal::{Signal, killpg};
    use nix::sys::stat::Mode;
    use nix::unistd::Pid;

    use super::Wait;
    use crate::agent::{Invocation, Outcome, Watchdog, spawn_and_wait};

    /// Both ways on a system that has both, so the portable one is tested where CI runs.
    fn ways() -> Vec<Wait> {
        vec![Wait::NATIVE, Wait::Reaped]
    }

    fn invocation(dir: &Path, command: &str, timeout: Duration) -> Invocation {
        let mut inv = Invocation::shell(
            command,
            dir.to_owned(),
            timeout,
            dir.join("transcript.txt"),
            1 << 20,
            "test\n".to_owned(),
        );
        inv.stdin = Some("the prompt\n".to_owned());
        inv
    }

    /// A FIFO `held` in `dir`, open for reading, so the attempt's open for writing does not
    /// wait for a reader.
    fn fifo(dir: &Path) -> std::fs::File {
        let path = dir.join("held");
        nix::unistd::mkfifo(&path, Mode::S_IRUSR | Mode::S_IWUSR).unwrap();
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(OFlag::O_NONBLOCK.bits())
            .open(&path)
            .unwrap()
    }

    /// Fails unless every process that opened `fifo` for writing lets go of it (ends) within a
    /// minute; then kills the attempt's group, whose id the attempt wrote in `dir/group`.
    fn assert_let_go(mut fifo: std::fs::File, dir: &Path, way: Wait) {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // Blocking from here on: the read ends once the last writer has closed it.
            fcntl(&fifo, FcntlArg::F_SETFL(OFlag::empty())).unwrap();
            let _ = fifo.read_to_end(&mut Vec::new());
            let _ = tx.send(());
        });
        if rx.recv_timeout(Duration::from_secs(60)).is_err() {
            let group: i32 = std::fs::read_to_string(dir.join("group"))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
            panic!("{way:?}: what the attempt left behind outlived it");
        }
    }

    #[test]
    fn an_attempt_runs_to_its_end_and_what_it_left_behind_is_killed_either_way() {
        let watchdog = Watchdog::start(Duration::from_secs(1)).unwrap();
        for way in ways() {
            let dir = tempfile::tempdir().unwrap();
            let fifo = fifo(dir.path());
            // Two processes left behind, both holding the FIFO: one holding stdout and stderr
            // too, one holding nothing else. The output is long enough to take a while.
            let command = concat!(
                "echo $$ > group; exec 3>held; read -r line; ",
                "sleep 1000 & sleep 1000 >&- 2>&- & ",
                "printf '%s\\n' \"$line\"; seq 1 20000; echo done >&2; exit 3"
            );
            let inv = invocation(dir.path(), command, Duration::from_secs(60));

            let done = spawn_and_wait(&inv, &watchdog, way).unwrap();

            assert_eq!(
                done.outcome,
                Outcome::Failed("exit code 3".to_owned()),
                "{way:?}"
            );
            let expected: String = std::iter::once("the prompt\n".to_owned())
                .chain((1..=20000).map(|n| format!("{n}\n")))
                .collect();
            assert!(done.stdout == expected, "{way:?}: the output is cut");
            let transcript = std::fs::read_to_string(&inv.transcript).unwrap();
            assert!(transcript.contains("done\n--- stdout ---"), "{way:?}");
            assert_let_go(fifo, dir.path(), way);
        }
        watchdog.shutdown();
    }

    /// A process out of the group's reach (its own session) that keeps stderr open: the
    /// attempt ends with its process all the same, its stderr so far in the transcript.
    #[test]
    #[cfg(target_os = "linux")]
    fn an_escaped_process_holding_stderr_does_not_hold_up_the_attempt() {
        let watchdog = Watchdog::start(Duration::from_secs(1)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let command = "echo before >&2; setsid sh -c 'echo $$ > escaped; exec sleep 1000' & \
             while [ ! -s escaped ]; do sleep 0.01; done; echo after >&2";
        let inv = invocation(dir.path(), command, Duration::from_secs(60));
        let done = spawn_and_wait(&inv, &watchdog, Wait::NATIVE).unwrap();
        let escaped: i32 = std::fs::read_to_string(dir.path().join("escaped"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let _ = nix::sys::signal::kill(Pid::from_raw(escaped), Signal::SIGKILL);
        assert_eq!(done.outcome, Outcome::Succeeded);
        let transcript = std::fs::read_to_string(&inv.transcript).unwrap();
        assert!(
            transcript.contains("--- stderr ---\nbefore\nafter\n--- stdout ---"),
            "{transcript}"
        );
        watchdog.shutdown();
    }

    #[test]
    fn an_attempt_past_its_timeout_is_ended_either_way() {
        let watchdog = Watchdog::start(Duration::from_secs(1)).unwrap();
        for way in ways() {
            let dir = tempfile::tempdir().unwrap();
            let fifo = fifo(dir.path());
            // Left behind: a process that outlives the SIGTERM the group gets.
            let command = "echo $$ > group; exec 3>held; (trap '' TERM; sleep 1000) & sleep 1000";
            let inv = invocation(dir.path(), command, Duration::from_millis(200));

            let done = spawn_and_wait(&inv, &watchdog, way).unwrap();

            assert_eq!(done.outcome, Outcome::TimedOut(inv.timeout), "{way:?}");
            assert_let_go(fifo, dir.path(), way);
        }
        watchdog.shutdown();
    }
}
