"""Usable data: what an env's answer must hold for a PASS, defined here and only here.

An answer to ``reset`` or ``step`` is usable when it is an observation that carries no error:

- no error field in the observation (``error``, ``error_message``, ``exception``, ``traceback``;
  openenv-core's ``CallToolObservation.error``), none in its ``metadata`` or the answer's, and no
  tool result marked ``is_error``;
- no exit code 126/127 beside its output (a command the env needs is not there);
- on the first reset, ``done: true`` with a field that reads as an error.

An error is the env's own bug (FAIL) unless it reports a need the env's plugin declares (a
secret, hardware, an outside service or download): then the verdict is INCONCLUSIVE, naming it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

#: Observation and metadata fields that hold an error when they are set.
ERROR_FIELDS = ("error", "errors", "error_message", "exception", "traceback")
#: Exit codes of a command that could not be found or run (the shell's 127 and 126).
MISSING_COMMAND = frozenset({126, 127})
#: Words that make a field of a finished first reset read as an error.
_ERRORISH = re.compile(
    r"\b(error|exception|traceback|failed|missing|required|not set|not found|not ready|"
    r"unavailable|cannot|could not)\b",
    re.IGNORECASE,
)
#: What each kind of need sounds like when an env reports it missing.
_SECRET_WORDS = re.compile(
    r"api[ _-]?key|token|credential|secret|unauthori[sz]ed|not set|missing key", re.IGNORECASE
)
_HARDWARE_WORDS = re.compile(r"\b(gpu|cuda|nvidia|nvcc|device)\b", re.IGNORECASE)
_SERVICE_WORDS = re.compile(
    r"connect|resolve|not ready|unreachable|refused|timed? ?out|download|not found in path|"
    r"no such host|name or service|command not found|not installed",
    re.IGNORECASE,
)
_STOPWORDS = frozenset({"from", "with", "server", "time", "the", "build", "run", "and", "for"})


def error_in(answer: Any, *, first_reset: bool = False) -> str | None:
    """The error an answer carries (one line), or None when it is usable data. ``answer`` is the
    body of a ``reset``/``step`` answer: ``{"observation": …, "done": …, "metadata": …}``."""
    if not isinstance(answer, Mapping):
        return None
    observation = answer.get("observation")
    observation = observation if isinstance(observation, Mapping) else {}
    for where in (observation, observation.get("metadata"), answer.get("metadata")):
        if isinstance(where, Mapping) and (found := _error_field(where)) is not None:
            return found
    if (found := _tool_error(observation.get("result"))) is not None:
        return found
    code = _exit_code(observation)
    if code in MISSING_COMMAND:
        output = observation.get("stderr") or observation.get("output") or observation.get("stdout")
        return f"exit code {code}: {_text(output) or 'a command it needs was not found'}"
    if first_reset and answer.get("done") is True:
        said = next((t for t in _strings(observation) if _ERRORISH.search(t)), None)
        if said is not None:
            return f"done on the first reset: {said}"
    return None


def needs_named(error: str, needs: Sequence[str]) -> tuple[str, ...]:
    """The declared ``needs`` (phrases such as ``secret E2B_API_KEY``) that ``error`` reports
    missing; empty when it reports none of them (then the error is the env's own bug)."""
    return tuple(need for need in needs if _reports(error, need))


def _reports(error: str, need: str) -> bool:
    kind, _, what = need.partition(" ")
    if kind == "secret":
        return what.lower() in error.lower() or bool(_SECRET_WORDS.search(error))
    if kind == "hardware":
        return what.lower() in error.lower() or bool(_HARDWARE_WORDS.search(error))
    found = re.findall(r"[A-Za-z][A-Za-z0-9_.-]{3,}", need)
    words = {w for w in found if w.lower() not in _STOPWORDS}
    named = any(re.search(rf"\b{re.escape(w)}\b", error, re.IGNORECASE) for w in words)
    return named or bool(_SERVICE_WORDS.search(error))


def _error_field(fields: Mapping[str, Any]) -> str | None:
    for name in ERROR_FIELDS:
        value = fields.get(name)
        if value not in (None, "", [], {}, False):
            return f"{name}: {_text(value)}"
    return None


def _tool_error(result: Any) -> str | None:
    """The text of an MCP tool result marked as an error (``is_error``/``isError``)."""
    if not isinstance(result, Mapping) or not (result.get("is_error") or result.get("isError")):
        return None
    content = result.get("content")
    texts = [str(c["text"]) for c in content or () if isinstance(c, Mapping) and c.get("text")]
    return f"tool error: {_text(' '.join(texts) or result)}"


def _exit_code(observation: Mapping[str, Any]) -> int | None:
    for name in ("exit_code", "return_code", "returncode"):
        value = observation.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _strings(value: Any, depth: int = 0) -> list[str]:
    """The strings in ``value``, two levels deep."""
    if isinstance(value, str):
        return [value]
    if depth > 2:
        return []
    if isinstance(value, Mapping):
        value = list(value.values())
    items = value if isinstance(value, list) else ()
    return [s for item in items for s in _strings(item, depth + 1)]


def _text(value: Any) -> str:
    """``value`` as one short line: a mapping's ``message`` when it has one."""
    if isinstance(value, Mapping) and value.get("message"):
        kind = value.get("error_type") or value.get("code")
        value = f"{kind}: {value['message']}" if kind else value["message"]
    flat = " ".join(str(value).split())
    return flat if len(flat) <= 200 else flat[:199] + "…"
