"""Part 3 of the benchmark: writer worktrees and merges.

A generated repository (nested directories of small text files, a few hundred commits of
history) gets one writer task per file, run with `swarm run -j 4`. From the run's event log:
the time from `task_started` to the first line of the writer's command (the worktree, the
spawn and a status scan of the user's checkout) and each merge's own duration (`merged`,
detail "ms"). The peers do the same work with git on branches made the same way: `git worktree
add` (timed alone), then one merge at a time, with `git merge --no-ff` in a checkout and with
`git merge-tree --write-tree --merge-base` + `commit-tree` + `update-ref`.

Run alone: `python3 benches/merges.py [--quick]`.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PART = "3. writers and merges"
GIT = ["git", "-c", "core.hooksPath=/dev/null"]
IDENTITY = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def git(repo: Path, *args: str, env: dict | None = None) -> str:
    out = subprocess.run(
        [*GIT, "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return out.stdout.strip()


def timed_git(repo: Path, *args: str, env: dict | None = None) -> tuple[str, float]:
    """Runs git and returns its stdout and the wall time in ms (spawn included)."""
    t = time.perf_counter()
    out = git(repo, *args, env=env)
    return out, (time.perf_counter() - t) * 1000


def file_path(i: int) -> str:
    # 10 x 5 x 5 = 250 leaf directories, three levels deep.
    return f"pkg{i % 10}/mod{i // 10 % 5}/sub{i // 50 % 5}/file{i:05}.txt"


def file_text(i: int, rev: int) -> bytes:
    lines = [f"file {i} of the generated tree", f"revision {rev}", "x" * (20 + i % 40)]
    return ("\n".join(lines) + "\n").encode()


def generate_repo(repo: Path, files: int, commits: int) -> None:
    """A repository of `files` small files and `commits` commits, built with fast-import."""
    git(repo.parent, "init", "-q", "-b", "main", str(repo))
    git(repo, "config", "user.name", "bench")
    git(repo, "config", "user.email", "bench@example.com")
    rng = random.Random(files * 1000 + commits)
    revs = [0] * files
    chunks: list[bytes] = []

    def data(blob: bytes) -> None:
        chunks.append(b"data %d\n" % len(blob))
        chunks.append(blob)
        chunks.append(b"\n")

    when = 1_700_000_000
    for c in range(commits):
        chunks.append(b"commit refs/heads/main\n")
        chunks.append(b"committer bench <bench@example.com> %d +0000\n" % (when + c * 60))
        data(b"initial tree\n" if c == 0 else b"commit %d\n" % c)
        changed = range(files) if c == 0 else rng.sample(range(files), 3)
        for i in changed:
            if c > 0:
                revs[i] += 1
            chunks.append(b"M 100644 inline %s\n" % file_path(i).encode())
            data(file_text(i, revs[i]))
        chunks.append(b"\n")
    subprocess.run(
        [*GIT, "-C", str(repo), "fast-import", "--quiet"],
        input=b"".join(chunks),
        check=True,
    )
    git(repo, "reset", "-q", "--hard", "main")


def writer_files(files: int, writers: int) -> list[str]:
    step = files // writers
    return [file_path(i * step + (7 % step)) for i in range(writers)]


def run_swarm(swarm: str, repo: Path, work: Path, paths: list[str], rep: int) -> dict:
    """One `swarm run` of one writer per path; the per-writer and per-merge figures."""
    stamps = work / f"stamps{rep}"
    stamps.mkdir()
    tasks = work / f"tasks{rep}.jsonl"
    with tasks.open("w") as f:
        for i, path in enumerate(paths):
            cmd = f"date +%s%N > {stamps}/w{i}; echo change >> {path}"
            f.write(json.dumps({"id": f"w{i}", "run": cmd}) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "SWARM_"))}
    t = time.perf_counter()
    proc = subprocess.run(
        [swarm, "run", str(tasks), "-q", "-j", "4", "--land", "branch",
         "--worktree-dir", str(work / "wt")],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t
    runs_dir = repo / ".git" / "swarm" / "runs"
    if not runs_dir.is_dir():
        raise RuntimeError(f"swarm run exited {proc.returncode}: {proc.stderr.strip()}")
    runs = sorted(runs_dir.iterdir(), key=lambda p: p.stat().st_mtime)
    events = [json.loads(line) for line in (runs[-1] / "events.jsonl").read_text().splitlines()]
    started = {e["task"]: e["at"] for e in events if e["kind"] == "task_started"}
    merges = [e["detail"]["ms"] for e in events if e["kind"] == "merged"]
    worktree = []
    for task, at in started.items():
        stamp = stamps / f"{task}"
        if stamp.exists():
            worktree.append(int(stamp.read_text().strip()) / 1e6 - at)
    kinds = {e["kind"]: e["at"] for e in events}
    return {
        "exit": proc.returncode,
        "stderr": proc.stderr.strip(),
        "wall": wall,
        "logged": (kinds.get("run_ended", 0) - kinds.get("run_started", 0)) / 1000,
        "worktree": worktree,
        "merges": merges,
        "merged": len(merges),
    }


def run_peers(repo: Path, work: Path, paths: list[str], rep: int) -> dict:
    """The same branches made and merged with git alone, one at a time."""
    env = {**os.environ, **IDENTITY}
    base = git(repo, "rev-parse", "HEAD")
    prefix = f"peer{rep}"
    add_ms, commit_ms, branches = [], [], []
    for i, path in enumerate(paths):
        branch = f"{prefix}-w{i}"
        wt = work / "peerwt" / branch
        _, ms = timed_git(repo, "worktree", "add", "-q", "-b", branch, str(wt), base, env=env)
        add_ms.append(ms)
        t = time.perf_counter()
        with (wt / path).open("a") as f:
            f.write("change\n")
        git(wt, "commit", "-q", "-a", "-m", f"w{i}", env=env)
        commit_ms.append((time.perf_counter() - t) * 1000)
        branches.append(branch)
    for branch in branches:
        git(repo, "worktree", "remove", "--force", str(work / "peerwt" / branch))

    # git merge --no-ff in a checkout of the base.
    checkout = work / "peerwt" / f"{prefix}-int"
    git(repo, "worktree", "add", "-q", "-b", f"{prefix}-int", str(checkout), base, env=env)
    merge_ms = []
    for branch in branches:
        _, ms = timed_git(checkout, "merge", "--no-ff", "-q", "-m", f"merge {branch}", branch,
                          env=env)
        merge_ms.append(ms)
    git(repo, "worktree", "remove", "--force", str(checkout))

    # merge-tree with the base given, commit-tree, update-ref: nothing checked out.
    ref = f"refs/heads/{prefix}-mt"
    git(repo, "update-ref", ref, base)
    tip = base
    tree_ms = []
    for branch in branches:
        t = time.perf_counter()
        tree = git(repo, "merge-tree", "--write-tree", f"--merge-base={base}", tip, branch)
        commit = git(repo, "commit-tree", tree, "-p", tip, "-p", branch, "-m", f"merge {branch}",
                     env=env)
        git(repo, "update-ref", ref, commit, tip)
        tree_ms.append((time.perf_counter() - t) * 1000)
        tip = commit
    return {
        "add": add_ms,
        "commit": commit_ms,
        "merge": merge_ms,
        "tree": tree_ms,
        "sequential": (sum(add_ms) + sum(commit_ms) + sum(tree_ms)) / 1000,
    }


def scratch_dir() -> str | None:
    """Where the repositories go: $BENCH_TMPDIR, else /dev/shm (tmpfs) when writable, else the
    default temp dir. On this machine's journal-less ext4 each new inode is allocated past the
    recently deleted ones (kernel `recently_deleted`), so creating a 5,000-file worktree took
    0.1 to 2 s depending on what was deleted before, for git and swarm alike; tmpfs keeps the
    figures about swarm and git rather than about the file system's history."""
    if os.environ.get("BENCH_TMPDIR"):
        return os.environ["BENCH_TMPDIR"]
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        return "/dev/shm"
    return None


def filesystem(path: Path) -> str:
    out = subprocess.run(["stat", "-f", "-c", "%T", str(path)], capture_output=True, text=True)
    return out.stdout.strip() or "unknown fs"


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def row(case, swarm_value, peer, peer_value, target, limit, note) -> dict:
    ratio = None
    if isinstance(swarm_value, (int, float)) and isinstance(peer_value, (int, float)) and peer_value:
        ratio = round(swarm_value / peer_value, 3)
    return {
        "part": PART,
        "case": case,
        "swarm": swarm_value,
        "peer": peer,
        "peer_value": peer_value,
        "ratio": ratio,
        "target": target,
        "met": None if limit is None or ratio is None else ratio <= limit,
        "note": note,
    }


def run(swarm: str, quick: bool) -> list[dict]:
    files, commits, writers, reps = (1000, 100, 10, 1) if quick else (5000, 300, 50, 3)
    swarm = str(Path(swarm).resolve())
    work = Path(tempfile.mkdtemp(prefix="swarm-bench-merges-", dir=scratch_dir()))
    try:
        repo = work / "repo"
        t = time.perf_counter()
        generate_repo(repo, files, commits)
        gen_s = time.perf_counter() - t
        paths = writer_files(files, writers)
        swarms, peers = [], []
        for rep in range(reps):
            swarms.append(run_swarm(swarm, repo, work, paths, rep))
            peers.append(run_peers(repo, work, paths, rep))
        out = rows(swarms, peers, files, commits, writers, gen_s)
        out[0]["note"] += f"; scratch dir {work.parent} ({filesystem(work)})"
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def rows(swarms, peers, files, commits, writers, gen_s) -> list[dict]:
    pool = lambda runs, key: [v for r in runs for v in r[key]]  # noqa: E731
    wt, merges = pool(swarms, "worktree"), pool(swarms, "merges")
    add, merge, tree = pool(peers, "add"), pool(peers, "merge"), pool(peers, "tree")
    reps = len(swarms)
    size = f"{files} files, {commits} commits, {writers} writers, -j 4"
    runs = f"{reps} run{'s' if reps > 1 else ''}"
    bad = [s for s in swarms if s["exit"] != 0 or s["merged"] != writers]
    trouble = ""
    if bad:
        trouble = f"; PROBLEM: {len(bad)} run(s) exited {[s['exit'] for s in bad]} with " \
                  f"{[s['merged'] for s in bad]} merges: {bad[0]['stderr'][:200]}"
    m = lambda v: round(statistics.median(v), 2)  # noqa: E731
    return [
        row(
            f"writer worktree creation, ms (median; {size})",
            m(wt),
            "git worktree add (sequential)",
            m(add),
            "≤ 1× git worktree add",
            1.0,
            f"swarm: task_started event → first line of the task's command, so it includes "
            f"the spawn and a status scan of the user's checkout, 4 at once on 2 cores; "
            f"p90 {pct(wt, 0.9):.1f} ms, git p90 {pct(add, 0.9):.1f} ms; "
            f"{len(wt)} samples over {runs}{trouble}",
        ),
        row(
            f"merge, ms (median; {size})",
            m(merges),
            "git merge-tree --write-tree --merge-base + commit-tree + update-ref",
            m(tree),
            "≤ 1.2× merge-tree path",
            1.2,
            f"swarm: `merged` event ms (in-process libgit2, spawn-free); git: three processes, "
            f"spawns included; p90 {pct(merges, 0.9):.2f} vs {pct(tree, 0.9):.2f} ms; "
            f"{len(merges)} merges over {runs}",
        ),
        row(
            f"merge, ms (median; {size})",
            m(merges),
            "git merge --no-ff in a checkout",
            m(merge),
            "≤ 0.2× git merge --no-ff",
            0.2,
            f"git merge p90 {pct(merge, 0.9):.1f} ms",
        ),
        row(
            f"whole run, s (median; {size})",
            round(statistics.median(s["wall"] for s in swarms), 3),
            "git alone, sequential: worktree add + edit + commit per branch, then merge-tree",
            round(statistics.median(p["sequential"] for p in peers), 3),
            "none (for information)",
            None,
            f"swarm: wall time of `swarm run` (run_started → run_ended in the log: "
            f"{statistics.median(s['logged'] for s in swarms):.3f} s); "
            f"git commit per branch median {m(pool(peers, 'commit')):.1f} ms; "
            f"repository generated in {gen_s:.1f} s",
        ),
    ]


def main() -> None:
    quick = "--quick" in sys.argv[1:]
    here = Path(__file__).resolve().parent
    swarm = os.environ.get("SWARM_BIN", str(here.parent / "target" / "release" / "swarm"))
    t = time.perf_counter()
    for r in run(swarm, quick):
        print(json.dumps(r, ensure_ascii=False))
    print(f"# part 3 took {time.perf_counter() - t:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
