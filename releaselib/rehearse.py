"""A whole release rehearsed against the embedded Hub: of the bundled ``examples/``, or of an
OpenEnv checkout (``rehearse --repo PATH``).

No account and no network beyond package registries: the checkout is copied to a work folder
(the original is never touched), the embedded Hub gets the canonical Spaces a real namespace
would have, and ``release`` runs end to end. The examples pass when every env ends as they
intend; a checkout's rehearsal ends like its release would. Its briefing says it is a rehearsal.
"""

from __future__ import annotations

import os
import shlex
import shutil
import ssl
import stat
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from releaselib.config import release_key
from releaselib.errors import ReleaseError, UsageError
from releaselib.files import write_atomic
from releaselib.hub.client import Hub
from releaselib.hub.deploy import Progress
from releaselib.ledger.ledger import Ledger
from releaselib.ledger.paths import default_path
from releaselib.ledger.report import write_briefing
from releaselib.ledger.status import Row, listed_board
from releaselib.localhub import LocalHub, Scenario
from releaselib.localhub.seed import named_targets, seed_canonicals
from releaselib.options import Options, build_config
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.private_copy import commit_all, pin_reason, private_copy
from releaselib.records import AllowedSecret
from releaselib.release import Event, Release, ReleaseOptions
from releaselib.space_runtime.builders import BUILD_JOBS, BUILD_TIMEOUT
from releaselib.stage.discover import discover_envs, select_envs

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
#: The first line of every rehearsal briefing (templates/briefing.md.j2): ``--briefing`` only
#: ever overwrites a file that starts with it.
BRIEFING_MARKER = "<!-- openenv-release: rehearsal briefing -->"
#: An env's next action on the board of a rehearsal whose workspace is gone when it ends.
GONE = "none that would run: rehearse with --keep DIR for one"
#: What a rehearsal without --keep says after its board.
NOT_KEPT = (
    "this rehearsal's checkout, ledger, briefing and embedded Hub are gone as it ends; "
    "rehearse with --keep DIR to keep them and get commands that run"
)


@dataclass(frozen=True)
class Rehearsal:
    report: dict[str, Any]
    board: list[Row]
    briefing: Path | None
    mismatches: list[str]  # from INTENDED; always empty for a checkout's rehearsal
    commits: dict[str, int]  # Space id -> commits on main
    statuses: dict[str, int]  # HTTP status -> how many times the embedded Hub answered it
    #: lines to print after the board: how to use what a kept rehearsal left
    notes: tuple[str, ...] = field(default_factory=tuple)

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
    commit_all(dest, "examples")
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
    repo: Path | None = None,
    envs: Sequence[str] = (),
    build_timeout: float = BUILD_TIMEOUT,
    build_jobs: int = BUILD_JOBS,
    allowed_secrets: tuple[AllowedSecret, ...] = (),
    wait: float | None = None,
    timeout: float | None = None,
    on_progress: Progress | None = None,
    kept: bool = False,
    lock: bool = True,
    spaces: int | None = None,
) -> Rehearsal:
    """Run the rehearsal in ``workdir`` (which must not exist yet) and report how it ended.

    ``repo``: rehearse a private copy of that checkout's ``envs`` (default: all deployable),
    with the canonical Spaces their plugins name, instead of the examples. ``scenario`` makes
    the embedded Hub misbehave; ``builder`` (with ``build_timeout``/``build_jobs``) is the
    embedded Hub's (``venv`` installs the OpenEnv pin from the copied checkout);
    ``allowed_secrets`` are the checkout's known false positives (``--allow-secret``).
    ``wait`` (for Spaces to build) and ``timeout`` (per probe request) are release's
    ``--wait``/``--timeout``; unset, the examples get timings tuned to slow_env and a checkout
    gets release's defaults. ``on_progress(space_id, stage)`` hears each Space's upload,
    build and run stages, probing and verdict, as release's live board does.
    ``kept``: ``workdir`` outlives the rehearsal (``--keep``); else nothing printed or returned
    names a path in it or a command that needs it or the stopped Hub. ``lock``: False for
    release's ``--no-lock``. ``spaces``: at most that many Spaces build or start at once in the
    embedded Hub (None: no bound; see :mod:`releaselib.localhub.in_flight`); either way each
    Space is paused once its verdict is in.
    """
    check_keep(workdir, repo)
    if repo is None:
        checkout = copy_checkout(examples_dir(), workdir / "OpenEnv")
    else:
        checkout = private_copy(repo, workdir / "OpenEnv", on_event)
    specs = select_envs(discover_envs(checkout), envs)
    embedded = LocalHub(
        workdir / "hub",
        user=NAMESPACE,
        scenario=scenario,
        builder=builder,
        openenv=checkout,
        build_timeout=build_timeout,
        build_jobs=build_jobs,
        spaces=spaces,
    )
    with embedded as local:
        on_event(f"embedded Hub at {local.endpoint} (builder {builder}, until the rehearsal ends)")
        port = urlsplit(local.endpoint).port
        config, resolution = build_config(  # pins the HEAD of the checkout the Hub serves
            Options(
                repo=str(checkout),
                staging_dir=str(workdir / "staging"),
                hub_endpoint=local.endpoint,
                namespace=NAMESPACE,
            ),
            rehearsal=True,
        )
        if repo is not None:  # the copy's HEAD is the checkout's, or what is on top of it
            resolution = replace(resolution, reason=pin_reason(repo, checkout))
        hub = Hub.connect(local.endpoint, token=local.token)
        registry = PluginRegistry(get_plugin_manager())
        canonicals = PROMOTED if repo is None else [s.name for s in specs]
        seed_canonicals(hub, named_targets(registry, NAMESPACE, canonicals))
        ledger = Ledger.load(default_path(config), release_key(config))
        tls = ssl.create_default_context(cafile=str(local.ca_bundle))
        options = ReleaseOptions(
            interval=0.5,
            tls=tls,
            rehearsal=builder,
            allowed_secrets=allowed_secrets,
            allow_embedded_hub=True,  # the private copy: its next commands may pin it too
            lock=lock,
            stop_judged=True,  # a judged Space leaves the Spaces in flight: it holds no memory
        )
        if repo is None:  # timings tuned to slow_env; a real checkout gets release's own
            tuned = 300.0 if builder in ("host", "venv") else 900.0  # image builds take minutes
            options = replace(options, timeout=PROBE_TIMEOUT, wait=tuned)
        if wait is not None:
            options = replace(options, wait=wait)
        if timeout is not None:
            options = replace(options, timeout=timeout)
        events = on_event if kept else _without_paths(on_event)
        result = Release(
            config, resolution, hub, registry, ledger, options, events, on_progress
        ).run(specs)
        listed = hub.list_spaces(NAMESPACE)
        rows = listed_board(ledger, listed, config)
        commits = {s.id: hub.commit_count(s.id) for s in listed}
        statuses = dict(local.counters().by_status)
        peak, peak_starting = local.in_flight.peak, local.in_flight.peak_starting
    source = "examples/" if repo is None else str(repo.resolve())
    restart = restart_hub(workdir, builder, port, checkout if builder != "host" else None)
    rehearsal = {
        "builder": builder,
        "source": source,
        "kept": kept,
        "spaces": spaces,  # None: no bound
        "in_flight_peak": peak,
        "starting_peak": peak_starting,
    }
    report = {"rehearsal": rehearsal, **result.report}
    if kept:
        rehearsal["restart_hub"] = restart
    else:
        report["reproduce"] = []
        rows = [replace(row, next_action=GONE) for row in rows]
    if result.briefing is not None:  # again, now with the rehearsal banner
        write_briefing(report, result.briefing.parent, result.briefing.stem)
    missed = mismatches(report) if repo is None else []
    notes = restart_note(restart) if kept else (NOT_KEPT,)
    return Rehearsal(report, rows, result.briefing, missed, commits, statuses, notes)


def _without_paths(on_event: Event) -> Event:
    """``on_event`` less the briefing's path, which goes with the rehearsal's temp folder."""
    return lambda line: None if line.startswith("briefing: ") else on_event(line)


def restart_hub(workdir: Path, builder: str, port: int | None, openenv: Path | None) -> list[str]:
    """The commands that start a kept rehearsal's embedded Hub again where its next commands
    expect it (same state, port and token), for a shell that then runs them."""
    serve = ["openenv-release", "localhub.serve", "--builder", builder]
    serve += ["--state-dir", str(workdir / "hub"), "--port", str(port), "--print-env"]
    if openenv is not None:
        serve += ["--openenv", str(openenv)]
    env_file = shlex.quote(str(workdir / "hub.env"))
    return [
        f"{shlex.join(serve)} > {env_file} &",
        f"until [ -s {env_file} ]; do sleep 0.2; done; eval \"$(cat {env_file})\"",
    ]


def restart_note(restart: Sequence[str]) -> tuple[str, ...]:
    return (
        "the embedded Hub stopped with the rehearsal; to run the next commands above, start it "
        "again first:",
        *(f"  {line}" for line in restart),
    )


def check_seconds(value: object, flag: str) -> float:
    """``flag`` as a number of seconds above 0 (flags give strings); else a UsageError."""
    try:
        seconds = float(str(value))
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise UsageError(
            f"{flag} {value!r} must be a number of seconds above 0", remedy=f"e.g. {flag} 900"
        )
    return seconds


def outside(path: Path, repo: Path, flag: str) -> Path:
    """``path`` unless it is inside the checkout ``repo``, which a rehearsal never writes."""
    if path.resolve().is_relative_to(repo.resolve()):
        raise UsageError(
            f"{flag} {path}: inside the checkout {repo}, which a rehearsal never writes",
            remedy=f"pass {flag} a path outside the checkout",
        )
    return path


def check_keep(keep: Path, repo: Path | None) -> Path:
    """``keep`` when a rehearsal may work there: new or an empty folder, and neither inside the
    checkout ``repo`` nor holding it; else a UsageError naming it."""
    if repo is not None:
        if repo.resolve().is_relative_to(keep.resolve()):
            raise UsageError(
                f"--keep {keep}: holds the checkout {repo}, which a rehearsal never writes",
                remedy="pass --keep a new folder outside the checkout",
            )
        outside(keep, repo, "--keep")
    if os.path.lexists(keep) and (not keep.is_dir() or any(keep.iterdir())):
        raise UsageError(
            f"--keep {keep}: exists and is not an empty folder; a rehearsal starts afresh",
            remedy="pass --keep a new folder, or remove that one",
        )
    return keep


def default_briefing(repo: Path) -> Path:
    """Where a checkout's rehearsal copies its briefing without ``--briefing``: into the current
    folder, or into the system temp folder when that is inside the checkout ``repo``."""
    here = Path.cwd()
    inside = here.resolve().is_relative_to(repo.resolve())
    return (Path(tempfile.gettempdir()) if inside else here) / "rehearsal-briefing.md"


def check_briefing_path(dest: Path) -> Path:
    """``dest`` when a rehearsal may write its briefing there (a new file in an existing
    folder, or a briefing an earlier rehearsal wrote); else a UsageError naming it. Anything
    but a regular file (a FIFO, ``/dev/stdout``) is refused unopened: reading it could hang."""
    try:
        mode: int | None = dest.stat().st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        raise UsageError(
            f"--briefing {dest}: exists and is not a regular file; not writing there",
            remedy="pass --briefing the path of a new file (or of an earlier rehearsal briefing)",
        )
    if mode is not None and not is_rehearsal_briefing(dest):
        raise UsageError(
            f"--briefing {dest}: exists and is not a rehearsal briefing; not overwriting it",
            remedy="pass another --briefing PATH, or move that file away",
        )
    if not dest.parent.is_dir():
        raise UsageError(f"--briefing {dest}: there is no folder {dest.parent}")
    return dest


def is_rehearsal_briefing(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8") as handle:
            return handle.readline().rstrip("\n") == BRIEFING_MARKER
    except (OSError, UnicodeDecodeError):
        return False


def save_briefing(briefing: Path, dest: Path) -> Path:
    """Copy the rehearsal's briefing out of its workspace to ``dest`` (checked again)."""
    write_atomic(check_briefing_path(dest), briefing.read_bytes())
    return dest
