"""Part 6 of the benchmark: real builds.

A real crate from the registry with its own test suite (`semver`, a pinned version, with its
dev-dependencies) is committed into a temporary git repository. Eight writers (command tasks)
each append a small item to a different file (a doc-commented constant to six files of `src/`,
a trivial `#[test]` to two files of `tests/`), with `--check "cargo test --offline -q"`, `-j 4`,
landing to a branch. Total wall time of `swarm run`, in three configurations:

  (a) no preparation: every writer's checkout builds cold;
  (b) `cache = ["target"]` in `.swarm.toml`: new checkouts are seeded with the user's `target/`
      (warmed first by one untimed `cargo test --offline -q` in the user's checkout), reused
      ones keep theirs;
  (c) the floor: one warm incremental `cargo test --offline -q` after such an edit in one
      checkout (the median of the eight edits made one after another), times 8 writers / 4
      slots;
  (d) the floor as this machine runs it: 4 warm checkouts, each built at its own path first,
      the eight edits shared out among them and checked 4 at a time, as 4 slots would if each
      had a warm checkout of its own for good. It costs what (c) leaves out: 4 builds at once
      sharing the machine's CPUs.

Each checkout has its own `target/` (no `CARGO_TARGET_DIR`), `CARGO_HOME` is shared (the
registry), `CARGO_INCREMENTAL` is cargo's default. A fresh repository per run. The crate is
fetched once with cargo (a scratch project depending on it, then `cargo fetch` in the unpacked
crate), so everything after that is offline. `--quick`: one run of each configuration, 4 of the
writers at `-j 2` (the floor then 4 / 2).

Run alone: `python3 benches/builds.py [--quick]`.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# Where the repositories go, and what file system that is: as part 3 has them.
from merges import filesystem, scratch_dir

PART = "6 real builds"
CRATE, VERSION = "semver", "1.0.28"
CHECK = "cargo test --offline -q"
# One file per writer; `src/` edits rebuild the library and everything that links it,
# `tests/` edits one test binary.
FILES = [
    "src/display.rs",
    "src/error.rs",
    "src/eval.rs",
    "src/identifier.rs",
    "src/impls.rs",
    "src/parse.rs",
    "tests/test_version.rs",
    "tests/test_version_req.rs",
]
GIT = ["git", "-c", "core.hooksPath=/dev/null", "-c", "user.name=bench",
       "-c", "user.email=bench@example.invalid", "-c", "init.defaultBranch=main"]
DATES = {"GIT_AUTHOR_DATE": "2020-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2020-01-01T00:00:00Z"}


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def cargo_env() -> dict:
    """The environment of every cargo and swarm process here: no CARGO_TARGET_DIR (each checkout
    builds into its own target/), no CARGO_INCREMENTAL (cargo's default), nothing of git's or
    swarm's own."""
    drop = ("CARGO_TARGET_DIR", "CARGO_INCREMENTAL", "CARGO_BUILD_TARGET_DIR")
    return {k: v for k, v in os.environ.items()
            if k not in drop and not k.startswith(("GIT_", "SWARM_"))}


def timed(cmd: list[str], cwd: Path, env: dict | None = None) -> float:
    """Runs cmd; its wall time in seconds. A failure raises with the end of its output."""
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env or cargo_env(), capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` in {cwd} exited {proc.returncode}: "
                           f"{(proc.stderr or proc.stdout)[-1500:]}")
    return wall


def fetch_crate(work: Path) -> Path:
    """The crate's source, unpacked from the registry's .crate file, with its dev-dependencies
    fetched: a directory ready to be copied into each run's repository."""
    scratch = work / "fetch"
    (scratch / "src").mkdir(parents=True)
    (scratch / "src" / "lib.rs").write_text("")
    (scratch / "Cargo.toml").write_text(
        '[package]\nname = "bench-fetch"\nversion = "0.0.0"\nedition = "2021"\n\n'
        f'[dependencies]\n{CRATE} = "={VERSION}"\n')
    timed(["cargo", "fetch", "-q"], scratch)
    home = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo"))
    crates = sorted((home / "registry" / "cache").glob(f"*/{CRATE}-{VERSION}.crate"))
    if not crates:
        raise RuntimeError(f"cargo fetch left no {CRATE}-{VERSION}.crate under {home}/registry/cache")
    with tarfile.open(crates[0]) as tar:
        tar.extractall(work / "crate")
    src = work / "crate" / f"{CRATE}-{VERSION}"
    # The crate's own Cargo.lock pins its dev-dependencies; fetch them once, for every run.
    timed(["cargo", "fetch", "-q"], src)
    timed(["cargo", "metadata", "--offline", "-q", "--format-version", "1"], src)
    return src


def new_repo(crate: Path, at: Path, cache: bool) -> Path:
    """A git repository holding the crate (its Cargo.lock committed), with `.swarm.toml` saying
    `cache = ["target"]` when `cache`."""
    repo = at / "repo"
    shutil.copytree(crate, repo)
    if cache:
        (repo / ".swarm.toml").write_text('cache = ["target"]\n')
    env = {**os.environ, **DATES}
    subprocess.run([*GIT, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=repo, check=True)
    # semver's .gitignore lists Cargo.lock; the cache key (and `--offline`) needs it committed.
    subprocess.run([*GIT, "add", "-f", "Cargo.lock"], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", f"{CRATE} {VERSION}"], cwd=repo, check=True, env=env)
    return repo


def edit(i: int, path: str) -> str:
    """Writer i's addition to `path`: a documented constant in the library, a test in a test
    file."""
    if path.startswith("tests/"):
        return f"\n#[test]\nfn bench_edit_{i}() {{\n    assert_eq!({i} + 1, {i + 1});\n}}\n"
    return f"\n/// Added by writer {i} of the benchmark.\n#[allow(dead_code)]\nconst BENCH_EDIT_{i}: u32 = {i};\n"


def write_tasks(at: Path, files: list[str]) -> Path:
    snippets = at / "edits"
    snippets.mkdir()
    tasks = at / "tasks.jsonl"
    with tasks.open("w") as f:
        for i, path in enumerate(files):
            snippet = snippets / f"w{i}.rs"
            snippet.write_text(edit(i, path))
            task = {"id": f"w{i}", "title": f"Edit {path}", "run": f"cat {snippet} >> {path}"}
            f.write(json.dumps(task) + "\n")
    return tasks


def swarm_run(swarm: str, repo: Path, at: Path, files: list[str], jobs: int) -> dict:
    """One timed `swarm run` of the writers; its wall time and what its transcripts say."""
    tasks = write_tasks(at, files)
    cmd = [swarm, "run", str(tasks), "-q", "-j", str(jobs), "--check", CHECK, "--land", "branch",
           "--worktree-dir", str(at / "wt")]
    t, cpu = time.perf_counter(), cpu_seconds()
    proc = subprocess.run(cmd, cwd=repo, env=cargo_env(), capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t, cpu_seconds() - cpu
    runs_dir = repo / ".git" / "swarm" / "runs"
    if not runs_dir.is_dir():
        raise RuntimeError(f"swarm run exited {proc.returncode}: {proc.stderr.strip()[-1500:]}")
    run_dir = sorted(runs_dir.iterdir(), key=lambda p: p.stat().st_mtime)[-1]
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    merged = sum(1 for e in events if e["kind"] == "merged")
    if proc.returncode != 0 or merged != len(files):
        raise RuntimeError(f"swarm run exited {proc.returncode} with {merged} of {len(files)} merged: "
                           f"{proc.stderr.strip()[-1500:]}")
    checks, seeds, kept = [], [], 0
    for log_file in sorted((run_dir / "attempts").glob("*.log")):
        text = log_file.read_text(errors="replace")
        if log_file.name.endswith(".check.log"):
            ends = re.findall(r"--- end: \w+ after ([0-9.]+)s", text)
            checks += [float(s) for s in ends[-1:]]
            continue
        seeds += [float(s) for s in re.findall(r"cache: seeded target from .* in ([0-9.]+)s", text)]
        kept += len(re.findall(r"cache: target kept from the reused checkout", text))
    return {"wall": wall, "cpu": cpu, "checks": checks, "seeds": seeds, "kept": kept}


def cpu_seconds() -> float:
    """User and system time of this process's finished children (and theirs), so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def floor_steps(repo: Path, files: list[str]) -> tuple[list[float], float]:
    """The writers' edits made one after another in one warm checkout, each followed by the
    check; the wall time of each check, and the CPU time of all of them."""
    steps = []
    cpu = cpu_seconds()
    for i, path in enumerate(files):
        with (repo / path).open("a") as f:
            f.write(edit(i, path))
        steps.append(timed(["sh", "-c", CHECK], repo))
    return steps, cpu_seconds() - cpu


def parallel_floor(repo: Path, files: list[str], jobs: int) -> float:
    """(d): the writers' edits shared out among `jobs` warm checkouts of `repo` (copied with
    their times, then built once at their own paths, untimed), each checkout making its edits
    one after another while the others make theirs; the wall time of all of them."""
    copies = []
    for k in range(jobs):
        copy = repo.parent / f"warm{k}"
        shutil.copytree(repo, copy, symlinks=True)
        timed(["sh", "-c", CHECK], copy)
        copies.append(copy)

    def steps(k: int) -> None:
        for i in range(k, len(files), jobs):
            with (copies[k] / files[i]).open("a") as f:
                f.write(edit(i, files[i]))
            timed(["sh", "-c", CHECK], copies[k])

    t = time.perf_counter()
    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(steps, range(jobs)))
    wall = time.perf_counter() - t
    for copy in copies:
        shutil.rmtree(copy)
    return wall


def du_mib(path: Path) -> float:
    total = 0
    for dirpath, _, names in os.walk(path):
        for n in names:
            try:
                total += os.lstat(os.path.join(dirpath, n)).st_size
            except OSError:
                pass
    return total / 2**20


def row(case, swarm_value, peer="", peer_value="", target="", limit=None, note="") -> dict:
    ratio = None
    if isinstance(swarm_value, (int, float)) and isinstance(peer_value, (int, float)) and peer_value:
        ratio = round(swarm_value / peer_value, 2)
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


def run_part(swarm: str, quick: bool) -> list[dict]:
    # --quick: one run of each, 4 writers at -j 2 (two new checkouts and two reused ones, as in
    # the full part), so that the cold builds of (a) take a minute or two, not three.
    reps, files, jobs = (1, FILES[::2], 2) if quick else (3, FILES, 4)
    writers = len(files)
    swarm = str(Path(swarm).resolve())
    work = Path(tempfile.mkdtemp(prefix="swarm-bench-builds-", dir=scratch_dir()))
    try:
        log(f"part 6: fetching {CRATE} {VERSION} and its dev-dependencies")
        crate = fetch_crate(work)
        cold, plain, cached, steps, step_cpu, target_mib = [], [], [], [], [], 0.0
        shared = []
        for rep in range(reps):
            log(f"part 6: run {rep + 1} of {reps}: (a) no preparation")
            at = work / f"a{rep}"
            at.mkdir()
            plain.append(swarm_run(swarm, new_repo(crate, at, cache=False), at, files, jobs))
            shutil.rmtree(at)

            log(f"part 6: run {rep + 1} of {reps}: (b) cache = [\"target\"], the user's checkout warmed first")
            at = work / f"b{rep}"
            at.mkdir()
            repo = new_repo(crate, at, cache=True)
            cold.append(timed(["sh", "-c", CHECK], repo))
            target_mib = du_mib(repo / "target")
            cached.append(swarm_run(swarm, repo, at, files, jobs))
            log(f"part 6: run {rep + 1} of {reps}: (d) the floor in {jobs} warm checkouts at once")
            shared.append(parallel_floor(repo, files, jobs))
            log(f"part 6: run {rep + 1} of {reps}: (c) the floor, in the user's warm checkout")
            wall, cpu = floor_steps(repo, files)
            steps += wall
            step_cpu.append(cpu)
            shutil.rmtree(at)
        fs = filesystem(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    m = statistics.median
    step = m(steps)
    floor = step * writers / jobs
    a, b = m(r["wall"] for r in plain), m(r["wall"] for r in cached)
    d = m(shared)
    # What 2 CPUs can do at best: the CPU time of the steps spread over the slots that have
    # a CPU each.
    cores = min(jobs, os.cpu_count() or 1)
    cpu_floor = m(step_cpu) / cores
    size = f"{CRATE} {VERSION}, {writers} writers, -j {jobs}, --check \"{CHECK}\""
    runs = f"median of {reps} run{'s' if reps > 1 else ''}"
    pool = lambda runs, key: [v for r in runs for v in r[key]]  # noqa: E731
    a_checks, b_checks, seeds = pool(plain, "checks"), pool(cached, "checks"), pool(cached, "seeds")
    kept = sum(r["kept"] for r in cached)
    fmt = lambda xs: f"{m(xs):.2f} s (min {min(xs):.2f}, max {max(xs):.2f})" if xs else "none"  # noqa: E731
    return [
        row(f"(a) no preparation: wall s ({size})", round(a, 2),
            f"floor (c): warm incremental check x {writers} / {jobs}", round(floor, 2),
            "for information", None,
            f"{runs}; each writer's checkout builds cold: its check {fmt(a_checks)}; "
            f"CPU time of the run {m(r['cpu'] for r in plain):.0f} s"),
        row(f"(b) cache = [\"target\"]: wall s ({size})", round(b, 2),
            f"floor (c): warm incremental check x {writers} / {jobs}", round(floor, 2),
            "<= 1.5x floor", 1.5,
            f"{runs}; the user's checkout warmed first by one untimed `{CHECK}` "
            f"({fmt(cold)}; target/ {target_mib:.0f} MiB); new checkouts seeded "
            f"({len(seeds)}: copy {fmt(seeds)}), reused ones kept target/ ({kept}); "
            f"checks {fmt(b_checks)}; CPU time of the run {m(r['cpu'] for r in cached):.1f} s; "
            f"scratch on {fs}"),
        row(f"(c) floor: one warm incremental `{CHECK}` after an edit, s", round(step, 2),
            f"the {writers} edit-and-check steps one after another", round(sum(steps) / reps, 2),
            "", None,
            f"median of {len(steps)} steps (min {min(steps):.2f}, max {max(steps):.2f}); "
            f"floor = {step:.2f} x {writers} / {jobs} = {floor:.2f} s; (a)/(c) {a / floor:.1f}, "
            f"(b)/(c) {b / floor:.2f}; the {writers} steps took {m(step_cpu):.1f} s of CPU, "
            f"{cpu_floor:.2f} s on {cores} CPU(s) at best ((b) / that {b / cpu_floor:.2f})"),
        row(f"(b) against (d), the floor on this machine: wall s ({size})", round(b, 2),
            f"(d): the {writers} edits in {jobs} warm checkouts, {jobs} at a time", round(d, 2),
            "for information", None,
            f"(d) {runs} (min {min(shared):.2f}, max {max(shared):.2f}); (d)/(c) {d / floor:.2f}: "
            f"what {jobs} builds at once on {os.cpu_count()} CPU(s) cost over the floor's "
            f"{writers} / {jobs}; (a)/(d) {a / d:.1f}"),
    ]


def run(swarm: str, quick: bool) -> list[dict]:
    """The part's rows, for benches/suite.py."""
    return run_part(swarm, quick)


def main() -> None:
    quick = "--quick" in sys.argv[1:]
    here = Path(__file__).resolve().parent
    swarm = os.environ.get("SWARM_BIN", str(here.parent / "target" / "release" / "swarm"))
    t = time.perf_counter()
    for r in run_part(swarm, quick):
        print(json.dumps(r, ensure_ascii=False))
    print(f"# part 6 took {time.perf_counter() - t:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
