//! Landing is a transaction: a kill at any moment inside it leaves every file whole (its old
//! or its landed version) and `swarm resume` finishes it; a landing that cannot happen leaves
//! the checkout byte-identical and says why and what will work.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::{TestRepo, assert_exit, stdout};

/// Directories of files the writer changes, each with this many files; `d0` it deletes.
const DIRS: usize = 10;
const FILES: usize = 30;

fn base_text(d: usize, f: usize) -> String {
    format!("base {d} {f}\n")
}

/// A repository of `DIRS × FILES` files and a writer that changes `d1…`, deletes `d0` and adds
/// `n/`: a few hundred files for the landing to write.
fn many_files() -> (TestRepo, std::path::PathBuf) {
    let repo = TestRepo::new();
    for d in 0..DIRS {
        for f in 0..FILES {
            repo.write(&format!("d{d}/f{f:02}"), &base_text(d, f));
        }
    }
    repo.commit_all("many files");
    // The user's own untracked file, which no landing may touch.
    repo.write("notes.txt", "mine\n");
    let script = format!(
        "for f in d[1-9]/*; do echo new >> $f; done; rm -r d0; mkdir n; for i in $(seq 0 {}); do echo added $i > n/k$i; done",
        FILES - 1
    );
    let tasks = repo.tasks(&[&serde_json::json!({ "id": "w", "run": script }).to_string()]);
    (repo, tasks)
}

/// Every file of the checkout outside `.git`, with its content.
fn files(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path == root.join(".git") {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                out.insert(rel, std::fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// Whether `path` holds `text` as the old or the landed version of the writer's change.
fn old_or_landed(path: &str, text: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    match parts.as_slice() {
        ["README.md"] => text == "# demo\n",
        ["notes.txt"] => text == "mine\n",
        ["src", "lib.rs"] => text.starts_with("pub fn one"),
        ["n", k] => *text == format!("added {}\n", &k[1..]),
        [d, f] if d.starts_with('d') => {
            let (d, f): (usize, usize) = (d[1..].parse().unwrap(), f[1..].parse().unwrap());
            let old = base_text(d, f);
            text == old || (d > 0 && *text == format!("{old}new\n"))
        }
        _ => false,
    }
}

/// The checkout exactly as the landed commit has it, with nothing staged or stray.
fn assert_landed(repo: &TestRepo, context: &str) {
    assert_eq!(
        repo.git(&["status", "--porcelain", "--ignored"]),
        "?? notes.txt\n",
        "{context}"
    );
    let mut now = files(&repo.root);
    assert_eq!(
        now.remove("notes.txt").as_deref(),
        Some("mine\n"),
        "{context}"
    );
    assert!(!now.keys().any(|p| p.starts_with("d0/")), "{context}");
    assert_eq!(
        now["d1/f00"],
        format!("{}new\n", base_text(1, 0)),
        "{context}"
    );
    assert_eq!(now["n/k0"], "added 0\n", "{context}");
    let tracked = repo.git(&["ls-files"]).lines().count();
    assert_eq!(now.len(), tracked, "{context}");
    assert!(!repo.root.join(".git/index.lock").exists(), "{context}");
    let runs = repo.swarm_dir().join("runs");
    for run in std::fs::read_dir(runs).unwrap() {
        assert!(!run.unwrap().path().join("landing").exists(), "{context}");
    }
}

/// How long a landing takes here, from its event to the end of the run.
fn landing_time() -> Duration {
    let (calibration, tasks) = many_files();
    assert_exit(&calibration.swarm(&["run", tasks.to_str().unwrap()]), 0);
    let at = |kind: &str| {
        let runs = calibration.swarm_dir().join("runs");
        let run = std::fs::read_dir(runs)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let log = std::fs::read_to_string(run.join("events.jsonl")).unwrap();
        log.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|e| e["kind"] == kind)
            .and_then(|e| e["at"].as_u64())
            .unwrap()
    };
    Duration::from_millis(at("run_ended") - at("landing"))
}

/// Runs the writer ten times, calling `strike` on swarm at tenths of a landing's time after
/// the landing began; after each, every file is whole (its old or its landed version), and
/// the run, resumed if it stopped before its end, has landed.
fn strike_during_landing(strike: impl Fn(&mut std::process::Child)) {
    let landing = landing_time();
    for round in 0..10u32 {
        let (repo, tasks) = many_files();
        let mut child = repo
            .swarm_cmd()
            .args(["run", tasks.to_str().unwrap()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // The landing starts right after its event.
        let runs = repo.swarm_dir().join("runs");
        let landing_started = || {
            std::fs::read_dir(&runs)
                .into_iter()
                .flatten()
                .flatten()
                .any(|run| {
                    std::fs::read_to_string(run.path().join("events.jsonl"))
                        .is_ok_and(|log| log.contains("\"kind\":\"landing\""))
                })
        };
        while !landing_started() && child.try_wait().unwrap().is_none() {
            std::thread::yield_now();
        }
        std::thread::sleep(landing * round / 10);
        strike(&mut child);
        let status = child.wait().unwrap();
        let context = format!("round {round} ({status})");

        // Every file is whole: its old version or its landed one, nothing stray.
        let now = files(&repo.root);
        for (path, text) in &now {
            assert!(
                old_or_landed(path, text),
                "{context}: {path} holds {text:?}"
            );
        }

        let out = repo.swarm(&["resume"]);
        let context = format!(
            "{context}: resume said {}{}",
            stdout(&out),
            String::from_utf8_lossy(&out.stderr)
        );
        // Stopped after the run was recorded as finished, it has nothing to resume.
        let finished_before =
            String::from_utf8_lossy(&out.stderr).contains("no unfinished run to resume");
        if !finished_before {
            assert_exit(&out, 0);
        }
        assert_landed(&repo, &context);
    }
}

#[test]
fn a_kill_at_any_moment_of_the_landing_leaves_every_file_whole_and_resume_finishes_it() {
    strike_during_landing(|swarm| {
        let _ = swarm.kill();
    });
}

#[test]
fn ctrl_c_during_the_landing_lets_it_finish_whole() {
    strike_during_landing(|swarm| {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(swarm.id()).unwrap());
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
        // A Ctrl-C during the landing is no stop: the landing, one transaction, finishes
        // and the run ends as it would have.
        let status = swarm.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{status}");
    });
}

#[test]
fn a_stale_index_lock_keeps_the_checkout_as_it_was_and_the_printed_command_then_lands() {
    let (repo, tasks) = many_files();
    let before = repo.state();
    std::fs::write(repo.root.join(".git/index.lock"), "").unwrap();

    let out = repo.swarm(&["run", tasks.to_str().unwrap()]);

    assert_exit(&out, 0);
    let said = stdout(&out);
    assert!(
        said.contains("Not landed (another git process holds the index"),
        "{said}"
    );
    let mut now = repo.state();
    now.remove(".git/index.lock");
    assert_eq!(now, before);
    let command = said
        .split('`')
        .find(|s| s.starts_with("git merge --ff-only"))
        .expect("the command to take the work")
        .to_owned();
    std::fs::remove_file(repo.root.join(".git/index.lock")).unwrap();
    let args: Vec<&str> = command.split(' ').skip(1).collect();
    repo.git(&args);
    assert_landed(&repo, "after the printed command");
}

#[test]
#[cfg_attr(
    not(can_mount_tmpfs),
    ignore = "needs root: mounting a tmpfs needs CAP_SYS_ADMIN, not held here; run the tests as root"
)]
fn a_disk_that_fills_during_the_landing_keeps_the_checkout_as_it_was() {
    let (repo, _) = many_files();
    // A file system of its own, small enough that the landing's copy of a large new file
    // does not fit after the repository and the merged objects.
    let mount = repo.cache.parent().unwrap().join("small");
    let disk = crate::SmallDisk::mount(&mount, "6m");
    let small = TestRepo::at(&mount.join("repo"));
    let tasks = small.tasks(&[r#"{"id":"big","run":"head -c 3500000 /dev/urandom > big.bin"}"#]);
    let before = small.state();

    let out = small.swarm(&["run", tasks.to_str().unwrap()]);

    assert_exit(&out, 0);
    let said = stdout(&out);
    assert!(
        said.contains("the landed files could not be written"),
        "{said}"
    );
    assert_eq!(small.state(), before);
    let runs = small.swarm_dir().join("runs");
    for run in std::fs::read_dir(runs).unwrap() {
        assert!(!run.unwrap().path().join("landing").exists());
    }
    // With room again, the printed command lands the work.
    disk.grow("32m");
    let command = said
        .split('`')
        .find(|s| s.starts_with("git merge --ff-only"))
        .expect("the command to take the work")
        .to_owned();
    let args: Vec<&str> = command.split(' ').skip(1).collect();
    small.git(&args);
    assert_eq!(
        std::fs::metadata(mount.join("repo/big.bin")).unwrap().len(),
        3_500_000
    );
    drop(small);
    drop(disk);
}

#[test]
fn a_submodule_moved_by_a_writer_lands_in_the_index_and_its_checkout_is_left_alone() {
    let repo = TestRepo::new();
    let first = repo.git(&["rev-parse", "HEAD"]).trim().to_owned();
    repo.write("second.txt", "second\n");
    repo.commit_all("second");
    let second = repo.git(&["rev-parse", "HEAD"]).trim().to_owned();
    // A submodule entry (any commit id will do for git) with a checkout of the user's.
    repo.git(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("160000,{first},sub"),
    ]);
    repo.git(&["commit", "-q", "-m", "a submodule"]);
    repo.write("sub/work.txt", "the user's work in the submodule\n");
    let cmd = format!(
        "git update-index --cacheinfo 160000,{second},sub && git -c user.name=A -c user.email=a@example.com commit -qm 'move sub'"
    );
    let tasks = repo.tasks(&[&serde_json::json!({ "id": "w", "run": cmd }).to_string()]);

    let out = repo.swarm(&["run", tasks.to_str().unwrap()]);

    assert_exit(&out, 0);
    assert!(stdout(&out).contains("Landed"), "{}", stdout(&out));
    let entry = repo.git(&["ls-files", "-s", "sub"]);
    assert!(entry.starts_with(&format!("160000 {second}")), "{entry}");
    assert_eq!(
        repo.read("sub/work.txt"),
        "the user's work in the submodule\n"
    );
}

/// A clone of `source` made the way CI checks a repository out: one commit deep
/// (`git clone --depth 1`), with the test identity.
pub(crate) fn shallow_clone(source: &TestRepo) -> TestRepo {
    let clone = TestRepo::new();
    std::fs::remove_dir_all(&clone.root).unwrap();
    let url = format!("file://{}", source.root.display());
    source.git(&[
        "clone",
        "-q",
        "--depth",
        "1",
        &url,
        clone.root.to_str().unwrap(),
    ]);
    clone
}

#[test]
fn in_a_shallow_clone_four_writers_merge_and_land() {
    let source = TestRepo::new();
    for k in 0..3 {
        source.write("history.txt", &format!("{k}\n"));
        source.commit_all(&format!("commit {k}"));
    }
    let repo = shallow_clone(&source);
    assert_eq!(
        repo.git(&["rev-parse", "--is-shallow-repository"]),
        "true\n"
    );
    let tasks = repo.tasks(&[
        r#"{"id":"w1","run":"echo 1 > one.txt"}"#,
        r#"{"id":"w2","run":"echo 2 > two.txt"}"#,
        r#"{"id":"w3","run":"echo 3 > three.txt && git add three.txt && git -c user.name=A -c user.email=a@example.com commit -qm three"}"#,
        r#"{"id":"w4","run":"echo 4 >> history.txt"}"#,
    ]);

    let out = repo.swarm(&["run", tasks.to_str().unwrap(), "-j", "4"]);

    assert_exit(&out, 0);
    for (file, text) in [
        ("one.txt", "1\n"),
        ("two.txt", "2\n"),
        ("three.txt", "3\n"),
        ("history.txt", "2\n4\n"),
    ] {
        assert_eq!(repo.read(file), text, "{file}");
    }
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    // Still shallow, and every commit the run made reachable from main.
    assert_eq!(
        repo.git(&["rev-parse", "--is-shallow-repository"]),
        "true\n"
    );
    repo.git(&["fsck", "--connectivity-only", "--no-dangling"]);
}

#[test]
fn in_a_sparse_checkout_the_left_out_files_are_no_change_and_a_landed_one_stays_out() {
    let repo = TestRepo::new();
    repo.write("in/a.txt", "a\n");
    repo.write("out/b.txt", "b\n");
    repo.commit_all("two directories");
    repo.git(&["sparse-checkout", "set", "in"]);
    assert!(!repo.root.join("out").exists());
    let tasks = repo.tasks(&[
        r#"{"id":"inside","run":"echo new > in/new.txt"}"#,
        r#"{"id":"outside","run":"echo changed > out/b.txt"}"#,
    ]);

    let out = repo.swarm(&["run", tasks.to_str().unwrap(), "-j", "2"]);

    assert_exit(&out, 0);
    assert!(
        stdout(&out).contains("Landed: `main` fast-forwarded"),
        "{}",
        stdout(&out)
    );
    assert_eq!(repo.read("in/new.txt"), "new\n");
    // The file the sparse checkout leaves out changed in the index, and stays out.
    assert!(!repo.root.join("out").exists());
    assert_eq!(repo.git(&["show", "main:out/b.txt"]), "changed\n");
    assert!(repo.git(&["ls-files", "-v", "out/b.txt"]).starts_with("S "));
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}
