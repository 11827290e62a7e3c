"""Benchmark: verify 30 candidate Spaces, each a real openenv-core server with a 1 s reset and two
domains of which the first answers 404; print wall time, the sum of per-Space probe times, and
the Hub API requests per poll cycle.

Run: ``python bench/verify_30.py [--spaces N] [--jobs N] [--batch N] [--json PATH]``. Spaces
are deployed in batches, each started before the next (30 servers starting at once overrun the
embedded Hub's startup limit on a small machine). Two rounds: "cold" starts right after the last
batch is deployed, so it polls while that batch starts; "warm" verifies the running Spaces
again, which is the concurrent probing alone.
"""

from __future__ import annotations

import argparse
import json
import shutil
import ssl
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from huggingface_hub import HfApi

from releaselib.config import ReleaseConfig
from releaselib.hub.client import Hub, RemoteSpace
from releaselib.hub.deploy import deploy_all
from releaselib.hub.retry import RetryPolicy
from releaselib.hub.runtime import settle
from releaselib.localhub import LocalHub, Scenario, SpaceBehaviour
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.records import StagedSpace
from releaselib.space_ids import Canonicals
from releaselib.stage.staged_tree import build_manifest, manifest_hash
from releaselib.verify.candidates import verify_spaces

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "envs"
SUFFIX = "-0.2.2"
DOMAIN = "space_domain"  # the request log's endpoint name for Space domain traffic


class CountingHub(Hub):
    """A Hub that counts its listings: one per author per poll cycle."""

    listings = 0

    def list_spaces(self, author: str, search: str | None = None) -> list[RemoteSpace]:
        self.listings += 1
        return super().list_spaces(author, search)


def deploy(hub: LocalHub, root: Path, count: int, batch: int) -> list[str]:
    """``count`` private Spaces of slow_env, each with SLOW_ENV_RESET_SECONDS=1, deployed
    ``batch`` at a time; every batch but the last is left running."""
    tree = root / "slow_env"
    shutil.copytree(EXAMPLES / "slow_env", tree, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(EXAMPLES / "slow_env" / "server" / "Dockerfile", tree / "Dockerfile")
    manifest = build_manifest(tree)
    config = ReleaseConfig(
        repo=root, version="0.2.2", ref="main", ref_reason="bench", dist="openenv",
        suffix=SUFFIX, staging_dir=root, jobs=8,
    )
    api = HfApi(endpoint=hub.endpoint, token=hub.token)
    staged = []
    for i in range(count):
        env = f"slow{i:02d}_env"
        space_id = config.space_id(env)
        api.create_repo(space_id, repo_type="space", space_sdk="docker", private=True)
        api.add_space_variable(space_id, "SLOW_ENV_RESET_SECONDS", "1")
        staged.append(StagedSpace(env, space_id, tree, True, manifest, manifest_hash(manifest)))
    ids = [s.space_id for s in staged]
    connected = Hub.connect(hub.endpoint, token=hub.token)
    for first in range(0, count, batch):
        part = staged[first : first + batch]
        fence = Canonicals.of([s.env for s in part], ())
        deployed = deploy_all(connected, config, part, fence=fence)
        failed = [d.error for d in deployed if not d.ok]
        wrong = [d.space_id for d in deployed if d.space_id not in ids]
        if failed or wrong:
            raise SystemExit(f"deploy failed: {failed or wrong}")
        if first + batch < count:
            for space in part:
                settle(connected, space.space_id, wait=300, interval=0.5)
    return ids


def round_of(hub: LocalHub, ids: list[str], jobs: int, name: str) -> dict[str, Any]:
    counting = CountingHub.connect(hub.endpoint, token=hub.token, policy=RetryPolicy())
    assert isinstance(counting, CountingHub)
    hub.reset_counters()
    start = time.monotonic()
    results = verify_spaces(
        counting, ids, suffix=SUFFIX,
        registry=PluginRegistry(get_plugin_manager(entry_points=False)),
        timeout=20.0, wait=600.0, jobs=jobs, interval=0.5,
        tls=ssl.create_default_context(cafile=str(hub.ca_bundle)),
    )
    wall = time.monotonic() - start
    by_endpoint = hub.counters().by_endpoint
    api_requests = sum(n for endpoint, n in by_endpoint.items() if endpoint != DOMAIN)
    probe_sum = sum(r.probe_seconds for r in results)
    for r in results:
        if not r.success:
            print(f"{name}: {r.space_id} {r.outcome.value}: {r.reason}", file=sys.stderr)
    return {
        "round": name,
        "spaces": len(ids),
        "passed": sum(r.success for r in results),
        "two_attempts": sum(len(r.attempts) == 2 for r in results),
        "wall_s": round(wall, 2),
        "probe_sum_s": round(probe_sum, 2),
        "ratio": round(wall / probe_sum, 3) if probe_sum else None,
        "hub_requests": api_requests,
        "poll_cycles": counting.listings,
        "requests_per_cycle": round(api_requests / counting.listings, 2),
        "domain_requests": by_endpoint.get(DOMAIN, 0),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spaces", type=int, default=30)
    parser.add_argument("--jobs", type=int, default=30)
    parser.add_argument("--batch", type=int, default=6)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    scenario = Scenario(spaces=(SpaceBehaviour(domains=2, first_domain_404=True),))
    with (
        tempfile.TemporaryDirectory() as tmp,
        LocalHub(Path(tmp) / "hub", scenario=scenario) as hub,
    ):
        ids = deploy(hub, Path(tmp), args.spaces, args.batch)
        rows = [round_of(hub, ids, args.jobs, "cold"), round_of(hub, ids, args.jobs, "warm")]
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in rows[0]}
    print("  ".join(f"{c:>{w}}" for c, w in widths.items()))
    for row in rows:
        print("  ".join(f"{row[c]!s:>{w}}" for c, w in widths.items()))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0 if all(r["passed"] == r["spaces"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
