use super::*;

fn repo_with_commit(dir: &Path) -> (Repo, CommitId) {
    let raw = Repository::init(dir).unwrap();
    let sig = git2::Signature::now("t", "t@example.com").unwrap();
    let tree = raw.treebuilder(None).unwrap().write().unwrap();
    let tree = raw.find_tree(tree).unwrap();
    let c = raw
        .commit(Some("HEAD"), &sig, &sig, "first", &tree, &[])
        .unwrap();
    (Repo::discover(dir).unwrap(), c.into())
}

#[test]
fn deleting_a_branch_ignores_worktrees_another_thread_is_removing() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, c) = repo_with_commit(&dir.path().join("repo"));
    let common = repo.common_dir().to_owned();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Another thread registers and unregisters a worktree over and over, as writers
    // starting and merged ones being cleaned up do. libgit2's own branch deletion takes an
    // admin directory caught half-removed for a checkout of the branch being deleted.
    let churn = {
        let stop = stop.clone();
        let wt = dir.path().join("other");
        std::thread::spawn(move || {
            let admin = common.join("worktrees").join("swarm-r-b");
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::fs::create_dir_all(&admin).unwrap();
                std::fs::write(admin.join("HEAD"), "ref: refs/heads/swarm/r-b\n").unwrap();
                std::fs::write(admin.join("commondir"), "../..\n").unwrap();
                let gitdir = format!("{}\n", wt.join(".git").display());
                std::fs::write(admin.join("gitdir"), gitdir).unwrap();
                std::fs::remove_dir_all(&admin).unwrap();
            }
        })
    };
    let mut failures = 0;
    for _ in 0..2000 {
        repo.create_branch("swarm/r-a", &c).unwrap();
        if !matches!(repo.delete_branch_at("swarm/r-a", &c), Ok(true)) {
            failures += 1;
            break;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    churn.join().unwrap();
    assert_eq!(failures, 0);
}

#[test]
fn a_branch_someone_has_checked_out_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, c) = repo_with_commit(&dir.path().join("repo"));
    repo.create_branch("swarm/r-a", &c).unwrap();
    // A linked worktree of the user's with the branch checked out.
    let admin = repo.common_dir().join("worktrees").join("mine");
    std::fs::create_dir_all(&admin).unwrap();
    std::fs::write(admin.join("HEAD"), "ref: refs/heads/swarm/r-a\n").unwrap();
    assert!(!repo.delete_branch_at("swarm/r-a", &c).unwrap());
    assert_eq!(
        repo.ref_target("refs/heads/swarm/r-a").unwrap(),
        Some(c.clone())
    );
    // The user's own checkout counts too.
    let raw = Repository::open(dir.path().join("repo")).unwrap();
    let current = raw.head().unwrap().shorthand().unwrap().to_owned();
    assert!(!repo.delete_branch_at(&current, &c).unwrap());
    assert_eq!(repo.resolve(&current).unwrap(), c);
}

/// A repository whose `main` and checkout hold `a.txt` = "old", and a commit on top of it
/// (on no branch) with `a.txt` = "new".
fn repo_to_land(dir: &Path) -> (Repo, CommitId, CommitId) {
    let raw = Repository::init(dir).unwrap();
    raw.set_head("refs/heads/main").unwrap();
    let sig = git2::Signature::now("t", "t@example.com").unwrap();
    std::fs::write(dir.join("a.txt"), "old\n").unwrap();
    let mut index = raw.index().unwrap();
    index.add_path(Path::new("a.txt")).unwrap();
    index.write().unwrap();
    let tree = raw.find_tree(index.write_tree().unwrap()).unwrap();
    let base = raw
        .commit(Some("HEAD"), &sig, &sig, "base", &tree, &[])
        .unwrap();
    let blob = raw.blob(b"new\n").unwrap();
    let mut builder = raw.treebuilder(Some(&tree)).unwrap();
    builder.insert("a.txt", blob, 0o100_644).unwrap();
    let tree = raw.find_tree(builder.write().unwrap()).unwrap();
    let parent = raw.find_commit(base).unwrap();
    let tip = raw
        .commit(None, &sig, &sig, "tip", &tree, &[&parent])
        .unwrap();
    (Repo::discover(dir).unwrap(), base.into(), tip.into())
}

/// The id of a process that has ended.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

#[test]
fn a_landing_killed_while_it_held_the_branch_lock_is_finished_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    let (repo, base, tip) = repo_to_land(&root);
    let staging = dir.path().join("landing");
    // What a landing killed inside the branch's move leaves: its files and index in place,
    // its staging directory naming a dead owner and the ref, and the ref's lock.
    std::fs::create_dir_all(&staging).unwrap();
    std::fs::write(staging.join("owner"), dead_pid().to_string()).unwrap();
    std::fs::write(staging.join("moving"), "refs/heads/main").unwrap();
    std::fs::write(root.join("a.txt"), "new\n").unwrap();
    let mut index = repo.repo.index().unwrap();
    index.add_path(Path::new("a.txt")).unwrap();
    index.write().unwrap();
    let lock = repo.common_dir().join("refs/heads/main.lock");
    std::fs::write(&lock, "").unwrap();

    let landed = land(&repo, &base, &tip, &staging).unwrap();

    assert!(matches!(landed, Landing::FastForwarded { ref branch } if branch == "main"));
    assert_eq!(
        repo.repo.refname_to_id("refs/heads/main").unwrap(),
        tip.oid().unwrap()
    );
    assert!(!lock.exists());
    assert!(!staging.exists());
    assert!(repo.fingerprint().unwrap().paths.is_empty());
}

#[test]
fn a_branch_another_process_holds_is_not_landed_and_nothing_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    let (repo, base, tip) = repo_to_land(&root);
    let lock = repo.common_dir().join("refs/heads/main.lock");
    std::fs::write(&lock, "").unwrap();

    let landed = land(&repo, &base, &tip, &dir.path().join("landing")).unwrap();

    let Landing::Kept { reason } = landed else {
        panic!("landed through another process's lock");
    };
    assert!(
        reason.starts_with("another git process holds main ("),
        "{reason}"
    );
    assert!(lock.exists());
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "old\n"
    );
    assert_eq!(
        repo.repo.refname_to_id("refs/heads/main").unwrap(),
        base.oid().unwrap()
    );
}

#[test]
fn a_placed_checkout_keeps_its_files_where_they_are_from_one_name_to_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, c) = repo_with_commit(&dir.path().join("repo"));
    let root = dir.path().join("run");
    let (a, b) = (root.join("a"), root.join("b"));
    create_placed_checkout(&repo, &a, &Head::NewBranch("swarm/r-a", &c)).unwrap();
    let place = root.join(PLACES).join("a");
    assert_eq!(
        std::fs::canonicalize(&a).unwrap(),
        std::fs::canonicalize(&place).unwrap()
    );
    std::fs::create_dir_all(a.join("target")).unwrap();
    std::fs::write(a.join("target/built"), "cached\n").unwrap();

    let aside = set_checkout_aside(&a, &c).unwrap();
    assert_eq!(aside, place);
    assert!(std::fs::symlink_metadata(&a).is_err(), "the name stayed");
    reuse_checkout(
        &repo,
        &aside,
        &b,
        &Head::NewBranch("swarm/r-b", &c),
        &["target".to_owned()],
    )
    .unwrap();

    assert_eq!(
        std::fs::canonicalize(&b).unwrap(),
        std::fs::canonicalize(&place).unwrap()
    );
    assert_eq!(
        std::fs::read_to_string(b.join("target/built")).unwrap(),
        "cached\n"
    );
    // A second checkout named `a` gets a place of its own beside the first.
    create_placed_checkout(&repo, &a, &Head::Detached(&c)).unwrap();
    assert_eq!(
        std::fs::read_link(&a).unwrap(),
        Path::new(PLACES).join("a~2")
    );
    remove_checkout(&b).unwrap();
    assert!(!place.exists() && std::fs::symlink_metadata(&b).is_err());
    assert!(a.join(".git").is_dir());
}

#[test]
fn a_link_swarm_did_not_make_is_removed_and_nothing_it_points_at_is_written_or_removed() {
    let dir = tempfile::tempdir().unwrap();
    let yours = dir.path().join("yours");
    std::fs::create_dir_all(yours.join(".git")).unwrap();
    std::fs::write(yours.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(yours.join("keep"), "mine\n").unwrap();
    let root = dir.path().join("run");
    std::fs::create_dir_all(root.join(PLACES)).unwrap();
    for (name, target) in [
        ("abs", yours.clone()),
        ("up", Path::new("..").join("yours")),
    ] {
        let link = root.join(name);
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(set_checkout_aside(&link, &CommitId::from(git2::Oid::zero())).is_err());
        remove_checkout(&link).unwrap();
        assert!(std::fs::symlink_metadata(&link).is_err());
    }
    assert_eq!(
        std::fs::read_to_string(yours.join("keep")).unwrap(),
        "mine\n"
    );
}

#[test]
fn places_no_name_links_to_are_removed_and_the_others_stay() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, c) = repo_with_commit(&dir.path().join("repo"));
    let root = dir.path().join("run");
    for name in ["kept", "aside"] {
        create_placed_checkout(&repo, &root.join(name), &Head::Detached(&c)).unwrap();
    }
    set_checkout_aside(&root.join("aside"), &c).unwrap();
    // Half-made by a process that was killed before it linked it.
    std::fs::create_dir_all(root.join(PLACES).join("half")).unwrap();

    remove_unplaced(&root).unwrap();

    let mut left: Vec<String> = std::fs::read_dir(root.join(PLACES))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["kept"]);
    assert!(root.join("kept").join(".git").is_dir());
}

#[test]
fn a_checkout_whose_git_files_became_links_is_neither_set_aside_nor_updated_through_them() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, c) = repo_with_commit(&dir.path().join("repo"));
    let user_git = dir.path().join("repo/.git");
    let user_head = std::fs::read_to_string(user_git.join("HEAD")).unwrap();
    let outside = dir.path().join("outside");
    std::fs::write(&outside, "yours\n").unwrap();
    let root = dir.path().join("run");

    // `.git` itself a link to the user's git directory.
    let a = root.join("a");
    create_placed_checkout(&repo, &a, &Head::NewBranch("swarm/r-a", &c)).unwrap();
    let a_git = root.join(PLACES).join("a/.git");
    std::fs::remove_dir_all(&a_git).unwrap();
    std::os::unix::fs::symlink(&user_git, &a_git).unwrap();
    assert!(set_checkout_aside(&a, &c).is_err());
    assert!(update_checkout(&repo, &a, &Head::Detached(&c), &[]).is_err());
    assert_eq!(
        std::fs::read_to_string(user_git.join("HEAD")).unwrap(),
        user_head
    );
    assert!(user_git.join("objects").is_dir() && user_git.join("refs").is_dir());

    // Its HEAD, index and setup record links to a file of the user's.
    let b = root.join("b");
    create_placed_checkout(&repo, &b, &Head::NewBranch("swarm/r-b", &c)).unwrap();
    for name in ["HEAD", "swarm-setup"] {
        let file = b.join(".git").join(name);
        let _ = std::fs::remove_file(&file);
        std::os::unix::fs::symlink(&outside, &file).unwrap();
    }
    let aside = set_checkout_aside(&b, &c).unwrap();
    let index = aside.join(".git/index");
    std::fs::remove_file(&index).unwrap();
    std::os::unix::fs::symlink(&outside, &index).unwrap();
    let c2 = root.join("c");
    // No index of its own to update from: not reused (a new checkout replaces it).
    assert!(reuse_checkout(&repo, &aside, &c2, &Head::Detached(&c), &[]).is_err());
    // Recording a setup there writes nothing through them (it may fail: its HEAD is gone).
    let _ = crate::git::prepare::record_setup(&aside, "key");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "yours\n");
}

#[test]
fn a_sample_hook_edited_changes_no_fingerprint_and_a_hook_made_to_run_does() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, _) = repo_with_commit(&dir.path().join("repo"));
    let hooks = repo.common_dir().join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::write(hooks.join("pre-commit.sample"), "#!/bin/sh\n").unwrap();
    let before = repo.fingerprint().unwrap();

    std::fs::write(hooks.join("pre-commit.sample"), "#!/bin/sh\nexit 1\n").unwrap();
    assert!(
        before
            .changed_paths(&repo.fingerprint().unwrap())
            .is_empty()
    );

    std::fs::rename(hooks.join("pre-commit.sample"), hooks.join("pre-commit")).unwrap();
    assert_eq!(
        before.changed_paths(&repo.fingerprint().unwrap()),
        [".git/hooks/pre-commit"]
    );
}
