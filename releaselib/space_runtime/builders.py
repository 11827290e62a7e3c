"""Builders: what stands in for a Space's RUN steps between its commit and its run.

- ``host``: nothing is installed; the Space runs with the current Python and its packages.
- ``venv``: one virtual environment per Space commit, made with ``uv``, holding what the
  Dockerfile's stages install (``installs.plan_installs``). The OpenEnv git requirement is served
  from a local checkout, built once into a wheel, or from the package registry without one. A
  failed install, or a build over ``timeout`` seconds, is a BuildError whose message is the build
  log's last lines; at most ``jobs`` builds run at once.
- ``podman``/``docker``: a real image build with that engine, then the Space runs as a container
  (``releaselib.space_runtime.engine_builder``).
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import IO, Protocol

import uv
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

from releaselib.edit.requirement import OPENENV_DISTS
from releaselib.space_runtime.buildlog import fail, run_logged
from releaselib.space_runtime.engine_builder import ENGINE_BUILDERS, EngineBuilder
from releaselib.space_runtime.installs import Install, base_image_installs, plan_installs
from releaselib.space_runtime.plan import BuildError
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


class Builder(Protocol):
    name: str

    def base_path(self, env_dir: Path) -> str:
        """The PATH a stage FROM an image starts with, for a build into ``env_dir``."""

    def build(self, layout: Layout, env_dir: Path, log: Path) -> None:
        """Install what ``layout`` needs into ``env_dir``, logging to ``log``; BuildError if not."""

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

    def build(self, layout: Layout, env_dir: Path, log: Path) -> None:
        log.write_text(f"host builder: no install; the Space runs with {sys.executable}\n")


class VenvBuilder(_LocalProcess):
    """A ``uv`` virtual environment per Space commit, sharing uv's cache."""

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
        self._wheel: Path | None = None

    def base_path(self, env_dir: Path) -> str:
        return f"{env_dir / 'bin'}:{IMAGE_PATH}"

    def build(self, layout: Layout, env_dir: Path, log: Path) -> None:
        with open(log, "w") as out:
            if (env_dir / _BUILT).is_file():
                out.write(f"reusing {env_dir}\n")
                return
            try:
                installs = [*base_image_installs(layout, self._openenv), *plan_installs(layout)]
            except BuildError as exc:
                raise fail(out, exc.message) from exc
            with self._slots:
                self._install(installs, env_dir, out, time.monotonic() + self._timeout)
        (env_dir / _BUILT).touch()

    def _install(
        self, installs: Sequence[Install], env_dir: Path, out: IO[str], deadline: float
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
            self._run([*command, *pins, *install.args], out, deadline)

    def _overrides(self, installs: Sequence[Install], out: IO[str], deadline: float) -> list[str]:
        """OpenEnv git requirements -> the checkout's wheel (or the registry's release)."""
        extras: dict[str, set[str]] = {}
        for install in installs:
            for text in install.requirements:
                with suppress(InvalidRequirement):
                    req = Requirement(text)
                    if req.url and canonicalize_name(req.name) in OPENENV_DISTS:
                        extras.setdefault(canonicalize_name(req.name), set()).update(req.extras)
        if not extras:
            return []
        wheel = self._openenv_wheel(out, deadline) if self._openenv is not None else None
        lines = []
        for name, wanted in sorted(extras.items()):
            extra = f"[{','.join(sorted(wanted))}]" if wanted else ""
            if wheel is not None and canonicalize_name(parse_wheel_filename(wheel.name)[0]) == name:
                lines.append(f"{name}{extra} @ {wheel.as_uri()}")
            else:
                lines.append(f"{name}{extra}")
        out.write("OpenEnv served as: " + "; ".join(lines) + "\n")
        return lines

    def _openenv_wheel(self, out: IO[str], deadline: float) -> Path:
        """The checkout built into a wheel, once per builder."""
        with self._wheel_lock:
            if self._wheel is None:
                assert self._openenv is not None
                dest = self._work / "openenv-wheel"
                shutil.rmtree(dest, ignore_errors=True)
                out.write(f"building OpenEnv from {self._openenv}\n")
                self._run(
                    ["build", "--wheel", "--out-dir", str(dest), str(self._openenv)], out, deadline
                )
                self._wheel = next(dest.glob("*.whl"))
            return self._wheel

    def _run(self, args: list[str], out: IO[str], deadline: float) -> None:
        env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
        env |= {"UV_NO_PROGRESS": "1", "UV_PYTHON_DOWNLOADS": "never", "NO_COLOR": "1"}
        if self._cache_dir is not None:
            env["UV_CACHE_DIR"] = str(self._cache_dir)
        run_logged([uv.find_uv_bin(), *args], out, deadline=deadline, limit=self._timeout, env=env)


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
