//! Configuration as users see it: `swarm config`, and a bad `.swarm.toml`, user config file,
//! `--config` file or `SWARM_*` variable, refused with every problem and where it is before
//! anything runs.

use super::{CommandOutput, assert_output, swarm, swarm_with};
use crate::{TestRepo, outside};

/// The config file `name` holding `text`, then the command that read it.
fn with_file(name: &str, text: &str, out: &CommandOutput) -> String {
    format!("--- {name}\n{text}{out}")
}

fn good_tasks(repo: &TestRepo) -> String {
    let t = repo.tasks(&[r#"{"id":"a","run":"echo a","mode":"read"}"#]);
    t.to_str().unwrap().to_owned()
}

#[test]
fn swarm_config_says_where_each_setting_comes_from() {
    let repo = TestRepo::new();
    let text = "jobs = 3\ntask-timeout = \"10m\"\n\n[agents.mine]\ncommand = \"my-agent\"\nargs = [\"--quiet\"]\n";
    repo.write(".swarm.toml", text);
    let out = swarm_with(
        &repo,
        &[("SWARM_RETRIES", "2")],
        &["config", "--land", "branch"],
    );
    assert_eq!(out.code(), Some(0), "{out}");
    assert_output!("swarm_config", with_file(".swarm.toml", text, &out));
}

#[test]
fn a_bad_repository_config_file_is_refused_with_its_line() {
    let cases = [
        ("toml_syntax", "jobs = \n"),
        ("toml_unknown_key", "jobs = 2\njob = 3\n"),
        ("toml_api_key", "api-key = \"sk-not-here\"\n"),
        ("toml_per_run_key", "final-out = \"report.md\"\n"),
        ("toml_wrong_type", "jobs = \"many\"\n"),
        ("toml_jobs_zero", "jobs = 0\n"),
        ("toml_bad_duration", "task-timeout = \"soon\"\n"),
        ("toml_bad_land", "land = \"sometimes\"\n"),
        ("toml_agents_not_a_table", "agents = 3\n"),
        (
            "toml_profile_unknown_parser",
            "[agents.mine]\ncommand = \"my-agent\"\nparser = \"xml\"\n",
        ),
        (
            "toml_profile_unknown_key",
            "[agents.mine]\ncommand = \"my-agent\"\nflavour = \"mild\"\n",
        ),
        (
            "toml_profile_without_a_command",
            "[agents.mine]\nargs = [\"-v\"]\n",
        ),
    ];
    let repo = TestRepo::new();
    let t = good_tasks(&repo);
    for (name, text) in cases {
        repo.write(".swarm.toml", text);
        let out = swarm(&repo, &["run", &t]);
        assert_eq!(out.code(), Some(2), "{name}: {out}");
        assert_output!(name, with_file(".swarm.toml", text, &out));
    }
    // `swarm config` reads the same file and refuses it the same way.
    let text = "jobs = 0\n";
    repo.write(".swarm.toml", text);
    let out = swarm(&repo, &["config"]);
    assert_output!(
        "toml_bad_for_swarm_config",
        with_file(".swarm.toml", text, &out)
    );
    assert!(
        !repo.swarm_dir().join("runs").exists(),
        "a run was recorded"
    );
}

#[test]
fn every_mistake_of_a_repository_config_file_is_reported_at_once_and_nothing_runs() {
    let repo = TestRepo::new();
    let t = good_tasks(&repo);
    let text =
        "incldue = [\".env\"]\njobs = \"four\"\ncheck = \"cargo test\"\ntask-timeout = \"soon\"\n";
    repo.write(".swarm.toml", text);
    let out = swarm(&repo, &["run", &t]);
    assert_eq!(out.code(), Some(2), "{out}");
    assert_output!("toml_three_mistakes", with_file(".swarm.toml", text, &out));
    let runs = swarm(&repo, &["runs", "--json"]);
    assert_eq!(runs.code(), Some(0), "{runs}");
    assert_eq!(runs.stdout().trim(), "[]", "{runs}");
    // `swarm config` reports the same problems, and its hint does not send the user back to it.
    let out = swarm(&repo, &["config"]);
    assert_eq!(out.code(), Some(2), "{out}");
    let shown = out.to_string();
    let hint = shown.lines().find(|l| l.starts_with("hint: ")).unwrap();
    assert!(!hint.contains("swarm config"), "{out}");
    assert_output!(
        "toml_three_mistakes_for_swarm_config",
        with_file(".swarm.toml", text, &out)
    );
}

#[test]
fn problems_of_the_user_config_file_and_the_repository_file_are_reported_together() {
    let repo = TestRepo::new();
    let t = good_tasks(&repo);
    let user = repo
        .cache
        .parent()
        .unwrap()
        .join(".config/swarm/config.toml");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    let user_text = "jobs = 2\nmax-writer = 1\nresolve-conflicts = \"yes\"\n";
    std::fs::write(&user, user_text).unwrap();
    let repo_text = "land = \"maybe\"\n\n[agents.mine]\ncomand = \"my-agent\"\n";
    repo.write(".swarm.toml", repo_text);
    let out = swarm_with(&repo, &[("SWARM_RETRIES", "twice")], &["run", &t]);
    assert_eq!(out.code(), Some(2), "{out}");
    let files = format!(
        "--- ~/.config/swarm/config.toml\n{user_text}{}",
        with_file(".swarm.toml", repo_text, &out)
    );
    assert_output!("user_and_repository_files_with_problems", files);
    assert!(
        !repo.swarm_dir().join("runs").exists(),
        "a run was recorded"
    );
}

#[test]
fn a_bad_user_config_file_or_a_missing_config_file_is_refused() {
    let repo = TestRepo::new();
    let t = good_tasks(&repo);
    let user = repo
        .cache
        .parent()
        .unwrap()
        .join(".config/swarm/config.toml");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    let text = "max-writer = 2\n";
    std::fs::write(&user, text).unwrap();
    let out = swarm(&repo, &["run", &t]);
    assert_eq!(out.code(), Some(2), "{out}");
    assert_output!(
        "user_config_unknown_key",
        with_file("~/.config/swarm/config.toml", text, &out)
    );
    std::fs::remove_file(&user).unwrap();

    let missing = outside(&repo, "missing.toml");
    let out = swarm(&repo, &["run", &t, "--config", missing.to_str().unwrap()]);
    assert_eq!(out.code(), Some(2), "{out}");
    assert_output!("config_file_missing", out);
}

#[test]
fn a_bad_swarm_variable_is_refused_with_its_name() {
    let cases = [
        ("env_jobs_zero", "SWARM_JOBS", "0"),
        ("env_jobs_not_a_number", "SWARM_JOBS", "many"),
        ("env_land_unknown", "SWARM_LAND", "sometimes"),
        (
            "env_resolve_conflicts_unknown",
            "SWARM_RESOLVE_CONFLICTS",
            "maybe",
        ),
        (
            "env_task_timeout_not_a_duration",
            "SWARM_TASK_TIMEOUT",
            "soon",
        ),
    ];
    let repo = TestRepo::new();
    let t = good_tasks(&repo);
    for (name, var, value) in cases {
        let out = swarm_with(&repo, &[(var, value)], &["run", &t]);
        assert_eq!(out.code(), Some(2), "{name}: {out}");
        assert_output!(name, out);
    }
    assert!(
        !repo.swarm_dir().join("runs").exists(),
        "a run was recorded"
    );
}
