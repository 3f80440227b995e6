use std::path::{Path, PathBuf};
use std::process::Command;

use super::walk::{Reach, reads_from};
use super::{Confiner, InForce, Own, Places, Setting, as_path, kernel, refused_paths};

#[test]
fn the_path_a_refusal_names_is_the_one_next_to_the_words() {
    let cwd = Path::new("/work/checkout");
    let cases: [(&str, &[&str]); 8] = [
        (
            "cat: /home/u/.ssh/id_ed25519: Permission denied",
            &["/home/u/.ssh/id_ed25519"],
        ),
        (
            "/bin/sh: 1: cannot create /home/u/.bashrc: Permission denied",
            &["/home/u/.bashrc"],
        ),
        (
            "Error: EACCES: permission denied, open '/home/u/repo/x.txt'",
            &["/home/u/repo/x.txt"],
        ),
        (
            "PermissionError: [Errno 13] Permission denied: '/etc/passwd-'",
            &["/etc/passwd-"],
        ),
        ("sh: ../user/evil: Permission denied", &["/work/user/evil"]),
        (
            r#"{"result":"a.txt: Permission denied\n then /srv/b.txt: Permission denied"}"#,
            &["/work/checkout/a.txt", "/srv/b.txt"],
        ),
        ("curl: https://example.com/x: Permission denied", &[]),
        ("everything went well in /home/u", &[]),
    ];
    for (line, want) in cases {
        let got = refused_paths(line, cwd);
        let want: Vec<PathBuf> = want.iter().map(PathBuf::from).collect();
        assert_eq!(got, want, "{line}");
    }
}

#[test]
fn a_path_word_is_read_from_the_checkout_and_cleaned() {
    let cwd = Path::new("/a/b");
    assert_eq!(as_path("../c/./d", cwd), Some(PathBuf::from("/a/c/d")));
    assert_eq!(as_path("/x/../y", cwd), Some(PathBuf::from("/y")));
    assert_eq!(as_path("word", cwd), None);
    assert_eq!(as_path("/", cwd), None);
    assert_eq!(as_path("http://h/p", cwd), None);
}

#[test]
fn a_denied_path_is_left_out_by_allowing_its_siblings_and_listing_its_ancestors() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    for dir in [
        "home/.ssh",
        "home/.config/gh",
        "home/.config/nvim",
        "home/code",
        "etc",
    ] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    std::fs::write(root.join("home/.netrc"), "machine x").unwrap();
    std::fs::write(root.join("home/notes.txt"), "n").unwrap();
    std::os::unix::fs::symlink(root.join("home/.ssh"), root.join("home/keys")).unwrap();
    let denied = [
        root.join("home/.ssh"),
        root.join("home/.config/gh"),
        root.join("home/.netrc"),
    ];
    let got = reads_from(&root, &denied);
    let rel: Vec<(String, Reach)> = got
        .iter()
        .map(|(p, r)| (p.strip_prefix(&root).unwrap().display().to_string(), *r))
        .collect();
    let want: Vec<(String, Reach)> = [
        ("", Reach::List),
        ("etc", Reach::Read),
        ("home", Reach::List),
        ("home/.config", Reach::List),
        ("home/.config/nvim", Reach::Read),
        ("home/code", Reach::Read),
        ("home/notes.txt", Reach::Read),
    ]
    .iter()
    .map(|(p, r)| ((*p).to_owned(), *r))
    .collect();
    // The link to a denied directory is not followed to allow it.
    assert_eq!(rel, want);
}

/// A checkout, a secret, the user's git directory and another task's checkout, in a temporary
/// directory; and the confiner of a run whose rules deny the secret.
struct Machine {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    confiner: std::sync::Arc<Confiner>,
    places: Places,
}

impl Machine {
    /// A test that comes here needs the kernel to confine (where it cannot the test is
    /// ignored, but under CI: build.rs), so a kernel that cannot fails it.
    fn new() -> Self {
        if let Err(why) = kernel() {
            panic!("the kernel cannot confine: {why}");
        }
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        for dir in [
            "secret",
            "user/.git/objects",
            "user/.git/swarm/runs/r/tmp/0",
            "checkouts/run/mine",
            "checkouts/run/theirs",
        ] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        for (file, text) in [
            ("secret/key", "KEY"),
            ("user/.git/config", "[remote]"),
            ("user/.git/objects/blob", "object"),
            ("user/README.md", "readme"),
            ("checkouts/run/theirs/work.txt", "theirs"),
        ] {
            std::fs::write(root.join(file), text).unwrap();
        }
        let confiner = Confiner::new(Setting {
            read_deny: vec![root.join("secret")],
            ..Setting::default()
        });
        assert!(matches!(confiner.in_force, InForce::Landlock(_)));
        let places = Places {
            git_dir: root.join("user/.git"),
            checkouts: root.join("checkouts"),
        };
        Self {
            _tmp: tmp,
            root,
            confiner,
            places,
        }
    }

    /// `script` run with `sh -c` in the checkout, confined as a writer (or a reader); its exit
    /// code and what it printed.
    fn run(&self, writer: bool, script: &str) -> (i32, String) {
        let own = Own {
            checkout: self.root.join("checkouts/run/mine"),
            writes_checkout: writer,
            tmp: Some(self.root.join("user/.git/swarm/runs/r/tmp/0")),
            ..Own::default()
        };
        let confinement = self
            .confiner
            .attempt(&self.places, &own)
            .unwrap()
            .expect("confined");
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(script)
            .current_dir(&own.checkout)
            .env("ROOT", &self.root)
            .env("TMPDIR", own.tmp.as_ref().unwrap());
        cmd.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let child = super::spawn(cmd, Some(&confinement)).unwrap();
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.code().unwrap_or(-1), text)
    }
}

#[test]
#[cfg_attr(
    not(has_landlock),
    ignore = "needs Landlock: this kernel does not confine (Linux 5.13 or later, with landlock in its lsm= list)"
)]
fn a_confined_process_writes_only_its_checkout_and_tmpdir_and_reads_no_denied_path() {
    let m = Machine::new();
    let allowed = [
        "echo w > mine.txt",
        "echo t > \"$TMPDIR/t\"",
        "echo n > /dev/null",
        "cat \"$ROOT/user/README.md\"",
        "cat \"$ROOT/user/.git/objects/blob\"",
        "ls \"$ROOT/user\"",
    ];
    for script in allowed {
        let (code, text) = m.run(true, script);
        assert_eq!(code, 0, "{script}: {text}");
    }
    let refused = [
        "echo x > \"$ROOT/user/escaped.txt\"",
        "rm \"$ROOT/user/README.md\"",
        "echo x > \"$ROOT/checkouts/run/theirs/x\"",
        "cat \"$ROOT/checkouts/run/theirs/work.txt\"",
        "cat \"$ROOT/secret/key\"",
        "cat \"$ROOT/user/.git/config\"",
        "ln -s \"$ROOT/user\" link && echo x > link/through-link.txt",
        "mkdir \"$ROOT/newdir\"",
    ];
    for script in refused {
        let (code, text) = m.run(true, script);
        assert_ne!(code, 0, "{script}: {text}");
        assert!(text.contains("Permission denied"), "{script}: {text}");
    }
    for gone in [
        "user/escaped.txt",
        "checkouts/run/theirs/x",
        "user/through-link.txt",
        "newdir",
    ] {
        assert!(!m.root.join(gone).exists(), "{gone}");
    }
    assert_eq!(
        std::fs::read_to_string(m.root.join("user/README.md")).unwrap(),
        "readme"
    );
    // What each refused process left behind, in the checkout, is there.
    assert_eq!(
        std::fs::read_to_string(m.root.join("checkouts/run/mine/mine.txt")).unwrap(),
        "w\n"
    );
}

#[test]
#[cfg_attr(
    not(has_landlock),
    ignore = "needs Landlock: this kernel does not confine (Linux 5.13 or later, with landlock in its lsm= list)"
)]
fn a_confined_reader_may_not_write_its_snapshot() {
    let m = Machine::new();
    let (code, text) = m.run(false, "echo x > sneaky.txt");
    assert_ne!(code, 0, "{text}");
    assert!(text.contains("Permission denied"), "{text}");
    assert!(!m.root.join("checkouts/run/mine/sneaky.txt").exists());
    let (code, text) = m.run(false, "echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"");
    assert_eq!((code, text.as_str()), (0, "t\n"));
}

#[test]
#[cfg_attr(
    not(has_landlock),
    ignore = "needs Landlock: this kernel does not confine (Linux 5.13 or later, with landlock in its lsm= list)"
)]
fn the_refusals_of_a_confined_attempt_name_the_paths_and_why() {
    let m = Machine::new();
    let own = Own {
        checkout: m.root.join("checkouts/run/mine"),
        writes_checkout: true,
        ..Own::default()
    };
    let c = m.confiner.attempt(&m.places, &own).unwrap().unwrap();
    let root = m.root.display();
    let text = format!(
        "cat: {root}/secret/key: Permission denied\nsh: cannot create {root}/user/x: Permission denied\nsh: cannot create {root}/checkouts/run/mine/y: Permission denied\n"
    );
    assert_eq!(
        c.refusals(&text, &own.checkout),
        [
            format!(
                "{root}/secret/key: no task may read it (a secret store, your git directory or another task's checkout; see read-allow)"
            ),
            format!(
                "{root}/user/x: outside what this task may write (its TMPDIR, and a writer's checkout; see write-allow)"
            ),
        ]
    );
}
