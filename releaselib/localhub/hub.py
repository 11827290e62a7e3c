"""``LocalHub``: the embedded Hub, served from a background thread (tests, tasks, rehearsals)."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope

from releaselib.localhub import collections_api, repos_api, spaces_api
from releaselib.localhub.apicommon import HubContext, HubHTTPError
from releaselib.localhub.in_flight import InFlight
from releaselib.localhub.middleware import CONTROL_PREFIX, TrafficMiddleware
from releaselib.localhub.requestlog import Counters, RequestLog, RequestRecord
from releaselib.localhub.scenario import Fault, FaultInjector, Scenario
from releaselib.localhub.serving import ServedApp
from releaselib.localhub.spaces import SpaceRuntimes
from releaselib.localhub.store import HubStore
from releaselib.localhub.tls import make_tls_files
from releaselib.space_runtime.builders import BUILD_JOBS, BUILD_TIMEOUT, make_builder

_START_TIMEOUT = 30.0
_STOP_TIMEOUT = 180.0


class LocalHub:
    """A Hub API on ``http://127.0.0.1:<port>`` plus https Space domains, until ``stop()``.

    State (repos, commits, collections, the token) lives in ``state_dir`` and survives a restart;
    without one, a temporary folder is used and removed on stop. ``token`` sets the one token
    the Hub accepts (default: the stored one, else a new ``hf_local_...``). ``builder`` chooses
    what stands in for a Space's RUN steps (``releaselib.space_runtime.builders``): ``host``,
    ``venv``, ``podman`` or ``docker`` (EngineUnavailable here when that engine does not answer),
    whose OpenEnv requirement comes from the ``openenv`` checkout when given. ``spaces``: at
    most that many Spaces build or start at once, the others BUILDING and queued, and no more in
    flight in all than twice that nor than the available memory holds (None: no bound).
    """

    def __init__(
        self,
        state_dir: Path | None = None,
        *,
        scenario: Scenario | None = None,
        port: int = 0,
        user: str = "openenv",
        page_size: int = 100,
        token: str | None = None,
        builder: str = "host",
        openenv: Path | None = None,
        build_timeout: float = BUILD_TIMEOUT,
        build_jobs: int = BUILD_JOBS,
        spaces: int | None = None,
    ) -> None:
        self._owned_dir: Path | None = None
        if state_dir is None:
            state_dir = self._owned_dir = Path(tempfile.mkdtemp(prefix="localhub-"))
        self.state_dir = state_dir
        self.scenario = scenario or Scenario()
        self._port = port
        self._user = user
        self._page_size = page_size
        self._token = token
        self._spaces = spaces
        try:
            self._builder = make_builder(
                builder,
                state_dir / "builder",
                openenv=openenv,
                timeout=build_timeout,
                jobs=build_jobs,
            )
        except BaseException:
            if self._owned_dir is not None:
                shutil.rmtree(self._owned_dir, ignore_errors=True)
            raise
        self.log = RequestLog()
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._endpoint: str | None = None
        self._store: HubStore | None = None
        self._runtimes: SpaceRuntimes | None = None
        self._injector: FaultInjector | None = None

    # lifecycle
    def start(self) -> LocalHub:
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(),), name="localhub")
        self._thread.start()
        if not self._ready.wait(_START_TIMEOUT) or self._failure is not None:
            self.stop()
            raise RuntimeError(f"localhub did not start: {self._failure}") from self._failure
        return self

    def stop(self) -> None:
        """Stop every Space process and both servers; idempotent."""
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(_STOP_TIMEOUT)
            self._thread = None
        self._injector = None
        if self._owned_dir is not None:
            shutil.rmtree(self._owned_dir, ignore_errors=True)

    def __enter__(self) -> LocalHub:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # what clients need
    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:<port>``: for HfApi(endpoint=...), HF_ENDPOINT or --hub-endpoint."""
        if self._endpoint is None:
            raise RuntimeError("localhub is not running")
        return self._endpoint

    @property
    def token(self) -> str:
        if self._store is None:
            raise RuntimeError("localhub is not running")
        return self._store.token

    @property
    def ca_bundle(self) -> Path:
        """The system CA bundle plus the CA of the https Space domains."""
        return self.state_dir / "tls" / "ca-bundle.pem"

    def client_env(self) -> dict[str, str]:
        """Environment variables a client process needs to use this Hub like huggingface.co."""
        return {
            "HF_ENDPOINT": self.endpoint,
            "HF_TOKEN": self.token,
            "HF_HOME": str(self.state_dir / "client-hf-home"),
            "SSL_CERT_FILE": str(self.ca_bundle),
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "HF_HUB_DISABLE_XET": "1",
            "HF_HUB_DISABLE_PROGRESS_BARS": "1",
            "HF_HUB_DISABLE_UPDATE_CHECK": "1",  # the hf CLI would ask PyPI for a newer version
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }

    @property
    def in_flight(self) -> InFlight:
        """The bounds on Spaces in flight, and the most there were at once (``peak``; starting:
        ``peak_starting``)."""
        if self._runtimes is None:
            raise RuntimeError("localhub has not started")
        return self._runtimes.in_flight

    def counters(self) -> Counters:
        return self.log.counters()

    def requests(self) -> list[RequestRecord]:
        return self.log.snapshot()

    def reset_counters(self) -> None:
        self.log.clear()

    @contextmanager
    def faults(self, *faults: Fault) -> Iterator[None]:
        """Inject ``faults`` instead of the scenario's while inside, counted afresh: a fault for
        a Space that is already running, without a new Hub or a new start. On the way out the
        scenario's faults come back with the counts they had."""
        injector = self._injector
        assert injector is not None, "the Hub is not running"
        before, seen = injector.swap(faults)
        try:
            yield
        finally:
            injector.swap(before, seen)

    # the server thread
    async def _serve(self) -> None:
        try:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            store = HubStore(self.state_dir, user=self._user, token=self._token)
            injector = self._injector = FaultInjector(self.scenario.faults)
            runtimes = SpaceRuntimes(
                store,
                workdir=self.state_dir / "runtime",
                scenario=self.scenario,
                tls=make_tls_files(self.state_dir / "tls"),
                log=self.log,
                injector=injector,
                builder=self._builder,
                spaces=self._spaces,
            )
            self._runtimes = runtimes
            served = ServedApp(self._app(store, runtimes, injector), port=self._port)
            await served.start()
            for repo in store.repos("spaces"):
                await runtimes.adopt(repo)
        except BaseException as exc:
            self._failure = exc
            self._ready.set()
            return
        self._store = store
        self._endpoint = f"http://127.0.0.1:{served.port}"
        self._ready.set()
        await self._stop.wait()
        await runtimes.close()
        await served.stop()

    def _app(
        self, store: HubStore, runtimes: SpaceRuntimes, injector: FaultInjector
    ) -> TrafficMiddleware:
        routes: list[BaseRoute] = [
            *repos_api.routes(),
            *spaces_api.routes(),
            *collections_api.routes(),
            Route(f"{CONTROL_PREFIX}counters", self._counters_route),
        ]
        app = Starlette(routes=routes, exception_handlers={HubHTTPError: _error_response})
        app.state.hub = HubContext(store, runtimes, self.log, self._page_size)
        return TrafficMiddleware(
            app,
            log=self.log,
            injector=injector,
            endpoint_of=lambda scope: _route_name(routes, scope),
            builder=self._builder.name,
        )

    async def _counters_route(self, request: Request) -> JSONResponse:
        return JSONResponse(self.counters().as_dict())


async def _error_response(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HubHTTPError)
    return exc.response()


def _route_name(routes: list[BaseRoute], scope: Scope) -> str | None:
    """The endpoint name of the route that will answer (also for a wrong method), if any."""
    partial = None
    for route in routes:
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return getattr(route, "name", None)
        if match is Match.PARTIAL and partial is None:
            partial = getattr(route, "name", None)
    return partial
