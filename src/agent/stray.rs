//! Processes a run left behind: the agents of a swarm killed with `kill -9`, and what an attempt
//! put out of reach of its process group (`setsid`, a daemon). They are found by the run id
//! every attempt carries in its environment (`SWARM_RUN_ID`), then stopped: SIGTERM, the grace,
//! SIGKILL, each to the process and, for a group leader, to its group. A process is signalled
//! only while it is still the one found (same start time), so a reused pid is never hit. Reads
//! `/proc`, so on systems without it nothing is found.

use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::{Pid, getpgid, getpgrp};

/// A process found carrying a run's id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stray {
    pub pid: u32,
    /// Its command line, for the report.
    pub command: String,
    /// Clock ticks after boot at which it started: the same pid with another start is another
    /// process.
    started: u64,
}

/// Every process but this one whose environment holds `SWARM_RUN_ID=<run>`.
pub(crate) fn find(run: &str) -> Vec<Stray> {
    let needle = format!("SWARM_RUN_ID={run}");
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found: Vec<Stray> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter_map(|pid| {
            let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
            environ
                .split(|&b| b == 0)
                .any(|var| var == needle.as_bytes())
                .then_some(())?;
            let started = start_time(pid)?;
            let command = std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| {
                    String::from_utf8_lossy(&c)
                        .split('\0')
                        .filter(|a| !a.is_empty())
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default();
            Some(Stray {
                pid,
                command,
                started,
            })
        })
        .collect();
    found.sort_by_key(|s| s.pid);
    found
}

/// Stops the processes found: SIGTERM, up to `grace` for them to go, then SIGKILL.
pub(crate) fn stop(strays: &[Stray], grace: Duration) {
    let own_group = getpgrp();
    let signal = |s: &Stray, sig: Signal| {
        if start_time(s.pid) != Some(s.started) {
            return;
        }
        let pid = Pid::from_raw(s.pid as i32);
        // A group leader's group holds what it started, whatever their environment says.
        if getpgid(Some(pid)).is_ok_and(|g| g == pid && g != own_group) {
            let _ = killpg(pid, sig);
        }
        let _ = kill(pid, sig);
    };
    for s in strays {
        signal(s, Signal::SIGTERM);
    }
    let until = crate::time::deadline(Instant::now(), grace);
    while strays.iter().any(alive) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    for s in strays {
        signal(s, Signal::SIGKILL);
    }
}

/// Whether the process found is still there and not a zombie.
fn alive(s: &Stray) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{}/stat", s.pid)) else {
        return false;
    };
    let Some((_, rest)) = stat.rsplit_once(") ") else {
        return false;
    };
    !rest.starts_with('Z') && !rest.starts_with('X') && start_time(s.pid) == Some(s.started)
}

/// Field 22 of `/proc/<pid>/stat`: when the process started, in clock ticks after boot.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count from its end.
    let (_, rest) = stat.rsplit_once(") ")?;
    rest.split_ascii_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_carrying_the_run_id_is_found_and_stopped() {
        let run = format!("test-run-{}", std::process::id());
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env("SWARM_RUN_ID", &run)
            .spawn()
            .unwrap();
        // spawn returns once exec has begun, a moment before the new environment is readable.
        let started = Instant::now();
        let mut found = find(&run);
        while found.is_empty() && started.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(5));
            found = find(&run);
        }
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].pid, child.id());
        assert_eq!(found[0].command, "sleep 30");
        assert!(find("another-run").iter().all(|s| s.pid != child.id()));
        stop(&found, Duration::from_secs(2));
        let status = child.wait().unwrap();
        assert!(!status.success());
    }
}
