"""Benchmark: our verify against an upstream-style sequential prober, on one embedded Hub.

N private candidates (N = 10, 30, 60 by default), each a real openenv-core server with a 1 s
``/reset`` and two domains of which the first answers 404. The Hub runs in its own process (as
``localhub.serve``; a real Hub is not in the verifier's process either), and every Space is
running before the clock starts. Ours is ``verify_spaces`` at its defaults (every Space probed
at once, up to the ceiling of 64) and does ``/health``, ``POST /reset`` (1 s) and a
schema-derived ``POST /step`` on each READY domain. The upstream approach is re-implemented
here from its description, not from its code: one Space after the other, read the runtime for
the domains, then ``GET /health``, ``GET /metadata``, ``GET /schema`` and ``POST /mcp``
(tools/list) on each domain until one answers ``/health`` with 200 (one keep-alive connection
per domain). It never resets or steps.
The runs alternate (upstream, ours, ours lowered), so each pair sees the same load; the figures
are the ratio of median wall times, ours / upstream's, and the median of the paired ratios
(targets: at most 0.3 at 30 Spaces, 0.15 at 60), with the load average around each size. Ours
with the ceiling lowered to ``--probe-jobs 16`` (the default before every Space was probed at
once) is measured too.

Run: ``python bench/verify_vs_upstream.py [--sizes 10,30,60] [--repeats 5] [--builder host]
[--json PATH]`` (the builder only changes how long the Spaces take to start, not the probes).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from huggingface_hub import HfApi
from verify_30 import SUFFIX, deploy

from releaselib.hub.client import Hub
from releaselib.hub.runtime import settle
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.verify.candidates import probe_jobs, verify_spaces

SCENARIO = "spaces:\n  - domains: 2\n    first_domain_404: true\n"
#: the lowered ceiling measured beside the default (``--probe-jobs 16``, the old default)
LOWERED = 16


@dataclass(frozen=True)
class ServedHub:
    """An embedded Hub in another process, as ``localhub.serve``'s JSON line describes it."""

    endpoint: str
    token: str
    ca_bundle: str


@contextmanager
def served_hub(root: Path, builder: str) -> Iterator[ServedHub]:
    (root / "scenario.yaml").write_text(SCENARIO)
    args = ["--state-dir", str(root / "hub"), "--scenario", str(root / "scenario.yaml")]
    args += ["--builder", builder]
    process = subprocess.Popen(
        [sys.executable, "-m", "releaselib.localhub", *args], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        yield ServedHub(**json.loads(process.stdout.readline()))
    finally:
        os.kill(process.pid, signal.SIGTERM)
        process.wait(300)


UPSTREAM_PROBES = (
    ("GET", "/health", None),
    ("GET", "/metadata", None),
    ("GET", "/schema", None),
    ("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
)


def upstream_style(api: HfApi, token: str, tls: ssl.SSLContext, ids: Sequence[str]) -> int:
    """Probe ``ids`` one after the other; how many had a domain whose /health answered 200."""
    healthy = 0
    auth = {"Authorization": f"Bearer {token}"}
    for space_id in ids:
        domains = [d["domain"] for d in api.get_space_runtime(space_id).raw.get("domains", [])]
        for domain in domains:
            with httpx.Client(
                base_url=f"https://{domain}", headers=auth, verify=tls, timeout=20
            ) as client:
                statuses = [client.request(m, p, json=b).status_code for m, p, b in UPSTREAM_PROBES]
            if statuses[0] == 200:
                healthy += 1
                break
    return healthy


def ours(hub: ServedHub, tls: ssl.SSLContext, ids: Sequence[str], jobs: int | None = None) -> int:
    """Verify ``ids`` (default probe threads unless ``jobs``); how many PASSed with reset and step
    on the second domain."""
    results = verify_spaces(
        Hub.connect(hub.endpoint, token=hub.token),
        ids,
        suffix=SUFFIX,
        registry=PluginRegistry(get_plugin_manager(entry_points=False)),
        tls=tls,
        interval=0.5,
        jobs=jobs,
    )
    return sum(r.success and len(r.attempts) == 2 for r in results)


def timed(run: Callable[[], int]) -> tuple[float, int]:
    start = time.monotonic()
    count = run()
    return time.monotonic() - start, count


def measure(hub: ServedHub, ids: Sequence[str], repeats: int) -> dict[str, Any]:
    tls = ssl.create_default_context(cafile=hub.ca_bundle)
    api = HfApi(endpoint=hub.endpoint, token=hub.token)
    mine, lowered, theirs, passed, healthy = [], [], [], [], []
    load_before = os.getloadavg()[0]
    for _ in range(repeats):  # interleaved, so all three see the same machine load
        seconds, count = timed(lambda: upstream_style(api, hub.token, tls, ids))
        theirs.append(seconds)
        healthy.append(count)
        seconds, count = timed(lambda: ours(hub, tls, ids))
        mine.append(seconds)
        passed.append(count)
        seconds, count = timed(lambda: ours(hub, tls, ids, jobs=LOWERED))
        lowered.append(seconds)
        passed.append(count)
    upstream_s = statistics.median(theirs)
    ours_s, lowered_s = statistics.median(mine), statistics.median(lowered)
    return {
        "spaces": len(ids),
        "probe_jobs": probe_jobs(None, len(ids)),
        "load_average": [round(load_before, 1), round(os.getloadavg()[0], 1)],
        "upstream_median_s": round(upstream_s, 2),
        "ours_median_s": round(ours_s, 2),
        "ratio": round(ours_s / upstream_s, 3),
        "median_paired_ratio": round(
            statistics.median(a / b for a, b in zip(mine, theirs, strict=True)), 3
        ),
        f"ours_probe_jobs_{LOWERED}_median_s": round(lowered_s, 2),
        f"ratio_probe_jobs_{LOWERED}": round(lowered_s / upstream_s, 3),
        "upstream_runs_s": [round(s, 2) for s in theirs],
        "ours_runs_s": [round(s, 2) for s in mine],
        "ours_passed_with_reset_and_step": min(passed),
        "upstream_found_healthy": min(healthy),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10,30,60")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch", type=int, default=6)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--builder", default="venv", help="the Hub's builder: host starts the Spaces sooner"
    )
    args = parser.parse_args()
    sizes = sorted(int(n) for n in args.sizes.split(","))
    with tempfile.TemporaryDirectory() as tmp, served_hub(Path(tmp), args.builder) as hub:
        ids = deploy(hub, Path(tmp), sizes[-1], args.batch)  # type: ignore[arg-type]
        connected = Hub.connect(hub.endpoint, token=hub.token)
        for space_id in ids:
            settle(connected, space_id, wait=300, interval=0.5)
        ours(hub, ssl.create_default_context(cafile=hub.ca_bundle), ids)  # warm-up
        rows = {str(n): measure(hub, ids[:n], args.repeats) for n in sizes}
    print(
        f"{'spaces':>6} {'upstream s':>10} {'ours s':>7} {'ratio':>6} {'paired':>6} "
        f"{'jobs=' + str(LOWERED) + ' s':>9} {'ratio':>6}  load"
    )
    for r in rows.values():
        print(
            f"{r['spaces']:>6} {r['upstream_median_s']:>10} {r['ours_median_s']:>7} "
            f"{r['ratio']:>6} {r['median_paired_ratio']:>6} "
            f"{r[f'ours_probe_jobs_{LOWERED}_median_s']:>9} {r[f'ratio_probe_jobs_{LOWERED}']:>6}"
            f"  {r['load_average'][0]}-{r['load_average'][1]}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    complete = all(r["ours_passed_with_reset_and_step"] == r["spaces"] for r in rows.values())
    if not complete:
        print("not every Space passed with reset and step: these figures measure nothing",
              file=sys.stderr)
    return 0 if complete else 1


if __name__ == "__main__":
    sys.exit(main())
