"""The requirements files and projects a RUN installs from (pip, uv), as paths in the image."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

from releaselib.dockerfile_syntax.parse import Instruction, Stage
from releaselib.dockerfile_syntax.words import expand
from releaselib.edit.dockerfile_model import Dockerfile
from releaselib.edit.git_packages import shell_text

_PIP = re.compile(r"(?:.*/)?pip\d*(?:\.\d+)*")


_PYTHON = re.compile(r"(?:.*/)?python\d*(?:\.\d+)*")


_UV = re.compile(r"(?:.*/)?uv")


_UV_VALUE_OPTIONS = frozenset(
    {"--directory", "--project", "--cache-dir", "--config-file", "--color", "--python", "-p"}
)


_PROJECT_OPTIONS = frozenset({"--project", "--directory"})


_INCLUDES = frozenset({"-r", "--requirement", "-c", "--constraint"})


_VALUE_OPTIONS = _INCLUDES | frozenset({"-e", "--editable", "-t", "--target", "--prefix"})


def run_installs(df: Dockerfile, stage: Stage, instr: Instruction) -> Iterator[tuple[str, str]]:
    """(kind, image path) for each file or project a RUN installs from, with the ARG defaults
    and ENV values in force there expanded."""
    for command in command_installs(df, stage, instr):
        yield from command


def command_installs(
    df: Dockerfile, stage: Stage, instr: Instruction
) -> Iterator[list[tuple[str, str]]]:
    """``run_installs`` grouped by the command that installs them (one pip reads them all)."""
    from releaselib.edit import shell_reader  # lazily: tomlkit and packaging load slowly

    scope = df.scope_at(stage, instr)
    cwd = df.workdir(stage, at=instr) or "/"
    for words in shell_reader.shell_commands(shell_text(instr)):
        words = shell_reader.command_words(words)
        if words[:1] == ["cd"] and len(words) == 2:
            cwd = posixpath.join(cwd, expand(words[1], scope))
        found = [
            (kind, posixpath.normpath(posixpath.join(cwd, expand(path, scope))))
            for kind, path in installed(words)
        ]
        if found:
            yield found


def installed(words: list[str]) -> Iterator[tuple[str, str]]:
    """("requirements"|"constraints"|"project"|"pipfile", path) for each file or project a
    command installs: pip (any, ``python -m pip``), ``uv pip install|sync``, ``uv sync`` and
    ``pipenv install|sync|update`` (the ``Pipfile`` of its folder)."""
    if len(words) > 2 and _PYTHON.fullmatch(words[0]) and words[1] == "-m":
        words = words[2:]
    if words[:1] and words[0].rsplit("/", 1)[-1] == "pipenv":
        if any(w in ("install", "sync", "update") for w in words[1:]):
            yield "pipfile", "Pipfile"
        return
    if words and _UV.fullmatch(words[0]):
        at = 1
        while at < len(words) and words[at].startswith("-"):
            at += 2 if words[at] in _UV_VALUE_OPTIONS else 1
        sub = words[at:]
        if sub[:1] == ["sync"]:
            yield "project", _option(words, _PROJECT_OPTIONS) or "."
        elif sub[:2] == ["pip", "sync"]:
            yield from (("requirements", w) for w in _positional(sub[2:]))
        elif sub[:2] == ["pip", "install"]:
            yield from _pip_args(sub[2:])
        return
    if "install" in words and any(_PIP.fullmatch(w) for w in words[: words.index("install")]):
        yield from _pip_args(words[words.index("install") + 1 :])


def _positional(args: list[str]) -> Iterator[str]:
    skip = False
    for word in args:
        if not skip and not word.startswith("-"):
            yield word
        skip = word in _VALUE_OPTIONS


def _pip_args(args: list[str]) -> Iterator[tuple[str, str]]:
    skip = False
    for index, word in enumerate(args):
        name, eq, value = word.partition("=")
        if skip:
            skip = False
        elif word in _VALUE_OPTIONS:
            skip = True
            if word in _INCLUDES and index + 1 < len(args):
                yield _include_kind(word), args[index + 1]
            elif word in ("-e", "--editable") and index + 1 < len(args):
                yield from _project(args[index + 1])
        elif eq and name in _INCLUDES:
            yield _include_kind(name), value
        elif word[:2] in ("-r", "-c") and len(word) > 2 and word[2] != "-":
            yield _include_kind(word[:2]), word[2:]
        elif not word.startswith("-"):
            yield from _project(word)


def _include_kind(option: str) -> str:
    return "constraints" if option in ("-c", "--constraint") else "requirements"


def _project(word: str) -> Iterator[tuple[str, str]]:
    """A local project argument (``.``, ``./x``, ``server/../``, ``$DIR``), not a package name."""
    path = word.split("[", 1)[0]
    local = "/" in path and not re.search(r"://|@|^git\+", path)
    if path.startswith((".", "/", "$")) or local:
        yield "project", path


def _option(words: list[str], names: frozenset[str]) -> str | None:
    for index, word in enumerate(words):
        name, eq, value = word.partition("=")
        if eq and name in names:
            return value
        if word in names and index + 1 < len(words):
            return words[index + 1]
    return None
