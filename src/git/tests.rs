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
