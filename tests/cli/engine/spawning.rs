//! Tasks that add tasks: an agent writes task-file lines to `$SWARM_SPAWN`, they join the
//! running DAG under their parent, the parent's continuation (`then`) gets their results, the
//! limits refuse what is past them, and a kill -9 after the spawn loses and doubles nothing.

use std::path::Path;

use serde_json::{Value, json};

use super::{lines_of, path_arg, sh, task_status, task_file};
use crate::{TestRepo, assert_exit, outside, status_json, stdout};

/// An exec agent: the task `fan` spawns the lines of `$OUT/spawn.jsonl` and saves its
/// capacity; a continuation saves its prompt; every other task records its start and end in
/// `$OUT/log` and answers with its id.
fn agent(out: &Path) -> String {
    let script = out.join("agent.sh");
    std::fs::write(
        &script,
        r#"case "$SWARM_TASK_ID" in
  fan) cat "$OUT/spawn.jsonl" > "$SWARM_SPAWN"; printf '%s\n' "$SWARM_CAPACITY" > "$OUT/capacity.json"; echo fanned ;;
  *.then|*.sum) cat > "$OUT/prompt-$SWARM_TASK_ID.txt"; echo "summed" ;;
  *) echo "start $SWARM_TASK_ID" >> "$OUT/log"
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

fn spawn_lines(out: &Path, lines: &[Value]) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(out.join("spawn.jsonl"), text).unwrap();
}

fn children(n: usize) -> Vec<Value> {
    (1..=n)
        .map(|k| json!({"id": format!("c{k}"), "prompt": format!("part {k}"), "mode": "read"}))
        .collect()
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
    spawn_lines(&out, &children(12));
    let tasks = task_file(
        &repo,
        &[json!({
            "id": "fan", "prompt": "Split the work.", "mode": "read",
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
        serde_json::from_str(&std::fs::read_to_string(out.join("capacity.json")).unwrap())
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
        assert!(edges.iter().any(|e| e["from"] == "fan" && e["to"] == child.as_str()));
        assert!(edges.iter().any(|e| e["from"] == child.as_str() && e["to"] == "fan.sum"));
    }
    let dot = stdout(&repo.swarm(&["graph", "--format", "dot"]));
    assert!(dot.contains("subgraph cluster_0 {\n    label=\"spawned by fan\";"), "{dot}");
    let report = crate::run_report(&repo);
    assert!(report.contains("spawned by fan"), "{report}");
}
