//! What writers leave in their files is merged as git merges it: type changes, and names that
//! are not UTF-8.

use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use super::run_scripts;
use crate::{TestRepo, assert_exit, outside, rev};

/// The tree git itself makes of these writers' changes, each applied to `base` on a branch
/// and merged one after another.
fn tree_git_makes(repo: &TestRepo, base: &str, scripts: &[&str]) -> String {
    let scratch = outside(repo, "scratch");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "--detach",
        scratch.to_str().unwrap(),
        base,
    ]);
    let in_scratch = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(&scratch)
            .env_clear()
            .env("PATH", crate::search_path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "T")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "T")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", repo.cache.parent().unwrap())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let mut tip = base.to_owned();
    for script in scripts {
        in_scratch(&["checkout", "-q", "--detach", base]);
        let ran = std::process::Command::new("sh")
            .args(["-c", script])
            .current_dir(&scratch)
            .env_clear()
            .env("PATH", crate::search_path())
            .status()
            .unwrap();
        assert!(ran.success());
        in_scratch(&["add", "-A"]);
        in_scratch(&["commit", "-qm", "w"]);
        let writer = in_scratch(&["rev-parse", "HEAD"]).trim().to_owned();
        let out = in_scratch(&[
            "merge-tree",
            "--write-tree",
            &format!("--merge-base={base}"),
            &tip,
            &writer,
        ]);
        let tree = out.lines().next().unwrap().to_owned();
        let commit = in_scratch(&["commit-tree", &tree, "-p", &tip, "-p", &writer, "-m", "m"]);
        commit.trim().clone_into(&mut tip);
    }
    in_scratch(&["rev-parse", &format!("{tip}^{{tree}}")])
        .trim()
        .to_owned()
}

#[test]
fn type_changes_are_merged_as_git_merges_them() {
    let repo = TestRepo::new();
    repo.write("to-link.txt", "a file\n");
    repo.write("dir-to-file/inner.txt", "inner\n");
    repo.write("file-to-dir", "a file\n");
    std::os::unix::fs::symlink("README.md", repo.root.join("link-to-file")).unwrap();
    repo.commit_all("types");
    let base = rev(&repo, "main");
    let scripts = [
        "rm to-link.txt && ln -s README.md to-link.txt",
        "rm link-to-file && echo now a file > link-to-file",
        "rm file-to-dir && mkdir file-to-dir && echo inside > file-to-dir/new.txt",
        "rm -r dir-to-file && echo now a file > dir-to-file",
    ];
    let out = run_scripts(&repo, &scripts, &["-j", "4"]);

    assert_exit(&out, 0);
    let ours = rev(&repo, "main^{tree}");
    // Whatever order swarm merged them in, the changes are disjoint: git's tree is the one.
    assert_eq!(ours, tree_git_makes(&repo, &base, &scripts));
    let link = std::fs::read_link(repo.root.join("to-link.txt")).unwrap();
    assert_eq!(link, Path::new("README.md"));
    assert_eq!(repo.read("file-to-dir/new.txt"), "inside\n");
    assert_eq!(repo.read("dir-to-file"), "now a file\n");
}

#[test]
fn files_whose_names_are_not_utf8_are_edited_and_deleted_exactly() {
    let repo = TestRepo::new();
    let cafe = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    let naive = std::ffi::OsStr::from_bytes(b"na\xefve.txt");
    std::fs::write(repo.root.join(cafe), "old\n").unwrap();
    std::fs::write(repo.root.join(naive), "gone soon\n").unwrap();
    repo.commit_all("latin-1 names");
    let base = rev(&repo, "main");
    let scripts = [
        r"printf 'new\n' > $(printf 'caf\351.txt')",
        r"rm $(printf 'na\357ve.txt')",
        "echo other > other.txt",
    ];
    let out = run_scripts(&repo, &scripts, &["-j", "3"]);

    assert_exit(&out, 0);
    assert_eq!(std::fs::read(repo.root.join(cafe)).unwrap(), b"new\n");
    assert!(!repo.root.join(naive).exists());
    assert_eq!(
        rev(&repo, "main^{tree}"),
        tree_git_makes(&repo, &base, &scripts)
    );
}
