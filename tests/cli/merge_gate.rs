//! The gate on the combined result: a shell "build" (functions in `lib.sh`, callers in
//! `uses/*.sh`, `gate.sh` loading them all) where each writer is green alone and their
//! combination is not; the gate bisects to the culprit, takes it out, parks it, and lands only
//! a tip it passed on.

use std::fmt::Write as _;
use std::path::Path;

use crate::gate::Gate;
use crate::{TestRepo, after_event, assert_exit, outside, run_id, run_report, status_json, stderr};

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every caller in `uses/` must find its function in `lib.sh`.
const GATE_SH: &str = "for f in uses/*.sh; do sh -c \". ./lib.sh; . ./$f\" || { echo \"gate: $f failed\" >&2; exit 1; }; done\necho gate ok\n";

/// A repository whose "build" passes: `greet` is defined and called.
fn shell_project() -> TestRepo {
    let repo = TestRepo::new();
    repo.write("lib.sh", "greet() { echo hi; }\n");
    repo.write("uses/base.sh", "greet\n");
    repo.write("gate.sh", GATE_SH);
    // The writers' own check: the same build, never held by a test.
    repo.write("check.sh", GATE_SH);
    repo.commit_all("a shell project");
    repo
}

/// The events of the newest run, as (kind, detail) pairs.
fn events(repo: &TestRepo) -> Vec<(String, serde_json::Value)> {
    let log = repo
        .swarm_dir()
        .join("runs")
        .join(run_id(repo))
        .join("events.jsonl");
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (v["kind"].as_str().unwrap().to_owned(), v["detail"].clone())
        })
        .collect()
}

/// The probes of the gate runs started (`batch`, `bisect`, `base`), in order.
fn gate_probes(repo: &TestRepo) -> Vec<String> {
    events(repo)
        .into_iter()
        .filter(|(k, _)| k == "gate_started")
        .map(|(_, d)| d["probe"].as_str().unwrap().to_owned())
        .collect()
}

/// The tasks merged on the first-parent line of `branch`, oldest first, one per merge.
fn merged_tasks(repo: &TestRepo, branch: &str) -> Vec<String> {
    let log = repo.git(&["log", "--first-parent", "--reverse", "--format=%s", branch]);
    log.lines()
        .filter_map(|l| l.strip_prefix("Merge swarm task "))
        .map(|l| l.split_whitespace().next().unwrap().to_owned())
        .collect()
}

fn tasks_with(repo: &TestRepo, status: &str) -> Vec<String> {
    crate::tasks_with_status(&status_json(repo), status)
}

/// The rename example: a renames `greet`, b (finishing after a merged) adds a call to the
/// old name, c changes something else, d depends on b.
fn rename_tasks(repo: &TestRepo) -> std::path::PathBuf {
    let a = r#"{"id":"a","run":"sed -i s/greet/hello/ lib.sh uses/base.sh","check":"sh check.sh"}"#;
    let b = format!(
        r#"{{"id":"b","run":"{} && echo greet > uses/b.sh","check":"sh check.sh"}}"#,
        after_event(repo, "merged", "a").replace('"', "\\\"")
    );
    let c = r#"{"id":"c","run":"echo c > c.txt"}"#;
    let d = r#"{"id":"d","run":"echo d > d.txt","deps":["b"]}"#;
    repo.tasks(&[a, &b, c, d])
}

/// What the rename example must end with: b parked with the gate's output, d skipped, the
/// integration branch green and holding a and c, each merged once.
fn assert_rename_outcome(repo: &TestRepo) {
    let integration = format!("swarm/{}", run_id(repo));
    assert_eq!(tasks_with(repo, "parked"), ["b"]);
    assert_eq!(tasks_with(repo, "skipped"), ["d"]);
    let mut merged = merged_tasks(repo, &integration);
    merged.sort();
    assert_eq!(merged, ["a", "c"]);
    let lib = repo.git(&["show", &format!("{integration}:lib.sh")]);
    assert_eq!(lib, "hello() { echo hi; }\n");
    assert!(
        repo.git(&["show", &format!("{integration}:c.txt")])
            .contains('c')
    );
    let files = repo.git(&["ls-tree", "-r", "--name-only", &integration]);
    assert!(!files.contains("uses/b.sh"), "{files}");
    // The gate passed on the tip the branch ends at.
    let tip = crate::rev(repo, &integration);
    let passed = events(repo)
        .into_iter()
        .any(|(k, d)| k == "gate_finished" && d["verdict"] == "green" && d["tip"] == *tip);
    assert!(passed, "no green gate run on {tip}");
    // The culprit's branch is kept for a look, and the report says why it waits.
    assert!(crate::rev(repo, &format!("swarm/{}-b", run_id(repo))).len() == 40);
    let report = run_report(repo);
    let attention = report.split("Needs attention").nth(1).expect(&report);
    assert!(attention.contains("`b`"), "{report}");
    assert!(attention.contains("gate: uses/b.sh failed"), "{report}");
    assert!(report.contains("### Gate"), "{report}");
    assert!(report.contains("Taken out: `b`"), "{report}");
}

#[test]
fn the_gate_takes_out_the_merge_that_breaks_the_combination() {
    let repo = shell_project();
    let tasks = rename_tasks(&repo);
    let escalated = outside(&repo, "escalated");
    let hook = format!("cat >> '{}'", path_str(&escalated));

    let out = repo.swarm(&[
        "run",
        path_str(&tasks),
        "-j",
        "2",
        "--gate",
        "sh gate.sh",
        "--on-escalate",
        &hook,
    ]);

    assert_exit(&out, 3);
    assert_rename_outcome(&repo);
    // Escalated once, like a conflict, with the gate's last lines.
    let sent: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&escalated).unwrap()).unwrap();
    assert_eq!(sent["task"], "b");
    let output = sent["gate_output"].as_array().unwrap();
    assert!(
        output.iter().any(|l| l == "gate: uses/b.sh failed"),
        "{sent}"
    );
    let parked = events(&repo)
        .into_iter()
        .find(|(k, _)| k == "gate_culprit")
        .unwrap()
        .1;
    assert_eq!(parked["task"], "b");
    let err = stderr(&out);
    assert!(err.contains("gate: uses/b.sh failed"), "{err}");
}

#[test]
fn a_batch_of_five_merges_is_bisected_to_its_bad_one_in_at_most_three_runs() {
    let repo = shell_project();
    let held = Gate::new(&outside(&repo, "fifos"), "gate");
    // The first gate run waits for the test: the five merges meanwhile make one batch.
    repo.write("gate.sh", &format!("{}\n{GATE_SH}", held.shell_once()));
    repo.commit_all("a gate that waits once");
    let started = after_event_run(&repo, "gate_started");
    let mut lines = vec![r#"{"id":"w0","run":"echo 0 > f0.txt"}"#.to_owned()];
    for i in 1..=5 {
        let edit = if i == 3 {
            "echo nosuchfn > uses/bad.sh".to_owned()
        } else {
            format!("echo {i} > f{i}.txt")
        };
        lines.push(format!(
            r#"{{"id":"w{i}","run":"{} && {edit}"}}"#,
            started.replace('"', "\\\"")
        ));
    }
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let tasks = repo.tasks(&lines);

    let mut swarm = repo.spawn(&["run", path_str(&tasks), "-j", "7", "--gate", "sh gate.sh"]);
    held.reached(&mut swarm);
    let log = repo.swarm_dir().join("runs");
    let merge_count = || {
        std::fs::read_dir(&log)
            .unwrap()
            .flatten()
            .map(|d| std::fs::read_to_string(d.path().join("events.jsonl")).unwrap_or_default())
            .map(|t| t.matches("\"kind\":\"merged\"").count())
            .sum::<usize>()
    };
    while merge_count() < 6 {
        assert!(swarm.try_wait().unwrap().is_none(), "swarm ended first");
        std::thread::yield_now();
    }
    held.release();
    let out = swarm.wait_with_output().unwrap();

    assert_exit(&out, 3);
    assert_eq!(tasks_with(&repo, "parked"), ["w3"]);
    let probes = gate_probes(&repo);
    let bisections = probes.iter().filter(|p| *p == "bisect").count();
    assert!(bisections <= 3, "{probes:?}");
    let batches: Vec<serde_json::Value> = events(&repo)
        .into_iter()
        .filter(|(k, d)| k == "gate_started" && d["probe"] == "batch")
        .map(|(_, d)| d["batch"].clone())
        .collect();
    assert_eq!(batches[1].as_array().unwrap().len(), 5, "{batches:?}");
    let mut merged = merged_tasks(&repo, &format!("swarm/{}", run_id(&repo)));
    merged.sort();
    assert_eq!(merged, ["w0", "w1", "w2", "w4", "w5"]);
}

/// Shell words that wait until the run's log shows a run-level event of `kind`.
fn after_event_run(repo: &TestRepo, kind: &str) -> String {
    let log = repo.swarm_dir().join("runs");
    format!(
        "for _ in $(seq 3000); do grep -q '\"kind\":\"{kind}\"' '{}'/\"$SWARM_RUN_ID\"/events.jsonl && break; sleep 0.01; done",
        log.display()
    )
}

#[test]
fn a_gate_failing_on_the_base_stops_the_run_and_lands_nothing() {
    let repo = shell_project();
    repo.write("gate.sh", "echo the base is broken >&2\nexit 1\n");
    repo.commit_all("a broken gate");
    let main = crate::rev(&repo, "main");
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo w > w.txt"}"#]);

    let out = repo.swarm(&["run", path_str(&tasks), "--gate", "sh gate.sh"]);

    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("the gate fails before any change"), "{err}");
    assert!(err.contains("sh gate.sh"), "{err}");
    assert!(err.contains("the base is broken"), "{err}");
    assert_eq!(crate::rev(&repo, "main"), main);
    assert_eq!(gate_probes(&repo).last().unwrap(), "base");
}

/// Waits until the newest run's log shows `task` merged; panics if swarm ends first.
fn wait_merged(repo: &TestRepo, swarm: &mut std::process::Child, task: &str) {
    let log = repo.swarm_dir().join("runs");
    let task = format!("\"task\":\"{task}\"");
    let merged = || {
        std::fs::read_dir(&log).unwrap().flatten().any(|d| {
            std::fs::read_to_string(d.path().join("events.jsonl"))
                .unwrap_or_default()
                .lines()
                .any(|l| l.contains("\"kind\":\"merged\"") && l.contains(&task))
        })
    };
    while !merged() {
        assert!(swarm.try_wait().unwrap().is_none(), "swarm ended first");
        std::thread::yield_now();
    }
}

/// A gate script that counts its runs in a file outside and stops at the runs `holds` names
/// until the test lets it go.
fn counting_gate(repo: &TestRepo, holds: &[(u32, &Gate)]) {
    let count = outside(repo, "gate-runs");
    let mut script = format!(
        "n=$(( $(cat '{c}' 2>/dev/null || echo 0) + 1 )); echo $n > '{c}'\n",
        c = path_str(&count)
    );
    for (n, gate) in holds {
        let _ = writeln!(script, "if [ $n = {n} ]; then {}; fi", gate.shell());
    }
    script.push_str(GATE_SH);
    repo.write("gate.sh", &script);
    repo.commit_all("a gate that waits");
}

#[test]
fn a_gate_run_killed_with_swarm_runs_again_on_resume_with_the_same_outcome() {
    let repo = shell_project();
    let first = Gate::new(&outside(&repo, "fifos"), "first");
    counting_gate(&repo, &[(1, &first)]);
    let tasks = rename_tasks(&repo);
    let mut swarm = repo.spawn(&["run", path_str(&tasks), "-j", "2", "--gate", "sh gate.sh"]);
    first.reached(&mut swarm);
    wait_merged(&repo, &mut swarm, "b");
    swarm.kill().unwrap();
    swarm.wait().unwrap();

    let out = repo.swarm(&["resume"]);

    assert_exit(&out, 3);
    assert_rename_outcome(&repo);
}

#[test]
fn a_bisection_killed_with_swarm_restarts_on_resume_with_the_same_outcome() {
    let repo = shell_project();
    let fifos = outside(&repo, "fifos");
    let (first, probe) = (Gate::new(&fifos, "first"), Gate::new(&fifos, "probe"));
    // Run 1 (on a) is cut short with b merged too; the resume tests the batch of both (run
    // 2, red) and bisects it: run 3, its probe, is cut short as well.
    counting_gate(&repo, &[(1, &first), (3, &probe)]);
    let tasks = rename_tasks(&repo);
    let mut swarm = repo.spawn(&["run", path_str(&tasks), "-j", "2", "--gate", "sh gate.sh"]);
    first.reached(&mut swarm);
    wait_merged(&repo, &mut swarm, "b");
    swarm.kill().unwrap();
    swarm.wait().unwrap();
    let mut resumed = repo.spawn(&["resume"]);
    probe.reached(&mut resumed);
    assert_eq!(gate_probes(&repo).last().unwrap(), "bisect");
    resumed.kill().unwrap();
    resumed.wait().unwrap();

    let out = repo.swarm(&["resume"]);

    assert_exit(&out, 3);
    assert_rename_outcome(&repo);
}

#[test]
fn a_gate_run_shows_as_a_row_of_the_live_display() {
    let repo = shell_project();
    // The gate waits on a pipe until the test has seen its row.
    let go = outside(&repo, "go");
    nix::unistd::mkfifo(&go, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    repo.write(
        "gate.sh",
        &format!("cat '{}' > /dev/null\n{GATE_SH}", path_str(&go)),
    );
    repo.commit_all("a gate that waits");
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo w > w.txt"}"#]);
    let mut cmd = repo.swarm_cmd();
    cmd.args(["run", path_str(&tasks), "--gate", "sh gate.sh"])
        .env("TERM", "xterm-256color");
    let mut terminal = crate::pty::Terminal::start(cmd, 120, 100);

    let shown = terminal.read_until("Running gate — w on ");
    std::fs::write(&go, "go\n").unwrap();
    let screen = terminal.finish();

    assert!(shown.contains("gate — w on "), "{shown}");
    assert_eq!(screen.code(), 0, "{}", screen.text);
}

#[test]
fn merges_after_the_culprit_are_merged_again_without_it() {
    let repo = shell_project();
    let first = Gate::new(&outside(&repo, "fifos"), "first");
    counting_gate(&repo, &[(1, &first)]);
    // x breaks the build; y does not, and merges while the gate's first run (on x alone)
    // waits: y is on top of the culprit.
    let x = r#"{"id":"x","run":"echo nosuchfn > uses/x.sh"}"#;
    let y = format!(
        r#"{{"id":"y","run":"{} && echo y > y.txt"}}"#,
        after_event(&repo, "merged", "x").replace('"', "\\\"")
    );
    let tasks = repo.tasks(&[x, &y]);
    let mut swarm = repo.spawn(&["run", path_str(&tasks), "-j", "2", "--gate", "sh gate.sh"]);
    first.reached(&mut swarm);
    wait_merged(&repo, &mut swarm, "y");
    first.release();
    let out = swarm.wait_with_output().unwrap();

    assert_exit(&out, 3);
    assert_eq!(tasks_with(&repo, "parked"), ["x"]);
    // x's tip (red), the base, never tested (green), then y merged again (green).
    assert_eq!(gate_probes(&repo), ["batch", "base", "batch"]);
    let culprit = events(&repo)
        .into_iter()
        .find(|(k, _)| k == "gate_culprit")
        .unwrap()
        .1;
    assert_eq!(culprit["task"], "x");
    assert_eq!(culprit["remerge"], serde_json::json!(["y"]));
    let integration = format!("swarm/{}", run_id(&repo));
    assert_eq!(merged_tasks(&repo, &integration), ["y"]);
    let files = repo.git(&["ls-tree", "-r", "--name-only", &integration]);
    assert!(files.contains("y.txt"), "{files}");
    assert!(!files.contains("uses/x.sh"), "{files}");
    assert_eq!(crate::rev(&repo, "main"), crate::rev(&repo, &integration));
    // The report's merges are those that stand: y once, at its merge again, and not x.
    let report = run_report(&repo);
    let merges = report
        .split("### Merges\n\n")
        .nth(1)
        .and_then(|m| m.split("\n\n").next())
        .expect(&report);
    assert_eq!(merges.lines().count(), 1, "{merges}");
    assert!(merges.starts_with("- `y` merged as "), "{merges}");
}

/// Someone moves the run's integration branch while the gate fails on b's merge: taking b out
/// meets the moved branch. What was there is kept on a branch of its own, the integration
/// branch goes where the gate takes it (without b), merging halts and says so, nothing is
/// lost, and resume finishes the run as if nothing had happened.
#[test]
fn a_branch_moved_while_the_gate_fails_is_kept_aside_and_resume_finishes() {
    let repo = shell_project();
    let tasks = rename_tasks(&repo);
    let base = crate::rev(&repo, "main");
    let once = outside(&repo, "moved-once");
    let user = repo.root.display().to_string();
    // The first time the gate fails, it moves the branch back to the base before it answers:
    // once c is merged, so that no merge of swarm's meets git's lock on the ref.
    let gate = format!(
        "sh gate.sh || {{ [ -e '{m}' ] || {{ {c_merged}; touch '{m}'; git -C '{user}' update-ref refs/heads/swarm/$SWARM_RUN_ID {base}; }}; exit 1; }}",
        m = path_str(&once),
        c_merged = after_event(&repo, "merged", "c"),
    );

    // The gate stands in for you moving the branch, which a confined gate may not do.
    let out = repo.swarm(&[
        "run",
        path_str(&tasks),
        "-j",
        "2",
        "--gate",
        &gate,
        "--confine",
        "off",
    ]);

    assert_exit(&out, 3);
    assert!(once.exists(), "the gate never failed");
    let run = run_id(&repo);
    let integration = format!("swarm/{run}");
    let backup = format!("{integration}@moved-{}", &base[..12]);
    assert_eq!(crate::rev(&repo, &backup), base);
    // The branch is where the gate took it: a merged, b out; main untouched.
    let files = repo.git(&["ls-tree", "-r", "--name-only", &integration]);
    assert!(!files.contains("uses/b.sh"), "{files}");
    assert_eq!(
        repo.git(&["show", &format!("{integration}:lib.sh")]),
        "hello() { echo hi; }\n"
    );
    assert_eq!(crate::rev(&repo, "main"), base);
    assert_eq!(tasks_with(&repo, "parked"), ["b"]);
    let err = stderr(&out);
    assert!(err.contains(&backup), "{err}");

    let out = repo.swarm(&["resume"]);

    assert_exit(&out, 3);
    assert_rename_outcome(&repo);
}
