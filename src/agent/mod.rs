//! Running one attempt: a `run` command or an `exec:` agent as a child process in its own
//! process group, with its prompt on stdin, its stdout as the result and its stderr in the
//! transcript; or the built-in agent (`openai`). Owns process spawning and killing; knows
//! nothing about the DAG.

pub mod cli;
pub(crate) mod confine;
mod fault;
mod limits;
pub(crate) use fault::{Fault, FaultKind};
pub(crate) mod acp;
pub(crate) mod openai;
mod reap;
pub(crate) mod steer;
pub(crate) mod stray;
pub(crate) mod tools;
pub(crate) mod transcript;
mod watchdog;
pub(crate) use watchdog::KillReason;
pub(crate) use watchdog::{Sign, Watchdog};

use std::fs::File;
use std::io::{Read as _, Seek as _, Write as _};
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use nix::sys::signal::Signal;
use nix::unistd::Pid;

use transcript::Transcript;

/// Results larger than this are cut (the transcript keeps more of it, up to its cap).
pub(crate) const RESULT_CAP: usize = 1 << 20;

/// How an agent is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Agent {
    /// `exec:CMD`: `sh -c CMD`, prompt on stdin, result on stdout.
    Exec(String),
    /// The built-in OpenAI-compatible agent.
    OpenAi,
    /// A coding-agent CLI (claude, codex, or a profile from the configuration).
    Cli(cli::Profile),
}

impl Agent {
    /// `exec:CMD` or `openai` (`auto` is resolved by the caller, which knows the configuration).
    pub fn parse(name: &str) -> Result<Self, String> {
        if name == "openai" {
            return Ok(Self::OpenAi);
        }
        if let Some(cmd) = name.strip_prefix("acp:") {
            if cmd.trim().is_empty() {
                return Err("agent \"acp:\" needs a command after the colon".into());
            }
            return Ok(Self::Cli(cli::acp_profile(name, cmd)));
        }
        match name.strip_prefix("exec:") {
            Some(cmd) if !cmd.trim().is_empty() => Ok(Self::Exec(cmd.to_owned())),
            Some(_) => Err("agent \"exec:\" needs a command after the colon".into()),
            None => Err(format!(
                "unknown agent {name:?}: use openai, auto, exec:CMD (CMD gets the prompt on stdin and prints the result) or acp:CMD (CMD speaks the Agent Client Protocol on stdio)"
            )),
        }
    }
}

/// One attempt to run, fully described.
#[derive(Debug, Clone)]
pub(crate) struct Invocation {
    /// Shell command, run with `sh -c` in `cwd` (shown in the transcript when `argv` is set).
    pub command: String,
    /// A program and its arguments, run directly instead of `command` when not empty.
    pub argv: Vec<String>,
    /// Variables removed from the inherited environment besides the withheld ones.
    pub env_drop: Vec<String>,
    /// Withheld variables passed all the same (never the API key).
    pub env_pass: Vec<String>,
    /// Written to stdin, which is then closed; `None` gives the child an empty stdin.
    pub stdin: Option<String>,
    pub cwd: PathBuf,
    /// Variables set on top of the inherited environment.
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    /// Stop the attempt as hung when it writes nothing (stdout or stderr) for this long.
    pub stall: Option<Duration>,
    /// The attempt's transcript: a header, the child's stderr, then its stdout and the outcome.
    pub transcript: PathBuf,
    /// The most bytes of what the attempt prints its transcript keeps (see `Transcript`).
    pub transcript_cap: u64,
    /// First lines of the transcript.
    pub header: String,
    /// Whether its stdout is an attempt's result, which the board holds: its transcript is
    /// then made only when it has more to say (see `spawn_and_wait`). Else (a check, a setup,
    /// a hook) it is always made.
    pub result_on_board: bool,
    /// Whether `header` holds more than the board does (what preparing the checkout did):
    /// the transcript is then made even when the attempt has nothing else to say.
    pub header_notes: bool,
    /// Where stdout goes while the attempt runs, when a swarm killed meanwhile must find what
    /// the agent printed (Codex's thread id); removed when the attempt ends. Else stdout goes
    /// to an unnamed file.
    pub stdout_file: Option<PathBuf>,
    /// What confines the process (see `confine`); `None` runs it with all of the user's access.
    pub confine: Option<confine::Confinement>,
}

impl Invocation {
    /// `command`, run with `sh -c` in `cwd` for at most `timeout`, its transcript at
    /// `transcript` (at most `transcript_cap` bytes of what it prints) opening with `header`:
    /// nothing on stdin, no variable withheld or passed beyond swarm's own rules, none set, no
    /// watch for a stall, stdout into an unnamed file. What an attempt adds (its agent's
    /// program and variables, its prompt, its stall timeout) is set on it.
    pub(crate) fn shell(
        command: &str,
        cwd: PathBuf,
        timeout: Duration,
        transcript: PathBuf,
        transcript_cap: u64,
        header: String,
    ) -> Self {
        Self {
            command: command.to_owned(),
            argv: Vec::new(),
            env_drop: Vec::new(),
            env_pass: Vec::new(),
            stdin: None,
            cwd,
            env: Vec::new(),
            timeout,
            stall: None,
            transcript,
            transcript_cap,
            header,
            result_on_board: false,
            header_notes: false,
            stdout_file: None,
            confine: None,
        }
    }

    /// The user's own `command` in this one's place (a writer's check, a checkout's setup):
    /// the same directory, variables, time and confinement, its own transcript and header, and
    /// nothing of the agent's (its program, its variables withheld or passed, stdin, the stall
    /// watch).
    pub(crate) fn beside(
        &self,
        command: &str,
        transcript: PathBuf,
        transcript_cap: u64,
        header: String,
    ) -> Self {
        Self {
            env: self.env.clone(),
            confine: self.confine.clone(),
            ..Self::shell(
                command,
                self.cwd.clone(),
                self.timeout,
                transcript,
                transcript_cap,
                header,
            )
        }
    }
}

impl Outcome {
    /// A few words for logs and transcripts.
    pub fn describe(&self) -> String {
        match self {
            Self::Succeeded => "succeeded".to_owned(),
            Self::Failed(why) => format!("failed ({why})"),
            Self::TimedOut(t) => format!("timed out after {}s", t.as_secs()),
            Self::Stalled(t) => format!("stopped as hung: no output for {}s", t.as_secs()),
            Self::Interrupted => "interrupted".to_owned(),
            Self::Limited(l) => format!("usage limit ({})", l.message),
            Self::Fault(f) => format!("cut short ({})", f.why),
        }
    }

    /// How an attempt that took `elapsed` ended, for its transcript's last line: a timeout
    /// says its time and its limit once each.
    pub fn ended(&self, elapsed: Duration) -> String {
        match self {
            Self::TimedOut(t) => format!(
                "timed out after {:.2}s (its limit: {})",
                elapsed.as_secs_f64(),
                crate::ui::duration(*t)
            ),
            other => format!("{} after {:.2}s", other.describe(), elapsed.as_secs_f64()),
        }
    }
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    Succeeded,
    Failed(String),
    TimedOut(Duration),
    /// Wrote nothing for this long and was stopped as hung.
    Stalled(Duration),
    Interrupted,
    /// The agent hit its provider's usage limit: not the task's fault.
    Limited(cli::UsageLimit),
    /// Something outside the task cut the attempt short.
    Fault(Fault),
}

#[derive(Debug)]
pub(crate) struct Finished {
    pub outcome: Outcome,
    /// Stdout, cut at `RESULT_CAP`.
    pub stdout: String,
    /// LLM tokens used, where the agent says; 0 otherwise.
    pub tokens: u64,
    /// Of them, the prompts' (input) tokens, where the agent says; 0 otherwise.
    pub prompt_tokens: u64,
    /// Of the prompts' tokens, those the provider had cached, where the agent says; 0
    /// otherwise.
    pub cached_tokens: u64,
    /// Cost in dollars, where the agent says.
    pub cost: Option<f64>,
    /// The agent's own session, where its output names one.
    pub session: Option<String>,
}

/// Variables never handed to a child: swarm's own keys and git's repository overrides, which
/// would point the child at the user's checkout instead of its own directory.
fn is_withheld(name: &str) -> bool {
    name.starts_with("GIT_") || is_swarms_key(name)
}

/// swarm's own keys, which no profile can pass on: its API key (no agent but the built-in one
/// ever gets it) and the key that signs a remote run's records (no process of a task ever
/// does: with it, a task could forge the results of others).
fn is_swarms_key(name: &str) -> bool {
    matches!(name, "SWARM_API_KEY" | "OPENAI_API_KEY") || name == crate::remote::KEY_VAR
}

/// Runs one attempt to the end. Never returns early: when it returns, no process of the attempt
/// is left.
pub(crate) fn run(inv: &Invocation, watchdog: &Watchdog) -> Finished {
    match spawn_and_wait(inv, watchdog, reap::Wait::NATIVE) {
        Ok(done) => done,
        Err(e) => could_not_run(inv, &e),
    }
}

/// An attempt swarm could not run (its transcript says why): failed, or cut short by a fault
/// of the machine.
fn could_not_run(inv: &Invocation, e: &anyhow::Error) -> Finished {
    let _ = append(
        &inv.transcript,
        &format!("\nswarm: could not run the attempt: {e:#}\n"),
    );
    Finished {
        outcome: match Fault::of_error(e) {
            Some(fault) => Outcome::Fault(fault),
            None => Outcome::Failed(format!("could not start: {e:#}")),
        },
        stdout: String::new(),
        tokens: 0,
        prompt_tokens: 0,
        cached_tokens: 0,
        cost: None,
        session: None,
    }
}

/// Adds `text` at the end of the transcript at `path`.
fn append(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    let mut f =
        crate::planted::open_with(path, std::fs::OpenOptions::new().append(true).create(true))?;
    f.write_all(text.as_bytes())
}

fn spawn_and_wait(
    inv: &Invocation,
    watchdog: &Watchdog,
    way: reap::Wait,
) -> anyhow::Result<Finished> {
    let started = Instant::now();
    // Made when the attempt has something the board will not hold: a line on stderr (as it
    // comes), a failure, more of a result than the board keeps, a path the kernel refused.
    let mut transcript = Transcript::when_needed(&inv.transcript, inv.transcript_cap);
    if !inv.result_on_board {
        // From the start: what a killed swarm's next attempt reads of this one goes there.
        transcript.keep()?;
    }
    transcript.note(&inv.header)?;
    transcript.note(STDERR_MARK)?;
    // Stdout goes to a file, not a pipe: a grandchild that keeps the pipe open could otherwise
    // hold the attempt hostage after the agent has exited.
    let mut out = match &inv.stdout_file {
        Some(path) => crate::planted::replace(path)?,
        None => tempfile_in(&inv.transcript)?,
    };
    // Stderr comes through a pipe and is copied into the transcript as it comes, within half
    // of the room left (stdout has the rest); the copier stops once the process has ended,
    // whoever else holds the pipe.
    let (stderr_pipe, stderr_end) = std::io::pipe()?;
    let stderr = Arc::new(Mutex::new(transcript.stream(transcript.room() / 2)));
    let printed = stderr.lock().unwrap_or_else(PoisonError::into_inner).seen();
    let copier = transcript::Copier::start(stderr_pipe, Arc::clone(&stderr))?;

    let mut cmd = command(inv);
    cmd.stdout(Stdio::from(out.try_clone()?))
        .stderr(Stdio::from(stderr_end))
        .stdin(if inv.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
    // swarm's own end of the pipe goes with the command: only the process holds it now.
    let spawned = confine::spawn(cmd, inv.confine.as_ref());
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            copier.finish();
            return Err(e.into());
        }
    };
    let pid = Pid::from_raw(child.id() as i32);
    let progress = match inv.stall {
        Some(limit) => Some((
            limit,
            vec![Sign::File(out.try_clone()?), Sign::Count(printed)],
        )),
        None => None,
    };
    let ticket = watchdog.register(pid, inv.timeout, progress);

    let writer = match (child.stdin.take(), &inv.stdin) {
        (Some(mut stdin), Some(text)) => {
            let text = text.clone();
            // A separate thread: a child that never reads must not block us on a full pipe.
            Some(std::thread::spawn(move || {
                let _ = stdin.write_all(text.as_bytes());
            }))
        }
        _ => None,
    };

    // Once the agent has exited, nothing it left behind in its group outlives it.
    let status = reap::wait_and_clear(&mut child, way)?;
    let reason = watchdog.unregister(ticket);
    if let Some(w) = writer {
        let _ = w.join();
    }
    copier.finish();
    let stderr = Arc::into_inner(stderr)
        .context("the copy of stderr outlived its thread")?
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    transcript.end(stderr)?;

    out.rewind()?;
    let mut bytes = Vec::new();
    std::io::Read::by_ref(&mut out)
        .take(RESULT_CAP as u64)
        .read_to_end(&mut bytes)?;
    let mut stdout = String::from_utf8_lossy(&bytes).into_owned();
    let whole = out.read(&mut [0u8; 1])? == 0;
    if !whole {
        stdout.push_str("\n[result cut at 1 MiB; the transcript keeps more of it]\n");
    }
    let elapsed = started.elapsed();
    let outcome = match reason {
        Some(KillReason::Timeout) => Outcome::TimedOut(inv.timeout),
        Some(KillReason::Stalled) => Outcome::Stalled(inv.stall.unwrap_or_default()),
        Some(KillReason::Stop) => Outcome::Interrupted,
        None if status.success() => Outcome::Succeeded,
        None => Outcome::Failed(describe(status)),
    };
    let refused = inv
        .confine
        .as_ref()
        .map(|confine| refusals(confine, inv, transcript.kept(), &stdout))
        .unwrap_or_default();
    // An attempt that succeeded, printed nothing on stderr and whose whole result the board
    // takes has nothing more to say: it leaves no transcript.
    let needed = transcript.kept()
        || inv.header_notes
        || !whole
        || !refused.is_empty()
        || !matches!(outcome, Outcome::Succeeded);
    if needed {
        out.rewind()?;
        transcript.note("--- stdout ---\n")?;
        let mut kept = transcript.stream(transcript.room());
        kept.copy_from(&mut out)?;
        transcript.end(kept)?;
        transcript.note(&format!("\n--- end: {} ---\n", outcome.ended(elapsed)))?;
        transcript.note(&refused)?;
        transcript.keep()?;
        transcript.redact()?;
    } else {
        // Nor anything a task put at its path.
        crate::planted::clear(&inv.transcript)?;
    }
    if let Some(path) = &inv.stdout_file {
        drop(out);
        let _ = std::fs::remove_file(path);
    }
    let stdout = crate::secret::redact(&stdout).into_owned();
    Ok(Finished {
        outcome,
        stdout,
        tokens: 0,
        prompt_tokens: 0,
        cached_tokens: 0,
        cost: None,
        session: None,
    })
}

/// The line after a transcript's header, before what the attempt printed on stderr.
const STDERR_MARK: &str = "--- stderr ---\n";

/// How much of a transcript's end is read for what the kernel refused.
const REFUSALS_READ: u64 = 1 << 20;

/// The lines for the transcript on the paths the kernel refused the attempt, as far as what it
/// printed (its stderr in the transcript, when that was `kept`, its stdout) names them; empty
/// when none.
fn refusals(confine: &confine::Confinement, inv: &Invocation, kept: bool, stdout: &str) -> String {
    let mut text = Vec::new();
    if kept && let Ok(mut f) = File::open(&inv.transcript) {
        // What the attempt printed, after the header (which holds its command).
        let len = f.metadata().map_or(0, |m| m.len());
        let printed = (inv.header.len() + STDERR_MARK.len()) as u64;
        let _ = f.seek(std::io::SeekFrom::Start(
            len.saturating_sub(REFUSALS_READ).max(printed),
        ));
        let _ = f.take(REFUSALS_READ).read_to_end(&mut text);
    }
    let text = String::from_utf8_lossy(&text);
    let mut refused = confine.refusals(&text, &inv.cwd);
    for r in confine.refusals(stdout, &inv.cwd) {
        if !refused.contains(&r) {
            refused.push(r);
        }
    }
    refused.iter().fold(String::new(), |mut lines, r| {
        lines.push_str(confine::REFUSED);
        lines.push_str(r);
        lines.push('\n');
        lines
    })
}

/// The attempt's process, not yet started: its program, directory, process group of its own and
/// environment (withheld variables removed, the invocation's set).
fn command(inv: &Invocation) -> Command {
    let mut cmd = if let Some((program, args)) = inv.argv.split_first() {
        let mut c = Command::new(program);
        c.args(args);
        c
    } else {
        // The full path: looking `sh` up along PATH costs a failed exec per entry before it.
        let mut c = Command::new("/bin/sh");
        c.arg("-c").arg(&inv.command);
        c
    };
    cmd.current_dir(&inv.cwd).process_group(0);
    for (name, _) in std::env::vars_os() {
        let Some(n) = name.to_str() else { continue };
        let passed = inv.env_pass.iter().any(|p| p == n) && !is_swarms_key(n);
        if (is_withheld(n) && !passed) || inv.env_drop.iter().any(|d| d == n) {
            cmd.env_remove(name);
        }
    }
    cmd.envs(inv.env.iter().map(|(k, v)| (k, v)));
    cmd
}

fn describe(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(sig)) => match Signal::try_from(sig) {
            Ok(s) => format!("killed by {s}"),
            Err(_) => format!("killed by signal {sig}"),
        },
        (None, None) => "ended abnormally".to_owned(),
    }
}

/// An unnamed file for the attempt's stdout: in memory where the system has `memfd_create`
/// (creating and deleting a file per attempt costs more than the attempt on some file
/// systems), else created next to the transcript and unlinked at once.
fn tempfile_in(near: &std::path::Path) -> std::io::Result<File> {
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    {
        use nix::sys::memfd::{MFdFlags, memfd_create};
        if let Ok(fd) = memfd_create(c"swarm-stdout", MFdFlags::MFD_CLOEXEC) {
            return Ok(File::from(fd));
        }
    }
    let dir = near.parent().unwrap_or_else(|| std::path::Path::new("."));
    let path = dir.join(format!(
        ".{}.stdout",
        near.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("attempt")
    ));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)?;
    std::fs::remove_file(&path)?;
    Ok(f)
}

/// Whether `program` is an executable file in a directory of `PATH`.
pub(crate) fn on_path(program: &str) -> bool {
    find_on_path(program).is_some()
}

/// The first executable file named `program` in the directories of `PATH`.
pub(crate) fn find_on_path(program: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

impl cli::Profile {
    /// The program and arguments for a task of `mode` in `session`, and the same as one line
    /// for logs.
    pub fn argv(
        &self,
        mode: crate::plan::Mode,
        session: cli::Session<'_>,
    ) -> (Vec<String>, String) {
        use cli::{Session, Sessions};
        let mode_args = match mode {
            crate::plan::Mode::Read => &self.reader_args,
            crate::plan::Mode::Write => &self.writer_args,
        };
        let mut argv: Vec<String> = std::iter::once(self.command.clone())
            .chain(mode_args.iter().cloned())
            .collect();
        let words = |w: &[&str]| w.iter().map(|&s| s.to_owned()).collect::<Vec<_>>();
        match (self.sessions, session) {
            (Sessions::Claude, Session::New(Some(id))) => {
                argv.extend(words(&["--session-id", id]));
            }
            (Sessions::Claude, Session::Continue(id)) => argv.extend(words(&["--resume", id])),
            // `codex exec [OPTIONS] resume <ID> -`: the prompt (`-`, stdin) stays last.
            (Sessions::Codex, Session::Continue(id)) => {
                let at = argv.iter().rposition(|a| a == "-").unwrap_or(argv.len());
                argv.splice(at..at, words(&["resume", id]));
            }
            _ => {}
        }
        let shown = argv.join(" ");
        (argv, shown)
    }
}

/// Runs a coding-agent CLI and reads its output with `parser`: the result, tokens and cost, its
/// session, and the errors it reports even when it exits 0. One that printed its final answer
/// and then hung until the timeout counts as done. With `denials_fail` (a task that writes), a
/// tool use the CLI refused fails the attempt: the work it was for is not done.
pub(crate) fn run_cli(
    inv: &Invocation,
    parser: cli::Parser,
    watchdog: &Watchdog,
    denials_fail: bool,
) -> Finished {
    let mut done = run(inv, watchdog);
    let mut parsed = cli::parse(parser, &done.stdout, &cli::Now::here());
    parsed.denials.extend(cli::stderr_denials(
        parser,
        &transcript_stderr(&inv.transcript, DENIAL_SCAN),
    ));
    done.tokens = parsed.tokens;
    done.prompt_tokens = parsed.prompt_tokens;
    done.cached_tokens = parsed.cached_tokens;
    done.cost = parsed.cost;
    done.session.clone_from(&parsed.session);
    if !parsed.denials.is_empty() {
        let _ = append(
            &inv.transcript,
            &format!(
                "swarm: the agent's CLI refused: {}\n",
                parsed.denials.join("; ")
            ),
        );
    }
    if let Some(limit) = parsed.usage_limit {
        done.outcome = Outcome::Limited(limit);
        return done;
    }
    done.outcome = match (
        std::mem::replace(&mut done.outcome, Outcome::Succeeded),
        parsed.error,
    ) {
        (Outcome::Succeeded, Some(e)) => {
            Outcome::Failed(format!("the agent reported an error: {e}"))
        }
        (Outcome::Succeeded, None) if denials_fail && !parsed.denials.is_empty() => {
            Outcome::Failed(format!(
                "the agent's CLI refused {}: {}",
                if parsed.denials.len() == 1 {
                    "a tool use"
                } else {
                    "tool uses"
                },
                parsed.denials.join("; ")
            ))
        }
        (Outcome::TimedOut(_) | Outcome::Stalled(_), None) if parsed.complete => {
            let _ = append(
                &inv.transcript,
                "swarm: the agent gave its final answer, then did not exit; it was stopped and its answer kept\n",
            );
            Outcome::Succeeded
        }
        (Outcome::Failed(why), Some(e)) => Outcome::Failed(format!("{why}: {e}")),
        (outcome, _) => outcome,
    };
    done.stdout = crate::secret::redact(&parsed.result).into_owned();
    done
}

/// The last `n` lines of the stderr an attempt's transcript holds (none for an agent whose
/// transcript keeps no stderr of its own), secrets hidden, trailing blank lines left out,
/// control characters (a terminal's escape sequences) dropped and each line cut at
/// `TAIL_LINE_CAP` characters.
pub(crate) fn stderr_tail(transcript: &std::path::Path, n: usize) -> Vec<String> {
    let stderr = transcript_stderr(transcript, TAIL_READ);
    // Hidden before it is cut: a secret across the cut would otherwise show its end.
    let stderr = crate::secret::redact(&stderr);
    let lines: Vec<&str> = stderr.trim_end().lines().collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| shown_line(l))
        .collect()
}

/// A line of what an agent printed, fit to be shown on a terminal: control characters (its
/// escape sequences) dropped, trailing blanks too, cut at `TAIL_LINE_CAP` characters.
pub(crate) fn shown_line(line: &str) -> String {
    let mut line: String = line
        .trim_end()
        .chars()
        .filter(|c| *c == '\t' || !c.is_control())
        .collect();
    if let Some((at, _)) = line.char_indices().nth(TAIL_LINE_CAP) {
        line.truncate(at);
        line.push('…');
    }
    line
}

/// A line of a failed attempt's stderr tail is cut at this many characters.
const TAIL_LINE_CAP: usize = 300;

/// What the attempt's transcript holds of the agent's stderr: its last lines, `most` bytes
/// of them at most, read a line (or a long line's piece) at a time.
fn transcript_stderr(transcript: &std::path::Path, most: usize) -> String {
    use std::io::BufRead as _;
    /// A line longer than this is read in pieces.
    const PIECE: u64 = 64 * 1024;
    let Ok(file) = crate::planted::open(transcript) else {
        return String::new();
    };
    let mut reader = std::io::BufReader::new(file);
    let mut kept = std::collections::VecDeque::new();
    let (mut held, mut within) = (0, false);
    loop {
        let mut line = Vec::new();
        match std::io::Read::by_ref(&mut reader)
            .take(PIECE)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if !within {
            within = line == b"--- stderr ---\n";
            continue;
        }
        if line == b"--- stdout ---\n" {
            break;
        }
        held += line.len();
        kept.push_back(line);
        while held > most {
            held -= kept.pop_front().map_or(0, |l| l.len());
        }
    }
    String::from_utf8_lossy(&kept.into_iter().flatten().collect::<Vec<u8>>()).into_owned()
}

/// Of a transcript's stderr, at most this much is read back for its last lines: 20 lines
/// are shown, each cut at `TAIL_LINE_CAP` characters.
const TAIL_READ: usize = 256 * 1024;

/// Of a transcript's stderr, at most this much is scanned for the refusals a CLI reports
/// there.
const DENIAL_SCAN: usize = 16 << 20;

/// Runs a hook (`--on-escalate`) with `input` on stdin and waits for it, at most a minute.
/// Returns what happened, for the event log.
pub(crate) fn run_hook(
    command: &str,
    input: &str,
    cwd: &std::path::Path,
    transcript: &std::path::Path,
    transcript_cap: u64,
    watchdog: &Watchdog,
) -> String {
    let mut inv = Invocation::shell(
        command,
        cwd.to_owned(),
        Duration::from_secs(60),
        transcript.to_owned(),
        transcript_cap,
        format!("hook: {command}\n"),
    );
    inv.stdin = Some(input.to_owned());
    inv.env = vec![("SWARM_ACTIVE".to_owned(), "1".to_owned())];
    run(&inv, watchdog).outcome.describe()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_shown_line_loses_the_escape_sequences_and_the_length_an_agent_gave_it() {
        assert_eq!(
            super::shown_line("\u{1b}[31mred\u{1b}[0m\tand\u{7} more  "),
            "[31mred[0m\tand more"
        );
        let long = "x".repeat(400);
        let shown = super::shown_line(&long);
        assert_eq!(shown.chars().count(), super::TAIL_LINE_CAP + 1);
        assert!(shown.ends_with('…'));
    }
}
