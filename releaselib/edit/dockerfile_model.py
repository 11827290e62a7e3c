"""A parsed Dockerfile with byte-preserving edits: instructions, stages, ENV/ARG/WORKDIR.

Parsing is BuildKit's own Go parser (the ``dockerfile`` package), which is read-only; edits
splice whole instructions by line range, so every byte outside an edited instruction stays as
it was, comments and heredocs included. Each edit returns a new, re-parsed ``Dockerfile``.
The rewrite that stages a Dockerfile for a Space is ``releaselib.edit.dockerfile_rewrite``.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeAlias

import dockerfile as buildkit

from releaselib.dockerfile_syntax.parse import (
    REMEDY,
    CmdLine,
    Copy,
    Edit,
    Instruction,
    Stage,
    escape_directive,
    failing_line,
    parse_instructions,
    split_lines,
    stages_of,
)
from releaselib.dockerfile_syntax.words import (
    arg_defaults,
    env_word,
    expand,
    is_legacy_env,
    key_values,
    known,
    set_env_word,
)
from releaselib.errors import StageError

# What the openenv-base image sets (src/openenv/core/containers/images/Dockerfile).
OPENENV_BASE_ENV: Mapping[str, str] = {"PYTHONPATH": "/app/src"}


# The openenv-base image by its bare local names and both registries it has lived in (the
# staging rewrite replaces it with the configured base image).
OPENENV_BASE_IMAGE = re.compile(
    r"(?:(?:ghcr\.io/(?:huggingface|meta-pytorch)/)?openenv-base|envtorch-base)(?:[:@].*)?"
)


StageRef: TypeAlias = "Stage | int | str | None"


@dataclass(frozen=True)
class Dockerfile:
    """A parsed Dockerfile. Build it with :meth:`parse`; edits return a new one."""

    text: str
    path: str
    instructions: tuple[Instruction, ...]
    stages: tuple[Stage, ...]
    escape: str = "\\"

    @staticmethod
    @functools.lru_cache(maxsize=64)
    def parse(text: str, path: str = "Dockerfile") -> Dockerfile:
        """Parse ``text``; raise StageError naming ``path:line`` if Docker would refuse it. A
        Dockerfile is immutable: one parse, memoised, serves every reader of the same file."""
        try:
            commands = buildkit.parse_string(text)
        except buildkit.GoParseError as exc:
            line = failing_line(text)
            raise StageError(f"{path}:{line}: {exc}", remedy=REMEDY) from exc
        lines = split_lines(text)
        instructions = parse_instructions(commands, lines, path)
        stages = stages_of(instructions)
        return Dockerfile(text, path, instructions, stages, escape_directive(lines))

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
        return dict(self._args)

    @functools.cached_property
    def _args(self) -> dict[str, str | None]:
        scope: dict[str, str | None] = {}
        for instr in self.instructions:
            if instr.stage is not None:
                break
            if instr.cmd == "ARG":
                scope.update(arg_defaults(instr, known(scope), self.escape))
        return scope

    def resolved_base(self, ref: StageRef = None) -> str:
        """The stage's base image with global ARG defaults expanded."""
        return self._bases[self.stage(ref).index]

    @functools.cached_property
    def _bases(self) -> tuple[str, ...]:
        scope = known(self._args)
        return tuple(expand(stage.base, scope, self.escape) for stage in self.stages)

    def stage_env(
        self, ref: StageRef = None, base_env: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """The environment after the stage's ENV instructions, evaluated in order.

        ``base_env`` is what the base image sets; by default the parent stage's environment,
        ``OPENENV_BASE_ENV`` for an openenv-base image, and nothing for any other image.
        """
        stage = self.stage(ref)
        base = self._base_env(stage) if base_env is None else base_env
        return self._scope(stage, base, None)[1]

    def scope_at(self, ref: StageRef, at: Instruction) -> dict[str, str]:
        """The ARG defaults and ENV values in force at ``at``, as a RUN there expands them."""
        stage = self.stage(ref)
        args, env = self._scope(stage, self._base_env(stage), at)
        return {**args, **env}

    def _scope(
        self, stage: Stage, base_env: Mapping[str, str], until: Instruction | None
    ) -> tuple[dict[str, str], dict[str, str]]:
        """(args, env) after the stage's ARG and ENV instructions before ``until`` (all)."""
        env = dict(base_env)
        args: dict[str, str] = {}
        globals_ = self._args
        for instr in self.stage_instructions(stage)[1:]:
            if until is not None and instr.index >= until.index:
                break
            if instr.cmd == "ARG":
                for name, default in arg_defaults(instr, {**args, **env}, self.escape).items():
                    value = default if default is not None else globals_.get(name)
                    if value is not None:
                        args[name] = value
            elif instr.cmd == "ENV":
                scope = {**args, **env}
                env.update({k: expand(v, scope, self.escape) for k, v in key_values(instr)})
        return args, env

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
        setting = [i for i in envs if key in dict(key_values(i))]
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
