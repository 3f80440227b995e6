#!/usr/bin/env python3
"""swarm's benchmark suite: runs swarm and its peers on the same inputs in the same run and
prints one table of medians and ratios.

Started by `benches/run` (which builds swarm and checks the peers); by hand:

    python3 benches/suite.py [--quick] [--only PART] [--runs N]

Parts: 1 scheduling overhead (against ninja, GNU make and a spawn floor), 2 makespan on the
Standard Task Graph Set (against the lower bound and a zero-overhead simulation of swarm's own
priority rule), 3 merges and 4 LLM (from benches/merges.py and benches/llm.py when present),
5 start-up and size, 6 real builds (from benches/builds.py: a registry crate's own test suite as
every writer's check, with and without `cache`), 7 remote (from benches/remote.py: a run spread
over two workers through an on-disk remote, against git's own push and fetch), 8 prompt cache
(from benches/cache.py: the share of prompt tokens a server's prefix cache serves). Results go to
target/bench/results.json and target/bench/results.md.

Standard library only.
"""

from __future__ import annotations

import argparse
import heapq
import importlib
import json
import os
import random
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "target" / "bench"
STG_DIR = ROOT.parent / "shared" / "bench" / "stg"
TIME = "/usr/bin/time" if os.path.exists("/usr/bin/time") else None

# How long a unit of STG cost sleeps.
STG_UNIT = 0.02


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def row(part, case, swarm, peer="", peer_value="", ratio=None, target="", met=None, note=""):
    return {
        "part": part,
        "case": case,
        "swarm": swarm,
        "peer": peer,
        "peer_value": peer_value,
        "ratio": ratio,
        "target": target,
        "met": met,
        "note": note,
    }


# ---------------------------------------------------------------- measuring


def measure(cmd: list[str], cwd: Path | None = None, env: dict | None = None) -> tuple[float, int]:
    """Runs cmd, output discarded; returns (wall seconds, peak RSS in KiB of the process)."""
    rss_file = None
    full = cmd
    if TIME:
        fd, rss_file = tempfile.mkstemp(prefix="rss-", dir=OUT)
        os.close(fd)
        full = [TIME, "-f", "%M", "-o", rss_file, *cmd]
    before = _children_rss()
    t0 = time.perf_counter()
    proc = subprocess.run(full, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.decode()[-2000:]}")
    if rss_file:
        text = Path(rss_file).read_text().split()
        os.unlink(rss_file)
        rss = int(text[-1]) if text else 0
    else:
        # ru_maxrss of the children is a high-water mark: it only shows a run that beat it.
        rss = max(_children_rss(), before)
    return wall, rss


def _children_rss() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def new_repo(parent: Path) -> Path:
    """A small git repository with one commit, for swarm's snapshot."""
    repo = parent / "repo"
    repo.mkdir(parents=True)
    env = {**os.environ, "GIT_AUTHOR_DATE": "2020-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2020-01-01T00:00:00Z"}
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    (repo / "README").write_text("benchmark repository\n")
    subprocess.run([*git, "add", "README"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "init"], cwd=repo, check=True, env=env)
    return repo


class BlackHole:
    """An OTLP collector that is there and never answers: it accepts every connection and
    reads nothing, so each export request hangs until swarm gives it up."""

    def __enter__(self) -> "BlackHole":
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1024)
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def __exit__(self, *exc) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


def run_swarm(swarm: str, tasks: Path, jobs: int, scratch: Path,
              extra: tuple[str, ...] = (), env_extra: dict | None = None) -> tuple[float, int, Path]:
    """One swarm run in a fresh repository; returns (wall, peak RSS KiB, the run's directory)."""
    if scratch.exists():
        shutil.rmtree(scratch)
    repo = new_repo(scratch)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "SWARM_", "OTEL_"))}
    env.update(env_extra or {})
    cmd = [swarm, "run", str(tasks), "-j", str(jobs), "-q", "--land", "none",
           "--worktree-dir", str(scratch / "wt"), *extra]
    wall, rss = measure(cmd, cwd=repo, env=env)
    runs = sorted((repo / ".git" / "swarm" / "runs").iterdir())
    return wall, rss, runs[-1]


def board_durable(run_dir: Path, n: int) -> bool:
    """Every task of the run is recorded as done in the board, with its attempt finished."""
    db = run_dir.parent.parent / "board.db"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        done = c.execute("SELECT count(*) FROM tasks WHERE run_id = ? AND status = 'done'",
                         (run_dir.name,)).fetchone()[0]
        attempts = c.execute(
            "SELECT count(*) FROM attempts WHERE run_id = ? AND finished_at IS NOT NULL",
            (run_dir.name,)).fetchone()[0]
    return done == n and attempts >= n


def run_span(run_dir: Path) -> float:
    """Seconds from the first task start to the last task end, from the run's event log."""
    starts, ends = [], []
    with open(run_dir / "events.jsonl") as f:
        for line in f:
            e = json.loads(line)
            if e["kind"] == "task_started":
                starts.append(e["at"])
            elif e["kind"] in ("task_succeeded", "task_failed"):
                ends.append(e["at"])
    return (max(ends) - min(starts)) / 1000.0


# ---------------------------------------------------------------- part 1: scheduling overhead


def random_dag(n: int, fan_in: bool, seed: int = 42) -> list[list[int]]:
    """deps of each node, all to earlier nodes; with fan_in, 0 to 4 deps each (mean 2)."""
    rng = random.Random(seed)
    deps = []
    for i in range(n):
        k = min(i, rng.randint(0, 4)) if fan_in else 0
        deps.append(sorted(rng.sample(range(i), k)))
    return deps


def write_swarm_tasks(path: Path, deps: list[list[int]]) -> None:
    with open(path, "w") as f:
        for i, ds in enumerate(deps):
            task = {"id": f"t{i}", "run": "true", "mode": "read"}
            if ds:
                task["deps"] = [f"t{d}" for d in ds]
            f.write(json.dumps(task, separators=(",", ":")) + "\n")


def write_ninja(path: Path, deps: list[list[int]]) -> None:
    # Outputs are never created, so every edge runs on every build.
    with open(path, "w") as f:
        f.write("rule r\n  command = true\n\n")
        for i, ds in enumerate(deps):
            f.write(f"build t{i}: r" + "".join(f" t{d}" for d in ds) + "\n")
        f.write("default " + " ".join(f"t{i}" for i in range(len(deps))) + "\n")


def write_make(path: Path, deps: list[list[int]]) -> None:
    with open(path, "w") as f:
        names = " ".join(f"t{i}" for i in range(len(deps)))
        f.write(f".PHONY: all {names}\nall: {names}\n")
        for i, ds in enumerate(deps):
            f.write(f"t{i}:" + "".join(f" t{d}" for d in ds) + "\n\t@true\n")


def part_scheduling(swarm: str, quick: bool, runs: int, work: Path) -> tuple[list[dict], dict]:
    sizes = [1000] if quick else [1000, 10000]
    jobs = [2] if quick else [2, 16]
    floor = str(OUT / "floor")
    rows, extra = [], {}
    for n in sizes:
        for shape in ("fan-in 2", "no deps"):
            deps = random_dag(n, shape == "fan-in 2")
            d = work / f"p1-{n}-{shape.replace(' ', '')}"
            d.mkdir(parents=True, exist_ok=True)
            tasks = d / "tasks.jsonl"
            write_swarm_tasks(tasks, deps)
            write_ninja(d / "build.ninja", deps)
            write_make(d / "Makefile", deps)
            for j in jobs:
                case = f"{n:,} tasks, {shape}, -j {j}"
                log(f"part 1: {case}")
                res = {"swarm": [], "unconfined": [], "traced": [], "ninja": [], "make": [], "floor": []}
                rss = {"swarm": [], "ninja": [], "make": []}
                durable = True
                # A 10,000-task swarm run takes ~10 s on 2 cores: three runs keep the suite short.
                for _ in range(min(runs, 3) if n >= 10000 else runs):
                    w, r, run_dir = run_swarm(swarm, tasks, j, d / "swarm")
                    res["swarm"].append(w)
                    rss["swarm"].append(r)
                    durable &= board_durable(run_dir, n)
                    # The same run with its tasks not confined: what confinement costs.
                    w, _, _ = run_swarm(swarm, tasks, j, d / "swarm", ("--confine", "off"))
                    res["unconfined"].append(w)
                    # The same run exported as a trace to a collector that never answers: what
                    # export costs the run at worst (the target is at most 5 % more wall time).
                    with BlackHole() as hole:
                        w, _, _ = run_swarm(swarm, tasks, j, d / "swarm",
                                            env_extra={"OTEL_EXPORTER_OTLP_ENDPOINT": hole.endpoint})
                    res["traced"].append(w)
                    if shutil.which("ninja"):
                        for stale in (".ninja_log", ".ninja_deps"):
                            (d / stale).unlink(missing_ok=True)
                        w, r = measure(["ninja", "-C", str(d), "-j", str(j), "--quiet"])
                        res["ninja"].append(w)
                        rss["ninja"].append(r)
                    w, r = measure(["make", "-C", str(d), "-s", "-j", str(j)])
                    res["make"].append(w)
                    rss["make"].append(r)
                    w, _ = measure([floor, str(j), str(n), "/bin/sh", "-c", "true"])
                    res["floor"].append(w)
                m = {k: median(v) for k, v in res.items() if v}
                mr = {k: median(v) for k, v in rss.items() if v}
                fl = m["floor"]
                per = lambda w: (w - fl) / n * 1000  # noqa: E731 - ms of overhead per task
                extra[(n, shape, j)] = {"wall": m, "rss": mr}
                note = "board: all done" if durable else "board: NOT all tasks done"
                is_target = n == 10000 and shape == "fan-in 2" and j == 2
                if "ninja" in m:
                    ratio = m["swarm"] / m["ninja"]
                    rows.append(row("1 scheduling", f"{case}: wall s", round(m["swarm"], 3), "ninja",
                                    round(m["ninja"], 3), round(ratio, 2),
                                    "<= ninja" if is_target else "", (ratio <= 1.0 and durable) if is_target else None,
                                    note))
                rows.append(row("1 scheduling", f"{case}: wall s", round(m["swarm"], 3), "make",
                                round(m["make"], 3), round(m["swarm"] / m["make"], 2)))
                rows.append(row("1 scheduling", f"{case}: wall s", round(m["swarm"], 3), "floor (K threads, sh -c true)",
                                round(fl, 3), round(m["swarm"] / fl, 2)))
                peer_over = f"ninja {per(m['ninja']):.3f}, make {per(m['make']):.3f}" if "ninja" in m else f"make {per(m['make']):.3f}"
                rows.append(row("1 scheduling", f"{case}: ms/task over floor", round(per(m["swarm"]), 3),
                                "ninja, make", peer_over, None, "", None,
                                f"floor {fl / n * 1000:.3f} ms/task; swarm {m['swarm'] / n * 1000:.3f} ms/task in all"))
                # Confinement (a Landlock ruleset per attempt) against the rest of swarm's
                # per-task overhead: the target is under 5 %.
                added = per(m["swarm"]) - per(m["unconfined"])
                share = added / per(m["unconfined"]) if per(m["unconfined"]) > 0 else 0.0
                rows.append(row("1 scheduling", f"{case}: confinement ms/task", round(added, 4),
                                "overhead unconfined", f"{per(m['unconfined']):.3f} ms/task",
                                round(share, 3), "< 5 %" if is_target else "",
                                (share < 0.05) if is_target else None,
                                f"confined {per(m['swarm']):.3f}, unconfined {per(m['unconfined']):.3f} ms/task over floor"))
                traced = m["traced"] / m["swarm"]
                rows.append(row("1 scheduling", f"{case}: wall s, trace export on", round(m["traced"], 3),
                                "export off", round(m["swarm"], 3), round(traced, 3), "<= 1.05",
                                traced <= 1.05, "OTLP/HTTP to a black-hole collector (accepts, never answers)"))
                rows.append(row("1 scheduling", f"{case}: peak RSS MiB", round(mr["swarm"] / 1024, 1),
                                "ninja" if "ninja" in mr else "make",
                                round(mr.get("ninja", mr["make"]) / 1024, 1),
                                round(mr["swarm"] / mr.get("ninja", mr["make"]), 2)))
    return rows, extra


# ---------------------------------------------------------------- part 2: makespan


def read_stg(path: Path) -> tuple[list[int], list[list[int]]]:
    """Costs and predecessors of the real tasks, re-indexed from 0 in id order; the zero-cost
    entry (0) and exit (n+1) nodes are dropped."""
    lines = [l.split() for l in path.read_text().splitlines() if l.strip()]
    n = int(lines[0][0])
    raw = {}
    for fields in lines[1:]:
        if not fields[0].isdigit():
            break  # the set's files may end with comments
        i, c, k = int(fields[0]), int(fields[1]), int(fields[2])
        raw[i] = (c, [int(p) for p in fields[3:3 + k]])
    real = [i for i in sorted(raw) if 1 <= i <= n]
    index = {t: j for j, t in enumerate(real)}
    cost = [raw[t][0] for t in real]
    preds = [[index[p] for p in raw[t][1] if p in index] for t in real]
    return cost, preds


def lower_bound(cost, preds, k) -> float:
    finish = []
    for i, c in enumerate(cost):
        finish.append(c + max((finish[p] for p in preds[i]), default=0))
    return max(max(finish), sum(cost) / k)


def unit_priorities(preds) -> list[int]:
    """swarm's rule (plan::priorities): tasks on the longest path to a sink, itself included."""
    n = len(preds)
    succ = [[] for _ in range(n)]
    for i, ps in enumerate(preds):
        for p in ps:
            succ[p].append(i)
    prio = [1] * n
    for i in reversed(range(n)):  # ids are in topological order: preds have smaller ids
        prio[i] = 1 + max((prio[s] for s in succ[i]), default=0)
    return prio


def simulate_list(cost, preds, k) -> float:
    """Zero-overhead list scheduling with swarm's rule: a ready task starts as soon as a slot is
    free; the highest priority first, ties to the earlier task in the file."""
    n = len(cost)
    prio = unit_priorities(preds)
    succ = [[] for _ in range(n)]
    waiting = [len(ps) for ps in preds]
    for i, ps in enumerate(preds):
        for p in ps:
            succ[p].append(i)
    ready = [(-prio[i], i) for i in range(n) if waiting[i] == 0]
    heapq.heapify(ready)
    running = []  # (finish time, task)
    now, done = 0.0, 0
    while done < n:
        while ready and len(running) < k:
            _, i = heapq.heappop(ready)
            heapq.heappush(running, (now + cost[i], i))
        now = running[0][0]
        while running and running[0][0] == now:
            _, i = heapq.heappop(running)
            done += 1
            for s in succ[i]:
                waiting[s] -= 1
                if waiting[s] == 0:
                    heapq.heappush(ready, (-prio[s], s))
    return now


def simulate_levels(cost, preds, k) -> float:
    """Level by level: every task of one depth level (greedily on K workers, in file order),
    then the next level."""
    depth = []
    for i in range(len(cost)):
        depth.append(1 + max((depth[p] for p in preds[i]), default=0))
    total = 0.0
    for level in sorted(set(depth)):
        workers = [0.0] * k
        for i in (i for i in range(len(cost)) if depth[i] == level):
            w = min(range(k), key=workers.__getitem__)
            workers[w] += cost[i]
        total += max(workers)
    return total


def write_stg_tasks(path: Path, cost, preds) -> None:
    with open(path, "w") as f:
        for i, c in enumerate(cost):
            task = {"id": f"t{i + 1}", "run": f"sleep {c * STG_UNIT:.2f}", "mode": "read"}
            if preds[i]:
                task["deps"] = [f"t{p + 1}" for p in preds[i]]
            f.write(json.dumps(task, separators=(",", ":")) + "\n")


def part_makespan(swarm: str, quick: bool, runs: int, work: Path) -> list[dict]:
    graphs = sorted(STG_DIR.glob("*.stg"))
    if not graphs:
        return [row("2 makespan", "STG graphs", "n/a", note=f"no .stg files in {STG_DIR}")]
    if quick:
        graphs = [g for g in graphs if g.stem in ("rand0000", "rand0001")]
    ks = [4] if quick else [2, 4, 8, 16]
    rows = []
    for g in graphs:
        cost, preds = read_stg(g)
        d = work / f"p2-{g.stem}"
        d.mkdir(parents=True, exist_ok=True)
        tasks = d / "tasks.jsonl"
        write_stg_tasks(tasks, cost, preds)
        # The 452-task graph alone sleeps 90 s per repetition: once is enough, sleeps are steady.
        reps = 1 if len(cost) > 200 else runs
        for k in ks:
            log(f"part 2: {g.stem} -j {k}")
            bound = lower_bound(cost, preds, k) * STG_UNIT
            sim = simulate_list(cost, preds, k) * STG_UNIT
            levels = simulate_levels(cost, preds, k) * STG_UNIT
            spans, walls = [], []
            for _ in range(reps):
                w, _, run_dir = run_swarm(swarm, tasks, k, d / "swarm")
                walls.append(w)
                spans.append(run_span(run_dir))
            span = median(spans)
            ratio = span / sim
            rows.append(row("2 makespan", f"{g.stem} ({len(cost)} tasks) -j {k}: makespan s",
                            round(span, 2), "sim. of swarm's rule", round(sim, 2), round(ratio, 3),
                            "<= 1.05 x sim", ratio <= 1.05,
                            f"bound {bound:.2f} s; swarm/bound {span / bound:.3f}; rule/bound {sim / bound:.3f}; "
                            f"levels/bound {levels / bound:.3f}; wall {median(walls):.2f} s; runs {reps}"))
    return rows


# ---------------------------------------------------------------- part 5: start-up and size


def part_startup(swarm: str, quick: bool, p1: dict) -> list[dict]:
    reps = 5 if quick else 30
    hello = str(OUT / "hello")
    log("part 5: start-up and size")

    def best_of(cmd):
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
            times.append(time.perf_counter() - t0)
        return median(times) * 1000

    sv, hv = best_of([swarm, "--version"]), best_of([hello])
    rows = [row("5 start-up", "`swarm --version` ms", round(sv, 2), "hello-world (rustc -O)", round(hv, 2),
                round(sv / hv, 2), note=f"median of {reps}")]
    size = os.path.getsize(swarm)
    hsize = os.path.getsize(hello)
    rows.append(row("5 start-up", "binary size MiB", round(size / 2**20, 2), "hello-world",
                    round(hsize / 2**20, 2), round(size / hsize, 1), note="target/release/swarm as built"))
    big = p1.get((10000, "fan-in 2", 2)) or p1.get((1000, "fan-in 2", 2))
    if big:
        n = 10000 if (10000, "fan-in 2", 2) in p1 else 1000
        rss = big["rss"]
        peer = "ninja" if "ninja" in rss else "make"
        rows.append(row("5 start-up", f"peak RSS MiB, {n:,}-task run -j 2", round(rss["swarm"] / 1024, 1), peer,
                        round(rss[peer] / 1024, 1), round(rss["swarm"] / rss[peer], 1),
                        note="from part 1" + ("" if TIME else " (getrusage high-water mark)")))
    return rows


# ---------------------------------------------------------------- the table


def fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


COLUMNS = ["part", "case", "swarm", "peer", "peer_value", "ratio", "target", "met", "note"]


def print_table(rows: list[dict]) -> str:
    cells = [[fmt(r.get(c)) for c in COLUMNS] for r in rows]
    widths = [max(len(c), *(len(x[i]) for x in cells)) if cells else len(c) for i, c in enumerate(COLUMNS)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for x in cells:
        lines.append("  ".join(v.ljust(w) for v, w in zip(x, widths)).rstrip())
    return "\n".join(lines)


def markdown(rows: list[dict]) -> str:
    head = "| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS) + "\n"
    return head + "".join("| " + " | ".join(fmt(r.get(c)).replace("|", "\\|") for c in COLUMNS) + " |\n"
                          for r in rows)


def machine() -> str:
    model = ""
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    mem = ""
    try:
        kb = int(next(l for l in open("/proc/meminfo") if l.startswith("MemTotal")).split()[1])
        mem = f"{kb / 2**20:.0f} GiB"
    except (OSError, StopIteration):
        pass
    return f"{os.cpu_count()} CPUs ({model}), {mem} RAM, Linux {os.uname().release}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="each part once, at small sizes")
    ap.add_argument("--only", action="append", choices=["1", "2", "3", "4", "5", "6", "7", "8", "9"],
                    help="run only this part (repeatable)")
    ap.add_argument("--runs", type=int, help="runs per measurement (default 5, quick 1)")
    ap.add_argument("--swarm", default=str(ROOT / "target" / "release" / "swarm"))
    args = ap.parse_args()
    runs = args.runs or (1 if args.quick else 5)
    parts = set(args.only or ["1", "2", "3", "4", "5", "6", "7", "8", "9"])
    OUT.mkdir(parents=True, exist_ok=True)
    for tool in ("floor", "hello"):
        if not (OUT / tool).exists():
            subprocess.run(["rustc", "--edition", "2021", "-O", "-o", str(OUT / tool),
                            str(ROOT / "benches" / f"{tool}.rs")], check=True)
    if not os.path.exists(args.swarm):
        sys.exit(f"no swarm binary at {args.swarm}; run `cargo build --release` (benches/run does)")
    started = time.perf_counter()
    rows, p1 = [], {}
    work = Path(tempfile.mkdtemp(prefix="swarm-bench-"))
    try:
        if "1" in parts or "5" in parts:
            # Part 5 reads peak memory from part 1's largest run.
            r, p1 = part_scheduling(args.swarm, args.quick, runs, work)
            if "1" in parts:
                rows += r
        if "2" in parts:
            rows += part_makespan(args.swarm, args.quick, 1 if args.quick else min(runs, 3), work)
        sys.path.insert(0, str(ROOT / "benches"))
        for part, name in (("3", "merges"), ("4", "llm"), ("8", "cache"), ("9", "memory")):
            if part not in parts:
                continue
            if not (ROOT / "benches" / f"{name}.py").exists():
                continue
            log(f"part {part}: benches/{name}.py")
            try:
                rows += importlib.import_module(name).run(args.swarm, args.quick)
            except Exception as e:  # one broken part must not lose the others' figures
                rows.append(row(f"{part} {name}", "error", "n/a", note=f"{type(e).__name__}: {e}"))
        if "5" in parts:
            rows += part_startup(args.swarm, args.quick, p1)
        if "6" in parts and (ROOT / "benches" / "builds.py").exists():
            log("part 6: benches/builds.py")
            try:
                rows += importlib.import_module("builds").run(args.swarm, args.quick)
            except Exception as e:  # one broken part must not lose the others' figures
                rows.append(row("6 real builds", "error", "n/a", note=f"{type(e).__name__}: {e}"))
        if "7" in parts and (ROOT / "benches" / "remote.py").exists():
            log("part 7: benches/remote.py")
            try:
                rows += importlib.import_module("remote").run(args.swarm, args.quick)
            except Exception as e:  # one broken part must not lose the others' figures
                rows.append(row("7 remote", "error", "n/a", note=f"{type(e).__name__}: {e}"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    elapsed = time.perf_counter() - started
    rows.sort(key=lambda r: r["part"].split()[0])
    table = print_table(rows)
    where = machine()
    print(table)
    print(f"\n{where}; {'quick' if args.quick else 'full'} run, {runs} run(s) per figure, {elapsed:.0f} s")
    result = {"machine": where, "quick": args.quick, "runs": runs, "seconds": round(elapsed, 1), "rows": rows}
    (OUT / "results.json").write_text(json.dumps(result, indent=1) + "\n")
    (OUT / "results.md").write_text(
        f"Machine: {where}. Mode: {'quick' if args.quick else 'full'}, medians of {runs} run(s); "
        f"suite took {elapsed:.0f} s.\n\n" + markdown(rows))
    log(f"wrote {OUT / 'results.json'} and {OUT / 'results.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
