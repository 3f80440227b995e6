//! What a writer does to history and refs in its checkout: its own commits are merged, a reset
//! below its start or a HEAD on another branch fails it, and the refs, stash, config and hooks
//! it changes stay its own; the integration branch moved from outside stops the merges.

use super::{AGENT_GIT, Main, run_tasks, task, untouchable};
use crate::{TestRepo, assert_exit, outside, rev, run_id, stdout};

#[test]
fn a_writers_own_commits_are_merged_with_their_messages_and_what_it_left_on_top() {
    let repo = TestRepo::new();
    let before = untouchable(&repo, Main::Landed);
    let base = rev(&repo, "main");
    let cmd = format!(
        "echo one > one.txt && git add one.txt && {AGENT_GIT} commit -qm 'mine: one' && echo two > two.txt"
    );
    let line = serde_json::json!({ "id": "w", "run": cmd }).to_string();
    // This one leaves nothing uncommitted: its commit alone is its result.
    let only =
        format!("echo three > three.txt && git add -A && {AGENT_GIT} commit -qm 'mine: three'");
    let only = serde_json::json!({ "id": "only", "deps": ["w"], "run": only }).to_string();

    let out = run_tasks(&repo, &[&line, &only], &[]);

    assert_exit(&out, 0);
    // Landed: the files, the agents' commits with their messages and author, swarm's on top.
    assert_eq!(repo.read("one.txt"), "one\n");
    assert_eq!(repo.read("two.txt"), "two\n");
    assert_eq!(repo.read("three.txt"), "three\n");
    let log = repo.git(&["log", "--format=%an|%s", &format!("{base}..main")]);
    assert!(log.contains("Agent|mine: one"), "{log}");
    assert!(log.contains("Agent|mine: three"), "{log}");
    assert_eq!(
        repo.git(&["log", "-1", "--format=%s", "main^1^2"]).trim(),
        "w",
        "swarm commits what was left uncommitted on top of the agent's commit"
    );
    assert_eq!(
        repo.git(&["log", "-1", "--format=%s", "main^2"]).trim(),
        "mine: three"
    );
    assert_eq!(task(&repo, "only")["status"], "done");
    assert!(
        repo.git(&["merge-base", "--is-ancestor", &base, "main"])
            .is_empty()
    );
    assert_eq!(task(&repo, "w")["status"], "done");
    assert_eq!(untouchable(&repo, Main::Landed), before);
}

#[test]
fn a_writer_that_resets_below_its_start_fails_and_its_work_is_kept_on_a_branch() {
    let repo = TestRepo::new();
    repo.write("second.txt", "second\n");
    repo.commit_all("second");
    let base = rev(&repo, "main");
    let before = untouchable(&repo, Main::Same);
    let line = r#"{"id":"w","run":"git reset -q --hard HEAD~1 && echo z > z.txt"}"#;

    let out = run_tasks(&repo, &[line], &["--retries", "0"]);

    assert_exit(&out, 1);
    // Nothing merged: the base's last commit is not reverted anywhere.
    assert_eq!(rev(&repo, "main"), base);
    assert_eq!(repo.read("second.txt"), "second\n");
    let t = task(&repo, "w");
    assert_eq!(t["status"], "failed");
    let error = t["error"].as_str().unwrap();
    assert!(
        error.contains("no longer descends from its start"),
        "{error}"
    );
    // What the agent left is kept, not lost: its reset history with its edit on top.
    let run = run_id(&repo);
    let kept = format!("swarm/{run}-w@1");
    assert!(error.contains(&kept), "{error}");
    assert_eq!(repo.git(&["show", &format!("{kept}:z.txt")]), "z\n");
    assert_eq!(
        repo.git(&["ls-tree", "--name-only", &kept, "second.txt"]),
        "",
        "the kept branch is what the agent left"
    );
    assert_eq!(untouchable(&repo, Main::Same), before);
}

#[test]
fn a_graft_in_the_checkout_does_not_pass_off_a_reset_as_descending_from_the_start() {
    let repo = TestRepo::new();
    repo.write("second.txt", "second\n");
    repo.commit_all("second");
    let base = rev(&repo, "main");
    // Reset below the start, commit there, and graft the start under that commit so git in
    // the checkout sees it descend from the start.
    let cmd = format!(
        "git reset -q --hard HEAD~1 && echo z > z.txt && git add z.txt && {AGENT_GIT} commit -qm z \
         && echo \"$(git rev-parse HEAD) {base}\" > .git/info/grafts"
    );
    let line = serde_json::json!({ "id": "w", "run": cmd }).to_string();

    let out = run_tasks(&repo, &[&line], &["--retries", "0"]);

    assert_exit(&out, 1);
    assert_eq!(rev(&repo, "main"), base);
    assert_eq!(repo.read("second.txt"), "second\n");
    let error = task(&repo, "w")["error"].as_str().unwrap().to_owned();
    assert!(error.contains("does not descend from its start"), "{error}");
    // What the agent made is kept, not lost.
    let kept = format!("swarm/{}-w@1", run_id(&repo));
    assert!(error.contains(&kept), "{error}");
    assert_eq!(repo.git(&["show", &format!("{kept}:z.txt")]), "z\n");
}

#[test]
fn a_writer_that_points_its_head_at_another_branch_fails_and_main_is_untouched() {
    let repo = TestRepo::new();
    let base = rev(&repo, "main");
    let before = untouchable(&repo, Main::Same);
    let lines = [
        r#"{"id":"sym","run":"git symbolic-ref HEAD refs/heads/main && echo x > x.txt"}"#,
        r#"{"id":"other","run":"git checkout -q -b other && echo y > y.txt"}"#,
    ];

    let out = run_tasks(&repo, &lines, &["--retries", "0"]);

    assert_exit(&out, 1);
    assert_eq!(rev(&repo, "main"), base);
    assert_eq!(repo.git(&["branch", "--list", "other"]), "");
    let run = run_id(&repo);
    for (id, names, file, text) in [
        ("sym", "refs/heads/main", "x.txt", "x\n"),
        ("other", "refs/heads/other", "y.txt", "y\n"),
    ] {
        let t = task(&repo, id);
        assert_eq!(t["status"], "failed", "{t}");
        let error = t["error"].as_str().unwrap();
        assert!(error.contains(&format!("HEAD names {names}")), "{error}");
        let kept = format!("swarm/{run}-{id}@1");
        assert_eq!(repo.git(&["show", &format!("{kept}:{file}")]), text);
    }
    assert_eq!(untouchable(&repo, Main::Same), before);
}

#[test]
fn a_writer_moving_refs_in_its_checkout_moves_no_one_elses() {
    let repo = TestRepo::new();
    let base = rev(&repo, "main");
    let before = untouchable(&repo, Main::Landed);
    // The second writer starts from the first's merge, then points the run's integration
    // branch (by name, in its own checkout) at its start and its start's parent.
    let lines = [
        r#"{"id":"a","run":"echo a > a.txt"}"#,
        r#"{"id":"b","deps":["a"],"run":"git update-ref refs/heads/swarm/$SWARM_RUN_ID HEAD && git update-ref refs/heads/main HEAD~1 && echo b > b.txt"}"#,
        r#"{"id":"c","deps":["b"],"run":"git update-ref refs/heads/swarm/$SWARM_RUN_ID HEAD~1 && echo c > c.txt"}"#,
    ];

    let out = run_tasks(&repo, &lines, &[]);

    assert_exit(&out, 0);
    for f in ["a.txt", "b.txt", "c.txt"] {
        assert_eq!(repo.read(f), format!("{}\n", &f[..1]), "{f}");
    }
    // Landed forwards: main descends from where it was, with every merge on it.
    assert!(
        repo.git(&["merge-base", "--is-ancestor", &base, "main"])
            .is_empty()
    );
    let merges = repo.git(&["log", "--merges", "--format=%s", "main"]);
    assert_eq!(merges.lines().count(), 3, "{merges}");
    // Only main moved, by the landing's fast-forward.
    assert_eq!(untouchable(&repo, Main::Landed), before);
}

#[test]
fn a_writer_sees_the_users_branches_and_tags_as_copies_of_its_own() {
    let repo = TestRepo::new();
    repo.git(&["tag", "v1"]);
    let before = untouchable(&repo, Main::Landed);
    let cmd = format!(
        "git log -1 --format=%s main > seen.txt && git rev-parse v1 >> seen.txt \
         && git branch -f main HEAD && git tag -d v1 && {AGENT_GIT} commit -q --allow-empty -m mine"
    );
    let line = serde_json::json!({ "id": "w", "run": cmd }).to_string();

    let out = run_tasks(&repo, &[&line], &[]);

    assert_exit(&out, 0);
    let seen = repo.read("seen.txt");
    assert!(seen.starts_with("initial\n"), "{seen}");
    assert!(seen.contains(&rev(&repo, "v1")), "{seen}");
    // Its moves of them were its own.
    assert_eq!(repo.git(&["tag", "--list"]), "v1\n");
    assert_eq!(untouchable(&repo, Main::Landed), before);
}

#[test]
fn stash_config_hooks_branches_and_tags_of_a_writer_stay_in_its_own_checkout() {
    let repo = TestRepo::new();
    let before = untouchable(&repo, Main::Landed);
    let planted = outside(&repo, "hook-ran");
    let cmd = format!(
        "echo stashed > s.txt && git add s.txt && {AGENT_GIT} stash -q \
         && git config user.name Mallory && git config core.hooksPath /tmp \
         && mkdir -p .git/hooks && printf '#!/bin/sh\\ntouch {0}\\n' > .git/hooks/post-merge && chmod +x .git/hooks/post-merge \
         && git branch stray && git tag stray-tag && echo kept > kept.txt",
        planted.display()
    );
    let line = serde_json::json!({ "id": "w", "run": cmd }).to_string();

    let out = run_tasks(&repo, &[&line], &[]);

    assert_exit(&out, 0);
    assert_eq!(repo.read("kept.txt"), "kept\n");
    assert_eq!(untouchable(&repo, Main::Landed), before);
    assert_eq!(repo.git(&["branch", "--list", "stray"]), "");
    assert_eq!(repo.git(&["tag", "--list"]), "");
    assert!(!planted.exists(), "a hook the agent planted ran");
    // The merge commit carries the user's identity, not the one the agent configured.
    let author = repo.git(&["log", "-1", "--format=%an", "main"]);
    assert_ne!(author.trim(), "Mallory");
}

#[test]
fn an_integration_branch_moved_from_outside_stops_the_merges_and_resume_finishes() {
    let repo = TestRepo::new();
    let base = rev(&repo, "main");
    let report = outside(&repo, "report.md");
    let user = repo.root.display().to_string();
    // `b` reaches into the user's repository by path and moves the run's integration branch
    // back to the base, dropping `a`'s merge.
    let b = format!(
        "git -C '{user}' update-ref refs/heads/swarm/$SWARM_RUN_ID {base} && echo b > b.txt"
    );
    let b = serde_json::json!({ "id": "b", "deps": ["a"], "run": b }).to_string();
    let lines = [r#"{"id":"a","run":"echo a > a.txt"}"#, b.as_str()];

    // A task stands in for you moving the branch, which a confined task may not do.
    let out = run_tasks(
        &repo,
        &lines,
        &["--final-out", report.to_str().unwrap(), "--confine", "off"],
    );

    assert_exit(&out, 3);
    let run = run_id(&repo);
    let integration = format!("swarm/{run}");
    // Nothing was built on the moved ref: it is back where swarm left it, with a's merge,
    // what was found there is kept, and main has not moved.
    assert_eq!(rev(&repo, "main"), base);
    assert_eq!(repo.git(&["show", &format!("{integration}:a.txt")]), "a\n");
    let backup = format!("{integration}@moved-{}", &base[..12]);
    assert_eq!(rev(&repo, &backup), base);
    assert_eq!(task(&repo, "b")["status"], "committed");
    let text = std::fs::read_to_string(&report).unwrap();
    let attention = &text[text.find("Needs attention").expect("Needs attention")..];
    assert!(attention.contains(&backup), "{attention}");

    let out = repo.swarm(&["resume", "--final-out", report.to_str().unwrap()]);

    assert_exit(&out, 0);
    assert_eq!(repo.read("a.txt"), "a\n");
    assert_eq!(repo.read("b.txt"), "b\n");
    let merges = repo.git(&["log", "--merges", "--format=%s", "main"]);
    assert_eq!(merges.lines().count(), 2, "{merges}");
}

#[test]
fn a_merge_cut_short_by_a_stale_ref_lock_finishes_on_resume() {
    let repo = TestRepo::new();
    let lock_dir = repo.root.join(".git/refs/heads/swarm");
    // The writer leaves a lock on the run's integration branch, as a process killed while
    // moving it would: the merge cannot move the ref.
    let cmd = format!(
        "touch '{}'/$SWARM_RUN_ID.lock && echo w > w.txt",
        lock_dir.display()
    );
    let line = serde_json::json!({ "id": "w", "run": cmd }).to_string();

    // A task stands in for the stale lock another program left, which a confined task may
    // not make.
    let out = run_tasks(&repo, &[&line], &["--confine", "off"]);

    assert_ne!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(!repo.root.join("w.txt").exists());

    let out = repo.swarm(&["resume"]);

    assert_exit(&out, 0);
    assert_eq!(repo.read("w.txt"), "w\n");
}

#[test]
fn a_reader_that_commits_in_its_snapshot_fails() {
    let repo = TestRepo::new();
    let before = untouchable(&repo, Main::Same);
    let cmd = format!("{AGENT_GIT} commit -q --allow-empty -m sneaky");
    let reader = serde_json::json!({ "id": "r", "run": cmd, "mode": "read" }).to_string();

    // Confined, the commit is refused as it is made; unconfined, it is found after.
    for (confine, said) in [
        ("auto", "Permission denied"),
        ("off", "changed its snapshot (HEAD)"),
    ] {
        let out = run_tasks(&repo, &[&reader], &["--retries", "0", "--confine", confine]);

        assert_exit(&out, 1);
        let error = task(&repo, "r")["error"].as_str().unwrap().to_owned();
        let told = error.clone() + &crate::stderr(&out);
        assert!(told.contains(said), "{confine}: {told}");
        assert_eq!(untouchable(&repo, Main::Same), before);
    }
}
