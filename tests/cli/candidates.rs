//! Candidates: a writer run as several attempts side by side, the one its `select` rule picks
//! merged, the others kept on their branches and listed.

use serde_json::{Value, json};

use crate::{TestRepo, assert_exit, rev, run_id, status_json, stderr};

/// A task `fix` with three candidates: `fix.c1` writes what its check refuses, `fix.c2` a
/// change of 40 lines, `fix.c3` one of 12. `fix.c1` and `fix.c2` each wait until the other
/// has started (so two run at once), and each candidate logs its start and end in `log`.
fn three_candidates(repo: &TestRepo, log: &std::path::Path, select: &str) -> std::path::PathBuf {
    let log = log.display();
    let started = repo.shared.join("started");
    std::fs::create_dir_all(&started).unwrap();
    let started = started.display();
    let run = format!(
        "echo \"start $SWARM_TASK_ID\" >> '{log}'; touch '{started}'/$SWARM_TASK_ID; \
         case $SWARM_TASK_ID in \
           fix.c1|fix.c2) for _ in $(seq 3000); do test -e '{started}'/fix.c1 && test -e '{started}'/fix.c2 && break; sleep 0.01; done;; \
         esac; \
         case $SWARM_TASK_ID in \
           fix.c1) echo bad > out.txt;; \
           fix.c2) seq 40 > out.txt;; \
           fix.c3) seq 12 > out.txt;; \
         esac; \
         echo \"end $SWARM_TASK_ID\" >> '{log}'; echo \"made by $SWARM_TASK_ID\""
    );
    repo.tasks(&[
        &json!({
            "id": "fix",
            "run": run,
            "check": "! grep -q bad out.txt",
            "candidates": 3,
            "select": select,
        })
        .to_string(),
        r#"{"id":"after","run":"wc -l < out.txt > count.txt","deps":["fix"]}"#,
    ])
}

fn task<'a>(status: &'a Value, id: &str) -> &'a Value {
    status["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("no task {id} in {status}"))
}

fn is_ancestor(repo: &TestRepo, a: &str, b: &str) -> bool {
    let a = rev(repo, a);
    repo.git(&["rev-list", b]).lines().any(|l| l == a)
}

fn branch_exists(repo: &TestRepo, name: &str) -> bool {
    !repo.git(&["branch", "--list", name]).trim().is_empty()
}

#[test]
fn smallest_green_merges_the_smaller_change_keeps_the_others_and_two_run_at_once_with_j_2() {
    let repo = TestRepo::new();
    let log = repo.shared.join("log");
    let tasks = three_candidates(&repo, &log, "smallest-green");

    let out = repo.swarm(&["run", tasks.to_str().unwrap(), "-j", "2", "--retries", "0"]);

    assert_exit(&out, 0);
    // The smaller of the two green changes is the task's, merged; what follows builds on it.
    let seq12: String = (1..=12).map(|n| n.to_string() + "\n").collect();
    assert_eq!(repo.git(&["show", "HEAD:out.txt"]), seq12);
    assert_eq!(repo.git(&["show", "HEAD:count.txt"]).trim(), "12");
    let status = status_json(&repo);
    assert_eq!(task(&status, "fix")["status"], "done", "{status}");
    assert_eq!(task(&status, "fix.c1")["status"], "failed", "{status}");
    assert_eq!(task(&status, "fix.c2")["status"], "done", "{status}");
    assert_eq!(task(&status, "fix.c3")["status"], "done", "{status}");
    // The losers are kept on their branches; the winner's commit is what was merged.
    let run = run_id(&repo);
    assert!(branch_exists(&repo, &format!("swarm/{run}-fix.c2")));
    assert!(is_ancestor(&repo, &format!("swarm/{run}-fix.c3"), "HEAD"));
    assert!(!is_ancestor(&repo, &format!("swarm/{run}-fix.c2"), "HEAD"));
    // -j 2: the first two ran at once (each waited for the other), the third only after one
    // of them ended.
    let lines: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let at = |line: &str| {
        lines
            .iter()
            .position(|l| l == line)
            .unwrap_or_else(|| panic!("{line} not in {lines:?}"))
    };
    assert!(
        at("start fix.c3") > at("end fix.c1").min(at("end fix.c2")),
        "{lines:?}"
    );
    // What each came to, and why the others lost, in `show`.
    let shown = repo.swarm(&["show", "fix"]);
    assert_exit(&shown, 0);
    let text = crate::stdout(&shown);
    assert!(text.contains("fix.c3"), "{text}\n{}", stderr(&shown));
}

#[test]
fn after_kill_9_while_candidates_run_each_runs_at_most_once_more_and_one_is_merged() {
    let repo = TestRepo::new();
    let log = repo.shared.join("log");
    let release = repo.shared.join("release");
    let hold = format!(
        "for _ in $(seq 6000); do test -e '{}' && break; sleep 0.01; done",
        release.display()
    );
    // Both candidates start, log it, and wait to be let go; a killed swarm's resume runs them
    // again (their first attempts never ended), and they end then.
    let run = format!(
        "echo \"start $SWARM_TASK_ID\" >> '{}'; {hold}; \
         case $SWARM_TASK_ID in fix.c1) seq 30 > out.txt;; fix.c2) seq 3 > out.txt;; esac",
        log.display()
    );
    let tasks = repo.tasks(&[&json!({ "id": "fix", "run": run, "candidates": 2 }).to_string()]);
    let mut swarm = repo.spawn(&["run", tasks.to_str().unwrap(), "-j", "2"]);
    crate::wait_until("both candidates started", || {
        let text = std::fs::read_to_string(&log).ok()?;
        (text.lines().count() >= 2).then_some(())
    });
    swarm.kill().unwrap();
    swarm.wait().unwrap();
    std::fs::write(&release, "").unwrap();

    let out = repo.swarm(&["resume", &run_id(&repo)]);

    assert_exit(&out, 0);
    let text = std::fs::read_to_string(&log).unwrap();
    for c in ["fix.c1", "fix.c2"] {
        let starts = text.lines().filter(|l| *l == format!("start {c}")).count();
        assert!(
            (1..=2).contains(&starts),
            "{c} started {starts} times:\n{text}"
        );
    }
    assert_eq!(repo.git(&["show", "HEAD:out.txt"]), "1\n2\n3\n");
    let status = status_json(&repo);
    assert_eq!(task(&status, "fix")["status"], "done", "{status}");
}

#[test]
fn judge_asks_the_model_about_the_green_changes_and_records_its_reasons() {
    let repo = TestRepo::new();
    let log = repo.shared.join("log");
    let tasks = three_candidates(&repo, &log, "judge");
    let llm = crate::fake_llm::FakeLlm::start(|_, _| {
        crate::fake_llm::Reply::text(
            r#"{"winner": "fix.c2", "reasons": "It numbers all forty lines the task needs."}"#,
        )
    });

    let out = crate::goal::llm_cmd(&repo, &llm)
        .args(["run", tasks.to_str().unwrap(), "-j", "2", "--retries", "0"])
        .output()
        .unwrap();

    assert_exit(&out, 0);
    // One request, showing the task and both green changes, and not the one that failed.
    let requests = llm.requests();
    assert_eq!(requests.len(), 1, "{requests:#?}");
    let asked = requests[0].messages()[1]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(asked.contains("<candidate id=\"fix.c2\">"), "{asked}");
    assert!(asked.contains("<candidate id=\"fix.c3\">"), "{asked}");
    assert!(!asked.contains("<candidate id=\"fix.c1\">"), "{asked}");
    // The judge's pick is merged, and its reasons are in `show` and the report.
    assert_eq!(repo.git(&["show", "HEAD:count.txt"]).trim(), "40");
    let shown = crate::stdout(&repo.swarm(&["show", "fix"]));
    assert!(
        shown.contains("reasons: It numbers all forty lines the task needs."),
        "{shown}"
    );
    let report = crate::run_report(&repo);
    assert!(
        report.contains("merged `fix.c2` (judge): It numbers all forty lines the task needs."),
        "{report}"
    );
    assert!(report.contains("the judge preferred fix.c2"), "{report}");
}

#[test]
fn candidates_on_a_reader_or_with_spawn_or_a_select_alone_are_refused_and_nothing_runs() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[
        r#"{"id":"look","prompt":"look","lane":"analyst","candidates":2}"#,
        r#"{"id":"grow","run":"true","candidates":2,"spawn":3}"#,
        r#"{"id":"pick","run":"true","select":"smallest-green"}"#,
        r#"{"id":"many","run":"true","candidates":9,"select":"best"}"#,
    ]);

    let out = repo.swarm(&["run", tasks.to_str().unwrap()]);

    assert_exit(&out, 2);
    let err = stderr(&out);
    for line in [
        ":1: task \"look\": \"candidates\" are for writers",
        ":2: task \"grow\": \"candidates\" and \"spawn\" do not go together",
        ":3: task \"pick\": \"select\" picks among candidates: give \"candidates\" too",
        ":4: task \"many\": \"select\" must be one of first-green, smallest-green, judge, not \"best\"",
        ":4: task \"many\": \"candidates\" must be a whole number, 1 to 8",
    ] {
        assert!(err.contains(line), "{line} not in:\n{err}");
    }
    assert!(err.contains("has 5 problems; nothing ran"), "{err}");
}

#[test]
fn a_pools_two_members_each_take_one_of_two_candidates() {
    let repo = TestRepo::new();
    let logs = crate::outside(&repo, "members");
    std::fs::create_dir_all(&logs).unwrap();
    let script = crate::outside(&repo, "member");
    // Each member writes its name into the checkout and logs the candidate it took.
    crate::executable(
        &script,
        &format!(
            "#!/bin/sh\ncat > /dev/null\necho \"$SWARM_TASK_ID\" >> '{}'/\"$1\"\necho \"by $1\" > out.txt\necho \"done by $1\"\n",
            logs.display()
        ),
    );
    let profile = |name: &str| {
        format!(
            "[agents.{name}]\ncommand = \"{}\"\nargs = [\"{name}\"]\n\n",
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
    let tasks = repo.tasks(&[&json!({
        "id": "note",
        "prompt": "write out.txt",
        "agent": "pool:pair",
        "candidates": 2,
        "select": "first-green",
    })
    .to_string()]);

    let out = repo.swarm(&["run", tasks.to_str().unwrap(), "-j", "2"]);

    assert_exit(&out, 0);
    let took = |name: &str| std::fs::read_to_string(logs.join(name)).unwrap_or_default();
    let (left, right) = (took("left"), took("right"));
    assert_eq!(
        left.lines().count(),
        1,
        "left took {left:?}, right {right:?}"
    );
    assert_eq!(
        right.lines().count(),
        1,
        "left took {left:?}, right {right:?}"
    );
    let merged = repo.git(&["show", "HEAD:out.txt"]);
    assert!(merged == "by left\n" || merged == "by right\n", "{merged}");
}

/// The ids of the tasks of the repository's last run, as `status --json` lists them.
fn task_ids(repo: &TestRepo) -> Vec<String> {
    status_json(repo)["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_goal_run_with_candidates_counts_them_in_its_plan_and_merges_one_of_its_writers_candidates() {
    let repo = TestRepo::new();
    let llm = crate::goal::good_server();

    let out = crate::goal::llm_cmd(&repo, &llm)
        .args([
            "--goal",
            "Survey the repository and leave notes",
            "--candidates",
            "2",
        ])
        .output()
        .unwrap();

    assert_exit(&out, 0);
    // The plan said holds them: 4 tasks, and the writer's 2 candidates.
    assert!(stderr(&out).contains("Planned 6 tasks"), "{}", stderr(&out));
    let ids = task_ids(&repo);
    for id in ["notes.c1", "notes.c2", "notes", "survey", "readme", "final"] {
        assert!(ids.contains(&id.to_owned()), "{id} not in {ids:?}");
    }
    // Readers and the reducer have none.
    assert!(!ids.iter().any(|i| i.starts_with("survey.c")), "{ids:?}");
    assert_eq!(
        repo.git(&["show", "HEAD:NOTES.md"]),
        "notes from the agent\n"
    );
    let status = status_json(&repo);
    assert_eq!(task(&status, "notes")["status"], "done", "{status}");
}

#[test]
fn goals_the_queue_runs_get_candidates_as_they_join() {
    let repo = TestRepo::new();
    let llm = crate::goal::good_server();
    let add = crate::goal::llm_cmd(&repo, &llm)
        .args(["queue", "add", "Survey the repository and leave notes"])
        .output()
        .unwrap();
    assert_exit(&add, 0);

    let out = crate::goal::llm_cmd(&repo, &llm)
        .args([
            "queue",
            "run",
            "--candidates",
            "2",
            "--select",
            "first-green",
        ])
        .output()
        .unwrap();

    assert_exit(&out, 0);
    let ids = task_ids(&repo);
    let candidates: Vec<&String> = ids.iter().filter(|i| i.contains("notes.c")).collect();
    assert_eq!(candidates.len(), 2, "{ids:?}");
    assert_eq!(
        repo.git(&["show", "HEAD:NOTES.md"]),
        "notes from the agent\n"
    );
    let pick = ids.iter().find(|i| i.ends_with("notes")).unwrap();
    let shown = crate::stdout(&repo.swarm(&["show", pick]));
    assert!(shown.contains("Candidates (first-green):"), "{shown}");
}
