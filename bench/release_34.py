"""Benchmark: a whole release of the 34-env corpus against the embedded Hub; peak memory and time.

Run: ``python bench/release_34.py [--json PATH] [--no-lock]``. Needs
../shared/openenv-snapshot. The corpus holds no env code, so every candidate ends in
RUNTIME_ERROR and is pinned: the run exercises stage, deploy, wait, verify, promote, collection,
pin and report for 34 envs. Peak memory is
this process's maximum resident set (the tool and the embedded Hub together; the Space
processes are children and not counted).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from releaselib.config import release_key
from releaselib.hub.client import Hub
from releaselib.ledger.ledger import Ledger
from releaselib.ledger.paths import default_path
from releaselib.localhub import LocalHub
from releaselib.options import Options, build_config
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.release import Release, ReleaseOptions
from releaselib.stage.discover import discover_envs, select_envs
from tests.corpus import SNAPSHOT, materialise
from tests.helpers import TEST_SHA


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--no-lock", action="store_true", help="stage without the lock")
    args = parser.parse_args()
    if not (SNAPSHOT / "envs").is_dir():
        print(f"skip: no corpus at {SNAPSHOT}")
        return 0
    with tempfile.TemporaryDirectory() as tmp, LocalHub(Path(tmp) / "hub") as local:
        checkout = materialise(Path(tmp) / "checkout")
        config, resolution = build_config(Options(
            repo=str(checkout), version="0.2.2", staging_dir=str(Path(tmp) / "staging"),
            remote=str(Path(tmp) / "no-remote"), ref=TEST_SHA, dist="openenv",
            hub_endpoint=local.endpoint,
        ))
        hub = Hub.connect(local.endpoint, token=local.token)
        ledger = Ledger.load(default_path(config), release_key(config))
        options = ReleaseOptions(
            timeout=5.0, wait=600.0, interval=1.0, lock=not args.no_lock,
            allow_embedded_hub=True,  # the checkout is a temp copy: pin may write it
        )
        start = time.perf_counter()
        run = Release(config, resolution, hub, PluginRegistry(get_plugin_manager()), ledger,
                      options).run(select_envs(discover_envs(checkout), []))
        seconds = time.perf_counter() - start
        requests = local.counters().requests
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    outcomes = Counter(e["outcome"] for e in run.report["envs"])
    result = {
        "envs": len(run.report["envs"]),
        "outcomes": dict(outcomes),
        "wall_s": round(seconds, 1),
        "hub_requests": requests,
        "peak_rss_mib": round(peak_mib, 1),
    }
    print(f"{'envs':>5} {'wall s':>7} {'hub req':>8} {'peak RSS MiB':>13}  outcomes")
    print(f"{result['envs']:>5} {result['wall_s']:>7} {requests:>8} {result['peak_rss_mib']:>13}  "
          f"{dict(outcomes)}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
