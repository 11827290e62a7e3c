"""Benchmark: lock the 34-env corpus; cold (empty lock cache) and warm wall time, against
staging with ``--no-lock``; how many envs are locked, and why the others are not.

Run: ``python bench/lock_corpus.py [--json PATH]`` (or ``nox -s bench``). Needs
../shared/openenv-snapshot beside the project and PyPI (the cold run resolves every env; uv's
own download cache stays warm between runs, so "cold" is the lock cache only). The checkout is
made a git repository on ``main``, so OpenEnv's own dependencies are read at the ref.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from releaselib.options import Options, build_config
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.stage.discover import discover_envs, select_envs
from releaselib.stage.stage_env import StageRun, stage_envs
from tests.corpus import SNAPSHOT, git_materialise


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not (SNAPSHOT / "envs").is_dir():
        print(f"skip: no corpus at {SNAPSHOT}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        checkout = git_materialise(Path(tmp) / "checkout")
        config, _ = build_config(
            Options(
                repo=str(checkout),
                version="0.2.2",
                staging_dir=str(Path(tmp) / "staging"),
                remote=str(Path(tmp) / "no-remote"),
            )
        )
        registry = PluginRegistry(get_plugin_manager(entry_points=False))
        specs = select_envs(discover_envs(checkout), [])
        cache = Path(tmp) / "lock-cache"
        timings = {}
        for name, run in (
            ("no_lock_s", StageRun(lock=False)),
            ("cold_s", StageRun(lock_cache=cache)),
            ("warm_s", StageRun(lock_cache=cache)),
        ):
            wall = time.perf_counter()
            staged = stage_envs(config, specs, registry, run)
            timings[name] = round(time.perf_counter() - wall, 2)
    locks = {s.env: s.lock for s in staged}
    unlocked = {env: lock.unlocked for env, lock in locks.items() if lock and lock.unlocked}
    result = {
        "envs": len(staged),
        "locked": sum(1 for lock in locks.values() if lock and lock.digest),
        **timings,
        "added_cold_s": round(timings["cold_s"] - timings["no_lock_s"], 2),
        "added_warm_s": round(timings["warm_s"] - timings["no_lock_s"], 2),
        "unlocked": unlocked,
        "reasons": dict(Counter(r.split(":")[0].split(" (")[0] for r in unlocked.values())),
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
