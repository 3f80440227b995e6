//! Tests of the parent module.

use serde_json::{Value, json};

use super::{DraftTask, Lane, Mode, Plan, Repair, find_cycle, parse_draft, repair};

fn draft(tasks: &Value) -> Vec<DraftTask> {
    parse_draft(tasks).expect("a task list").0
}

/// Repairs `tasks` with fan-in 8; see `fix_fan_in`.
fn fix(tasks: &Value) -> (Plan, Vec<Repair>) {
    fix_fan_in(tasks, 8)
}

/// Repairs `tasks` and checks the result: it passes the strict parser, lines are positions,
/// and one read-only reducer is the only sink.
fn fix_fan_in(tasks: &Value, max_fan_in: usize) -> (Plan, Vec<Repair>) {
    let (plan, repairs) = repair(draft(tasks), max_fan_in).unwrap();
    assert_eq!(
        Plan::parse(&plan.to_jsonl(), "t").unwrap().len(),
        plan.len()
    );
    let lines: Vec<usize> = plan.tasks.iter().map(|t| t.line).collect();
    assert_eq!(lines, (1..=plan.len()).collect::<Vec<_>>());
    let ends = |keep: &dyn Fn(usize) -> bool| (0..plan.len()).filter(|&i| keep(i)).collect();
    let sinks: Vec<usize> = ends(&|i| plan.dependents(i).next().is_none());
    assert_eq!(sinks, ends(&|i| plan.tasks[i].lane == Lane::Reducer));
    assert!(sinks.len() == 1 && plan.tasks[sinks[0]].mode == Mode::Read);
    (plan, repairs)
}

fn kinds(repairs: &[Repair]) -> Vec<&str> {
    repairs.iter().map(|r| r.kind).collect()
}

fn ids(plan: &Plan) -> Vec<&str> {
    plan.tasks.iter().map(|t| t.id.as_str()).collect()
}

fn deps<'p>(plan: &'p Plan, id: &str) -> Vec<&'p str> {
    let i = plan
        .tasks
        .iter()
        .position(|t| t.id.as_str() == id)
        .expect("task exists");
    plan.deps(i).map(|d| plan.tasks[d].id.as_str()).collect()
}

fn reducer(plan: &Plan) -> &str {
    plan.tasks[plan.deliverable().unwrap()].id.as_str()
}

#[test]
fn parse_draft_accepts_an_array_or_a_tasks_or_plan_object() {
    let tasks = json!([{"id": "a", "prompt": "x"}, {"id": "b", "run": "true", "deps": ["a"]}]);
    for value in [
        tasks.clone(),
        json!({"tasks": tasks}),
        json!({"plan": tasks}),
    ] {
        let (draft, repairs) = parse_draft(&value).unwrap();
        assert_eq!((draft.len(), draft[1].run.as_deref()), (2, Some("true")));
        assert_eq!(
            (&draft[1].deps[..], repairs.len()),
            (&["a".to_owned()][..], 0)
        );
    }
    assert!(parse_draft(&json!("make a plan")).is_err());
    assert!(parse_draft(&json!({"steps": []})).is_err());
}

#[test]
fn parse_draft_is_lenient_about_fields() {
    let (draft, repairs) = parse_draft(&json!({"tasks": [
        {"id": 1, "prompt": "x", "colour": "red"},
        {"id": "b", "title": "Survey the code", "deps": [1, "1", null]},
        {"id": "c", "prompt": "  "}, "not a task",
    ]}))
    .unwrap();
    assert_eq!((draft[0].id.as_str(), draft.len()), ("1", 2));
    assert_eq!(draft[1].deps, ["1", "1"]);
    assert_eq!(draft[1].prompt.as_deref(), Some("Survey the code"));
    assert_eq!(
        kinds(&repairs),
        ["empty_prompt", "dropped_task", "dropped_task"]
    );
    assert!(repairs[1].message.contains("\"c\""), "{:?}", repairs[1]);
}

#[test]
fn bad_ids_are_sanitised_and_deps_follow() {
    let long = "x".repeat(80);
    let (plan, repairs) = fix(&json!([
        {"id": "my task!", "prompt": "x"}, {"id": "...", "prompt": "x"},
        {"id": "build.lock", "prompt": "x"}, {"id": long, "prompt": "x"},
        {"prompt": "x", "lane": "reducer", "deps": ["my task!", long]},
    ]));
    let x64 = "x".repeat(64);
    assert_eq!(
        ids(&plan),
        ["my-task", "task-2", "build-lock", &x64, "task-5"]
    );
    assert_eq!(deps(&plan, "task-5")[..2], ["my-task", &x64]);
    assert_eq!(kinds(&repairs)[..5], ["sanitized_id"; 5]);
}

#[test]
fn duplicate_ids_are_renamed_and_deps_point_at_the_first() {
    let (plan, repairs) = fix(&json!([
        {"id": "a", "prompt": "x"}, {"id": "a", "prompt": "x"},
        {"id": "b", "prompt": "x", "deps": ["a"], "lane": "reducer"}, {"id": "a", "prompt": "x"},
    ]));
    assert_eq!(ids(&plan), ["a", "a-2", "b", "a-3"]);
    assert_eq!(deps(&plan, "b"), ["a", "a-2", "a-3"]);
    assert_eq!(kinds(&repairs)[..2], ["duplicate_id", "duplicate_id"]);
    assert!(repairs[1].message.contains("\"a-3\""));
}

#[test]
fn self_and_unknown_deps_are_dropped_and_repeats_silently() {
    let (plan, repairs) = fix(&json!([
        {"id": "a", "prompt": "x", "deps": ["a", "ghost"]},
        {"id": "b", "prompt": "x", "deps": ["a", "a"], "lane": "reducer"},
    ]));
    assert_eq!((deps(&plan, "a"), deps(&plan, "b")), (vec![], vec!["a"]));
    assert_eq!(kinds(&repairs), ["dropped_self_dep", "dropped_unknown_dep"]);
    assert!(repairs[1].message.contains("ghost"));
}

#[test]
fn a_three_cycle_is_named_then_broken_at_the_edge_to_a_later_task() {
    let tasks = json!([
        {"id": "a", "prompt": "x", "deps": ["c"]}, {"id": "b", "prompt": "x", "deps": ["a"]},
        {"id": "c", "prompt": "x", "deps": ["b"], "lane": "reducer"},
    ]);
    assert_eq!(find_cycle(&draft(&tasks)).unwrap(), ["a", "b", "c"]);
    assert_eq!(
        find_cycle(&draft(&json!([{"id": "a", "run": "x", "deps": ["a"]}]))),
        None
    );
    let (plan, repairs) = fix(&tasks);
    assert_eq!(kinds(&repairs), ["broke_cycle"]);
    assert!(repairs[0].message.contains("a → b → c → a"), "{repairs:?}");
    let all = [deps(&plan, "a"), deps(&plan, "b"), deps(&plan, "c")];
    assert_eq!(all, [vec![], vec!["a"], vec!["b"]]);
}

#[test]
fn bad_modes_fall_back_to_the_lane_default_and_unknown_lanes_write() {
    let (plan, repairs) = fix(&json!([
        {"id": "a", "prompt": "x", "lane": "researcher", "mode": "readonly"},
        {"id": "b", "prompt": "x", "lane": "painter"},
        {"id": "c", "prompt": "x", "lane": "Reducer", "mode": "READ", "deps": ["a", "b"]},
    ]));
    let modes: Vec<Mode> = plan.tasks.iter().map(|t| t.mode).collect();
    assert_eq!(modes, [Mode::Read, Mode::Write, Mode::Read]);
    assert_eq!(plan.tasks[1].lane, Lane::Other("painter".to_owned()));
    assert_eq!(kinds(&repairs), ["bad_mode"]);
}

#[test]
fn the_read_sink_with_most_deps_is_promoted_to_reducer() {
    let (plan, repairs) = fix(&json!([
        {"id": "a", "prompt": "x", "lane": "coder"}, {"id": "b", "prompt": "x"},
        {"id": "sum", "prompt": "x", "lane": "analyst", "deps": ["a", "b"]},
    ]));
    assert_eq!(
        (reducer(&plan), kinds(&repairs)),
        ("sum", vec!["promoted_reducer"])
    );
}

#[test]
fn without_a_read_sink_a_reducer_is_created_over_all_sinks() {
    let (plan, repairs) = fix(&json!([
        {"id": "reduce", "prompt": "x", "lane": "coder"}, {"id": "b", "run": "make"},
    ]));
    assert_eq!(ids(&plan), ["reduce", "b", "reduce-2"]);
    assert_eq!(deps(&plan, "reduce-2"), ["reduce", "b"]);
    assert_eq!(kinds(&repairs), ["created_reducer"]);
}

#[test]
fn of_two_reducers_the_last_is_kept_and_made_read_only() {
    let (plan, repairs) = fix(&json!([
        {"id": "a", "prompt": "x"}, {"id": "r1", "prompt": "x", "lane": "reducer", "deps": ["a"]},
        {"id": "r2", "prompt": "x", "lane": "reducer", "mode": "write", "deps": ["a"]},
    ]));
    assert_eq!(
        (reducer(&plan), &plan.tasks[1].lane),
        ("r2", &Lane::Analyst)
    );
    assert_eq!(deps(&plan, "r2"), ["a", "r1"]);
    let want = ["demoted_reducer", "wired_orphan", "read_only_reducer"];
    assert_eq!(kinds(&repairs), want);
}

#[test]
fn a_reducer_others_depend_on_is_demoted_so_the_end_stays_single() {
    let (plan, repairs) = fix(&json!([
        {"id": "a", "prompt": "x"}, {"id": "r", "prompt": "x", "lane": "reducer", "deps": ["a"]},
        {"id": "review", "prompt": "x", "lane": "reviewer", "deps": ["r"]},
    ]));
    assert_eq!(reducer(&plan), "review");
    assert_eq!(kinds(&repairs), ["demoted_reducer", "promoted_reducer"]);
}

#[test]
fn orphan_sinks_are_wired_into_the_reducer() {
    let (plan, repairs) = fix(&json!([
        {"id": "a", "prompt": "x"}, {"id": "lonely", "prompt": "x"},
        {"id": "r", "prompt": "x", "lane": "reducer", "deps": ["a"]},
    ]));
    assert_eq!(deps(&plan, "r"), ["a", "lonely"]);
    assert_eq!(kinds(&repairs), ["wired_orphan"]);
    assert!(repairs[0].message.contains("lonely"));
}

/// `n` tasks all feeding one reducer, `final`.
fn wide(n: usize) -> Value {
    let id = |i| format!("t{i}");
    let mut tasks: Vec<Value> = (0..n)
        .map(|i| json!({"id": id(i), "prompt": "x"}))
        .collect();
    let all: Vec<String> = (0..n).map(id).collect();
    tasks.push(json!({"id": "final", "prompt": "x", "lane": "reducer", "deps": all}));
    Value::Array(tasks)
}

#[test]
fn forty_inputs_with_fan_in_eight_become_a_tree_of_depth_two() {
    let (plan, repairs) = fix_fan_in(&wide(40), 8);
    let r = plan.deliverable().unwrap();
    assert_eq!(
        (r, plan.len()),
        (45, 46),
        "parts are listed just before the reducer"
    );
    let parts: Vec<String> = (1..=5).map(|n| format!("final-part-{n}")).collect();
    assert_eq!(deps(&plan, "final"), parts);
    assert!((0..plan.len()).all(|i| plan.deps(i).count() <= 8));
    for i in 0..40 {
        let up: Vec<usize> = plan.dependents(i).collect();
        assert_eq!((up.len(), &plan.tasks[up[0]].lane), (1, &Lane::Analyst));
        assert_eq!(
            plan.dependents(up[0]).collect::<Vec<_>>(),
            [r],
            "t{i} reaches the reducer in two steps"
        );
    }
    assert_eq!(kinds(&repairs), ["fan_in_tree"]);
}

#[test]
fn fan_in_grows_levels_until_it_fits() {
    let (plan, repairs) = fix_fan_in(&wide(20), 2);
    assert!((0..plan.len()).all(|i| plan.deps(i).count() <= 2));
    assert_eq!(kinds(&repairs), ["fan_in_tree"; 4]);
    let depth = plan.priorities()[..20].iter().copied().max();
    assert_eq!(
        depth,
        Some(6),
        "ceil(log2 20) = 5 levels of reducers above the leaves"
    );
}

#[test]
fn writers_of_the_same_file_are_ordered() {
    let (plan, repairs) = fix(&json!([
        {"id": "a", "prompt": "x", "lane": "coder", "files": ["./src/lib.rs"]},
        {"id": "b", "prompt": "x", "lane": "coder", "files": ["src/lib.rs", "README.md"]},
        {"id": "c", "prompt": "x", "lane": "coder", "files": ["src/lib.rs"], "deps": ["a"]},
        {"id": "d", "prompt": "x", "lane": "coder", "files": ["src/lib.rs"], "deps": ["c"]},
    ]));
    // c waited for a only; d already waits for every other writer through c.
    let all = [deps(&plan, "b"), deps(&plan, "c"), deps(&plan, "d")];
    assert_eq!(all, [vec!["a"], vec!["a", "b"], vec!["c"]]);
    let want = ["created_reducer", "file_overlap_edge", "file_overlap_edge"];
    assert_eq!(kinds(&repairs), want);
    assert!(
        repairs[1].message.contains("both write src/lib.rs"),
        "{repairs:?}"
    );
}

#[test]
fn a_prompt_beats_a_run_and_a_title_stands_in_for_a_missing_prompt() {
    let task = |id: &str, prompt: &str, run: &str, title: &str| DraftTask {
        id: id.to_owned(),
        prompt: Some(prompt.to_owned()),
        run: Some(run.to_owned()),
        title: Some(title.to_owned()),
        ..DraftTask::default()
    };
    let draft = vec![
        task("a", "x", "make", ""),
        task("b", "", "", ""),
        task("c", " ", "", "Read"),
    ];
    let (plan, repairs) = repair(draft, 8).unwrap();
    assert_eq!(ids(&plan), ["a", "c", "reduce"]);
    let want = [
        "dropped_run",
        "dropped_task",
        "empty_prompt",
        "created_reducer",
    ];
    assert_eq!(kinds(&repairs), want);
    assert!(
        repair(Vec::new(), 8).unwrap().0.tasks.is_empty(),
        "an empty draft gives an empty plan"
    );
}
