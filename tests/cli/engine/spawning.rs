//! Tasks that add tasks: an agent writes task-file lines to `$SWARM_SPAWN`, they join the
//! running DAG under their parent, the parent's continuation (`then`) gets their results, the
//! limits refuse what is past them, a task the plan does not let spawn is given no spawn file
//! at all, and a kill -9 after the spawn loses and doubles nothing.

use std::path::Path;

use serde_json::{Value, json};

use super::{lines_of, path_arg, sh, task_file, task_status};
use crate::gate::Gate;
use crate::{TestRepo, assert_exit, outside, status_json, stdout};

/// An exec agent: a task spawns the lines of `$OUT/spawn-<its id>.jsonl` if there is one and
/// saves its capacity (or, given no spawn file, notes that in `$OUT/unoffered`); a continuation
/// saves its prompt; every other task records its start and end in `$OUT/log` and answers with
/// its id.
fn agent(out: &Path) -> String {
    let script = out.join("agent.sh");
    std::fs::write(
        &script,
        r#"case "$SWARM_TASK_ID" in
  *.then|*.sum) cat > "$OUT/prompt-$SWARM_TASK_ID.txt"; echo "summed" ;;
  *) if [ -f "$OUT/spawn-$SWARM_TASK_ID.jsonl" ]; then
       if [ -z "${SWARM_SPAWN+set}" ] && [ -z "${SWARM_CAPACITY+set}" ]; then
         echo "$SWARM_TASK_ID" >> "$OUT/unoffered"; echo "not offered"; exit 0
       fi
       cat "$OUT/spawn-$SWARM_TASK_ID.jsonl" > "$SWARM_SPAWN"
       printf '%s\n' "$SWARM_CAPACITY" > "$OUT/capacity-$SWARM_TASK_ID.json"
       echo "spawned by $SWARM_TASK_ID"; exit 0
     fi
     echo "start $SWARM_TASK_ID" >> "$OUT/log"
     [ -n "$WAIT_FOR" ] && while [ ! -e "$WAIT_FOR" ]; do sleep 0.01; done
     echo "ran $SWARM_TASK_ID" >> "$OUT/ran"
     echo "end $SWARM_TASK_ID" >> "$OUT/log"
     echo "result of $SWARM_TASK_ID" ;;
esac
"#,
    )
    .unwrap();
    format!("exec:sh {}", sh(&script))
}

fn spawn_lines(out: &Path, task: &str, lines: &[Value]) {
    let text: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    std::fs::write(out.join(format!("spawn-{task}.jsonl")), text).unwrap();
}

fn children(n: usize) -> Vec<Value> {
    (1..=n)
        .map(|k| json!({"id": format!("c{k}"), "prompt": format!("part {k}"), "mode": "read"}))
        .collect()
}

/// As `children`, each allowed to add `spawn` tasks in turn.
fn spawning_children(n: usize, spawn: u32) -> Vec<Value> {
    let mut lines = children(n);
    for l in &mut lines {
        l["spawn"] = json!(spawn);
    }
    lines
}

/// The most tasks the log shows running at once.
fn most_at_once(log: &[String]) -> usize {
    let (mut now, mut most) = (0usize, 0usize);
    for line in log {
        if line.starts_with("start ") {
            now += 1;
            most = most.max(now);
        } else {
            now -= 1;
        }
    }
    most
}

fn events(repo: &TestRepo, kind: &str) -> Vec<Value> {
    let out = repo.swarm(&["logs", "--json"]);
    stdout(&out)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["kind"] == kind)
        .collect()
}

#[test]
fn a_task_spawns_twelve_children_and_its_continuation_gets_their_results() {
    let repo = TestRepo::new();
    let out = outside(&repo, "agent-out");
    std::fs::create_dir_all(&out).unwrap();
    spawn_lines(&out, "fan", &children(12));
    let tasks = task_file(
        &repo,
        &[json!({
            "id": "fan", "prompt": "Split the work.", "mode": "read", "spawn": 50,
            "then": {"id": "sum", "prompt": "Sum the parts up.", "mode": "read"}
        })],
    );
    let run = repo
        .swarm_cmd()
        .env("OUT", &out)
        .args(["run", path_arg(&tasks), "-j", "3", "--agent", &agent(&out)])
        .output()
        .unwrap();
    assert_exit(&run, 0);

    // Every child ran, once, never more than -j at once.
    let mut ran = lines_of(&out.join("ran"));
    ran.sort();
    let mut want: Vec<String> = (1..=12).map(|k| format!("ran fan.c{k}")).collect();
    want.sort();
    assert_eq!(ran, want);
    assert!(most_at_once(&lines_of(&out.join("log"))) <= 3);

    // The agent was told its capacity when it started.
    let capacity: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("capacity-fan.json")).unwrap())
            .unwrap();
    assert_eq!(capacity["running"], 1, "{capacity}");
    assert_eq!(capacity["free_slots"], 2, "{capacity}");
    assert_eq!(capacity["children_left"], 50, "{capacity}");
    assert_eq!(capacity["depth_left"], 2, "{capacity}");

    // The continuation got all twelve results, after every child.
    let prompt = std::fs::read_to_string(out.join("prompt-fan.sum.txt")).unwrap();
    assert!(prompt.starts_with("Sum the parts up."), "{prompt}");
    for k in 1..=12 {
        assert!(
            prompt.contains(&format!("<result task=\"fan.c{k}\">\nresult of fan.c{k}")),
            "result of c{k} missing:\n{prompt}"
        );
    }
    let status = status_json(&repo);
    assert_eq!(status["tasks"].as_array().unwrap().len(), 14);
    for k in 1..=12 {
        assert_eq!(task_status(&status, &format!("fan.c{k}")), "done");
    }
    assert_eq!(task_status(&status, "fan.sum"), "done");
    let spawned = events(&repo, "spawned");
    assert_eq!(spawned.len(), 1, "{spawned:?}");
    assert_eq!(spawned[0]["task"], "fan");
    assert_eq!(spawned[0]["detail"]["children"], 12);

    // The graph has them under their parent.
    let graph: Value = serde_json::from_str(&stdout(&repo.swarm(&["--json", "graph"]))).unwrap();
    let nodes = graph["nodes"].as_array().unwrap();
    let under_fan: Vec<&str> = nodes
        .iter()
        .filter(|n| n["parent"] == "fan")
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(under_fan.len(), 13, "{under_fan:?}");
    let edges = graph["edges"].as_array().unwrap();
    for k in 1..=12 {
        let child = format!("fan.c{k}");
        assert!(
            edges
                .iter()
                .any(|e| e["from"] == "fan" && e["to"] == child.as_str())
        );
        assert!(
            edges
                .iter()
                .any(|e| e["from"] == child.as_str() && e["to"] == "fan.sum")
        );
    }
    let dot = stdout(&repo.swarm(&["graph", "--format", "dot"]));
    assert!(
        dot.contains("subgraph cluster_0 {\n    label=\"spawned by fan\";"),
        "{dot}"
    );
    let report = crate::run_report(&repo);
    assert!(report.contains("spawned by fan"), "{report}");
}

#[test]
fn a_spawn_past_each_limit_is_refused_with_the_reason_and_its_parent_still_completes() {
    // (limit set, what `fan` spawns, what its child `fan.c1` spawns, the refusal expected).
    type Case = (
        &'static str,
        &'static str,
        Vec<Value>,
        Vec<Value>,
        &'static str,
    );
    let cases: [Case; 8] = [
        (
            "SWARM_MAX_CHILDREN",
            "2",
            children(3),
            vec![],
            "3 tasks, past max-children (2 a task)",
        ),
        (
            "SWARM_MAX_SPAWNED",
            "3",
            spawning_children(2, 5),
            children(2),
            "2 tasks, past max-spawned (3 a run, 1 left)",
        ),
        (
            "SWARM_RETRIES",
            "1",
            spawning_children(1, 3),
            children(4),
            "4 tasks, past what fan.c1's \"spawn\" allows (3 in all below it, 3 left)",
        ),
        (
            "SWARM_RETRIES",
            "1",
            spawning_children(1, 20),
            children(20),
            "20 tasks, past what fan's \"spawn\" allows (10 in all below it, 9 left)",
        ),
        (
            "SWARM_SPAWNS_PER_MINUTE",
            "2",
            children(3),
            vec![],
            "3 tasks, past spawns-per-minute (2 a minute, 2 left now); try again later",
        ),
        (
            "SWARM_RETRIES",
            "1",
            vec![json!({"id": "c1", "prompt": "x", "colour": "red"})],
            vec![],
            "line 1 of the spawn: task \"c1\": unknown field \"colour\"",
        ),
        (
            "SWARM_RETRIES",
            "1",
            vec![json!({"id": "c1", "prompt": "x", "deps": ["nowhere"]})],
            vec![],
            "task fan.c1: unknown dependency \"nowhere\"",
        ),
        (
            "SWARM_RETRIES",
            "1",
            vec![json!({"id": "c1", "run": "echo escaped"})],
            vec![],
            "task \"c1\": a task an agent spawns has a prompt and no check (only a run task may spawn commands)",
        ),
    ];
    for (var, value, fan, child, why) in cases {
        let repo = TestRepo::new();
        let out = outside(&repo, "agent-out");
        std::fs::create_dir_all(&out).unwrap();
        spawn_lines(&out, "fan", &fan);
        if !child.is_empty() {
            spawn_lines(&out, "fan.c1", &child);
        }
        let tasks = task_file(
            &repo,
            &[json!({"id": "fan", "prompt": "Split the work.", "mode": "read", "spawn": 10})],
        );
        let run = repo
            .swarm_cmd()
            .env("OUT", &out)
            .env(var, value)
            .args(["run", path_arg(&tasks), "--agent", &agent(&out)])
            .output()
            .unwrap();
        assert_exit(&run, 0);
        let refused = events(&repo, "spawn_refused");
        assert_eq!(refused.len(), 1, "{var}: {refused:?}");
        let said = refused[0]["detail"]["why"].as_str().unwrap();
        assert!(said.starts_with(why), "{var}: {said}");
        let parent = if child.is_empty() { "fan" } else { "fan.c1" };
        assert_eq!(refused[0]["task"], parent, "{var}");
        assert!(
            crate::stderr(&run).contains(&format!("{parent}: spawn refused: {why}")),
            "{var}: {}",
            crate::stderr(&run)
        );
        // The parent completed; nothing it asked for joined.
        let status = status_json(&repo);
        assert_eq!(task_status(&status, parent), "done", "{var}");
        let ids: Vec<&str> = status["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap())
            .collect();
        let mut want = vec!["fan".to_owned()];
        if !child.is_empty() {
            want.extend((1..=fan.len()).map(|k| format!("fan.c{k}")));
        }
        assert_eq!(ids, want, "{var}");
    }
}

/// What swarm printed once it ended; a swarm still running after a minute is killed and the
/// test fails (it would have hung).
fn ended_output(child: std::process::Child) -> std::process::Output {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    if let Ok(out) = rx.recv_timeout(std::time::Duration::from_secs(60)) {
        return out.unwrap();
    }
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
    panic!("swarm did not end");
}

#[test]
fn a_spawn_file_made_a_fifo_or_a_link_is_refused_and_the_run_ends() {
    let repo = TestRepo::new();
    // A file of task lines outside the run, which a link would have made the spawn.
    let planted = outside(&repo, "lines.jsonl");
    std::fs::write(
        &planted,
        json!({"id": "sneaked", "run": "echo sneaked", "mode": "read"}).to_string() + "\n",
    )
    .unwrap();
    let cases = [
        (
            "mkfifo \"$SWARM_SPAWN\"; echo made",
            "its spawn file is a FIFO (named pipe), not a regular file",
        ),
        (
            &*format!("ln -s {} \"$SWARM_SPAWN\"; echo linked", sh(&planted)),
            "its spawn file is a symbolic link, which swarm does not follow",
        ),
    ];
    for (run, why) in cases {
        let repo = TestRepo::new();
        let tasks = task_file(
            &repo,
            &[json!({"id": "fan", "run": run, "mode": "read", "spawn": 5})],
        );
        // Confined, the spawn file could not be replaced at all: this is the defence of a
        // run the kernel cannot confine.
        let out = ended_output(repo.spawn(&["run", path_arg(&tasks), "--confine", "off"]));
        assert_exit(&out, 0);
        assert!(
            crate::stderr(&out).contains(&format!("fan: spawn refused: {why}")),
            "{}",
            crate::stderr(&out)
        );
        let refused = events(&repo, "spawn_refused");
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert_eq!(refused[0]["detail"]["why"], why);
        let status = status_json(&repo);
        assert_eq!(task_status(&status, "fan"), "done");
        assert_eq!(status["tasks"].as_array().unwrap().len(), 1, "{status:#}");
    }
}

#[test]
fn a_signal_ends_a_run_whose_task_made_its_spawn_file_a_fifo() {
    let repo = TestRepo::new();
    let gate = Gate::new(&outside(&repo, "gates"), "long");
    // `long` runs on once `fifo`'s spawn has been refused, so the signal comes after swarm
    // met the FIFO.
    let long = format!(
        "{}; {}; sleep 600",
        crate::after_event(&repo, "spawn_refused", "fifo"),
        gate.shell()
    );
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "fifo", "run": "mkfifo \"$SWARM_SPAWN\"", "mode": "read", "spawn": 5}),
            json!({"id": "long", "run": long, "mode": "read"}),
        ],
    );
    // Unconfined: confined, `mkfifo` in the run's directory is refused.
    let mut child = repo.spawn(&["run", "-j", "2", path_arg(&tasks), "--confine", "off"]);
    gate.reached(&mut child);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let out = ended_output(child);
    assert_exit(&out, 75);
    let status = status_json(&repo);
    assert_eq!(task_status(&status, "fifo"), "done");
    assert_eq!(task_status(&status, "long"), "interrupted");
}

#[test]
fn a_task_the_plan_or_the_limits_do_not_let_spawn_gets_no_spawn_file_and_adds_nothing() {
    // (the plan's line, the variables set, whose spawn is not offered, the tasks in the end).
    type Case = (
        Value,
        Vec<(&'static str, &'static str)>,
        &'static str,
        Vec<&'static str>,
    );
    let fan = |spawn: Option<u32>| {
        let mut line = json!({"id": "fan", "prompt": "Split the work.", "mode": "read"});
        if let Some(n) = spawn {
            line["spawn"] = json!(n);
        }
        line
    };
    let cases: [Case; 4] = [
        // The plan gives `fan` no `spawn`.
        (fan(None), vec![], "fan", vec!["fan"]),
        // The run turns spawning off, whatever the plan says.
        (
            fan(Some(10)),
            vec![("SWARM_SPAWNING", "off")],
            "fan",
            vec!["fan"],
        ),
        // `fan.c1` is at the deepest level.
        (
            fan(Some(10)),
            vec![("SWARM_MAX_DEPTH", "1")],
            "fan.c1",
            vec!["fan", "fan.c1"],
        ),
        // `fan.c1`'s own line gives it no `spawn`.
        (fan(Some(10)), vec![], "fan.c1", vec!["fan", "fan.c1"]),
    ];
    for (line, vars, unoffered, want) in cases {
        let repo = TestRepo::new();
        let out = outside(&repo, "agent-out");
        std::fs::create_dir_all(&out).unwrap();
        let depth_case = vars.iter().any(|(v, _)| *v == "SWARM_MAX_DEPTH");
        let first = if depth_case {
            spawning_children(1, 5)
        } else {
            children(1)
        };
        spawn_lines(&out, "fan", &first);
        spawn_lines(&out, "fan.c1", &children(1));
        let tasks = task_file(&repo, std::slice::from_ref(&line));
        let mut cmd = repo.swarm_cmd();
        cmd.env("OUT", &out);
        for (var, value) in &vars {
            cmd.env(var, value);
        }
        let run = cmd
            .args(["run", path_arg(&tasks), "--agent", &agent(&out)])
            .output()
            .unwrap();
        assert_exit(&run, 0);
        assert_eq!(
            lines_of(&out.join("unoffered")),
            [unoffered],
            "{line} {vars:?}"
        );
        assert!(events(&repo, "spawn_refused").is_empty(), "{line} {vars:?}");
        let status = status_json(&repo);
        let ids: Vec<&str> = status["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, want, "{line} {vars:?}");
    }
}

#[test]
fn a_kill_after_the_spawn_and_a_resume_run_each_child_once() {
    let repo = TestRepo::new();
    let out = outside(&repo, "agent-out");
    std::fs::create_dir_all(&out).unwrap();
    let gates = outside(&repo, "gates");
    // The children wait for `hold`; `witness` starts once `fan` is done, so its spawn is on
    // record when the kill comes, and no child has started.
    let hold = Gate::new(&gates, "hold");
    let witness = Gate::new(&gates, "witness");
    let mut lines = children(4);
    for l in &mut lines {
        l["deps"] = json!(["hold"]);
    }
    spawn_lines(&out, "fan", &lines);
    let tasks = task_file(
        &repo,
        &[
            json!({"id": "hold", "run": hold.shell_once(), "mode": "read"}),
            json!({"id": "fan", "prompt": "Split the work.", "mode": "read", "spawn": 4}),
            json!({"id": "witness", "run": witness.shell_once(), "deps": ["fan"], "mode": "read"}),
        ],
    );
    let agent = agent(&out);
    let mut child = repo
        .swarm_cmd()
        .env("OUT", &out)
        .args(["run", path_arg(&tasks), "-j", "4", "-q", "--agent", &agent])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    hold.reached(&mut child);
    witness.reached(&mut child);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        lines_of(&out.join("ran")).is_empty(),
        "a child ran before the kill"
    );

    let resumed = repo
        .swarm_cmd()
        .env("OUT", &out)
        .args(["resume", "--agent", &agent])
        .output()
        .unwrap();
    assert_exit(&resumed, 0);
    let mut ran = lines_of(&out.join("ran"));
    ran.sort();
    assert_eq!(
        ran,
        ["ran fan.c1", "ran fan.c2", "ran fan.c3", "ran fan.c4"]
    );
    let status = status_json(&repo);
    let ids: Vec<&str> = status["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "hold", "fan", "witness", "fan.c1", "fan.c2", "fan.c3", "fan.c4"
        ]
    );
    for id in ids {
        assert_eq!(task_status(&status, id), "done", "{id}");
    }
    // `fan` ran once, before the kill, and spawned once.
    assert_eq!(crate::engine::task_field(&status, "fan", "attempts"), 1);
    assert_eq!(events(&repo, "spawned").len(), 1);
}

#[test]
fn the_built_in_agent_adds_tasks_with_its_tool_within_its_capacity() {
    use crate::fake_llm::{FakeLlm, Reply, tool_results};
    let repo = TestRepo::new();
    let out = outside(&repo, "agent-out");
    std::fs::create_dir_all(&out).unwrap();
    let task = |id: &str| json!({"id": id, "prompt": format!("PART {id}"), "mode": "read"});
    let (three, four) = (
        vec![task("a"), task("b"), task("c")],
        vec![task("a"), task("b"), task("c"), task("d")],
    );
    let with_command = vec![json!({"id": "x", "run": "echo escaped", "mode": "read"})];
    // The lead asks its capacity, tries to add a command and then four tasks, adds three, and
    // finishes; each of the three answers at once.
    let llm = FakeLlm::start(move |req, _| {
        let text = crate::fake_llm::last_user_text(req);
        if let Some(part) = text.strip_prefix("PART ") {
            return Reply::text(format!("did {}", part.lines().next().unwrap_or_default()));
        }
        match tool_results(req).len() {
            0 => Reply::tool_call("call-1", "capacity", json!({})),
            1 => Reply::tool_call("call-2", "add_tasks", json!({"tasks": with_command})),
            2 => Reply::tool_call("call-3", "add_tasks", json!({"tasks": four})),
            3 => Reply::tool_call("call-4", "add_tasks", json!({"tasks": three})),
            _ => Reply::text("split in three"),
        }
    });
    let tasks = task_file(
        &repo,
        &[json!({"id": "lead", "prompt": "Split the work.", "mode": "read", "spawn": 10})],
    );
    let run = repo
        .swarm_cmd()
        .env("SWARM_API_BASE", llm.base_url())
        .env("SWARM_API_KEY", "sk-canary-key-0123456789")
        .env("SWARM_MAX_CHILDREN", "3")
        .args(["run", path_arg(&tasks), "--agent", "openai"])
        .output()
        .unwrap();
    assert_exit(&run, 0);

    let lead = llm
        .requests()
        .into_iter()
        .rev()
        .find(|r| !crate::fake_llm::last_user_text(r).starts_with("PART "))
        .unwrap();
    let answers: Vec<String> = tool_results(&lead).into_iter().map(|(_, t)| t).collect();
    let capacity: Value = serde_json::from_str(&answers[0]).unwrap();
    assert_eq!(capacity["children_left"], 3, "{capacity}");
    assert_eq!(capacity["may_add_now"], 3, "{capacity}");
    assert_eq!(
        answers[1],
        "error: task \"x\": the tasks you add have a prompt and no check or run; nothing was added"
    );
    assert_eq!(
        answers[2],
        "error: 4 tasks is more than the 3 you may add now; nothing was added, do the work yourself"
    );
    assert!(
        answers[3].starts_with("added 3 task(s): a, b, c."),
        "{}",
        answers[3]
    );
    let status = status_json(&repo);
    for id in ["lead", "lead.a", "lead.b", "lead.c"] {
        assert_eq!(task_status(&status, id), "done", "{id}");
    }
    assert_eq!(
        crate::engine::task_field(&status, "lead.b", "result"),
        "did b"
    );
    assert_eq!(status["tasks"].as_array().unwrap().len(), 4);
}

#[test]
fn tasks_spawned_in_a_pool_run_go_to_the_pools_members() {
    let repo = TestRepo::new();
    let out = outside(&repo, "agent-out");
    std::fs::create_dir_all(&out).unwrap();
    spawn_lines(&out, "fan", &children(3));
    let agent = agent(&out);
    repo.write(
        ".swarm.toml",
        &format!("[pools.p]\nmembers = [\"{agent} one\", \"{agent} two\"]\n"),
    );
    repo.commit_all("pool");
    let tasks = task_file(
        &repo,
        &[json!({"id": "fan", "prompt": "Split the work.", "mode": "read", "spawn": 3})],
    );
    let run = repo
        .swarm_cmd()
        .env("OUT", &out)
        .args(["run", path_arg(&tasks), "--agent", "pool:p"])
        .output()
        .unwrap();
    assert_exit(&run, 0);
    let mut ran = lines_of(&out.join("ran"));
    ran.sort();
    assert_eq!(ran, ["ran fan.c1", "ran fan.c2", "ran fan.c3"]);
    assert!(events(&repo, "spawn_refused").is_empty());
    let started: Vec<Value> = events(&repo, "task_started");
    assert_eq!(started.len(), 4);
    assert!(
        started.iter().all(|e| e["detail"]["agent"].is_string()),
        "{started:?}"
    );
}
