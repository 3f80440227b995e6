//! Tests of the parent module.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use super::{Access, ToolResult, Tools};

/// A git repository `work` (the task's directory) next to an `outside` directory.
fn setup(access: Access, programs: &[&str]) -> (tempfile::TempDir, Tools) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("work");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir(tmp.path().join("outside")).unwrap();
    crate::git::init(&root).unwrap();
    let programs = programs.iter().map(|p| (*p).to_owned()).collect();
    let tools = Tools::new(&root, access, programs, Duration::from_millis(300)).unwrap();
    (tmp, tools)
}

fn read(t: &Tools, path: &str) -> ToolResult {
    t.call("read_file", &json!({"path": path}).to_string())
}

fn lines(t: &Tools, path: &str, start: usize, end: usize) -> String {
    let args = json!({"path": path, "start_line": start, "end_line": end});
    t.call("read_file", &args.to_string()).text
}

fn put(t: &Tools, path: &str, content: &str) -> ToolResult {
    let args = json!({"path": path, "content": content});
    t.call("write_file", &args.to_string())
}

fn edit(t: &Tools, path: &str, old: &str, new: &str) -> ToolResult {
    let args = json!({"path": path, "old": old, "new": new});
    t.call("edit_file", &args.to_string())
}

fn search(t: &Tools, pattern: &str) -> String {
    let args = json!({"pattern": pattern});
    t.call("search", &args.to_string()).text
}

fn run(t: &Tools, program: &str, args: &[&str]) -> ToolResult {
    let args = json!({"program": program, "args": args});
    t.call("run_command", &args.to_string())
}

fn starts(text: &str, prefix: &str) {
    assert!(
        text.starts_with(prefix),
        "{text:?} should start with {prefix:?}"
    );
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn assert_refused(r: &ToolResult, path: &str) {
    starts(&r.text, &format!("error: refused: {path} "));
    assert!(r.refused && !r.wrote);
}

#[test]
fn paths_out_of_bounds_are_refused_and_nothing_is_created_outside() {
    let (tmp, tools) = setup(Access::Write, &[]);
    let outside = tmp.path().join("outside");
    symlink(&outside, tmp.path().join("work/out")).unwrap();
    let absolute = outside.join("x").to_string_lossy().into_owned();
    let paths = [
        "../x",
        &absolute,
        "a/../../x",
        ".git/hooks/pre-commit",
        "sub/.git/x",
    ];
    for path in paths
        .into_iter()
        .chain([".GIT/config", "out/x", "out/new/x"])
    {
        assert_refused(&put(&tools, path, "bad"), path);
        assert_refused(&read(&tools, path), path);
        assert_refused(&edit(&tools, path, "a", "b"), path);
    }
    assert!(tools.call("list_files", r#"{"path": "out"}"#).refused);
    assert!(
        tools
            .call("search", r#"{"pattern": "x", "path": ".."}"#)
            .refused
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert!(!tmp.path().join("x").exists());
    assert!(!tmp.path().join("work/.git/hooks/pre-commit").exists());
    assert!(!tmp.path().join("work/sub/.git").exists());
    assert!(!tmp.path().join("work/a").exists());
}

#[test]
fn symlinks_out_and_symlinked_files_are_refused() {
    let (tmp, tools) = setup(Access::Write, &[]);
    let root = tmp.path().join("work");
    let secret = tmp.path().join("outside/secret.txt");
    write(&secret, "the secret\n");
    symlink(&secret, root.join("leak")).unwrap();
    symlink(root.join(".git/config"), root.join("config")).unwrap();
    write(&root.join("real.txt"), "real\n");
    symlink("real.txt", root.join("alias")).unwrap();

    assert_refused(&read(&tools, "leak"), "leak");
    assert_refused(&read(&tools, "config"), "config");
    assert!(search(&tools, "secret|repositoryformat").starts_with("no matches"));
    assert_refused(&put(&tools, "leak", "x"), "leak");
    assert_refused(&put(&tools, "alias", "x"), "alias");
    assert_refused(&edit(&tools, "alias", "real", "x"), "alias");
    assert_eq!(
        std::fs::read_to_string(root.join("real.txt")).unwrap(),
        "real\n"
    );
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "the secret\n");
    // Reading through a symbolic link that stays inside is fine.
    assert_eq!(read(&tools, "alias").text, "1: real\n");
}

#[test]
fn read_file_numbers_lines_and_honours_ranges() {
    let (tmp, tools) = setup(Access::Read, &[]);
    write(
        &tmp.path().join("work/sub/f.txt"),
        "one\ntwo\nthree\nfour\n",
    );
    assert_eq!(
        read(&tools, "sub/f.txt").text,
        "1: one\n2: two\n3: three\n4: four\n"
    );
    assert_eq!(lines(&tools, "./sub/f.txt", 2, 3), "2: two\n3: three\n");
    assert_eq!(lines(&tools, "sub/f.txt", 4, 99), "4: four\n");
    assert!(lines(&tools, "sub/f.txt", 9, 10).starts_with("error: "));
    let missing = read(&tools, "nope.txt").text;
    assert_eq!(missing, "error: no such file or directory: nope.txt");
    write(&tmp.path().join("work/bin"), "a\0b");
    assert_eq!(read(&tools, "bin").text, "error: bin is a binary file");
}

#[test]
fn search_and_list_files_honour_gitignore_and_leave_out_git() {
    let (tmp, tools) = setup(Access::Read, &[]);
    let root = tmp.path().join("work");
    write(&root.join(".gitignore"), "ignored.txt\n");
    write(&root.join("ignored.txt"), "needle here\n");
    write(&root.join("sub/kept.txt"), "hay\nneedle there\n");
    assert_eq!(search(&tools, "need(le)"), "sub/kept.txt:2: needle there\n");
    let listed = tools.call("list_files", "{}").text;
    assert_eq!(listed, ".gitignore\nsub/kept.txt");
    let sub = tools.call("list_files", r#"{"path": "sub"}"#).text;
    assert_eq!(sub, "sub/kept.txt");
    assert!(search(&tools, "(unclosed").starts_with("error: invalid regex"));
}

#[test]
fn list_files_walks_a_directory_that_is_not_a_repository() {
    let tmp = tempfile::tempdir().unwrap();
    write(&tmp.path().join("a/b.txt"), "b");
    write(&tmp.path().join(".git/config"), "c");
    let tools = Tools::new(tmp.path(), Access::Read, vec![], Duration::from_secs(1)).unwrap();
    assert_eq!(tools.call("list_files", "").text, "a/b.txt");
}

#[test]
fn edit_file_needs_exactly_one_match_and_write_file_makes_directories() {
    let (tmp, tools) = setup(Access::Write, &[]);
    let file = tmp.path().join("work/f.rs");
    write(&file, "a = 1;\na = 1;\nb = 2;\n");
    let none = edit(&tools, "f.rs", "c", "d");
    starts(&none.text, "error: `old` was not found");
    let two = edit(&tools, "f.rs", "a = 1", "x");
    starts(&two.text, "error: `old` occurs 2 times");
    assert!(!none.wrote && !two.wrote);
    let one = edit(&tools, "f.rs", "b = 2", "b = 3");
    assert_eq!((one.text.as_str(), one.wrote), ("edited f.rs", true));
    let text = |path: &Path| std::fs::read_to_string(path).unwrap();
    assert_eq!(text(&file), "a = 1;\na = 1;\nb = 3;\n");
    assert!(put(&tools, "n/e/w.txt", "hi").wrote);
    assert_eq!(text(&tmp.path().join("work/n/e/w.txt")), "hi");
}

#[test]
fn a_reader_cannot_write_and_bad_calls_are_errors() {
    let (tmp, tools) = setup(Access::Read, &[]);
    let w = put(&tools, "f", "x");
    assert!(w.refused);
    assert_eq!(w.text, "error: this task is read-only");
    assert!(!tmp.path().join("work/f").exists());
    let names = tools.definitions().to_string();
    assert!(names.contains("read_file") && !names.contains("write_file"));
    assert!(!names.contains("run_command"));
    starts(
        &tools.call("read_file", "{not json").text,
        "error: bad arguments",
    );
    starts(
        &tools.call("read_file", "{}").text,
        "error: missing argument",
    );
    starts(&run(&tools, "echo", &[]).text, "error: unknown tool");
}

#[test]
fn run_command_runs_allowed_programs_only_and_kills_at_the_timeout() {
    let (_tmp, tools) = setup(Access::Write, &["echo", "sleep"]);
    assert!(tools.definitions().to_string().contains("echo, sleep"));
    for program in ["ls", "/bin/echo", "./echo"] {
        let r = run(&tools, program, &[]);
        assert!(r.refused && !r.wrote, "{}", r.text);
    }
    let r = run(&tools, "echo", &["hi", "there"]);
    starts(&r.text, "exit status: 0\n--- stdout ---\nhi there\n");
    assert!(r.wrote && !r.refused);
    let started = Instant::now();
    let r = run(&tools, "sleep", &["5"]);
    starts(&r.text, "error: sleep timed out");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[test]
fn run_command_is_killed_when_the_attempt_stops() {
    let (tmp, _) = setup(Access::Write, &[]);
    let work = tmp.path().join("work");
    // The attempt "stops" the moment the command has started.
    let started = work.join("started");
    let long = Duration::from_secs(600);
    let tools = Tools::new(&work, Access::Write, vec!["sh".into()], long)
        .unwrap()
        .stopped_by(move || started.exists());
    // Nothing but the stop ends the command before its ten minutes.
    let out = run(
        &tools,
        "sh",
        &["-c", "touch started; sleep 30; touch finished"],
    );
    assert!(
        out.text.contains("sh was stopped with the attempt"),
        "{}",
        out.text
    );
    assert!(!work.join("finished").exists());
}
