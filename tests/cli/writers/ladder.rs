//! The conflict ladder's structural rung: a conflict git's line merge cannot settle, merged by
//! mergiraf when both sides survive, parked with each rung's reason when not.

use super::{path_str, show, tasks_of};
use crate::{TestRepo, assert_exit, outside, run_id};

/// mergiraf, as `.ci/run` installs it (or `SWARM_TEST_MERGIRAF`). The tests that need it are
/// ignored where it is not installed (build.rs), but under CI.
fn mergiraf() -> std::path::PathBuf {
    crate::ci_templates::installed("SWARM_TEST_MERGIRAF", ".ci/tools/bin/mergiraf", "mergiraf")
}

const BASE: &str = "pub struct S;\n\nimpl S {\n    pub fn a(&self) -> u32 {\n        1\n    }\n}\n";

/// `BASE` with `name` returning `value` added after `a`, as a shell `printf`.
fn with_method(name: &str, value: u32) -> String {
    let text = BASE.replace(
        "        1\n    }\n}\n",
        &format!(
            "        1\n    }}\n\n    pub fn {name}(&self) -> u32 {{\n        {value}\n    }}\n}}\n"
        ),
    );
    format!("printf '%s' '{text}' > src/lib.rs")
}

/// Two writers add different methods at the same place of `src/lib.rs`: git's line merge
/// conflicts; `second` finishes after `first` is merged.
fn two_methods(repo: &TestRepo, second: &str) -> std::path::PathBuf {
    repo.write("src/lib.rs", BASE);
    repo.commit_all("impl S");
    repo.tasks(&[
        &serde_json::json!({"id": "first", "run": with_method("b", 2)}).to_string(),
        &serde_json::json!({
            "id": "second",
            "run": format!("{}; {second}", crate::after_event(repo, "merged", "first")),
        })
        .to_string(),
    ])
}

#[test]
#[cfg_attr(
    not(has_mergiraf),
    ignore = "needs mergiraf: not found; install with cargo install --locked --root .ci/tools mergiraf --version 0.20.0 (or set SWARM_TEST_MERGIRAF)"
)]
fn two_methods_added_at_one_place_are_merged_by_the_structural_rung() {
    let tool = mergiraf();
    let repo = TestRepo::new();
    let tasks = two_methods(&repo, &with_method("c", 3));
    let report = outside(&repo, "report.md");

    let out = repo
        .swarm_cmd()
        .env("SWARM_MERGIRAF", &tool)
        .args([
            "run",
            path_str(&tasks),
            "-j",
            "2",
            "--check",
            "grep -q 'fn a' src/lib.rs",
        ])
        .args(["--final-out", path_str(&report)])
        .output()
        .unwrap();

    assert_exit(&out, 0);
    let tasks = tasks_of(&repo);
    assert_eq!(tasks["second"]["status"], "done");
    let merged = repo.read("src/lib.rs");
    for kept in [
        "pub fn a(&self)",
        "pub fn b(&self)",
        "        2",
        "pub fn c(&self)",
        "        3",
    ] {
        assert!(merged.contains(kept), "{kept} lost:\n{merged}");
    }
    assert!(!merged.contains("<<<<<<<"), "{merged}");
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(
        text.contains("`second` merged as")
            && text.contains("after a conflict, resolved by the syntax-aware merge (mergiraf 0."),
        "{text}"
    );
    let log = repo.git(&["log", "--merges", "--format=%s"]);
    assert!(
        log.contains("conflicts resolved by a syntax-aware merge (mergiraf "),
        "{log}"
    );
}

#[test]
#[cfg_attr(
    not(has_mergiraf),
    ignore = "needs mergiraf: not found; install with cargo install --locked --root .ci/tools mergiraf --version 0.20.0 (or set SWARM_TEST_MERGIRAF)"
)]
fn a_conflict_mergiraf_cannot_settle_is_parked_with_what_the_rung_said() {
    let tool = mergiraf();
    let repo = TestRepo::new();
    // Both change the one line of `a` to something else.
    repo.write("src/lib.rs", BASE);
    repo.commit_all("impl S");
    let set = |v: u32| format!("sed -i 's/        1/        {v}/' src/lib.rs");
    let tasks = repo.tasks(&[
        &serde_json::json!({"id": "first", "run": set(2)}).to_string(),
        &serde_json::json!({
            "id": "second",
            "run": format!("{}; {}", crate::after_event(&repo, "merged", "first"), set(3)),
        })
        .to_string(),
    ]);
    let report = outside(&repo, "report.md");

    let out = repo
        .swarm_cmd()
        .env("SWARM_MERGIRAF", &tool)
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

    assert_exit(&out, 3);
    let run = run_id(&repo);
    assert_eq!(tasks_of(&repo)["second"]["status"], "parked");
    // The writer's own commit is untouched on its branch.
    let parked = show(&repo, &format!("swarm/{run}-second"), "src/lib.rs");
    assert!(parked.contains("        3"), "{parked}");
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(
        text.contains(
            "The syntax-aware merge (structural) did not merge it: conflict markers are left in src/lib.rs"
        ),
        "{text}"
    );
}

#[test]
#[cfg_attr(
    not(has_mergiraf),
    ignore = "needs mergiraf: not found; install with cargo install --locked --root .ci/tools mergiraf --version 0.20.0 (or set SWARM_TEST_MERGIRAF)"
)]
fn a_structural_merge_whose_check_fails_is_refused_and_the_writer_parked() {
    let tool = mergiraf();
    let repo = TestRepo::new();
    let tasks = two_methods(&repo, &with_method("c", 3));
    let report = outside(&repo, "report.md");
    // Green for each writer alone, red for the merge holding both methods.
    let check = "! grep -q 'fn b' src/lib.rs || ! grep -q 'fn c' src/lib.rs";

    let out = repo
        .swarm_cmd()
        .env("SWARM_MERGIRAF", &tool)
        .args(["run", path_str(&tasks), "-j", "2", "--check", check])
        .args(["--final-out", path_str(&report)])
        .output()
        .unwrap();

    assert_exit(&out, 3);
    assert_eq!(tasks_of(&repo)["second"]["status"], "parked");
    let merged = repo.read("src/lib.rs");
    assert!(
        merged.contains("fn b") && !merged.contains("fn c"),
        "{merged}"
    );
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(
        text.contains("The syntax-aware merge (structural) did not merge it: check"),
        "{text}"
    );
}

#[test]
fn without_mergiraf_the_structural_rung_is_passed_over_and_the_park_says_so() {
    let repo = TestRepo::new();
    let tasks = two_methods(&repo, &with_method("c", 3));
    let report = outside(&repo, "report.md");

    // The tests' PATH holds no mergiraf.
    let out = repo.swarm(&[
        "run",
        path_str(&tasks),
        "-j",
        "2",
        "--final-out",
        path_str(&report),
    ]);

    assert_exit(&out, 3);
    assert_eq!(tasks_of(&repo)["second"]["status"], "parked");
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(
        text.contains(
            "The syntax-aware merge (structural) did not merge it: no structural merge tool"
        ),
        "{text}"
    );
}

#[test]
fn a_mergiraf_key_naming_no_program_is_refused_before_anything_runs() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[r#"{"id":"a","run":"echo a > a.txt"}"#]);
    let before = repo.state();

    let out = repo
        .swarm_cmd()
        .env("SWARM_MERGIRAF", "/nonexistent/mergiraf")
        .args(["run", path_str(&tasks)])
        .output()
        .unwrap();

    assert_exit(&out, 2);
    let err = crate::stderr(&out);
    assert!(
        err.contains("mergiraf: /nonexistent/mergiraf does not run"),
        "{err}"
    );
    assert_eq!(repo.state(), before);
}

#[test]
fn a_conflicts_key_naming_no_rung_is_refused() {
    let repo = TestRepo::new();
    repo.write(".swarm.toml", "conflicts = [\"merge\", \"mergiraf\"]\n");
    repo.commit_all("config");
    let tasks = repo.tasks(&[r#"{"id":"a","run":"echo a > a.txt"}"#]);

    let out = repo.swarm(&["run", path_str(&tasks)]);

    assert_exit(&out, 2);
    let err = crate::stderr(&out);
    assert!(err.contains("`mergiraf` is not a rung"), "{err}");
}

#[test]
fn a_conflict_no_merge_settles_is_redone_on_the_tip_by_the_agent_told_its_earlier_diff() {
    let repo = TestRepo::new();
    repo.write("src/lib.rs", BASE);
    repo.commit_all("impl S");
    let tasks = repo.tasks(&[
        r#"{"id":"first","prompt":"make a return 2"}"#,
        r#"{"id":"second","prompt":"make a return 3"}"#,
    ]);
    // The agent: `second` waits for `first` to be merged, so their change to one line
    // conflicts. Done again, it checks its prompt holds its earlier diff and the conflicting
    // path, then changes the line as it is now.
    let agent = format!(
        "exec:prompt=$(cat); case $SWARM_TASK_ID in \
         first) sed -i 's/        1$/        2/' src/lib.rs ;; \
         second) if [ -n \"${{SWARM_REDO:-}}\" ]; then \
           printf '%s' \"$prompt\" | grep -q '^+        3$' || exit 9; \
           printf '%s' \"$prompt\" | grep -q 'conflicts in src/lib.rs' || exit 8; \
           sed -i 's/        2$/        2 + 1/' src/lib.rs; \
         else {}; sed -i 's/        1$/        3/' src/lib.rs; fi ;; esac",
        crate::after_event(&repo, "merged", "first")
    );
    let report = outside(&repo, "report.md");
    let mut cmd = repo.swarm_cmd();
    // With mergiraf the structural rung is tried first, and fails on one line changed twice;
    // without it the test runs all the same, the rung passed over.
    if cfg!(has_mergiraf) {
        cmd.env("SWARM_MERGIRAF", mergiraf());
    }

    let out = cmd
        .args(["run", path_str(&tasks), "-j", "2", "--agent", &agent])
        .args(["--final-out", path_str(&report)])
        .output()
        .unwrap();

    assert_exit(&out, 0);
    assert!(
        repo.read("src/lib.rs").contains("        2 + 1\n"),
        "{}",
        repo.read("src/lib.rs")
    );
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(
        text.contains("after a conflict, done again on the integration tip"),
        "{text}"
    );
    // The earlier attempt's commit is kept on the task's branch.
    let run = run_id(&repo);
    let earlier = show(&repo, &format!("swarm/{run}-second"), "src/lib.rs");
    assert!(earlier.contains("        3\n"), "{earlier}");
}

#[test]
fn a_run_task_marked_repeat_is_run_again_on_the_tip_and_one_not_marked_is_parked() {
    for repeat in [true, false] {
        let repo = TestRepo::new();
        repo.write("log.txt", "start\n");
        repo.commit_all("log");
        let tasks = repo.tasks(&[
            r#"{"id":"first","run":"echo first >> log.txt"}"#,
            &serde_json::json!({
                "id": "second",
                "run": format!(
                    "{}; echo second >> log.txt",
                    crate::after_event(&repo, "merged", "first")
                ),
                "repeat": repeat,
            })
            .to_string(),
        ]);

        let out = repo.swarm(&["run", path_str(&tasks), "-j", "2"]);

        if repeat {
            assert_exit(&out, 0);
            assert_eq!(repo.read("log.txt"), "start\nfirst\nsecond\n");
            let run = run_id(&repo);
            let transcript = repo
                .swarm_dir()
                .join("runs")
                .join(&run)
                .join("attempts")
                .join("second.redo.log");
            assert!(transcript.exists(), "{}", transcript.display());
        } else {
            assert_exit(&out, 3);
            assert_eq!(tasks_of(&repo)["second"]["status"], "parked");
        }
    }
}

#[test]
fn repeat_on_a_prompt_task_is_refused_with_the_line() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[r#"{"id":"p","prompt":"do it","repeat":true}"#]);

    let out = repo.swarm(&["run", path_str(&tasks), "--agent", "exec:true"]);

    assert_exit(&out, 2);
    let err = crate::stderr(&out);
    assert!(err.contains("\"repeat\" is for a `run` task"), "{err}");
}

#[test]
#[cfg_attr(
    not(has_mergiraf),
    ignore = "needs mergiraf: not found; install with cargo install --locked --root .ci/tools mergiraf --version 0.20.0 (or set SWARM_TEST_MERGIRAF)"
)]
fn edits_to_two_adjacent_functions_in_rust_python_and_typescript_are_merged_by_the_structural_rung()
{
    let tool = mergiraf();
    // One file per language with two adjacent functions: `first` changes what `a` returns,
    // `second` gives `b` a parameter. Adjacent lines: git's line merge conflicts.
    let cases = [
        (
            "src/lib.rs",
            "pub fn a() -> u32 { 1 }\npub fn b() -> u32 { 2 }\n",
            "s/{ 1 }/{ 10 }/",
            "s/b()/b(x: u32)/",
            "pub fn a() -> u32 { 10 }\npub fn b(x: u32) -> u32 { 2 }\n",
        ),
        (
            "app.py",
            "def a():\n    return 1\ndef b():\n    return 2\n",
            "s/return 1/return 10/",
            "s/b()/b(x)/",
            "def a():\n    return 10\ndef b(x):\n    return 2\n",
        ),
        (
            "app.ts",
            "function a(): number { return 1; }\nfunction b(): number { return 2; }\n",
            "s/return 1;/return 10;/",
            "s/b()/b(x: number)/",
            "function a(): number { return 10; }\nfunction b(x: number): number { return 2; }\n",
        ),
    ];
    for (path, base, first, second, merged) in cases {
        let repo = TestRepo::new();
        repo.write(path, base);
        repo.commit_all("two functions");
        let tasks = repo.tasks(&[
            &serde_json::json!({"id": "first", "run": format!("sed -i '{first}' {path}")})
                .to_string(),
            &serde_json::json!({
                "id": "second",
                "run": format!(
                    "{}; sed -i '{second}' {path}",
                    crate::after_event(&repo, "merged", "first")
                ),
            })
            .to_string(),
        ]);

        let out = repo
            .swarm_cmd()
            .env("SWARM_MERGIRAF", &tool)
            .args(["run", path_str(&tasks), "-j", "2"])
            .output()
            .unwrap();

        assert_exit(&out, 0);
        assert_eq!(repo.read(path), merged, "{path}");
        let run = run_id(&repo);
        let resolved: Vec<serde_json::Value> = super::events(&repo, &run)
            .into_iter()
            .filter(|e| e["kind"] == "resolved")
            .collect();
        assert_eq!(resolved.len(), 1, "{path}: {resolved:?}");
        assert_eq!(resolved[0]["detail"]["rung"], "structural", "{path}");
        assert_eq!(
            resolved[0]["detail"]["paths"],
            serde_json::json!([path]),
            "{path}"
        );
    }
}

#[test]
fn a_swarm_killed_during_a_redo_climbs_the_ladder_again_on_resume_and_merges_once() {
    let repo = TestRepo::new();
    repo.write("log.txt", "start\n");
    repo.commit_all("log");
    let mark = repo.shared.join("redo-started");
    // The first redo says it started and hangs; the one after the resume goes on.
    let tasks = repo.tasks(&[
        r#"{"id":"first","run":"echo first >> log.txt"}"#,
        &serde_json::json!({
            "id": "second",
            "run": format!(
                "if [ -n \"${{SWARM_REDO:-}}\" ] && [ ! -e '{m}' ]; then touch '{m}'; sleep 60; fi; {}; echo second >> log.txt",
                crate::after_event(&repo, "merged", "first"),
                m = mark.display()
            ),
            "repeat": true,
        })
        .to_string(),
    ]);
    let mut swarm = repo
        .swarm_cmd()
        .args(["run", path_str(&tasks), "-j", "2"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..6000 {
        if mark.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(mark.exists(), "the redo never started");
    swarm.kill().unwrap();
    swarm.wait().unwrap();

    let out = repo.swarm(&["resume"]);

    assert_exit(&out, 0);
    assert_eq!(repo.read("log.txt"), "start\nfirst\nsecond\n");
    let run = run_id(&repo);
    let merged = super::events(&repo, &run)
        .into_iter()
        .filter(|e| e["kind"] == "merged" && e["task"] == "second")
        .count();
    assert_eq!(merged, 1);
}
