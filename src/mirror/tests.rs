use serde_json::json;

use super::words::{self, Command, Heard};
use super::{API_VAR, CHATS_VAR, Config, TOKEN_VAR};

fn config(vars: &[(&str, &str)]) -> Result<Option<Config>, crate::error::Usage> {
    Config::from_env(&|name| {
        vars.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| (*v).to_owned())
    })
}

#[test]
fn the_mirror_is_off_unless_both_token_and_chats_are_set() {
    assert!(config(&[]).unwrap().is_none());
    assert!(config(&[(TOKEN_VAR, "123:abc")]).unwrap().is_none());
    assert!(config(&[(CHATS_VAR, "42")]).unwrap().is_none());
    let on = config(&[(TOKEN_VAR, "123:abc"), (CHATS_VAR, "42, -1001")])
        .unwrap()
        .unwrap();
    assert_eq!(on.chats, vec![42, -1001]);
    assert_eq!(on.api, "https://api.telegram.org");
}

#[test]
fn bad_values_name_their_variable_and_never_the_token() {
    let err = config(&[(TOKEN_VAR, "123:abc"), (CHATS_VAR, "42,abc")]).unwrap_err();
    assert!(err.message.contains(CHATS_VAR), "{err}");
    let err = config(&[(TOKEN_VAR, "123:a bc"), (CHATS_VAR, "42")]).unwrap_err();
    assert!(err.message.contains(TOKEN_VAR), "{err}");
    assert!(!err.message.contains("a bc"), "{err}");
    let err = config(&[(API_VAR, "not a url")]).unwrap_err();
    assert!(err.message.contains(API_VAR), "{err}");
    let err = config(&[(API_VAR, "ftp://example.com")]).unwrap_err();
    assert!(err.message.contains(API_VAR), "{err}");
    // Set alone, a bad value is refused all the same.
    assert!(config(&[(CHATS_VAR, "x")]).is_err());
}

#[test]
fn the_api_url_keeps_a_path_and_loses_its_trailing_slash() {
    let on = config(&[
        (TOKEN_VAR, "123:abc"),
        (CHATS_VAR, "42"),
        (API_VAR, "http://127.0.0.1:8081/tg/"),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(on.api, "http://127.0.0.1:8081/tg");
}

#[test]
fn the_token_variable_is_a_secret_by_its_name() {
    assert!(crate::secret::is_secret_name(TOKEN_VAR));
}

#[test]
fn commands_are_read_with_or_without_the_bots_name() {
    assert_eq!(words::command("/status"), Command::Status);
    assert_eq!(words::command(" /status@swarm_bot "), Command::Status);
    assert_eq!(
        words::command("/goal  add a README\nwith a title"),
        Command::Goal("add a README\nwith a title".to_owned())
    );
    assert_eq!(words::command("/goal"), Command::Help);
    assert_eq!(words::command("/stop"), Command::Stop);
    assert_eq!(words::command("/resume"), Command::Resume);
    assert_eq!(
        words::command("/steer api  keep the old endpoint"),
        Command::Steer {
            task: "api".to_owned(),
            text: "keep the old endpoint".to_owned()
        }
    );
    assert_eq!(words::command("/steer api"), Command::Help);
    assert_eq!(words::command("hello"), Command::Help);
}

#[test]
fn only_allowed_chats_are_heard_and_only_since_the_mirror_started() {
    let result = json!([
        {"update_id": 7, "message": {"message_id": 1, "date": 100, "chat": {"id": 42}, "text": "/status"}},
        {"update_id": 8, "message": {"message_id": 2, "date": 100, "chat": {"id": 99}, "text": "/goal x"}},
        {"update_id": 9, "message": {"message_id": 3, "date": 10, "chat": {"id": 42}, "text": "/stop"}},
        {"update_id": 10, "edited_message": {"chat": {"id": 42}}},
        {"update_id": 11, "channel_post": {"date": 100, "chat": {"id": -5}, "text": "/resume"}},
        {"no": "update"},
    ]);
    let updates = words::updates(&result);
    let heard: Vec<(i64, Heard)> = updates
        .iter()
        .map(|u| (u.id, words::heard(u, &[42, -5], 50)))
        .collect();
    assert_eq!(
        heard,
        vec![
            (
                7,
                Heard::Command {
                    chat: 42,
                    command: Command::Status
                }
            ),
            (8, Heard::Stranger { chat: 99 }),
            (9, Heard::Nothing),
            (10, Heard::Nothing),
            (
                11,
                Heard::Command {
                    chat: -5,
                    command: Command::Resume
                }
            ),
        ]
    );
}

#[test]
fn an_escalation_says_the_task_why_and_the_commands_that_resolve_it() {
    let info = json!({
        "run": "r1", "task": "b", "branch": "swarm/r1-b", "commit": "abc",
        "integration": "swarm/r1", "paths": ["src/lib.rs"],
        "rungs": [{"rung": "structural", "why": "no tool"}],
    });
    let text = words::escalated(&info);
    assert!(text.contains("task b is parked"), "{text}");
    assert!(text.contains("src/lib.rs"), "{text}");
    assert!(
        text.contains("structural did not merge it: no tool"),
        "{text}"
    );
    assert!(
        text.contains("git switch swarm/r1 && git merge swarm/r1-b"),
        "{text}"
    );
    assert!(text.contains("git diff swarm/r1...swarm/r1-b"), "{text}");
    let halted = words::escalated(&json!({"run": "r1", "task": null, "reason": "moved"}));
    assert!(halted.contains("stopped merging: moved"), "{halted}");
    assert!(halted.contains("swarm resume r1"), "{halted}");
}

#[test]
fn a_pause_says_until_when() {
    let run = words::paused("r1", None, "2026-12-07 23:10 UTC", "20m");
    assert!(
        run.contains("no new attempts until 2026-12-07 23:10 UTC (in 20m)"),
        "{run}"
    );
    let pool = words::paused("r1", Some("fast"), "23:10", "20m");
    assert!(
        pool.contains("pool:fast") && pool.contains("until 23:10"),
        "{pool}"
    );
    let now = super::paused("r1", None, std::time::Duration::from_secs(600));
    assert!(now.contains("(in 10m"), "{now}");
}

#[test]
fn a_message_is_cut_to_what_telegram_takes() {
    let long = "x".repeat(10_000);
    assert!(words::ended(&long).chars().count() <= 4000);
    assert!(words::started("r1", "tasks.jsonl", 1, false).contains("(1 task)"));
}
