//! Completions that know the repository: the shell runs `COMPLETE=bash swarm -- <words>` on each
//! TAB (`clap_complete`'s dynamic completion), and swarm answers with the run ids of the
//! repository, newest first, and the agents its configuration names.

use std::path::Path;
use std::process::Output;

use crate::{TestRepo, assert_exit, run_id, stdout};

/// Two finished runs; their ids, oldest first.
fn two_runs(repo: &TestRepo) -> [String; 2] {
    let tasks = repo.tasks(&[r#"{"id":"look","run":"true","mode":"read"}"#]);
    let tasks = tasks.to_str().unwrap();
    assert_exit(&repo.swarm(&["run", tasks, "-q"]), 0);
    let first = run_id(repo);
    assert_exit(&repo.swarm(&["run", tasks, "-q"]), 0);
    let second = run_id(repo);
    assert_ne!(first, second);
    [first, second]
}

/// What bash's completion asks swarm for `words`, the last one being completed, as the
/// registration script does: the words after `--`, the index of the word being completed.
fn complete_in(repo: &TestRepo, dir: &Path, words: &[&str]) -> Vec<String> {
    let out: Output = repo
        .swarm_cmd()
        .current_dir(dir)
        .env("COMPLETE", "bash")
        .env("_CLAP_COMPLETE_INDEX", (words.len() - 1).to_string())
        .env("_CLAP_IFS", "\n")
        .arg("--")
        .args(words)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    stdout(&out).lines().map(str::to_owned).collect()
}

#[test]
fn run_ids_are_offered_newest_first_where_a_run_is_named() {
    let repo = TestRepo::new();
    let [older, newer] = two_runs(&repo);
    for command in ["status", "logs", "graph"] {
        let offered = complete_in(&repo, &repo.root, &["swarm", command, ""]);
        let ids: Vec<&String> = offered.iter().filter(|w| w.starts_with("20")).collect();
        assert_eq!(ids, [&newer, &older], "swarm {command} <TAB>: {offered:?}");
    }
    // `resume` and `drop` are offered only the runs that have not finished.
    for command in ["resume", "drop"] {
        let offered = complete_in(&repo, &repo.root, &["swarm", command, ""]);
        assert!(
            !offered.iter().any(|w| w.starts_with("20")),
            "swarm {command} <TAB>: {offered:?}"
        );
    }
    let db = rusqlite::Connection::open(repo.swarm_dir().join("board.db")).unwrap();
    db.execute(
        "UPDATE runs SET status = 'interrupted', finished_at = NULL WHERE id = ?1",
        [&older],
    )
    .unwrap();
    for command in ["resume", "drop"] {
        let offered = complete_in(&repo, &repo.root, &["swarm", command, ""]);
        let ids: Vec<&String> = offered.iter().filter(|w| w.starts_with("20")).collect();
        assert_eq!(ids, [&older], "swarm {command} <TAB>: {offered:?}");
    }
    let offered = complete_in(&repo, &repo.root, &["swarm", "status", ""]);
    let ids: Vec<&String> = offered.iter().filter(|w| w.starts_with("20")).collect();
    assert_eq!(ids, [&newer, &older], "swarm status <TAB>: {offered:?}");
    // The run ids of the repository `-C` names, from anywhere.
    let elsewhere = tempfile::tempdir().unwrap();
    let root = repo.root.to_str().unwrap();
    let offered = complete_in(
        &repo,
        elsewhere.path(),
        &["swarm", "-C", root, "status", ""],
    );
    assert!(
        offered.contains(&newer) && offered.contains(&older),
        "{offered:?}"
    );
    // Outside any repository there are no runs to offer, and no error.
    let offered = complete_in(&repo, elsewhere.path(), &["swarm", "status", ""]);
    assert!(!offered.iter().any(|w| w.starts_with("20")), "{offered:?}");
    assert!(!repo.root.join(".swarm.toml").exists());
}

#[test]
fn agent_names_include_the_profiles_of_the_configuration() {
    let repo = TestRepo::new();
    repo.write(
        ".swarm.toml",
        "[agents.reviewer-bot]\ncommand = \"my-agent\"\n",
    );
    for words in [
        &["swarm", "run", "tasks.jsonl", "--agent", ""][..],
        &["swarm", "--goal", "g", "--agent", ""][..],
    ] {
        let offered = complete_in(&repo, &repo.root, words);
        for agent in [
            "auto",
            "openai",
            "claude",
            "codex",
            "reviewer-bot",
            "exec:",
            "acp:",
        ] {
            assert!(
                offered.iter().any(|w| w == agent),
                "{agent} not offered: {offered:?}"
            );
        }
    }
    let offered = complete_in(&repo, &repo.root, &["swarm", "run", "t", "--agent", "rev"]);
    assert_eq!(offered, ["reviewer-bot"]);
}

/// The script `swarm completions bash` prints works in bash: sourced, its completion function
/// fills `COMPREPLY` with what the `swarm` on `PATH` offers.
#[test]
fn the_bash_script_completes_run_ids() {
    let repo = TestRepo::new();
    let [older, newer] = two_runs(&repo);
    let script = repo.swarm(&["completions", "bash"]);
    assert_exit(&script, 0);
    let script_path = repo.cache.parent().unwrap().join("swarm.bash");
    std::fs::write(&script_path, &script.stdout).unwrap();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_swarm")).parent().unwrap();
    let mut path = std::ffi::OsString::from(bin_dir);
    path.push(":");
    path.push(crate::search_path());
    let out = repo
        .command("bash")
        .env("PATH", path)
        .arg("-c")
        .arg(
            r#"source "$1"
COMP_WORDS=(swarm status "") COMP_CWORD=2
_clap_complete_swarm swarm "" status
printf '%s\n' "${COMPREPLY[@]}""#,
        )
        .arg("bash")
        .arg(&script_path)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let offered: Vec<String> = stdout(&out).lines().map(str::to_owned).collect();
    assert_eq!(offered[..2], [newer, older], "{offered:?}");
}

#[test]
fn queue_rm_offers_the_goals_no_run_has_taken() {
    let repo = TestRepo::new();
    for goal in ["Upgrade the HTTP client", "Write the changelog"] {
        assert_exit(&repo.swarm(&["queue", "add", goal]), 0);
    }
    let offered = complete_in(&repo, &repo.root, &["swarm", "queue", "rm", ""]);
    assert_eq!(offered[..2], ["1", "2"], "{offered:?}");
}

#[test]
fn retry_offers_the_writers_that_were_parked_or_failed() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[
        r#"{"id":"broken","run":"false"}"#,
        r#"{"id":"fine","run":"echo fine > fine.txt"}"#,
        r#"{"id":"peek","run":"false","mode":"read"}"#,
    ]);
    let out = repo.swarm(&["run", tasks.to_str().unwrap(), "--retries", "0", "-q"]);
    assert_exit(&out, 1);
    let tasks_offered = |words: &[&str]| -> Vec<String> {
        complete_in(&repo, &repo.root, words)
            .into_iter()
            .filter(|w| !w.starts_with('-'))
            .collect()
    };
    assert_eq!(tasks_offered(&["swarm", "retry", ""]), ["broken"]);
    let run = run_id(&repo);
    assert_eq!(
        tasks_offered(&["swarm", "retry", "--run", &run, ""]),
        ["broken"]
    );
}
