//! Fake `claude` and `codex` executables (POSIX sh) to put first on PATH, so swarm's CLI
//! agents can be tested without the real CLIs, accounts or network.
//!
//! They behave like the real CLIs in the ways swarm relies on:
//! - the prompt is read from stdin to EOF before anything else (a stdin never closed hangs them,
//!   as it hangs the real ones);
//! - `claude` needs `-p`; `--output-format json` prints one result object, `stream-json` (which
//!   needs `--verbose`, as the real one does) prints JSONL ending with it, anything else plain
//!   text. `--permission-mode acceptEdits`/`bypassPermissions` or
//!   `--dangerously-skip-permissions` make it a writer.
//! - `codex` needs `exec`; `--json` prints JSONL events, else the last message as text.
//!   `--sandbox workspace-write`/`danger-full-access`, `--full-auto` or
//!   `--dangerously-bypass-approvals-and-sandbox` make it a writer; `-C DIR` changes directory;
//!   a prompt argument other than `-` is used instead of stdin.
//! - a writer appends a line to the file named by the prompt's first `FILE: path` line
//!   (`AGENT_EDITS.md` by default); the line is the prompt's `EDIT: text` line, or
//!   `<agent> edit for <SWARM_TASK_ID>`. A reader never writes. The answer is the prompt's
//!   `RESULT: text` line, or a sentence naming the agent and the file.
//!
//! Formats, as researched for `src/agent/cli.rs`:
//! - Claude Code result object: <https://code.claude.com/docs/en/headless>,
//!   <https://dev.to/aobaworks/claude-code-output-format-json-fields-jq-python-parsing-3edj>,
//!   the stream-json cheatsheet at
//!   <https://takopi.banteg.xyz/reference/runners/claude/stream-json-cheatsheet>; exit 0 with
//!   `is_error: true`: anthropics/claude-code#79500; usage-limit text
//!   `Claude AI usage limit reached|<unix seconds>`: anthropics/claude-code#2087, #11429;
//!   stream-json needing `--verbose`: docs.rs `mur-common` `cli_backend::CLAUDE`.
//! - Codex `exec --json` events: openai/codex `codex-rs/exec/src/exec_events.rs` and
//!   `event_processor_with_jsonl_output.rs`; sample runs in nexu-io/open-design#2268; the
//!   usage-limit message: `codex-rs/core/src/error.rs` and openai/codex#3124, #3899.
//!
//! Behaviour per call, chosen by (first match wins) a `FAKE_MODE: <mode>` line in the prompt,
//! then the file `<state>/<agent>.mode` (`FakeAgents::set_mode`), then `ok`:
//! - `ok`: a normal run (writers edit); `wait-stdin` is the same, named for tests that prove
//!   swarm closes stdin;
//! - `error-exit-0`: an error reported in the output with exit status 0 (claude: `is_error`
//!   result; codex: `error` then `turn.failed`);
//! - `usage-limit`: claude: `Claude AI usage limit reached|<now+3>` with `is_error`, exit 0
//!   (a `RESET_IN: <seconds>` line in the prompt moves the reset);
//!   codex: `error` and `turn.failed` saying `You've hit your usage limit. Try again in 3
//!   seconds.`, exit 1 (real codex prints minutes or a clock time; seconds keep tests fast);
//! - `hang-after-result`: a normal run, then `sleep 600`;
//! - `grandchild`: starts `sleep 600` in the background holding stdout, then a normal run;
//! - `exit-1`: a crash: a line on stderr, nothing on stdout, exit status 1;
//! - `<mode>-once`: `<mode>` on the first call per task (`SWARM_TASK_ID`, or any task when
//!   unset) since the mode was set, `ok` afterwards.
//!
//! Every call appends one JSON line to `<state>/<agent>.log` (see `FakeAgents::invocations`)
//! and keeps its prompt in `<state>/<agent>.<n>.prompt`.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The fakes, by name.
pub const AGENTS: [&str; 2] = ["claude", "codex"];

/// Variables whose presence every call records (never their values: some are secrets).
const WATCHED_ENV: &str = "SWARM_API_KEY OPENAI_API_KEY ANTHROPIC_API_KEY CODEX_API_KEY \
    SWARM_RUN_ID SWARM_TASK_ID SWARM_MODE SWARM_ACTIVE SWARM_DEPS_DIR GIT_DIR GIT_WORK_TREE \
    GIT_INDEX_FILE CLAUDECODE";

/// Installed fakes: `bin` holds the executables, `state` their mode files, counters and logs.
pub struct FakeAgents {
    pub bin: PathBuf,
    pub state: PathBuf,
}

impl FakeAgents {
    /// Writes `claude` and `codex` into `<dir>/bin`, with their state in `<dir>/state`.
    pub fn install(dir: &Path) -> Self {
        use std::os::unix::fs::PermissionsExt as _;
        let bin = dir.join("bin");
        let state = dir.join("state");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&state).unwrap();
        let state_text = state.to_str().expect("a UTF-8 state path");
        assert!(
            !state_text.contains('\''),
            "the state path is quoted with single quotes"
        );
        for agent in AGENTS {
            let script = SCRIPT
                .replace("@AGENT@", agent)
                .replace("@STATE@", state_text)
                .replace("@WATCHED_ENV@", WATCHED_ENV);
            // Written under another name and renamed, so no caller ever runs half a script.
            let tmp = bin.join(format!(".{agent}.tmp"));
            std::fs::write(&tmp, script).unwrap();
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::fs::rename(&tmp, bin.join(agent)).unwrap();
        }
        Self { bin, state }
    }

    /// `PATH` with the fakes first.
    pub fn path_env(&self) -> String {
        let rest = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_owned());
        format!("{}:{rest}", self.bin.display())
    }

    /// Sets the mode of every later call of `agent` (see the module doc) and forgets which
    /// `-once` failures were spent.
    pub fn set_mode(&self, agent: &str, mode: &str) {
        std::fs::write(
            self.state.join(format!("{agent}.mode")),
            format!("{mode}\n"),
        )
        .unwrap();
        for entry in std::fs::read_dir(&self.state).unwrap().flatten() {
            let name = entry.file_name();
            if name
                .to_str()
                .is_some_and(|n| n.starts_with(&format!("{agent}.once.")))
            {
                std::fs::remove_dir(entry.path()).unwrap();
            }
        }
    }

    /// One JSON object per call so far, oldest first: `agent`, `n` (1-based), `mode`,
    /// `writer`, `args`, `cwd`, `env` (watched variable → present), `task_id`, `swarm_mode`,
    /// `stdin_bytes`, `prompt_file` and, in `grandchild` mode, `grandchild_pid`.
    pub fn invocations(&self, agent: &str) -> Vec<Value> {
        let Ok(text) = std::fs::read_to_string(self.state.join(format!("{agent}.log"))) else {
            return Vec::new();
        };
        text.lines()
            .map(|line| {
                serde_json::from_str(line).unwrap_or_else(|e| panic!("bad log line {line:?}: {e}"))
            })
            .collect()
    }

    /// The prompt call `n` (1-based) of `agent` received.
    pub fn prompt(&self, agent: &str, n: u64) -> String {
        std::fs::read_to_string(self.state.join(format!("{agent}.{n}.prompt"))).unwrap()
    }
}

/// Both fakes: `@AGENT@` picks the behaviour, `@STATE@` is the state directory.
const SCRIPT: &str = r#"#!/bin/sh
# Fake @AGENT@ CLI for swarm's tests; see tests/cli/fake_agents.rs.
AGENT=@AGENT@
STATE='@STATE@'

json_str() {
    printf '%s' "$1" | tr '\n\r\t' '   ' | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g'
}

# Arguments, as the real CLI reads them.
WRITER=false
FORMAT=text
VERBOSE=no
PRINT=no
PROMPT_ARG=
prev=
first=yes
for a in "$@"; do
    if [ "$AGENT" = codex ] && [ "$first" = yes ]; then
        first=no
        if [ "$a" != exec ]; then
            echo "fake codex: only 'codex exec' is faked, got '$a'" >&2
            exit 2
        fi
        continue
    fi
    first=no
    case "$AGENT:$prev" in
        claude:--permission-mode)
            case "$a" in acceptEdits|bypassPermissions) WRITER=true ;; esac
            prev=; continue ;;
        claude:--output-format) FORMAT=$a; prev=; continue ;;
        codex:--sandbox|codex:-s)
            case "$a" in workspace-write|danger-full-access) WRITER=true ;; esac
            prev=; continue ;;
        codex:-C|codex:--cd)
            cd "$a" || exit 1
            prev=; continue ;;
        codex:-m|codex:--model|codex:-c|codex:--config|codex:-p|codex:--profile|codex:-o|codex:--output-last-message|codex:--color|codex:-i|codex:--image|codex:--output-schema)
            prev=; continue ;;
        claude:--model|claude:--max-turns|claude:--append-system-prompt|claude:--system-prompt)
            prev=; continue ;;
    esac
    case "$AGENT:$a" in
        claude:-p|claude:--print) PRINT=yes ;;
        claude:--verbose) VERBOSE=yes ;;
        claude:--dangerously-skip-permissions) WRITER=true ;;
        codex:--json|codex:--experimental-json) FORMAT=json ;;
        codex:--full-auto|codex:--dangerously-bypass-approvals-and-sandbox) WRITER=true ;;
        codex:-) ;;
        codex:-*) ;;
        codex:*) PROMPT_ARG=$a ;;
    esac
    prev=$a
done
if [ "$AGENT" = codex ] && [ "$first" = yes ]; then
    echo "fake codex: only 'codex exec' is faked" >&2
    exit 2
fi
if [ "$AGENT" = claude ] && [ "$PRINT" != yes ]; then
    echo "fake claude: only print mode (-p) is faked" >&2
    exit 2
fi
if [ "$AGENT" = claude ] && [ "$FORMAT" = stream-json ] && [ "$VERBOSE" != yes ]; then
    echo "Error: When using --print, --output-format=stream-json requires --verbose" >&2
    exit 1
fi

# The prompt, read to EOF first as the real CLIs do.
PROMPT_FILE="$STATE/$AGENT.$$.prompt"
if [ -n "$PROMPT_ARG" ]; then
    printf '%s\n' "$PROMPT_ARG" > "$PROMPT_FILE"
else
    cat > "$PROMPT_FILE"
fi
STDIN_BYTES=$(wc -c < "$PROMPT_FILE" | tr -d ' ')

lock() { while ! mkdir "$STATE/$AGENT.lock" 2>/dev/null; do sleep 0.01; done; }
unlock() { rmdir "$STATE/$AGENT.lock"; }

lock
N=$(( $(cat "$STATE/$AGENT.count" 2>/dev/null || echo 0) + 1 ))
echo "$N" > "$STATE/$AGENT.count"
unlock
mv "$PROMPT_FILE" "$STATE/$AGENT.$N.prompt"
PROMPT_FILE="$STATE/$AGENT.$N.prompt"

line_of() { sed -n "s/^$1: *//p" "$PROMPT_FILE" | head -n 1; }

MODE=$(line_of FAKE_MODE)
[ -n "$MODE" ] || MODE=$(head -n 1 "$STATE/$AGENT.mode" 2>/dev/null)
[ -n "$MODE" ] || MODE=ok
case "$MODE" in
    *-once)
        if mkdir "$STATE/$AGENT.once.${SWARM_TASK_ID:-any}" 2>/dev/null; then
            MODE=${MODE%-once}
        else
            MODE=ok
        fi ;;
esac

FILE=$(line_of FILE)
[ -n "$FILE" ] || FILE=AGENT_EDITS.md
EDIT=$(line_of EDIT)
[ -n "$EDIT" ] || EDIT="$AGENT edit for ${SWARM_TASK_ID:-a task}"
RESULT=$(line_of RESULT)
if [ -z "$RESULT" ]; then
    if [ "$WRITER" = true ]; then
        RESULT="fake $AGENT wrote $FILE"
    else
        RESULT="fake $AGENT read the task"
    fi
fi

GRANDCHILD=null
if [ "$MODE" = grandchild ]; then
    sleep 600 &
    GRANDCHILD=$!
fi

# The record of this call.
ARGS=
for a in "$@"; do
    ARGS="$ARGS${ARGS:+,}\"$(json_str "$a")\""
done
ENVS=
for v in @WATCHED_ENV@; do
    if eval "[ -n \"\${$v+x}\" ]"; then present=true; else present=false; fi
    ENVS="$ENVS${ENVS:+,}\"$v\":$present"
done
lock
printf '{"agent":"%s","n":%s,"mode":"%s","writer":%s,"args":[%s],"cwd":"%s","env":{%s},"task_id":"%s","swarm_mode":"%s","stdin_bytes":%s,"prompt_file":"%s","grandchild_pid":%s}\n' \
    "$AGENT" "$N" "$(json_str "$MODE")" "$WRITER" "$ARGS" "$(json_str "$(pwd)")" "$ENVS" \
    "$(json_str "${SWARM_TASK_ID:-}")" "$(json_str "${SWARM_MODE:-}")" "$STDIN_BYTES" \
    "$(json_str "$PROMPT_FILE")" "$GRANDCHILD" >> "$STATE/$AGENT.log"
unlock

if [ "$MODE" = exit-1 ]; then
    echo "fake $AGENT: crashed on purpose" >&2
    exit 1
fi

edit() {
    [ "$WRITER" = true ] || return 0
    case "$FILE" in
        /*|..|../*|*/../*|*/..) echo "fake $AGENT: refusing to write $FILE" >&2; exit 2 ;;
    esac
    mkdir -p "$(dirname "$FILE")"
    printf '%s\n' "$EDIT" >> "$FILE"
}

R=$(json_str "$RESULT")
F=$(json_str "$FILE")
RESET_IN=$(line_of RESET_IN)
[ -n "$RESET_IN" ] || RESET_IN=3
RESET=$(( $(date +%s) + RESET_IN ))

claude_result() { # subtype is_error result cost input output
    printf '{"type":"result","subtype":"%s","is_error":%s,"duration_ms":1234,"duration_api_ms":1100,"num_turns":2,"result":"%s","session_id":"fake-session-%s","total_cost_usd":%s,"usage":{"input_tokens":%s,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":%s},"permission_denials":[]}\n' \
        "$1" "$2" "$3" "$N" "$4" "$5" "$6"
}

claude_run() {
    case "$MODE" in
        error-exit-0) MSG='API Error: 500 {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal server error\"}}'; IS_ERROR=true ;;
        usage-limit) MSG="Claude AI usage limit reached|$RESET"; IS_ERROR=true ;;
        *) edit; MSG=$R; IS_ERROR=false ;;
    esac
    if [ "$IS_ERROR" = true ] && [ "$FORMAT" = text ]; then
        printf '%s\n' "$(printf '%s' "$MSG" | sed 's/\\"/"/g')"
        return
    fi
    case "$FORMAT" in
        text) printf '%s\n' "$RESULT" ;;
        stream-json)
            printf '{"type":"system","subtype":"init","cwd":"%s","session_id":"fake-session-%s","tools":["Read","Grep","Glob","Edit","Write","Bash"],"mcp_servers":[],"model":"fake-claude","permissionMode":"default","apiKeySource":"none"}\n' \
                "$(json_str "$(pwd)")" "$N"
            if [ "$IS_ERROR" = false ]; then
                printf '{"type":"assistant","message":{"id":"msg_fake_%s","type":"message","role":"assistant","model":"fake-claude","content":[{"type":"text","text":"%s"}],"usage":{"input_tokens":100,"output_tokens":50}},"parent_tool_use_id":null,"session_id":"fake-session-%s"}\n' \
                    "$N" "$MSG" "$N"
                claude_result success false "$MSG" 0.0125 100 50
            else
                claude_result success true "$MSG" 0 0 0
            fi ;;
        *)
            if [ "$IS_ERROR" = false ]; then
                claude_result success false "$MSG" 0.0125 100 50
            else
                claude_result success true "$MSG" 0 0 0
            fi ;;
    esac
}

codex_run() {
    if [ "$FORMAT" = json ]; then
        printf '{"type":"thread.started","thread_id":"fake-thread-%s"}\n{"type":"turn.started"}\n' "$N"
    fi
    case "$MODE" in
        error-exit-0|usage-limit)
            if [ "$MODE" = usage-limit ]; then
                MSG="You've hit your usage limit. Try again in $RESET_IN seconds."
                STATUS=1
            else
                MSG="unexpected status 500 Internal Server Error: fake failure"
                STATUS=0
            fi
            if [ "$FORMAT" = json ]; then
                printf '{"type":"error","message":"%s"}\n{"type":"turn.failed","error":{"message":"%s"}}\n' "$MSG" "$MSG"
            else
                printf 'ERROR: %s\n' "$MSG" >&2
            fi
            return $STATUS ;;
    esac
    edit
    if [ "$FORMAT" != json ]; then
        printf '%s\n' "$RESULT"
        return 0
    fi
    printf '{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Reading the task**"}}\n'
    if [ "$WRITER" = true ]; then
        printf '{"type":"item.completed","item":{"id":"item_1","type":"file_change","changes":[{"path":"%s","kind":"update"}],"status":"completed"}}\n' "$F"
    fi
    printf '{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"%s"}}\n' "$R"
    printf '{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":200,"output_tokens":150}}\n'
}

if [ "$AGENT" = claude ]; then
    claude_run
    STATUS=$?
else
    codex_run
    STATUS=$?
fi
if [ "$MODE" = hang-after-result ]; then
    sleep 600
fi
exit $STATUS
"#;

#[cfg(test)]
mod tests {
    use std::fs::File;
    use std::io::Write as _;
    use std::os::unix::process::CommandExt as _;
    use std::path::Path;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

    use nix::sys::signal::{Signal, kill, killpg};
    use nix::unistd::Pid;
    use serde_json::Value;
    use swarm::agent::cli::{Parser, claude_profile, codex_profile, parse};

    use super::FakeAgents;

    struct Setup {
        _tmp: tempfile::TempDir,
        fakes: FakeAgents,
        work: std::path::PathBuf,
    }

    fn setup() -> Setup {
        let tmp = tempfile::tempdir().unwrap();
        let fakes = FakeAgents::install(tmp.path());
        let work = tmp.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        Setup {
            _tmp: tmp,
            fakes,
            work,
        }
    }

    struct Run {
        code: Option<i32>,
        stdout: String,
        elapsed: Duration,
    }

    impl Setup {
        fn command(&self, agent: &str, args: &[String]) -> Command {
            let mut cmd = Command::new(agent);
            cmd.args(args)
                .current_dir(&self.work)
                .env("PATH", self.fakes.path_env())
                .env_remove("SWARM_API_KEY")
                .env_remove("OPENAI_API_KEY")
                .env_remove("SWARM_TASK_ID")
                .env_remove("GIT_DIR");
            cmd
        }

        /// Runs a fake with `prompt` on stdin and stdout in a file (a pipe would wait for a
        /// grandchild holding it).
        fn run(&self, agent: &str, args: &[String], prompt: &str) -> Run {
            self.run_with(self.command(agent, args), prompt)
        }

        fn run_with(&self, mut cmd: Command, prompt: &str) -> Run {
            let out_path = self.work.parent().unwrap().join("stdout");
            let out = File::create(&out_path).unwrap();
            let started = Instant::now();
            let mut child = cmd
                .stdin(Stdio::piped())
                .stdout(Stdio::from(out))
                .spawn()
                .unwrap();
            // A fake that refuses its arguments exits before reading: a broken pipe is fine.
            let _ = child.stdin.take().unwrap().write_all(prompt.as_bytes());
            let status = child.wait().unwrap();
            Run {
                code: status.code(),
                stdout: std::fs::read_to_string(&out_path).unwrap(),
                elapsed: started.elapsed(),
            }
        }

        fn file(&self, rel: &str) -> Option<String> {
            std::fs::read_to_string(self.work.join(rel)).ok()
        }
    }

    fn json_lines(stdout: &str) -> Vec<Value> {
        stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
            .collect()
    }

    fn now() -> SystemTime {
        SystemTime::now()
    }

    #[test]
    fn fake_agents_claude_writer_edits_the_named_file_and_reports_usage() {
        let s = setup();
        let prompt = "Do the thing.\nFILE: notes/a.md\nRESULT: wrote \"a\"\n";
        let run = s.run("claude", &claude_profile().writer_args, prompt);
        assert_eq!(run.code, Some(0));
        let v: Value = serde_json::from_str(run.stdout.trim()).unwrap();
        assert_eq!(v["type"], "result");
        assert_eq!(v["subtype"], "success");
        assert_eq!(v["is_error"], false);
        assert_eq!(v["result"], "wrote \"a\"");
        assert!(v["usage"]["input_tokens"].as_u64().unwrap() > 0);
        assert!(v["total_cost_usd"].as_f64().unwrap() > 0.0);
        assert_eq!(s.file("notes/a.md").unwrap(), "claude edit for a task\n");
        let p = parse(Parser::ClaudeJson, &run.stdout, now());
        assert_eq!((p.error, p.complete, p.tokens), (None, true, 150));
        assert_eq!(p.result, "wrote \"a\"");
    }

    #[test]
    fn fake_agents_readers_never_write() {
        let s = setup();
        let claude = s.run("claude", &claude_profile().reader_args, "FILE: x.md\n");
        let codex = s.run("codex", &codex_profile().reader_args, "FILE: x.md\n");
        assert_eq!((claude.code, codex.code), (Some(0), Some(0)));
        assert_eq!(s.file("x.md"), None);
        assert_eq!(s.file("AGENT_EDITS.md"), None);
        assert_eq!(s.fakes.invocations("claude")[0]["writer"], false);
        assert_eq!(s.fakes.invocations("codex")[0]["writer"], false);
        assert_eq!(
            parse(Parser::ClaudeJson, &claude.stdout, now()).result,
            "fake claude read the task"
        );
        assert_eq!(
            parse(Parser::CodexJsonl, &codex.stdout, now()).result,
            "fake codex read the task"
        );
    }

    #[test]
    fn fake_agents_codex_writer_prints_events_and_edits() {
        let s = setup();
        let run = s.run(
            "codex",
            &codex_profile().writer_args,
            "EDIT: one line\nplease\n",
        );
        assert_eq!(run.code, Some(0));
        let events = json_lines(&run.stdout);
        let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(types.first(), Some(&"thread.started"));
        assert_eq!(types.last(), Some(&"turn.completed"));
        assert!(events.iter().any(|e| e["item"]["type"] == "file_change"));
        assert_eq!(events.last().unwrap()["usage"]["cached_input_tokens"], 200);
        assert_eq!(s.file("AGENT_EDITS.md").unwrap(), "one line\n");
        let p = parse(Parser::CodexJsonl, &run.stdout, now());
        assert_eq!((p.error, p.complete, p.tokens), (None, true, 1150));
        assert_eq!(p.result, "fake codex wrote AGENT_EDITS.md");
    }

    #[test]
    fn fake_agents_claude_stream_json_needs_verbose_and_ends_with_the_result() {
        let s = setup();
        let args = |extra: &[&str]| -> Vec<String> {
            ["-p", "--output-format", "stream-json"]
                .iter()
                .chain(extra)
                .map(|a| (*a).to_owned())
                .collect()
        };
        assert_eq!(s.run("claude", &args(&[]), "hi").code, Some(1));
        let run = s.run("claude", &args(&["--verbose"]), "hi");
        assert_eq!(run.code, Some(0));
        let lines = json_lines(&run.stdout);
        assert_eq!(lines[0]["subtype"], "init");
        assert_eq!(lines.last().unwrap()["type"], "result");
        assert!(parse(Parser::ClaudeJson, &run.stdout, now()).complete);
    }

    #[test]
    fn fake_agents_error_exit_0_reports_the_error_in_the_output() {
        let s = setup();
        for agent in super::AGENTS {
            s.fakes.set_mode(agent, "error-exit-0");
        }
        let claude = s.run("claude", &claude_profile().writer_args, "FILE: a\n");
        assert_eq!(claude.code, Some(0));
        let v: Value = serde_json::from_str(claude.stdout.trim()).unwrap();
        assert_eq!(v["is_error"], true);
        assert!(
            parse(Parser::ClaudeJson, &claude.stdout, now())
                .error
                .unwrap()
                .starts_with("API Error: 500")
        );
        let codex = s.run("codex", &codex_profile().writer_args, "FILE: a\n");
        assert_eq!(codex.code, Some(0));
        assert_eq!(
            json_lines(&codex.stdout).last().unwrap()["type"],
            "turn.failed"
        );
        assert!(
            parse(Parser::CodexJsonl, &codex.stdout, now())
                .error
                .is_some()
        );
        assert_eq!(s.file("a"), None, "a failed run edits nothing");
    }

    #[test]
    fn fake_agents_usage_limit_resets_three_seconds_ahead() {
        let s = setup();
        for agent in super::AGENTS {
            s.fakes.set_mode(agent, "usage-limit");
        }
        let before = SystemTime::now();
        let claude = s.run("claude", &claude_profile().writer_args, "x");
        assert_eq!(claude.code, Some(0));
        let limit = parse(Parser::ClaudeJson, &claude.stdout, now())
            .usage_limit
            .expect("claude usage limit");
        let reset = limit.resets_at.unwrap();
        let floor =
            UNIX_EPOCH + Duration::from_secs(before.duration_since(UNIX_EPOCH).unwrap().as_secs());
        assert!(reset >= floor + Duration::from_secs(3), "{limit:?}");
        assert!(reset <= floor + Duration::from_secs(6), "{limit:?}");

        let codex = s.run("codex", &codex_profile().writer_args, "x");
        assert_eq!(codex.code, Some(1));
        let events = json_lines(&codex.stdout);
        assert!(events.iter().any(
            |e| e["type"] == "error" && e["message"].as_str().unwrap().contains("usage limit")
        ));
        let limit = parse(Parser::CodexJsonl, &codex.stdout, now())
            .usage_limit
            .expect("codex usage limit");
        assert!(limit.resets_at.unwrap() > before);
    }

    #[test]
    fn fake_agents_once_fails_the_first_call_per_task_then_succeeds() {
        let s = setup();
        s.fakes.set_mode("codex", "error-exit-0-once");
        let args = codex_profile().writer_args;
        let parsed = |task: &str| {
            let mut cmd = s.command("codex", &args);
            cmd.env("SWARM_TASK_ID", task);
            parse(Parser::CodexJsonl, &s.run_with(cmd, "go").stdout, now())
        };
        assert!(parsed("a").error.is_some());
        assert_eq!(parsed("a").error, None);
        assert!(parsed("b").error.is_some(), "another task fails once too");
        s.fakes.set_mode("codex", "error-exit-0-once");
        assert!(parsed("a").error.is_some(), "set_mode re-arms it");
        let modes: Vec<Value> = s
            .fakes
            .invocations("codex")
            .iter()
            .map(|i| i["mode"].clone())
            .collect();
        assert_eq!(
            modes,
            ["error-exit-0", "ok", "error-exit-0", "error-exit-0"]
        );
    }

    #[test]
    fn fake_agents_prompt_line_overrides_the_mode() {
        let s = setup();
        let run = s.run(
            "claude",
            &claude_profile().writer_args,
            "FAKE_MODE: usage-limit\n",
        );
        assert!(
            parse(Parser::ClaudeJson, &run.stdout, now())
                .usage_limit
                .is_some()
        );
        assert_eq!(s.fakes.invocations("claude")[0]["mode"], "usage-limit");
    }

    #[test]
    fn fake_agents_record_args_cwd_env_and_prompt() {
        let s = setup();
        let mut cmd = s.command("claude", &claude_profile().reader_args);
        cmd.env("SWARM_API_KEY", "sk-secret-value")
            .env("SWARM_TASK_ID", "t1")
            .env("SWARM_MODE", "read");
        s.run_with(cmd, "the prompt\n");
        let calls = s.fakes.invocations("claude");
        assert_eq!(calls.len(), 1);
        let call = &calls[0];
        assert_eq!(call["n"], 1);
        let args: Vec<String> = serde_json::from_value(call["args"].clone()).unwrap();
        assert_eq!(args, claude_profile().reader_args);
        assert_eq!(
            Path::new(call["cwd"].as_str().unwrap())
                .canonicalize()
                .unwrap(),
            s.work.canonicalize().unwrap()
        );
        assert_eq!(call["env"]["SWARM_API_KEY"], true);
        assert_eq!(call["env"]["OPENAI_API_KEY"], false);
        assert_eq!(call["env"]["GIT_DIR"], false);
        assert_eq!(call["task_id"], "t1");
        assert_eq!(call["swarm_mode"], "read");
        assert_eq!(call["stdin_bytes"], 11);
        assert_eq!(s.fakes.prompt("claude", 1), "the prompt\n");
        let log = std::fs::read_to_string(s.fakes.state.join("claude.log")).unwrap();
        assert!(!log.contains("sk-secret-value"), "values are never logged");
    }

    #[test]
    fn fake_agents_codex_honours_dash_c_and_a_prompt_argument() {
        let s = setup();
        std::fs::create_dir_all(s.work.join("sub")).unwrap();
        let args: Vec<String> = [
            "exec",
            "--json",
            "-C",
            "sub",
            "--sandbox",
            "workspace-write",
            "FILE: here.md",
        ]
        .map(str::to_owned)
        .to_vec();
        assert_eq!(s.run("codex", &args, "").code, Some(0));
        assert!(s.file("sub/here.md").is_some());
        let not_exec = s.run("codex", &["--json".to_owned()], "x");
        assert_eq!(not_exec.code, Some(2));
    }

    #[test]
    fn fake_agents_wait_for_stdin_to_close() {
        let s = setup();
        s.fakes.set_mode("claude", "wait-stdin");
        let mut child = s
            .command("claude", &claude_profile().reader_args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"prompt\n").unwrap();
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            child.try_wait().unwrap().is_none(),
            "exited with stdin open"
        );
        drop(stdin);
        assert!(child.wait().unwrap().success());
    }

    #[test]
    fn fake_agents_hang_after_result_prints_it_first() {
        let s = setup();
        s.fakes.set_mode("codex", "hang-after-result");
        let out_path = s.work.parent().unwrap().join("hang.out");
        let mut child = s
            .command("codex", &codex_profile().reader_args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(File::create(&out_path).unwrap()))
            .process_group(0)
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let parsed = loop {
            let p = parse(
                Parser::CodexJsonl,
                &std::fs::read_to_string(&out_path).unwrap(),
                now(),
            );
            if p.complete || Instant::now() > deadline {
                break p;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(child.try_wait().unwrap().is_none(), "still running");
        // The shell and its `sleep`, as swarm ends an attempt.
        killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
        child.wait().unwrap();
        assert!(parsed.complete && parsed.error.is_none(), "{parsed:?}");
    }

    #[test]
    fn fake_agents_grandchild_outlives_the_agent() {
        let s = setup();
        s.fakes.set_mode("claude", "grandchild");
        let run = s.run("claude", &claude_profile().writer_args, "x");
        assert_eq!(run.code, Some(0));
        assert!(run.elapsed < Duration::from_secs(30));
        assert_eq!(parse(Parser::ClaudeJson, &run.stdout, now()).error, None);
        let pid = s.fakes.invocations("claude")[0]["grandchild_pid"]
            .as_i64()
            .expect("a grandchild pid");
        let pid = Pid::from_raw(i32::try_from(pid).unwrap());
        assert!(kill(pid, None).is_ok(), "the grandchild is still running");
        kill(pid, Signal::SIGKILL).unwrap();
    }

    #[test]
    fn fake_agents_exit_1_prints_nothing() {
        let s = setup();
        s.fakes.set_mode("claude", "exit-1");
        let run = s.run("claude", &claude_profile().writer_args, "x");
        assert_eq!(run.code, Some(1));
        assert_eq!(run.stdout, "");
        assert!(!parse(Parser::ClaudeJson, &run.stdout, now()).complete);
    }
}
