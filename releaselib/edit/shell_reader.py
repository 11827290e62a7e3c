"""Reads a RUN instruction's shell text: simple commands, and the packages installers get."""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Iterator
from typing import TypeAlias

from releaselib.edit.requirement import EDITABLE, bare_openenv_url

# Shell text of one RUN instruction: a line continuation, a comment, a control operator (a bare
# newline ends a command, as in a heredoc), or a word made of quoted and unquoted pieces.
_SHELL_TOKEN = re.compile(
    r"""(?P<continuation>\\\n)
      | (?P<comment>(?<![^\s])\#[^\n]*)
      | (?P<op>&&|\|\||[;&|()<>\n])
      | (?P<word>(?:'[^']*'|"(?:[^"\\]|\\.)*"|\\[^\n]|[^\s'"\\;&|()<>])+)""",
    re.VERBOSE | re.DOTALL,
)


_PIP = re.compile(r"(?:.*/)?pip(?:\d+(?:\.\d+)*)?")


_OPTIONS_WITH_VALUE = frozenset({"-e", "--editable", "-r", "--requirement", "-c", "--constraint"})


_DOUBLE_QUOTE_UNSAFE = frozenset('"\\$`')


def simple_commands(command: str) -> Iterator[list[str]]:
    """The unquoted words of each simple command in a RUN's shell text."""
    segment: list[str] = []
    for token in _SHELL_TOKEN.finditer(command):
        if token.lastgroup == "word":
            segment.append(unquote(token.group()))
        elif token.lastgroup == "op":
            if segment:
                yield segment
            segment = []
    if segment:
        yield segment


#: Shells whose ``-c`` string is itself a command line (``sh -c "pip install ..."``).
SHELLS = frozenset({"sh", "bash", "dash", "ash", "zsh"})


def shell_string(words: list[str]) -> int | None:
    """The index of the command string in ``sh -c STRING`` (also ``bash -lc``, ``-ec``...)."""
    if not words or words[0].rsplit("/", 1)[-1] not in SHELLS:
        return None
    for index, word in enumerate(words[1:], start=1):
        if not word.startswith("-"):
            return None
        if "c" in word[1:] and not word.startswith("--"):
            return index + 1 if index + 1 < len(words) else None
    return None


def shell_commands(command: str) -> Iterator[list[str]]:
    """``simple_commands``, with the commands inside a ``sh -c`` string read too."""
    for words in simple_commands(command):
        yield words
        at = shell_string(command_words(words))
        if at is not None:
            yield from shell_commands(command_words(words)[at])


def command_words(words: list[str]) -> list[str]:
    """The words from the command word on: shell keywords, ``sudo``, ``VAR=value`` dropped."""
    while words and (
        words[0] in _PREFIX_WORDS or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0], re.DOTALL)
    ):
        words = words[1:]
    return words


_PREFIX_WORDS = frozenset(
    {"then", "else", "do", "if", "elif", "while", "until", "!", "{", "exec", "sudo"}
)


InstallArgument: TypeAlias = tuple[int, re.Match[str], str, str | None]


def install_arguments(command: str) -> Iterator[InstallArgument]:
    """(start, last word, requirement, prefix) for each package given to an installer in
    ``command``: an editable OpenEnv URL starts at its ``-e``, so the option goes with it;
    ``prefix`` is ``--with=`` and the like for an option written with its value, and None
    for the string of ``sh -c`` (the value is then a command line)."""
    segment: list[re.Match[str]] = []
    for token in _SHELL_TOKEN.finditer(command):
        if token.lastgroup == "word":
            segment.append(token)
        elif token.lastgroup == "op":
            yield from _packages(segment)
            segment = []
    yield from _packages(segment)


def _packages(words: list[re.Match[str]]) -> Iterator[InstallArgument]:
    """Package arguments of one simple command, if it is an installer (or ``sh -c``)."""
    values = [unquote(w.group()) for w in words]
    if values[:1] and values[0].upper() == "RUN":  # a RUN text: keyword and BuildKit flags
        while len(values) > 1 and values[1].startswith("--"):
            words, values = words[1:], values[1:]
        words, values = words[1:], values[1:]
    skipped = len(values) - len(command_words(values))
    words, values = words[skipped:], values[skipped:]
    at = shell_string(values)
    if at is not None:
        yield words[at].start(), words[at], values[at], None
        return
    yield from _tool_packages(words, values)
    if "install" not in values:
        return
    at = values.index("install")
    if not any(_PIP.fullmatch(v) for v in values[:at]):
        return
    option, previous = "", words[at]
    for word, value in zip(words[at + 1 :], values[at + 1 :], strict=True):
        editable = EDITABLE.fullmatch(value)
        if option in ("-e", "--editable") and bare_openenv_url(value) is not None:
            yield previous.start(), word, value, ""
        elif editable is not None and bare_openenv_url(editable.group("value")) is not None:
            yield word.start(), word, editable.group("value"), ""
        elif option not in _OPTIONS_WITH_VALUE and not value.startswith("-"):
            yield word.start(), word, value, ""
        option, previous = value, word


# uv and pipx: options whose value is a package, the subcommands that take packages as
# arguments, and options whose value is not a package.
_WITH_OPTIONS = frozenset({"--with", "--from", "--spec", "--with-editable"})


_TOOL_SUBCOMMANDS = {"uv": (("add",), ("tool", "install")), "pipx": (("install",), ("inject",))}


_TOOL_VALUE_OPTIONS = frozenset(
    {"--group", "--optional", "--extra", "--python", "-p", "--index", "--index-url",
     "--directory", "--project", "--package", "--suffix", "--pip-args"}
)  # fmt: skip


def _tool_packages(words: list[re.Match[str]], values: list[str]) -> Iterator[InstallArgument]:
    """Packages given to ``uv``, ``uvx`` or ``pipx``: values of ``--with``/``--from``/``--spec``
    anywhere, and the arguments of ``uv add``, ``uv tool install``, ``pipx install|inject``."""
    tool = values[0].rsplit("/", 1)[-1] if values else ""
    if tool not in ("uv", "uvx", "pipx"):
        return
    plain = [i for i, v in enumerate(values[1:], start=1) if not v.startswith("-")]
    takes = next(
        (
            len(s)
            for s in _TOOL_SUBCOMMANDS.get(tool, ())
            if tuple(values[i] for i in plain[: len(s)]) == s
        ),
        0,
    )
    first = (
        plain[takes - 1] + 1 + (1 if values[plain[takes - 1]] == "inject" else 0) if takes else 0
    )
    option = ""
    for index in range(1, len(values)):
        value = values[index]
        name, eq, rest = value.partition("=")
        if option in _WITH_OPTIONS:
            yield words[index].start(), words[index], value, ""
        elif eq and name in _WITH_OPTIONS:
            yield words[index].start(), words[index], rest, name + "="
        elif (
            takes
            and index >= first
            and not value.startswith("-")
            and option not in _TOOL_VALUE_OPTIONS
        ):
            yield words[index].start(), words[index], value, ""
        option = value


@functools.lru_cache(maxsize=4096)
def unquote(word: str) -> str:
    """``word`` as the shell passes it on (its quotes removed); memoised, as every reader of a
    RUN's text (installs, git packages, unpinnable forms, the lock) splits the same words."""
    try:
        return "".join(shlex.split(word))
    except ValueError:
        return word


def shell_quote(value: str, first: str) -> str:
    """``value`` quoted as one shell word, in the original word's quotes where safe."""
    if first == "'" and "'" not in value:
        return f"'{value}'"
    if first != "'" and not _DOUBLE_QUOTE_UNSAFE & set(value):
        return f'"{value}"'
    return shlex.quote(value)
