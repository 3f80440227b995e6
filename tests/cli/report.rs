//! What the report and the terminal say about a run: goal texts and titles shown literally in
//! the Markdown and the graphs, what needs a human before the summary, a failed attempt's last
//! lines of stderr (secrets hidden), the run's totals, and a line per model retry.

use serde_json::{Value, json};

use crate::fake_llm::{FakeLlm, Reply, Request, has_tool, planned_goal};
use crate::{TestRepo, assert_exit, outside, stderr, stdout};

/// A secret in the environment that a failing agent prints.
const TOKEN: &str = "tok-canary-5551234567";

/// An `exec:` agent: a prompt holding `FAIL` writes 30 numbered lines to stderr, the last with
/// `$FOO_TOKEN` in it, and exits 3; `REDUCE` answers with the deliverable; anything else is
/// done at once.
const AGENT: &str = r##"prompt=$(cat)
case "$prompt" in
  *FAIL*)
    for i in $(seq -w 1 30); do echo "stderr line $i" >&2; done
    echo "the token was $FOO_TOKEN" >&2
    exit 3 ;;
  *REDUCE*) echo "# Result of B" ;;
  *) echo "ok" ;;
esac
"##;

fn tool_call(name: &str, args: Value) -> Reply {
    Reply::ToolCalls(vec![("call-1".into(), name.into(), args)])
}

/// Goal A's writer fails; goal B's reader and reducer finish. Titles and goal texts hold
/// what Markdown and Mermaid would read as markup.
fn plans(req: &Request) -> Reply {
    if planned_goal(req).contains("GOAL-A") {
        tool_call(
            "submit_plan",
            json!({"tasks": [
                {"id": "aw", "prompt": "FAIL now", "deps": [], "lane": "coder",
                 "title": "Break <main> & \"quote\" it"},
                {"id": "ar", "prompt": "REDUCE A", "deps": ["aw"], "lane": "reducer"},
            ]}),
        )
    } else {
        tool_call(
            "submit_plan",
            json!({"tasks": [
                {"id": "bw", "prompt": "look", "deps": [], "lane": "analyst",
                 "title": "Read `Vec<String>` | pipes"},
                {"id": "br", "prompt": "REDUCE B", "deps": ["bw"], "lane": "reducer"},
            ]}),
        )
    }
}

#[test]
fn a_report_shows_goal_texts_and_titles_literally_and_what_needs_attention_first() {
    let repo = TestRepo::new();
    let agent = outside(&repo, "agent.sh");
    std::fs::write(&agent, AGENT).unwrap();
    let llm = FakeLlm::start(|req, _| {
        if has_tool(req, "submit_dependencies") {
            return tool_call("submit_dependencies", json!({"dependencies": []}));
        }
        plans(req)
    });
    let report = outside(&repo, "report.md");

    let out = repo
        .swarm_cmd()
        .env("SWARM_API_BASE", llm.base_url())
        .env("SWARM_AGENT", format!("exec:sh {}", agent.display()))
        .env("FOO_TOKEN", TOKEN)
        .args([
            "--goal",
            "GOAL-A: Keep <main> and Vec<String>",
            "--goal",
            "GOAL-B: read [the] *docs*",
            "--retries",
            "0",
            "--json",
            "--final-out",
            report.to_str().unwrap(),
        ])
        .output()
        .unwrap();

    assert_exit(&out, 1);
    let text = std::fs::read_to_string(&report).unwrap();
    // Markdown: the goal's text and the titles as entities and escapes, never as tags.
    assert!(
        text.contains("## Goal g1: GOAL-A: Keep &lt;main&gt; and Vec&lt;String&gt;"),
        "{text}"
    );
    assert!(
        text.contains("## Goal g2: GOAL-B: read \\[the\\] \\*docs\\*"),
        "{text}"
    );
    assert!(
        text.contains("| `g1.aw` — Break &lt;main&gt; &amp; \"quote\" it | coder |"),
        "{text}"
    );
    assert!(
        text.contains("| `g2.bw` — Read \\`Vec&lt;String&gt;\\` \\| pipes | analyst |"),
        "{text}"
    );
    // Mermaid: entity codes inside the quoted labels.
    assert!(
        text.contains("g1[\"g1: GOAL-A: Keep #lt;main#gt; and Vec#lt;String#gt;<br/>failed\"]"),
        "{text}"
    );
    assert!(
        text.contains("[\"g1.aw — Break #lt;main#gt; #amp; #quot;quote#quot; it<br/>failed\"]"),
        "{text}"
    );
    // Outside the stderr block, nothing is left for a renderer to take for a tag.
    assert!(
        !text.contains("<main>") && !text.contains("<String>"),
        "{text}"
    );

    // The deliverables, then what needs a human, then the summary with its table.
    let deliverable = text.find("# Result of B").expect("goal B's deliverable");
    let attention = text.find("## Needs attention").expect("Needs attention");
    let table = text.find("| task |").expect("the task table");
    assert!(deliverable < attention && attention < table, "{text}");
    let needs = &text[attention..text.find("## Run summary").unwrap()];
    assert!(needs.contains("- `g1.aw` — Break &lt;main&gt;"), "{needs}");
    assert!(
        needs.contains("failed after 1 attempt: exit code 3"),
        "{needs}"
    );
    assert!(needs.contains("stderr line 30"), "{needs}");

    // Totals: wall time and the planner's tokens, in the report and the JSON summary.
    assert!(text.contains("Wall time "), "{text}");
    assert!(
        text.contains(" for planning; cost of the tasks: "),
        "{text}"
    );
    let summary: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let totals = &summary["totals"];
    assert!(totals["planning_tokens"].as_u64().unwrap() > 0, "{summary}");
    assert!(totals["elapsed_ms"].as_u64().is_some(), "{summary}");
    assert_eq!(totals["task_tokens"], 0, "{summary}");

    // `swarm graph` names the tasks the same way, in Mermaid and in DOT.
    let graph = repo.swarm(&["graph"]);
    assert_exit(&graph, 0);
    assert!(
        stdout(&graph)
            .contains("[\"g2.bw — Read #96;Vec#lt;String#gt;#96; #124; pipes<br/>done\"]"),
        "{}",
        stdout(&graph)
    );
    let dot = repo.swarm(&["graph", "--format", "dot"]);
    assert_exit(&dot, 0);
    assert!(
        stdout(&dot).contains("[label=\"g1.aw — Break <main> & \\\"quote\\\" it\\nfailed\""),
        "{}",
        stdout(&dot)
    );
}

#[test]
fn a_failed_attempt_shows_its_last_twenty_lines_of_stderr_with_secrets_hidden() {
    let repo = TestRepo::new();
    let agent = outside(&repo, "agent.sh");
    std::fs::write(&agent, AGENT).unwrap();
    let tasks = repo.tasks(&[r#"{"id": "noisy", "prompt": "FAIL please"}"#]);
    let report = outside(&repo, "report.md");

    let out = repo
        .swarm_cmd()
        .env("FOO_TOKEN", TOKEN)
        .args(["run", tasks.to_str().unwrap(), "--retries", "1"])
        .args(["--agent", &format!("exec:sh {}", agent.display())])
        .args(["--final-out", report.to_str().unwrap()])
        .output()
        .unwrap();

    assert_exit(&out, 1);
    let err = stderr(&out);
    let text = std::fs::read_to_string(&report).unwrap();
    for (name, shown) in [("stderr", &err), ("report", &text)] {
        // Lines 12 to 30 and the token line: the last 20, under the failure.
        for n in 12..=30 {
            assert!(
                shown.contains(&format!("stderr line {n}")),
                "{name}: {shown}"
            );
        }
        assert!(!shown.contains("stderr line 11"), "{name}: {shown}");
        assert!(!shown.contains("stderr line 01"), "{name}: {shown}");
        assert!(
            shown.contains("the token was [redacted]"),
            "{name}: {shown}"
        );
        assert!(!shown.contains(TOKEN), "{name}: {shown}");
    }
    // On the terminal: each failure, its lines indented under it, then the retry on a line of
    // its own.
    let failed = err
        .find("      Failed noisy after ")
        .or_else(|| err.find("      Failed noisy in "))
        .expect("a failure line");
    let retry = err
        .find("    Retrying noisy: attempt 2 in ")
        .expect("a retry line");
    let tail = err
        .find("\n              the token was [redacted]\n")
        .unwrap();
    assert!(failed < tail && tail < retry, "{err}");
    assert!(err.contains("(retry 1 of 1)"), "{err}");
    assert_eq!(err.matches("the token was").count(), 2, "{err}");
    // In the report, once, in a block under the failure.
    assert_eq!(text.matches("the token was").count(), 1, "{text}");
    assert!(
        text.contains("  The end of attempt 2's stderr:\n\n  ```text\n  stderr line 12\n"),
        "{text}"
    );
}

#[test]
fn a_transcript_past_its_cap_keeps_its_first_and_last_lines_and_marks_the_cut() {
    let repo = TestRepo::new();
    // Some 26 MB on stderr, one line at a time, then a result and a failure.
    let tasks = repo.tasks(&[
        r#"{"id": "noisy", "run": "echo 'first line' >&2; seq -f 'filler line %.0f' 1 1500000 >&2; echo 'last line' >&2; echo result; exit 3", "mode": "read"}"#,
    ]);
    let out = repo
        .swarm_cmd()
        .env("SWARM_TRANSCRIPT_CAP", "1MiB")
        .args(["run", tasks.to_str().unwrap(), "--retries", "0"])
        .output()
        .unwrap();

    assert_exit(&out, 1);
    let run = crate::run_id(&repo);
    let path = repo
        .swarm_dir()
        .join("runs")
        .join(run)
        .join("attempts/noisy.1.log");
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size <= (1 << 20) + 16 * 1024, "{size} bytes");
    let text = std::fs::read_to_string(&path).unwrap();
    let stderr_part = text
        .split_once("--- stderr ---\n")
        .and_then(|(_, rest)| rest.split_once("--- stdout ---\n"))
        .map(|(stderr, _)| stderr)
        .unwrap();
    assert!(
        stderr_part.starts_with("first line\nfiller line 1\nfiller line 2\n"),
        "{}",
        &stderr_part[..100]
    );
    assert!(
        stderr_part.ends_with("filler line 1500000\nlast line\n"),
        "{}",
        &stderr_part[stderr_part.len() - 100..]
    );
    let cut = regex::Regex::new(r"\n\[… (\d+) bytes cut …\]\nfiller line \d+\n").unwrap();
    let cut: u64 = cut.captures(stderr_part).unwrap()[1].parse().unwrap();
    assert!(cut > 24_000_000, "{cut}");
    assert!(
        text.contains("--- stdout ---\nresult\n"),
        "{}",
        &text[text.len() - 300..]
    );

    // The failure's last lines, on the terminal and in `swarm show`.
    let said = stderr(&out);
    assert!(
        said.contains("filler line 1500000") && said.contains("last line"),
        "{said}"
    );
    let shown = repo.swarm(&["show", "noisy"]);
    assert_exit(&shown, 0);
    assert!(
        stdout(&shown).contains("  last line\n"),
        "{}",
        stdout(&shown)
    );
}

#[test]
fn model_retries_of_the_planner_and_of_a_task_are_one_line_each() {
    let repo = TestRepo::new();
    let llm = FakeLlm::start(|req, n| {
        // The first planning request and the first request of the task are refused.
        if n == 0 || n == 2 {
            return Reply::error(500, "the server is having a day");
        }
        if has_tool(req, "submit_plan") {
            return tool_call(
                "submit_plan",
                json!({"tasks": [
                    {"id": "only", "prompt": "say hi", "deps": [], "lane": "reducer"},
                ]}),
            );
        }
        Reply::text("hi")
    });

    let out = repo
        .swarm_cmd()
        .env("SWARM_API_BASE", llm.base_url())
        .env("SWARM_API_KEY", "sk-test-key-0123456789")
        .args(["--goal", "Say hi"])
        .output()
        .unwrap();

    assert_exit(&out, 0);
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("model retry")).collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with("    Retrying planning: model retry 2/"),
        "{err}"
    );
    assert!(
        lines[1].starts_with("    Retrying only: model retry 2/"),
        "{err}"
    );
    assert!(lines.iter().all(|l| l.contains("s: ")), "{err}");
}

#[test]
fn a_failed_check_shows_the_end_of_its_own_stderr() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[
        r#"{"id": "w", "run": "echo agent-noise >&2; echo x > x.txt", "check": "echo check-says-no >&2; exit 1"}"#,
    ]);

    let out = repo.swarm(&["run", tasks.to_str().unwrap(), "--retries", "0"]);

    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(err.contains("\n              check-says-no\n"), "{err}");
    assert!(!err.contains("agent-noise"), "{err}");
    let text = crate::run_report(&repo);
    assert!(text.contains("  check-says-no\n"), "{text}");
}
