//! Generated files: the shell completions in `completions/` and the man pages in `man/` are
//! produced from the clap definition (`swarm::cli::command()`). The test fails when a committed
//! file differs from what the definition produces; with `SWARM_UPDATE_GENERATED=1` it rewrites
//! them instead.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use clap_complete::Shell;

use crate::TestRepo;

const UPDATE_VAR: &str = "SWARM_UPDATE_GENERATED";
const FIX: &str = "SWARM_UPDATE_GENERATED=1 cargo test --locked --test cli generated";

/// The directories whose every file is generated.
const DIRS: &[&str] = &["completions", "man"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every generated file, by path relative to the repository root.
fn generate() -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for (shell, name) in [
        (Shell::Bash, "swarm.bash"),
        (Shell::Zsh, "_swarm"),
        (Shell::Fish, "swarm.fish"),
    ] {
        files.insert(format!("completions/{name}"), completion(shell));
    }
    // The `help` subcommand is clap's, not swarm's: no page for it (as `clap_mangen::generate_to`).
    let mut cmd = swarm::cli::command().disable_help_subcommand(true);
    cmd.build();
    let exit_codes = exit_codes(&cmd);
    man_pages(&cmd, &exit_codes, &mut files);
    files
}

/// What `swarm completions SHELL` prints.
fn completion(shell: Shell) -> Vec<u8> {
    let mut cmd = swarm::cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "swarm", &mut buf);
    buf
}

/// One page per command, `man/swarm.1`, `man/swarm-run.1`, … (subcommands get their display
/// names, `swarm-run`, from `build`).
fn man_pages(
    cmd: &clap::Command,
    exit_codes: &[(String, String)],
    files: &mut BTreeMap<String, Vec<u8>>,
) {
    let man = clap_mangen::Man::new(cmd.clone());
    files.insert(
        format!("man/{}", man.get_filename()),
        man_page(&man, cmd, exit_codes),
    );
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        man_pages(sub, exit_codes, files);
    }
}

/// A page as `Man::render` makes it, except that the free-form text after the options (the
/// exit codes of `after_help`, which `Man::render` would fold into one paragraph under "EXTRA")
/// becomes a proper "EXIT STATUS" section, on every page, since every command exits this way.
fn man_page(
    man: &clap_mangen::Man,
    cmd: &clap::Command,
    exit_codes: &[(String, String)],
) -> Vec<u8> {
    let mut out = Vec::new();
    man.render_title(&mut out).unwrap();
    man.render_name_section(&mut out).unwrap();
    man.render_synopsis_section(&mut out).unwrap();
    man.render_description_section(&mut out).unwrap();
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out).unwrap();
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut out).unwrap();
    }
    let mut section = String::from(".SH \"EXIT STATUS\"\n");
    for (code, meaning) in exit_codes {
        writeln!(section, ".TP\n\\fB{code}\\fR\n{}", roff_text(meaning)).unwrap();
    }
    out.extend_from_slice(section.as_bytes());
    if cmd.get_version().is_some() {
        man.render_version_section(&mut out).unwrap();
    }
    out
}

/// Text for a roff line: backslashes escaped, and a leading `.` or `'` kept from being read as a
/// request.
fn roff_text(s: &str) -> String {
    let s = s.replace('\\', "\\e");
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}

/// The exit codes listed in the top command's `after_help` ("Exit codes:" then `  N   meaning`).
fn exit_codes(cmd: &clap::Command) -> Vec<(String, String)> {
    let text = cmd
        .get_after_help()
        .expect("the top command's after_help lists the exit codes")
        .to_string();
    let mut lines = text
        .lines()
        .skip_while(|l| !l.starts_with("Exit codes:"))
        .skip(1);
    let mut codes = Vec::new();
    for line in lines.by_ref() {
        let line = line.trim();
        let Some((code, meaning)) = line.split_once(char::is_whitespace) else {
            break;
        };
        if code.parse::<u8>().is_err() {
            break;
        }
        codes.push((code.to_owned(), meaning.trim().to_owned()));
    }
    codes
}

/// Files in the generated directories, relative to the repository root.
fn committed() -> Vec<String> {
    let mut out = Vec::new();
    for dir in DIRS {
        let Ok(entries) = std::fs::read_dir(root().join(dir)) else {
            continue;
        };
        for e in entries {
            let e = e.unwrap();
            if e.file_type().unwrap().is_file() {
                out.push(format!("{dir}/{}", e.file_name().to_string_lossy()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn completions_and_man_pages_match_the_clap_definition() {
    let files = generate();
    let update = std::env::var_os(UPDATE_VAR).is_some_and(|v| !v.is_empty() && v != "0");
    if update {
        for dir in DIRS {
            std::fs::create_dir_all(root().join(dir)).unwrap();
        }
        for stale in committed().iter().filter(|p| !files.contains_key(*p)) {
            std::fs::remove_file(root().join(stale)).unwrap();
        }
        for (path, bytes) in &files {
            let full = root().join(path);
            if std::fs::read(&full).ok().as_ref() != Some(bytes) {
                std::fs::write(&full, bytes).unwrap();
            }
        }
        return;
    }
    let mut drift = Vec::new();
    for (path, bytes) in &files {
        match std::fs::read(root().join(path)) {
            Ok(old) if old == *bytes => {}
            Ok(old) => drift.push(format!(
                "{path} differs from the clap definition{}",
                first_difference(&old, bytes)
            )),
            Err(_) => drift.push(format!("{path} is missing")),
        }
    }
    for stale in committed().iter().filter(|p| !files.contains_key(*p)) {
        drift.push(format!(
            "{stale} is not generated by the clap definition (a removed command?)"
        ));
    }
    assert!(
        drift.is_empty(),
        "generated files are out of date:\n  {}\nto fix: run `{FIX}` and commit completions/ and man/",
        drift.join("\n  ")
    );
}

/// `: line N: committed "…", generated "…"` for the first line that differs.
fn first_difference(old: &[u8], new: &[u8]) -> String {
    let old = String::from_utf8_lossy(old);
    let new = String::from_utf8_lossy(new);
    let mut a = old.lines();
    let mut b = new.lines();
    for n in 1.. {
        match (a.next(), b.next()) {
            (Some(x), Some(y)) if x == y => {}
            (None, None) => break,
            (x, y) => {
                return format!(
                    ": line {n}: committed {:?}, generated {:?}",
                    x.unwrap_or("<end>"),
                    y.unwrap_or("<end>")
                );
            }
        }
    }
    String::new()
}

#[test]
fn the_completions_subcommand_prints_the_committed_scripts() {
    let repo = TestRepo::new();
    for (shell, path) in [
        ("bash", "completions/swarm.bash"),
        ("zsh", "completions/_swarm"),
        ("fish", "completions/swarm.fish"),
    ] {
        let out = repo.swarm(&["completions", shell]);
        crate::assert_exit(&out, 0);
        assert!(
            out.stdout == completion(shell.parse().unwrap()),
            "`swarm completions {shell}` differs from what the clap definition generates for {path}"
        );
    }
}

#[test]
fn the_man_page_lists_every_exit_code() {
    let files = generate();
    let page = String::from_utf8(files["man/swarm.1"].clone()).unwrap();
    assert!(page.contains(".SH \"EXIT STATUS\""), "{page}");
    for code in ["0", "1", "2", "3", "4", "75"] {
        assert!(
            page.contains(&format!(".TP\n\\fB{code}\\fR\n")),
            "exit code {code} missing:\n{page}"
        );
    }
    assert!(files.contains_key("man/swarm-run.1"), "{:?}", files.keys());
}

/// Help must read the same on every machine: no environment values, home or working directory.
#[test]
fn help_shows_no_machine_dependent_values() {
    fn walk(cmd: &clap::Command, problems: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            if arg.get_env().is_some() && !arg.is_hide_env_values_set() {
                problems.push(format!(
                    "{} --{}: shows the value of ${} (set hide_env_values)",
                    cmd.get_name(),
                    arg.get_long().unwrap_or_else(|| arg.get_id().as_str()),
                    arg.get_env().unwrap().to_string_lossy()
                ));
            }
        }
        for sub in cmd.get_subcommands() {
            walk(sub, problems);
        }
    }
    let mut cmd = swarm::cli::command();
    cmd.build();
    let mut problems = Vec::new();
    walk(&cmd, &mut problems);
    assert!(problems.is_empty(), "{}", problems.join("\n"));

    let local: Vec<String> = ["HOME", "XDG_CACHE_HOME"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .chain(
            std::env::current_dir()
                .ok()
                .map(|d| d.display().to_string()),
        )
        .filter(|v| v.len() > 1)
        .collect();
    for (path, bytes) in generate() {
        let text = String::from_utf8_lossy(&bytes);
        for value in &local {
            assert!(
                !text.contains(value.as_str()),
                "{path} contains {value:?}, which depends on this machine"
            );
        }
    }
}
