"""Dockerfile words: quotes and escapes removed, variables expanded, ARG/ENV pairs read and set."""

from __future__ import annotations

import re
from collections.abc import Mapping

from releaselib.dockerfile_syntax.parse import Instruction

# -- word processing (Docker's shell-lexer rules for ARG, ENV, FROM, WORKDIR, COPY) ------------

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def expand(word: str, scope: Mapping[str, str], escape: str = "\\") -> str:
    """Process one Dockerfile word: remove quotes and escapes, expand ``$VAR``, ``${VAR}``,
    ``${VAR:-x}``, ``${VAR-x}``, ``${VAR:+x}`` and ``${VAR+x}`` from ``scope``."""
    out: list[str] = []
    i = 0
    while i < len(word):
        char = word[i]
        if char == "'":
            end = _find(word, "'", i + 1)
            out.append(word[i + 1 : end])
            i = end + 1
        elif char == '"':
            i = _double_quoted(word, i + 1, scope, escape, out)
        elif char == escape and i + 1 < len(word):
            out.append(word[i + 1])
            i += 2
        elif char == "$":
            value, i = _variable(word, i, scope, escape)
            out.append(value)
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _double_quoted(word: str, i: int, scope: Mapping[str, str], escape: str, out: list[str]) -> int:
    """Append the expansion of a double-quoted part starting at ``i``; return the index after it."""
    while i < len(word) and word[i] != '"':
        if word[i] == escape and i + 1 < len(word):
            nxt = word[i + 1]
            out.append(nxt if nxt in ('"', "$", escape) else escape + nxt)
            i += 2
        elif word[i] == "$":
            value, i = _variable(word, i, scope, escape)
            out.append(value)
        else:
            out.append(word[i])
            i += 1
    return i + 1


def _variable(word: str, i: int, scope: Mapping[str, str], escape: str) -> tuple[str, int]:
    """Expand the variable reference at ``word[i] == '$'``; return (value, index after it)."""
    if word.startswith("${", i):
        end = _closing_brace(word, i + 2)
        body = word[i + 2 : end]
        match = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-+])(.*))?", body, re.DOTALL)
        if match is None:
            return word[i : end + 1], end + 1
        name, op, alt = match.groups()
        return _modified(scope.get(name), op, alt or "", scope, escape), end + 1
    match = _NAME.match(word, i + 1)
    if match is None:
        return "$", i + 1
    return scope.get(match.group(), ""), match.end()


def _modified(
    value: str | None, op: str | None, alt: str, scope: Mapping[str, str], escape: str
) -> str:
    if op is None:
        return value or ""
    missing = value is None or (op.startswith(":") and value == "")
    if op.endswith("-"):
        return expand(alt, scope, escape) if missing else value or ""
    return "" if missing else expand(alt, scope, escape)


def _closing_brace(word: str, i: int) -> int:
    depth = 1
    while i < len(word):
        if word[i] == "{":
            depth += 1
        elif word[i] == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(word)


def _find(word: str, char: str, start: int) -> int:
    at = word.find(char, start)
    return len(word) if at < 0 else at


def known(scope: Mapping[str, str | None]) -> dict[str, str]:
    return {k: v for k, v in scope.items() if v is not None}


def arg_defaults(
    instr: Instruction, scope: Mapping[str, str], escape: str
) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for item in instr.value:
        name, eq, default = item.partition("=")
        out[name] = expand(default, {**scope, **known(out)}, escape) if eq else None
    return out


def build_variables(instr: Instruction) -> list[tuple[str, str]]:
    """(name, value) of each ARG default or ENV value of ``instr`` written without a variable."""
    if instr.cmd == "ARG":
        pairs = [v.partition("=")[::2] for v in instr.value if "=" in v]
    elif instr.cmd == "ENV":
        pairs = key_values(instr)
    else:
        return []
    return [(name, expand(value, {})) for name, value in pairs if "$" not in value]


def key_values(instr: Instruction) -> list[tuple[str, str]]:
    """ENV (or LABEL) key/value pairs as written."""
    return list(zip(instr.value[::2], instr.value[1::2], strict=True))


# -- ENV text --------------------------------------------------------------------------------

# After the keyword: a continuation (with comment or blank lines after it), blanks, or a word.
_ENV_TOKEN = re.compile(
    r"""(?P<sep>\\\r?\n(?:[ \t]*(?:\#[^\n]*)?\r?\n)*|[ \t]+)
      | (?P<word>(?:'[^']*'|"(?:[^"\\]|\\.)*"|\\[^\r\n]|[^\s'"\\])+)""",
    re.VERBOSE | re.DOTALL,
)


def _env_words(instr: Instruction) -> list[re.Match[str]]:
    """The words after ``ENV`` in the instruction's text, with their positions."""
    start = len(instr.text) - len(instr.text.lstrip()) + len("ENV")
    return [m for m in _ENV_TOKEN.finditer(instr.text, start) if m.lastgroup == "word"]


def is_legacy_env(instr: Instruction) -> bool:
    words = _env_words(instr)
    return bool(words) and "=" not in words[0].group()


def set_env_word(instr: Instruction, key: str, value: str) -> str:
    """The instruction's text with the last ``key=...`` word replaced."""
    word = [w for w in _env_words(instr) if w.group().split("=", 1)[0] == key][-1]
    return instr.text[: word.start()] + env_word(key, value) + instr.text[word.end() :]


def env_word(key: str, value: str) -> str:
    if value and not re.search(r"[\s\"'\\]", value):
        return f"{key}={value}"
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'{key}="{escaped}"'
