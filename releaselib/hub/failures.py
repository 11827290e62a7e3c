"""Hub failures as one-line errors: what a huggingface_hub call raises (an HTTP error, our
transport giving up, nonsense in an answer) becomes a ``HubError`` naming the Space or action,
the endpoint and what to do."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import httpx2
from huggingface_hub.errors import HfHubHTTPError

from releaselib.errors import AuthError, HubError, UnreachableError
from releaselib.hub.retry import HubUnavailable, HubUnreachable

#: What a huggingface_hub call raises when the Hub refuses, fails or answers nonsense.
HUB_FAILURES = (HfHubHTTPError, httpx2.TransportError, ValueError)


def status_of(exc: Exception) -> int | None:
    response = getattr(exc, "response", None)
    return response.status_code if response is not None else None


def endpoint_of(exc: httpx2.TransportError) -> str | None:
    """``scheme://host[:port]`` of the request that failed, when the error knows it."""
    try:
        url = exc.request.url
    except RuntimeError:  # raised without a request
        return None
    return f"{url.scheme}://{url.netloc.decode()}"


def hub_error(what: str, exc: Exception) -> HubError:
    """A one-line error for a failed Hub call about ``what`` (a Space id or an action)."""
    if isinstance(exc, HfHubHTTPError):
        status = status_of(exc)
        detail = (exc.server_message or str(exc).splitlines()[0]).strip()
        if status == 401:
            return AuthError(
                f"{what}: the Hub rejected the token (401)", remedy="set a valid HF_TOKEN"
            )
        if status == 402:
            return HubError(
                f"{what}: 402 Payment Required: the namespace has no entitlement for a Docker "
                "Space or the requested hardware",
                remedy="use a namespace with Spaces billing, or request other hardware",
            )
        if status == 403:
            return HubError(
                f"{what}: 403 Forbidden ({detail})", remedy="check the token's write access"
            )
        if status == 429:
            return HubError(f"{what}: still rate-limited (429) after retries", remedy="rerun later")
        return HubError(
            f"{what}: Hub answered {status}: {detail}", remedy="rerun; the step resumes"
        )
    if isinstance(exc, HubUnavailable):
        status, at = exc.response.status_code, endpoint_of(exc)
        if status == 429:
            return HubError(f"{what}: still rate-limited (429) after retries", remedy="rerun later")
        return HubError(
            f"{what}: the Hub at {at} answered {status} {exc.tries} times",
            remedy="rerun later; the step resumes",
        )
    if isinstance(exc, httpx2.TransportError):
        at = f" at {endpoint}" if (endpoint := endpoint_of(exc)) else ""
        cause = exc.cause if isinstance(exc, HubUnreachable) else exc
        silent = (httpx2.ConnectError, httpx2.TimeoutException)
        kind = UnreachableError if isinstance(cause, silent) else HubError
        return kind(
            f"{what}: cannot reach the Hub{at} ({type(cause).__name__})",
            remedy="check --hub-endpoint or HF_ENDPOINT, and the network",
        )
    if isinstance(exc, json.JSONDecodeError):
        return HubError(
            f"{what}: the Hub answered something that is not JSON (an HTML page?)",
            remedy="check that --hub-endpoint or HF_ENDPOINT is the Hub's URL, and any proxy",
        )
    if isinstance(
        exc, ValueError
    ):  # huggingface_hub raises it for refused README metadata, bad ids
        return HubError(
            f"{what}: {str(exc).splitlines()[0]}", remedy="fix the staged tree and rerun"
        )
    raise exc


@contextmanager
def hub_call(what: str) -> Iterator[None]:
    """Turn huggingface_hub's exceptions into HubError naming ``what``."""
    try:
        yield
    except HUB_FAILURES as exc:
        raise hub_error(what, exc) from None
