"""Serve an ASGI app with uvicorn on a free 127.0.0.1 port inside an already running event loop."""

from __future__ import annotations

import asyncio
import socket

import uvicorn
from starlette.types import ASGIApp

from releaselib.localhub.tls import TlsFiles

_START_TIMEOUT = 10.0


class ServedApp:
    """One uvicorn server; ``start()`` returns once it accepts connections."""

    def __init__(self, app: ASGIApp, *, tls: TlsFiles | None = None, port: int = 0) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", port))
        self.port: int = self._socket.getsockname()[1]
        config = uvicorn.Config(
            app,
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="off",
            http="h11",
            proxy_headers=False,
            timeout_graceful_shutdown=2,
            ssl_certfile=str(tls.cert_chain) if tls else None,
            ssl_keyfile=str(tls.key) if tls else None,
        )
        self._server = uvicorn.Server(config)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._server.serve(sockets=[self._socket]))
        deadline = asyncio.get_running_loop().time() + _START_TIMEOUT
        while not self._server.started:
            if self._task.done() or asyncio.get_running_loop().time() > deadline:
                self._socket.close()
                raise RuntimeError(f"could not serve on 127.0.0.1:{self.port}")
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        self._server.should_exit = True
        if self._task is not None:
            await self._task
        self._socket.close()
