use super::{Mode, Plan, TaskId};

fn ids(plan: &Plan, list: &[usize]) -> Vec<String> {
    list.iter().map(|&i| plan.tasks[i].id.to_string()).collect()
}

#[test]
fn goals_plans_share_a_run_under_their_own_prefix() {
    let a = Plan::parse(
        "{\"id\":\"scan\",\"run\":\"true\",\"mode\":\"read\"}\n{\"id\":\"sum\",\"run\":\"true\",\"deps\":[\"scan\"],\"mode\":\"read\"}\n",
        "a",
    )
    .unwrap();
    let mut run = Plan::from_tasks(a.namespaced("g1").unwrap()).unwrap();
    let added = run.extend(a.namespaced("g2").unwrap()).unwrap();
    assert_eq!(added, 2..4);
    assert_eq!(
        ids(&run, &[0, 1, 2, 3]),
        ["g1.scan", "g1.sum", "g2.scan", "g2.sum"]
    );
    assert_eq!(run.deps(3).collect::<Vec<_>>(), [2]);
    assert_eq!(run.dependents(0).collect::<Vec<_>>(), [1]);
    assert_eq!(run.goal_tasks("g2"), [2, 3]);
    // No reducer lane: the goal's one final task is its deliverable.
    assert_eq!(run.deliverable_among(&run.goal_tasks("g2")), Some(3));
    assert_eq!(run.deliverable(), None);
    // The same goal twice would duplicate ids: refused, the plan unchanged.
    assert!(run.extend(a.namespaced("g2").unwrap()).is_err());
    assert_eq!(run.len(), 4);
    let long = "x".repeat(64);
    let b = Plan::parse(&format!("{{\"id\":\"{long}\",\"run\":\"true\"}}\n"), "b").unwrap();
    assert_eq!(b.namespaced("g10").unwrap()[0].id.as_str().len(), 64);
}

#[test]
fn deps_keep_their_listed_order_and_dependents_ascend_also_after_extend() {
    let first = r#"{"id":"a","run":"true"}
{"id":"b","run":"true"}
{"id":"c","run":"true","deps":["b","a","b"]}
{"id":"d","run":"true","deps":["a"]}
"#;
    // Appended by a goal: new deps on old tasks, so old tasks gain dependents.
    let more = r#"{"id":"e","run":"true","deps":["d","c","a","d"]}
{"id":"f","run":"true","deps":["a","e"]}
"#;
    let deps = |plan: &Plan, i| plan.deps(i).collect::<Vec<_>>();
    let dependents = |plan: &Plan, i| plan.dependents(i).collect::<Vec<_>>();
    let whole = Plan::parse(&format!("{first}{more}"), "t").unwrap();
    let mut plan = Plan::parse(first, "t").unwrap();
    assert_eq!(deps(&plan, 2), [1, 0]);
    assert_eq!(dependents(&plan, 0), [2, 3]);
    assert_eq!(dependents(&plan, 1), [2]);
    assert_eq!(plan.extend(whole.tasks[4..].to_vec()).unwrap(), 4..6);
    for p in [&plan, &whole] {
        assert_eq!(deps(p, 2), [1, 0]);
        assert_eq!(deps(p, 4), [3, 2, 0]);
        assert_eq!(deps(p, 5), [0, 4]);
        assert_eq!(dependents(p, 0), [2, 3, 4, 5]);
        assert_eq!(dependents(p, 1), [2]);
        assert_eq!(dependents(p, 2), [4]);
        assert_eq!(dependents(p, 4), [5]);
        assert!(dependents(p, 5).is_empty());
    }
}

#[test]
fn every_problem_is_reported_with_its_line() {
    let text = r#"{"id":"a","run":"true"}
{"id":"a","run":"true"}
{"id":"b","run":"true","deps":["nope"]}

{"id":"c","run":"true","deps":["d"]}
{"id":"d","run":"true","deps":["c"]}
{"id":"bad id","prompt":"x"}
{"id":"e","prompt":"x","run":"y"}
{"id":"f","deps":"a","run":"true"}
"#;
    let err = Plan::parse(text, "t.jsonl").unwrap_err();
    let lines: Vec<usize> = err.problems.iter().map(|p| p.line).collect();
    assert_eq!(lines, vec![2, 3, 5, 7, 8, 9]);
    let shown = err.to_string();
    assert!(
        shown.contains("t.jsonl:5: task \"c\": dependency cycle: c → d → c"),
        "{shown}"
    );
    assert!(
        shown.contains("duplicate id; first defined on line 1"),
        "{shown}"
    );
}

#[test]
fn longer_remaining_paths_have_higher_priority() {
    let text = r#"{"id":"a","run":"true"}
{"id":"b","run":"true","deps":["a"]}
{"id":"c","run":"true","deps":["b"]}
{"id":"d","run":"true"}
"#;
    let plan = Plan::parse(text, "t").unwrap();
    assert_eq!(plan.priorities(), vec![3, 2, 1, 1]);
    assert_eq!(ids(&plan, &plan.topological_order()), ["a", "d", "b", "c"]);
}

#[test]
fn default_modes_follow_lanes_and_unknown_lanes_fail_closed() {
    let text = r#"{"id":"a","prompt":"x","lane":"researcher"}
{"id":"b","prompt":"x","lane":"painter"}
{"id":"c","run":"true","lane":"reviewer"}
{"id":"d","prompt":"x"}
"#;
    let plan = Plan::parse(text, "t").unwrap();
    let modes: Vec<Mode> = plan.tasks.iter().map(|t| t.mode).collect();
    assert_eq!(modes, [Mode::Read, Mode::Write, Mode::Write, Mode::Write]);
}

/// Whether git takes `name` as a branch name.
fn git_takes(name: &str) -> bool {
    std::process::Command::new("git")
        .args(["check-ref-format", "--branch", name])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap()
        .success()
}

#[test]
fn an_id_is_taken_exactly_when_git_takes_every_branch_named_after_it() {
    // Every id of up to three of these characters, and longer ones from a fixed seed.
    let short = ['a', '.', '-', '_', '0'];
    let alphabet = ['a', '.', '-', '_', '0', 'l', 'o', 'c', 'k', '.'];
    let mut ids: Vec<String> = Vec::new();
    for n in 1..=3u32 {
        for k in 0..short.len().pow(n) {
            let (mut k, mut id) = (k, String::new());
            for _ in 0..n {
                id.push(short[k % short.len()]);
                k /= short.len();
            }
            ids.push(id);
        }
    }
    let mut seed: u64 = 0x5eed;
    for _ in 0..200 {
        let len = 4 + (seed % 9) as usize;
        let id: String = (0..len)
            .map(|_| {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                alphabet[(seed >> 33) as usize % alphabet.len()]
            })
            .collect();
        ids.push(id);
    }
    ids.extend(["x.lock", "a..b", "a.", ".a", "-a", "lock", "a.lock.b"].map(str::to_owned));
    for id in &ids {
        let branches = [
            format!("swarm/20261201-101500-ab12-{id}"),
            format!("swarm/20261201-101500-ab12-{id}-resolve"),
            format!("swarm/20261201-101500-ab12-{id}@1"),
            format!("swarm/20261201-101500-ab12-{id}-resolve@2"),
        ];
        let git = branches.iter().all(|b| git_takes(b));
        assert_eq!(TaskId::parse(id).is_ok(), git, "id {id:?}");
    }
}
