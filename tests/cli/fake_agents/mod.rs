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
//! then the variable `FAKE_AGENT_MODE` (a profile's `set-env`), then the file
//! `<state>/<agent>.mode` (`FakeAgents::set_mode`), then `ok`:
//! - `ok`: a normal run (writers edit); `wait-stdin` is the same, named for tests that prove
//!   swarm closes stdin;
//! - `error-exit-0`: an error reported in the output with exit status 0 (claude: `is_error`
//!   result; codex: `error` then `turn.failed`);
//! - `usage-limit`: claude: `Claude AI usage limit reached|<now+3>` with `is_error`, exit 0
//!   (a `RESET_IN: <seconds>` line in the prompt, else the variable `FAKE_RESET_IN`, moves
//!   the reset);
//!   codex: `error` and `turn.failed` saying `You've hit your usage limit. Try again in 3
//!   seconds.`, exit 1 (real codex prints minutes or a clock time; seconds keep tests fast);
//! - `denied`: claude: a writer whose `Write` of the file was refused: it writes nothing and
//!   answers as a success, with the refusal only in `permission_denials`, as Claude Code does;
//! - `no-edit`: claude: a writer that edits nothing and answers as a success;
//! - `hang-after-result`: a normal run, then ten minutes of sleep;
//! - `hang-after-edit`: a writer edits, then hangs (`sleep 600`) before its result (codex: after
//!   its `thread.started`), as an agent cut short by a timeout or a crash;
//! - `grandchild`: starts a process in the background, holding stdout, that sleeps ten minutes;
//!   then a normal run. Either sleeper, unless stopped, appends the call's number to
//!   `<state>/<agent>.outlived` when it wakes (`FakeAgents::outlived`);
//! - `exit-1`: a crash: a line on stderr, nothing on stdout, exit status 1;
//! - `<mode>-once`: `<mode>` on the first call per task (`SWARM_TASK_ID`, or any task when
//!   unset) since the mode was set, `ok` afterwards; with `FAKE_TAG` set, per tag and task
//!   (two profiles of one fake keep their own).
//!
//! Sessions: claude's `--session-id ID`, and each new codex thread (`fake-thread-<n>`, printed
//! in `thread.started`), keep the call's prompt as the session's; a call with `--resume ID`
//! (claude) or `exec … resume ID` (codex) reads its `FILE`, `EDIT`, `RESULT` and `FAKE_MODE`
//! lines from its own prompt, then from the session's, as the real ones remember the task.
//!
//! With `FAKE_LIFELINE` set to a lifeline's shell words (`crate::lifeline`), a call and every
//! process it starts hold that lifeline.
//!
//! Every call appends one JSON line to `<state>/<agent>.log` (see `FakeAgents::invocations`;
//! its `tag` is `FAKE_TAG`, which tells two profiles of one fake apart)
//! and keeps its prompt in `<state>/<agent>.<n>.prompt`.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The fakes, by name.
pub const AGENTS: [&str; 2] = ["claude", "codex"];

/// Variables whose presence every call records (never their values: some are secrets).
const WATCHED_ENV: &str = "SWARM_API_KEY OPENAI_API_KEY ANTHROPIC_API_KEY CODEX_API_KEY SWARM_REMOTE_KEY \
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

    /// The fakes of `repo`'s test, beside the repository (not in it).
    pub fn beside(repo: &crate::TestRepo) -> Self {
        Self::install(&crate::outside(repo, "fakes"))
    }

    /// `swarm ARGS` in `repo`, with the fakes first on `PATH`.
    pub fn swarm(&self, repo: &crate::TestRepo, args: &[&str]) -> std::process::Output {
        repo.swarm_cmd()
            .env("PATH", self.path_env())
            .args(args)
            .output()
            .expect("running swarm")
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
    /// `max_retries` (the value of `CLAUDE_CODE_MAX_RETRIES`, empty when unset),
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

    /// The numbers of the calls of `agent` whose sleepers (`hang-after-result`, `grandchild`)
    /// ran to their end: none, where something stopped them.
    pub fn outlived(&self, agent: &str) -> String {
        std::fs::read_to_string(self.state.join(format!("{agent}.outlived"))).unwrap_or_default()
    }

    /// The prompt call `n` (1-based) of `agent` received.
    pub fn prompt(&self, agent: &str, n: u64) -> String {
        std::fs::read_to_string(self.state.join(format!("{agent}.{n}.prompt"))).unwrap()
    }
}

/// Both fakes: `@AGENT@` picks the behaviour, `@STATE@` is the state directory.
const SCRIPT: &str = r#"#!/bin/sh
# Fake @AGENT@ CLI for swarm's tests; see tests/cli/fake_agents/mod.rs.
AGENT=@AGENT@
STATE='@STATE@'
[ -z "${FAKE_LIFELINE:-}" ] || eval "$FAKE_LIFELINE"

json_str() {
    printf '%s' "$1" | tr '\n\r\t' '   ' | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g'
}

# Arguments, as the real CLI reads them.
SESSION=
RESUMED=no
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
        claude:--session-id) SESSION=$a; prev=; continue ;;
        codex:resume) SESSION=$a; RESUMED=yes; prev=; continue ;;
        claude:--resume) SESSION=$a; RESUMED=yes; prev=; continue ;;
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
        codex:resume) ;;
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

# A session keeps the task's prompt: a resumed one reads its lines from the first. A new codex
# thread is named after the call.
if [ "$AGENT" = codex ] && [ -z "$SESSION" ]; then
    SESSION="fake-thread-$N"
fi
if [ -n "$SESSION" ]; then
    if [ "$RESUMED" = yes ] && [ -f "$STATE/session.$SESSION" ]; then
        TASK_FILE="$STATE/session.$SESSION"
    else
        cp "$PROMPT_FILE" "$STATE/session.$SESSION"
        TASK_FILE=$PROMPT_FILE
    fi
else
    TASK_FILE=$PROMPT_FILE
fi
line_of() { sed -n "s/^$1: *//p" "$PROMPT_FILE" "$TASK_FILE" | head -n 1; }

MODE=$(line_of FAKE_MODE)
[ -n "$MODE" ] || MODE=${FAKE_AGENT_MODE:-}
[ -n "$MODE" ] || MODE=$(head -n 1 "$STATE/$AGENT.mode" 2>/dev/null)
[ -n "$MODE" ] || MODE=ok
case "$MODE" in
    *-once)
        if mkdir "$STATE/$AGENT.once.${FAKE_TAG:+$FAKE_TAG.}${SWARM_TASK_ID:-any}" 2>/dev/null; then
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
    (sleep 600; echo "$N" >> "$STATE/$AGENT.outlived") &
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
printf '{"agent":"%s","tag":"%s","n":%s,"mode":"%s","writer":%s,"args":[%s],"cwd":"%s","env":{%s},"task_id":"%s","swarm_mode":"%s","max_retries":"%s","stdin_bytes":%s,"prompt_file":"%s","grandchild_pid":%s}\n' \
    "$AGENT" "$(json_str "${FAKE_TAG:-}")" "$N" "$(json_str "$MODE")" "$WRITER" "$ARGS" "$(json_str "$(pwd)")" "$ENVS" \
    "$(json_str "${SWARM_TASK_ID:-}")" "$(json_str "${SWARM_MODE:-}")" \
    "$(json_str "${CLAUDE_CODE_MAX_RETRIES:-}")" "$STDIN_BYTES" \
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
[ -n "$RESET_IN" ] || RESET_IN=${FAKE_RESET_IN:-3}
RESET=$(( $(date +%s) + RESET_IN ))

DENIALS='[]'
claude_result() { # subtype is_error result cost input output; three fifths of input cached
    printf '{"type":"result","subtype":"%s","is_error":%s,"duration_ms":1234,"duration_api_ms":1100,"num_turns":2,"result":"%s","session_id":"fake-session-%s","total_cost_usd":%s,"usage":{"input_tokens":%s,"cache_creation_input_tokens":0,"cache_read_input_tokens":%s,"output_tokens":%s},"permission_denials":%s}\n' \
        "$1" "$2" "$3" "$N" "$4" $(( $5 * 2 / 5 )) $(( $5 - $5 * 2 / 5 )) "$6" "$DENIALS"
}

claude_run() {
    case "$MODE" in
        error-exit-0) MSG='API Error: 500 {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal server error\"}}'; IS_ERROR=true ;;
        usage-limit) MSG="Claude AI usage limit reached|$RESET"; IS_ERROR=true ;;
        hang-after-edit) edit; sleep 600; MSG=$R; IS_ERROR=false ;;
        no-edit) MSG=$R; IS_ERROR=false ;;
        denied)
            DENIALS="[{\"tool_name\":\"Write\",\"tool_use_id\":\"toolu_fake\",\"tool_input\":{\"file_path\":\"$(json_str "$(pwd)/$FILE")\",\"content\":\"$(json_str "$EDIT")\"}}]"
            MSG="I could not write $F: permission was denied."; IS_ERROR=false ;;
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
        printf '{"type":"thread.started","thread_id":"%s"}\n{"type":"turn.started"}\n' "$SESSION"
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
        hang-after-edit) edit; sleep 600 ;;
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
    echo "$N" >> "$STATE/$AGENT.outlived"
fi
exit $STATUS
"#;

#[cfg(test)]
mod tests;
