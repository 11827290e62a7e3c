"""Retries for Hub requests: 429 honours Retry-After; 5xx and dropped connections back off
exponentially (capped, with jitter), and one still failing after them is
:class:`HubUnavailable`; a Hub that cannot be reached at all (connection refused, a
name that does not resolve, no connection within ``connect_timeout``) gets two quick tries, then
:class:`HubUnreachable`, which huggingface_hub's own backoff (``http_backoff``, around listings
and uploads) does not retry again: every task gives up on a Hub that is down the same way, in
seconds. Installed as huggingface_hub's HTTP transport, so every HfApi call gets it. Commit
POSTs are never retried here: a lost answer to a commit that the Hub applied would make a
duplicate, so :mod:`releaselib.hub.client` re-reads the Space before trying again.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx2

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry."""

    attempts: int = 6
    base: float = 0.5
    cap: float = 20.0
    #: tries, and the pause between them, when no connection can be made at all
    connect_attempts: int = 2
    connect_pause: float = 0.2
    #: seconds to connect, and to wait for the next byte of an answer; a Hub that stays silent
    #: that long gets ``connect_attempts`` tries in all, like one that cannot be reached
    connect_timeout: float = 4.0
    read_timeout: float = 60.0
    sleep: Callable[[float], None] = time.sleep

    def delay(self, attempt: int, retry_after: str | None = None) -> float:
        """Seconds to wait before try ``attempt + 1``: Retry-After when given, else backoff."""
        if retry_after is not None:
            try:
                return min(self.cap, max(0.0, float(retry_after)))
            except ValueError:
                pass
        backoff: float = min(self.cap, self.base * 2.0**attempt)
        return backoff * random.uniform(0.5, 1.0)


class HubUnreachable(httpx2.TransportError):
    """No connection, or no answer, after the quick tries. Not a NetworkError or a
    TimeoutException, so huggingface_hub's ``http_backoff`` passes it on instead of retrying for
    half a minute more (printing a line per try); ``cause`` is the last try's error."""

    def __init__(self, cause: httpx2.TransportError, request: httpx2.Request) -> None:
        super().__init__(str(cause), request=request)
        self.cause = cause


class HubUnavailable(httpx2.TransportError):
    """Still 429 or 5xx after every try: raised instead of returning that answer, so
    huggingface_hub's ``http_backoff`` does not start its own round of tries (36 requests and
    94 s for a Hub answering 503 to everything). ``response`` is the last answer."""

    def __init__(self, response: httpx2.Response, request: httpx2.Request, tries: int) -> None:
        super().__init__(f"{response.status_code} after {tries} tries", request=request)
        self.response = response
        self.tries = tries


def is_commit(request: httpx2.Request) -> bool:
    return request.method == "POST" and "/commit/" in request.url.path


class RetryingTransport(httpx2.BaseTransport):
    """An httpx2 transport that retries what is safe to retry."""

    def __init__(self, policy: RetryPolicy, inner: httpx2.BaseTransport | None = None) -> None:
        self.policy = policy
        self.inner = inner or httpx2.HTTPTransport()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        self.bound(request)
        if is_commit(request):
            return self.inner.handle_request(request)
        request.read()  # so the body can be sent again
        unreachable = 0
        for attempt in range(self.policy.attempts - 1):
            try:
                response = self.inner.handle_request(request)
            except (httpx2.ConnectError, httpx2.TimeoutException) as exc:  # refused, silent...
                unreachable += 1
                if unreachable >= self.policy.connect_attempts:
                    raise HubUnreachable(exc, request) from exc
                self.policy.sleep(self.policy.connect_pause)
                continue
            except httpx2.TransportError:
                self.policy.sleep(self.policy.delay(attempt))
                continue
            if response.status_code not in RETRY_STATUSES:
                return response
            retry_after = response.headers.get("Retry-After")
            response.close()
            self.policy.sleep(self.policy.delay(attempt, retry_after))
        try:
            response = self.inner.handle_request(request)
        except (httpx2.ConnectError, httpx2.TimeoutException) as exc:
            raise HubUnreachable(exc, request) from exc
        if response.status_code in RETRY_STATUSES:
            response.read()
            raise HubUnavailable(response, request, self.policy.attempts)
        return response

    def bound(self, request: httpx2.Request) -> None:
        """Fill the timeouts a caller left unset: huggingface_hub passes ``timeout=None``,
        which would let a silent Hub hang a request forever."""
        given = request.extensions.get("timeout") or {}
        read, connect = self.policy.read_timeout, self.policy.connect_timeout
        defaults = {"connect": connect, "read": read, "write": read, "pool": read}
        request.extensions["timeout"] = {
            **defaults,
            **{key: value for key, value in given.items() if value is not None},
        }

    def close(self) -> None:
        self.inner.close()
