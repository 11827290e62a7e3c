"""The rewrite that stages a Dockerfile for a Space, through the Dockerfile model.

Each step reads the parsed ``Dockerfile`` (``releaselib.edit.dockerfile_model``), splices its
edits and records a ``Change`` for each, with the line it has in the new text.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterator
from typing import TypeAlias

from releaselib.dockerfile_syntax.parse import Copy, Edit, Instruction, Stage, split_lines
from releaselib.dockerfile_syntax.words import (
    build_variables,
    env_word,
    is_legacy_env,
    set_env_word,
)
from releaselib.edit import git_packages
from releaselib.edit.dockerfile_model import OPENENV_BASE_IMAGE, Dockerfile
from releaselib.records import Change

# A fresh uv, pinned: the image's uv (0.5.27 in openenv-base) predates the locks and git
# sources envs use now. Copying the binaries out of uv's own versioned image needs no shell,
# pip or curl in the stage and gives the same bytes on every build; Spaces pull images anyway.
UV_IMAGE = "ghcr.io/astral-sh/uv"
UV_VERSION = "0.13.8"
UV_INSTALL = (
    f"# Pinned uv {UV_VERSION} (added by openenv-release; the base image's uv is older)\n"
    f"COPY --from={UV_IMAGE}:{UV_VERSION} /uv /uvx /usr/local/bin/"
)
LEGACY_CORE = "src/core"
OPENENV_SRC_COPY = "COPY src/openenv/ /app/src/openenv/"

#: (stage, RUN, what needs git) for each RUN of a Dockerfile that needs git its stage lacks:
#: the caller reads the build context (``releaselib.stage.git_needs.missing_git``).
GitNeeds: TypeAlias = Callable[[Dockerfile], Iterator[tuple[Stage, Instruction, str]]]


def rewrite_dockerfile(
    text: str, *, path: str, base_image: str, dist: str, ref: str, git_needs: GitNeeds | None = None
) -> tuple[str, list[Change]]:
    """Rewrite a Dockerfile so it builds on a Space; return the new text and every change.

    The openenv base becomes the literal ``base_image`` (Spaces pass an empty BASE_IMAGE
    build-arg); OpenEnv specs in RUN lines are pinned to ``ref``; a pinned uv goes before the
    first uv-cache RUN and ``uv sync --frozen`` becomes ``uv sync``; a legacy ``COPY src/core/``
    also gets ``src/openenv`` and a PYTHONPATH with ``/app/src`` instead of the core dir; the
    final stage sets ``ENABLE_WEB_INTERFACE=true``; with ``git_needs`` (what the build
    context, its requirements and pyprojects already pinned, makes need git), every stage that
    installs a git+ requirement and lacks git installs it first. Change lines are lines of the
    new text.
    """
    rw = _Rewrite(Dockerfile.parse(text, path))
    rw.base_images(base_image)
    rw.run_lines(dist, ref)
    rw.build_variables(dist, ref)
    if git_needs is not None:
        rw.git(git_needs)
    rw.uv_install()
    rw.legacy_core()
    rw.web_interface()
    return rw.df.text, sorted(rw.changes, key=lambda c: c.line or 0)


class _Rewrite:
    """A Dockerfile being rewritten, and the changes so far (kept in the new text's lines)."""

    def __init__(self, df: Dockerfile) -> None:
        self.df = df
        self.changes: list[Change] = []

    def edit(self, edit: Edit, before: str, why: str) -> None:
        self.apply(edit)
        self.changes.append(Change(self.df.path, edit.start, before, edit.text, why))

    def apply(self, edit: Edit) -> None:
        """Apply ``edit`` and move the recorded changes below it by the lines it added."""
        old_count = len(split_lines(self.df.text))
        self.df = self.df.apply(edit)
        delta = len(split_lines(self.df.text)) - old_count
        self.changes = [
            Change(c.file, c.line + delta, c.before, c.after, c.why)
            if c.line is not None and c.line > edit.end and delta
            else c
            for c in self.changes
        ]

    def replace(self, instr: Instruction, new_text: str, why: str) -> None:
        self.edit(Edit(instr.start_line, instr.end_line, new_text), instr.text, why)

    def base_images(self, base_image: str) -> None:
        """``ARG BASE_IMAGE=`` defaults and openenv-base FROMs become ``base_image``."""
        why = "Spaces pass an empty BASE_IMAGE build-arg; the base image must be literal"
        why_named = f"an openenv base image by another name; the release builds on {base_image}"
        for index in range(len(self.df.instructions)):
            instr = self.df.instructions[index]  # re-read: an edit may move later lines
            if instr.cmd == "ARG" and any(v.startswith("BASE_IMAGE=") for v in instr.value):
                new = _arg_text(instr, "BASE_IMAGE", base_image)
                if new != instr.text:
                    self.replace(instr, new, why)
            elif instr.cmd == "FROM" and _is_openenv_base(instr.value[0]):
                new = " ".join(["FROM", *instr.flags, base_image, *instr.value[1:]])
                if new != instr.text:
                    self.replace(instr, new, why if "$" in instr.value[0] else why_named)

    def run_lines(self, dist: str, ref: str) -> None:
        """Pin OpenEnv specs in RUN lines and drop ``--frozen`` from ``uv sync``."""
        from releaselib.edit import run_pins  # lazily: tomlkit and packaging are slow to import

        for index in range(len(self.df.instructions)):
            instr = self.df.instructions[index]
            if instr.cmd != "RUN":
                continue
            command = instr.text.replace("\r\n", "\n")
            command, pins = run_pins.rewrite_shell_command(
                command, path=self.df.path, line=instr.start_line, dist=dist, ref=ref
            )
            command, unfrozen = _unfreeze(command, self.df.path, instr.start_line)
            if pins or unfrozen:
                self.apply(Edit(instr.start_line, instr.end_line, command))
                self.changes += pins + unfrozen

    def build_variables(self, dist: str, ref: str) -> None:
        """Pin OpenEnv requirements in ARG and ENV values a RUN expands (``pip install $SPEC``)."""
        from releaselib.edit import run_pins  # lazily: tomlkit and packaging are slow to import

        runs = "\n".join(i.text for i in self.df.instructions if i.cmd == "RUN")
        for index in range(len(self.df.instructions)):
            instr = self.df.instructions[index]
            for name, value in build_variables(instr):
                if not re.search(rf"\$\{{?{re.escape(name)}\b", runs):
                    continue
                new = run_pins.rewrite_words(
                    value, path=self.df.path, line=instr.start_line, dist=dist, ref=ref
                )
                if new is None:
                    continue
                why = f"${name} holds an OpenEnv requirement a RUN installs; pinned to {ref}"
                if instr.cmd == "ARG":
                    self.replace(instr, _arg_text(instr, name, new), why)
                elif is_legacy_env(instr):
                    self.replace(instr, f"ENV {env_word(name, new)}", why)
                else:
                    self.replace(instr, set_env_word(instr, name, new), why)
                instr = self.df.instructions[index]

    def git(self, git_needs: GitNeeds) -> None:
        """Install git before the first RUN of each stage that installs a git+ requirement
        (directly, through -r/-c files or a pyproject) without having git."""
        unknown: set[int] = set()  # stages of an unknown image family: the check names them
        while found := next((f for f in git_needs(self.df) if f[0].index not in unknown), None):
            stage, instr, need = found
            text = git_packages.install_git(self.df, stage, instr)
            if text is None:
                unknown.add(stage.index)
                continue
            why = f"stage {stage.name or stage.index} installs {need} but has no git there"
            self.edit(Edit(instr.start_line, instr.start_line - 1, text), "", why)

    def uv_install(self) -> None:
        """Put a pinned uv before the first ``RUN --mount=type=cache,target=.../.cache/uv``."""
        first = next((i for i in self.df.instructions if _mounts_uv_cache(i)), None)
        if first is not None and not self._pins_uv_before(first):
            edit = Edit(first.start_line, first.start_line - 1, UV_INSTALL)
            self.edit(edit, "", f"install a pinned uv {UV_VERSION} before the first uv sync")

    def _pins_uv_before(self, instr: Instruction) -> bool:
        """True if ``instr``'s stage already copies uv out of a versioned uv image before it."""
        return any(
            c.instruction.index < instr.index and (c.from_ or "").startswith(UV_IMAGE + ":")
            for c in self.df.copies(instr.stage)
        )

    def legacy_core(self) -> None:
        """After a legacy ``COPY src/core/`` also copy src/openenv; keep core off PYTHONPATH."""
        for index in range(len(self.df.stages)):
            stage = self.df.stage(index)
            legacy = [c for c in self.df.copies(stage) if _copies_legacy_core(c)]
            if not legacy:
                continue
            if not any(_copies_path(c, "src/openenv") for c in self.df.copies(stage)):
                anchor = legacy[-1].instruction
                why = "legacy COPY src/core/ needs the openenv package beside it"
                self.edit(Edit(anchor.end_line + 1, anchor.end_line, OPENENV_SRC_COPY), "", why)
            self.python_path(stage.index, {c.target for c in legacy})

    def python_path(self, stage: int, core_dirs: set[str]) -> None:
        """Set the stage's PYTHONPATH to ``/app/src`` plus its entries outside ``core_dirs``."""
        current = self.df.stage_env(stage).get("PYTHONPATH", "")
        entries = [e for e in current.split(":") if e and not _under_any(e, core_dirs)]
        value = ":".join(dict.fromkeys(["/app/src", *entries]))
        if value != current:
            why = "a core dir on PYTHONPATH shadows stdlib modules (types); expose only /app/src"
            self.set_env("PYTHONPATH", value, stage, why)

    def web_interface(self) -> None:
        if self.df.stage_env().get("ENABLE_WEB_INTERFACE") != "true":
            why = "the Space serves the web UI under /web"
            self.set_env("ENABLE_WEB_INTERFACE", "true", None, why)

    def set_env(self, key: str, value: str, stage: int | None, why: str) -> None:
        edit = self.df.env_edit(key, value, stage)
        before = _text_of_lines(self.df.text, edit.start, edit.end)
        self.edit(edit, before, why)


def _arg_text(instr: Instruction, name: str, default: str) -> str:
    items = [f"{name}={default}" if v.split("=", 1)[0] == name else v for v in instr.value]
    return " ".join(["ARG", *items])


# ``--frozen`` as an option of a ``uv sync`` command (the command ends at ; & | or a newline).
_FROZEN = re.compile(r"(\buv\s+sync\b(?:[^;&|\n\\]|\\\n|\\.)*?)[ \t]+--frozen\b")


def _unfreeze(command: str, path: str, line: int) -> tuple[str, list[Change]]:
    """Drop ``--frozen`` from every ``uv sync`` in ``command``: staged locks are stale."""
    why = "a uv.lock made before the pin would refuse the pinned OpenEnv; uv sync re-resolves"
    changes = []
    match = _FROZEN.search(command)
    while match is not None:
        at = line + command.count("\n", 0, match.start())
        changes.append(Change(path, at, "uv sync --frozen", "uv sync", why))
        command = command[: match.end(1)] + command[match.end() :]
        match = _FROZEN.search(command, match.start())
    return command, changes


def _is_openenv_base(image: str) -> bool:
    return image in ("${BASE_IMAGE}", "$BASE_IMAGE") or bool(OPENENV_BASE_IMAGE.fullmatch(image))


def _mounts_uv_cache(instr: Instruction) -> bool:
    if instr.cmd != "RUN":
        return False
    mounts = [f for f in instr.flags if f.startswith("--mount=")]
    return any("type=cache" in m and re.search(r"target=[^,]*/\.cache/uv\b", m) for m in mounts)


def _copies_path(copy: Copy, path: str) -> bool:
    return copy.from_ is None and any(_norm(s) == path for s in copy.sources)


def _copies_legacy_core(copy: Copy) -> bool:
    return copy.instruction.cmd == "COPY" and _copies_path(copy, LEGACY_CORE)


def _norm(source: str) -> str:
    return posixpath.normpath(source.removeprefix("./")).rstrip("/")


def _under_any(entry: str, dirs: set[str]) -> bool:
    entry = posixpath.normpath(entry)
    return any(entry == d or entry.startswith(d.rstrip("/") + "/") for d in dirs)


def _text_of_lines(text: str, start: int, end: int) -> str:
    return "".join(split_lines(text)[start - 1 : end]).rstrip("\r\n")
