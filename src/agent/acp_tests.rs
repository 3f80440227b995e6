use serde_json::json;

use super::message::{ReadTextFile, SessionModes, read};
use super::{lines_of, pick_mode};
use crate::agent::Agent;
use crate::agent::cli::{Kind, Sessions};
use crate::agent::tools::Access;

#[test]
fn acp_agent_name_runs_its_command_with_sh() {
    let Ok(Agent::Cli(p)) = Agent::parse("acp:npx -y some-acp --flag 'a b'") else {
        panic!("acp: is an agent");
    };
    assert_eq!(p.kind, Kind::Acp);
    assert_eq!(p.sessions, Sessions::Acp);
    assert_eq!(p.command, "/bin/sh");
    assert_eq!(p.reader_args, ["-c", "npx -y some-acp --flag 'a b'"]);
    assert_eq!(p.writer_args, p.reader_args);
    assert!(Agent::parse("acp:  ").is_err());
}

#[test]
fn modes_are_picked_for_the_task_and_only_when_offered_and_not_current() {
    let codex: SessionModes = read(json!({ "currentModeId": "read-only", "availableModes": [
        { "id": "read-only" }, { "id": "auto" }, { "id": "full-access" } ] }));
    assert_eq!(pick_mode(&codex, Access::Write).as_deref(), Some("auto"));
    assert_eq!(pick_mode(&codex, Access::Read), None);
    let claude: SessionModes = read(json!({ "currentModeId": "default", "availableModes": [
        { "id": "default" }, { "id": "acceptEdits" }, { "id": "plan" },
        { "id": "bypassPermissions" } ] }));
    assert_eq!(
        pick_mode(&claude, Access::Write).as_deref(),
        Some("acceptEdits")
    );
    assert_eq!(pick_mode(&claude, Access::Read), None);
    assert_eq!(pick_mode(&read(json!(null)), Access::Write), None);
}

#[test]
fn read_text_file_takes_line_and_limit() {
    let text = "one\ntwo\nthree\n";
    let asked = |params| -> ReadTextFile { read(params) };
    assert_eq!(lines_of(text, &asked(json!({}))), text);
    assert_eq!(lines_of(text, &asked(json!({ "line": 2 }))), "two\nthree\n");
    assert_eq!(
        lines_of(text, &asked(json!({ "line": 2, "limit": 1 }))),
        "two\n"
    );
    assert_eq!(lines_of(text, &asked(json!({ "limit": 1 }))), "one\n");
}
