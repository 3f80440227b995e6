//! What the shell offers on TAB. swarm completes its own command lines (`clap_complete`'s dynamic
//! completion: the shell runs `COMPLETE=bash swarm -- <words>`), so it can offer what only the
//! repository knows: the ids of its runs, newest first, and the agent profiles of its
//! configuration. `swarm completions SHELL` prints the script that registers it. Reads the
//! board (never making one) and the config files, runs nothing, and a TAB never fails: what
//! cannot be read is not offered.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use clap_complete::engine::{CompletionCandidate, PathCompleter, ValueCompleter as _};

use crate::git::Repo;
use crate::store::{Board, RunStatus, TaskStatus};

/// The variable that asks swarm for completions, as `clap_complete` names it.
const VAR: &str = "COMPLETE";

/// Answers a completion request (the shell set `COMPLETE`) and exits; otherwise returns.
pub fn answer_if_asked() {
    clap_complete::CompleteEnv::with_factory(crate::cli::command)
        .var(VAR)
        .complete();
}

/// The script that registers swarm's completions in `shell`: on each TAB it asks the `swarm`
/// on `PATH` (not this binary's path, so the script reads the same on every machine).
pub fn script(shell: clap_complete::Shell) -> anyhow::Result<Vec<u8>> {
    let name = shell.to_string();
    let shells = clap_complete::env::Shells::builtins();
    let completer = shells
        .completer(&name)
        .ok_or_else(|| anyhow::anyhow!("no completions for {name}"))?;
    let mut buf = Vec::new();
    completer.write_registration(VAR, "swarm", "swarm", "swarm", &mut buf)?;
    if shell == clap_complete::Shell::Zsh {
        // Autoloaded from `fpath` as `_swarm`, the file's body runs on the first TAB: complete
        // that TAB too, instead of only registering the completer for the next one.
        buf.extend_from_slice(
            b"if [ \"$funcstack[1]\" = \"_swarm\" ]; then\n    _clap_dynamic_completer_swarm \"$@\"\nfi\n",
        );
    }
    Ok(buf)
}

/// The ids of the runs of the repository the command line is about, newest first, each with
/// its status and what it ran.
pub(crate) fn run_ids() -> Vec<CompletionCandidate> {
    runs(|_| true)
}

/// For `swarm resume` and `swarm drop`: the runs that have not finished, newest first.
pub(crate) fn unfinished_run_ids() -> Vec<CompletionCandidate> {
    runs(|status| status != RunStatus::Finished)
}

/// The runs whose status `keep` takes, newest first, each with its status and what it ran.
fn runs(keep: impl Fn(RunStatus) -> bool) -> Vec<CompletionCandidate> {
    let Some(board) = board() else {
        return Vec::new();
    };
    let Ok(runs) = board.history().runs() else {
        return Vec::new();
    };
    runs.into_iter()
        .filter(|run| keep(run.status))
        .map(|run| {
            let help = format!(
                "{} · {}",
                run.status.as_str(),
                crate::ui::one_line(&run.source, 60)
            );
            CompletionCandidate::new(run.id).help(Some(help.into()))
        })
        .collect()
}

/// The tasks of the run `--run` names, else of the newest run.
fn tasks_of_the_run() -> Vec<crate::store::TaskRecord> {
    let Some(board) = board() else {
        return Vec::new();
    };
    let run = match flag_value(&words(), None, "--run") {
        Some(run) => run.to_string_lossy().into_owned(),
        None => match board.latest_run(false) {
            Ok(Some(run)) => run,
            _ => return Vec::new(),
        },
    };
    board.load_tasks(&run).unwrap_or_default()
}

/// For `swarm steer`: the tasks of the run that are running or have yet to run, each with its
/// status.
pub(crate) fn steerable_tasks() -> Vec<CompletionCandidate> {
    tasks_of_the_run()
        .into_iter()
        .filter(|t| {
            matches!(
                t.status,
                TaskStatus::Running | TaskStatus::Pending | TaskStatus::Interrupted
            )
        })
        .map(|t| CompletionCandidate::new(t.id).help(Some(t.status.as_str().into())))
        .collect()
}

/// For `swarm retry`: the writers of the run `--run` names (else the newest run) that were
/// parked or failed, each with its status.
pub(crate) fn retryable_tasks() -> Vec<CompletionCandidate> {
    let tasks = tasks_of_the_run();
    let writer = |spec: &serde_json::Value| {
        let (tasks, _) = crate::plan::Plan::read(&spec.to_string());
        tasks.iter().any(|t| t.mode == crate::plan::Mode::Write)
    };
    tasks
        .into_iter()
        .filter(|t| matches!(t.status, TaskStatus::Parked | TaskStatus::Failed))
        .filter(|t| writer(&t.spec))
        .map(|t| CompletionCandidate::new(t.id).help(Some(t.status.as_str().into())))
        .collect()
}

/// For `swarm queue rm`: the goals of the queue no run has taken, each with its text.
pub(crate) fn queued_goals() -> Vec<CompletionCandidate> {
    let Some(items) = board().and_then(|b| b.queue().items().ok()) else {
        return Vec::new();
    };
    items
        .into_iter()
        .filter(|item| item.run_id.is_none())
        .map(|item| {
            CompletionCandidate::new(item.id.to_string())
                .help(Some(crate::ui::one_line(&item.text, 60).into()))
        })
        .collect()
}

/// For `swarm graph`: a run id or a task file.
pub(crate) fn run_ids_and_files(current: &OsStr) -> Vec<CompletionCandidate> {
    let prefix = current.to_string_lossy();
    let mut out: Vec<_> = run_ids()
        .into_iter()
        .filter(|c| c.get_value().to_string_lossy().starts_with(prefix.as_ref()))
        .collect();
    out.extend(
        PathCompleter::file()
            .current_dir(directory(&words()))
            .complete(current),
    );
    out
}

/// The agents `--agent` takes: the built-in ones, the profiles of the configuration (the
/// repository's `.swarm.toml` and the user's file, or `--config FILE`), and the prefixes of
/// commands.
pub(crate) fn agents() -> Vec<CompletionCandidate> {
    let words = words();
    let mut out = vec![
        CompletionCandidate::new("auto").help(Some(
            "openai when a model endpoint is configured, else claude or codex on PATH".into(),
        )),
        CompletionCandidate::new("openai").help(Some("the built-in agent".into())),
        CompletionCandidate::new("claude").help(Some("the Claude Code CLI".into())),
        CompletionCandidate::new("codex").help(Some("the Codex CLI".into())),
    ];
    let dir = directory(&words);
    let root = Repo::discover(&dir).ok().map(|r| r.workdir().to_owned());
    let explicit = flag_value(&words, None, "--config").map(|f| dir.join(f));
    let env = |name: &str| std::env::var(name).ok();
    if let Ok(config) = crate::config::load(
        root.as_deref(),
        &crate::config::Options::default(),
        &env,
        explicit.as_deref(),
    ) {
        for (name, (_, file)) in &config.profiles {
            if ["claude", "codex"].contains(&name.as_str()) {
                continue;
            }
            let from = file.file_name().map_or_else(
                || file.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            out.push(
                CompletionCandidate::new(name.clone())
                    .help(Some(format!("a profile from {from}").into())),
            );
        }
        for (name, pool) in &config.pools {
            out.push(
                CompletionCandidate::new(format!("{}{name}", crate::config::POOL_PREFIX)).help(
                    Some(format!("a pool of {}", pool.members.join(", ")).into()),
                ),
            );
        }
    }
    out.push(CompletionCandidate::new("exec:").help(Some(
        "exec:CMD, any program: prompt on stdin, result on stdout".into(),
    )));
    out.push(
        CompletionCandidate::new("acp:")
            .help(Some("acp:CMD, an Agent Client Protocol agent".into())),
    );
    out
}

/// The board of the repository the command line is about, if it has one.
fn board() -> Option<Board> {
    let repo = Repo::discover(&directory(&words())).ok()?;
    let dir = repo.common_dir().join("swarm");
    // No board is no runs: completing must not make one.
    if !dir.join("board.db").is_file() {
        return None;
    }
    Board::open(&dir).ok()
}

/// The words being completed: what the shell passed after `--`.
fn words() -> Vec<OsString> {
    let args: Vec<OsString> = std::env::args_os().collect();
    match args.iter().position(|a| a == "--") {
        Some(i) => args[i + 1..].to_vec(),
        None => args,
    }
}

/// The directory the command line runs in: `-C DIR` (taken from the current directory), else
/// the current directory.
fn directory(words: &[OsString]) -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    match flag_value(words, Some("-C"), "--directory") {
        Some(dir) => cwd.join(dir),
        None => cwd,
    }
}

/// The last value given to a flag in `words` (`-C DIR`, `-CDIR`, `--directory DIR`,
/// `--directory=DIR`).
fn flag_value(words: &[OsString], short: Option<&str>, long: &str) -> Option<PathBuf> {
    let mut found = None;
    let mut words = words.iter().map(|w| w.to_string_lossy());
    while let Some(word) = words.next() {
        if word == "--" {
            break;
        }
        let eq = format!("{long}=");
        if word == long || short.is_some_and(|s| word == s) {
            found = words.next().map(|v| PathBuf::from(v.as_ref()));
        } else if let Some(v) = word.strip_prefix(eq.as_str()) {
            found = Some(PathBuf::from(v));
        } else if let Some(v) = short.and_then(|s| word.strip_prefix(s))
            && !v.is_empty()
        {
            found = Some(PathBuf::from(v));
        }
    }
    found.filter(|p| !p.as_os_str().is_empty())
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::path::{Path, PathBuf};

    use super::flag_value;

    fn words(line: &str) -> Vec<OsString> {
        line.split(' ').map(OsString::from).collect()
    }

    #[test]
    fn the_directory_of_a_command_line_is_its_last_dash_c() {
        let dir = |line: &str| flag_value(&words(line), Some("-C"), "--directory");
        assert_eq!(dir("swarm status"), None);
        assert_eq!(dir("swarm -C a status"), Some(PathBuf::from("a")));
        assert_eq!(
            dir("swarm -Ca --directory b status"),
            Some(PathBuf::from("b"))
        );
        assert_eq!(dir("swarm --directory=c logs"), Some(PathBuf::from("c")));
        assert_eq!(dir("swarm -C"), None);
        assert_eq!(
            flag_value(&words("swarm --config x.toml run"), None, "--config").as_deref(),
            Some(Path::new("x.toml"))
        );
    }
}
