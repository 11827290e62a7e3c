"""The probe's HTTP side: an httpx client that keeps every exchange (what was sent and the start
of each answer) and turns what is not the env's answer into an INCONCLUSIVE :class:`Stop`.

Our side of the wire (TLS, DNS, a proxy, a refused or reset connection, our own time-out) and
whatever stands in front of the env (a 401/403 refusing our token, a 429 rate limit, a redirect,
never followed) is never evidence against the env (see :mod:`releaselib.hub.wire`). A 429 whose
Retry-After is short is retried once. A request sent with ``tries`` (the first ``/health``: a
server whose port is open while its workers still start) is asked again after our own time-out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx

from releaselib.hub.wire import wire_problem
from releaselib.verify.exchange import Exchange, sent_text, trim
from releaselib.verify.outcome import Outcome, Stop
from releaselib.verify.ws_episode import Socket

#: The longest Retry-After (seconds) a rate-limited request waits for before its one retry.
RETRY_AFTER_MAX = 5.0


@dataclass(frozen=True)
class Answer:
    status: int
    data: Any  # the parsed JSON body, or None when it is not JSON


class Session:
    """An httpx client that records every exchange and turns transport failures into Stop."""

    def __init__(self, client: httpx.Client, socket: Socket | None) -> None:
        self.client = client
        self.socket = socket  # where the /ws episode goes; None: not tried
        self.transcript: list[Exchange] = []

    def send(self, method: str, path: str, body: Any = None, *, tries: int = 1) -> Answer:
        """The answer to one request; Stop for no answer or one that is not the env's. ``tries``:
        how many times a request that meets our own time-out is sent before it is a Stop."""
        response = self._request(method, path, body, tries)
        if response.status_code == 429 and (pause := _retry_after(response)) is not None:
            time.sleep(pause)
            response = self._request(method, path, body)
        _refuse_front_door(f"{method} {path}", response)
        try:
            data = response.json()
        except ValueError:
            data = None
        return Answer(response.status_code, data)

    def _request(
        self, method: str, path: str, body: Any, tries: int = 1, asked: int = 1
    ) -> httpx.Response:
        start, sent = time.monotonic(), sent_text(body)
        try:
            response = self.client.request(method, path, json=body)
        except httpx.TransportError as exc:
            problem = wire_problem(exc, timeout=self.client.timeout.read)
            detail = f"{type(exc).__name__}: {problem.detail}"
            self._record(method, path, None, detail, start, sent)
            if isinstance(exc, httpx.TimeoutException) and asked < tries:
                return self._request(method, path, body, tries, asked + 1)
            what = problem.what
            if asked > 1:  # the earlier asks met our time-out
                timed_out = isinstance(exc, httpx.TimeoutException)
                what += f", {asked} times" if timed_out else f" after {asked - 1} time-out(s)"
            reason = f"{method} {path}: {what} ({problem.detail}); {problem.remedy}"
            raise Stop(Outcome.INCONCLUSIVE, reason, our_error=True) from exc
        self._record(method, path, response.status_code, response.text, start, sent)
        return response

    def _record(
        self, method: str, path: str, status: int | None, body: str, start: float, sent: str
    ) -> None:
        seconds = time.monotonic() - start
        self.transcript.append(Exchange(method, path, status, trim(body), seconds, sent))


def _retry_after(response: httpx.Response) -> float | None:
    """The seconds a 429's Retry-After asks for, when short enough to wait once; else None."""
    try:
        seconds = float(response.headers.get("Retry-After", ""))
    except ValueError:
        return None
    return max(seconds, 0.0) if seconds <= RETRY_AFTER_MAX else None


def _refuse_front_door(what: str, response: httpx.Response) -> None:
    """Stop (INCONCLUSIVE, ours) for an answer that is not the env's: a 401/403 for our token,
    a 429 rate limit, a redirect (a login or front door; never followed)."""
    status = response.status_code
    if status in (401, 403):
        reason = (
            f"{what} answered {status}: our token was refused or may not read the Space; "
            "check that HF_TOKEN can read the Space, then verify again"
        )
    elif status == 429:
        wait = response.headers.get("Retry-After")
        after = f" (Retry-After {wait} s)" if wait else ""
        reason = f"{what} answered 429: rate limited{after}; rerun later"
    elif 300 <= status < 400:
        to = response.headers.get("Location", "elsewhere")
        reason = (
            f"{what} answered {status}, a redirect to {to} (not followed): a login or front-door "
            "redirect, not the env; check HF_TOKEN can read the Space, then verify again"
        )
    else:
        return
    raise Stop(Outcome.INCONCLUSIVE, reason, our_error=True)
