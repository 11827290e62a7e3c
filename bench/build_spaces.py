"""Benchmark: the ``venv`` builder on the bundled examples and the builder tests' Spaces.

The trees: ``examples/`` staged as a release stages it (the OpenEnv pin served from the examples'
checkout, built once into a wheel), plus the Spaces written for the builder tests
(``tests/space_runtime/spaces.py``): two openenv-core envs needing a pure-Python package the
tool lacks, and a git requirement on a git-less image (a BUILD_ERROR by the base-image model).
Each tree is built twice, one after the other: ``cold`` with an empty uv cache (everything comes
from the package registry), then ``warm`` into fresh virtual environments sharing that cache.

Per Space: build seconds, and disk: ``apparent`` (every file's size) and ``own`` (files not
hardlinked from uv's cache, i.e. what the Space adds to the disk). Peak memory is the largest
resident set of any build process (``uv``), and of this process.

Run: ``python bench/build_spaces.py [--json PATH]`` (needs the package registry).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from releaselib.options import Options, build_config
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.rehearse import copy_checkout, examples_dir
from releaselib.space_runtime.builders import VenvBuilder
from releaselib.space_runtime.plan import BuildError
from releaselib.space_runtime.process import lay_out
from releaselib.stage.discover import discover_envs, select_envs
from releaselib.stage.stage_env import stage_envs
from tests.helpers import TEST_SHA
from tests.space_runtime.spaces import git_on_gitless_space, openenv_space


def trees(work: Path) -> tuple[Path, dict[str, Path]]:
    """The examples' checkout (a private git copy) and every tree to build, by name."""
    checkout = copy_checkout(examples_dir(), work / "OpenEnv")
    config, _ = build_config(
        Options(
            repo=str(checkout),
            staging_dir=str(work / "staging"),
            remote=str(work / "no-remote"), ref=TEST_SHA, dist="openenv",
            namespace="openenv",
        )
    )
    registry = PluginRegistry(get_plugin_manager(entry_points=False))
    staged = stage_envs(config, select_envs(discover_envs(checkout), []), registry)
    found = {s.env: s.staged_dir for s in staged if s.ok}
    found["inflect_env"] = openenv_space(
        work / "inflect_env", "inflect_env", imports="inflection", declares=["inflection"]
    )
    found["humanize_env"] = openenv_space(
        work / "humanize_env", "humanize_env", imports="humanize", declares=["humanize"]
    )
    found["gitless_env"] = git_on_gitless_space(work / "gitless_env")
    return checkout, found


def disk(env_dir: Path) -> tuple[int, int]:
    """(apparent, own) bytes under ``env_dir``; ``own`` leaves out files hardlinked elsewhere."""
    apparent = own = 0
    for path in env_dir.rglob("*"):
        info = path.lstat()
        if path.is_file() and not path.is_symlink():
            apparent += info.st_size
            own += info.st_size if info.st_nlink == 1 else 0
    return apparent, own


def build_round(builder: VenvBuilder, found: dict[str, Path], work: Path) -> list[dict[str, Any]]:
    rows = []
    for name, tree in found.items():
        space = work / name
        env_dir = space / "env"
        layout = lay_out(tree, space, base_path=builder.base_path(env_dir))
        start = time.perf_counter()
        try:
            builder.build(layout, env_dir, space / "build.log")
            outcome = "built"
        except BuildError:
            outcome = "BUILD_ERROR"
        seconds = time.perf_counter() - start
        apparent, own = disk(env_dir) if env_dir.is_dir() else (0, 0)
        rows.append(
            {
                "space": name,
                "outcome": outcome,
                "build_s": round(seconds, 2),
                "disk_mb": round(apparent / 1e6, 1),
                "own_disk_mb": round(own / 1e6, 1),
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp:
        work = Path(tmp)
        os.environ["UV_CACHE_DIR"] = str(work / "uv-cache")  # cold: nothing cached yet
        checkout, found = trees(work / "trees")
        rounds = {}
        for name in ("cold", "warm"):
            builder = VenvBuilder(work / name, openenv=checkout, jobs=1)
            rounds[name] = build_round(builder, found, work / name)
        cache_mb = sum(p.stat().st_size for p in (work / "uv-cache").rglob("*") if p.is_file())
        shutil.rmtree(work / "uv-cache", ignore_errors=True)
    peak_build_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    peak_self_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    built = [r for r in rounds["warm"] if r["outcome"] == "built"]
    result = {
        "spaces": len(found),
        "cold": rounds["cold"],
        "warm": rounds["warm"],
        "cold_total_s": round(sum(r["build_s"] for r in rounds["cold"]), 1),
        "warm_total_s": round(sum(r["build_s"] for r in rounds["warm"]), 1),
        "warm_median_s": round(statistics.median(r["build_s"] for r in built), 2),
        "median_disk_mb_per_space": statistics.median(r["disk_mb"] for r in built),
        "median_own_disk_mb_per_space": statistics.median(r["own_disk_mb"] for r in built),
        "uv_cache_mb": round(cache_mb / 1e6, 1),
        "peak_build_process_mb": round(peak_build_mb, 1),
        "peak_self_mb": round(peak_self_mb, 1),
    }
    print(f"{'space':<16} {'outcome':<12} {'cold s':>7} {'warm s':>7} {'disk MB':>8} {'own MB':>7}")
    for cold, warm in zip(rounds["cold"], rounds["warm"], strict=True):
        print(
            f"{cold['space']:<16} {warm['outcome']:<12} {cold['build_s']:>7} {warm['build_s']:>7} "
            f"{warm['disk_mb']:>8} {warm['own_disk_mb']:>7}"
        )
    print(
        f"cold total {result['cold_total_s']} s, warm total {result['warm_total_s']} s; "
        f"uv cache {result['uv_cache_mb']} MB; peak build process {result['peak_build_process_mb']}"
        f" MB, this process {result['peak_self_mb']} MB"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
