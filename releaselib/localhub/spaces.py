"""The Spaces' runtime: builds, stages, processes (or containers) and domains of every Space.

A commit or restart bumps the Space's generation and starts a build thread; a thread whose
generation is no longer current stops touching the Space, so a newer commit always wins. With a
``spaces`` bound, a build first waits (BUILDING, queued) for one of the slots of Spaces starting
(:mod:`releaselib.localhub.in_flight`), which it holds until its process answers (RUNNING); it
stays in flight, within a bound of twice that and memory's, until its process stops.
"""

from __future__ import annotations

import asyncio
import shutil
import threading
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from releaselib.hub.runtime import BUILDER_MADE
from releaselib.localhub.domains import SpaceDomain
from releaselib.localhub.in_flight import InFlight, running_spaces
from releaselib.localhub.requestlog import RequestLog
from releaselib.localhub.runtime_answer import runtime_dict
from releaselib.localhub.scenario import FaultInjector, Scenario, SpaceBehaviour
from releaselib.localhub.store import Commit, HubStore, Repo
from releaselib.localhub.tls import TlsFiles
from releaselib.space_runtime.builders import Builder, HostBuilder, Running
from releaselib.space_runtime.plan import BuildError
from releaselib.space_runtime.process import free_port, lay_out

#: How long a Space's process may take to open its port before it counts as RUNTIME_ERROR: the
#: Hub's default ``startup_duration_timeout`` (30 min). Ours must not be shorter: a machine busy
#: starting 34 Spaces made healthy ones miss 120 s, and they were judged FAIL for our limit.
STARTUP_TIMEOUT = 30 * 60.0
#: How long a request to a sleeping Space's domain waits for it to wake.
WAKE_TIMEOUT = 120.0
#: How long stopping a Space waits for its starting thread to notice.
_STOP_WAIT = 120.0
_POLL = 0.05
#: Stages in which a Space's process has stopped (or never started): its slot is free.
_ENDED = frozenset({"BUILD_ERROR", "RUNTIME_ERROR", "SLEEPING"})


@dataclass
class _Space:
    repo_id: str
    behaviour: SpaceBehaviour
    domains: list[SpaceDomain]
    stage: str = "NO_APP_FILE"
    sha: str | None = None
    error: str | None = None
    process: Running | None = None
    generation: int = 0
    stale_cleared: bool = False
    threads: list[threading.Thread] = field(default_factory=list)
    #: BUILDING, but waiting for one of the builder's slots (``localhubQueued``)
    queued: bool = False


class SpaceRuntimes:
    """Owns every Space's process and domains; the Hub API calls it after commits and settings."""

    def __init__(
        self,
        store: HubStore,
        *,
        workdir: Path,
        scenario: Scenario,
        tls: TlsFiles,
        log: RequestLog,
        injector: FaultInjector,
        builder: Builder | None = None,
        spaces: int | None = None,
    ) -> None:
        self._store = store
        self._builder = builder or HostBuilder()
        self._workdir = workdir
        self._scenario = scenario
        self._tls = tls
        self._log = log
        self._injector = injector
        self._spaces: dict[str, _Space] = {}
        self._lock = threading.Lock()
        # a new connection per forwarded request: one kept alive that the Space's server closes
        # as idle (uvicorn: after 5 s) just as the next request goes out fails it unanswered, a
        # 502 of ours the verdict would take for the Space's
        self._client = httpx.AsyncClient(
            trust_env=False, timeout=300, limits=httpx.Limits(max_keepalive_connections=0)
        )
        self.in_flight = InFlight(spaces, None if spaces is None else running_spaces(spaces))

    # called by the Hub API (on the event loop)
    def runtime(self, repo: Repo) -> dict[str, Any]:
        """The ``runtime`` dict of ``space_info``/``get_space_runtime``."""
        space = self._spaces.get(repo.id)
        if space is None:
            return runtime_dict("NO_APP_FILE", None, None, [], self._builder.name)
        with self._lock:
            process = space.process
            if space.stage == "RUNNING" and process and process.exit_code() is not None:
                space.stage, space.error = "RUNTIME_ERROR", _crash_message(process)
                self.in_flight.release(space.repo_id, space.generation)
            runtime = runtime_dict(
                space.stage, space.sha, space.error, space.domains, self._builder.name
            )
            if space.stage == "BUILDING" and space.queued:
                runtime["localhubQueued"] = True
            return runtime

    async def deploy(self, repo: Repo) -> None:
        """Build and start the head commit, unless the Space is paused."""
        space = await self._ensure(repo.id)
        if space.stage != "PAUSED":
            self._launch(space, repo, then_sleep=space.behaviour.sleeping)

    async def restart(self, repo: Repo, *, factory: bool) -> dict[str, Any]:
        space = await self._ensure(repo.id)
        if factory:
            space.stale_cleared = True
        if repo.head is not None:
            self._launch(space, repo, then_sleep=False, fresh=factory)
        return self.runtime(repo)

    async def pause(self, repo: Repo) -> dict[str, Any]:
        space = await self._ensure(repo.id)
        process = self._supersede(space, "PAUSED")
        generation = space.generation
        if process is not None:
            await asyncio.to_thread(process.stop)
        self.in_flight.moved_on(repo.id, generation)
        return self.runtime(repo)

    async def adopt(self, repo: Repo) -> None:
        """After a Hub restart: a Space with commits comes back SLEEPING (woken by a request)."""
        if repo.head is not None:
            space = await self._ensure(repo.id)
            space.stage, space.sha = "SLEEPING", repo.head.oid

    async def forget(self, repo_id: str) -> None:
        """Stop a deleted Space's process and close its domains."""
        space = self._spaces.pop(repo_id, None)
        if space is not None:
            await self._shut(space)

    async def close(self) -> None:
        """Stop every Space at once (one by one, 60 Spaces took minutes), then the builder."""
        await asyncio.gather(*(self.forget(repo_id) for repo_id in list(self._spaces)))
        await asyncio.to_thread(self._builder.close)
        await self._client.aclose()

    def build_log(self, repo: Repo) -> tuple[str, float]:
        """The log of the Space's latest build and when it was last written ("" before any)."""
        return _read_logs(self._workdir / repo.id, ("build.log",))

    def run_log(self, repo: Repo) -> tuple[str, float]:
        """What the Space's latest run wrote (stdout, then stderr) and when ("" before any)."""
        return _read_logs(self._workdir / repo.id, ("stdout.log", "stderr.log"))

    # SpaceGate, for the domains
    def visible(self, repo_id: str, authorization: str | None) -> bool:
        repo = self._store.repo("spaces", repo_id)
        return repo is not None and (
            not repo.private or authorization == f"Bearer {self._store.token}"
        )

    async def backend_port(self, repo_id: str) -> int | None:
        space = self._spaces.get(repo_id)
        deadline = time.monotonic() + WAKE_TIMEOUT
        while space is not None and time.monotonic() < deadline:
            with self._lock:
                stage, process = space.stage, space.process
            if stage == "RUNNING" and process is not None and process.exit_code() is None:
                return process.port
            if stage == "SLEEPING":
                repo = self._store.repo("spaces", repo_id)
                if repo is None:
                    return None
                self._launch(space, repo, then_sleep=False, build_seconds=0.0)
            elif stage not in ("BUILDING", "APP_STARTING"):
                return None
            await asyncio.sleep(_POLL)
        return None

    # internals
    async def _ensure(self, repo_id: str) -> _Space:
        if repo_id in self._spaces:
            return self._spaces[repo_id]
        behaviour = self._scenario.space(repo_id)
        domains = [
            SpaceDomain(
                repo_id,
                gate=self,
                client=self._client,
                tls=self._tls,
                log=self._log,
                injector=self._injector,
                answers_404=behaviour.first_domain_404 and index == 0,
            )
            for index in range(max(1, behaviour.domains))
        ]
        for domain in domains:
            await domain.start()
        # a Space created again after a deletion goes on from its old generations
        space = _Space(repo_id, behaviour, domains, generation=self.in_flight.newest(repo_id))
        return self._spaces.setdefault(repo_id, space)

    def _supersede(self, space: _Space, stage: str) -> Running | None:
        """Start a new generation in ``stage``; returns the process the caller must stop."""
        with self._lock:
            space.generation += 1  # a new build waits for a builder slot until it starts
            space.stage, space.error, space.queued = stage, None, stage == "BUILDING"
            process, space.process = space.process, None
            return process

    def _launch(
        self,
        space: _Space,
        repo: Repo,
        *,
        then_sleep: bool,
        build_seconds: float | None = None,
        fresh: bool = False,
    ) -> None:
        """Build and start ``repo``'s head as a new generation (``fresh``: reuse no earlier
        build of it, as a factory reboot)."""
        assert repo.head is not None
        old = self._supersede(space, "BUILDING")
        space.sha = repo.head.oid
        env = {key: entry["value"] for key, entry in {**repo.variables, **repo.secrets}.items()}
        env |= {"SPACE_ID": repo.id, "SPACE_HOST": space.domains[0].address}
        delay = self._scenario.build_seconds if build_seconds is None else build_seconds
        thread = threading.Thread(
            target=self._build,
            args=(space, space.generation, repo.head, env, old, then_sleep, delay, fresh),
            name=f"localhub-build-{repo.id}",
            daemon=True,
        )
        space.threads = [t for t in space.threads if t.is_alive()] + [thread]
        thread.start()

    def _build(
        self,
        space: _Space,
        generation: int,
        head: Commit,
        env: dict[str, str],
        old: Running | None,
        then_sleep: bool,
        delay: float,
        fresh: bool,
    ) -> None:
        if old is not None:
            with suppress(Exception):  # one that will not stop must not keep its slot either
                old.stop()
        self.in_flight.moved_on(space.repo_id, generation)
        if not self.in_flight.take(space.repo_id, generation):
            return  # a newer generation began while this one waited for a slot
        try:
            self._build_and_start(space, generation, head, env, then_sleep, delay, fresh)
        except Exception as exc:  # a bug of ours: say so, stop what it started, free the slot
            with self._lock:
                started = space.process if space.generation == generation else None
            if started is not None:
                with suppress(Exception):
                    started.stop()
            why = " ".join(f"{type(exc).__name__}: {exc}".split())  # verify reads the last line
            self._set(space, generation, "BUILD_ERROR", f"{BUILDER_MADE} {why}")

    def _build_and_start(
        self,
        space: _Space,
        generation: int,
        head: Commit,
        env: dict[str, str],
        then_sleep: bool,
        delay: float,
        fresh: bool,
    ) -> None:
        if not self._wait(space, generation, delay):
            return
        behaviour = space.behaviour
        failure = behaviour.build_error or (
            None if space.stale_cleared else behaviour.stale_build_error
        )
        if failure:
            if failure != behaviour.build_error:  # stale: the Hub names the build before the push
                with self._lock:
                    if space.generation == generation:
                        space.sha = head.parent or "0" * 40  # no earlier commit: none we know
            self._set(space, generation, "BUILD_ERROR", failure)
            return
        run_dir = self._workdir / space.repo_id
        shutil.rmtree(run_dir / "tree", ignore_errors=True)
        self._store.checkout(head.files, run_dir / "tree")
        if behaviour.stuck_starting:
            self._set(space, generation, "APP_STARTING")
            return
        env_dir = run_dir / f"env-{head.oid}"
        try:
            layout = lay_out(run_dir / "tree", run_dir, base_path=self._builder.base_path(env_dir))
            self._builder.build(
                layout,
                env_dir,
                run_dir / "build.log",
                started=lambda: self._started(space, generation),
                fresh=fresh,
            )
            if space.generation != generation:
                return
            _drop_other_envs(run_dir, keep=env_dir)
            process = self._builder.start(layout, env_dir, port=free_port(), env=env)
        except BuildError as exc:
            self._set(space, generation, "BUILD_ERROR", exc.one_line())
            return
        except OSError as exc:
            self._set(space, generation, "RUNTIME_ERROR", f"could not start the command: {exc}")
            return
        if not self._set(space, generation, "APP_STARTING", process=process):
            process.stop()
            return
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while process.exit_code() is None and not process.is_listening():
            if not self._wait(space, generation, _POLL) or time.monotonic() > deadline:
                break
        if space.generation != generation:
            return  # the new generation's owner stops this process
        if process.exit_code() is None and process.is_listening():
            if then_sleep:
                process.stop()
                self._set(space, generation, "SLEEPING")
            else:
                self._set(space, generation, "RUNNING")
            return
        message = _crash_message(process)  # before stop(), which makes any process exit
        process.stop()
        self._set(space, generation, "RUNTIME_ERROR", message)

    def _wait(self, space: _Space, generation: int, seconds: float) -> bool:
        """Sleep ``seconds``; False as soon as the Space moves on to a newer generation (a new
        commit, or the Hub shutting down), so a slow build never holds up a stop."""
        deadline = time.monotonic() + seconds
        while space.generation == generation and (left := deadline - time.monotonic()) > 0:
            time.sleep(min(left, _POLL))
        return space.generation == generation

    def _started(self, space: _Space, generation: int) -> None:
        """The Space's build holds a builder slot: it is no longer queued."""
        with self._lock:
            if space.generation == generation:
                space.queued = False

    def _set(
        self,
        space: _Space,
        generation: int,
        stage: str,
        error: str | None = None,
        *,
        process: Running | None = None,
    ) -> bool:
        """Move the Space to ``stage`` if ``generation`` is still current (a stopped process stays
        recorded until the next generation takes it)."""
        with self._lock:
            if space.generation != generation:
                return False
            space.stage, space.error, space.queued = stage, error, False
            if process is not None:
                space.process = process
        if stage in _ENDED:
            self.in_flight.release(space.repo_id, generation)
        elif stage == "RUNNING":
            self.in_flight.started(space.repo_id, generation)
        return True

    async def _shut(self, space: _Space) -> None:
        process = self._supersede(space, "STOPPED")
        generation = space.generation
        if process is not None:
            await asyncio.to_thread(process.stop)
        self.in_flight.moved_on(space.repo_id, generation)
        for thread in space.threads:
            await asyncio.to_thread(thread.join, _STOP_WAIT)
        with self._lock:
            late = space.process
        if late is not None:
            await asyncio.to_thread(late.stop)
        for domain in space.domains:
            await domain.stop()


def _read_logs(run_dir: Path, names: tuple[str, ...]) -> tuple[str, float]:
    """The text of the logs ``names`` in ``run_dir`` joined, and when the last was written."""
    texts, written = [], 0.0
    for name in names:
        path = run_dir / name
        try:
            text, mtime = path.read_text(errors="replace"), path.stat().st_mtime
        except FileNotFoundError:
            continue
        texts.append(text if not text or text.endswith("\n") else text + "\n")
        written = max(written, mtime)
    return "".join(texts), written


def _drop_other_envs(run_dir: Path, *, keep: Path) -> None:
    """Remove the environments built for the Space's earlier commits."""
    for old in run_dir.glob("env-*"):
        if old != keep:
            shutil.rmtree(old, ignore_errors=True)


def _crash_message(process: Running) -> str:
    tail = process.stderr_tail()
    code = process.exit_code()
    if code is None:
        minutes = STARTUP_TIMEOUT / 60
        return f"Launch timed out, workload was not healthy after {minutes:g} min"
    return tail or f"the app exited with status {code}"
