"""The conflict ladder's structural rung replayed on a real history.

Every two-parent merge commit of a repository is merged again with git (`git merge-tree`); for
each file git's line merge leaves in conflict (a conflict of contents: both sides changed the
file), the structural rung does what swarm does: `mergiraf merge` of the file's three sides,
taken only when it leaves no conflict and every line either side added (compared without
indentation, blank lines not counted) is still in the result. What it gives is compared with
the file the project's developers committed:

- resolved, identical: the committed file, byte for byte;
- resolved, different: taken, but not the committed file (for each, whether the result lacks
  a line the developers kept from one side: that would be a side's change lost);
- refused: mergiraf merged it, but dropped a line a side added, so swarm does not take it;
- left conflicted: mergiraf left conflicts (or failed).

The repository is cloned into a temporary directory (nothing is committed here):
`python3 benches/conflicts.py [--repo URL|PATH] [--mergiraf PATH] [--limit N] [--json FILE]`,
by default https://github.com/tokio-rs/tokio and `mergiraf` on PATH.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def git(repo: Path, *args: str, check: bool = True, input: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=check, input=input)


def lines(text: bytes) -> set[str]:
    return {line.strip() for line in text.decode("utf-8", "replace").splitlines()}


def added(base: bytes, side: bytes) -> list[str]:
    """The lines `side` has that `base` has not, trimmed, blank lines left out."""
    had = lines(base)
    return [line.strip() for line in side.decode("utf-8", "replace").splitlines()
            if line.strip() and line.strip() not in had]


def drops(base: bytes, ours: bytes, theirs: bytes, merged: bytes) -> str | None:
    """The first line a side added that `merged` lacks: what swarm's check refuses."""
    kept = lines(merged)
    for side in (ours, theirs):
        for line in added(base, side):
            if line not in kept:
                return line
    return None


def show(repo: Path, rev: str, path: str) -> bytes | None:
    out = git(repo, "cat-file", "blob", f"{rev}:{path}", check=False)
    return out.stdout if out.returncode == 0 else None


def content_conflicts(repo: Path, ours: str, theirs: str) -> list[str] | None:
    """The files git's merge of the two commits leaves in a conflict of contents; None when the
    merge is clean (or has no merge base)."""
    out = git(repo, "merge-tree", "--write-tree", "--name-only", "--no-messages", ours, theirs, check=False)
    if out.returncode == 0:
        return None
    if out.returncode != 1:
        return None
    files = out.stdout.decode("utf-8", "replace").splitlines()[1:]
    return sorted({f for f in files if f})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", default="https://github.com/tokio-rs/tokio")
    ap.add_argument("--mergiraf", default=shutil.which("mergiraf") or "mergiraf")
    ap.add_argument("--limit", type=int, default=0, help="merges to replay (0: all)")
    ap.add_argument("--json", type=Path, help="write the figures and each file's outcome here")
    a = ap.parse_args()
    version = subprocess.run([a.mergiraf, "--version"], capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo.git"
        subprocess.run(["git", "clone", "-q", "--mirror", a.repo, str(repo)], check=True)
        merges = git(repo, "rev-list", "--all", "--merges").stdout.decode().split()
        if a.limit:
            merges = merges[: a.limit]
        sides_dir = Path(tmp) / "sides"
        sides_dir.mkdir()
        outcomes = []
        replayed = conflicted_merges = 0
        started = time.monotonic()
        for merge in merges:
            parents = git(repo, "rev-list", "--parents", "-n1", merge).stdout.decode().split()[1:]
            if len(parents) != 2:
                continue
            replayed += 1
            ours, theirs = parents
            files = content_conflicts(repo, ours, theirs)
            if not files:
                continue
            base_rev = git(repo, "merge-base", ours, theirs, check=False).stdout.decode().strip()
            if not base_rev:
                continue
            conflicted_merges += 1
            for path in files:
                b, o, t = show(repo, base_rev, path), show(repo, ours, path), show(repo, theirs, path)
                committed = show(repo, merge, path)
                if o is None or t is None:
                    continue  # a side deleted it: not a conflict of contents
                base = b or b""
                for name, data in (("base", base), ("ours", o), ("theirs", t)):
                    (sides_dir / name).write_bytes(data)
                out_file = sides_dir / "out"
                out_file.unlink(missing_ok=True)
                run = subprocess.run(
                    [a.mergiraf, "merge", "-p", path, "-s", "base", "-x", "integration", "-y", "this task",
                     "-o", str(out_file), str(sides_dir / "base"), str(sides_dir / "ours"), str(sides_dir / "theirs")],
                    capture_output=True, cwd=tmp, timeout=120,
                )
                result = out_file.read_bytes() if out_file.exists() else b""
                markers = any(line.startswith((b"<<<<<<< ", b">>>>>>> ")) or line == b"======="
                              for line in result.splitlines())
                if run.returncode != 0 or markers or not out_file.exists():
                    outcome, lost = "left conflicted", None
                elif (dropped := drops(base, o, t, result)) is not None:
                    outcome, lost = "refused", dropped
                elif committed is not None and result == committed:
                    outcome, lost = "resolved, identical", None
                else:
                    # Taken but not the developers' file: does it lack a line they kept from a side?
                    kept = lines(committed or b"")
                    side_lines = set(added(base, o)) | set(added(base, t))
                    missing = sorted((side_lines & kept) - lines(result))
                    outcome, lost = "resolved, different", (missing[0] if missing else None)
                outcomes.append({"merge": merge, "path": path, "outcome": outcome, "line": lost})
        took = time.monotonic() - started
    counts = {k: sum(1 for o in outcomes if o["outcome"] == k)
              for k in ("resolved, identical", "resolved, different", "refused", "left conflicted")}
    losing = sum(1 for o in outcomes if o["outcome"] == "resolved, different" and o["line"])
    print(f"{a.repo}: {replayed} two-parent merges replayed, {conflicted_merges} where git's line merge "
          f"conflicts, {len(outcomes)} files in conflict of contents; {version}; {took:.0f}s")
    print(f"{'structural rung':<36} {'files':>6} {'share':>7}")
    for k, n in counts.items():
        share = n / len(outcomes) if outcomes else 0.0
        print(f"{k:<36} {n:>6} {share:>7.1%}")
    print(f"taken but lacking a line the developers kept from a side: {losing}")
    if a.json:
        a.json.write_text(json.dumps({"repo": a.repo, "mergiraf": version, "replayed": replayed,
                                      "conflicted_merges": conflicted_merges, "counts": counts,
                                      "losing": losing, "files": outcomes}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
