//! Failures the model server reports, as the real CLIs pass them on: a usage limit resetting
//! beyond an hour stops the run resumably (exit 75) with no failure counted; a lasting server
//! error fails the task once its retries are spent.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use serde_json::json;

use super::{ClaudeAuth, Cli, Retries, Rig, in_two_hours, task_status};
use crate::model_server::{Reply, Window};
use crate::{assert_exit, status_json, stdout};

/// A reader, then a reducer after it.
fn tasks() -> [serde_json::Value; 2] {
    [
        json!({"id": "a", "prompt": "Look. (task: a)", "lane": "analyst"}),
        json!({"id": "b", "prompt": "Sum up. (task: b)", "lane": "reducer", "deps": ["a"]}),
    ]
}

fn usage_limit_far_away_stops_the_run_resumably(rig: &Rig) {
    let out = rig.run(&tasks(), &["--retries", "0", "--task-timeout", "2m"]);

    assert_exit(&out, 75);
    let status = status_json(&rig.repo);
    assert_eq!(status["run"]["status"], "interrupted", "{status}");
    let task = task_status(&status, "a");
    assert_eq!(task["status"], "interrupted", "{task}");
    assert_eq!(task["failures"], 0, "{task}");
    assert_eq!(task_status(&status, "b")["status"], "pending", "{status}");
    let logs = stdout(&rig.repo.swarm(&["logs"]));
    assert!(logs.contains("usage_limit"), "{logs}");
    rig.assert_no_other_host();
}

#[test]
#[cfg_attr(
    not(has_claude),
    ignore = "needs the claude CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn claude_weekly_limit_resetting_in_two_hours_stops_the_run_resumably() {
    // Claude Code prints "You've hit your weekly limit · resets 4:05pm (UTC)".
    let rig = Rig::start_with(
        Cli::Claude,
        "claude_weekly_limit_resetting_in_two_hours_stops_the_run_resumably",
        ClaudeAuth::Subscription,
        Retries::Never,
        |_, _| Reply::UsageLimit {
            window: Window::Weekly,
            resets_at: Some(in_two_hours()),
        },
    );
    usage_limit_far_away_stops_the_run_resumably(&rig);
}

#[test]
#[cfg_attr(
    not(has_claude),
    ignore = "needs the claude CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn claude_five_hour_limit_resetting_in_two_hours_stops_the_run_resumably() {
    // Claude Code prints "You've hit your 5-hour limit · resets 4:05pm (UTC)".
    let rig = Rig::start_with(
        Cli::Claude,
        "claude_five_hour_limit_resetting_in_two_hours_stops_the_run_resumably",
        ClaudeAuth::Subscription,
        Retries::Never,
        |_, _| Reply::UsageLimit {
            window: Window::FiveHour,
            resets_at: Some(in_two_hours()),
        },
    );
    usage_limit_far_away_stops_the_run_resumably(&rig);
}

#[test]
#[cfg_attr(
    not(has_codex),
    ignore = "needs the codex CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn codex_usage_limit_resetting_in_two_hours_stops_the_run_resumably() {
    // Codex prints "You’ve hit your usage limit. Upgrade to Pro (…) or try again at 4:05 PM."
    // (the local time, here UTC).
    let rig = Rig::start(
        Cli::Codex,
        "codex_usage_limit_resetting_in_two_hours_stops_the_run_resumably",
        |_, _| Reply::UsageLimit {
            window: Window::FiveHour,
            resets_at: Some(in_two_hours()),
        },
    );
    usage_limit_far_away_stops_the_run_resumably(&rig);
}

/// A server answering 500 to everything: each attempt fails once the CLI's own retries under
/// swarm's profile are spent (`requests_per_attempt` requests), and the task fails after its
/// one retry.
fn lasting_server_error_fails_the_task(
    cli: Cli,
    test: &str,
    requests_per_attempt: usize,
    says: &str,
) {
    let rig = Rig::start(cli, test, |_, _| Reply::ServerError);

    let out = rig.run(
        &[json!({"id": "a", "prompt": "Look. (task: a)", "lane": "reducer"})],
        &["--retries", "1", "--task-timeout", "2m"],
    );

    assert_exit(&out, 1);
    let status = status_json(&rig.repo);
    let task = task_status(&status, "a");
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(task["attempts"], 2, "{task}");
    let error = task["error"].as_str().unwrap_or_default();
    assert!(error.contains(says), "{task}");
    assert_eq!(rig.server.model_requests().len(), 2 * requests_per_attempt);
    rig.assert_no_other_host();
}

#[test]
#[cfg_attr(
    not(has_claude),
    ignore = "needs the claude CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn claude_lasting_server_error_fails_the_task_after_its_retries() {
    // Claude Code exits 1 with `is_error: true` and `api_error_status: 500`, after the one
    // retry of its own that swarm's profile leaves it (`CLAUDE_CODE_MAX_RETRIES=1`).
    lasting_server_error_fails_the_task(
        Cli::Claude,
        "claude_lasting_server_error_fails_the_task_after_its_retries",
        2,
        "API Error: 500 Internal server error",
    );
}

#[test]
#[cfg_attr(
    not(has_codex),
    ignore = "needs the codex CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn codex_lasting_server_error_fails_the_task_after_its_retries() {
    // Codex shows no server's message for a 500, only its own.
    lasting_server_error_fails_the_task(
        Cli::Codex,
        "codex_lasting_server_error_fails_the_task_after_its_retries",
        1,
        "We’re currently experiencing high demand",
    );
}

/// When a limit resets, by the clock the CLI reads and by the test's.
type Reset = (SystemTime, Instant);

/// A server that answers the first model request with a usage limit resetting in 30 s, and
/// every later one with an answer.
fn limited_once(cli: Cli, test: &str, auth: ClaudeAuth) -> (Rig, Arc<OnceLock<Reset>>) {
    let reset = Arc::new(OnceLock::new());
    let first = Arc::clone(&reset);
    let rig = Rig::start_with(cli, test, auth, Retries::Never, move |_, seen| {
        if seen == 0 {
            let (at, _) = *first.get_or_init(|| {
                let soon = Duration::from_secs(30);
                (SystemTime::now() + soon, Instant::now() + soon)
            });
            Reply::UsageLimit {
                window: Window::FiveHour,
                resets_at: Some(at),
            }
        } else {
            Reply::text("FOUND: it")
        }
    });
    (rig, reset)
}

/// The run pauses until the limit's minute is over, then finishes with no failure counted.
fn a_limit_resetting_soon_pauses_the_run_and_it_finishes(rig: &Rig, reset: &OnceLock<Reset>) {
    let out = rig.run(&tasks(), &["--retries", "0", "--task-timeout", "2m"]);

    assert_exit(&out, 0);
    let status = status_json(&rig.repo);
    for id in ["a", "b"] {
        let task = task_status(&status, id);
        assert_eq!(task["status"], "done", "{task}");
        assert_eq!(task["failures"], 0, "{task}");
    }
    // The second attempt of `a` waited for the reset the CLI printed, to the minute.
    let requests = rig.server.model_requests();
    assert!(requests.len() >= 3, "{}", requests.len());
    let (_, reset) = *reset.get().expect("a limit was sent");
    assert!(requests[1].at >= reset, "asked again before the reset");
    let logs = stdout(&rig.repo.swarm(&["logs"]));
    assert!(logs.contains("usage_limit"), "{logs}");
    rig.assert_no_other_host();
}

#[test]
#[cfg_attr(
    not(has_claude),
    ignore = "needs the claude CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn claude_five_hour_limit_resetting_in_30_s_pauses_the_run_which_then_finishes() {
    let (rig, reset) = limited_once(
        Cli::Claude,
        "claude_five_hour_limit_resetting_in_30_s_pauses_the_run_which_then_finishes",
        ClaudeAuth::Subscription,
    );
    a_limit_resetting_soon_pauses_the_run_and_it_finishes(&rig, &reset);
}

#[test]
#[cfg_attr(
    not(has_codex),
    ignore = "needs the codex CLI: not found; install with npm ci --prefix .ci/agents (or set SWARM_TEST_AGENTS_BIN)"
)]
fn codex_usage_limit_resetting_in_30_s_pauses_the_run_which_then_finishes() {
    let (rig, reset) = limited_once(
        Cli::Codex,
        "codex_usage_limit_resetting_in_30_s_pauses_the_run_which_then_finishes",
        ClaudeAuth::ApiKey,
    );
    a_limit_resetting_soon_pauses_the_run_and_it_finishes(&rig, &reset);
}
