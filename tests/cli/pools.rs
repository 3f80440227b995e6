//! Pools of agents (`[pools.NAME]`, `--agent pool:NAME`): each attempt goes to the member with
//! room, a member at its usage limit pauses alone, and `max-concurrent` caps a profile's
//! attempts at once. The members are profiles of the fake `claude` (`fake_agents`), told apart
//! by `FAKE_TAG` and limited by `FAKE_AGENT_MODE`.

use serde_json::Value;

use crate::fake_agents::FakeAgents;
use crate::{TestRepo, assert_exit, outside, status_json, stdout};

/// A profile of the fake claude named `name`, its calls tagged `name`, with `env` set too.
fn member(name: &str, env: &str) -> String {
    format!(
        "[agents.{name}]\ncommand = \"claude\"\nargs = [\"-p\", \"--output-format\", \"json\"]\nparser = \"claude-json\"\nset-env = {{ FAKE_TAG = \"{name}\"{env} }}\n\n"
    )
}

/// The run's events, oldest first, from `swarm logs --json`.
fn events(repo: &TestRepo) -> Vec<Value> {
    let out = repo.swarm(&["logs", "--json"]);
    assert_exit(&out, 0);
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `kind` and, for attempts' starts, the member, of each event about pools and attempts.
fn story(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| {
            let kind = e["kind"].as_str()?;
            let d = &e["detail"];
            Some(match kind {
                "task_started" => format!("started {} on {}", d["attempt"], d["agent"].as_str()?),
                "member_limited" => format!("limited {}", d["member"].as_str()?),
                "member_back" => format!("back {}", d["member"].as_str()?),
                "pool_paused" => format!("paused pool {}", d["pool"].as_str()?),
                "task_succeeded" => format!("succeeded {}", d["attempt"]),
                _ => return None,
            })
        })
        .collect()
}

#[test]
fn a_limited_member_hands_the_attempt_to_another_without_a_failure_or_a_pause() {
    let repo = TestRepo::new();
    let fakes = FakeAgents::beside(&repo);
    repo.write(
        ".swarm.toml",
        &format!(
            "{}{}[pools.subs]\nmembers = [\"work\", \"home\"]\n",
            member(
                "work",
                ", FAKE_AGENT_MODE = \"usage-limit\", FAKE_RESET_IN = \"30\""
            ),
            member("home", "")
        ),
    );
    repo.commit_all("pool");
    let tasks = repo.tasks(&[
        r#"{"id":"a","prompt":"RESULT: a","lane":"analyst"}"#,
        r#"{"id":"b","prompt":"RESULT: b","deps":["a"],"lane":"reducer"}"#,
    ]);

    let out = fakes.swarm(
        &repo,
        &[
            "run",
            tasks.to_str().unwrap(),
            "--agent",
            "pool:subs",
            "--retries",
            "0",
        ],
    );

    assert_exit(&out, 0);
    let s = status_json(&repo);
    assert_eq!(s["tasks"][0]["failures"], 0, "{s}");
    assert_eq!(s["tasks"][1]["status"], "done", "{s}");
    assert_eq!(
        story(&events(&repo)),
        [
            "started 1 on work",
            "limited work",
            "started 2 on home",
            "succeeded 2",
            "started 1 on home",
            "succeeded 1",
        ]
    );
    let show = stdout(&repo.swarm(&["show", "a"]));
    assert!(show.contains("on work"), "{show}");
    assert!(show.contains("on home"), "{show}");
}

#[test]
fn with_every_member_limited_the_pool_waits_for_the_first_reset_only() {
    let repo = TestRepo::new();
    let fakes = FakeAgents::beside(&repo);
    repo.write(
        ".swarm.toml",
        &format!(
            "{}{}[pools.subs]\nmembers = [\"slow\", \"fast\"]\n",
            member(
                "slow",
                ", FAKE_AGENT_MODE = \"usage-limit\", FAKE_RESET_IN = \"60\""
            ),
            member(
                "fast",
                ", FAKE_AGENT_MODE = \"usage-limit-once\", FAKE_RESET_IN = \"2\""
            )
        ),
    );
    repo.commit_all("pool");
    let tasks = repo.tasks(&[r#"{"id":"a","prompt":"RESULT: a","lane":"reducer"}"#]);

    let out = fakes.swarm(
        &repo,
        &["run", tasks.to_str().unwrap(), "--agent", "pool:subs"],
    );

    assert_exit(&out, 0);
    assert_eq!(
        story(&events(&repo)),
        [
            "started 1 on slow",
            "limited slow",
            "started 2 on fast",
            "limited fast",
            "paused pool subs",
            "back fast",
            "started 3 on fast",
            "succeeded 3",
        ]
    );
    let s = status_json(&repo);
    assert_eq!(s["tasks"][0]["failures"], 0, "{s}");
}

#[test]
fn max_concurrent_keeps_each_member_to_one_attempt_at_a_time() {
    let repo = TestRepo::new();
    let logs = outside(&repo, "starts");
    std::fs::create_dir_all(&logs).unwrap();
    let script = outside(&repo, "one-at-a-time");
    // Each call marks its start and end in its member's file; a pause between gives a second
    // attempt of the same member the time to overlap, were it let.
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncat > /dev/null\nf='{}'/\"$1\"\necho \"start $SWARM_TASK_ID\" >> \"$f\"\nsleep 0.3\necho \"end $SWARM_TASK_ID\" >> \"$f\"\necho \"done by $1\"\n",
            logs.display()
        ),
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .unwrap();
    let profile = |name: &str| {
        format!(
            "[agents.{name}]\ncommand = \"{}\"\nargs = [\"{name}\"]\nmax-concurrent = 1\n\n",
            script.display()
        )
    };
    repo.write(
        ".swarm.toml",
        &format!(
            "{}{}[pools.pair]\nmembers = [\"left\", \"right\"]\n",
            profile("left"),
            profile("right")
        ),
    );
    repo.commit_all("pool");
    let tasks = repo.tasks(&[
        r#"{"id":"t1","prompt":"one","lane":"analyst","agent":"pool:pair"}"#,
        r#"{"id":"t2","prompt":"two","lane":"analyst","agent":"pool:pair"}"#,
        r#"{"id":"t3","prompt":"three","lane":"analyst","agent":"pool:pair"}"#,
        r#"{"id":"t4","prompt":"four","lane":"analyst","agent":"pool:pair"}"#,
    ]);

    let out = repo.swarm(&["run", tasks.to_str().unwrap(), "-j", "4"]);

    assert_exit(&out, 0);
    let mut started = 0;
    for name in ["left", "right"] {
        let text = std::fs::read_to_string(logs.join(name)).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        assert!(!lines.is_empty(), "{name} took no attempt");
        for pair in lines.chunks(2) {
            let task = pair[0].strip_prefix("start ").expect("a start first");
            assert_eq!(pair.get(1), Some(&format!("end {task}").as_str()), "{text}");
        }
        started += lines.len() / 2;
    }
    assert_eq!(started, 4);
}

#[test]
fn an_attempt_cut_short_goes_back_to_its_member_and_continues_its_session() {
    let repo = TestRepo::new();
    let fakes = FakeAgents::beside(&repo);
    repo.write(
        ".swarm.toml",
        "[pools.both]\nmembers = [\"claude\", \"codex\"]\n",
    );
    repo.commit_all("pool");
    let tasks = repo.tasks(&[
        r#"{"id":"a","prompt":"FAKE_MODE: hang-after-edit-once\nRESULT: a","lane":"reducer","timeout":"2s"}"#,
    ]);

    let out = fakes.swarm(
        &repo,
        &["run", tasks.to_str().unwrap(), "--agent", "pool:both"],
    );

    assert_exit(&out, 0);
    let story = story(&events(&repo));
    assert_eq!(
        story,
        ["started 1 on claude", "started 2 on claude", "succeeded 2"]
    );
    let calls = fakes.invocations("claude");
    assert_eq!(calls.len(), 2);
    let args = calls[1]["args"].as_array().unwrap();
    assert!(args.iter().any(|a| a == "--resume"), "{args:?}");
    assert!(fakes.invocations("codex").is_empty());
}
