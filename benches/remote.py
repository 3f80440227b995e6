"""Part 7 of the benchmark: a run spread over machines, against an on-disk remote.

A bare repository is the remote, the user's repository runs the coordinator, and two workers
run in clones of their own (each its own HOME), all on this machine. Figures:

  (a) git alone: one compare-and-swap push that creates a ref (what a claim is) and one fetch
      of a run's refs, each the median of 30, in milliseconds: the floor of a claim and of a
      result's round trip;
  (b) swarm, one task at a time: a chain of 20 reader tasks that do nothing (`true`), two
      workers, every process polling the remote each 50 ms (`SWARM_REMOTE_POLL=0.05`): per
      task, from the coordinator's events, the time from its publication to its claim as the
      coordinator saw it, and to its result's arrival: the round trip of a claim and a result;
  (c) swarm, many at once: 100 such tasks without deps, two workers at -j 8: the run's wall
      time per task.

Run alone: `python3 benches/remote.py [--quick]` (--quick: 40 tasks).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PART = "7 remote"
POLL = "0.05"


def git(*args: str, cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
                "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
                "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"})
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True,
                          capture_output=True, text=True).stdout


def ms(f) -> float:
    t = time.perf_counter()
    f()
    return (time.perf_counter() - t) * 1000


def swarm_env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "SWARM_"))}
    env.update({"HOME": str(home), "XDG_CACHE_HOME": str(home / "cache"),
                "GIT_CONFIG_NOSYSTEM": "1", "SWARM_REMOTE_POLL": POLL, "NO_COLOR": "1"})
    return env


def swarm_run(swarm: str, work: Path, remote: Path, user: Path, name: str, tasks: list) -> dict:
    """One `swarm run --remote` of `tasks` with two workers: its wall time, and per task the
    times from publication to claim and to the result's arrival, from the coordinator's log."""
    plan = work / f"{name}.jsonl"
    plan.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    workers = []
    for w in ("w1", "w2"):
        clone = work / f"{name}-{w}"
        git("clone", "-q", str(remote), str(clone), cwd=work)
        home = work / f"{name}-{w}-home"
        home.mkdir()
        workers.append(subprocess.Popen(
            [swarm, "worker", "--remote", "origin", "-j", "8", "--wait", "60s", "-q"],
            cwd=clone, env=swarm_env(home), stdin=subprocess.DEVNULL))
    home = work / f"{name}-home"
    home.mkdir()
    t = time.perf_counter()
    proc = subprocess.run([swarm, "run", str(plan), "--remote", "origin", "-q", "--land", "none"],
                          cwd=user, env=swarm_env(home), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True)
    wall = time.perf_counter() - t
    for w in workers:
        w.wait(timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"swarm run --remote exited {proc.returncode}: {proc.stderr[-1500:]}")
    runs = user / ".git" / "swarm" / "runs"
    run_dir = sorted(runs.iterdir())[-1]
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    at: dict[tuple[str, str], int] = {}
    for e in events:
        if e["kind"] in ("published", "claimed", "result_arrived") and "task" in e:
            at.setdefault((e["kind"], e["task"]), e["at"])
    ids = [t["id"] for t in tasks]
    return {"wall": wall,
            "claim": [at[("claimed", i)] - at[("published", i)] for i in ids],
            "trip": [at[("result_arrived", i)] - at[("published", i)] for i in ids]}


def run_part(swarm: str, quick: bool) -> list[dict]:
    tasks = 40 if quick else 100
    work = Path(tempfile.mkdtemp(prefix="swarm-bench-remote-"))
    try:
        remote = work / "remote.git"
        git("init", "-q", "--bare", "-b", "main", str(remote), cwd=work)
        user = work / "user"
        git("clone", "-q", str(remote), str(user), cwd=work)
        (user / "README").write_text("bench\n")
        git("add", "README", cwd=user)
        git("commit", "-q", "-m", "init", cwd=user)
        git("push", "-q", "origin", "main", cwd=user)

        # (a) git alone.
        head = git("rev-parse", "HEAD", cwd=user).strip()
        claims, fetches = [], []
        for i in range(30):
            ref = f"refs/swarm/bench/lease/t{i}"
            claims.append(ms(lambda: git("push", "-q", "--atomic", f"--force-with-lease={ref}:",
                                         "origin", f"{head}:{ref}", cwd=user)))
            fetches.append(ms(lambda: git("fetch", "-q", "--prune", "--no-write-fetch-head", "origin",
                                          "+refs/swarm/bench/*:refs/swarm/bench/*", cwd=user)))
        git("push", "-q", "origin", *[f":refs/swarm/bench/lease/t{i}" for i in range(30)], cwd=user)

        # (b) a chain (one task at a time: the round trip alone), (c) 100 at once (throughput).
        chain = [{"id": f"c{i:02}", "title": f"c{i}", "mode": "read", "run": "true",
                  **({"deps": [f"c{i - 1:02}"]} if i else {})} for i in range(20)]
        wide = [{"id": f"t{i:03}", "title": f"t{i}", "mode": "read", "run": "true"}
                for i in range(tasks)]
        figures = {}
        for name, plan_tasks in (("chain", chain), ("wide", wide)):
            figures[name] = swarm_run(swarm, work, remote, user, name, plan_tasks)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    m = statistics.median

    def p90(xs):
        return sorted(xs)[int(len(xs) * 0.9) - 1]

    floor = m(claims) + m(fetches)
    chain, wide = figures["chain"], figures["wide"]
    return [
        {"part": PART, "case": "(a) git alone: one compare-and-swap push (a claim), ms",
         "swarm": round(m(claims), 1), "peer": "one fetch of the run's refs, ms",
         "peer_value": round(m(fetches), 1), "ratio": None, "target": "for information",
         "met": None, "note": "medians of 30 against the bare repository on disk"},
        {"part": PART, "case": "(b) one task at a time: publication to result, ms (a chain of 20, 2 workers)",
         "swarm": m(chain["trip"]), "peer": "push + fetch floor (a), ms", "peer_value": round(floor, 1),
         "ratio": round(m(chain["trip"]) / floor, 2) if floor else None, "target": "for information",
         "met": None,
         "note": f"p90 {p90(chain['trip'])} ms; publication to claim (as the coordinator saw it) "
                 f"median {m(chain['claim'])} ms; every process polls each {POLL} s"},
        {"part": PART, "case": f"(c) {tasks} tasks at once, 2 workers -j 8: wall ms per task",
         "swarm": round(wide["wall"] * 1000 / tasks, 1), "peer": "", "peer_value": "",
         "ratio": None, "target": "for information", "met": None,
         "note": f"wall {wide['wall']:.2f} s; publication to result median {m(wide['trip'])} ms "
                 f"(queueing for the 16 slots included), p90 {p90(wide['trip'])} ms"},
    ]


def run(swarm: str, quick: bool) -> list[dict]:
    """The part's rows, for benches/suite.py."""
    return run_part(swarm, quick)


def main() -> None:
    quick = "--quick" in sys.argv[1:]
    here = Path(__file__).resolve().parent
    swarm = os.environ.get("SWARM_BIN", str(here.parent / "target" / "release" / "swarm"))
    for r in run_part(str(Path(swarm).resolve()), quick):
        print(json.dumps(r, ensure_ascii=False))


if __name__ == "__main__":
    main()
