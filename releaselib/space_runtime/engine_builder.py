"""The ``podman`` and ``docker`` builders: a real image build of a Space commit, run as a container.

The engine commands are ``releaselib.space_runtime.containers``' (those ``nox -s staged_docker``
runs). Builds
never pull (``--pull=never`` on podman): the base images must exist locally
(``tools/make-local-images.sh``). With an OpenEnv checkout, the staged pyprojects install a wheel
of it instead of the git ref (``containers.use_local_wheel``), as the venv builder serves it.
The container publishes the app port on 127.0.0.1; stopping the Space removes the container, and
``close()`` the images built.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx

from releaselib import shell
from releaselib.env_facts import read_app_port
from releaselib.errors import ReleaseError
from releaselib.shell import Runner
from releaselib.shell import run as default_run
from releaselib.space_runtime.buildlog import fail, run_logged
from releaselib.space_runtime.containers import (
    Engine,
    EngineUnavailable,
    build_checkout_wheel,
    container_remove_argv,
    container_run_argv,
    detect_engine,
    image_build_argv,
    image_remove_argv,
    use_local_wheel,
)
from releaselib.space_runtime.plan import BuildError
from releaselib.space_runtime.process import IMAGE_PATH, Layout, SpaceProcess

ENGINE_BUILDERS = ("podman", "docker")
#: The local stand-in of the base image every staged Space builds FROM (make-local-images.sh).
LOCAL_BASE = "ghcr.io/huggingface/openenv-base:latest"
_IMAGES = "localhost/openenv-release-space"


@dataclass
class ContainerProcess(SpaceProcess):
    """The engine's ``run`` attached to the Space's container: its exit status and stderr are the
    container's; ``stop()`` removes the container (``remove`` is that argv)."""

    remove: tuple[str, ...] = ()

    def is_listening(self) -> bool:
        """True once the app answers HTTP on the published port (an engine's port forwarder
        accepts connections before the app listens)."""
        try:
            httpx.get(f"http://127.0.0.1:{self.port}/", timeout=2, trust_env=False)
        except httpx.HTTPError:
            return False
        return True

    def stop(self, timeout: float = 5.0) -> None:
        if not self.stopped and self.remove:
            default_run(self.remove, timeout=60)
        super().stop(timeout)


class EngineBuilder:
    """Builds each Space commit into an image with ``name`` (podman or docker), at most ``jobs``
    at once, each within ``timeout`` seconds; EngineUnavailable when the engine does not answer."""

    def __init__(
        self,
        name: str,
        work: Path,
        *,
        openenv: Path | None,
        timeout: float,
        jobs: int,
        runner: Runner = default_run,
    ) -> None:
        self.name = name
        try:
            self._engine = detect_engine(runner, preferred=name)
        except EngineUnavailable as exc:
            remedy = f"{exc.remedy}, or choose --builder venv"
            raise EngineUnavailable(exc.message, remedy=remedy) from None
        _check_runs(self._engine, runner)
        self._work = work
        self._openenv = openenv
        self._timeout = timeout
        self._slots = threading.BoundedSemaphore(max(1, jobs))
        self._runner = runner
        self._lock = threading.Lock()
        self._wheel_lock = threading.Lock()
        self._wheel: Path | None = None
        self._images: set[str] = set()

    def base_path(self, env_dir: Path) -> str:
        return IMAGE_PATH

    def build(
        self,
        layout: Layout,
        env_dir: Path,
        log: Path,
        started: Callable[[], None] = lambda: None,
        *,
        fresh: bool = False,
    ) -> None:
        tag = image_tag(env_dir)
        with open(log, "w") as out:
            inspect = [self._engine.name, "image", "inspect", tag]
            if not fresh and self._runner(inspect, timeout=30).ok:
                started()
                out.write(f"reusing the image {tag}\n")
            else:
                with self._slots:
                    started()
                    deadline = time.monotonic() + self._timeout
                    argv = image_build_argv(
                        self._engine, tag, self._context(layout, env_dir, out), pull_never=True
                    )
                    out.write(f"--> {' '.join(argv)}\n")
                    env = {**os.environ, "BUILDKIT_PROGRESS": "plain"}
                    run_logged(argv, out, deadline=deadline, limit=self._timeout, env=env)
        with self._lock:
            self._images.add(tag)

    def start(
        self, layout: Layout, env_dir: Path, *, port: int, env: Mapping[str, str]
    ) -> ContainerProcess:
        """Run the image as a container with the app port on 127.0.0.1:``port``; ``env`` (the
        Space's variables and secrets) reaches it by name, never on the command line."""
        try:
            app_port = read_app_port(layout.context, "the Space")
        except ReleaseError as exc:
            raise BuildError(exc.message) from exc
        name = f"openenv-release-{_slug(env_dir)}-{secrets.token_hex(4)}"
        argv = container_run_argv(
            self._engine,
            name,
            image_tag(env_dir),
            port=port,
            app_port=app_port,
            env_names=sorted(env),
            detach=False,
        )
        stderr_path = layout.work / "stderr.log"
        with open(layout.work / "stdout.log", "wb") as out, open(stderr_path, "wb") as err:
            popen = shell.start(argv, stdout=out, stderr=err, env={**os.environ, **env})
        remove = tuple(container_remove_argv(self._engine, name))
        return ContainerProcess(popen, port, layout.root, stderr_path, remove=remove)

    def close(self) -> None:
        with self._lock:
            images, self._images = sorted(self._images), set()
        for tag in images:
            self._runner(image_remove_argv(self._engine, tag), timeout=120)

    def _context(self, layout: Layout, env_dir: Path, out: IO[str]) -> Path:
        """A copy of the Space's tree to build, OpenEnv served from the checkout's wheel."""
        context = env_dir / "context"
        shutil.rmtree(context, ignore_errors=True)
        shutil.copytree(layout.context, context, symlinks=True)
        if self._openenv is not None:
            out.write(f"{use_local_wheel(context, self._openenv_wheel(out))}\n")
        return context

    def _openenv_wheel(self, out: IO[str]) -> Path:
        """The checkout built into a wheel, once per builder."""
        with self._wheel_lock:
            if self._wheel is None:
                assert self._openenv is not None
                out.write(f"building OpenEnv from {self._openenv}\n")
                try:
                    wheel = build_checkout_wheel(
                        self._openenv, self._work / "openenv-wheel", self._runner
                    )
                except ReleaseError as exc:
                    raise fail(out, exc.one_line()) from exc
                self._wheel = wheel
            return self._wheel


def _check_runs(engine: Engine, runner: Runner) -> None:
    """EngineUnavailable unless ``engine`` holds the local openenv-base stand-in and runs a
    container of it: a Space must never end in RUNTIME_ERROR for our engine's set-up (podman here
    needs docs/local-containers.md's containers.conf) and be judged FAIL for it."""
    if not runner([engine.name, "image", "inspect", LOCAL_BASE], timeout=60).ok:
        raise EngineUnavailable(
            f"{engine.name} has no {LOCAL_BASE}",
            remedy="run tools/make-local-images.sh, or choose --builder venv",
        )
    smoke = runner([engine.name, "run", "--rm", LOCAL_BASE, "true"], timeout=120)
    if not smoke.ok:
        why = (smoke.stderr.strip() or smoke.stdout.strip()).splitlines()[:1] or ["no output"]
        raise EngineUnavailable(
            f"{engine.name} cannot run a container ({why[0][:200]})",
            remedy="set it up as docs/local-containers.md says, or choose --builder venv",
        )


def image_tag(env_dir: Path) -> str:
    """The image of the commit built into ``env_dir`` (``<run_dir>/env-<sha>``), unique per Hub."""
    return f"{_IMAGES}/{_slug(env_dir)}:{env_dir.name}"


def _slug(env_dir: Path) -> str:
    space = env_dir.parent
    where = hashlib.sha256(str(space.resolve()).encode()).hexdigest()[:8]
    return f"{re.sub(r'[^a-z0-9]+', '-', space.name.lower()).strip('-')}-{where}"
