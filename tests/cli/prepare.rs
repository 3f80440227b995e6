//! Checkouts that build: included files copied in and never committed, a setup command once
//! per new checkout, cache directories kept on reuse and seeded by cache key, and each running
//! attempt's own TMPDIR and block of ports.

use std::path::Path;

use crate::{TestRepo, assert_exit, outside, run_id, stderr, tasks_with_status};

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The transcript of a task's attempt in the newest run.
fn transcript(repo: &TestRepo, task: &str, attempt: u32) -> String {
    let path = repo
        .swarm_dir()
        .join("runs")
        .join(run_id(repo))
        .join("attempts")
        .join(format!("{task}.{attempt}.log"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn tree_paths(repo: &TestRepo, rev: &str) -> Vec<String> {
    repo.git(&["ls-tree", "-r", "--name-only", rev])
        .lines()
        .map(str::to_owned)
        .collect()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn included_files_reach_writers_and_readers_and_are_never_committed() {
    let repo = TestRepo::new();
    repo.write(".gitignore", ".env\n");
    repo.write(
        ".swarm.toml",
        "include = [\".env\", \"local.toml\", \"absent.txt\"]\n",
    );
    repo.commit_all("config");
    // Ignored, and not ignored: neither may reach a commit.
    repo.write(".env", "SECRET=1\n");
    repo.write("local.toml", "mine\n");
    let seen = outside(&repo, "seen");
    std::fs::create_dir_all(&seen).unwrap();
    let s = path_str(&seen);
    let writer = format!(
        r#"{{"id":"w","run":"test \"$(cat .env)\" = SECRET=1 && test \"$(cat local.toml)\" = mine && git status --porcelain > {s}/status && echo changed > local.toml && echo w > w.txt"}}"#
    );
    let reader = format!(r#"{{"id":"r","mode":"read","run":"cat .env local.toml > {s}/reader"}}"#);
    let tasks = repo.tasks(&[&writer, &reader]);

    let out = repo.swarm(&["run", path_str(&tasks), "-j", "2"]);

    assert_exit(&out, 0);
    assert_eq!(read(&seen.join("reader")), "SECRET=1\nmine\n");
    // The writer's own `git status` does not offer them for a commit either.
    assert_eq!(read(&seen.join("status")), "");
    let merged = tree_paths(&repo, "main");
    assert!(merged.contains(&"w.txt".to_owned()), "{merged:?}");
    assert!(!merged.contains(&".env".to_owned()), "{merged:?}");
    assert!(!merged.contains(&"local.toml".to_owned()), "{merged:?}");
    assert_eq!(repo.read("local.toml"), "mine\n");
    let log = transcript(&repo, "w", 1);
    assert!(
        log.contains("include: copied .env, local.toml; not in your checkout, skipped: absent.txt"),
        "{log}"
    );
}

#[test]
fn an_included_path_outside_the_repository_is_refused_naming_the_key() {
    let repo = TestRepo::new();
    repo.write(".swarm.toml", "include = [\"../secrets.env\"]\n");
    repo.commit_all("config");
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo w > w.txt"}"#]);

    let out = repo.swarm(&["run", path_str(&tasks)]);

    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains(".swarm.toml:1"), "{err}");
    assert!(
        err.contains("`include`: `../secrets.env` climbs out with `..`"),
        "{err}"
    );
}

#[test]
fn setup_runs_once_per_new_checkout_and_again_only_when_the_lockfile_changed() {
    let repo = TestRepo::new();
    let count = outside(&repo, "setups");
    repo.write("Cargo.lock", "v1\n");
    repo.write(
        ".swarm.toml",
        &format!(
            "setup = \"echo $SWARM_TASK_ID >> {} && echo set up\"\n",
            path_str(&count)
        ),
    );
    repo.commit_all("lockfile and setup");
    let tasks = repo.tasks(&[
        r#"{"id":"a","run":"echo a > a.txt"}"#,
        // Reuses a's checkout: the same lockfile, so no setup.
        r#"{"id":"b","run":"echo b > b.txt && echo v2 > Cargo.lock","deps":["a"]}"#,
        // Reuses it again, with the lockfile b changed: set up again.
        r#"{"id":"c","run":"echo c > c.txt","deps":["b"]}"#,
    ]);

    let out = repo.swarm(&["run", path_str(&tasks), "-j", "1", "--max-writers", "1"]);

    assert_exit(&out, 0);
    assert_eq!(read(&count), "a\nc\n");
    let a = transcript(&repo, "a", 1);
    assert!(a.contains("--- setup: echo $SWARM_TASK_ID"), "{a}");
    assert!(a.contains("set up\n"), "{a}");
    assert!(a.contains("--- end: succeeded after"), "{a}");
    let b = transcript(&repo, "b", 1);
    assert!(b.contains("setup: not run"), "{b}");
}

#[test]
fn a_failing_setup_stops_the_run_resumably_and_resume_goes_on() {
    let repo = TestRepo::new();
    let base = repo.git(&["rev-parse", "main"]);
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo w > w.txt"}"#]);

    let out = repo.swarm(&[
        "run",
        path_str(&tasks),
        "--setup",
        "echo no registry here >&2; exit 3",
    ]);

    assert_exit(&out, 75);
    let err = stderr(&out);
    assert!(
        err.contains("the setup command `echo no registry here >&2; exit 3` failed (exit code 3)"),
        "{err}"
    );
    assert!(err.contains("no registry here"), "{err}");
    assert_eq!(
        repo.git(&["rev-parse", "main"]),
        base,
        "something was merged"
    );
    assert!(!repo.root.join("w.txt").exists());
    let status = crate::status_json(&repo);
    assert!(tasks_with_status(&status, "failed").is_empty(), "{status}");
    let log = transcript(&repo, "w", 1);
    assert!(log.contains("no registry here"), "{log}");
    assert!(log.contains("the agent did not start"), "{log}");

    // Resumed with a setup that works, the attempt runs: the failed setup spent no retry.
    let out = repo.swarm(&["resume", "--setup", "true", "--retries", "0"]);

    assert_exit(&out, 0);
    assert_eq!(repo.read("w.txt"), "w\n");
}

#[test]
fn a_cache_directory_survives_reuse_and_seeds_new_checkouts_with_the_same_lockfile() {
    let repo = TestRepo::new();
    repo.write(".gitignore", "target/\n");
    repo.write("Cargo.lock", "v1\n");
    repo.write(".swarm.toml", "cache = [\"target\"]\n");
    repo.commit_all("lockfile and cache");
    // Your own build: a new checkout with the same lockfile starts from it.
    repo.write("target/yours", "built here\n");
    let seen = outside(&repo, "seen");
    std::fs::create_dir_all(&seen).unwrap();
    let s = path_str(&seen);
    let a = format!(
        r#"{{"id":"a","run":"cat target/yours > {s}/a && echo from-a > target/marker && echo a > a.txt"}}"#
    );
    // Reuses a's checkout, its target/ kept.
    let b =
        format!(r#"{{"id":"b","run":"cat target/marker > {s}/b && echo b > b.txt","deps":["a"]}}"#);
    // Fails once after building; its retry gets a new checkout seeded from the one it left.
    let c = format!(
        r#"{{"id":"c","run":"if test ! -e {s}/c-tried; then touch {s}/c-tried; echo from-c > target/c-marker; exit 1; fi; cat target/c-marker > {s}/c && echo c > c.txt","deps":["b"]}}"#
    );
    let tasks = repo.tasks(&[&a, &b, &c]);

    let out = repo.swarm(&[
        "run",
        path_str(&tasks),
        "-j",
        "1",
        "--max-writers",
        "1",
        "--retries",
        "1",
    ]);

    assert_exit(&out, 0);
    assert_eq!(read(&seen.join("a")), "built here\n");
    assert_eq!(read(&seen.join("b")), "from-a\n");
    assert_eq!(read(&seen.join("c")), "from-c\n");
    let merged = tree_paths(&repo, "main");
    assert!(
        merged.iter().all(|p| !p.starts_with("target/")),
        "{merged:?}"
    );
    assert!(transcript(&repo, "a", 1).contains("cache: seeded target from"));
    assert!(transcript(&repo, "b", 1).contains("cache: target kept from the reused checkout"));
    assert!(transcript(&repo, "c", 2).contains("cache: seeded target from"));
}

#[test]
fn a_writer_whose_start_has_another_lockfile_gets_no_seed() {
    let repo = TestRepo::new();
    repo.write(".gitignore", "target/\n");
    repo.write("Cargo.lock", "v1\n");
    repo.write(".swarm.toml", "cache = [\"target\"]\n");
    repo.commit_all("lockfile v1");
    let old = repo.git(&["rev-parse", "HEAD"]);
    repo.write("Cargo.lock", "v2\n");
    repo.commit_all("lockfile v2");
    // Built against v2: no fit for a checkout of v1.
    repo.write("target/yours", "built against v2\n");
    let tasks = repo.tasks(&[r#"{"id":"w","run":"test ! -e target && echo w > w.txt"}"#]);

    let out = repo.swarm(&[
        "run",
        path_str(&tasks),
        "--base",
        old.trim(),
        "--land",
        "none",
    ]);

    assert_exit(&out, 0);
    let log = transcript(&repo, "w", 1);
    assert!(log.contains("cache: no checkout with cache key"), "{log}");
}

#[test]
fn concurrent_attempts_get_their_own_tmpdir_and_ports_that_do_not_overlap() {
    let repo = TestRepo::new();
    let dir = outside(&repo, "seen");
    std::fs::create_dir_all(&dir).unwrap();
    let d = path_str(&dir);
    let lines: Vec<String> = (1..=4)
        .map(|n| {
            let fifo = dir.join(format!("go-{n}"));
            nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
            // Each says what it got, then waits until the test has seen all four running.
            format!(
                r#"{{"id":"r{n}","mode":"read","run":"test -d \"$TMPDIR\" && test \"$TMP\" = \"$TMPDIR\" && test \"$TEMP\" = \"$TMPDIR\" && echo \"$SWARM_PORT $SWARM_PORTS $TMPDIR\" > {d}/r{n}.tmp && mv {d}/r{n}.tmp {d}/r{n} && cat {d}/go-{n}"}}"#
            )
        })
        .collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let tasks = repo.tasks(&lines);

    let swarm = repo.spawn(&["run", path_str(&tasks), "-j", "4"]);
    // Opening a FIFO for writing waits for its reader: once all four are open, all four
    // attempts run at once.
    let gates: Vec<std::fs::File> = (1..=4)
        .map(|n| {
            std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join(format!("go-{n}")))
                .unwrap()
        })
        .collect();
    let seen: Vec<(u32, String, String)> = (1..=4)
        .map(|n| {
            let line = read(&dir.join(format!("r{n}")));
            let mut words = line.split_whitespace();
            let port: u32 = words.next().unwrap().parse().unwrap();
            let ports = words.next().unwrap().to_owned();
            let tmp = words.next().unwrap().to_owned();
            (port, ports, tmp)
        })
        .collect();
    for (_, _, tmp) in &seen {
        assert!(
            Path::new(tmp).is_dir(),
            "{tmp} is not there while its attempt runs"
        );
    }
    drop(gates);
    let out = swarm.wait_with_output().unwrap();

    assert_exit(&out, 0);
    let mut blocks = Vec::new();
    for (port, ports, tmp) in &seen {
        let (first, last) = ports.split_once('-').unwrap();
        let (first, last): (u32, u32) = (first.parse().unwrap(), last.parse().unwrap());
        assert_eq!(*port, first);
        assert_eq!(last - first + 1, 10, "{ports}");
        blocks.push((first, last));
        assert!(!Path::new(tmp).exists(), "{tmp} is left after its attempt");
    }
    for (i, a) in blocks.iter().enumerate() {
        for b in &blocks[i + 1..] {
            assert!(a.1 < b.0 || b.1 < a.0, "{a:?} and {b:?} overlap");
        }
    }
    let mut tmps: Vec<&String> = seen.iter().map(|(_, _, t)| t).collect();
    tmps.sort();
    tmps.dedup();
    assert_eq!(tmps.len(), 4, "{seen:?}");
}

#[test]
fn what_an_attempt_leaves_in_its_tmpdir_never_reaches_the_next() {
    let repo = TestRepo::new();
    let seen = outside(&repo, "seen");
    // One after another, in the same directory: the first leaves a file, the second must
    // start without it.
    let tasks = repo.tasks(&[
        r#"{"id":"a","mode":"read","run":"mkdir -p \"$TMPDIR/d\" && echo left > \"$TMPDIR/d/f\""}"#,
        &format!(
            r#"{{"id":"b","mode":"read","deps":["a"],"run":"ls -A \"$TMPDIR\" > {}"}}"#,
            path_str(&seen)
        ),
    ]);

    let out = repo.swarm(&["run", path_str(&tasks), "-j", "1"]);

    assert_exit(&out, 0);
    assert_eq!(
        read(&seen),
        "",
        "the second attempt found what the first left"
    );
    let run = repo.swarm_dir().join("runs").join(run_id(&repo));
    assert!(
        !run.join("tmp").exists(),
        "the temporary directories outlived the run"
    );
}

#[test]
fn ctrl_c_during_a_setup_stops_it_with_everything_it_started() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;

    let repo = TestRepo::new();
    let gate = crate::gate::Gate::new(&outside(&repo, "gates"), "setup");
    let pid = outside(&repo, "pid");
    // What the setup leaves running must go with it.
    let setup = format!(
        "sleep 1000 & echo $! > {}; {}",
        path_str(&pid),
        gate.shell_once()
    );
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo w > w.txt"}"#]);
    let mut swarm = repo.spawn(&["run", path_str(&tasks), "--setup", &setup]);
    gate.reached(&mut swarm);

    kill(Pid::from_raw(swarm.id() as i32), Signal::SIGINT).unwrap();
    let out = swarm.wait_with_output().unwrap();

    assert_exit(&out, 75);
    let left: i32 = read(&pid).trim().parse().unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{left}/stat")).unwrap_or_default();
    assert!(
        stat.rsplit_once(") ")
            .is_none_or(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
        "the setup's process outlived the interrupt: {stat}"
    );
    assert!(!repo.root.join("w.txt").exists());

    let out = repo.swarm(&["resume"]);

    assert_exit(&out, 0);
    assert_eq!(repo.read("w.txt"), "w\n");
}

#[test]
fn an_included_file_the_repository_tracks_keeps_its_committed_version() {
    let repo = TestRepo::new();
    repo.write("config/local.toml", "default\n");
    repo.write(".swarm.toml", "include = [\"config/local.toml\"]\n");
    repo.commit_all("tracked config");
    // Your local edit reaches the writer; neither it nor the writer's own edit is committed.
    repo.write("config/local.toml", "mine\n");
    let tasks = repo.tasks(&[
        r#"{"id":"w","run":"test \"$(cat config/local.toml)\" = mine && git add config/local.toml && echo also >> config/local.toml && echo w > w.txt"}"#,
    ]);

    let out = repo.swarm(&["run", path_str(&tasks), "--land", "none"]);

    assert_exit(&out, 0);
    let branch = format!("swarm/{}", run_id(&repo));
    assert_eq!(
        repo.git(&["show", &format!("{branch}:config/local.toml")]),
        "default\n"
    );
    assert_eq!(repo.git(&["show", &format!("{branch}:w.txt")]), "w\n");
    assert_eq!(repo.read("config/local.toml"), "mine\n");
}

#[test]
fn a_restored_snapshot_gets_the_included_files_again() {
    let repo = TestRepo::new();
    repo.write("config/local.toml", "default\n");
    repo.write(".swarm.toml", "include = [\"config/local.toml\"]\n");
    repo.commit_all("tracked config");
    repo.write("config/local.toml", "mine\n");
    let seen = outside(&repo, "seen");
    let flag = outside(&repo, "tried");
    // The first attempt changes the snapshot (and fails, the snapshot restored); the retry
    // reads the included file in the same snapshot.
    let reader = format!(
        r#"{{"id":"r","mode":"read","run":"if test -e {f}; then cat config/local.toml > {s}; else touch {f}; echo x >> README.md; fi"}}"#,
        f = path_str(&flag),
        s = path_str(&seen)
    );
    let tasks = repo.tasks(&[&reader]);

    let out = repo.swarm(&["run", path_str(&tasks), "--retries", "1"]);

    assert_exit(&out, 0);
    assert_eq!(read(&seen), "mine\n");
}

#[test]
fn what_setup_makes_or_changes_is_never_a_writers_result_nor_lands() {
    let repo = TestRepo::new();
    // Each checkout's setup writes a file of its own content and changes a tracked one: two
    // writers taking them would conflict on files no task touched.
    repo.write(
        ".swarm.toml",
        "setup = \"echo $SWARM_TASK_ID > setup-ran.txt && echo built >> README.md\"\n",
    );
    repo.commit_all("setup");
    let tasks = repo.tasks(&[
        r#"{"id":"w1","run":"echo one > one.txt"}"#,
        // Its own commit takes everything, setup's files with it.
        r#"{"id":"w2","run":"echo two > two.txt && git add -A && git -c user.name=A -c user.email=a@example.com commit -qm 'all of it'"}"#,
        // It changes setup's file after the setup: that change is its work.
        r#"{"id":"w3","run":"echo three > three.txt && echo mine > setup-ran.txt"}"#,
    ]);

    let out = repo.swarm(&["run", path_str(&tasks), "-j", "3"]);

    assert_exit(&out, 0);
    for (task, own) in [("w1", "one.txt"), ("w2", "two.txt")] {
        let shown: serde_json::Value =
            serde_json::from_str(&crate::stdout(&repo.swarm(&["show", task, "--json"]))).unwrap();
        let commit = shown["commit"].as_str().unwrap();
        let paths = tree_paths(&repo, commit);
        assert!(paths.contains(&own.to_owned()), "{task}: {paths:?}");
        assert!(
            !paths.contains(&"setup-ran.txt".to_owned()),
            "{task}: {paths:?}"
        );
        let readme = repo.git(&["show", &format!("{commit}:README.md")]);
        assert_eq!(readme, "# demo\n", "{task}");
    }
    // Nothing of the setup landed; w3's own change to its file did.
    assert_eq!(repo.read("README.md"), "# demo\n");
    assert_eq!(repo.read("setup-ran.txt"), "mine\n");
    for own in ["one.txt", "two.txt", "three.txt"] {
        assert!(tree_paths(&repo, "main").contains(&own.to_owned()), "{own}");
    }
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

#[test]
fn an_included_file_an_agent_commits_itself_is_left_out_of_its_result() {
    let repo = TestRepo::new();
    repo.write(".gitignore", "keyfile\n");
    repo.write(".swarm.toml", "include = [\"keyfile\"]\n");
    repo.commit_all("config");
    repo.write("keyfile", "private\n");
    let tasks = repo.tasks(&[
        r#"{"id":"w","run":"echo w > w.txt && git add -f keyfile w.txt && git -c user.name=A -c user.email=a@example.com commit -qm 'took the key'"}"#,
    ]);

    let out = repo.swarm(&["run", path_str(&tasks)]);

    assert_exit(&out, 0);
    let merged = tree_paths(&repo, "main");
    assert!(merged.contains(&"w.txt".to_owned()), "{merged:?}");
    assert!(!merged.contains(&"keyfile".to_owned()), "{merged:?}");
    assert_eq!(repo.read("keyfile"), "private\n");
}

#[test]
fn an_included_link_out_of_the_repository_or_the_whole_repository_is_refused_before_anything_runs()
{
    let repo = TestRepo::new();
    let secrets = outside(&repo, "ssh");
    std::fs::create_dir_all(&secrets).unwrap();
    std::fs::write(secrets.join("id_ed25519"), "PRIVATE KEY\n").unwrap();
    std::os::unix::fs::symlink(&secrets, repo.root.join("secrets")).unwrap();
    std::os::unix::fs::symlink(secrets.join("id_ed25519"), repo.root.join("keyfile")).unwrap();
    std::fs::create_dir_all(repo.root.join("conf")).unwrap();
    std::os::unix::fs::symlink("../../ssh/id_ed25519", repo.root.join("conf/key")).unwrap();
    repo.write(".gitignore", "secrets\nkeyfile\nconf/\n");
    repo.commit_all("ignore them");
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo w > w.txt"}"#]);
    for (include, named) in [
        ("secrets", "`secrets`: secrets is a link to "),
        ("keyfile", "`keyfile`: keyfile is a link to "),
        (
            "conf",
            "`conf`: conf/key is a link to ../../ssh/id_ed25519, which is outside",
        ),
    ] {
        let out = repo
            .swarm_cmd()
            .env("SWARM_INCLUDE", include)
            .args(["run", path_str(&tasks)])
            .output()
            .unwrap();
        assert_exit(&out, 2);
        assert!(stderr(&out).contains(named), "{include}: {}", stderr(&out));
        assert!(crate::stdout(&repo.swarm(&["runs", "--json"])).trim() == "[]");
    }
    repo.write(".swarm.toml", "include = [\".\"]\n");
    repo.commit_all("the whole repository");
    let out = repo.swarm(&["run", path_str(&tasks)]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains(".swarm.toml:1"), "{err}");
    assert!(err.contains("`.` is the whole repository"), "{err}");
}

#[test]
fn included_links_inside_the_repository_are_copied_as_links_to_the_checkouts_own_files() {
    let repo = TestRepo::new();
    repo.write(".gitignore", "local/\n");
    repo.write(".swarm.toml", "include = [\"local\"]\n");
    repo.commit_all("config");
    repo.write("local/real.env", "A=1\n");
    std::os::unix::fs::symlink("real.env", repo.root.join("local/rel.env")).unwrap();
    std::os::unix::fs::symlink(
        repo.root.join("local/real.env"),
        repo.root.join("local/abs.env"),
    )
    .unwrap();
    let seen = outside(&repo, "seen");
    std::fs::create_dir_all(&seen).unwrap();
    let s = path_str(&seen);
    let writer = format!(
        r#"{{"id":"w","run":"readlink local/rel.env > {s}/rel && readlink local/abs.env > {s}/abs && cat local/abs.env > {s}/content && echo B=2 > local/abs.env && echo w > w.txt"}}"#
    );
    let tasks = repo.tasks(&[&writer]);

    let out = repo.swarm(&["run", path_str(&tasks)]);

    assert_exit(&out, 0);
    assert_eq!(read(&seen.join("rel")), "real.env\n");
    // The absolute link leads to the checkout's own copy, not to your file.
    assert_eq!(read(&seen.join("abs")), "../local/real.env\n");
    assert_eq!(read(&seen.join("content")), "A=1\n");
    assert_eq!(repo.read("local/real.env"), "A=1\n");
    assert!(
        !tree_paths(&repo, "main")
            .iter()
            .any(|p| p.starts_with("local/"))
    );
}

#[test]
fn a_link_an_agent_plants_in_a_cache_is_removed_before_the_next_task_builds() {
    let repo = TestRepo::new();
    let elsewhere = outside(&repo, "elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    repo.write(".gitignore", "target/\n");
    repo.write(".swarm.toml", "cache = [\"target\"]\n");
    repo.commit_all("cache");
    let e = path_str(&elsewhere);
    let tasks = repo.tasks(&[
        &format!(r#"{{"id":"a","run":"mkdir -p target && ln -s {e} target/outlink && echo a > a.txt"}}"#),
        // Reuse a's checkout, its cache kept: a build writing into target/outlink would
        // write outside.
        r#"{"id":"b","run":"mkdir -p target/outlink && echo built > target/outlink/x && echo b > b.txt","deps":["a"]}"#,
        r#"{"id":"c","run":"mkdir -p target/outlink && echo built > target/outlink/y && echo c > c.txt","deps":["b"]}"#,
    ]);

    let out = repo.swarm(&["run", path_str(&tasks), "-j", "1", "--max-writers", "1"]);

    assert_exit(&out, 0);
    assert_eq!(
        std::fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "written through the link"
    );
    let b = transcript(&repo, "b", 1);
    assert!(
        b.contains("cache: removed links that lead out of the checkout: target/outlink"),
        "{b}"
    );
}
