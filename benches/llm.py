"""Part 4 of the benchmark: keeping an LLM endpoint saturated.

A loopback fake OpenAI-compatible server answers each chat completion after a fixed 200 ms,
with at most 8 requests in flight; beyond that it answers 429 with `Retry-After: 1` at once.
200 read-only prompt tasks run through swarm's built-in agent (`--agent openai`), each one
request (the answer is plain text, no tool calls). Measured: the makespan against the ideal
N x latency / capacity, the 429s, the failed tasks and the in-flight level the run settled at.

Run alone: `python3 benches/llm.py [--quick]`.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PART = "4. LLM endpoint saturation"
LATENCY = 0.2
CAPACITY = 8


class FakeServer:
    """POST /v1/chat/completions with a fixed latency and a hard cap on requests in flight."""

    def __init__(self, latency: float = LATENCY, capacity: int = CAPACITY):
        self.latency = latency
        self.capacity = capacity
        self.lock = threading.Lock()
        self.in_flight = 0
        self.requests = 0
        self.ok = 0
        self.throttled = 0
        self.first = None  # perf_counter of the first request
        self.last = None  # perf_counter of the last answer
        self.samples: list[tuple[float, int]] = []
        self.sampling = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as a real endpoint offers
            # Headers and body go out in two writes; with Nagle on, the body of every answer on
            # a reused connection waited ~40 ms for the client's delayed ACK (seen with strace:
            # tasks took 245 ms for a 200 ms latency). Real servers set TCP_NODELAY too.
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                self.rfile.read(length)
                if not self.path.endswith("/chat/completions"):
                    return self.answer(404, {"error": {"message": "not found"}})
                with server.lock:
                    server.requests += 1
                    if server.first is None:
                        server.first = time.perf_counter()
                    admitted = server.in_flight < server.capacity
                    if admitted:
                        server.in_flight += 1
                    else:
                        server.throttled += 1
                if not admitted:
                    return self.answer(
                        429,
                        {"error": {"message": "too many requests", "type": "rate_limit"}},
                        {"Retry-After": "1"},
                    )
                time.sleep(server.latency)
                # The slot is free once the work is done, before the bytes go out, so a client
                # that sends its next request on receipt never finds it still taken.
                with server.lock:
                    server.in_flight -= 1
                    server.ok += 1
                    server.last = time.perf_counter()
                self.answer(200, completion(server.ok))

            def answer(self, status, body, headers=None):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 256  # the default 5 drops SYNs under a burst of connects

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.threads = [
            threading.Thread(target=self.httpd.serve_forever, daemon=True),
            threading.Thread(target=self.sample, daemon=True),
        ]

    def sample(self):
        while not self.sampling.wait(0.01):
            with self.lock:
                level = self.in_flight
            self.samples.append((time.perf_counter(), level))

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.sampling.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def settled(self) -> tuple[float, float]:
        """Mean in-flight level over the last half of the busy period, and its mean overall."""
        if self.first is None or self.last is None:
            return 0.0, 0.0
        busy = [(t, n) for t, n in self.samples if self.first <= t <= self.last]
        half = self.first + (self.last - self.first) / 2
        late = [n for t, n in busy if t >= half]
        mean = lambda v: round(statistics.fmean(v), 2) if v else 0.0  # noqa: E731
        return mean(late), mean([n for _, n in busy])


def completion(n: int) -> dict:
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "fake",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "hi"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 1, "total_tokens": 21},
    }


def make_repo(repo: Path) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
    }
    git = ["git", "-c", "core.hooksPath=/dev/null", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "README.md").write_text("a repository for the prompt tasks to look at\n")
    subprocess.run([*git, "add", "."], check=True, env=env)
    subprocess.run([*git, "commit", "-q", "-m", "init"], check=True, env=env)


def run_once(swarm: str, work: Path, tasks: int, jobs: int, rep: int) -> dict:
    repo = work / f"repo-j{jobs}-{rep}"
    make_repo(repo)
    plan = work / f"tasks-{tasks}.jsonl"
    with plan.open("w") as f:
        for i in range(tasks):
            f.write(json.dumps({"id": f"p{i}", "prompt": "say hi", "lane": "analyst"}) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "SWARM_", "OPENAI_"))}
    with FakeServer() as server:
        env["SWARM_API_BASE"] = f"http://127.0.0.1:{server.port}/v1"
        env["SWARM_API_KEY"] = "x"
        t = time.perf_counter()
        proc = subprocess.run(
            [swarm, "run", str(plan), "--agent", "openai", "-j", str(jobs), "-q",
             "--worktree-dir", str(work / "wt")],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - t
        startup = (server.first - t) if server.first else None
        busy = (server.last - server.first) if server.first and server.last else None
        settled, mean = server.settled()
        counts = (server.requests, server.ok, server.throttled)
    status = subprocess.run(
        [swarm, "status", "--json"], cwd=repo, env=env, capture_output=True, text=True
    )
    failed, done = count_statuses(status.stdout)
    events = newest_events(repo)
    concurrency = [e["detail"] for e in events if e["kind"] in ("llm_concurrency",)]
    return {
        "exit": proc.returncode,
        "stderr": proc.stderr.strip(),
        "wall": wall,
        "startup": startup,
        "busy": busy,
        "requests": counts[0],
        "ok": counts[1],
        "throttled": counts[2],
        "settled": settled,
        "mean": mean,
        "failed": failed,
        "done": done,
        "status_raw": status.stdout[:300] if failed is None else "",
        "limit_events": len(concurrency),
    }


def count_statuses(text: str) -> tuple[int | None, int | None]:
    """Failed (anything but done) and done tasks from `swarm status --json`."""
    try:
        tasks = json.loads(text)["tasks"]
        statuses = [t["status"] for t in tasks]
    except (ValueError, KeyError, TypeError):
        return None, None
    return sum(s != "done" for s in statuses), sum(s == "done" for s in statuses)


def newest_events(repo: Path) -> list[dict]:
    runs = repo / ".git" / "swarm" / "runs"
    if not runs.is_dir():
        return []
    newest = max(runs.iterdir(), key=lambda p: p.stat().st_mtime)
    path = newest / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def rows_for(runs: list[dict], tasks: int, jobs: int) -> list[dict]:
    ideal = tasks * LATENCY / CAPACITY
    med = lambda key: statistics.median(r[key] for r in runs if r[key] is not None)  # noqa: E731
    wall = med("wall")
    ratio = round(wall / ideal, 3)
    failed = [r["failed"] for r in runs]
    no_failure = all(f == 0 for f in failed) and all(r["exit"] == 0 for r in runs)
    n = len(runs)
    size = f"{tasks} prompt tasks, -j {jobs}"
    runs_note = f"median of {n} runs" if n > 1 else "1 run"
    trouble = ""
    if not no_failure:
        bad = next(r for r in runs if r["exit"] != 0 or r["failed"] != 0)
        trouble = f"; PROBLEM: exit {bad['exit']}, failed {bad['failed']}: " \
                  f"{bad['stderr'][:200]} {bad['status_raw']}"
    return [
        {
            "part": PART,
            "case": f"makespan, s ({size})",
            "swarm": round(wall, 3),
            "peer": f"ideal N×{LATENCY:g} s÷{CAPACITY}",
            "peer_value": ideal,
            "ratio": ratio,
            "target": "≤ 1.10× ideal, no failed task",
            "met": ratio <= 1.10 and no_failure,
            "note": f"wall time of `swarm run` including start-up ({runs_note}); start-up to "
                    f"the first request {med('startup') * 1000:.0f} ms; first request to last "
                    f"answer {med('busy'):.3f} s = {med('busy') / ideal:.3f}× ideal; "
                    f"{med('requests'):.0f} requests{trouble}",
        },
        info(f"429 answers ({size})", med("throttled"),
             f"per run: {[r['throttled'] for r in runs]}"),
        info(f"failed tasks ({size})", max(f if f is not None else -1 for f in failed),
             f"from `swarm status --json`; done per run: {[r['done'] for r in runs]}",
             target="0", met=no_failure),
        info(f"in flight, settled ({size})", med("settled"),
             f"mean of 10 ms samples of the server's in-flight count over the second half of "
             f"the busy period (whole period: {med('mean')}); capacity {CAPACITY}",
             target=f"≈ {CAPACITY}", met=None),
    ]


def info(case, value, note, target="none (for information)", met=None) -> dict:
    return {
        "part": PART,
        "case": case,
        "swarm": value,
        "peer": "",
        "peer_value": "",
        "ratio": None,
        "target": target,
        "met": met,
        "note": note,
    }


def run(swarm: str, quick: bool) -> list[dict]:
    tasks, reps = (40, 1) if quick else (200, 3)
    swarm = str(Path(swarm).resolve())
    work = Path(tempfile.mkdtemp(prefix="swarm-bench-llm-"))
    try:
        out = []
        for jobs in (8, 16, 32):
            runs = [run_once(swarm, work, tasks, jobs, rep) for rep in range(reps)]
            out += rows_for(runs, tasks, jobs)
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    quick = "--quick" in sys.argv[1:]
    here = Path(__file__).resolve().parent
    swarm = os.environ.get("SWARM_BIN", str(here.parent / "target" / "release" / "swarm"))
    t = time.perf_counter()
    for r in run(swarm, quick):
        print(json.dumps(r, ensure_ascii=False))
    print(f"# part 4 took {time.perf_counter() - t:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
