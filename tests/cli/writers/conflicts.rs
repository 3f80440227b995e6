//! Writers that conflict: the later one is parked with its branch kept and reported, unless the
//! conflict resolver settles it.

use std::path::PathBuf;

use serde_json::Value;

use super::{events, path_str, run_with_a_conflict, show, swarm_branches, tasks_of, tree_paths};
use crate::{TestRepo, assert_exit, extra_worktrees, outside, rev, run_id};

#[test]
fn conflicting_writer_is_parked_and_branch_kept() {
    let repo = TestRepo::new();
    let report = outside(&repo, "report.md");
    let hook_log = outside(&repo, "escalations.jsonl");
    let hook = format!("cat >> '{0}'; echo >> '{0}'", hook_log.display());

    let (out, run) = run_with_a_conflict(
        &repo,
        &["--final-out", path_str(&report), "--on-escalate", &hook],
    );

    assert_exit(&out, 3);
    let parked = format!("swarm/{run}-b");
    let tasks = tasks_of(&repo);
    assert_eq!(tasks["a"]["status"], "done");
    assert_eq!(tasks["b"]["status"], "parked");
    assert_eq!(tasks["after"]["status"], "skipped");
    // The parked branch and its commit are intact.
    let commit = rev(&repo, &parked);
    assert_eq!(
        show(&repo, &commit, "src/lib.rs"),
        "pub fn one() -> u32 {\n    3\n}\n"
    );
    assert_eq!(
        show(&repo, &format!("swarm/{run}"), "src/lib.rs"),
        "pub fn one() -> u32 {\n    2\n}\n"
    );
    assert!(!tree_paths(&repo, &format!("swarm/{run}")).contains(&"after.txt".to_owned()));
    // The report says what needs a human and how to resolve it.
    let text = std::fs::read_to_string(&report).unwrap();
    let attention = &text[text
        .find("Needs attention")
        .expect("a Needs attention section")..];
    assert!(attention.contains("`src/lib.rs`"), "{attention}");
    assert!(
        attention.contains(&format!("git merge {parked}")),
        "{attention}"
    );
    assert!(
        attention.contains(&format!("git diff swarm/{run}...{parked}")),
        "{attention}"
    );
    // The hook ran exactly once, with the details.
    let calls: Vec<Value> = std::fs::read_to_string(&hook_log)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("the hook got JSON"))
        .collect();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["task"], "b");
    assert_eq!(calls[0]["branch"], parked.as_str());
    assert_eq!(calls[0]["commit"], commit.as_str());
    assert_eq!(calls[0]["paths"], serde_json::json!(["src/lib.rs"]));
    let escalated = events(&repo, &run)
        .iter()
        .filter(|e| e["kind"] == "escalated")
        .count();
    assert_eq!(escalated, 1);
}

/// Two writers changing the same line of `shared.txt`; the second one finishes last.
fn same_line_writers(repo: &TestRepo) -> PathBuf {
    repo.write("shared.txt", "top\nshared\nbottom\n");
    repo.commit_all("add shared.txt");
    repo.tasks(&[
        r#"{"id":"first","run":"sed -i 's/shared/from first/' shared.txt"}"#,
        &serde_json::json!({
            "id": "second",
            "run": format!(
                "{}; sed -i 's/shared/from second/' shared.txt",
                crate::after_event(repo, "merged", "first")
            ),
        })
        .to_string(),
    ])
}

#[test]
fn a_conflict_the_resolver_settles_is_merged_once_and_nothing_is_parked() {
    let repo = TestRepo::new();
    let tasks = same_line_writers(&repo);
    // The "agent" keeps both sides: it drops the marker lines.
    let agent = "exec:sed -i '/^<<<<<<< /d; /^=======$/d; /^>>>>>>> /d' shared.txt";

    let out = repo.swarm(&[
        "run",
        path_str(&tasks),
        "--resolve-conflicts",
        "--agent",
        agent,
    ]);

    assert_exit(&out, 0);
    assert_eq!(
        repo.read("shared.txt"),
        "top\nfrom first\nfrom second\nbottom\n"
    );
    assert!(
        swarm_branches(&repo).is_empty(),
        "{:?}",
        swarm_branches(&repo)
    );
    assert!(
        extra_worktrees(&repo).is_empty(),
        "{:?}",
        extra_worktrees(&repo)
    );
    let merges = repo.git(&["log", "--merges", "--format=%s"]);
    // One merge per task: the resolver's merge commit is the one for `second`.
    assert_eq!(
        merges
            .lines()
            .filter(|l| l.starts_with("Merge swarm task second"))
            .count(),
        1,
        "{merges}"
    );
    assert_eq!(merges.lines().count(), 2, "{merges}");
}

#[test]
fn a_resolver_that_leaves_markers_parks_the_writer_with_the_reason() {
    let repo = TestRepo::new();
    let tasks = same_line_writers(&repo);
    let report = outside(&repo, "report.md");

    let out = repo.swarm(&[
        "run",
        path_str(&tasks),
        "--resolve-conflicts",
        "--agent",
        "exec:true",
        "--final-out",
        path_str(&report),
    ]);

    assert_exit(&out, 3);
    let run = run_id(&repo);
    assert_eq!(
        show(&repo, &format!("swarm/{run}-second"), "shared.txt"),
        "top\nfrom second\nbottom\n"
    );
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(
        text.contains("conflict markers are left in shared.txt"),
        "{text}"
    );
    assert_eq!(repo.read("shared.txt"), "top\nfrom first\nbottom\n");
}

#[test]
fn a_parked_writer_among_ten_still_gets_the_reducer_which_names_it_and_the_run_says_what_landed() {
    let repo = TestRepo::new();
    let report = outside(&repo, "report.md");
    // w0…w8 each write a file of their own and w8 also README.md, which w9 changes too: w9
    // starts first, from the same tip, and changes it once w8 is merged, so it is parked.
    let mut lines = vec![
        serde_json::json!({
            "id": "w9",
            "run": format!("{}; echo nine > README.md", crate::after_event(&repo, "merged", "w8")),
        })
        .to_string(),
    ];
    lines.extend((0..9).map(|k| {
        let extra = if k == 8 {
            " && echo eight > README.md"
        } else {
            ""
        };
        format!(r#"{{"id":"w{k}","run":"echo {k} > f{k}.txt{extra}"}}"#)
    }));
    let deps: Vec<String> = (0..10).map(|k| format!("w{k}")).collect();
    let reducer = concat!(
        "echo '# What was done'; echo \"finished: $SWARM_DEPS\"; ",
        "echo \"missing: $SWARM_DEPS_MISSING\"; ",
        "for f in \"$SWARM_DEPS_DIR\"/*.missing; do ",
        "echo \"- $(basename \"$f\" .missing): $(cat \"$f\")\"; done"
    );
    lines.push(
        serde_json::json!({"id": "report", "lane": "reducer", "mode": "read", "deps": deps, "run": reducer})
            .to_string(),
    );
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let tasks = repo.tasks(&refs);

    let out = repo.swarm(&[
        "run",
        path_str(&tasks),
        "-j",
        "2",
        "--final-out",
        path_str(&report),
    ]);

    assert_exit(&out, 3);
    let run = run_id(&repo);
    let tasks = tasks_of(&repo);
    assert_eq!(tasks["w9"]["status"], "parked");
    assert_eq!(tasks["report"]["status"], "done");
    // The reducer ran on what finished and was told what is missing and why.
    let result = tasks["report"]["result"].as_str().unwrap();
    assert!(
        result.contains("finished: w0 w1 w2 w3 w4 w5 w6 w7 w8\n"),
        "{result}"
    );
    assert!(result.contains("missing: w9\n"), "{result}");
    assert!(result.contains("- w9: parked: "), "{result}");
    // The report opens with that deliverable, and "Needs attention" names the same task.
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.starts_with("# What was done\n"), "{text}");
    let attention = text.split("## Needs attention").nth(1).unwrap_or_default();
    assert!(attention.contains("`w9` is parked"), "{text}");
    // What was merged landed, and the run's last line says which writers are not in it.
    for k in 0..9 {
        assert!(
            tree_paths(&repo, "main").contains(&format!("f{k}.txt")),
            "f{k}.txt"
        );
    }
    assert_eq!(repo.read("README.md"), "eight\n");
    let said = crate::stdout(&out);
    assert!(
        said.contains("It holds the work of 9 of 10 writers; not in it: w9 (parked)."),
        "{said}"
    );
    assert!(swarm_branches(&repo).contains(&format!("swarm/{run}-w9")));
}
