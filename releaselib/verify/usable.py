"""Usable data: what an env's answer must hold for a PASS, defined here and only here.

An answer to ``reset`` or ``step`` is usable when its ``observation`` is an object (not a string,
a list or null) and nothing anywhere in the answer reports an error:

- no error-like key at any depth with a non-empty value (``error``, ``errors``, ``errorMessage``,
  ``exception``, ``traceback``, ``is_error``…, in any case and spelling of separators);
- no ``status`` of ``error``/``failed``, no ``success``/``ok`` false beside a message, no
  ``status_code`` of 500 or more in the answer or its observation (deeper, it is data);
- no string that is a tool's failure (``Error executing tool …``) or says there is no episode
  (``call reset() before step()``, ``no active episode``, ``environment not initialised``);
- an error-like key holding a number is a metric, not an error;
- no exit code 126/127 beside its output (a command the env needs is not there);
- on the first reset, not ``done: true`` (in the answer or its observation, ``"true"`` too).

An error is the env's own bug (FAIL) unless it names a need the env's plugin declares (a secret's
variable, its provider's key reported missing, GPU/CUDA/NVIDIA, a service's or download's name):
then the verdict is INCONCLUSIVE, naming it. An error that rejects the arguments the probe built
for a tool is the probe's (see :func:`rejects_arguments`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeGuard

#: Keys (lower case, separators dropped) that hold an error when their value is set.
ERROR_KEYS = frozenset(
    {
        "error",
        "errors",
        "errormessage",
        "errmsg",
        "errordetail",
        "errordetails",
        "exception",
        "traceback",
        "stacktrace",
        "iserror",
        "failurereason",
    }
)
#: How deep an answer is searched for an error.
DEPTH = 32
#: Exit codes of a command that could not be found or run (the shell's 127 and 126).
MISSING_COMMAND = frozenset({126, 127})
#: ``status`` values that report a failure.
_FAILED_STATUS = frozenset({"error", "failed", "failure", "fail", "exception"})
#: What FastMCP answers for a tool that raised.
#: Text that reports an error in its first word: "Error executing tool …" (MCP), "Error: …",
#: "[ERROR] …" (a tool's own text, e.g. "Error: environment not reset. Call reset() first.").
_REPORTED_ERROR = re.compile(r"\s*(error executing tool|error:|\[error\])", re.IGNORECASE)
#: Text that says there is no episode: "call reset() before step()", "reset the env first",
#: "no active episode", "environment has not been reset", "environment not initialised".
_NOT_STARTED = re.compile(
    r"(?:call|must|need to|please)\s+reset\b|\breset\(\)\s+(?:first|before)"
    r"|\breset (?:the )?env(?:ironment)? first|\bno active episode|\bhas not been reset"
    r"|\b(?:env|environment) (?:is )?not (?:been )?(?:initiali[sz]ed|reset)",
    re.IGNORECASE,
)
#: Words that say a secret is missing or wrong.
_MISSING = re.compile(
    r"missing|not set|unset|not found|not provided|no \S+ provided|required|invalid|"
    r"unauthori[sz]ed|not configured",
    re.IGNORECASE,
)
_KEY_WORDS = re.compile(r"api[ _-]?key|\bkey\b|token|secret|credential", re.IGNORECASE)
_HARDWARE_WORDS = re.compile(r"\b(gpu|cuda|nvidia|nvcc)\b", re.IGNORECASE)
_STOPWORDS = frozenset(
    {
        "from",
        "with",
        "server",
        "time",
        "the",
        "build",
        "run",
        "and",
        "for",
        "that",
        "this",
        "env",
        "needs",
        "need",
        "service",
        "download",
        "reachable",
        "running",
    }
)
#: An answer that rejects the arguments sent: pydantic's words, or MCP's invalid params.
_INVALID_PARAMS = re.compile(r"-32602|invalid params|input validation error", re.IGNORECASE)
_VALIDATION = re.compile(r"validation error|input should be", re.IGNORECASE)


#: How long an error is when said in a verdict.
LINE = 200

def is_observation(answer: Any) -> bool:
    """Whether ``answer`` holds an ``observation`` object (a string, list or null is none)."""
    return isinstance(answer, Mapping) and isinstance(answer.get("observation"), Mapping)


def error_in(answer: Any, *, first_reset: bool = False, whole: bool = False) -> str | None:
    """The error an answer carries (one line, or ``whole``: every word of it, for matching
    needs), or None when it is usable data. ``answer`` is the body of a ``reset``/``step``
    answer: ``{"observation": …, "done": …, "metadata": …}``."""
    if not is_observation(answer):
        return "no observation"
    for found in _errors(answer, limit=None if whole else LINE):
        return found
    observation = answer["observation"]
    for fields in (answer, observation):
        status = next((fields[k] for k in ("status_code", "statusCode") if k in fields), None)
        if _number(status) and status >= 500:  # the answer of a crash, sent as a 200
            return f"status code {status}: {_text(_message(fields))}"
    code = _exit_code(observation)
    if code in MISSING_COMMAND:
        output = observation.get("stderr") or observation.get("output") or observation.get("stdout")
        return f"exit code {code}: {_text(output) or 'a command it needs was not found'}"
    if first_reset and (_true(answer.get("done")) or _true(observation.get("done"))):
        said = next((t for t in _strings(observation) if t.strip()), None)
        return f"done on the first reset: {_text(said) if said else 'an empty observation'}"
    return None


#: What no action can excuse: a traceback, a programming error's exception, no episode, a
#: crash sent as a 200.
_CRASH = re.compile(
    r"Traceback \(most recent call last\)|with not started:|with status code 5\d\d"
    r"|\b(?:Key|Attribute|Type|Name|ZeroDivision|Index|Runtime|Import|ModuleNotFound"
    r"|NotImplemented|Recursion|Lookup|OS|FileNotFound|Unbound)Error\b"
)


def refuses_action(said: str) -> bool:
    """Whether the error ``said`` in answer to an action can be the env refusing that action
    (an illegal move), rather than a crash no action excuses."""
    return _CRASH.search(said) is None


def needs_named(error: str, needs: Sequence[str]) -> tuple[str, ...]:
    """The declared ``needs`` (phrases such as ``secret E2B_API_KEY``) that ``error`` names;
    empty when it names none of them (then the error is the env's own bug)."""
    return tuple(need for need in needs if _names(error, need))


def rejects_arguments(error: str, arguments: Mapping[str, Any]) -> bool:
    """Whether ``error`` rejects the tool ``arguments`` we built: MCP's invalid params, or a
    validation error naming one of them."""
    if _INVALID_PARAMS.search(error):
        return True
    return bool(_VALIDATION.search(error)) and any(_field(name, error) for name in arguments)


def _names(error: str, need: str) -> bool:
    kind, _, what = need.partition(" ")
    if kind == "secret":
        provider = re.split(r"_(?:API_)?(?:KEY|TOKEN|SECRET)", what, flags=re.IGNORECASE)[0]
        reported = _word(provider.replace("_", " "), error) or _word(provider, error)
        return _word(what, error) or (
            reported and bool(_KEY_WORDS.search(error)) and bool(_MISSING.search(error))
        )
    if kind == "hardware":
        return _word(what, error) or bool(_HARDWARE_WORDS.search(error))
    return any(_word(name, error) for name in _service_names(need))


def _service_names(need: str) -> list[str]:
    """The names in a service or download phrase: ``Gitea`` and ``GITEA_URL`` in ``a Gitea
    server (GITEA_URL)``, words with a capital, a digit or ``._-/`` in them; in a phrase with
    none (``service redis``), its words but the common ones."""
    words = re.findall(r"[A-Za-z][A-Za-z0-9_./-]*[A-Za-z0-9]", need)
    words = [w for w in words if len(w) > 2 and w.lower() not in _STOPWORDS]
    return [w for w in words if re.search(r"[A-Z0-9_./-]", w)] or words


def _word(word: str, text: str) -> bool:
    return (
        bool(word)
        and re.search(rf"(?<![A-Za-z0-9]){re.escape(word)}(?![A-Za-z0-9])", text, re.IGNORECASE)
        is not None
    )


def _field(name: str, text: str) -> bool:
    """``name`` in ``text`` as a field name: ``query`` is not in ``query_index_path``."""
    pattern = rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])"
    return bool(name) and re.search(pattern, text, re.IGNORECASE) is not None


def _errors(value: Any, depth: int = 0, *, limit: int | None = None) -> Iterator[str]:
    """Every error ``value`` reports, at any depth, each cut to ``limit`` characters."""
    if depth > DEPTH:
        return
    if isinstance(value, str):
        if _REPORTED_ERROR.match(value):
            yield f"tool error: {_text(value, limit)}"
        elif _NOT_STARTED.search(value):
            yield f"not started: {_text(value, limit)}"
        return
    if isinstance(value, list):
        for item in value:
            yield from _errors(item, depth + 1, limit=limit)
        return
    if not isinstance(value, Mapping):
        return
    for key, item in value.items():
        named = re.sub(r"[^a-z]", "", str(key).lower()) in ERROR_KEYS
        if named and _set(item) and not _number(item):
            yield f"{key}: {_text(_message(value) if item is True else item, limit)}"
    status = value.get("status")
    if isinstance(status, str) and status.lower() in _FAILED_STATUS:
        yield f"status {status}: {_text(_message(value), limit)}"
    message = _message(value)
    if message and any(value.get(k) is False for k in ("success", "ok")):
        yield f"not successful: {_text(message, limit)}"
    for item in value.values():
        yield from _errors(item, depth + 1, limit=limit)


def _number(value: Any) -> TypeGuard[int | float]:
    """A number (an ``error`` that is a metric, such as a regression env's mean squared error)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _true(value: Any) -> bool:
    """``done`` said true: the boolean, or the string an env wrote it as."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def _set(value: Any) -> bool:
    return value not in (None, "", [], {}, False)


def _message(fields: Mapping[str, Any]) -> Any:
    """What ``fields`` says in words: its message, or the text of its content."""
    for name in ("message", "msg", "detail", "reason"):
        if isinstance(fields.get(name), str) and fields[name]:
            return fields[name]
    content = fields.get("content")
    texts = [str(c["text"]) for c in content or () if isinstance(c, Mapping) and c.get("text")]
    return " ".join(texts) or fields


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


def _text(value: Any, limit: int | None = LINE) -> str:
    """``value`` as one line of at most ``limit`` characters: a mapping's ``message`` when it
    has one."""
    if isinstance(value, Mapping) and value.get("message"):
        kind = value.get("error_type") or value.get("code")
        value = f"{kind}: {value['message']}" if kind else value["message"]
    flat = " ".join(str(value).split())
    return flat if limit is None or len(flat) <= limit else flat[: limit - 1] + "…"
