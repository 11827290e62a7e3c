"""What a Dockerfile's stages hold: files (COPY/ADD), ENV, WORKDIR, RUN steps and the command.

RUN steps are not executed: a builder (``releaselib.space_runtime.builders``) reads the installs
they name, or stands the current Python environment in for them. Words are expanded with the
Dockerfile model's ``expand`` (Docker's rules), the one staging uses.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field

import dockerfile

from releaselib.dockerfile_syntax.words import expand
from releaselib.errors import ReleaseError


class BuildError(ReleaseError):
    """The Dockerfile cannot be turned into something to run; the Space ends in BUILD_ERROR."""


@dataclass(frozen=True)
class Copy:
    """One COPY/ADD: ``sources`` are context-relative, or absolute paths in stage ``from_stage``."""

    sources: tuple[str, ...]
    dest: str
    from_stage: int | None = None


@dataclass(frozen=True)
class RunStep:
    """One RUN: its shell text, the stage's WORKDIR and ENV/ARG values at that point."""

    line: int
    text: str
    workdir: str
    scope: Mapping[str, str]


@dataclass(frozen=True)
class StagePlan:
    """One build stage after ENV/ARG expansion; env, workdir and argv include what it inherits."""

    index: int
    name: str | None
    base_stage: int | None
    copies: tuple[Copy, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    workdir: str = "/"
    argv: tuple[str, ...] = ()
    image: str | None = None  # the image it is built FROM, when not another stage
    runs: tuple[RunStep, ...] = ()


@dataclass(frozen=True)
class RunPlan:
    """All stages of a Dockerfile; ``final`` is what the container runs."""

    stages: tuple[StagePlan, ...]

    @property
    def final(self) -> StagePlan:
        return self.stages[-1]


def read_plan(text: str, *, base_env: Mapping[str, str]) -> RunPlan:
    """Parse Dockerfile ``text``; stages built FROM an image start with ``base_env``."""
    try:
        commands = dockerfile.parse_string(text)
    except dockerfile.GoParseError as exc:
        raise BuildError(f"Dockerfile does not parse: {exc}") from exc
    global_args: dict[str, str] = {}
    stages: list[StagePlan] = []
    builder: _StageBuilder | None = None
    for command in commands:
        instruction = command.cmd.upper()
        if instruction == "FROM":
            if builder is not None:
                stages.append(builder.build())
            builder = _StageBuilder.start(command.value, len(stages), stages, global_args, base_env)
        elif builder is None:
            if instruction == "ARG":
                global_args.update(_declared_args(command.value, global_args))
        else:
            builder.apply(instruction, command)
    if builder is None:
        raise BuildError("Dockerfile has no FROM instruction")
    stages.append(builder.build())
    if not stages[-1].argv:
        raise BuildError("the final stage of the Dockerfile has no CMD or ENTRYPOINT")
    return RunPlan(tuple(stages))


def _declared_args(values: tuple[str, ...], scope: Mapping[str, str]) -> dict[str, str]:
    declared: dict[str, str] = {}
    for value in values:
        name, _, default = value.partition("=")
        declared[name] = expand(default, scope) if default else scope.get(name, "")
    return declared


@dataclass
class _StageBuilder:
    index: int
    name: str | None
    base_stage: int | None
    stages: list[StagePlan]
    args: dict[str, str]
    env: dict[str, str]
    workdir: str
    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    copies: list[Copy] = field(default_factory=list)
    image: str | None = None
    runs: list[RunStep] = field(default_factory=list)

    @classmethod
    def start(
        cls,
        values: tuple[str, ...],
        index: int,
        stages: list[StagePlan],
        global_args: Mapping[str, str],
        base_env: Mapping[str, str],
    ) -> _StageBuilder:
        image = expand(values[0], global_args)
        name = values[2] if len(values) >= 3 and values[1].upper() == "AS" else None
        base = _find_stage(image, stages)
        if base is None:
            return cls(
                index, name, None, stages, dict(global_args), dict(base_env), "/", image=image
            )
        parent = stages[base]
        return cls(
            index,
            name,
            base,
            stages,
            dict(global_args),
            dict(parent.env),
            parent.workdir,
            cmd=parent.argv,
        )

    def scope(self) -> dict[str, str]:
        return {**self.args, **self.env}

    def apply(self, instruction: str, command: dockerfile.Command) -> None:
        values = command.value
        if instruction == "ARG":
            self.args.update(_declared_args(values, self.scope()))
        elif instruction == "ENV":
            for key, value in zip(values[::2], values[1::2], strict=True):
                self.env[key] = expand(value, self.scope())
        elif instruction == "WORKDIR":
            workdir = posixpath.join(self.workdir, expand(values[0], self.scope()))
            self.workdir = posixpath.normpath(workdir)
        elif instruction in ("COPY", "ADD"):
            copy = self._copy(command)
            if copy is not None:
                self.copies.append(copy)
        elif instruction == "RUN" and not command.json:
            self.runs.append(RunStep(command.start_line, values[0], self.workdir, self.scope()))
        elif instruction == "CMD":
            self.cmd = _argv(command)
        elif instruction == "ENTRYPOINT":
            self.entrypoint, self.cmd = _argv(command), ()

    def _copy(self, command: dockerfile.Command) -> Copy | None:
        """The copy, or None for ``COPY --from=<image>``: like a RUN step, it brings tools (a
        pinned uv) that the current Python environment stands in for."""
        words = [expand(value, self.scope()) for value in command.value]
        if len(words) < 2:
            raise BuildError(f"line {command.start_line}: {command.original!r} needs a destination")
        from_stage: int | None = None
        for flag in command.flags:
            if flag.startswith("--from="):
                from_stage = _find_stage(flag.removeprefix("--from="), self.stages)
                if from_stage is None:
                    return None
        dest = words[-1]
        absolute = posixpath.normpath(posixpath.join(self.workdir, dest))
        if (dest.endswith("/") or posixpath.basename(dest) == ".") and absolute != "/":
            absolute += "/"
        return Copy(tuple(words[:-1]), absolute, from_stage)

    def build(self) -> StagePlan:
        return StagePlan(
            self.index,
            self.name,
            self.base_stage,
            tuple(self.copies),
            dict(self.env),
            self.workdir,
            self.entrypoint + self.cmd,
            self.image,
            tuple(self.runs),
        )


def _find_stage(reference: str, stages: list[StagePlan]) -> int | None:
    for stage in stages:
        if reference.lower() == (stage.name or "").lower() or reference == str(stage.index):
            return stage.index
    return None


def _argv(command: dockerfile.Command) -> tuple[str, ...]:
    if command.json:
        return tuple(command.value)
    return ("/bin/sh", "-c", command.value[0])
