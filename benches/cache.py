"""Part 8 of the benchmark: how much of the prompts a server's prefix cache can serve.

A loopback fake OpenAI-compatible server models a prefix cache, as vLLM's automatic prefix
caching, llama.cpp's and the hosted APIs' do: a request's prompt is what a chat template makes of
it (the system message, the tool definitions, then the other messages in order), its tokens are
blocks of 4 characters, and it reports as cached (`usage.prompt_tokens_details.cached_tokens`)
the longest prefix, in whole blocks, of a prompt it has seen before (a prompt counts as seen once
it arrives). It drives swarm's built-in agent through real tool calls against a real repository:

- 40 `researcher` tasks, each reading two of 24 source files: a listing, three searches, six
  reads of 40 lines, then its findings (11 requests);
- 10 `analyst` tasks, each after four researchers, so their results are in its prompt: two
  searches, four reads, then its analysis (7 requests).

Measured: cached ÷ prompt tokens over the run, from the figures swarm's report and `--json`
give (target ≥ 90 %), checked against the server's own count; per lane; of the tasks' first
requests (what the lane's shared prefix brings); and, for comparison, what the cache would give
if no two tasks shared a prefix (each conversation cached only against itself). Then the same
50 tasks made larger (each researcher on four files: 19 tool calls; each analyst on four: 10),
for how the figure grows with the length of the conversations.

Run alone: `python3 benches/cache.py [--quick]`.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PART = "8. Prompt cache"
BLOCK = 4  # characters per token
RESEARCHERS = 40
ANALYSTS = 10
DEPS_PER_ANALYST = 4
FILES = 24
LINES = 160


def prompt_text(body: dict) -> str:
    """What a chat template makes of a request: the system message, the tools, the rest."""
    messages = body.get("messages") or []
    enc = lambda v: json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)  # noqa: E731
    parts = []
    rest = messages
    if messages and messages[0].get("role") == "system":
        parts.append(enc(messages[0]))
        rest = messages[1:]
    if "tools" in body:
        parts.append(enc(body["tools"]))
    parts.extend(enc(m) for m in rest)
    return "".join(parts)


def block_hashes(text: str) -> list[bytes]:
    """The chained hash of each whole block of the text: the key of the prefix it ends."""
    out, h = [], b""
    for i in range(0, len(text) - len(text) % BLOCK, BLOCK):
        h = hashlib.blake2b(h + text[i:i + BLOCK].encode(), digest_size=16).digest()
        out.append(h)
    return out


class PrefixCache:
    """The prefixes seen so far, as the chained hashes of their blocks."""

    def __init__(self):
        self.seen: set[bytes] = set()

    def take(self, text: str) -> int:
        """Blocks of `text`'s longest prefix seen before; then `text` counts as seen."""
        hashes = block_hashes(text)
        cached = 0
        for h in hashes:
            if h not in self.seen:
                break
            cached += 1
        self.seen.update(hashes)
        return cached


def first_user(body: dict) -> str:
    for m in body.get("messages") or []:
        if m.get("role") == "user":
            return m.get("content") or ""
    return ""


def own_part(task: str) -> str:
    """The task's own prompt, without its deps' results that swarm puts after it."""
    return task.split("\n\n---\n", 1)[0]


def steps_of(task: str) -> list[tuple[str, dict]]:
    """The tool calls the model makes for a task, read from its own prompt: the files it names
    and the names it is to look for."""
    task = own_part(task)
    files = re.findall(r"src/mod_\d+\.rs", task)
    names = re.findall(r"`(\w+)`", task)
    read = lambda f, first: ("read_file", {"path": f, "start_line": first, "end_line": first + 39})  # noqa: E731
    if len(files) > 2 and task.startswith("Survey"):
        return ([("list_files", {"path": "src"})]
                + [("search", {"pattern": f"fn {n}" if n[0].islower() else n}) for n in names]
                + [read(f, first) for first in (1, 41, 81) for f in files])
    if len(files) > 2:
        return ([("search", {"pattern": names[0]})] + [read(f, 121) for f in files]
                + [("search", {"pattern": f"fn {names[1]}"})] + [read(f, 1) for f in files])
    if task.startswith("Survey"):
        f1, f2 = files[0], files[1]
        return [
            ("list_files", {"path": "src"}),
            ("search", {"pattern": f"fn {names[0]}"}),
            ("search", {"pattern": names[1]}),
            ("read_file", {"path": f1, "start_line": 1, "end_line": 40}),
            ("read_file", {"path": f1, "start_line": 41, "end_line": 80}),
            ("search", {"pattern": f"fn {names[2]}"}),
            ("read_file", {"path": f2, "start_line": 1, "end_line": 40}),
            ("read_file", {"path": f2, "start_line": 41, "end_line": 80}),
            ("read_file", {"path": f1, "start_line": 81, "end_line": 120}),
            ("read_file", {"path": f2, "start_line": 81, "end_line": 120}),
        ]
    f1, f2 = files[0], files[1]
    return [
        ("search", {"pattern": names[0]}),
        ("read_file", {"path": f1, "start_line": 121, "end_line": 160}),
        ("read_file", {"path": f2, "start_line": 121, "end_line": 160}),
        ("search", {"pattern": f"fn {names[1]}"}),
        ("read_file", {"path": f1, "start_line": 1, "end_line": 40}),
        ("read_file", {"path": f2, "start_line": 1, "end_line": 40}),
    ]


def answer_of(task: str) -> str:
    """The model's final answer: a few hundred characters of findings about its files."""
    task = own_part(task)
    files = re.findall(r"src/mod_\d+\.rs", task)
    names = re.findall(r"`(\w+)`", task)
    lines = [f"Findings for {', '.join(files[:2])}:"]
    for n in names:
        lines.append(f"- `{n}` is defined once and called from the request path; it validates its "
                     f"input, updates the shared state and returns a typed error on failure.")
    lines.append("Nothing in these files depends on global state beyond the configuration.")
    return "\n".join(lines)


class FakeServer:
    """POST /v1/chat/completions: the built-in agent's model, with a prefix cache."""

    def __init__(self):
        self.lock = threading.Lock()
        self.cache = PrefixCache()
        self.alone: dict[str, PrefixCache] = {}  # a cache per conversation: nothing shared
        self.requests = 0
        self.errors: list[str] = []
        # Sums of prompt and cached tokens: all, per lane, first requests, alone.
        self.prompt = 0
        self.cached = 0
        self.lanes: dict[str, list[int]] = {}
        self.first = [0, 0]
        self.alone_cached = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if not self.path.endswith("/chat/completions"):
                    return self.answer(404, {"error": {"message": "not found"}})
                try:
                    body = json.loads(raw)
                    reply = server.reply(body)
                except Exception as e:  # the bench must say, not hang swarm
                    with server.lock:
                        server.errors.append(f"{type(e).__name__}: {e}")
                    return self.answer(500, {"error": {"message": str(e)}})
                self.answer(200, reply)

            def answer(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 256

            def handle_error(self, request, client_address):
                # swarm closing a kept-alive connection as it exits is no error of the bench.
                if not isinstance(sys.exc_info()[1], ConnectionError):
                    super().handle_error(request, client_address)

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    def reply(self, body: dict) -> dict:
        text = prompt_text(body)
        task = first_user(body)
        system = (body.get("messages") or [{}])[0].get("content") or ""
        lane = next((l for l in ("researcher", "analyst") if f" {l} agent" in system), "other")
        done = sum(1 for m in body.get("messages") or [] if m.get("role") == "tool")
        prompt = len(text) // BLOCK
        with self.lock:
            self.requests += 1
            cached = self.cache.take(text)
            alone = self.alone.setdefault(task, PrefixCache()).take(text)
            self.prompt += prompt
            self.cached += cached
            self.alone_cached += alone
            lane_sums = self.lanes.setdefault(lane, [0, 0])
            lane_sums[0] += prompt
            lane_sums[1] += cached
            if done == 0:
                self.first[0] += prompt
                self.first[1] += cached
            n = self.requests
        steps = steps_of(task)
        if done < len(steps):
            name, args = steps[done]
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"call-{done}", "type": "function",
                                "function": {"name": name, "arguments": json.dumps(args)}}],
            }
            finish, out = "tool_calls", len(json.dumps(args))
        else:
            content = answer_of(task)
            message = {"role": "assistant", "content": content}
            finish, out = "stop", len(content)
        completion = max(1, out // BLOCK)
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "fake",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": cached},
            },
        }


def source_file(i: int, rng: random.Random) -> str:
    """A Rust module of LINES lines that defines `handle_i`, `Config{i}` and `parse_i`."""
    out = [f"//! Module {i}: request handling for area {i}.", "", "use std::collections::HashMap;", ""]
    out += [f"pub struct Config{i:02} {{", "    pub limit: usize,", "    pub name: String,", "}", ""]
    body = 0
    while len(out) < LINES - 12:
        k = rng.randrange(1000)
        out += [
            f"/// Helper {body} of module {i}: folds the inputs it is given into one value.",
            f"pub fn helper_{i:02}_{body}(input: &[u32], state: &mut HashMap<u32, u32>) -> u32 {{",
            f"    let mut acc = {k};",
            "    for x in input {",
            f"        acc = acc.wrapping_mul(31).wrapping_add(*x ^ {rng.randrange(1 << 16)});",
            "        *state.entry(*x).or_default() += 1;",
            "    }",
            "    acc",
            "}",
            "",
        ]
        body += 1
    out += [
        f"pub fn handle_{i:02}(config: &Config{i:02}, input: &[u32]) -> Result<u32, String> {{",
        "    if input.len() > config.limit {",
        "        return Err(format!(\"{}: too many inputs\", config.name));",
        "    }",
        f"    Ok(parse_{i:02}(input))",
        "}",
        "",
        f"pub fn parse_{i:02}(input: &[u32]) -> u32 {{",
        "    input.iter().copied().fold(0, u32::wrapping_add)",
        "}",
    ]
    return "\n".join(out[:LINES]) + "\n"


def make_repo(repo: Path) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
    git = ["git", "-c", "core.hooksPath=/dev/null", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    rng = random.Random(8)
    (repo / "src").mkdir()
    for i in range(FILES):
        (repo / "src" / f"mod_{i:02}.rs").write_text(source_file(i, rng))
    (repo / "README.md").write_text("Request handlers, one module per area.\n")
    subprocess.run([*git, "add", "."], check=True, env=env)
    subprocess.run([*git, "commit", "-q", "-m", "init"], check=True, env=env)


def write_tasks(path: Path, larger: bool) -> None:
    """The 50 tasks; `larger`, each on four files instead of two."""
    paths = lambda ns: " and ".join(f"src/mod_{n:02}.rs" for n in ns)  # noqa: E731
    with path.open("w") as f:
        for i in range(RESEARCHERS):
            a, b, c, d = (i % FILES, (i + 7) % FILES, (i + 13) % FILES, (i + 19) % FILES)
            ns = (a, b, c, d) if larger else (a, b)
            names = f"`handle_{a:02}`, `Config{b:02}` and `parse_{b:02}`"
            if larger:
                names = f"`handle_{a:02}`, `Config{b:02}`, `parse_{b:02}`, `handle_{c:02}`, " \
                        f"`Config{d:02}` and `parse_{d:02}`"
            prompt = (f"Survey of {paths(ns)} for the module map. Find where {names} are defined "
                      f"and what they do; report each public function with one line on what it "
                      f"does and anything surprising.")
            f.write(json.dumps({"id": f"r{i:02}", "prompt": prompt, "lane": "researcher"}) + "\n")
        for j in range(ANALYSTS):
            deps = [f"r{DEPS_PER_ANALYST * j + k:02}" for k in range(DEPS_PER_ANALYST)]
            a, b = (3 * j) % FILES, (3 * j + 11) % FILES
            ns = (a, b, (a + 5) % FILES, (b + 5) % FILES) if larger else (a, b)
            prompt = (f"Analysis of the surveys of {', '.join(deps)}: check their findings against "
                      f"{paths(ns)}, where `Config{a:02}` and `helper_{b:02}_0` live, and report "
                      f"which findings hold and which do not.")
            f.write(json.dumps({"id": f"a{j:02}", "prompt": prompt, "lane": "analyst",
                                "deps": deps}) + "\n")


def run_once(swarm: str, work: Path, larger: bool) -> dict:
    work = work / ("larger" if larger else "run")
    work.mkdir()
    repo = work / "repo"
    make_repo(repo)
    plan = work / "tasks.jsonl"
    write_tasks(plan, larger)
    report = work / "report.md"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "SWARM_", "OPENAI_"))}
    with FakeServer() as server:
        env["SWARM_API_BASE"] = f"http://127.0.0.1:{server.port}/v1"
        env["SWARM_API_KEY"] = "x"
        t = time.perf_counter()
        proc = subprocess.run(
            [swarm, "run", str(plan), "--agent", "openai", "-j", "8", "-q", "--json",
             "--final-out", str(report), "--worktree-dir", str(work / "wt")],
            cwd=repo, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t
    try:
        summary = json.loads(proc.stdout)
    except ValueError:
        summary = {}
    totals = summary.get("totals", {})
    statuses = [t.get("status") for t in summary.get("tasks", [])]
    text = report.read_text() if report.exists() else ""
    shown = re.search(r"by the tasks \((\d+) of their (\d+) prompt tokens cached: (\d+) %\)", text)
    return {
        "exit": proc.returncode,
        "stderr": proc.stderr.strip()[-300:],
        "wall": wall,
        "requests": server.requests,
        "server_errors": server.errors[:3],
        "server": (server.prompt, server.cached),
        "lanes": server.lanes,
        "first": tuple(server.first),
        "alone": server.alone_cached,
        "swarm": (totals.get("task_prompt_tokens"), totals.get("task_cached_tokens")),
        "report": shown.groups() if shown else None,
        "done": sum(s == "done" for s in statuses),
        "tasks": len(statuses),
    }


def pct(cached: int, prompt: int) -> float:
    return round(100 * cached / prompt, 1) if prompt else 0.0


def rows_for(r: dict) -> list[dict]:
    prompt, cached = r["swarm"]
    ok = (r["exit"] == 0 and r["done"] == RESEARCHERS + ANALYSTS and not r["server_errors"]
          and prompt is not None)
    figure = pct(cached or 0, prompt or 0)
    agrees = r["swarm"] == r["server"] and r["report"] is not None \
        and (int(r["report"][1]), int(r["report"][0])) == r["server"]
    alone = pct(r["alone"], r["server"][0])
    trouble = "" if ok else f"; PROBLEM: exit {r['exit']}, done {r['done']}/{r['tasks']}, " \
                            f"{r['server_errors']} {r['stderr']}"
    size = f"{RESEARCHERS + ANALYSTS} prompt tasks, 2 lanes, -j 8"
    lane_notes = "; ".join(f"{lane} {pct(c, p)} % of {p:,}" for lane, (p, c) in sorted(r["lanes"].items()))
    return [
        {
            "part": PART,
            "case": f"cached ÷ prompt tokens, % ({size})",
            "swarm": figure,
            "peer": "no prefix shared across tasks",
            "peer_value": alone,
            "ratio": round(figure / alone, 3) if alone else None,
            "target": "≥ 90 %",
            "met": ok and figure >= 90.0,
            "note": f"{cached:,} of {prompt:,} prompt tokens, as swarm's report and --json give "
                    f"them; {r['requests']} requests in {r['wall']:.1f} s; per lane: {lane_notes}"
                    f"{trouble}",
        },
        info("the report's figure = the server's count", "yes" if agrees else "NO",
             f"report: {r['report'][0] if r['report'] else '?'} of "
             f"{r['report'][1] if r['report'] else '?'} cached "
             f"({r['report'][2] if r['report'] else '?'} %); server: {r['server'][1]:,} of "
             f"{r['server'][0]:,}", target="equal", met=agrees),
        info("cached ÷ prompt tokens of each task's first request, %",
             pct(r["first"][1], r["first"][0]),
             f"{r['first'][1]:,} of {r['first'][0]:,}: the lane's shared prefix (instructions, "
             f"tools) read from the cache; the task's own part and its deps' results are new"),
    ]


def info(case, value, note, target="none (for information)", met=None) -> dict:
    return {"part": PART, "case": case, "swarm": value, "peer": "", "peer_value": "",
            "ratio": None, "target": target, "met": met, "note": note}


def larger_row(r: dict) -> dict:
    prompt, cached = r["swarm"]
    ok = r["exit"] == 0 and r["done"] == RESEARCHERS + ANALYSTS and prompt is not None
    trouble = "" if ok else f"; PROBLEM: exit {r['exit']}, done {r['done']}/{r['tasks']}"
    lane_notes = "; ".join(f"{lane} {pct(c, p)} %" for lane, (p, c) in sorted(r["lanes"].items()))
    return info("the same tasks, larger (19 and 10 tool calls a task), cached ÷ prompt, %",
                pct(cached or 0, prompt or 0),
                f"{cached or 0:,} of {prompt or 0:,}; per lane: {lane_notes}; without a prefix "
                f"shared across tasks {pct(r['alone'], r['server'][0])} %{trouble}")


def run(swarm: str, quick: bool) -> list[dict]:
    # Each run is deterministic (what is cached in all does not depend on the order requests
    # arrive in), so one of each is enough.
    swarm = str(Path(swarm).resolve())
    work = Path(tempfile.mkdtemp(prefix="swarm-bench-cache-"))
    try:
        rows = rows_for(run_once(swarm, work, larger=False))
        return rows + [larger_row(run_once(swarm, work, larger=True))]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    quick = "--quick" in sys.argv[1:]
    here = Path(__file__).resolve().parent
    swarm = os.environ.get("SWARM_BIN", str(here.parent / "target" / "release" / "swarm"))
    t = time.perf_counter()
    for r in run(swarm, quick):
        print(json.dumps(r, ensure_ascii=False))
    print(f"# part 8 took {time.perf_counter() - t:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
