use std::time::{Duration, UNIX_EPOCH};

use jiff::tz::TimeZone;

use super::*;

/// 2026-03-10T12:00:00Z.
fn noon() -> SystemTime {
    at(2026, 3, 10, 12, 0)
}

/// Noon, with times said without a zone read as UTC.
fn now() -> Now {
    Now::utc(noon())
}

fn at(year: i16, month: i8, day: i8, hour: i8, minute: i8) -> SystemTime {
    jiff::civil::date(year, month, day)
        .at(hour, minute, 0, 0)
        .to_zoned(TimeZone::UTC)
        .unwrap()
        .timestamp()
        .into()
}

/// The end of the minute a CLI printed, which is when the limit it names is surely reset.
fn end_of(year: i16, month: i8, day: i8, hour: i8, minute: i8) -> SystemTime {
    at(year, month, day, hour, minute) + Duration::from_secs(60)
}

fn epoch_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_secs()
}

const CLAUDE_OK: &str = r#"{"type":"result","subtype":"success","is_error":false,"duration_ms":5123,"duration_api_ms":4980,"num_turns":3,"result":"Added the retry to src/net.rs.","session_id":"9d2c0b9e-5c1e-4a51-8f0e-1d2b3c4d5e6f","total_cost_usd":0.0421,"usage":{"input_tokens":12,"cache_creation_input_tokens":2048,"cache_read_input_tokens":10240,"output_tokens":345,"server_tool_use":{"web_search_requests":0},"service_tier":"standard"},"permission_denials":[]}"#;

#[test]
fn parser_names_round_trip() {
    for (name, parser) in [
        ("text", Parser::Text),
        ("claude-json", Parser::ClaudeJson),
        ("codex-jsonl", Parser::CodexJsonl),
    ] {
        assert_eq!(Parser::parse_name(name), Some(parser));
        assert_eq!(serde_json::to_value(parser).unwrap(), name);
    }
    assert_eq!(Parser::parse_name("json"), None);
}

#[test]
fn profiles_read_the_prompt_from_stdin_and_readers_cannot_write() {
    let claude = claude_profile();
    assert_eq!(claude.command, "claude");
    assert_eq!(claude.parser, Parser::ClaudeJson);
    assert!(claude.reader_args.contains(&"-p".to_owned()));
    assert!(claude.writer_args.contains(&"acceptEdits".to_owned()));
    assert!(!claude.reader_args.contains(&"acceptEdits".to_owned()));
    assert!(claude.reader_args.iter().any(|a| a.contains("Write")));
    let codex = codex_profile();
    assert_eq!(codex.reader_args.last().map(String::as_str), Some("-"));
    assert_eq!(codex.writer_args.last().map(String::as_str), Some("-"));
    assert!(codex.reader_args.contains(&"read-only".to_owned()));
    assert!(codex.writer_args.contains(&"workspace-write".to_owned()));
    assert!(
        !claude
            .pass_env
            .iter()
            .chain(&codex.pass_env)
            .any(|v| v.contains("API_KEY"))
    );
}

#[test]
fn text_is_the_whole_stdout() {
    let p = parse(Parser::Text, "hello\nworld\n", &now());
    assert_eq!(p.result, "hello\nworld\n");
    assert_eq!(p.error, None);
    assert!(p.complete);
    assert_eq!((p.tokens, p.cost, p.usage_limit), (0, None, None));
}

#[test]
fn claude_success_counts_every_kind_of_token_and_the_cost() {
    let p = parse(Parser::ClaudeJson, CLAUDE_OK, &now());
    assert_eq!(p.result, "Added the retry to src/net.rs.");
    assert_eq!(p.error, None);
    assert_eq!(p.tokens, 12 + 2048 + 10240 + 345);
    assert_eq!(
        p.prompt_tokens,
        12 + 2048 + 10240,
        "input, cache writes and cache reads"
    );
    assert_eq!(p.cached_tokens, 10240, "the cache reads");
    assert_eq!(p.cost, Some(0.0421));
    assert!(p.complete);
    assert_eq!(p.usage_limit, None);
}

#[test]
fn claude_api_error_with_exit_0_is_an_error() {
    let out = r#"{"type":"result","subtype":"success","is_error":true,"duration_ms":312,"duration_api_ms":0,"num_turns":1,"result":"API Error: 500 {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal server error\"}}","stop_reason":"stop_sequence","session_id":"s1","total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}"#;
    let p = parse(Parser::ClaudeJson, out, &now());
    assert!(p.error.as_deref().unwrap().starts_with("API Error: 500"));
    assert_eq!(p.usage_limit, None, "a server error is not a usage limit");
    assert!(p.complete);
    assert_eq!(p.cost, Some(0.0));
}

#[test]
fn claude_rate_limit_is_an_error_but_not_a_usage_limit() {
    let out = r#"{"type":"result","subtype":"success","is_error":true,"num_turns":1,"result":"API Error: Rate limit reached","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0}}"#;
    let p = parse(Parser::ClaudeJson, out, &now());
    assert_eq!(p.error.as_deref(), Some("API Error: Rate limit reached"));
    assert_eq!(p.usage_limit, None);
}

#[test]
fn claude_max_turns_is_an_error_named_by_its_subtype() {
    let out = r#"{"type":"result","subtype":"error_max_turns","is_error":true,"duration_ms":90000,"num_turns":11,"session_id":"s2","total_cost_usd":0.31,"usage":{"input_tokens":40,"cache_creation_input_tokens":0,"cache_read_input_tokens":900,"output_tokens":60},"errors":[]}"#;
    let p = parse(Parser::ClaudeJson, out, &now());
    assert_eq!(
        p.error.as_deref(),
        Some("the agent reached its turn limit (error_max_turns)")
    );
    assert_eq!(p.result, "");
    assert_eq!(p.tokens, 1000);
    assert_eq!(p.cost, Some(0.31));
    assert!(p.complete);
}

#[test]
fn claude_error_during_execution_carries_its_errors() {
    let out = r#"{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":0,"total_cost_usd":0,"errors":["No conversation found with session ID: abc"]}"#;
    let p = parse(Parser::ClaudeJson, out, &now());
    assert_eq!(
        p.error.as_deref(),
        Some(
            "the agent failed while running (error_during_execution): No conversation found with session ID: abc"
        )
    );
}

#[test]
fn claude_usage_limit_with_unix_reset_time() {
    let reset = epoch_secs(noon()) + 3;
    let out = format!(
        r#"{{"type":"result","subtype":"success","is_error":true,"num_turns":1,"result":"Claude AI usage limit reached|{reset}","session_id":"s3","total_cost_usd":0,"usage":{{"input_tokens":0,"output_tokens":0}}}}"#
    );
    let p = parse(Parser::ClaudeJson, &out, &now());
    let limit = p.usage_limit.expect("a usage limit");
    assert_eq!(
        limit.resets_at,
        Some(UNIX_EPOCH + Duration::from_secs(reset))
    );
    assert_eq!(
        limit.message,
        format!("Claude AI usage limit reached|{reset}")
    );
    assert!(p.error.is_some());
}

#[test]
fn claude_usage_limit_reported_as_a_plain_answer_is_still_an_error() {
    let out = r#"{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"Claude AI usage limit reached|1749924000","total_cost_usd":0}"#;
    let p = parse(Parser::ClaudeJson, out, &now());
    assert!(p.error.is_some());
    let reset: u64 = 1_749_924_000;
    assert_eq!(
        p.usage_limit.unwrap().resets_at,
        Some(UNIX_EPOCH + Duration::from_secs(reset))
    );
    // An answer that merely talks about limits is an answer.
    let out = r#"{"type":"result","subtype":"success","is_error":false,"result":"The API returns 429 when the usage limit is reached; I added a retry."}"#;
    assert_eq!(parse(Parser::ClaudeJson, out, &now()).error, None);
}

#[test]
fn claude_newer_limit_phrasings_resolve_against_now() {
    let cases = [
        // No zone: read as UTC.
        (
            "5-hour limit reached ∙ resets 3pm",
            Some(end_of(2026, 3, 10, 15, 0)),
        ),
        // Long past today: tomorrow.
        (
            "5-hour limit reached ∙ resets 9am",
            Some(end_of(2026, 3, 11, 9, 0)),
        ),
        (
            "You've hit your limit · resets 12:50am (UTC)",
            Some(end_of(2026, 3, 11, 0, 50)),
        ),
        // Etc/GMT+5 is five hours west of UTC.
        (
            "Claude usage limit reached. Your limit will reset at 1pm (Etc/GMT+5).",
            Some(end_of(2026, 3, 10, 18, 0)),
        ),
        (
            "You've hit your limit · resets Apr 23 at 4pm (UTC)",
            Some(end_of(2026, 4, 23, 16, 0)),
        ),
        (
            "Usage limit reached. Resets at 3:30 PM.",
            Some(end_of(2026, 3, 10, 15, 30)),
        ),
        // A zone of the database: Lisbon keeps UTC in March, until summer time.
        (
            "You've hit your limit · resets 1pm (Europe/Lisbon)",
            Some(end_of(2026, 3, 10, 13, 0)),
        ),
        // A zone no database knows: known to be a limit, reset unknown.
        (
            "You've hit your limit · resets 1pm (Mars/Olympus_Mons)",
            None,
        ),
        ("Weekly limit reached", None),
    ];
    for (message, want) in cases {
        let out = serde_json::json!({
            "type": "result", "subtype": "success", "is_error": true, "result": message,
        })
        .to_string();
        let p = parse(Parser::ClaudeJson, &out, &now());
        let limit = p
            .usage_limit
            .unwrap_or_else(|| panic!("{message}: no usage limit"));
        assert_eq!(limit.resets_at, want, "{message}");
    }
}

#[test]
fn claude_stream_json_takes_the_last_result() {
    let out = r#"{"type":"system","subtype":"init","cwd":"/work/task","session_id":"s4","tools":["Read","Grep","Glob","Edit","Write"],"mcp_servers":[],"model":"claude-sonnet-4-5","permissionMode":"acceptEdits","apiKeySource":"none"}
{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Reading the file."}],"usage":{"input_tokens":10,"output_tokens":5}},"parent_tool_use_id":null,"session_id":"s4"}
{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/work/task/a.rs"}}],"usage":{"input_tokens":10,"output_tokens":5}},"parent_tool_use_id":null,"session_id":"s4"}
{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"fn a() {}"}]},"parent_tool_use_id":null,"session_id":"s4"}
{"type":"assistant","message":{"id":"msg_2","type":"message","role":"assistant","content":[{"type":"text","text":"Done."}],"usage":{"input_tokens":30,"output_tokens":7}},"parent_tool_use_id":null,"session_id":"s4"}
{"type":"result","subtype":"success","is_error":false,"duration_ms":2100,"num_turns":2,"result":"Done.","session_id":"s4","total_cost_usd":0.002,"usage":{"input_tokens":40,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":12}}
"#;
    let p = parse(Parser::ClaudeJson, out, &now());
    assert_eq!(p.result, "Done.");
    assert_eq!(p.tokens, 52);
    assert_eq!(p.cost, Some(0.002));
    assert!(p.complete);
    assert_eq!(p.error, None);
}

#[test]
fn claude_stream_cut_before_its_result_is_incomplete() {
    let out = r#"{"type":"system","subtype":"init","session_id":"s5","tools":[]}
{"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"Half way."}],"usage":{"input_tokens":10,"output_tokens":5}}}
{"type":"assistant","message":{"id":"msg_1","content":[{"type":"tool_use","id":"t","name":"Read","input":{}}],"usage":{"input_tokens":10,"output_tokens":5}}}
"#;
    let p = parse(Parser::ClaudeJson, out, &now());
    assert!(!p.complete);
    assert!(p.error.is_some());
    assert_eq!(p.result, "Half way.");
    assert_eq!(p.tokens, 15, "one message, counted once");
    assert_eq!((p.prompt_tokens, p.cached_tokens), (10, 0));
}

#[test]
fn claude_old_verbose_array_and_warning_lines_are_read() {
    let array = format!(r#"[{{"type":"system","subtype":"init"}},{CLAUDE_OK}]"#);
    assert_eq!(
        parse(Parser::ClaudeJson, &array, &now()).result,
        "Added the retry to src/net.rs."
    );
    let warned = format!("Warning: something on stdout\n{CLAUDE_OK}\n");
    assert_eq!(parse(Parser::ClaudeJson, &warned, &now()).error, None);
}

#[test]
fn unparseable_output_is_an_incomplete_error() {
    for parser in [Parser::ClaudeJson, Parser::CodexJsonl] {
        for out in [
            "",
            "Error: Invalid API key · Please run /login\n",
            "[1, 2]",
            "{\"a\":1}",
        ] {
            let p = parse(parser, out, &now());
            assert_eq!(p.error.as_deref(), Some(UNREADABLE), "{parser:?} {out:?}");
            assert!(!p.complete);
        }
    }
}

const CODEX_OK: &str = r#"{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Looking at the failing test**"}}
{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc 'cargo test'","aggregated_output":"","exit_code":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc 'cargo test'","aggregated_output":"test result: ok","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"Looking into it."}}
{"type":"item.completed","item":{"id":"item_3","type":"file_change","changes":[{"path":"src/lib.rs","kind":"update"}],"status":"completed"}}
{"type":"item.completed","item":{"id":"item_4","type":"agent_message","text":"Fixed the off-by-one in src/lib.rs."}}
{"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122}}
"#;

#[test]
fn codex_success_takes_the_last_agent_message_and_counts_cached_input_once() {
    let p = parse(Parser::CodexJsonl, CODEX_OK, &now());
    assert_eq!(p.result, "Fixed the off-by-one in src/lib.rs.");
    assert_eq!(p.error, None);
    assert_eq!(p.tokens, 24763 + 122);
    assert_eq!((p.prompt_tokens, p.cached_tokens), (24763, 24448));
    assert_eq!(p.cost, None);
    assert!(p.complete);
}

#[test]
fn codex_transient_error_before_a_completed_turn_is_success() {
    let out = r#"{"type":"thread.started","thread_id":"t"}
{"type":"turn.started"}
{"type":"error","message":"Reconnecting... 1/5 (stream disconnected before completion: error sending request)"}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Hello."}}
{"type":"turn.completed","usage":{"input_tokens":12632,"cached_input_tokens":3456,"output_tokens":81}}
"#;
    let p = parse(Parser::CodexJsonl, out, &now());
    assert_eq!(p.error, None);
    assert_eq!(p.result, "Hello.");
    assert_eq!(p.tokens, 12713);
}

#[test]
fn codex_turn_failed_is_an_error_even_with_exit_0() {
    let out = r#"{"type":"thread.started","thread_id":"t"}
{"type":"turn.started"}
{"type":"error","message":"stream error: unexpected status 503 Service Unavailable; retrying 1/5 in 200ms…"}
{"type":"turn.failed","error":{"message":"exceeded retry limit, last status: 503 Service Unavailable"}}
"#;
    let p = parse(Parser::CodexJsonl, out, &now());
    assert_eq!(
        p.error.as_deref(),
        Some("exceeded retry limit, last status: 503 Service Unavailable")
    );
    assert!(p.complete);
    assert_eq!(p.usage_limit, None);
    assert_eq!(p.tokens, 0);
}

#[test]
fn codex_error_without_an_ending_is_an_incomplete_error() {
    let out = r#"{"type":"thread.started","thread_id":"t"}
{"type":"turn.started"}
{"type":"error","message":"Reconnecting... 2/5"}
"#;
    let p = parse(Parser::CodexJsonl, out, &now());
    assert_eq!(p.error.as_deref(), Some("Reconnecting... 2/5"));
    assert!(!p.complete);
    let p = parse(
        Parser::CodexJsonl,
        "{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n",
        &now(),
    );
    assert!(p.error.is_some() && !p.complete);
}

#[test]
fn codex_usage_limit_with_a_relative_reset() {
    let message = "You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again in 2 days 17 hours 14 minutes.";
    let out = format!(
        "{}\n{}\n{}\n{}\n",
        r#"{"type":"thread.started","thread_id":"t"}"#,
        r#"{"type":"turn.started"}"#,
        serde_json::json!({"type": "error", "message": message}),
        serde_json::json!({"type": "turn.failed", "error": {"message": message}}),
    );
    let p = parse(Parser::CodexJsonl, &out, &now());
    let limit = p.usage_limit.expect("a usage limit");
    assert_eq!(limit.message, message);
    let secs = 2 * 86_400 + 17 * 3_600 + 14 * 60;
    assert_eq!(limit.resets_at, Some(noon() + Duration::from_secs(secs)));
}

#[test]
fn codex_usage_limit_in_an_error_event_without_turn_failed() {
    let out = r#"{"type":"thread.started","thread_id":"t"}
{"type":"turn.started"}
{"type":"error","message":"You've hit your usage limit. Try again in 3 seconds."}
"#;
    let p = parse(Parser::CodexJsonl, out, &now());
    assert_eq!(
        p.usage_limit.unwrap().resets_at,
        Some(noon() + Duration::from_secs(3))
    );
}

#[test]
fn codex_usage_limit_with_a_clock_time() {
    for (message, want) in [
        (
            "You've hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/codex/settings/usage to purchase more credits or try again at Mar 12th, 2026 3:39 AM.",
            Some(end_of(2026, 3, 12, 3, 39)),
        ),
        (
            "You've hit your usage limit. Try again at 3:42 PM.",
            Some(end_of(2026, 3, 10, 15, 42)),
        ),
        (
            "You've hit your usage limit. Try again at 12:05 AM.",
            Some(end_of(2026, 3, 11, 0, 5)),
        ),
        ("You've hit your usage limit. Try again later.", None),
        ("Quota exceeded. Check your plan and billing details.", None),
    ] {
        let out =
            serde_json::json!({"type": "turn.failed", "error": {"message": message}}).to_string();
        let p = parse(Parser::CodexJsonl, &out, &now());
        let limit = p
            .usage_limit
            .unwrap_or_else(|| panic!("{message}: no usage limit"));
        assert_eq!(limit.resets_at, want, "{message}");
    }
}

#[test]
fn a_time_without_a_zone_is_the_machines_local_time() {
    let recife = Now {
        at: jiff::Timestamp::try_from(noon()).unwrap(),
        zone: TimeZone::get("America/Recife").unwrap(),
    };
    let out = r#"{"type":"result","subtype":"success","is_error":true,"result":"You've hit your limit · resets 3pm"}"#;
    let limit = parse(Parser::ClaudeJson, out, &recife).usage_limit.unwrap();
    // 3 pm in Recife (UTC-3) is 18:00 UTC.
    assert_eq!(limit.resets_at, Some(end_of(2026, 3, 10, 18, 0)));
}

#[test]
fn a_reset_past_the_calendar_is_the_calendars_end_not_a_panic() {
    for message in [
        "You've hit your usage limit. Try again in 200000000000000 days.",
        "You've hit your usage limit. Try again in 99999999999999999999999 hours.",
    ] {
        let out = format!("{{\"type\":\"turn.failed\",\"error\":{{\"message\":\"{message}\"}}}}\n");
        let limit = parse(Parser::CodexJsonl, &out, &now()).usage_limit.unwrap();
        assert_eq!(
            limit.resets_at,
            Some(jiff::Timestamp::MAX.into()),
            "{message}"
        );
    }
}

#[test]
fn a_month_day_already_past_is_next_year() {
    let new_years_eve = Now::utc(at(2026, 12, 30, 12, 0));
    let out = r#"{"type":"result","subtype":"success","is_error":true,"result":"You've hit your limit · resets Jan 2 at 4pm (UTC)"}"#;
    let limit = parse(Parser::ClaudeJson, out, &new_years_eve)
        .usage_limit
        .unwrap();
    assert_eq!(limit.resets_at, Some(end_of(2027, 1, 2, 16, 0)));
}

/// Claude Code's result for a limit, as 2.1.328 prints it.
fn claude_limited(message: &str) -> String {
    serde_json::json!({
        "type": "result", "subtype": "success", "is_error": true, "result": message,
        "api_error_status": 429, "session_id": "s", "total_cost_usd": 0,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    })
    .to_string()
}

#[test]
fn every_claude_limit_name_is_a_usage_limit_with_its_reset() {
    let cases = [
        // The subscription's most common one; 6:04 is long past at noon, so tomorrow.
        (
            "You've hit your 5-hour limit · resets 6:04am (UTC)",
            Some(end_of(2026, 3, 11, 6, 4)),
        ),
        (
            "You've hit your weekly limit · resets Mar 13 at 6am (UTC)",
            Some(end_of(2026, 3, 13, 6, 0)),
        ),
        (
            "You've hit your Opus limit · resets 3pm (UTC)",
            Some(end_of(2026, 3, 10, 15, 0)),
        ),
        (
            "You've hit your Sonnet limit · resets 3:30pm",
            Some(end_of(2026, 3, 10, 15, 30)),
        ),
        (
            "You've hit your session limit · resets 1pm (UTC)",
            Some(end_of(2026, 3, 10, 13, 0)),
        ),
        (
            "You're out of extra usage · resets 4pm (UTC)",
            Some(end_of(2026, 3, 10, 16, 0)),
        ),
    ];
    for (message, want) in cases {
        let p = parse(Parser::ClaudeJson, &claude_limited(message), &now());
        let limit = p
            .usage_limit
            .unwrap_or_else(|| panic!("{message}: no usage limit"));
        assert_eq!(limit.resets_at, want, "{message}");
        assert!(!limit.lasting, "{message}");
    }
}

#[test]
fn spend_limits_and_spent_credits_are_limits_no_wait_ends() {
    for message in [
        "You've hit your usage credit limit",
        "You've hit your monthly spend limit.",
        "You've hit your org's monthly spend limit",
        "You've hit your channel's monthly spend limit.",
        "Credit balance is too low",
        "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.",
    ] {
        let p = parse(Parser::ClaudeJson, &claude_limited(message), &now());
        let limit = p
            .usage_limit
            .unwrap_or_else(|| panic!("{message}: no usage limit"));
        assert!(limit.lasting, "{message}");
        assert_eq!(limit.resets_at, None, "{message}");
    }
    // A spend limit whose reset is printed is waited for like any other.
    let p = parse(
        Parser::ClaudeJson,
        &claude_limited("You've hit your monthly spend limit · resets Apr 1 at 12am (UTC)"),
        &now(),
    );
    let limit = p.usage_limit.unwrap();
    assert!(!limit.lasting);
    assert_eq!(limit.resets_at, Some(end_of(2026, 4, 1, 0, 0)));
}

#[test]
fn claudes_api_error_field_names_a_limit_its_text_does_not() {
    let out = serde_json::json!({
        "type": "result", "subtype": "success", "is_error": true,
        "result": "Something went wrong · resets 3pm (UTC)",
        "api_error": "usage_limit_reached", "api_error_status": 429,
    })
    .to_string();
    let limit = parse(Parser::ClaudeJson, &out, &now()).usage_limit.unwrap();
    assert_eq!(limit.resets_at, Some(end_of(2026, 3, 10, 15, 0)));
}

#[test]
fn api_key_rate_limits_stay_transient_failures() {
    for message in [
        r#"API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit (https://docs.claude.com/en/api/rate-limits)"},"request_id":"req_1"}"#,
        "API Error: 429 Too Many Requests",
        "API Error: Rate limit reached",
        r#"API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    ] {
        let p = parse(Parser::ClaudeJson, &claude_limited(message), &now());
        assert!(p.error.is_some(), "{message}");
        assert_eq!(p.usage_limit, None, "{message}");
    }
    let out = serde_json::json!({"type": "turn.failed", "error": {"message": "exceeded retry limit, last status: 429 Too Many Requests"}}).to_string();
    assert_eq!(parse(Parser::CodexJsonl, &out, &now()).usage_limit, None);
}

#[test]
fn a_reset_minute_just_past_by_this_clock_is_a_minute_away_not_tomorrow() {
    // Woken at the end of the minute, the agent's provider still says 12:00: the clocks
    // differ by seconds.
    let later = Now::utc(at(2026, 3, 10, 12, 1) + Duration::from_secs(30));
    for (parser, out) in [
        (
            Parser::ClaudeJson,
            claude_limited("You've hit your 5-hour limit · resets 12pm (UTC)"),
        ),
        (
            Parser::CodexJsonl,
            serde_json::json!({"type": "turn.failed", "error": {"message": "You've hit your usage limit. Try again at 12:00 PM."}}).to_string(),
        ),
    ] {
        let limit = parse(parser, &out, &later).usage_limit.unwrap();
        assert_eq!(
            limit.resets_at,
            Some(at(2026, 3, 10, 12, 2) + Duration::from_secs(30)),
            "{out}"
        );
    }
}

#[test]
fn claudes_refused_tool_uses_are_named_with_what_they_were_for() {
    let out = serde_json::json!({
        "type": "result", "subtype": "success", "is_error": false, "result": "I could not write it.",
        "permission_denials": [
            {"tool_name": "Write", "tool_use_id": "toolu_1", "tool_input": {"file_path": "/home/u/elsewhere/x.txt", "content": "x"}},
            {"tool_name": "Bash", "tool_use_id": "toolu_2", "tool_input": {"command": "rm -rf build\nls"}},
            {"tool_name": "mcp__thing", "tool_use_id": "toolu_3", "tool_input": {}},
        ],
    })
    .to_string();
    let p = parse(Parser::ClaudeJson, &out, &now());
    assert_eq!(p.error, None);
    assert_eq!(
        p.denials,
        [
            "Write /home/u/elsewhere/x.txt",
            "Bash rm -rf build ls",
            "mcp__thing"
        ]
    );
    assert!(
        parse(Parser::ClaudeJson, CLAUDE_OK, &now())
            .denials
            .is_empty()
    );
}

#[test]
fn codex_refusals_told_only_on_stderr_are_denials() {
    let stderr = "2026-12-01T14:42:04.122084Z ERROR codex_core::tools::router: error=patch rejected: writing outside of the project; rejected by user approval settings\n2026-12-01T14:42:05Z WARN codex_core::exec: error=exit code 1\nReading prompt from stdin...\n";
    assert_eq!(
        stderr_denials(Parser::CodexJsonl, stderr),
        ["patch rejected: writing outside of the project; rejected by user approval settings"]
    );
    assert!(stderr_denials(Parser::ClaudeJson, stderr).is_empty());
}
