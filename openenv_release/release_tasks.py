"""Tasks for the whole workflow: ``release``, ``status``, ``report`` and ``rehearse``."""

from __future__ import annotations

import json as jsonlib
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from invoke.context import Context
from invoke.exceptions import Exit

from openenv_release.common import (
    consoles,
    plugin_registry,
    release_tuple,
    reported,
)
from openenv_release.flags import helps, release_task
from releaselib.errors import UsageError

if TYPE_CHECKING:
    from rich.console import Console


def lines(console: Console) -> Callable[[str], None]:
    """Print each event on one line, never wrapped (a command in it stays copyable), as plain
    text: an event may quote an env's or a Space's own words."""
    return lambda line: console.print(line, soft_wrap=True, markup=False)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C, so every ``with`` on the way cleans up."""


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While inside: SIGTERM (a time-out, ``kill``, a cancelled CI job) unwinds like Ctrl-C
    (Space processes stopped, temp folder removed), then exits 143; a second one waits."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # let the clean-up finish
        raise Terminated

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    except Terminated:
        raise Exit("terminated", code=143) from None
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


@release_task(
    iterable=["env", "allow_secret"],
    help=helps(
        "repo",
        "env",
        "version",
        "ref",
        "dist",
        "namespace",
        "from_",
        "until",
        "jobs",
        "staging_dir",
        "hub_endpoint",
        "ledger",
        "timeout",
        "wait",
        "create_missing",
        "commit_pins",
        "json",
        "no_wait",
        "allow_secret",
        "allow_embedded_hub",
        "no_lock",
    ),
)
def release(
    c: Context,
    repo: str | None = None,
    env: list[str] | None = None,
    version: str | None = None,
    ref: str | None = None,
    dist: str | None = None,
    namespace: str | None = None,
    from_: str = "stage",
    until: str = "report",
    jobs: int | None = None,
    staging_dir: str | None = None,
    hub_endpoint: str | None = None,
    ledger: str | None = None,
    timeout: float = 20.0,
    wait: float = 900.0,
    create_missing: bool = False,
    commit_pins: bool = False,
    json: bool = False,
    no_wait: bool = False,
    allow_secret: list[str] | None = None,
    allow_embedded_hub: bool = False,
    no_lock: bool = False,
) -> None:
    """The whole release, resumable: stage, deploy, verify, promote, collection, pin, report.

    Exit 1 if any env FAILed, else 5 if any ended INCONCLUSIVE (nothing decisive for it).
    """
    from dataclasses import replace

    from releaselib import console as out
    from releaselib.config import check_seconds, release_key
    from releaselib.hub.client import Hub
    from releaselib.ledger.ledger import Ledger
    from releaselib.ledger.paths import ledger_path as ledger_file
    from releaselib.ledger.status import listed_board
    from releaselib.locks import run_locks
    from releaselib.release import Release, ReleaseOptions, nothing_to_redo
    from releaselib.stage.discover import discover_envs, select_envs
    from releaselib.stage.secret_gate import allow_flags
    from releaselib.verify.verdicts import exit_status

    with reported():
        options = ReleaseOptions(
            from_step=from_,
            until_step=until,
            timeout=check_seconds(timeout, "--timeout", 20.0),
            wait=check_seconds(wait, "--wait", 900.0),
            create_missing=create_missing,
            commit_pins=commit_pins,
            allow_embedded_hub=allow_embedded_hub,
            lock=not no_lock,
        )
        config, resolution = release_tuple(
            c,
            ledger=ledger,
            repo=repo,
            version=version,
            ref=ref,
            dist=dist,
            namespace=namespace,
            jobs=jobs,
            staging_dir=staging_dir,
            hub_endpoint=hub_endpoint,
        )
        console = consoles(json)
        out.print_tuple(console, config, resolution)
        specs = select_envs(discover_envs(config.repo), env or [])
        ledger_path = ledger_file(config, ledger)
        if from_ != "stage" and not ledger_path.exists():
            raise nothing_to_redo(from_)  # before anything (staging dir, ledger) is created
        hub = Hub.connect(config.hub_endpoint)
        allowed = allow_flags(allow_secret or [], config.repo)
        ids = [config.space_id(s.name) for s in specs]
        with (
            run_locks(config.staging_dir, ledger_path, wait=not no_wait, on_wait=console.print),
            out.ProgressBoard(
                console, ids, live=not json and console.is_terminal, title="release"
            ) as progress,
        ):
            release_ledger = Ledger.load(ledger_path, release_key(config))
            release_run = Release(
                config,
                resolution,
                hub,
                plugin_registry(),
                release_ledger,
                replace(options, allowed_secrets=allowed),
                lines(console),
                progress.update,
            )
            run = release_run.run(specs)
        if json:
            print(jsonlib.dumps(run.report, indent=2))
        else:
            spaces = hub.list_spaces(config.namespace)
            out.print_board(console, listed_board(release_ledger, spaces, config))
        code, why = exit_status(outcomes(run.report))
        if why:
            console.print(f"[yellow]{why}[/]", soft_wrap=True)
        if code:
            raise Exit(code=code)


@release_task(
    iterable=["env", "allow_secret"],
    help=helps(
        "env",
        "keep",
        "scenario",
        "json",
        "allow_secret",
        "timeout",
        "wait",
        "no_lock",
        "spaces",
        repo="an OpenEnv checkout to rehearse instead of the bundled examples/ (a private copy "
        "of what git tracks there; the checkout is never written)",
        builder="the embedded Hub's builder: host (the tool's own Python; the default without "
        "--repo) or venv (a uv virtual env per Space commit, the OpenEnv pin served from the "
        "checkout; the default with --repo), podman or docker (a real image build and a "
        "container per Space; needs the engine and the local base images)",
        build_timeout="seconds a build may take before it is a BUILD_ERROR (default 900)",
        build_jobs="how many builds run at once (default 2)",
        briefing="where the briefing is copied out of the workspace (default with --repo: "
        "./rehearsal-briefing.md, or in the temp folder when . is inside the checkout; only a "
        "rehearsal briefing is ever overwritten)",
    ),
)
def rehearse(
    c: Context,
    repo: str | None = None,
    env: list[str] | None = None,
    builder: str | None = None,
    scenario: str | None = None,
    keep: str | None = None,
    json: bool = False,
    build_timeout: str | None = None,
    build_jobs: str | None = None,
    briefing: str | None = None,
    allow_secret: list[str] | None = None,
    timeout: str | None = None,
    wait: str | None = None,
    no_lock: bool = False,
    spaces: str | None = None,
) -> None:
    """A whole release against the embedded Hub, no account: of examples/, or of --repo PATH.

    The examples exit 1 unless each env ends as they intend; a checkout's rehearsal exits as
    release does (1 if an env FAILed, 5 if nothing was decisive for some).
    """
    from rich.markup import escape

    from releaselib import console as out
    from releaselib.localhub import Scenario
    from releaselib.localhub.in_flight import default_spaces
    from releaselib.options import check_jobs
    from releaselib.private_copy import check_source
    from releaselib.rehearse import (
        check_briefing_path,
        check_seconds,
        default_briefing,
        outside,
        save_briefing,
        workspace,
    )
    from releaselib.rehearse import rehearse as run_rehearsal
    from releaselib.space_runtime.builders import BUILD_JOBS, BUILD_TIMEOUT, BUILDERS
    from releaselib.stage.secret_gate import allow_flags
    from releaselib.verify.verdicts import exit_status

    with reported(), sigterm_as_interrupt(), workspace(Path(keep) if keep else None) as workdir:
        console = consoles(json)
        builder = builder or ("venv" if repo else "host")
        if builder not in BUILDERS:
            raise UsageError(f"--builder {builder!r}: choose one of {', '.join(BUILDERS)}")
        if (env or allow_secret) and not repo:
            flag = "--env" if env else "--allow-secret"
            raise UsageError(f"{flag} goes with --repo (the examples are rehearsed whole)")
        waits = {
            name: check_seconds(value, f"--{name}") if value is not None else None
            for name, value in (("wait", wait), ("timeout", timeout))
        }
        build_seconds = check_seconds(build_timeout or BUILD_TIMEOUT, "--build-timeout")
        jobs = check_jobs(build_jobs or BUILD_JOBS, "--build-jobs")
        bound = check_jobs(spaces, "--spaces") if spaces is not None else default_spaces()
        if repo:
            check_source(Path(repo))
        copy_to = Path(briefing) if briefing else default_briefing(Path(repo)) if repo else None
        dest = check_briefing_path(copy_to) if copy_to else None
        if dest is not None and repo:
            outside(dest, Path(repo), "--briefing")
        faults = Scenario.load(Path(scenario)) if scenario else None
        allowed = allow_flags(allow_secret or [], Path(repo).resolve()) if repo else ()
        board = out.ProgressBoard(
            console, [], live=not json and console.is_terminal, title="rehearse"
        )  # a row per Space as it appears: its upload, build, run, probe and verdict
        with board:
            result = run_rehearsal(
                workdir,
                scenario=faults,
                on_event=lines(console),
                builder=builder,
                repo=Path(repo) if repo else None,
                envs=env or [],
                build_timeout=build_seconds,
                build_jobs=jobs,
                spaces=bound,
                allowed_secrets=allowed,
                kept=keep is not None,
                lock=not no_lock,
                **waits,
                on_progress=board.update,
            )
        if json:
            print(jsonlib.dumps(result.report, indent=2))
        else:
            out.print_board(console, result.board)
        if dest is not None and result.briefing is not None:
            saved = save_briefing(result.briefing, dest)
            console.print(f"briefing copied to {saved.resolve()}", soft_wrap=True, markup=False)
        if not json:
            for note in result.notes:
                console.print(note, soft_wrap=True, markup=False, highlight=False)
        for line in result.mismatches:
            console.print(f"[red]not as intended:[/] {escape(line)}")
        if not result.ok:
            raise Exit(code=1)
        code, why = exit_status(outcomes(result.report)) if repo else (0, "")
        if why:
            console.print(f"[yellow]{why}[/]", soft_wrap=True)
        if code:
            raise Exit(code=code)


def outcomes(report: dict[str, Any]) -> list[str]:
    """The envs' verdicts and their canonicals' after promotion, for the exit code."""
    envs = [e["outcome"] for e in report["envs"]]
    return envs + [c["outcome"] for c in report.get("canonicals", [])]
