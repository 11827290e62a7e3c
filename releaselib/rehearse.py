"""A whole release of the bundled ``examples/`` checkout against the embedded Hub.

No account and no network: the examples are copied to a work folder (the project's own copy is
never touched), the embedded Hub gets the canonical Spaces a real namespace would have, and
``release`` runs end to end. It passes when every env ends as the examples intend.
"""

from __future__ import annotations

import shutil
import ssl
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from releaselib.discover import discover_envs, select_envs
from releaselib.errors import ReleaseError
from releaselib.hub import Hub
from releaselib.ledger import Ledger, default_path
from releaselib.localhub import LocalHub, Scenario
from releaselib.localhub.seed import named_targets, seed_canonicals
from releaselib.options import Options, build_config
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.release import Event, Release, ReleaseOptions, release_key
from releaselib.shell import run
from releaselib.status import Row, board, runtimes_of

#: env -> (outcome, decision) that the examples are written to produce.
INTENDED: Mapping[str, tuple[str, str]] = {
    "broken_env": ("FAIL", "pinned"),
    "echo_env": ("PASS", "promoted"),
    "legacy_env": ("PASS", "promoted"),
    "slow_env": ("INCONCLUSIVE", "held"),
    "textarena_env": ("PASS", "promoted"),
}
#: Envs whose canonical Spaces the rehearsal namespace starts with (textarena_env: its aliases).
PROMOTED = ("echo_env", "legacy_env", "textarena_env")
NAMESPACE = "openenv"
PROBE_TIMEOUT = 5.0  # slow_env resets in 20 s, so it stays inconclusive


@dataclass(frozen=True)
class Rehearsal:
    report: dict[str, Any]
    board: list[Row]
    briefing: Path | None
    mismatches: list[str]
    commits: dict[str, int]  # Space id -> commits on main
    statuses: dict[str, int]  # HTTP status -> how many times the embedded Hub answered it

    @property
    def ok(self) -> bool:
        return not self.mismatches


def examples_dir() -> Path:
    """The bundled example checkout, beside the package in a clone of openenv-release (the
    wheel does not carry it); a ReleaseError naming what to do when it is not there."""
    here = Path(str(resources.files("releaselib"))).parent / "examples"
    if not (here / "envs").is_dir():
        raise ReleaseError(
            f"rehearse needs the example checkout {here}, which comes with a clone of "
            "openenv-release, not with an installed wheel",
            remedy="pip install -e '.[rehearse]' from a clone of openenv-release, then rerun",
        )
    return here


@contextmanager
def workspace(keep: Path | None = None) -> Iterator[Path]:
    """The rehearsal's folder (not created yet): ``keep``, left in place, else one inside a new
    ``openenv-rehearsal-*`` temp folder that is removed afterwards, however the run ends."""
    if keep is not None:
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="openenv-rehearsal-", ignore_cleanup_errors=True) as t:
        yield Path(t) / "r"


def copy_checkout(source: Path, dest: Path) -> Path:
    """A private git checkout of ``source`` (pin may commit to it)."""
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__", "hf-staging"))
    for args in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "add", "-A"],
        [
            "git",
            "-c",
            "user.name=rehearsal",
            "-c",
            "user.email=rehearsal@localhost",
            "commit",
            "-q",
            "-m",
            "examples",
        ],
    ):
        run(args, cwd=dest)
    return dest


def mismatches(report: Mapping[str, Any]) -> list[str]:
    """How the report differs from what the examples intend."""
    found = {e["env"]: (e["outcome"], e["decision"]) for e in report["envs"]}
    got = {env: "/".join(found[env]) if env in found else "nothing" for env in INTENDED}
    return [
        f"{env}: expected {want[0]}/{want[1]}, got {got[env]}"
        for env, want in INTENDED.items()
        if found.get(env) != want
    ]


def rehearse(
    workdir: Path,
    *,
    scenario: Scenario | None = None,
    on_event: Event = lambda line: None,
    builder: str = "host",
) -> Rehearsal:
    """Run the rehearsal in ``workdir`` (which must not exist yet) and report how it ended;
    ``scenario`` makes the embedded Hub misbehave (the outcome must not change); ``builder`` is
    the embedded Hub's (``venv`` installs the OpenEnv pin from the copied checkout)."""
    checkout = copy_checkout(examples_dir(), workdir / "OpenEnv")
    embedded = LocalHub(
        workdir / "hub", user=NAMESPACE, scenario=scenario, builder=builder, openenv=checkout
    )
    with embedded as local:
        on_event(f"embedded Hub at {local.endpoint}")
        config, resolution = build_config(
            Options(
                repo=str(checkout),
                staging_dir=str(workdir / "staging"),
                hub_endpoint=local.endpoint,
                remote=str(workdir / "no-remote"),
                namespace=NAMESPACE,
            )
        )
        hub = Hub.connect(local.endpoint, token=local.token)
        registry = PluginRegistry(get_plugin_manager())
        seed_canonicals(hub, named_targets(registry, NAMESPACE, PROMOTED))
        ledger = Ledger.load(default_path(config), release_key(config))
        tls = ssl.create_default_context(cafile=str(local.ca_bundle))
        options = ReleaseOptions(timeout=PROBE_TIMEOUT, wait=300.0, interval=0.5, tls=tls)
        specs = select_envs(discover_envs(checkout), [])
        result = Release(config, resolution, hub, registry, ledger, options, on_event).run(specs)
        spaces = hub.list_spaces(NAMESPACE)
        rows = board(ledger, runtimes_of(spaces), config)
        commits = {s.id: hub.commit_count(s.id) for s in spaces}
        statuses = dict(local.counters().by_status)
    return Rehearsal(
        result.report, rows, result.briefing, mismatches(result.report), commits, statuses
    )
