//! Generated files: the shell completions in `completions/`, the man pages in `man/` and the
//! reference in `docs/src/reference/` are produced from the clap definition
//! (`swarm::cli::command()`) and the manual's sections, and the CI configurations in
//! `examples/ci/` by `swarm ci` (all made by `xtask::generated`, outside the shipped binary).
//! The test fails when a committed file differs from what swarm produces; with
//! `SWARM_UPDATE_GENERATED=1` it rewrites them instead, as `cargo xtask generate` does.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap_complete::Shell;

use crate::TestRepo;

const UPDATE_VAR: &str = "SWARM_UPDATE_GENERATED";
const FIX: &str = "SWARM_UPDATE_GENERATED=1 cargo test --locked --test cli generated";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every generated file, by path relative to the repository root (see `xtask::generated`).
fn generate() -> BTreeMap<String, Vec<u8>> {
    xtask::generated::files().unwrap()
}

/// What `swarm completions SHELL` prints.
fn completion(shell: Shell) -> Vec<u8> {
    xtask::generated::completion(shell).unwrap()
}

#[test]
fn completions_and_man_pages_match_the_clap_definition() {
    let update = std::env::var_os(UPDATE_VAR).is_some_and(|v| !v.is_empty() && v != "0");
    if update {
        xtask::generated::write(&root()).unwrap();
        return;
    }
    let drift = xtask::generated::drift(&root()).unwrap();
    assert!(
        drift.is_empty(),
        "generated files are out of date:\n  {}\nto fix: run `{FIX}` and commit completions/, man/, docs/src/reference/ and examples/ci/",
        drift.join("\n  ")
    );
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

/// Every command's page goes on after the generated sections with examples, and the top page
/// names the task-file format, whose page exists.
#[test]
fn the_pages_have_examples_files_environment_and_a_task_format_page() {
    let files = generate();
    let page = |name: &str| String::from_utf8(files[&format!("man/{name}")].clone()).unwrap();
    let top = page("swarm.1");
    for section in [
        ".SH \"EXIT STATUS\"",
        ".SH ENVIRONMENT",
        ".SH FILES",
        ".SH EXAMPLES",
        ".SH \"SEE ALSO\"",
    ] {
        assert!(top.contains(section), "swarm.1 has no {section}");
    }
    for var in [
        "SWARM_API_KEY",
        "OPENAI_API_KEY",
        "SWARM_JOBS",
        "SWARM_ACTIVE",
        "COMPLETE",
    ] {
        assert!(top.contains(var), "swarm.1 does not name {var}");
    }
    assert!(
        top.contains("\\fBswarm\\-tasks\\fR(5)"),
        "no link to swarm-tasks(5)"
    );
    assert!(top.contains("board.db") && top.contains(".swarm.toml"));
    for name in ["swarm-run.1", "swarm-status.1", "swarm-completions.1"] {
        assert!(
            page(name).contains(".SH EXAMPLES"),
            "{name} has no examples"
        );
    }
    let tasks = page("swarm-tasks.5");
    assert!(tasks.starts_with(".ie") && tasks.contains(".TH swarm-tasks 5 \"\" \"swarm "));
    for field in [
        "id", "prompt", "run", "deps", "lane", "mode", "title", "agent", "timeout", "check",
        "files",
    ] {
        assert!(
            tasks.contains(&format!(".TP\n\\fB{field}\\fR\n")),
            "swarm-tasks(5) does not describe {field:?}"
        );
    }
}

/// Every setting's variable, as the options' declaration names it, is in the ENVIRONMENT of
/// the pages of the commands that take settings: a new option cannot be left out of them.
#[test]
fn every_settings_variable_is_in_the_environment_of_the_pages_that_take_settings() {
    let files = generate();
    let vars: Vec<&str> = swarm::cli::declared()
        .into_iter()
        .filter_map(|o| o.var)
        .collect();
    assert!(vars.len() >= 30, "{vars:?}");
    for name in ["swarm.1", "swarm-run.1", "swarm-resume.1", "swarm-config.1"] {
        let page = String::from_utf8(files[&format!("man/{name}")].clone()).unwrap();
        let environment = page
            .split(".SH ENVIRONMENT\n")
            .nth(1)
            .and_then(|s| s.split("\n.SH ").next())
            .unwrap_or_else(|| panic!("{name} has no ENVIRONMENT"));
        for var in &vars {
            assert!(
                environment.contains(&format!("\\fB{var}\\fR")),
                "{name} does not name {var} in its ENVIRONMENT"
            );
        }
    }
}

/// The tasks swarm-tasks(5) shows are a task file swarm accepts (the first four lines make one;
/// the fifth replaces the fourth).
#[test]
fn the_task_format_page_examples_are_a_valid_task_file() {
    let page = String::from_utf8(generate()["man/swarm-tasks.5"].clone()).unwrap();
    let tasks: Vec<String> = page
        .lines()
        .filter_map(|l| l.strip_prefix("\\fB{")?.strip_suffix("\\fR"))
        .map(|l| format!("{{{}", l.replace("\\-", "-").replace("\\\\", "\\")))
        .collect();
    assert_eq!(tasks.len(), 5, "{tasks:?}");
    let repo = TestRepo::new();
    for lines in [&tasks[..4], &[&tasks[..3], &tasks[4..]].concat()[..]] {
        let file = repo.tasks(&lines.iter().map(String::as_str).collect::<Vec<_>>());
        let out = repo.swarm(&["graph", file.to_str().unwrap()]);
        crate::assert_exit(&out, 0);
        assert!(
            crate::stdout(&out).contains("survey"),
            "{}",
            crate::stdout(&out)
        );
    }
}
