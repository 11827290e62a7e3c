"""A Dockerfile read by BuildKit's parser into instruction and stage records."""

from __future__ import annotations

import re
from dataclasses import dataclass

import dockerfile as buildkit

from releaselib.errors import StageError

INSTRUCTIONS = frozenset(
    {
        "ADD", "ARG", "CMD", "COPY", "ENTRYPOINT", "ENV", "EXPOSE", "FROM", "HEALTHCHECK",
        "LABEL", "MAINTAINER", "ONBUILD", "RUN", "SHELL", "STOPSIGNAL", "USER", "VOLUME",
        "WORKDIR",
    }
)  # fmt: skip


REMEDY = "fix the Dockerfile in the checkout"


@dataclass(frozen=True)
class Instruction:
    """One instruction: parser fields plus its exact source text (no final line ending)."""

    index: int
    stage: int | None  # None for ARGs before the first FROM
    cmd: str  # upper case
    flags: tuple[str, ...]
    value: tuple[str, ...]
    json: bool
    start_line: int
    end_line: int
    text: str

    def flag(self, name: str) -> str | None:
        """The value of ``--name=value``, or None."""
        prefix = f"--{name}="
        return next((f[len(prefix) :] for f in self.flags if f.startswith(prefix)), None)


@dataclass(frozen=True)
class Stage:
    """A build stage: its FROM and the instructions up to the next FROM."""

    index: int
    name: str | None
    base: str  # the image as written in FROM
    first: Instruction
    last: Instruction


@dataclass(frozen=True)
class Copy:
    """A COPY or ADD: sources and destination as written; ``target`` is the absolute dest."""

    instruction: Instruction
    sources: tuple[str, ...]
    dest: str
    target: str  # dest joined onto the WORKDIR in force
    from_: str | None


@dataclass(frozen=True)
class CmdLine:
    """A CMD; shell form is given as the argv Docker runs (``/bin/sh -c <text>``)."""

    instruction: Instruction
    argv: tuple[str, ...]
    json: bool


@dataclass(frozen=True)
class Edit:
    """Replace lines ``start..end`` (1-based, inclusive) by ``text``; ``end == start - 1``
    inserts ``text`` before line ``start``."""

    start: int
    end: int
    text: str


# -- text and parse plumbing -------------------------------------------------------------------


def split_lines(text: str) -> list[str]:
    """Lines split at ``\\n`` only (as BuildKit counts them), endings kept."""
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def parse_instructions(
    commands: tuple[buildkit.Command, ...], lines: list[str], path: str
) -> tuple[Instruction, ...]:
    out: list[Instruction] = []
    stage: int | None = None
    for index, command in enumerate(commands):
        cmd = command.cmd.upper()
        where = f"{path}:{command.start_line}"
        if cmd not in INSTRUCTIONS:
            raise StageError(f"{where}: unknown instruction {command.cmd}", remedy=REMEDY)
        if cmd == "FROM":
            if not command.value:
                raise StageError(f"{where}: FROM names no image", remedy=REMEDY)
            stage = 0 if stage is None else stage + 1
        elif stage is None and cmd != "ARG":
            raise StageError(f"{where}: {cmd} before the first FROM", remedy=REMEDY)
        text = "".join(lines[command.start_line - 1 : command.end_line]).rstrip("\r\n")
        out.append(
            Instruction(
                index=index,
                stage=stage,
                cmd=cmd,
                flags=tuple(command.flags),
                value=tuple(command.value),
                json=command.json,
                start_line=command.start_line,
                end_line=command.end_line,
                text=text,
            )
        )
    if stage is None:
        raise StageError(f"{path}:1: no FROM instruction", remedy=REMEDY)
    return tuple(out)


def stages_of(instructions: tuple[Instruction, ...]) -> tuple[Stage, ...]:
    froms = [i for i in instructions if i.cmd == "FROM"]
    stages = []
    for n, first in enumerate(froms):
        last_index = froms[n + 1].index - 1 if n + 1 < len(froms) else len(instructions) - 1
        value = first.value
        name = value[2] if len(value) >= 3 and value[1].upper() == "AS" else None
        stages.append(Stage(n, name, value[0], first, instructions[last_index]))
    return tuple(stages)


def escape_directive(lines: list[str]) -> str:
    """The escape character set by a leading ``# escape=`` parser directive."""
    for line in lines:
        match = re.fullmatch(r"#\s*(\w+)\s*=\s*(\S+)\s*", line.rstrip("\r\n"))
        if match is None:
            break
        if match.group(1).lower() == "escape":
            return match.group(2)
    return "\\"


def failing_line(text: str) -> int:
    """The first line at which a prefix of ``text`` stops parsing (best effort)."""
    lines = split_lines(text)
    for count in range(1, len(lines) + 1):
        if lines[count - 1].rstrip("\r\n").endswith("\\"):
            continue
        try:
            buildkit.parse_string("".join(lines[:count]))
        except buildkit.GoParseError:
            return count
    return len(lines)
