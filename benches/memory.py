"""Part 9 of the benchmark: what the repository's memory adds to planning a goal.

A board holding 1,000 past goals (written straight into `.git/swarm/board.db`, as 1,000
finished goal runs would leave them: a 12-task plan's skeleton and an outcome each, one word in
three shared with the goal planned) and a loopback fake OpenAI-compatible server that answers
every request at once with a two-task plan. `swarm --goal G --plan-only` runs with memory and
with `--no-memory`, interleaved; the difference of the medians is what memory adds (recalling
3 past goals out of 1,000 and giving them to the planner). Target: under 50 ms.

Run alone: `python3 benches/memory.py [--quick]`.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PART = "9 memory"
PAST = 1000
GOAL = "Add request tracing to every handler of the billing service and document it"
WORDS = ("tracing handler billing service document request cache parser module config retry "
         "upgrade client logging metrics invoice export import schema report queue worker").split()


class PlanServer:
    """Answers every chat completion at once with a `submit_plan` call of a two-task plan."""

    def __init__(self):
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("content-length") or 0))
                plan = {"tasks": [
                    {"id": "look", "prompt": "look at the handlers", "deps": [], "lane": "analyst"},
                    {"id": "final", "prompt": "report", "deps": ["look"], "lane": "reducer"},
                ]}
                call = {"id": "c1", "type": "function",
                        "function": {"name": "submit_plan", "arguments": json.dumps(plan)}}
                body = json.dumps({
                    "id": "x", "object": "chat.completion", "created": 0, "model": "fake",
                    "choices": [{"index": 0, "finish_reason": "tool_calls",
                                 "message": {"role": "assistant", "content": None,
                                             "tool_calls": [call]}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
                }).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        class Server(ThreadingHTTPServer):
            daemon_threads = True

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def past_goal(rng: random.Random, n: int) -> tuple[str, str, str]:
    words = rng.sample(WORDS, 6)
    goal = f"Goal {n}: " + " ".join(words)
    skeleton = "\n".join(
        f"t{k} (coder, write; files src/{rng.choice(WORDS)}.rs): change the {rng.choice(WORDS)} "
        f"of the {rng.choice(WORDS)} module and its tests"
        for k in range(12))
    outcome = (f"done (writers merged): t0, t1, t2; failed t3 (check `cargo test` failed: "
               f"{rng.choice(WORDS)} test); parked t4 (conflict in src/{rng.choice(WORDS)}.rs)")
    return goal, skeleton, outcome


def fill(board: Path, past: int) -> None:
    rng = random.Random(9)
    db = sqlite3.connect(board)
    with db:
        db.executemany(
            "INSERT INTO memory (run_id, goal_id, at, goal, skeleton, outcome, tokens, elapsed_ms)"
            " VALUES (?, 'goal', ?, ?, ?, ?, 120000, 600000)",
            [(f"past-{n}", 1_700_000_000_000 + n, *past_goal(rng, n)) for n in range(past)])
    db.close()


def run(swarm: str, quick: bool) -> list[dict]:
    from suite import row  # noqa: PLC0415 (the suite's table)

    runs = 5 if quick else 15
    work = Path(tempfile.mkdtemp(prefix="swarm-memory-"))
    repo = work / "repo"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "SWARM_", "OPENAI_"))}
    env.update({"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
                "GIT_COMMITTER_EMAIL": "b@x", "SWARM_API_KEY": "x", "SWARM_MODEL": "fake"})
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "README.md").write_text("billing service\n")
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", "init"], check=True, env=env)
    subprocess.run([swarm, "memory", "list"], cwd=repo, env=env, check=True, capture_output=True)
    try:
        fill(repo / ".git" / "swarm" / "board.db", PAST)
    except sqlite3.OperationalError as e:
        return [row(PART, f"planning with {PAST} past goals", "n/a",
                    note=f"this Python's SQLite cannot write the board's FTS5 table: {e}")]
    times: dict[bool, list[float]] = {True: [], False: []}
    with PlanServer() as server:
        env["SWARM_API_BASE"] = f"http://127.0.0.1:{server.port}/v1"
        for _ in range(runs):
            for memory in (True, False):
                cmd = [swarm, "--quiet", "--goal", GOAL, "--plan-only"]
                if not memory:
                    cmd.append("--no-memory")
                started = time.perf_counter()
                done = subprocess.run(cmd, cwd=repo, env=env, capture_output=True)
                times[memory].append(time.perf_counter() - started)
                if done.returncode != 0:
                    sys.exit(f"swarm failed: {done.stderr.decode(errors='replace')}")
        # That memory did recall: the run says so when not quiet.
        said = subprocess.run([swarm, "--goal", GOAL, "--plan-only"], cwd=repo, env=env,
                              capture_output=True).stderr.decode(errors="replace")
    recalled = "3 past goals of this repository" in said
    with_memory = statistics.median(times[True]) * 1000
    without = statistics.median(times[False]) * 1000
    added = with_memory - without
    return [row(PART, f"planning with {PAST} past goals: added by memory (median of {runs})",
                f"{added:.1f} ms", "--no-memory", f"{without:.1f} ms",
                round(with_memory / without, 3) if without else None, "< 50 ms", added < 50,
                f"with memory {with_memory:.1f} ms; 3 past goals recalled: {recalled}")]


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    here = Path(__file__).resolve().parent
    swarm = os.environ.get("SWARM_BIN", str(here.parent / "target" / "release" / "swarm"))
    for r in run(swarm, "--quick" in sys.argv):
        print(json.dumps(r))
