//! Whole-command outputs as insta snapshots: the command line, the exit code, stdout and
//! stderr, as a user sees them. What differs between machines and runs (temporary paths, run
//! ids, times, commit ids, pids) goes through one list of filters, `filters`, which every
//! snapshot here uses.

mod config;
mod failures;
mod flags;
mod help;
mod inputs;
mod inspect;
mod plans;
mod pools;
mod runs;
mod tidy;

use std::fmt;
use std::process::Output;

use crate::TestRepo;

/// Writes a task file from JSON values; returns its path.
fn task_file(repo: &TestRepo, tasks: &[serde_json::Value]) -> String {
    let lines: Vec<String> = tasks.iter().map(serde_json::Value::to_string).collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    repo.tasks(&refs).to_str().unwrap().to_owned()
}

/// The agent of the snapshots' prompt tasks: the same answer every time.
const AGENT: &str = "exec:echo The README is short.";

/// A finished swarm command: how it was called and what it printed.
pub struct CommandOutput {
    line: String,
    output: Output,
}

impl CommandOutput {
    pub fn code(&self) -> Option<i32> {
        self.output.status.code()
    }

    pub fn stdout(&self) -> String {
        crate::stdout(&self.output)
    }
}

/// `$ swarm ARGS`, `exit: N`, then stdout and stderr, each under its own header.
impl fmt::Display for CommandOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let code = self
            .output
            .status
            .code()
            .map_or_else(|| format!("{:?}", self.output.status), |c| c.to_string());
        writeln!(f, "$ {}", self.line)?;
        writeln!(f, "exit: {code}")?;
        writeln!(f, "--- stdout")?;
        f.write_str(&crate::stdout(&self.output))?;
        writeln!(f, "--- stderr")?;
        f.write_str(&crate::stderr(&self.output))
    }
}

/// Runs swarm in `repo` with `args`.
pub fn swarm(repo: &TestRepo, args: &[&str]) -> CommandOutput {
    swarm_with(repo, &[], args)
}

/// Runs swarm in `repo` with `args` and the variables of `env` added to its clean environment.
pub fn swarm_with(repo: &TestRepo, env: &[(&str, &str)], args: &[&str]) -> CommandOutput {
    let output = repo
        .swarm_cmd()
        .envs(env.iter().copied())
        .args(args)
        .output()
        .expect("running swarm");
    let words = env
        .iter()
        .map(|(name, value)| format!("{name}={}", shell_word(value)))
        .chain(std::iter::once("swarm".to_owned()))
        .chain(args.iter().map(|a| shell_word(a)));
    CommandOutput {
        line: words.collect::<Vec<_>>().join(" "),
        output,
    }
}

/// `word` as a shell would need it written.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// What differs from one machine or run to the next, and what each becomes. In order: a
/// pattern sees the text the ones above it left.
pub fn filters() -> Vec<(&'static str, &'static str)> {
    vec![
        // Where tests share files with their tasks, then each test's temporary directory
        // (`tempfile` names them with six characters after a prefix).
        (
            r"(/[\w.-]+)*/swarm-tests-shared[0-9A-Za-z]{6}(/\.tmp[0-9A-Za-z]{6})?",
            "[TMP]",
        ),
        (r"(/[\w.-]+)*/\.tmp[0-9A-Za-z]{6}", "[TMP]"),
        // The kernel's Landlock ABI.
        (r"\(ABI \d+\)", "(ABI [N])"),
        // Run ids: `20261129-071300-ab12`.
        (r"\b\d{8}-\d{6}-[0-9a-f]{4}\b", "[RUN]"),
        // The folder of a repository's checkouts: its name and a hash of its git dir.
        (r"(/[^/\s]+)-[0-9a-f]{8}\b", "$1-[HASH]"),
        (r"/dev/shm/swarm-\d+", "/dev/shm/swarm-[UID]"),
        // Event times: the time of day in `swarm logs`, milliseconds since the epoch in JSON.
        (r"(?m)^\d{2}:\d{2}:\d{2}\.\d{3} ", "[TIME] "),
        (r#""(at|[a-z_]+_at)":( ?)\d+"#, r#""$1":$2[TIMESTAMP]"#),
        (
            r#""(elapsed_ms|duration_ms|ms)":( ?)[0-9.]+"#,
            r#""$1":$2[MS]"#,
        ),
        // Local times as `swarm runs` and `swarm show` print them.
        (r"\b\d{4}-\d{2}-\d{2} \d{2}:\d{2}(:\d{2})?\b", "[DATE]"),
        (r#""pid":( ?)\d+"#, r#""pid":$1[PID]"#),
        (r"\bpid \d+", "pid [PID]"),
        // Durations as swarm prints them: `0.1s`, `1m02s`.
        (r"\b\d+\.\d+s\b", "[DURATION]"),
        (r"\b\d+m\d{2}s\b", "[DURATION]"),
        // Commit ids, whole and short.
        (r"\b[0-9a-f]{40}\b", "[COMMIT]"),
        (r"\b[0-9a-f]{7,12}\b", "[SHORT]"),
    ]
}

/// Checks `$output`'s text (a `CommandOutput`, or any `Display`) against the snapshot
/// `$name`, through `filters()`.
macro_rules! assert_output {
    ($name:expr, $output:expr $(,)?) => {
        insta::with_settings!({ filters => $crate::snapshots::filters() }, {
            insta::assert_snapshot!($name, $output);
        })
    };
}

pub(crate) use assert_output;
