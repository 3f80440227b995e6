//! Running the programs the user allowed (`run_command`, and ACP's `terminal/create`): in the
//! task's directory, without git's overrides or credentials in their environment, in a process
//! group of their own that is killed when they end, time out or the attempt stops.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io::{self, Read};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::problem::{Problem, failed};
use super::{OUTPUT_CAP, Stop};

/// The programs a task may run, by name, and how long each run may take.
pub(super) struct Programs {
    pub(super) allowed: Vec<String>,
    pub(super) timeout: Duration,
    /// What confines them: the attempt's confinement.
    pub(super) confine: Option<crate::agent::confine::Confinement>,
}

impl Programs {
    /// Runs an allowed program in `root`, in a process group of its own that is killed when
    /// it ends, times out or the attempt stops.
    pub(super) fn execute(
        &self,
        root: &Path,
        stop: &Stop,
        program: &str,
        args: &[String],
    ) -> Result<Ran, Problem> {
        if program.contains('/') || !self.allowed.iter().any(|p| p == program) {
            return Err(Problem::Refused(format!(
                "refused: {program:?} is not an allowed program (allowed: {})",
                self.allowed.join(", ")
            )));
        }
        let mut cmd = Command::new(program);
        cmd.args(args)
            .current_dir(root)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        for (name, _) in std::env::vars_os() {
            if is_withheld(&name) {
                cmd.env_remove(name);
            }
        }
        let mut child = crate::agent::confine::spawn(cmd, self.confine.as_ref())
            .map_err(|e| failed(format!("could not start {program}: {e}")))?;
        let group = Pid::from_raw(child.id() as i32);
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            let _ = killpg(group, Signal::SIGKILL);
            let _ = child.wait();
            return Err(failed(format!("could not read the output of {program}")));
        };
        let pipes: [Box<dyn Read + Send>; 2] = [Box::new(stdout), Box::new(stderr)];
        let outputs = pipes.map(|pipe| {
            let (tx, rx) = mpsc::channel();
            thread::spawn(move || tx.send(drain(pipe)));
            rx
        });
        let deadline = crate::time::deadline(Instant::now(), self.timeout);
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Ok(status),
                _ if stop() => {
                    break Err(format!("{program} was stopped with the attempt"));
                }
                _ if Instant::now() >= deadline => {
                    break Err(format!(
                        "{program} timed out after {} s and was killed",
                        self.timeout.as_secs_f32()
                    ));
                }
                _ => thread::sleep(Duration::from_millis(10)),
            }
        };
        // The whole group, even after a normal exit: a background child left running could
        // change files later and would keep the pipes open.
        let _ = killpg(group, Signal::SIGKILL);
        let _ = child.wait();
        let wait = Duration::from_secs(1);
        let [stdout, stderr] = outputs.map(|rx| rx.recv_timeout(wait).unwrap_or_default());
        Ok(Ran {
            status,
            stdout,
            stderr,
        })
    }
}

/// What an allowed program did: its exit status (or why it was stopped) and its output.
pub struct Ran {
    pub status: Result<std::process::ExitStatus, String>,
    pub stdout: String,
    pub stderr: String,
}

/// Git's repository overrides and anything that looks like a credential.
fn is_withheld(name: &OsStr) -> bool {
    let name = name.to_string_lossy();
    name.starts_with("GIT_") || crate::secret::is_secret_name(&name)
}

/// Reads a pipe to its end, keeping the first `OUTPUT_CAP` bytes.
fn drain(pipe: impl Read) -> String {
    let mut kept = Vec::new();
    let mut pipe = pipe;
    let _ = (&mut pipe).take(OUTPUT_CAP as u64).read_to_end(&mut kept);
    let more = io::copy(&mut pipe, &mut io::sink()).unwrap_or(0);
    let mut text = String::from_utf8_lossy(&kept).into_owned();
    if more > 0 {
        let _ = write!(text, "\n[{more} more bytes not shown]");
    }
    text
}
