//! The real CLIs as writers under swarm's confinement (Landlock, on by default): the edit in
//! the task's checkout is merged and lands, while what the model tells the CLI to write outside
//! it (into the user's working tree and into HOME, with the CLI's shell tool and with its own
//! file-writing tool) is refused by the kernel, whatever the CLI itself would allow: Claude
//! Code with `Bash` allowed and HOME added to its directories, Codex without a sandbox of its
//! own (`danger-full-access`, as swarm's profile runs it confined). The refusals reach the
//! model as the errors the tools got, and the attempt's transcript names the paths the CLI's
//! output shows refused. With `SWARM_CONFINE=off` the same writes get through (and swarm's
//! check of the user's checkout stops the run): the tests can fail.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde_json::json;

use super::{Cli, Rig, task_status};
use crate::model_server::{Reply, Request};
use crate::{assert_exit, status_json, stdout};

/// How swarm's lines on the kernel's refusals start, in a transcript.
const REFUSED: &str = "swarm: the kernel refused ";

/// What the task writes in its own checkout.
const INSIDE: &str = "inside.txt";
const INSIDE_TEXT: &str = "inside\n";

/// Where the model tells the CLI to write, outside the task's checkout.
#[derive(Clone, Debug)]
struct Targets {
    /// In the user's working tree, with the shell.
    repo: PathBuf,
    /// In HOME, with the shell.
    home: PathBuf,
    /// In HOME, with the CLI's own file-writing tool.
    tool: PathBuf,
}

impl Targets {
    fn of(rig: &Rig) -> Self {
        Self {
            repo: rig.repo.root.join("escaped.txt"),
            home: rig.home().join("escaped.txt"),
            tool: rig.home().join("escaped-by-tool.txt"),
        }
    }

    fn all(&self) -> [&Path; 3] {
        [&self.repo, &self.home, &self.tool]
    }
}

/// The model's turns: the CLI's own tool writes `inside.txt`, its shell writes each of the
/// shell's targets, its own tool writes the tool's target, then the answer quotes what each
/// call gave back (as a model tells what went wrong).
fn script(cli: Cli, req: &Request, targets: &Targets) -> Reply {
    let shell = |path: &Path| {
        let command = format!("echo escaped > {}", path.display());
        match cli {
            Cli::Claude => Reply::tool_call("Bash", json!({"command": command})),
            Cli::Codex => Reply::tool_call("exec_command", json!({"cmd": command})),
        }
    };
    let write = |path: &str, text: &str| match cli {
        Cli::Claude => Reply::tool_call("Write", json!({"file_path": path, "content": text})),
        Cli::Codex => Reply::freeform(
            "apply_patch",
            format!("*** Begin Patch\n*** Add File: {path}\n+{text}*** End Patch\n"),
        ),
    };
    let results = req.tool_results();
    match results.len() {
        0 => write(INSIDE, INSIDE_TEXT),
        1 => shell(&targets.repo),
        2 => shell(&targets.home),
        3 => write(&targets.tool.display().to_string(), "escaped\n"),
        _ => Reply::text(format!("DONE: {}", results.join(" | "))),
    }
}

/// A run of one writer whose model writes inside its checkout and then outside it.
struct Escape {
    rig: Rig,
    targets: Targets,
    out: std::process::Output,
    task: serde_json::Value,
    transcript: String,
    /// The files of the user's working tree (not `.git`) before the run.
    before: BTreeMap<String, Vec<u8>>,
}

/// The files of the user's working tree, without HEAD and the index.
fn files(rig: &Rig) -> BTreeMap<String, Vec<u8>> {
    let mut state = rig.repo.state();
    for key in ["HEAD", "HEAD commit", "index"] {
        state.remove(key);
    }
    state
}

/// Runs the writer `w` of `cli` with `profile` (a `.swarm.toml` of the user's, committed,
/// given the test's HOME) and `env` on swarm's command line.
fn escape(
    cli: Cli,
    test: &str,
    profile: Option<fn(&Path) -> String>,
    env: &[(&str, &str)],
) -> Escape {
    let wanted = Arc::new(OnceLock::<Targets>::new());
    let known = Arc::clone(&wanted);
    let rig = Rig::start(cli, test, move |req, _| {
        script(
            cli,
            req,
            known.get().expect("the targets are set before swarm runs"),
        )
    });
    let targets = Targets::of(&rig);
    wanted.set(targets.clone()).unwrap();
    if let Some(profile) = profile {
        rig.repo.write(".swarm.toml", &profile(&rig.home()));
        rig.repo.commit_all("the agent's profile");
    }
    let before = files(&rig);

    let task = json!({"id": "w", "prompt": "Write inside, then outside. (task: w)",
                      "lane": "coder"});
    let file = rig.repo.tasks(&[&task.to_string()]);
    let out = rig
        .swarm_cmd()
        .args(["run", file.to_str().unwrap(), "--agent", cli.name()])
        .args(["--retries", "0", "--task-timeout", "2m"])
        .envs(env.iter().copied())
        .output()
        .expect("running swarm");

    let status = status_json(&rig.repo);
    let task = task_status(&status, "w");
    let transcript = std::fs::read_to_string(task["transcript"].as_str().unwrap()).unwrap();
    rig.assert_no_other_host();
    Escape {
        rig,
        targets,
        out,
        task,
        transcript,
        before,
    }
}

/// Claude Code's writer arguments with its own checks out of the way: `Bash` allowed, and
/// HOME (the user's repository is in it) added to the directories its `Write` may write.
/// Only the kernel then stands between its tools and the files outside the checkout.
fn claude_allows_everything(home: &Path) -> String {
    format!(
        "[agents.claude]\nwriter-args = [\"-p\", \"--output-format\", \"json\", \"--permission-mode\", \"acceptEdits\", \"--allowedTools\", \"Bash\", \"--add-dir\", \"{}\"]\n",
        home.display()
    )
}

/// Codex's writer arguments as swarm's built-in profile gives them under confinement (no
/// sandbox of Codex's own), for a run that is not confined.
fn codex_without_its_sandbox(_: &Path) -> String {
    "[agents.codex]\nwriter-args = [\"exec\", \"--json\", \"--sandbox\", \"danger-full-access\", \"--skip-git-repo-check\", \"-\"]\n"
        .to_owned()
}

impl Escape {
    /// What the run did, for a failed assertion's message.
    fn said(&self) -> String {
        format!(
            "--- swarm's stdout ---\n{}\n--- task ---\n{:#}\n--- transcript ---\n{}",
            stdout(&self.out),
            self.task,
            self.transcript
        )
    }

    /// What the CLI answered to each of the model's tool calls, in order.
    fn results(&self) -> Vec<String> {
        self.rig
            .server
            .model_requests()
            .last()
            .map(Request::tool_results)
            .unwrap_or_default()
    }

    /// Asserts that the transcript has swarm's line on the kernel's refusing `path`.
    #[track_caller]
    fn assert_refusal_noted(&self, path: &Path) {
        let line = format!(
            "{REFUSED}{}: outside what this task may write",
            path.display()
        );
        assert!(
            self.transcript.lines().any(|l| l.starts_with(&line)),
            "no {line:?} in the transcript:\n{}",
            self.said()
        );
    }

    /// Asserts what a confined writer leaves: its edit merged and landed, nothing outside its
    /// checkout, and each shell write refused with EACCES (the shell's "Permission denied").
    #[track_caller]
    fn assert_confined(&self) {
        assert_exit(&self.out, 0);
        assert_eq!(self.task["status"], "done", "{}", self.said());
        assert_eq!(self.task["attempts"], 1, "{}", self.said());
        for path in self.targets.all() {
            assert!(
                !path.exists(),
                "{} was written from inside the task (does this kernel have Landlock?)\n{}",
                path.display(),
                self.said()
            );
        }
        // The user's checkout: what it had, and the task's file, landed.
        let mut expected = self.before.clone();
        expected.insert(INSIDE.to_owned(), INSIDE_TEXT.as_bytes().to_vec());
        assert_eq!(files(&self.rig), expected, "{}", self.said());
        let commit = self.task["commit_id"].as_str().unwrap();
        let committed = self
            .rig
            .repo
            .git(&["show", "--name-only", "--format=", commit]);
        assert_eq!(committed.trim(), INSIDE, "{}", self.said());
        let results = self.results();
        assert_eq!(results.len(), 4, "{results:#?}");
        for (result, path) in results[1..3]
            .iter()
            .zip([&self.targets.repo, &self.targets.home])
        {
            assert!(
                result.contains(&format!("{}: Permission denied", path.display())),
                "{results:#?}"
            );
        }
    }

    /// Asserts what an unconfined writer leaves: every file outside written, and the run
    /// stopped by swarm's check of the user's checkout, nothing of the attempt merged.
    #[track_caller]
    fn assert_unconfined(&self) {
        for path in self.targets.all() {
            assert_eq!(
                std::fs::read_to_string(path).ok().as_deref(),
                Some("escaped\n"),
                "{} not written\n{}",
                path.display(),
                self.said()
            );
        }
        assert_exit(&self.out, 75);
        assert_eq!(self.task["status"], "interrupted", "{}", self.said());
        assert!(
            stdout(&self.out).contains("changed while an attempt ran (escaped.txt)"),
            "{}",
            self.said()
        );
        assert!(!self.rig.repo.root.join(INSIDE).exists(), "{}", self.said());
        assert!(!self.transcript.contains(REFUSED), "{}", self.said());
    }
}

#[test]
#[cfg_attr(
    not(all(has_claude, has_landlock)),
    ignore = "needs the claude CLI and Landlock: one is missing here; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN), on a kernel that confines"
)]
fn claude_writer_confined_lands_its_edit_and_is_refused_writes_outside() {
    let e = escape(
        Cli::Claude,
        "claude_writer_confined_lands_its_edit_and_is_refused_writes_outside",
        Some(claude_allows_everything),
        &[],
    );
    e.assert_confined();
    // `Write` writes a temporary file beside its target, then renames it: refused at the
    // first.
    let results = e.results();
    let refused = format!(
        "EACCES: permission denied, open '{}",
        e.targets.tool.display()
    );
    assert!(results[3].contains(&refused), "{results:#?}");
    // Claude Code prints no tool's result (`--output-format json` is its final answer alone,
    // one line, with no permission denial in it): the refusals show in the transcript only as
    // far as the model's answer quotes them, and then by the first path it names.
    assert!(
        e.transcript.contains(r#""permission_denials":[]"#),
        "{}",
        e.said()
    );
    e.assert_refusal_noted(&e.targets.repo);
}

#[test]
#[cfg_attr(
    not(has_claude),
    ignore = "needs the claude CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn claude_writer_unconfined_writes_outside_its_checkout() {
    let e = escape(
        Cli::Claude,
        "claude_writer_unconfined_writes_outside_its_checkout",
        Some(claude_allows_everything),
        &[("SWARM_CONFINE", "off")],
    );
    e.assert_unconfined();
}

#[test]
#[cfg_attr(
    not(all(has_codex, has_landlock)),
    ignore = "needs the codex CLI and Landlock: one is missing here; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN), on a kernel that confines"
)]
fn codex_writer_confined_lands_its_edit_and_is_refused_writes_outside() {
    let e = escape(
        Cli::Codex,
        "codex_writer_confined_lands_its_edit_and_is_refused_writes_outside",
        None,
        &[],
    );
    e.assert_confined();
    assert!(
        e.transcript
            .contains("command: codex exec --json --sandbox danger-full-access "),
        "{}",
        e.said()
    );
    // Its patch outside the project is no longer rejected by a sandbox of Codex's own: Codex
    // tries it, and the kernel refuses the write (Codex says so without the errno).
    let results = e.results();
    let failed = format!("Failed to write file {}", e.targets.tool.display());
    assert!(results[3].contains(&failed), "{results:#?}");
    // Codex prints each command's output in its events: each refused path is named.
    e.assert_refusal_noted(&e.targets.repo);
    e.assert_refusal_noted(&e.targets.home);
}

#[test]
#[cfg_attr(
    not(has_codex),
    ignore = "needs the codex CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn codex_writer_unconfined_without_its_sandbox_writes_outside_its_checkout() {
    let e = escape(
        Cli::Codex,
        "codex_writer_unconfined_without_its_sandbox_writes_outside_its_checkout",
        Some(codex_without_its_sandbox),
        &[("SWARM_CONFINE", "off")],
    );
    e.assert_unconfined();
}
