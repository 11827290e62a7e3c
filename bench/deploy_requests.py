"""Benchmark: Hub requests, commits and bytes per env for a first deploy and an unchanged one.

Run: ``python bench/deploy_requests.py [--json PATH]``. Deploys the five example envs to the
embedded Hub twice and reads its request counters.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from releaselib.hub.client import Hub
from releaselib.hub.deploy import canonical_fence, deploy_all
from releaselib.localhub import LocalHub
from releaselib.options import Options, build_config
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.stage.discover import discover_envs, select_envs
from releaselib.stage.stage_env import stage_envs
from tests.helpers import TEST_SHA

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def measure(hub: LocalHub, run: Any, envs: int) -> dict[str, Any]:
    hub.reset_counters()
    start = time.perf_counter()
    run()
    seconds = time.perf_counter() - start
    counters = hub.counters()
    return {
        "requests_per_env": round(counters.requests / envs, 1),
        "commits": counters.commits,
        "bytes_per_env": counters.uploaded_bytes // envs,
        "wall_s": round(seconds, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, LocalHub(Path(tmp) / "hub") as local:
        config, _ = build_config(Options(
            repo=str(EXAMPLES), staging_dir=str(Path(tmp) / "staging"),
            remote=str(Path(tmp) / "no-remote"), ref=TEST_SHA, dist="openenv",
            hub_endpoint=local.endpoint,
        ))
        registry = PluginRegistry(get_plugin_manager())
        staged = stage_envs(config, select_envs(discover_envs(config.repo), []), registry)
        hub = Hub.connect(local.endpoint, token=local.token)
        fence = canonical_fence(config, registry)
        results = {
            phase: measure(local, lambda: deploy_all(hub, config, staged, fence=fence), len(staged))
            for phase in ("first", "unchanged")
        }
    print(f"{'deploy':<10} {'req/env':>8} {'commits':>8} {'bytes/env':>10} {'wall s':>7}")
    for phase, r in results.items():
        print(f"{phase:<10} {r['requests_per_env']:>8} {r['commits']:>8} {r['bytes_per_env']:>10,} "
              f"{r['wall_s']:>7}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
