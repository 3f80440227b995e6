//! The confinement holds in every kind of run: a goal run, a run of several goals, the queue, a
//! run killed with `kill -9` and resumed, and a run spread over machines (`--remote`). In each,
//! hostile tasks (an `exec:` agent, a `run` task) beside well-behaved writers try everything
//! `hostile_script` tries, and the checkout of the writer beside them; every try is refused and
//! said so in their transcripts, nothing escapes, no canary is anywhere, and their own work
//! lands where the run lands.

use std::fmt::Write as _;
use std::io::{BufReader, Read as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::{
    AWS_CANARY, SSH_CANARY, assert_confining, hostile_script, nothing_escaped, plant_canaries,
};
use crate::fake_llm::{FakeLlm, Reply, has_tool};
use crate::gate::Gate;
use crate::remote::git;
use crate::{TestRepo, assert_exit, outside, read_until, search_path, stderr};

/// What starts each line swarm adds to a transcript for a path the kernel refused.
const REFUSED: &str = "swarm: the kernel refused ";

fn fifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
}

/// A shell script for an `exec:` agent that runs the tasks named (whatever a run prefixes to
/// their ids) `hostile-<tag>`, `good-<tag>` and anything else (a reducer), for each of `tags`.
/// The hostile writer waits until its peer `good-<tag>` has started, tries to write in the
/// peer's checkout (found from its own, in the directory that holds both), lets the peer go on,
/// then does what `hostile_script` does with the user's checkout `user` and the home `home`.
/// The peer writes `good-<tag>.txt` once let go; the reducer answers. The two meet at named
/// pipes in `dir` (so both must run at once: give the run a slot for each writer).
fn agent(dir: &Path, user: &Path, home: &Path, tags: &[&str]) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let mut script = String::from("cat > /dev/null\ncase \"$SWARM_TASK_ID\" in\n");
    for tag in tags {
        let (started, tried) = (
            dir.join(format!("started-{tag}")),
            dir.join(format!("tried-{tag}")),
        );
        fifo(&started);
        fifo(&tried);
        let (started, tried) = (started.display(), tried.display());
        write!(
            script,
            "*hostile-{tag})\n\
             cat '{started}' > /dev/null\n\
             peer=\"$(dirname \"$PWD\")/$(printf %s \"$SWARM_TASK_ID\" | sed 's/hostile-/good-/')\"\n\
             [ -d \"$peer\" ] || echo \"no peer at $peer\"\n\
             echo x > \"$peer/escaped-{tag}-peer.txt\" || true\n\
             echo tried > '{tried}'\n\
             {}\n;;\n",
            hostile_script(user, home, tag)
        )
        .unwrap();
        write!(
            script,
            "*good-{tag})\n\
             echo started > '{started}' && cat '{tried}' > /dev/null && echo good > good-{tag}.txt\n;;\n"
        )
        .unwrap();
    }
    script += "*) echo 'RESULT: the goal is done' ;;\nesac\n";
    let path = dir.join("agent.sh");
    std::fs::write(&path, script).unwrap();
    path
}

/// A goal's plan: a hostile writer and a good one, tagged `tag`, then a reducer.
fn plan(tag: &str) -> Reply {
    let tasks = json!([
        {"id": format!("hostile-{tag}"), "prompt": "Add a file of your own.", "deps": [], "lane": "coder"},
        {"id": format!("good-{tag}"), "prompt": "Add a good file.", "deps": [], "lane": "coder"},
        {"id": format!("final-{tag}"), "prompt": "Report what was done.",
         "deps": [format!("hostile-{tag}"), format!("good-{tag}")], "lane": "reducer"},
    ]);
    Reply::ToolCalls(vec![(
        format!("plan-{tag}"),
        "submit_plan".into(),
        json!({ "tasks": tasks }),
    )])
}

/// The goal of the tasks tagged `tag`.
fn goal(tag: &str) -> String {
    format!("GOAL-{tag}: add files")
}

/// A model that plans each goal `goal(tag)` with `plan(tag)`, and says the goals need nothing
/// of each other.
fn planner() -> FakeLlm {
    FakeLlm::start(|req, _| {
        if has_tool(req, "submit_dependencies") {
            return Reply::ToolCalls(vec![(
                "needs-1".into(),
                "submit_dependencies".into(),
                json!({ "dependencies": [] }),
            )]);
        }
        if has_tool(req, "submit_plan") {
            // The goal planned is named on the line after `Goal:`, or alone in the text.
            let text = crate::goals::user_text(req);
            let named = crate::fake_llm::planned_goal(req);
            let named = named.as_str();
            let on = |t: &str| {
                ["a", "b"]
                    .into_iter()
                    .filter(|tag| t.contains(&goal(tag)))
                    .collect::<Vec<_>>()
            };
            let tags = if on(named).len() == 1 {
                on(named)
            } else {
                on(&text)
            };
            assert_eq!(tags.len(), 1, "which goal is planned?\n{text}");
            return plan(tags[0]);
        }
        Reply::Text("unexpected request".into())
    })
}

/// `swarm` in `repo` with the model `llm` and the agent `agent` for every task.
fn swarm_with(repo: &TestRepo, llm: &FakeLlm, agent: &Path) -> Command {
    let mut cmd = repo.swarm_cmd();
    cmd.env("SWARM_API_BASE", llm.base_url())
        .env("SWARM_AGENT", format!("exec:sh '{}'", agent.display()));
    cmd
}

/// `swarm show ID --json` in `cmd`'s repository.
fn show(mut cmd: Command, id: &str) -> Value {
    let out = cmd.args(["show", id, "--json"]).output().unwrap();
    assert_exit(&out, 0);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("show --json: {e}"))
}

/// The ids of the newest run's tasks (in `status`) that end with `end`.
fn ids_ending(status: &Value, end: &str) -> Vec<String> {
    status["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["id"].as_str())
        .filter(|id| id.ends_with(end))
        .map(str::to_owned)
        .collect()
}

/// The id of the one task of the newest run in `repo` that ends with `end`.
fn the_id(repo: &TestRepo, end: &str) -> String {
    let status = crate::status_json(repo);
    let ids = ids_ending(&status, end);
    assert_eq!(ids.len(), 1, "{end}: {ids:?} in {status:#}");
    ids[0].clone()
}

/// Checks the newest transcript of the task `shown` (`show --json`), a hostile one tagged
/// `tag` with the user's checkout `user` and home `home`: every try it made is named there as
/// refused, `show` says so too; returns the number of its newest attempt.
fn assert_refused(shown: &Value, user: &Path, home: &Path, tag: &str, peer: bool) -> u64 {
    let path = shown["transcript"]["path"]
        .as_str()
        .unwrap_or_else(|| panic!("no transcript in {shown:#}"));
    let transcript = std::fs::read_to_string(path).unwrap();
    let (user, home) = (user.display(), home.display());
    for refused in [
        format!("{home}/.ssh/id_ed25519: no task may read it"),
        format!("{home}/.aws/credentials: no task may read it"),
        format!("{user}/escaped-{tag}.txt: outside what this task may write"),
        format!("{home}/escaped-{tag}.txt: outside what this task may write"),
        format!("{home}/.bashrc: outside what this task may write"),
    ] {
        assert!(
            transcript.contains(&format!("{REFUSED}{refused}")),
            "{tag}: no {refused:?} in\n{transcript}"
        );
    }
    if peer {
        // The peer's checkout was there, and writing in it was refused.
        assert!(
            !transcript.contains("no peer at"),
            "{tag}: the peer had no checkout\n{transcript}"
        );
        let peer = format!("/escaped-{tag}-peer.txt: ");
        assert!(
            transcript
                .lines()
                .any(|l| l.starts_with(REFUSED) && l.contains(&peer)),
            "{tag}: no refusal of {peer:?} in\n{transcript}"
        );
    }
    let said: Vec<&str> = shown["transcript"]["refused"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        said.iter()
            .any(|r| r.starts_with(&format!("{home}/.ssh/id_ed25519"))),
        "{said:?}"
    );
    let attempts = shown["attempts"].as_array().unwrap();
    attempts.last().expect("an attempt")["number"]
        .as_u64()
        .unwrap()
}

/// What a user sees of the hostile tasks tagged `tags` in `repo` after their run landed: their
/// own files are there, what they stole is nothing, no file they tried to write anywhere else is
/// in the history or the checkout, nothing escaped (`nothing_escaped`, also looking in
/// `elsewhere`).
fn landed_and_nothing_escaped(repo: &TestRepo, home: &Path, tags: &[&str], elsewhere: &[&Path]) {
    for tag in tags {
        assert_eq!(repo.read(&format!("mine-{tag}.txt")), format!("{tag}\n"));
        assert_eq!(repo.read(&format!("stolen-{tag}.txt")), "", "{tag} stole");
    }
    let files = repo.git(&["log", "--all", "--name-only", "--format="]);
    assert!(!files.contains("escaped-"), "{files}");
    for tag in tags {
        assert!(!repo.root.join(format!("escaped-{tag}-peer.txt")).exists());
    }
    let mut all = vec![repo.shared.as_path(), repo.cache.as_path()];
    all.extend(elsewhere);
    nothing_escaped(repo, home, tags, &all);
}

#[test]
#[cfg_attr(
    not(has_landlock),
    ignore = "needs Landlock: this kernel does not confine (Linux 5.13 or later, with landlock in its lsm= list)"
)]
fn in_a_goal_run_the_planned_hostile_agent_is_refused_and_its_work_lands() {
    assert_confining();
    let repo = TestRepo::new();
    let home = plant_canaries(&repo);
    let agent = agent(&outside(&repo, "agent"), &repo.root, &home, &["a"]);
    let llm = planner();
    let report = outside(&repo, "report.md");

    let out = swarm_with(&repo, &llm, &agent)
        .args(["--goal", &goal("a"), "-j", "2", "--final-out"])
        .arg(&report)
        .output()
        .unwrap();

    assert_exit(&out, 0);
    assert_eq!(repo.read("good-a.txt"), "good\n");
    landed_and_nothing_escaped(&repo, &home, &["a"], &[&report]);
    let summary = std::fs::read_to_string(&report).unwrap();
    assert!(
        summary.contains("Tasks ran confined by the kernel (Landlock)"),
        "{summary}"
    );
    let id = the_id(&repo, "hostile-a");
    assert_refused(&show(repo.swarm_cmd(), &id), &repo.root, &home, "a", true);
}

#[test]
#[cfg_attr(
    not(has_landlock),
    ignore = "needs Landlock: this kernel does not confine (Linux 5.13 or later, with landlock in its lsm= list)"
)]
fn in_a_run_of_two_goals_each_goals_hostile_agent_is_refused_and_both_land() {
    assert_confining();
    let repo = TestRepo::new();
    let home = plant_canaries(&repo);
    let agent = agent(&outside(&repo, "agent"), &repo.root, &home, &["a", "b"]);
    let llm = planner();
    let report = outside(&repo, "report.md");

    let out = swarm_with(&repo, &llm, &agent)
        .args(["--goal", &goal("a"), "--goal", &goal("b"), "-j", "4"])
        .arg("--final-out")
        .arg(&report)
        .output()
        .unwrap();

    assert_exit(&out, 0);
    for tag in ["a", "b"] {
        assert_eq!(repo.read(&format!("good-{tag}.txt")), "good\n");
    }
    landed_and_nothing_escaped(&repo, &home, &["a", "b"], &[&report]);
    for tag in ["a", "b"] {
        let id = the_id(&repo, &format!("hostile-{tag}"));
        assert_refused(&show(repo.swarm_cmd(), &id), &repo.root, &home, tag, true);
    }
}

#[test]
#[cfg_attr(
    not(has_landlock),
    ignore = "needs Landlock: this kernel does not confine (Linux 5.13 or later, with landlock in its lsm= list)"
)]
fn in_the_queue_each_queued_goals_hostile_agent_is_refused_and_both_land() {
    assert_confining();
    let repo = TestRepo::new();
    let home = plant_canaries(&repo);
    let agent = agent(&outside(&repo, "agent"), &repo.root, &home, &["a", "b"]);
    let llm = planner();
    for tag in ["a", "b"] {
        let out = swarm_with(&repo, &llm, &agent)
            .args(["queue", "add", &goal(tag)])
            .output()
            .unwrap();
        assert_exit(&out, 0);
    }

    let out = swarm_with(&repo, &llm, &agent)
        .args(["queue", "run", "-j", "4"])
        .output()
        .unwrap();

    assert_exit(&out, 0);
    for tag in ["a", "b"] {
        assert_eq!(repo.read(&format!("good-{tag}.txt")), "good\n");
    }
    landed_and_nothing_escaped(&repo, &home, &["a", "b"], &[]);
    for tag in ["a", "b"] {
        let id = the_id(&repo, &format!("hostile-{tag}"));
        assert_refused(&show(repo.swarm_cmd(), &id), &repo.root, &home, tag, true);
    }
    let listed = swarm_with(&repo, &llm, &agent)
        .args(["queue", "list", "--json"])
        .output()
        .unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&listed.stdout).unwrap(),
        json!([])
    );
}

/// `hostile_script` with `gate` (the first attempt's only) after its first tries.
fn gated_hostile(user: &Path, home: &Path, tag: &str, gate: &Gate) -> String {
    let script = hostile_script(user, home, tag);
    let mut lines: Vec<&str> = script.lines().collect();
    let gate = gate.shell_once();
    // The writes to the user's checkout, the peer's, the home and `.bashrc`, then the gate.
    lines.insert(4, &gate);
    lines.join("\n")
}

/// Waits until the first attempt of task `id`, in the one run of `repo`, has printed `line`
/// into its transcript.
fn wait_for_transcript(repo: &TestRepo, id: &str, line: &str) {
    let runs = repo.swarm_dir().join("runs");
    crate::wait_until(&format!("{id}'s transcript saying {line:?}"), || {
        std::fs::read_dir(&runs)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|run| {
                std::fs::read_to_string(run.path().join("attempts").join(format!("{id}.1.log")))
                    .ok()
            })
            .any(|text| text.contains(line))
            .then_some(())
    });
}

/// Whether a process still waits at `gate` (reads its pipe): if one does, it is let go.
fn still_waiting(gate: &Path) -> bool {
    let opened = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(gate);
    match opened {
        Ok(mut f) => {
            let _ = f.write_all(b"go\n");
            true
        }
        // Nobody has it open for reading.
        Err(e) if e.raw_os_error() == Some(nix::libc::ENXIO) => false,
        Err(e) => panic!("{}: {e}", gate.display()),
    }
}

#[test]
#[cfg_attr(
    not(has_landlock),
    ignore = "needs Landlock: this kernel does not confine (Linux 5.13 or later, with landlock in its lsm= list)"
)]
fn after_kill_9_mid_try_the_resumed_attempts_are_refused_as_the_first_were_and_land() {
    assert_confining();
    let repo = TestRepo::new();
    let home = plant_canaries(&repo);
    let gates = outside(&repo, "gates");
    let (run_gate, agent_gate) = (Gate::new(&gates, "run"), Gate::new(&gates, "agent"));
    let agent = outside(&repo, "hostile-agent.sh");
    let agent_script = gated_hostile(&repo.root, &home, "agent", &agent_gate);
    std::fs::write(&agent, format!("cat > /dev/null\n{agent_script}\n")).unwrap();
    let tasks = repo.tasks(&[
        &json!({"id": "good", "run": "echo good > good.txt"}).to_string(),
        &json!({"id": "run", "run": gated_hostile(&repo.root, &home, "run", &run_gate)})
            .to_string(),
        &json!({"id": "agent", "prompt": "Do your worst.",
                "agent": format!("exec:sh '{}'", agent.display())})
        .to_string(),
    ]);
    let report = outside(&repo, "report.md");

    // Killed while both hostile tasks wait at their gates, half their tries made.
    let mut swarm = repo.spawn(&[
        "run",
        tasks.to_str().unwrap(),
        "-j",
        "3",
        "--final-out",
        report.to_str().unwrap(),
    ]);
    run_gate.reached(&mut swarm);
    agent_gate.reached(&mut swarm);
    // What an attempt prints reaches its transcript through swarm, a moment after the gate.
    for id in ["run", "agent"] {
        let bashrc = format!("cannot create {}/.bashrc", home.display());
        wait_for_transcript(&repo, id, &bashrc);
    }
    swarm.kill().unwrap();
    let killed = swarm.wait_with_output().unwrap();
    assert_eq!(killed.status.code(), None, "{}", stderr(&killed));

    // What the first attempts tried was refused: nothing escaped, nothing landed.
    nothing_escaped(
        &repo,
        &home,
        &["run", "agent"],
        &[&repo.shared, &repo.cache],
    );
    assert!(!repo.root.join("mine-run.txt").exists());

    let out = repo.swarm(&["resume"]);

    // The resumed attempts ran every try, each refused, and their work landed.
    assert_exit(&out, 0);
    assert_eq!(repo.read("good.txt"), "good\n");
    landed_and_nothing_escaped(&repo, &home, &["run", "agent"], &[&report]);
    for id in ["run", "agent"] {
        let shown = show(repo.swarm_cmd(), id);
        let newest = assert_refused(&shown, &repo.root, &home, id, false);
        assert!(newest >= 2, "{id}: the newest attempt is {newest}");
        // The killed attempt's tries were refused as well, as what it printed says.
        let first = shown["attempts"][0]["transcript"].as_str().unwrap();
        let first = std::fs::read_to_string(first).unwrap();
        for tried in [
            format!("{}/escaped-{id}.txt", repo.root.display()),
            format!("{}/escaped-{id}.txt", home.display()),
            format!("{}/.bashrc", home.display()),
        ] {
            assert!(
                first.contains(&format!("cannot create {tried}: Permission denied")),
                "{id}: {tried} not refused in\n{first}"
            );
        }
    }
    // Nothing of the killed run still waits at a gate.
    for gate in ["run", "agent"] {
        assert!(
            !still_waiting(&gates.join(format!("{gate}.go"))),
            "the killed run's {gate} attempt still waited at its gate after the resume"
        );
    }
    let summary = std::fs::read_to_string(&report).unwrap();
    assert!(
        summary.contains("Tasks ran confined by the kernel (Landlock)"),
        "{summary}"
    );
}

#[test]
#[cfg_attr(
    not(has_landlock),
    ignore = "needs Landlock: this kernel does not confine (Linux 5.13 or later, with landlock in its lsm= list)"
)]
fn under_remote_the_workers_hostile_agent_is_refused_on_its_machine_and_its_work_lands() {
    assert_confining();
    // A bare repository is the remote; the user's repository runs the coordinator; the worker
    // runs in a clone of its own with a home of its own (with its own secrets), as on another
    // machine.
    let tmp = tempfile::tempdir().unwrap();
    let remote = tmp.path().join("remote.git");
    git(
        tmp.path(),
        &["init", "-q", "--bare", "-b", "main", "remote.git"],
    );
    let user = TestRepo::at(&tmp.path().join("user"));
    let user_home = plant_canaries(&user);
    user.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
    user.git(&["push", "-q", "origin", "main"]);
    let clone = tmp.path().join("worker");
    git(
        tmp.path(),
        &["clone", "-q", remote.to_str().unwrap(), "worker"],
    );
    let worker_home = tmp.path().join("worker-home");
    for (file, text) in [
        (".ssh/id_ed25519", SSH_CANARY),
        (".aws/credentials", AWS_CANARY),
        (".bashrc", "# the user's shell\n"),
    ] {
        let path = worker_home.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let agent = agent(&outside(&user, "agent"), &clone, &worker_home, &["remote"]);
    let tasks = user.tasks(&[
        &json!({"id": "hostile-remote", "prompt": "Add a file of your own.",
                "agent": format!("exec:sh '{}'", agent.display())})
        .to_string(),
        &json!({"id": "good-remote", "prompt": "Add a good file.",
                "agent": format!("exec:sh '{}'", agent.display())})
        .to_string(),
    ]);
    let report = outside(&user, "report.md");

    // The coordinator publishes the run; then the worker starts on it.
    let mut coordinator = user
        .swarm_cmd()
        .env("SWARM_REMOTE_POLL", "0.05")
        .args(["run", tasks.to_str().unwrap(), "--remote", "origin"])
        .arg("--final-out")
        .arg(&report)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = BufReader::new(coordinator.stderr.take().unwrap());
    let running = read_until(&mut said, "Running run ");
    let run = running
        .split("Running run ")
        .nth(1)
        .and_then(|l| l.split(':').next())
        .unwrap()
        .to_owned();
    let worker = Command::new(env!("CARGO_BIN_EXE_swarm"))
        .current_dir(&clone)
        .env_clear()
        .env("PATH", search_path())
        .env("HOME", &worker_home)
        .env("XDG_CACHE_HOME", worker_home.join("cache"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("NO_COLOR", "1")
        .env("TZ", "UTC")
        .env("SWARM_REMOTE_POLL", "0.05")
        .env("SWARM_WRITE_ALLOW", crate::shared_dir())
        .args(["worker", "--remote", "origin", "--run", &run, "-j", "2"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut rest = String::new();
    said.read_to_string(&mut rest).unwrap();
    let out = coordinator.wait_with_output().unwrap();

    assert_exit(&out, 0);
    assert!(rest.contains("Merged hostile-remote"), "{running}{rest}");
    let worker = worker.wait_with_output().unwrap();
    assert_exit(&worker, 0);
    assert_eq!(
        stderr(&worker).matches("result pushed (succeeded)").count(),
        2,
        "{}",
        stderr(&worker)
    );
    // The work landed in the user's checkout; on the worker's machine nothing the agent tried
    // outside its checkout happened.
    assert_eq!(user.read("good-remote.txt"), "good\n");
    let cache = worker_home.join("cache");
    let worker_git = clone.join(".git");
    landed_and_nothing_escaped(
        &user,
        &user_home,
        &["remote"],
        &[&report, &cache, &worker_git],
    );
    for repository in [&remote, &clone] {
        let objects = Command::new("git")
            .args(["cat-file", "--batch-all-objects", "--batch"])
            .current_dir(repository)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(objects.status.success(), "{}", repository.display());
        let objects = String::from_utf8_lossy(&objects.stdout);
        assert!(
            !objects.contains(SSH_CANARY) && !objects.contains(AWS_CANARY),
            "a canary is in {}",
            repository.display()
        );
        assert!(objects.contains("good\n"), "{}", repository.display());
    }
    for path in [
        clone.join("escaped-remote.txt"),
        clone.join("escaped-remote-link.txt"),
        worker_home.join("escaped-remote.txt"),
    ] {
        assert!(!path.exists(), "{} was written", path.display());
    }
    assert_eq!(
        std::fs::read_to_string(worker_home.join(".bashrc")).unwrap(),
        "# the user's shell\n"
    );
    assert_eq!(
        std::fs::read_to_string(clone.join("README.md")).unwrap(),
        "# demo\n"
    );
    assert_eq!(
        std::fs::read_to_string(clone.join("src/lib.rs")).unwrap(),
        "pub fn one() -> u32 {\n    1\n}\n"
    );
    // The transcript that came back says what was refused on the worker.
    let mut cmd = user.swarm_cmd();
    cmd.env("SWARM_REMOTE_POLL", "0.05");
    let shown = show(cmd, "hostile-remote");
    assert_refused(&shown, &clone, &worker_home, "remote", true);
}
