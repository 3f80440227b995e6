"""A fake agent of the Agent Client Protocol for swarm's tests: JSON-RPC 2.0, one message a
line, on stdin and stdout. Every message it receives is appended, with the task and attempt,
to $FAKE_ACP_DIR/log.jsonl.

It offers the modes `read-only` (current) and `auto`, advertises `sessionCapabilities.resume`
(on the first attempt only with FAKE_ACP_RESUME_ONCE set), and does what lines of the prompt say, in this order:
  USAGE: N          a usage_update with N tokens in context and a cost of $0.25
  PERMISSION: KIND  a session/request_permission for a tool call of KIND on README.md; the
                    outcome goes in the answer
  WRITE: PATH=TEXT  fs/write_text_file of TEXT to PATH (relative paths joined to the session's
                    cwd); the outcome goes in the answer
  READ: PATH        fs/read_text_file; the content goes in the answer
  TERMINAL: PROG ARGS…  terminal/create, then terminal/wait_for_exit, terminal/output and
                    terminal/release; the output or the error goes in the answer
  HANG              wait for session/cancel, then end the turn `cancelled`
  HANG-ONCE         HANG on the task's first attempt only
  IGNORE-CANCEL     start `sleep 600` and never answer, even to session/cancel
  WAIT-FOR: PATH    wait until PATH exists (a minute at most)
  STOP: REASON      the stop reason (default end_turn)
  RESULT: TEXT      the answer's first line (sent in two chunks)
A resumed session's prompt is read from the session it resumes.
"""

import json
import os
import subprocess
import sys
import time

LOG = os.path.join(os.environ["FAKE_ACP_DIR"], "log.jsonl")
SESSIONS = os.path.join(os.environ["FAKE_ACP_DIR"], "sessions")
TASK = os.environ.get("SWARM_TASK_ID", "")
ATTEMPT = int(os.environ.get("SWARM_ATTEMPT", "1"))
next_id = 1000


def send(message):
    message["jsonrpc"] = "2.0"
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def receive():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    message = json.loads(line)
    with open(LOG, "a") as log:
        log.write(json.dumps({"task": TASK, "attempt": ATTEMPT, "message": message}) + "\n")
    return message


def call(method, params):
    """Sends a request to the client and waits for its answer."""
    global next_id
    next_id += 1
    send({"id": next_id, "method": method, "params": params})
    while True:
        message = receive()
        if message.get("id") == next_id and "method" not in message:
            return message


def update(session, body):
    send({"method": "session/update", "params": {"sessionId": session, "update": body}})


def chunk(session, text):
    update(session, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})


def outcome(answer):
    if "error" in answer:
        return "error: " + answer["error"]["message"]
    return json.dumps(answer["result"], sort_keys=True)


def prompt_turn(request, cwd, prompt):
    session = request["params"]["sessionId"]
    lines = prompt.splitlines()
    answer = []
    stop = "end_turn"
    for line in lines:
        word, _, rest = line.partition(": ")
        if line.startswith("USAGE: "):
            update(session, {"sessionUpdate": "usage_update", "used": int(rest), "size": 200000,
                             "cost": {"amount": 0.25, "currency": "USD"}})
        elif word == "PERMISSION":
            got = call("session/request_permission", {
                "sessionId": session,
                "toolCall": {"toolCallId": "call-1", "kind": rest, "title": rest + " README.md",
                             "locations": [{"path": os.path.join(cwd, "README.md")}]},
                "options": [
                    {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "always", "name": "Always", "kind": "allow_always"},
                    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
                ],
            })
            answer.append("permission: " + outcome(got))
        elif word == "WRITE":
            path, _, text = rest.partition("=")
            got = call("fs/write_text_file", {"sessionId": session, "path": os.path.join(cwd, path),
                                              "content": text + "\n"})
            answer.append("write: " + outcome(got))
        elif word == "READ":
            got = call("fs/read_text_file", {"sessionId": session, "path": os.path.join(cwd, rest)})
            answer.append("read: " + outcome(got))
        elif word == "TERMINAL":
            words = rest.split()
            got = call("terminal/create", {"sessionId": session, "command": words[0],
                                           "args": words[1:], "cwd": cwd})
            if "error" in got:
                answer.append("terminal: " + outcome(got))
                continue
            terminal = {"sessionId": session, "terminalId": got["result"]["terminalId"]}
            waited = call("terminal/wait_for_exit", terminal)
            out = call("terminal/output", terminal)
            call("terminal/release", terminal)
            answer.append("terminal: exit " + str(waited["result"]["exitCode"]) + ": "
                          + out["result"]["output"].strip())
        elif line == "HANG" or (line == "HANG-ONCE" and ATTEMPT == 1):
            chunk(session, "working")
            while True:
                message = receive()
                if message.get("method") == "session/cancel":
                    send({"id": request["id"], "result": {"stopReason": "cancelled"}})
                    return
        elif line == "IGNORE-CANCEL":
            subprocess.Popen(["sleep", "600"])
            while True:
                receive()
        elif word == "WAIT-FOR":
            for _ in range(6000):
                if os.path.exists(rest):
                    break
                time.sleep(0.01)
        elif word == "STOP":
            stop = rest
        elif word == "RESULT":
            answer.insert(0, rest)
    text = "\n".join(answer)
    half = len(text) // 2
    chunk(session, text[:half])
    chunk(session, text[half:])
    send({"id": request["id"], "result": {"stopReason": stop}})


def main():
    os.makedirs(SESSIONS, exist_ok=True)
    cwd = None
    prompts = {}
    while True:
        message = receive()
        method = message.get("method")
        params = message.get("params", {})
        if "id" not in message:
            continue
        if method == "initialize":
            resumes = ATTEMPT == 1 or "FAKE_ACP_RESUME_ONCE" not in os.environ
            send({"id": message["id"], "result": {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": False,
                                      "sessionCapabilities": {"resume": {}} if resumes else {}},
                "authMethods": [],
            }})
        elif method in ("session/new", "session/resume"):
            cwd = params["cwd"]
            session = params.get("sessionId") or "sess-%s-%d" % (TASK, ATTEMPT)
            result = {"modes": {"currentModeId": "read-only", "availableModes": [
                {"id": "read-only", "name": "Read only"}, {"id": "auto", "name": "Auto"}]}}
            if method == "session/new":
                result["sessionId"] = session
            send({"id": message["id"], "result": result})
        elif method == "session/set_mode":
            send({"id": message["id"], "result": {}})
        elif method == "session/prompt":
            session = params["sessionId"]
            text = "".join(b.get("text", "") for b in params["prompt"])
            path = os.path.join(SESSIONS, session)
            if os.path.exists(path):
                with open(path) as f:
                    text = f.read() + "\n" + text
            else:
                with open(path, "w") as f:
                    f.write(text)
            prompt_turn(message, cwd, text)
        else:
            send({"id": message["id"], "error": {"code": -32601, "message": "unknown " + str(method)}})


main()
