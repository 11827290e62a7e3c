"""Whether a Hub endpoint is openenv-release's embedded Hub, whose verdicts come from a stand-in
build (``releaselib.localhub``) and are no evidence for writing a real checkout.

The embedded Hub serves only on this machine and marks every answer with its builder
(:data:`MARKER_HEADER`); no real Hub sends that header. Only a loopback endpoint is asked, so
pinning against huggingface.co needs no extra request.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from huggingface_hub import get_session

from releaselib.hub.client import Hub
from releaselib.hub.failures import HUB_FAILURES, hub_error

MARKER_HEADER = "x-openenv-localhub-builder"


def is_loopback(endpoint: str) -> bool:
    host = urlsplit(endpoint).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def embedded_builder(hub: Hub) -> str | None:
    """The embedded Hub's builder when ``hub`` is one, else None."""
    endpoint = hub.api.endpoint
    if not is_loopback(endpoint):
        return None
    try:
        answer = get_session().get(f"{endpoint}/api/whoami-v2", headers=hub.auth_header())
    except HUB_FAILURES as exc:
        raise hub_error(f"asking {endpoint} what Hub it is", exc) from None
    return answer.headers.get(MARKER_HEADER)
