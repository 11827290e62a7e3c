"""Benchmark: CPU seconds for ``openenv-release --version``, ``--help`` and ``envs`` to start.

Run: ``python bench/startup.py [--json PATH]``. Each command runs 5 times in a fresh
interpreter; the figure is the lowest user+system CPU time of the child (the machine's other
load only adds to it), beside the floor: the interpreter importing invoke and nothing else.
``python -X importtime`` then names the imports that cost the most for each command, so a
regression points at its module.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[1]
MAIN = "from openenv_release.cli import main; main()"
COMMANDS = {
    "--version": ["--version"],
    "--help": ["--help"],
    "envs": ["envs", "--repo", str(PROJECT / "examples")],
}
RUNS = 5
TARGET_S = 0.25


def child_cpu(args: list[str], *flags: str, code: str = MAIN) -> tuple[float, str]:
    """CPU seconds of one run of ``code`` (the console script) in a child, and its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(
        [sys.executable, *flags, "-c", code, *args],
        capture_output=True, text=True, cwd=PROJECT,
        env={**os.environ, "PYTHONPATH": str(PROJECT), "OPENENV_RELEASE_REMOTE": "/nonexistent"},
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, result.stderr


def top_imports(args: list[str], count: int = 5) -> list[str]:
    """The top-level imports with the largest cumulative time, as ``module ms``."""
    _, stderr = child_cpu(args, "-X", "importtime")
    costs: dict[str, int] = {}
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|")
        if name.startswith(" ") and not name.startswith("  ") and cumulative.strip().isdigit():
            costs[name.strip()] = int(cumulative)
    ranked = sorted(costs.items(), key=lambda kv: -kv[1])[:count]
    return [f"{name} {us / 1000:.0f} ms" for name, us in ranked]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    floor = min(child_cpu([], code="import invoke.program")[0] for _ in range(RUNS))
    figures: dict[str, Any] = {"target_cpu_s": TARGET_S, "floor_cpu_s": round(floor, 3)}
    print(f"{'floor':<10} {floor:.3f} s CPU  (the interpreter and invoke alone)")
    for name, args in COMMANDS.items():
        best = min(child_cpu(args)[0] for _ in range(RUNS))
        figures[name] = {"cpu_s": round(best, 3), "top_imports": top_imports(args)}
        tops = ", ".join(figures[name]["top_imports"])
        print(f"{name:<10} {best:.3f} s CPU  (target < {TARGET_S} s)  {tops}")
    if options.json:
        options.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
