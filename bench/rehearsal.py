"""Benchmark: a rehearsal of many Spaces with bounded work in flight; time, load, memory, verdicts.

Run: ``python bench/rehearsal.py [--extra 25] [--spaces N] [--builder venv] [--cold] [--alone]
[--json PATH]``. The checkout is the bundled examples plus ``--extra`` small envs written for
it (echo_env under another name, each needing one small PyPI package that its server imports),
so the default makes 30 candidate Spaces. ``--repo PATH`` rehearses that OpenEnv checkout's
envs instead (``--env`` to choose, ``--allow-secret FILE`` for its known false positives,
``--wait`` as release's), at release's own probe time-out. It reports the wall time, the peak
1-minute load average, the peak memory of this process and its children together (sampled each
second), the CPU seconds of this process and of its children, the embedded Hub's most Spaces
starting and in flight at once, each Space's stages with the second each began (``timeline``:
where the wall time went), and, with ``--alone``, each env rehearsed alone (one after
another) and whether any verdict differs. ``--cold``: a new, empty uv cache (downloads every
package: not for a shared machine). Without ``--spaces``, the rehearsal's default bound.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from releaselib.localhub.in_flight import default_spaces
from releaselib.records import AllowedSecret
from releaselib.rehearse import PROBE_TIMEOUT, examples_dir, rehearse

#: (PyPI package, module its server imports): small, pure Python.
PACKAGES = (
    ("six", "six"), ("toolz", "toolz"), ("tabulate", "tabulate"), ("termcolor", "termcolor"),
    ("humanize", "humanize"), ("decorator", "decorator"), ("cachetools", "cachetools"),
    ("pyparsing", "pyparsing"), ("python-dateutil", "dateutil"), ("pytz", "pytz"),
    ("more-itertools", "more_itertools"), ("zipp", "zipp"), ("wcwidth", "wcwidth"),
    ("colorama", "colorama"), ("text-unidecode", "text_unidecode"), ("appdirs", "appdirs"),
    ("platformdirs", "platformdirs"), ("filelock", "filelock"), ("distro", "distro"),
    ("iniconfig", "iniconfig"), ("tomli", "tomli"), ("mdurl", "mdurl"), ("docopt", "docopt"),
    ("chardet", "chardet"), ("inflection", "inflection"),
)  # fmt: skip
GIT = ["git", "-c", "user.name=b", "-c", "user.email=b@localhost", "-c", "commit.gpgsign=false"]


def make_checkout(root: Path, extra: int) -> list[str]:
    """The examples plus ``extra`` envs made from echo_env, committed; the env names."""
    examples = examples_dir()
    ignore = shutil.ignore_patterns("__pycache__", "hf-staging")
    shutil.copytree(examples, root, ignore=ignore)
    for index in range(extra):
        package, module = PACKAGES[index % len(PACKAGES)]
        name = f"small{index:02d}_env"
        env = root / "envs" / name
        shutil.copytree(examples / "envs" / "echo_env", env, ignore=ignore)
        for path in (p for p in env.rglob("*") if p.is_file()):
            text = re.sub(r"\becho_env\b", name, path.read_text())  # not echo_environment
            path.write_text(text.replace("echo-", f"{name}-"))
        pyproject = env / "pyproject.toml"
        core = '"openenv[core]>=0.2.1",'
        pyproject.write_text(pyproject.read_text().replace(core, f'{core}\n    "{package}",'))
        app = env / "server" / "app.py"
        needs = f"import {module}  # noqa: F401  the package this env needs\n"
        app.write_text(needs + app.read_text())
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "bench"]):
        subprocess.run([*GIT, *args], cwd=root, check=True, capture_output=True)
    return sorted(p.name for p in (root / "envs").iterdir() if p.is_dir())


def _tree_rss() -> int:
    """Resident bytes of this process and all its descendants."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents[int(stat.parent.name)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    mine, grew = {os.getpid()}, True
    while grew:
        more = {pid for pid, ppid in parents.items() if ppid in mine} - mine
        grew, mine = bool(more), mine | more
    total = 0
    for pid in mine:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) * 1024
    return total


def cpu_seconds(before: os.times_result, after: os.times_result) -> dict[str, float]:
    """CPU seconds between two ``os.times()``: this process's own (the tool and the embedded
    Hub), and its ended children's (builds, Space servers)."""
    own = after.user + after.system - before.user - before.system
    children = (
        after.children_user + after.children_system
        - before.children_user - before.children_system
    )  # fmt: skip
    return {"own_cpu_s": round(own, 1), "children_cpu_s": round(children, 1)}


@contextmanager
def sampled() -> Iterator[dict[str, float]]:
    """Peak 1-minute load average and peak tree RSS (MiB), sampled each second while inside."""
    peaks = {"load": 0.0, "rss_mib": 0.0}
    done = threading.Event()

    def sample() -> None:
        while not done.wait(1.0):
            peaks["load"] = max(peaks["load"], os.getloadavg()[0])
            peaks["rss_mib"] = max(peaks["rss_mib"], _tree_rss() / 2**20)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield peaks
    finally:
        done.set()
        thread.join()


def run(
    work: Path, checkout: Path, envs: list[str], builder: str, spaces: int, **more: Any
) -> dict[str, Any]:
    """One rehearsal of ``envs``; ``more`` are :func:`rehearse`'s other arguments."""
    timeline: dict[str, list[tuple[float, str]]] = {}
    start, before = time.perf_counter(), os.times()

    def heard(space: str, stage: str) -> None:
        stages = timeline.setdefault(space.rsplit("/", 1)[-1], [])
        if not stages or stages[-1][1] != stage:
            stages.append((round(time.perf_counter() - start, 1), stage))

    with sampled() as peaks:
        result = rehearse(
            work,
            repo=checkout,
            envs=envs,
            builder=builder,
            spaces=spaces,
            on_progress=heard,
            **more,
        )
        seconds = time.perf_counter() - start
    return {
        "wall_s": round(seconds, 1),
        **cpu_seconds(before, os.times()),
        "peak_load": round(peaks["load"], 2),
        "peak_rss_mib": round(peaks["rss_mib"], 1),
        "in_flight_peak": result.report["rehearsal"]["in_flight_peak"],
        "starting_peak": result.report["rehearsal"]["starting_peak"],
        "verdicts": {e["env"]: e["outcome"] for e in result.report["envs"]},
        "reasons": {e["env"]: (e.get("reason") or "")[:300] for e in result.report["envs"]},
        "timeline": timeline,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--extra", type=int, default=25, help="small envs beside the examples")
    parser.add_argument("--spaces", type=int, help="Spaces starting at once (default: rehearse's)")
    parser.add_argument("--builder", default="venv")
    parser.add_argument("--cold", action="store_true", help="a new, empty uv cache")
    parser.add_argument("--alone", action="store_true", help="also rehearse each env alone")
    parser.add_argument("--repo", type=Path, help="a real OpenEnv checkout instead")
    parser.add_argument("--env", action="append", default=[], help="with --repo: these envs")
    parser.add_argument("--allow-secret", action="append", default=[], metavar="FILE")
    parser.add_argument("--wait", type=float, help="with --repo: release's --wait")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    spaces = args.spaces or default_spaces()
    with tempfile.TemporaryDirectory(prefix="bench-rehearsal-") as tmp:
        if args.cold:
            os.environ["UV_CACHE_DIR"] = str(Path(tmp) / "uv-cache")
        if args.repo is None:
            checkout = Path(tmp) / "OpenEnv"
            envs = make_checkout(checkout, args.extra)
            more: dict[str, Any] = {"timeout": PROBE_TIMEOUT}
        else:
            checkout = args.repo.resolve()
            envs = args.env  # none: every deployable env, as rehearse chooses
            why = "a known false positive (bench)"
            allowed = tuple(AllowedSecret(path, why) for path in args.allow_secret)
            more = {"allowed_secrets": allowed, "wait": args.wait}
        together = run(Path(tmp) / "all", checkout, envs, args.builder, spaces, **more)
        envs = sorted(together["verdicts"])
        result = {"envs": len(envs), "spaces": spaces, "builder": args.builder, **together}
        if args.json:  # what is known so far, in case the runs alone are cut short
            args.json.write_text(json.dumps(result, indent=2) + "\n")
        print(
            f"{len(envs)} envs, --spaces {spaces}, {args.builder}: {together['wall_s']} s, "
            f"peak load {together['peak_load']}, peak RSS {together['peak_rss_mib']} MiB, "
            f"at most {together['starting_peak']} Spaces starting and "
            f"{together['in_flight_peak']} in flight"
        )
        if args.alone:
            alone: dict[str, str] = {}
            result["alone"] = runs = {}
            for env in envs:
                runs[env] = run(
                    Path(tmp) / f"alone-{env}", checkout, [env], args.builder, spaces, **more
                )
                alone.update(runs[env]["verdicts"])
                if args.json:
                    args.json.write_text(json.dumps(result, indent=2) + "\n")
            differ = {e: (v, alone[e]) for e, v in together["verdicts"].items() if alone[e] != v}
            result["differs_from_alone"] = differ
            print(f"verdicts that differ from each env alone: {differ or 'none'}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
