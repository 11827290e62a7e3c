"""Name what went wrong on our side of the wire when a request got no HTTP answer, and its remedy.

A request that never got an answer says nothing about the server: the cause is our trust store,
our resolver, our proxy, our network or our patience. :func:`wire_problem` reads an httpx
``TransportError`` (and the exceptions it was raised from) and says which, with what to do.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from dataclasses import dataclass

import httpx

TLS_REMEDY = (
    "set SSL_CERT_FILE to a CA bundle that trusts the Space's domain (for the embedded Hub, the "
    "ca_bundle that localhub.serve prints), then verify again"
)


@dataclass(frozen=True)
class WireProblem:
    """What failed (``what``), the exception's words (``detail``) and what to do (``remedy``)."""

    what: str
    detail: str
    remedy: str


def wire_problem(exc: httpx.TransportError, *, timeout: float | None = None) -> WireProblem:
    """The problem behind ``exc``; ``timeout`` is the per-request limit we set, if any."""
    detail = str(exc) or type(exc).__name__
    causes = list(_chain(exc))
    if isinstance(exc, httpx.TimeoutException):
        limit = f" of {timeout:g} s" if timeout else ""
        return WireProblem(
            f"timed out at our limit{limit} per request",
            type(exc).__name__,
            "rerun verify with a longer --timeout (or give the env's plugin a probe_timeout)",
        )
    if any(isinstance(c, ssl.SSLCertVerificationError) for c in causes) or (
        "CERTIFICATE_VERIFY_FAILED" in detail
    ):
        return WireProblem(
            "our TLS client does not trust the domain's certificate", detail, TLS_REMEDY
        )
    if any(isinstance(c, ssl.SSLError) for c in causes):
        return WireProblem("the TLS handshake failed on our side", detail, TLS_REMEDY)
    if isinstance(exc, httpx.ProxyError):
        return WireProblem(
            "our proxy refused the request",
            detail,
            "check HTTPS_PROXY/HTTP_PROXY, or add the domain to NO_PROXY",
        )
    if any(isinstance(c, socket.gaierror) for c in causes):
        return WireProblem(
            "our resolver could not resolve the domain",
            detail,
            "check DNS from this machine (and NO_PROXY); the Space was not reached",
        )
    if any(isinstance(c, ConnectionRefusedError) for c in causes):
        return WireProblem(
            "the connection was refused before any HTTP answer",
            detail,
            "check that this machine can reach the domain (firewall, proxy), then verify again",
        )
    if isinstance(exc, httpx.UnsupportedProtocol):
        return WireProblem("we built an unusable URL", detail, "report this as a bug in verify")
    return WireProblem(
        "the connection broke before any HTTP answer",
        detail,
        "verify again; if it repeats, check this machine's network and proxy",
    )


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and every exception it was raised from or during."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__
