//! Conflicts seen coming: while two writers run, their changes to one file are trial-merged
//! and a conflict is said before either finishes; writers touching different files cost no
//! merge; with `forecast = "tell"` the later writer's agent finds the note in `SWARM_NOTES`.

use super::{events, path_str, tasks_of};
use crate::{TestRepo, assert_exit, outside, run_id};

/// Shell words that wait (about 30 s at most) until the run's event log has an event whose
/// line matches `pattern` (a grep pattern).
fn wait_for(repo: &TestRepo, pattern: &str) -> String {
    format!(
        "for _ in $(seq 3000); do grep -q '{pattern}' '{}'/\"$SWARM_RUN_ID\"/events.jsonl && break; sleep 0.01; done",
        repo.swarm_dir().join("runs").display()
    )
}

/// The kinds of the run's events, in order.
fn kinds(repo: &TestRepo) -> Vec<(String, serde_json::Value)> {
    events(repo, &run_id(repo))
        .into_iter()
        .map(|e| (e["kind"].as_str().unwrap_or_default().to_owned(), e))
        .collect()
}

#[test]
fn two_running_writers_changing_one_line_are_foreseen_to_conflict_before_either_ends() {
    let repo = TestRepo::new();
    repo.write("shared.txt", "top\nshared\nbottom\n");
    repo.commit_all("add shared.txt");
    // Each changes the line, then runs on until the conflict is foreseen.
    let writer = |name: &str| {
        serde_json::json!({
            "id": name,
            "run": format!(
                "sed -i 's/shared/from {name}/' shared.txt; {}",
                wait_for(&repo, "\"kind\":\"conflict_forecast\"")
            ),
        })
        .to_string()
    };
    let tasks = repo.tasks(&[&writer("a"), &writer("b")]);
    let report = outside(&repo, "report.md");

    let out = repo
        .swarm_cmd()
        .env("SWARM_FORECAST_INTERVAL", "100ms")
        .args([
            "run",
            path_str(&tasks),
            "-j",
            "2",
            "--final-out",
            path_str(&report),
        ])
        .output()
        .unwrap();

    // The conflict came: the second to merge is parked.
    assert_exit(&out, 3);
    let kinds = kinds(&repo);
    let foreseen = kinds
        .iter()
        .position(|(k, _)| k == "conflict_forecast")
        .expect("a conflict_forecast event");
    let first_end = kinds
        .iter()
        .position(|(k, _)| k == "task_succeeded")
        .expect("a task_succeeded event");
    assert!(foreseen < first_end, "{kinds:?}");
    let event = &kinds[foreseen].1;
    assert_eq!(
        event["detail"]["paths"],
        serde_json::json!(["shared.txt"]),
        "{event}"
    );
    let pair = [
        event["task"].as_str().unwrap(),
        event["detail"]["with"].as_str().unwrap(),
    ];
    assert!(pair == ["a", "b"] || pair == ["b", "a"], "{event}");
    // Said once.
    assert_eq!(
        kinds
            .iter()
            .filter(|(k, _)| k == "conflict_forecast")
            .count(),
        1
    );
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.contains("### Conflicts foreseen"), "{text}");
    assert!(text.contains("`shared.txt`: the conflict came"), "{text}");
    let err = crate::stderr(&out);
    assert!(err.contains("Foreseen"), "{err}");
}

#[test]
fn writers_changing_different_files_are_looked_at_but_nothing_is_merged_on_trial() {
    let repo = TestRepo::new();
    let writer = |name: &str| {
        serde_json::json!({
            "id": name,
            "run": format!(
                "echo {name} > {name}.txt; {}",
                wait_for(&repo, "\"kind\":\"forecast_looked\"")
            ),
        })
        .to_string()
    };
    let tasks = repo.tasks(&[&writer("a"), &writer("b")]);

    let out = repo
        .swarm_cmd()
        .env("SWARM_FORECAST_INTERVAL", "100ms")
        .args(["run", path_str(&tasks), "-j", "2"])
        .output()
        .unwrap();

    assert_exit(&out, 0);
    let kinds = kinds(&repo);
    let looks: Vec<&serde_json::Value> = kinds
        .iter()
        .filter(|(k, _)| k == "forecast_looked")
        .map(|(_, e)| e)
        .collect();
    assert!(!looks.is_empty(), "{kinds:?}");
    // The first look, while both ran, compared both.
    assert_eq!(looks[0]["detail"]["writers"], 2, "{:?}", looks[0]);
    for look in looks {
        assert_eq!(look["detail"]["probes"], 0, "{look}");
    }
    assert!(
        !kinds.iter().any(|(k, _)| k == "conflict_forecast"),
        "{kinds:?}"
    );
}

#[test]
fn with_tell_the_later_writer_finds_the_note_in_swarm_notes() {
    let repo = TestRepo::new();
    repo.write("shared.txt", "top\nshared\nbottom\n");
    repo.commit_all("add shared.txt");
    // The writer the conflict is said to waits for its note and commits what it read.
    let writer = |name: &str| {
        serde_json::json!({
            "id": name,
            "run": format!(
                "sed -i 's/shared/from {name}/' shared.txt; {}; \
                 if grep -q '\"kind\":\"conflict_forecast\",\"seq\":[0-9]*,\"task\":\"{name}\"' '{}'/\"$SWARM_RUN_ID\"/events.jsonl; then \
                   for _ in $(seq 1000); do [ -s \"$SWARM_NOTES\" ] && break; sleep 0.01; done; \
                   cp \"$SWARM_NOTES\" note-{name}.txt; fi",
                wait_for(&repo, "\"kind\":\"conflict_forecast\""),
                repo.swarm_dir().join("runs").display()
            ),
        })
        .to_string()
    };
    let tasks = repo.tasks(&[&writer("a"), &writer("b")]);

    let out = repo
        .swarm_cmd()
        .env("SWARM_FORECAST_INTERVAL", "100ms")
        .env("SWARM_FORECAST", "tell")
        .args(["run", path_str(&tasks), "-j", "2", "--land", "branch"])
        .output()
        .unwrap();

    assert_exit(&out, 3);
    let run = run_id(&repo);
    let kinds = kinds(&repo);
    let event = &kinds
        .iter()
        .find(|(k, _)| k == "conflict_forecast")
        .expect("a conflict_forecast event")
        .1;
    let later = event["task"].as_str().unwrap();
    // The later writer's commit (merged, or kept on its parked branch) holds the note.
    let status = &tasks_of(&repo)[later]["status"];
    let branch = if status == "parked" {
        format!("swarm/{run}-{later}")
    } else {
        format!("swarm/{run}")
    };
    let note = repo.git(&["show", &format!("{branch}:note-{later}.txt")]);
    assert!(
        note.contains("shared.txt is likely to conflict with the change of task"),
        "{note}"
    );
}

#[test]
fn with_hold_the_later_writer_is_merged_after_the_other_and_redone_on_its_tip() {
    let repo = TestRepo::new();
    repo.write("log.txt", "start\n");
    repo.commit_all("log");
    let runs = repo.swarm_dir().join("runs");
    // Both append a line (git's merge of the two conflicts). Once the conflict is foreseen,
    // the later writer ends at once and the other only once the later one is held, so the
    // later one is committed first. Both may run again on a newer tip.
    let writer = |name: &str| {
        serde_json::json!({
            "id": name,
            "run": format!(
                "echo {name} >> log.txt; {}; \
                 if grep -q '\"kind\":\"conflict_forecast\",\"seq\":[0-9]*,\"task\":\"{name}\"' '{runs}'/\"$SWARM_RUN_ID\"/events.jsonl; then exit 0; fi; {}",
                wait_for(&repo, "\"kind\":\"conflict_forecast\""),
                wait_for(&repo, "\"kind\":\"held_for_merge\""),
                runs = runs.display()
            ),
            "repeat": true,
        })
        .to_string()
    };
    let tasks = repo.tasks(&[&writer("a"), &writer("b")]);

    let out = repo
        .swarm_cmd()
        .env("SWARM_FORECAST_INTERVAL", "100ms")
        .env("SWARM_FORECAST", "hold")
        .args(["run", path_str(&tasks), "-j", "2"])
        .output()
        .unwrap();

    assert_exit(&out, 0);
    let kinds = kinds(&repo);
    let (_, held) = kinds
        .iter()
        .find(|(k, _)| k == "held_for_merge")
        .expect("a held_for_merge event");
    let later = held["task"].as_str().unwrap().to_owned();
    let other = held["detail"]["with"].as_str().unwrap().to_owned();
    let merged: Vec<String> = kinds
        .iter()
        .filter(|(k, _)| k == "merged")
        .map(|(_, e)| e["task"].as_str().unwrap().to_owned())
        .collect();
    // The other first, then the later one, done again on the tip that holds the other's line.
    assert_eq!(merged, [other.clone(), later.clone()]);
    let redone = kinds.iter().any(|(k, e)| {
        k == "resolved" && e["task"] == later.as_str() && e["detail"]["rung"] == "redo"
    });
    assert!(redone, "{kinds:?}");
    assert_eq!(repo.read("log.txt"), format!("start\n{other}\n{later}\n"));
}
