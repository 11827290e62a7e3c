"""Builders: what stands in for a Space's RUN steps between its commit and its run.

- ``host``: nothing is installed; the Space runs with the current Python and its packages.
- ``venv``: one virtual environment per Space commit, made with ``uv``, holding what the
  Dockerfile's stages install (``installs.plan_installs``). The OpenEnv git requirement is served
  from the ``--openenv`` checkout at the commit it pins, built once per commit into a wheel;
  without that checkout or commit the build fails as the builder's own (INCONCLUSIVE). A
  failed install, or a build over ``timeout`` seconds, is a BuildError whose message is the build
  log's last lines; at most ``jobs`` builds run at once.
- ``podman``/``docker``: a real image build with that engine, then the Space runs as a container
  (``releaselib.space_runtime.engine_builder``).
"""

from __future__ import annotations

import os
import shutil
import sys
import tarfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import IO, Protocol

import uv
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

from releaselib import shell
from releaselib.edit.requirement import OPENENV_DISTS, OPENENV_URL
from releaselib.hub.runtime import BUILDER_MADE
from releaselib.space_runtime.builder_limits import builders_doing, skipped_steps
from releaselib.space_runtime.buildlog import fail, run_logged
from releaselib.space_runtime.engine_builder import ENGINE_BUILDERS, EngineBuilder
from releaselib.space_runtime.installs import Install, base_image_installs, plan_installs
from releaselib.space_runtime.plan import BuildError, RunStep
from releaselib.space_runtime.process import (
    IMAGE_PATH,
    Layout,
    SpaceProcess,
    host_path,
    start_layout,
)

BUILDERS = ("host", "venv", *ENGINE_BUILDERS)
BUILD_TIMEOUT = 15 * 60.0
BUILD_JOBS = 2
_BUILT = ".built"


class Running(Protocol):
    """A started Space: a local process or a container."""

    port: int

    def exit_code(self) -> int | None: ...

    def is_listening(self) -> bool: ...

    def stderr_tail(self, lines: int = 20) -> str: ...

    def stop(self, timeout: float = 5.0) -> None: ...


def _nothing() -> None:
    """A build's ``started`` callback when nobody listens."""


class Builder(Protocol):
    name: str

    def base_path(self, env_dir: Path) -> str:
        """The PATH a stage FROM an image starts with, for a build into ``env_dir``."""

    def build(
        self,
        layout: Layout,
        env_dir: Path,
        log: Path,
        started: Callable[[], None] = _nothing,
        *,
        fresh: bool = False,
    ) -> None:
        """Install what ``layout`` needs into ``env_dir``, logging to ``log``; BuildError if not.
        ``started`` is called once the build holds one of the builder's slots (until then it
        is queued behind other builds). An earlier build into ``env_dir`` is reused unless
        ``fresh`` (a factory reboot)."""

    def start(self, layout: Layout, env_dir: Path, *, port: int, env: Mapping[str, str]) -> Running:
        """Start the built Space on 127.0.0.1:``port``; OSError if its command cannot start."""

    def close(self) -> None:
        """Remove what the builds left outside their ``env_dir`` (images)."""


class _LocalProcess:
    """Runs the Space's laid-out command as a local process."""

    def start(
        self, layout: Layout, env_dir: Path, *, port: int, env: Mapping[str, str]
    ) -> SpaceProcess:
        return start_layout(layout, port=port, env=env)

    def close(self) -> None:
        """Nothing outside the Space's folders."""


class HostBuilder(_LocalProcess):
    """Today's container-less runtime: the current Python environment stands in for every RUN."""

    name = "host"

    def base_path(self, env_dir: Path) -> str:
        return host_path()

    def build(
        self,
        layout: Layout,
        env_dir: Path,
        log: Path,
        started: Callable[[], None] = _nothing,
        *,
        fresh: bool = False,
    ) -> None:
        started()
        log.write_text(f"host builder: no install; the Space runs with {sys.executable}\n")


class VenvBuilder(_LocalProcess):
    """A ``uv`` virtual environment per Space commit, sharing uv's cache. Builds of one
    ``env_dir`` run one at a time; one that a later build of it superseded while it waited
    does nothing (the later one builds, or reuses)."""

    name = "venv"

    def __init__(
        self,
        work: Path,
        *,
        openenv: Path | None = None,
        timeout: float = BUILD_TIMEOUT,
        jobs: int = BUILD_JOBS,
        cache_dir: Path | None = None,
    ) -> None:
        self._work = work
        self._openenv = openenv
        self._timeout = timeout
        self._slots = threading.BoundedSemaphore(max(1, jobs))
        self._cache_dir = cache_dir
        self._wheel_lock = threading.Lock()
        self._wheels: dict[str, Path] = {}
        self._env_locks_lock = threading.Lock()
        self._env_locks: dict[Path, threading.Lock] = {}  # one build at a time into an env_dir
        self._asked: dict[Path, int] = {}  # how many builds of each env_dir were asked for

    def base_path(self, env_dir: Path) -> str:
        return f"{env_dir / 'bin'}:{IMAGE_PATH}"

    def build(
        self,
        layout: Layout,
        env_dir: Path,
        log: Path,
        started: Callable[[], None] = _nothing,
        *,
        fresh: bool = False,
    ) -> None:
        with self._env_locks_lock:  # a restart during a build of its commit waits for that build
            env_lock = self._env_locks.setdefault(env_dir, threading.Lock())
            ticket = self._asked[env_dir] = self._asked.get(env_dir, 0) + 1
        with env_lock:
            with self._env_locks_lock:
                if self._asked[env_dir] != ticket:
                    return  # a later build of this env_dir was asked for: it builds or reuses
            self._build_once(layout, env_dir, log, started, fresh=fresh)

    def _build_once(
        self, layout: Layout, env_dir: Path, log: Path, started: Callable[[], None], *, fresh: bool
    ) -> None:
        with open(log, "w") as out:
            if not fresh and (env_dir / _BUILT).is_file():
                started()
                out.write(f"reusing {env_dir}\n")
                return
            try:
                installs = [*base_image_installs(layout, self._openenv), *plan_installs(layout)]
            except BuildError as exc:
                raise fail(out, exc.message) from exc
            with self._slots:
                started()
                deadline = time.monotonic() + self._timeout
                self._install(installs, env_dir, out, deadline, skipped_steps(layout))
            (env_dir / _BUILT).touch()

    def _install(
        self,
        installs: Sequence[Install],
        env_dir: Path,
        out: IO[str],
        deadline: float,
        skipped: Sequence[RunStep] = (),
    ) -> None:
        shutil.rmtree(env_dir, ignore_errors=True)
        self._run(["venv", "--python", sys.executable, str(env_dir)], out, deadline)
        overrides = env_dir / "overrides.txt"
        overrides.write_text(
            "".join(f"{line}\n" for line in self._overrides(installs, out, deadline))
        )
        python = str(env_dir / "bin" / "python")
        for install in installs:
            out.write(f"--> line {install.line}: {install.command}\n")
            out.flush()
            pins: list[str] = []
            if install.pins:  # uv sync's [tool.uv] constraint-dependencies
                pinned = env_dir / f"constraints-line-{install.line}.txt"
                pinned.write_text("".join(f"{pin}\n" for pin in install.pins))
                pins = ["--constraint", str(pinned)]
            command = ["pip", "install", "--python", python, "--override", str(overrides)]
            try:
                self._run([*command, *pins, *install.args], out, deadline)
            except BuildError as exc:  # the Space's failure, unless the builder could not do it
                if (why := builders_doing(exc.message, skipped, install.line)) is None:
                    raise
                raise fail(out, f"{BUILDER_MADE} {why}") from exc

    def _overrides(self, installs: Sequence[Install], out: IO[str], deadline: float) -> list[str]:
        """OpenEnv git requirements -> a wheel of the ``--openenv`` checkout at the commit they
        pin; a builder-made BuildError (``BUILDER_MADE``) when it cannot be built there, never
        another OpenEnv (the registry's release) in its place."""
        extras: dict[str, set[str]] = {}
        refs: set[str] = set()
        for install in installs:
            for text in install.requirements:
                with suppress(InvalidRequirement):
                    req = Requirement(text)
                    if req.url and canonicalize_name(req.name) in OPENENV_DISTS:
                        extras.setdefault(canonicalize_name(req.name), set()).update(req.extras)
                        pinned = OPENENV_URL.fullmatch(req.url)
                        refs.add((pinned.group("ref") if pinned else None) or "")
        if not extras:
            return []
        if len(refs) != 1 or "" in refs:
            pins = ", ".join(sorted(r or "(no OpenEnv commit)" for r in refs))
            raise fail(out, f"{BUILDER_MADE} the Space pins OpenEnv at {pins}, not one commit")
        wheel = self._openenv_wheel(refs.pop(), out, deadline)
        built = canonicalize_name(parse_wheel_filename(wheel.name)[0])
        lines = []
        for name, wanted in sorted(extras.items()):
            if name != built:
                raise fail(
                    out,
                    f"{BUILDER_MADE} the Space needs {name}, the --openenv checkout publishes "
                    f"{built} at that commit",
                )
            extra = f"[{','.join(sorted(wanted))}]" if wanted else ""
            lines.append(f"{name}{extra} @ {wheel.as_uri()}")
        out.write("OpenEnv served as: " + "; ".join(lines) + "\n")
        return lines

    def _openenv_wheel(self, ref: str, out: IO[str], deadline: float) -> Path:
        """The ``--openenv`` checkout at commit ``ref`` (``git archive``, so the checkout is
        never touched) built into a wheel, once per commit."""
        with self._wheel_lock:
            if ref in self._wheels:
                return self._wheels[ref]
            if self._openenv is None:
                raise fail(
                    out,
                    f"{BUILDER_MADE} no OpenEnv checkout to build {ref} from: start the "
                    "embedded Hub with --openenv CHECKOUT (one holding that commit)",
                )
            sha, tree = _commit_tree(self._openenv, ref)
            if sha is None:
                raise fail(
                    out,
                    f"{BUILDER_MADE} the --openenv checkout {self._openenv} has no commit {ref}: "
                    "start the embedded Hub with --openenv CHECKOUT holding it",
                )
            source, dest = self._work / f"openenv-{sha}", self._work / f"openenv-wheel-{sha}"
            for folder in (source, dest):
                shutil.rmtree(folder, ignore_errors=True)
            source.mkdir(parents=True)
            archive = self._work / f"openenv-{sha}.tar"
            out.write(f"building OpenEnv {sha} from {self._openenv}\n")
            top = shell.run(["git", "-C", str(self._openenv), "rev-parse", "--show-toplevel"])
            made = shell.run(["git", "-C", top.stdout.strip(), "archive", "-o", str(archive), tree])
            if not made.ok:
                raise fail(out, f"{BUILDER_MADE} git archive {tree} failed: {made.stderr.strip()}")
            try:
                with tarfile.open(archive) as tar:
                    tar.extractall(source, filter=_inside)
            except (OSError, tarfile.TarError) as exc:
                raise fail(out, f"{BUILDER_MADE} cannot unpack OpenEnv {sha}: {exc}") from exc
            archive.unlink()
            self._run(["build", "--wheel", "--out-dir", str(dest), str(source)], out, deadline)
            self._wheels[ref] = next(dest.glob("*.whl"))
            return self._wheels[ref]

    def _run(self, args: list[str], out: IO[str], deadline: float) -> None:
        env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
        env |= {"UV_NO_PROGRESS": "1", "UV_PYTHON_DOWNLOADS": "never", "NO_COLOR": "1"}
        if self._cache_dir is not None:
            env["UV_CACHE_DIR"] = str(self._cache_dir)
        run_logged([uv.find_uv_bin(), *args], out, deadline=deadline, limit=self._timeout, env=env)


def _inside(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """tarfile's ``data`` filter, but a member it refuses (a link out of the tree) is left out
    rather than ending the unpacking: it points at nothing the commit holds."""
    try:
        return tarfile.data_filter(member, dest)
    except tarfile.FilterError:
        return None


def _commit_tree(checkout: Path, ref: str) -> tuple[str | None, str]:
    """(the commit ``ref`` names in ``checkout``, or None; the tree-ish of the checkout's folder
    at it, for ``git archive`` run at the repository's top)."""
    found = shell.run(["git", "-C", str(checkout), "rev-parse", "--verify", f"{ref}^{{commit}}"])
    prefix = shell.run(["git", "-C", str(checkout), "rev-parse", "--show-prefix"]).stdout.strip()
    sha = found.stdout.strip()
    return (sha if found.ok and sha else None), f"{sha}:{prefix}"


def make_builder(
    name: str,
    work: Path,
    *,
    openenv: Path | None = None,
    timeout: float = BUILD_TIMEOUT,
    jobs: int = BUILD_JOBS,
) -> Builder:
    """The builder called ``name`` (one of BUILDERS); ValueError for another name,
    EngineUnavailable when an engine builder's engine does not answer."""
    if name == "host":
        return HostBuilder()
    if name == "venv":
        return VenvBuilder(work, openenv=openenv, timeout=timeout, jobs=jobs)
    if name in ENGINE_BUILDERS:
        return EngineBuilder(name, work, openenv=openenv, timeout=timeout, jobs=jobs)
    raise ValueError(f"unknown builder {name!r} (choose from {', '.join(BUILDERS)})")
