//! Which other hosts the real CLIs try when their traffic switches are on, as the proxy sees
//! them: every other test has the switches off and asserts that the proxy saw nothing. Nothing
//! bypasses the proxy (checked by hand: `strace -f -e trace=connect` shows both CLIs connecting
//! to loopback only, and looking up no name).

use super::{CLAUDE_SWITCHES, Cli, Mode, Rig};
use crate::assert_exit;
use crate::model_server::Reply;

/// Asserts that the CLI tried some of `known`, and nothing else.
fn assert_tried_only(rig: &Rig, known: &[&str]) {
    let hosts = rig.proxy.hosts();
    assert!(!hosts.is_empty(), "no other host tried");
    let unknown: Vec<&String> = hosts
        .iter()
        .filter(|h| !known.contains(&h.as_str()))
        .collect();
    assert!(
        unknown.is_empty(),
        "unexpected hosts: {unknown:?} (all: {hosts:?})"
    );
}

#[test]
#[cfg_attr(
    not(has_claude),
    ignore = "needs the claude CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn claude_without_its_switches_tries_api_anthropic_com() {
    let rig = Rig::start(
        Cli::Claude,
        "claude_without_its_switches_tries_api_anthropic_com",
        |_, _| Reply::text("Hello."),
    );
    let mut cmd = rig.cli_cmd(&rig.repo.root);
    cmd.args(rig.profile_args(Mode::Read));
    for switch in CLAUDE_SWITCHES {
        cmd.env_remove(switch);
    }

    let out = Rig::run_with_prompt(cmd, "Say hello.");

    assert_exit(&out, 0);
    // Telemetry and feature flags, through tunnels the proxy refuses; the answer is not held
    // up by them.
    assert_tried_only(&rig, &["api.anthropic.com:443"]);
}

#[test]
#[cfg_attr(
    not(has_codex),
    ignore = "needs the codex CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn codex_with_plugins_and_analytics_on_tries_github_and_chatgpt() {
    let rig = Rig::start(
        Cli::Codex,
        "codex_with_plugins_and_analytics_on_tries_github_and_chatgpt",
        |_, _| Reply::text("Hello."),
    );
    let config = rig.codex_home().join("config.toml");
    let quiet = std::fs::read_to_string(&config).unwrap();
    let loud = quiet
        .replace("plugins = false", "plugins = true")
        .replace("enabled = false", "enabled = true");
    assert_ne!(loud, quiet);
    std::fs::write(&config, loud).unwrap();

    let out = rig.run_cli(rig.profile_args(Mode::Read), "Say hello.");

    assert_exit(&out, 0);
    // The plugins' catalogue (github.com, api.github.com, chatgpt.com) and analytics
    // (ab.chatgpt.com).
    assert_tried_only(
        &rig,
        &[
            "github.com:443",
            "api.github.com:443",
            "chatgpt.com:443",
            "ab.chatgpt.com:443",
        ],
    );
}
