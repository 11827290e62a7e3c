"""A parsed Dockerfile with byte-preserving edits: instructions, stages, ENV/ARG/WORKDIR.

Parsing is BuildKit's own Go parser (the ``dockerfile`` package), which is read-only; edits
splice whole instructions by line range, so every byte outside an edited instruction stays as
it was, comments and heredocs included. Each edit returns a new, re-parsed ``Dockerfile``.
The rewrite that stages a Dockerfile for a Space is ``releaselib.edit.dockerfile_rewrite``.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeAlias

import dockerfile as buildkit

from releaselib.errors import StageError

INSTRUCTIONS = frozenset(
    {
        "ADD", "ARG", "CMD", "COPY", "ENTRYPOINT", "ENV", "EXPOSE", "FROM", "HEALTHCHECK",
        "LABEL", "MAINTAINER", "ONBUILD", "RUN", "SHELL", "STOPSIGNAL", "USER", "VOLUME",
        "WORKDIR",
    }
)  # fmt: skip
# What the openenv-base image sets (src/openenv/core/containers/images/Dockerfile).
OPENENV_BASE_ENV: Mapping[str, str] = {"PYTHONPATH": "/app/src"}
# The openenv-base image by its bare local names and both registries it has lived in (the
# staging rewrite replaces it with the configured base image).
OPENENV_BASE_IMAGE = re.compile(
    r"(?:(?:ghcr\.io/(?:huggingface|meta-pytorch)/)?openenv-base|envtorch-base)(?:[:@].*)?"
)
REMEDY = "fix the Dockerfile in the checkout"

StageRef: TypeAlias = "Stage | int | str | None"


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


@dataclass(frozen=True)
class Dockerfile:
    """A parsed Dockerfile. Build it with :meth:`parse`; edits return a new one."""

    text: str
    path: str
    instructions: tuple[Instruction, ...]
    stages: tuple[Stage, ...]
    escape: str = "\\"

    @classmethod
    def parse(cls, text: str, path: str = "Dockerfile") -> Dockerfile:
        """Parse ``text``; raise StageError naming ``path:line`` if Docker would refuse it."""
        try:
            commands = buildkit.parse_string(text)
        except buildkit.GoParseError as exc:
            line = _failing_line(text)
            raise StageError(f"{path}:{line}: {exc}", remedy=REMEDY) from exc
        lines = split_lines(text)
        instructions = _instructions(commands, lines, path)
        return cls(text, path, instructions, _stages(instructions), _escape(lines))

    # -- reading -------------------------------------------------------------------------

    @property
    def final_stage(self) -> Stage:
        return self.stages[-1]

    @property
    def newline(self) -> str:
        """The file's line ending, taken from its first line."""
        return "\r\n" if self.text.split("\n", 1)[0].endswith("\r") else "\n"

    def stage(self, ref: StageRef = None) -> Stage:
        """A stage by object, index or name; None means the final stage."""
        if ref is None:
            return self.final_stage
        if isinstance(ref, Stage):
            return self.stages[ref.index]
        if isinstance(ref, int):
            return self.stages[ref]
        for stage in self.stages:
            if stage.name is not None and stage.name.lower() == ref.lower():
                return stage
        raise KeyError(f"{self.path}: no stage named {ref!r}")

    def stage_instructions(self, ref: StageRef = None) -> tuple[Instruction, ...]:
        """The instructions of one stage, its FROM first."""
        stage = self.stage(ref)
        return self.instructions[stage.first.index : stage.last.index + 1]

    def parent(self, ref: StageRef = None) -> Stage | None:
        """The earlier stage this stage is built FROM, if any."""
        stage = self.stage(ref)
        for earlier in self.stages[: stage.index]:
            if earlier.name is not None and earlier.name.lower() == stage.base.lower():
                return earlier
        return None

    def args(self) -> dict[str, str | None]:
        """Global ARGs (before the first FROM) and their defaults; None when there is none."""
        scope: dict[str, str | None] = {}
        for instr in self.instructions:
            if instr.stage is not None:
                break
            if instr.cmd == "ARG":
                scope.update(_arg_defaults(instr, _known(scope), self.escape))
        return scope

    def resolved_base(self, ref: StageRef = None) -> str:
        """The stage's base image with global ARG defaults expanded."""
        return expand(self.stage(ref).base, _known(self.args()), self.escape)

    def stage_env(
        self, ref: StageRef = None, base_env: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """The environment after the stage's ENV instructions, evaluated in order.

        ``base_env`` is what the base image sets; by default the parent stage's environment,
        ``OPENENV_BASE_ENV`` for an openenv-base image, and nothing for any other image.
        """
        stage = self.stage(ref)
        env = dict(self._base_env(stage) if base_env is None else base_env)
        args: dict[str, str] = {}
        globals_ = self.args()
        for instr in self.stage_instructions(stage)[1:]:
            if instr.cmd == "ARG":
                for name, default in _arg_defaults(instr, {**args, **env}, self.escape).items():
                    value = default if default is not None else globals_.get(name)
                    if value is not None:
                        args[name] = value
            elif instr.cmd == "ENV":
                scope = {**args, **env}
                env.update({k: expand(v, scope, self.escape) for k, v in _pairs(instr)})
        return env

    def workdir(self, ref: StageRef = None, at: Instruction | None = None) -> str | None:
        """The WORKDIR in force at ``at`` (default: the stage's end); None if none is set."""
        stage = self.stage(ref)
        return self._workdir_at(stage, at or stage.last)

    def copies(self, ref: StageRef = None) -> list[Copy]:
        """The stage's COPY and ADD instructions, in order."""
        stage = self.stage(ref)
        env = self._base_env(stage)
        out = []
        for instr in self.stage_instructions(stage):
            if instr.cmd not in ("COPY", "ADD") or not instr.value:
                continue
            *sources, dest = instr.value
            workdir = self._workdir_at(stage, instr) or "/"
            target = posixpath.normpath(posixpath.join(workdir, expand(dest, env, self.escape)))
            out.append(Copy(instr, tuple(sources), dest, target, instr.flag("from")))
        return out

    def cmd(self, ref: StageRef = None) -> CmdLine | None:
        """The stage's last CMD, or None if it sets none."""
        found = [i for i in self.stage_instructions(ref) if i.cmd == "CMD"]
        if not found:
            return None
        instr = found[-1]
        argv = instr.value if instr.json else ("/bin/sh", "-c", " ".join(instr.value))
        return CmdLine(instr, tuple(argv), instr.json)

    # -- editing -------------------------------------------------------------------------

    def apply(self, edit: Edit) -> Dockerfile:
        """Splice ``edit`` into the text and re-parse."""
        return Dockerfile.parse(_splice(self.text, edit, self.newline), self.path)

    def replace(self, instr: Instruction, new_text: str) -> Dockerfile:
        """Replace one instruction (all its lines) by ``new_text``."""
        self._check_current(instr)
        return self.apply(Edit(instr.start_line, instr.end_line, new_text))

    def insert_before(self, instr: Instruction, text: str) -> Dockerfile:
        """Insert ``text`` as lines of their own above ``instr``."""
        self._check_current(instr)
        return self.apply(Edit(instr.start_line, instr.start_line - 1, text))

    def insert_after(self, instr: Instruction, text: str) -> Dockerfile:
        """Insert ``text`` as lines of their own below ``instr``."""
        self._check_current(instr)
        return self.apply(Edit(instr.end_line + 1, instr.end_line, text))

    def append(self, text: str) -> Dockerfile:
        """Add ``text`` at the end, after a newline if the file lacks a final one."""
        end = len(split_lines(self.text))
        return self.apply(Edit(end + 1, end, text))

    def set_env(self, key: str, value: str, stage: StageRef = None) -> Dockerfile:
        """Set ``key`` in the stage (final by default); see :meth:`env_edit`."""
        return self.apply(self.env_edit(key, value, stage))

    def env_edit(self, key: str, value: str, stage: StageRef = None) -> Edit:
        """The edit that sets ``key=value`` (Dockerfile text: ``$VAR`` expands) in a stage.

        The key's last ENV in the stage is edited in place, other keys of a multi-key ENV
        kept; otherwise ``ENV key=value`` goes after the stage's last ENV, or at its end.
        """
        stage_ = self.stage(stage)
        envs = [i for i in self.stage_instructions(stage_) if i.cmd == "ENV"]
        assignment = f"ENV {env_word(key, value)}"
        setting = [i for i in envs if key in dict(_pairs(i))]
        if setting:
            instr = setting[-1]
            if is_legacy_env(instr):
                return Edit(instr.start_line, instr.end_line, assignment)
            return Edit(instr.start_line, instr.end_line, set_env_word(instr, key, value))
        anchor = envs[-1] if envs else stage_.last
        if anchor.index == len(self.instructions) - 1:
            end = len(split_lines(self.text))
            return Edit(end + 1, end, assignment)
        return Edit(anchor.end_line + 1, anchor.end_line, assignment)

    # -- helpers -------------------------------------------------------------------------

    def _check_current(self, instr: Instruction) -> None:
        if instr.index >= len(self.instructions) or self.instructions[instr.index] != instr:
            raise ValueError(f"{self.path}: instruction at line {instr.start_line} is stale")

    def _base_env(self, stage: Stage) -> dict[str, str]:
        parent = self.parent(stage)
        if parent is not None:
            return self.stage_env(parent)
        if OPENENV_BASE_IMAGE.fullmatch(self.resolved_base(stage)):
            return dict(OPENENV_BASE_ENV)
        return {}

    def _workdir_at(self, stage: Stage, until: Instruction) -> str | None:
        parent = self.parent(stage)
        workdir = self.workdir(parent) if parent is not None else None
        env = self._base_env(stage)
        for instr in self.instructions[stage.first.index : until.index + 1]:
            if instr.cmd == "WORKDIR" and instr.value:
                path = expand(instr.value[0], env, self.escape)
                workdir = posixpath.normpath(posixpath.join(workdir or "/", path))
        return workdir


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


def _known(scope: Mapping[str, str | None]) -> dict[str, str]:
    return {k: v for k, v in scope.items() if v is not None}


def _arg_defaults(
    instr: Instruction, scope: Mapping[str, str], escape: str
) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for item in instr.value:
        name, eq, default = item.partition("=")
        out[name] = expand(default, {**scope, **_known(out)}, escape) if eq else None
    return out


def build_variables(instr: Instruction) -> list[tuple[str, str]]:
    """(name, value) of each ARG default or ENV value of ``instr`` written without a variable."""
    if instr.cmd == "ARG":
        pairs = [v.partition("=")[::2] for v in instr.value if "=" in v]
    elif instr.cmd == "ENV":
        pairs = _pairs(instr)
    else:
        return []
    return [(name, expand(value, {})) for name, value in pairs if "$" not in value]


def _pairs(instr: Instruction) -> list[tuple[str, str]]:
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


# -- text and parse plumbing -------------------------------------------------------------------


def split_lines(text: str) -> list[str]:
    """Lines split at ``\\n`` only (as BuildKit counts them), endings kept."""
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def _splice(text: str, edit: Edit, newline: str) -> str:
    """``text`` with lines ``edit.start..edit.end`` replaced by ``edit.text``."""
    lines = split_lines(text)
    lo, hi = edit.start - 1, edit.end
    if not 0 <= lo <= len(lines) or not lo <= hi <= len(lines):
        raise ValueError(f"edit {edit.start}..{edit.end} is outside 1..{len(lines)}")
    new = edit.text.replace("\r\n", "\n").removesuffix("\n").split("\n")
    ending = _ending(lines[hi - 1]) if hi > lo and hi == len(lines) else newline
    if lo == len(lines) and lines and not _ending(lines[-1]):
        lines[-1] += newline  # never glue new text onto an unterminated last line
    body = [f"{line}{newline}" for line in new[:-1]] + [new[-1] + ending]
    return "".join(lines[:lo] + body + lines[hi:])


def _ending(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :]


def _instructions(
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


def _stages(instructions: tuple[Instruction, ...]) -> tuple[Stage, ...]:
    froms = [i for i in instructions if i.cmd == "FROM"]
    stages = []
    for n, first in enumerate(froms):
        last_index = froms[n + 1].index - 1 if n + 1 < len(froms) else len(instructions) - 1
        value = first.value
        name = value[2] if len(value) >= 3 and value[1].upper() == "AS" else None
        stages.append(Stage(n, name, value[0], first, instructions[last_index]))
    return tuple(stages)


def _escape(lines: list[str]) -> str:
    """The escape character set by a leading ``# escape=`` parser directive."""
    for line in lines:
        match = re.fullmatch(r"#\s*(\w+)\s*=\s*(\S+)\s*", line.rstrip("\r\n"))
        if match is None:
            break
        if match.group(1).lower() == "escape":
            return match.group(2)
    return "\\"


def _failing_line(text: str) -> int:
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
