//! Goals as the user gives them: bad goal input is refused before anything runs.

use serde_json::json;

use super::{GOAL_A, GOAL_B, needs_call, plan_for, server, setup};
use crate::{assert_exit, outside};

#[test]
fn bad_goal_input_is_refused_before_anything_runs() {
    let s = setup();
    let (llm, _) = server(|| needs_call(&json!([])), |goal| plan_for(goal, &["x.txt"]));
    let missing = outside(&s.repo, "no-such-goals.txt");
    let empty = outside(&s.repo, "empty-goals.txt");
    std::fs::write(&empty, "# nothing here\n\n").unwrap();
    let all: [(Vec<&str>, &str); 5] = [
        (
            vec!["--goals-file", missing.to_str().unwrap()],
            "could not read the goals file",
        ),
        (
            vec!["--goals-file", empty.to_str().unwrap()],
            "holds no goal",
        ),
        (vec!["--goal", GOAL_A, "--goal", "  "], "goal 2 is empty"),
        (
            vec!["--goal", GOAL_A, "--goal", GOAL_B, "--plan-only"],
            "--plan-out and --plan-only take one goal",
        ),
        (vec!["queue", "add", " "], "the goal is empty"),
    ];
    for (args, message) in all {
        let out = s.swarm(&llm, &args);
        assert_exit(&out, 2);
        let err = crate::stderr(&out);
        assert!(err.contains(message), "{args:?}: {err}");
    }
    assert!(llm.requests().is_empty());
    assert!(!s.repo.swarm_dir().join("runs").exists());
}
