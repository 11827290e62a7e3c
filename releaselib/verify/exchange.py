"""One request of a probe as it is kept for the ledger and the briefing: what was sent, and the
first :data:`BODY_BYTES` bytes of the answer."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

#: How much of an answer is kept as evidence (bytes of UTF-8, on one line).
BODY_BYTES = 500


@dataclass(frozen=True)
class Exchange:
    """One request of a probe: ``status`` is None when no answer came. Over ``/ws`` the method
    is ``WS``, the path ``/ws`` (the handshake) or the message type sent, and an answered
    message has the connection's status, 101. ``sent`` is the body sent, as JSON ("" for none)."""

    method: str
    path: str
    status: int | None
    body: str
    seconds: float
    sent: str = ""

    def __str__(self) -> str:
        status = self.status if self.status is not None else "---"
        sent = f"  sent {self.sent}" if self.sent else ""
        return f"{self.method:4} {self.path:8} {status} {self.seconds:6.2f}s  {self.body}{sent}"

    def as_json(self) -> dict[str, Any]:
        return {
            "request": f"{self.method} {self.path}",
            "sent": self.sent,
            "status": self.status,
            "body": self.body,
            "seconds": round(self.seconds, 3),
        }


def sent_text(body: Any) -> str:
    """A request body as the evidence keeps it: compact JSON, cut like an answer."""
    return "" if body is None else trim(json.dumps(body, separators=(",", ":")))


def trim(text: str, limit: int = BODY_BYTES) -> str:
    """``text`` on one line, cut to ``limit`` bytes of UTF-8 (a cut one ends with "…")."""
    flat = " ".join(text.split())
    data = flat.encode()
    if len(data) <= limit:
        return flat
    return data[: limit - 3].decode(errors="ignore") + "…"
