"""Run every benchmark, print one table, and write the figures to bench/results.json.

Run: ``python bench/run_all.py`` (or ``nox -s bench``). Each benchmark is a script in this
folder that takes ``--json PATH``; this runner only collects what they measured.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BENCHMARKS = (
    "startup",
    "stage_corpus",
    "lock_corpus",
    "deploy_requests",
    "verify_30",
    "verify_vs_upstream",
    "release_34",
    "build_spaces",
    "rehearsal",
)


def run(name: str, out: Path) -> dict[str, Any]:
    target = out / f"{name}.json"
    subprocess.run([sys.executable, str(HERE / f"{name}.py"), "--json", str(target)], check=True)
    return json.loads(target.read_text()) if target.exists() else {"skipped": True}


def rows(results: dict[str, Any]) -> list[tuple[str, str]]:
    """(what, figure) lines for the table."""
    flat: list[tuple[str, str]] = []
    for name, figures in results.items():
        for key, value in _flatten(figures):
            flat.append((f"{name}.{key}", str(value)))
    return flat


def _flatten(data: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(data, list) and all(isinstance(item, dict) for item in data):
        data = {str(item.get("round", i)): item for i, item in enumerate(data)}
    if isinstance(data, dict):
        out: list[tuple[str, Any]] = []
        for key, value in data.items():
            nested = isinstance(value, dict)
            out += _flatten(value, f"{prefix}{key}." if nested else f"{prefix}{key}")
        return out
    return [(prefix.rstrip("."), data)]


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        results = {name: run(name, Path(tmp)) for name in BENCHMARKS}
    machine = {
        "date": time.strftime("%Y-%m-%d"),
        "cpus": os.cpu_count(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30),
        "python": platform.python_version(),
    }
    (HERE / "results.json").write_text(json.dumps({"machine": machine, **results}, indent=2) + "\n")
    print(
        f"\n{'benchmark':<48} figure   ({machine['date']}, {machine['cpus']} cores, "
        f"{machine['memory_gib']} GiB)"
    )
    for what, figure in rows(results):
        print(f"{what:<48} {figure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
