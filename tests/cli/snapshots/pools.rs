//! Pools as users see them: a bad pool or `max-concurrent` refused before anything runs, with
//! the file and line or the flag named, and the report's "Agents" section.

use super::{CommandOutput, assert_output, swarm};
use crate::{TestRepo, outside};

/// The config file holding `text`, then the command that read it.
fn with_file(text: &str, out: &CommandOutput) -> String {
    format!("--- .swarm.toml\n{text}{out}")
}

const PROFILES: &str =
    "[agents.work]\ncommand = \"claude\"\n\n[agents.home]\ncommand = \"claude\"\n\n";

#[test]
fn a_bad_pool_is_refused_before_anything_runs() {
    let cases: [(&str, String, &[&str]); 7] = [
        (
            "pool_unknown_flag",
            format!("{PROFILES}[pools.subs]\nmembers = [\"work\", \"home\"]\n"),
            &["--agent", "pool:nope"],
        ),
        (
            "pool_unknown_member",
            format!("{PROFILES}[pools.subs]\nmembers = [\"work\", \"office\"]\n"),
            &["--agent", "pool:subs"],
        ),
        (
            "pool_empty",
            format!("{PROFILES}[pools.subs]\nmembers = []\n"),
            &["--agent", "pool:subs"],
        ),
        (
            "pool_in_pool",
            format!(
                "{PROFILES}[pools.subs]\nmembers = [\"work\"]\n\n[pools.all]\nmembers = [\"home\", \"pool:subs\"]\n"
            ),
            &["--agent", "pool:all"],
        ),
        (
            "pool_unknown_key",
            format!("{PROFILES}[pools.subs]\nmembers = [\"work\"]\nweights = [1]\n"),
            &["--agent", "pool:subs"],
        ),
        (
            "max_concurrent_zero",
            "[agents.work]\ncommand = \"claude\"\nmax-concurrent = 0\n".to_owned(),
            &["--agent", "work"],
        ),
        (
            "pool_with_remote",
            format!("{PROFILES}[pools.subs]\nmembers = [\"work\", \"home\"]\n"),
            &["--agent", "pool:subs", "--remote", "origin"],
        ),
    ];
    for (name, text, flags) in cases {
        let repo = TestRepo::new();
        repo.write(".swarm.toml", &text);
        let tasks = repo.tasks(&[r#"{"id":"a","prompt":"hello","lane":"reducer"}"#]);
        let mut args = vec!["run", tasks.to_str().unwrap()];
        args.extend(flags);
        let out = swarm(&repo, &args);
        assert_eq!(out.code(), Some(2), "{name}: {out}");
        assert!(
            !repo.swarm_dir().join("runs").exists(),
            "{name}: a run started"
        );
        assert_output!(name, with_file(&text, &out));
    }
}

#[test]
fn a_task_naming_an_unknown_pool_is_refused_with_its_line() {
    let repo = TestRepo::new();
    let text = format!("{PROFILES}[pools.subs]\nmembers = [\"work\", \"home\"]\n");
    repo.write(".swarm.toml", &text);
    let tasks = repo.tasks(&[
        r#"{"id":"a","prompt":"hello","lane":"analyst","agent":"pool:subs"}"#,
        r#"{"id":"b","prompt":"hello","deps":["a"],"lane":"reducer","agent":"pool:sub"}"#,
    ]);
    let out = swarm(&repo, &["run", tasks.to_str().unwrap()]);
    assert_eq!(out.code(), Some(2), "{out}");
    assert_output!("pool_unknown_in_task", with_file(&text, &out));
}

#[test]
fn the_report_lists_each_members_attempts_tokens_and_cost() {
    let repo = TestRepo::new();
    let fakes = crate::fake_agents::FakeAgents::beside(&repo);
    let profile = |name: &str, env: &str| {
        format!(
            "[agents.{name}]\ncommand = \"claude\"\nargs = [\"-p\", \"--output-format\", \"json\"]\nparser = \"claude-json\"\nset-env = {{ FAKE_TAG = \"{name}\"{env} }}\n\n"
        )
    };
    repo.write(
        ".swarm.toml",
        &format!(
            "{}{}[pools.subs]\nmembers = [\"work\", \"home\"]\n",
            profile(
                "work",
                ", FAKE_AGENT_MODE = \"usage-limit-once\", FAKE_RESET_IN = \"30\""
            ),
            profile("home", "")
        ),
    );
    repo.commit_all("pool");
    let tasks = repo.tasks(&[
        r#"{"id":"a","prompt":"RESULT: a","lane":"analyst"}"#,
        r#"{"id":"b","prompt":"RESULT: b","lane":"analyst"}"#,
        r#"{"id":"c","prompt":"RESULT: c","deps":["a","b"],"lane":"reducer"}"#,
    ]);
    let html = outside(&repo, "report.html");
    let out = repo
        .swarm_cmd()
        .env("PATH", fakes.path_env())
        .args([
            "run",
            tasks.to_str().unwrap(),
            "--agent",
            "pool:subs",
            "-j",
            "1",
        ])
        .args(["--final-out", html.to_str().unwrap()])
        .output()
        .unwrap();
    crate::assert_exit(&out, 0);
    let report = crate::run_report(&repo);
    let start = report.find("### Agents").expect("an Agents section");
    let section = &report[start..];
    let section = &section[..section[1..].find("\n###").map_or(section.len(), |e| e + 1)];
    assert_output!("pool_report_agents", section);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<h3>Agents</h3>"), "{page}");
    assert!(page.contains("<td><code>home</code></td>"), "{page}");
}
