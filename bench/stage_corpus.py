"""Benchmark: stage the 34-env corpus; print envs/s, files, bytes, CPU and wall time: the first
run with an empty cache of the secret scan's verdicts (cold: every file scanned), then the best
of ``--repeat`` runs with that cache (warm). Without the lock (``--no-lock``):
``bench/lock_corpus.py`` measures what locking adds.

Run: ``python bench/stage_corpus.py [--repeat N] [--json PATH]`` (or ``nox -s bench``).
Needs ../shared/openenv-snapshot beside the project.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from releaselib.options import Options, build_config
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.stage.discover import discover_envs, select_envs
from releaselib.stage.stage_env import StageRun, stage_envs
from tests.corpus import SNAPSHOT, materialise
from tests.helpers import TEST_SHA


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--staging-root", help="where to stage (default: the temp dir; try /dev/shm for tmpfs)"
    )
    args = parser.parse_args()
    if not (SNAPSHOT / "envs").is_dir():
        print(f"skip: no corpus at {SNAPSHOT}")
        return 0
    with (
        tempfile.TemporaryDirectory() as tmp,
        tempfile.TemporaryDirectory(dir=args.staging_root) as staging_root,
    ):
        os.environ["OPENENV_RELEASE_SCAN_CACHE"] = str(Path(tmp) / "scan-cache")
        checkout = materialise(Path(tmp) / "checkout")
        config, _ = build_config(
            Options(
                repo=str(checkout),
                version="0.2.2",
                staging_dir=str(Path(staging_root) / "staging"),
                remote=str(Path(tmp) / "no-remote"), ref=TEST_SHA, dist="openenv",
            )
        )
        registry = PluginRegistry(get_plugin_manager(entry_points=False))
        specs = select_envs(discover_envs(checkout), [])
        runs = []
        for _ in range(1 + args.repeat):
            wall, cpu = time.perf_counter(), time.process_time()
            staged = stage_envs(config, specs, registry, StageRun(lock=False))
            runs.append((time.perf_counter() - wall, time.process_time() - cpu))
        cold_wall, cold_cpu = runs[0]
        best_wall, best_cpu = min(runs[1:])
    result = {
        "envs": len(staged),
        "ok": sum(s.ok for s in staged),
        "files": sum(s.files for s in staged),
        "bytes": sum(s.bytes for s in staged),
        "cold_wall_s": round(cold_wall, 3),
        "cold_cpu_s": round(cold_cpu, 3),
        "wall_s": round(best_wall, 3),
        "cpu_s": round(best_cpu, 3),
        "envs_per_s": round(len(staged) / best_wall, 1),
    }
    print(
        f"{'envs':>6} {'ok':>4} {'files':>7} {'bytes':>11} {'cold wall':>9} {'cold cpu':>8} "
        f"{'wall s':>7} {'cpu s':>7} {'envs/s':>7}"
    )
    print(
        f"{result['envs']:>6} {result['ok']:>4} {result['files']:>7} {result['bytes']:>11,} "
        f"{result['cold_wall_s']:>9} {result['cold_cpu_s']:>8} "
        f"{result['wall_s']:>7} {result['cpu_s']:>7} {result['envs_per_s']:>7}"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
