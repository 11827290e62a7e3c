"""What a Space's Dockerfile installs with Python tools, read from the RUN steps of the stages its
final stage needs, and the model of what its base image lacks.

Commands are read as staging reads them (``releaselib.edit.shell_reader.shell_commands``: after
``&&``, ``;``, ``||``, ``|``, shell keywords, ``sudo`` and ``VAR=x``, and inside ``sh -c``).
Recognised: ``uv sync`` (the project in WORKDIR; ``--no-install-project`` installs its
dependencies only), ``pip``/``pip3``/``python -m pip``/``uv pip install`` with ``-r`` files,
``-e`` paths, project paths and named packages. Whether git is installed or removed is judged by
staging's own git check (``releaselib.edit.git_packages``), so the two cannot disagree on it. Image
paths are mapped onto the laid-out stage roots.

The base-image model, written from the images' Dockerfiles: ``ghcr.io/huggingface/openenv-base``
(``src/openenv/core/containers/images/Dockerfile``) installs only curl and ca-certificates on
``python:3.11-slim``, and the ``python:*-slim`` images carry no git. So a stage on either that
installs a ``git+`` requirement before installing git fails, as pip or uv fails there. What
openenv-base (and its old name ``envtorch-base``) does carry is the OpenEnv checkout's own
dependencies: it runs ``uv pip install --system -r pyproject.toml`` on the checkout it is built
from, so a Space that relies on them (fastapi, uvicorn…) without installing them runs there
(``base_image_installs``).
"""

from __future__ import annotations

import fnmatch
import posixpath
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from releaselib.dockerfile_syntax.words import expand
from releaselib.edit import git_packages, shell_reader
from releaselib.space_runtime.plan import BuildError, RunStep, StagePlan
from releaselib.space_runtime.process import Layout

#: Images without git, by the model above (fnmatch patterns on the FROM reference).
GITLESS_IMAGES = ("ghcr.io/huggingface/openenv-base*", "python:*-slim*", "*/python:*-slim*")
#: Images that carry the OpenEnv checkout's dependencies, by the model above.
OPENENV_BASE_IMAGES = ("ghcr.io/huggingface/openenv-base*", "openenv-base*", "envtorch-base*")
#: What each tool prints when a git+ requirement meets an image without git.
NO_GIT_MESSAGES = {
    "uv": (
        "error: Failed to download and build `{requirement}`\n"
        "  Caused by: Git operation failed\n"
        "  Caused by: Git executable not found. Ensure that Git is installed and available."
    ),
    "pip": (
        "ERROR: Error [Errno 2] No such file or directory: 'git' while executing command "
        "git version\n"
        "ERROR: Cannot find command 'git' - do you have 'git' installed and in your PATH?"
    ),
}
_VALUE_FLAGS = {"-r", "--requirement", "-e", "--editable", "-c", "--constraint"}
_PASSED_VALUE_FLAGS = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links"}
_DROPPED_VALUE_FLAGS = {"--python", "-p", "--target", "-t", "--prefix", "--root", "--cache-dir"}
_PASSED_FLAGS = {"--no-deps", "--pre", "--upgrade", "-U"}


@dataclass(frozen=True)
class Install:
    """One install command: ``args`` for ``uv pip install`` and the requirements it declares."""

    line: int
    tool: str  # "uv" or "pip": whose error messages a failure reads like
    args: tuple[str, ...]
    requirements: tuple[str, ...]
    command: str
    pins: tuple[str, ...] = ()  # constraints given as lines ([tool.uv] constraint-dependencies)


def plan_installs(layout: Layout) -> list[Install]:
    """The installs of every stage the final one needs, in build order, duplicates once.

    Raises BuildError, with the tool's own message, for a git+ requirement on an image without git.
    """
    installs: list[Install] = []
    has_git: dict[int, bool] = {}
    for index in sorted(layout.roots):
        stage = layout.plan.stages[index]
        git = has_git[stage.base_stage] if stage.base_stage is not None else _image_has_git(stage)
        for run in stage.runs:
            for words in shell_reader.shell_commands(run.text):
                words = [expand(w, run.scope) for w in shell_reader.command_words(words)]
                if git_packages.command_installs_git(words):
                    git = True
                    continue
                install = _install(words, run, layout.roots[index])
                if install is None or any(i.args == install.args for i in installs):
                    continue
                needs_git = [r for r in install.requirements if "git+" in r.replace(" ", "")]
                if needs_git and not git:
                    raise BuildError(
                        f"line {run.line}: {install.command}\n"
                        + NO_GIT_MESSAGES[install.tool].format(requirement=needs_git[0])
                    )
                installs.append(install)
            git = git and not git_packages.removes_git(run.text)
        has_git[index] = git
    return installs


def base_image_installs(layout: Layout, openenv: Path | None) -> list[Install]:
    """What the base image brings, as one install before the Dockerfile's, when a stage the
    final one needs is built FROM an openenv-base image: the dependencies of the OpenEnv
    checkout ``openenv`` and its ``core`` extra (in OpenEnv a subset of them; in a stand-in
    checkout such as ``examples/``, the runtime), or openenv-core's without a checkout."""
    stages = [layout.plan.stages[i] for i in layout.roots]
    if not any(_from_image(stage, OPENENV_BASE_IMAGES) for stage in stages):
        return []
    command = "(base image) uv pip install --system -r pyproject.toml"
    if openenv is None or not (openenv / "pyproject.toml").is_file():
        return [Install(0, "uv", ("openenv-core",), ("openenv-core",), command)]
    project = _project_table(openenv)
    core = tuple(project.get("optional-dependencies", {}).get("core", ()))
    extra = ("--extra", "core") if core else ()
    requirements = (*project.get("dependencies", ()), *core)
    args = ("-r", str(openenv / "pyproject.toml"), *extra)
    return [Install(0, "uv", args, requirements, command)]


def _image_has_git(stage: StagePlan) -> bool:
    return not _from_image(stage, GITLESS_IMAGES)


def _from_image(stage: StagePlan, patterns: tuple[str, ...]) -> bool:
    """Whether ``stage`` is built FROM an image matching one of the fnmatch ``patterns``."""
    image = (stage.image or "").lower()
    return any(fnmatch.fnmatch(image, pattern) for pattern in patterns)


def _install(words: list[str], run: RunStep, root: Path) -> Install | None:
    head = words[:4]
    if head[:2] == ["uv", "sync"]:
        return _uv_sync(words[2:], run, root)
    for prefix, tool in (
        (["uv", "pip", "install"], "uv"),
        (["pip", "install"], "pip"),
        (["pip3", "install"], "pip"),
        (["python", "-m", "pip", "install"], "pip"),
        (["python3", "-m", "pip", "install"], "pip"),
    ):
        if head[: len(prefix)] == prefix:
            return _pip_install(words[len(prefix) :], tool, run, root)
    return None


def _uv_sync(flags: list[str], run: RunStep, root: Path) -> Install:
    """``uv sync`` takes constraints only from the project's ``[tool.uv]
    constraint-dependencies`` (it reads no UV_CONSTRAINT), so those are its pins."""
    project = _mapped(".", run, root)
    if "--no-install-project" in flags:
        args: tuple[str, ...] = ("-r", str(project / "pyproject.toml"))
    elif "--no-editable" in flags:
        args = (str(project),)
    else:
        args = ("-e", str(project))
    command = " ".join(["uv", "sync", *flags])
    uv_table = _tool_uv(project)
    pins = tuple(p for p in uv_table.get("constraint-dependencies", ()) if isinstance(p, str))
    return Install(run.line, "uv", args, _project_requirements(project), command, pins)


def _env_constraints(tool: str, run: RunStep, root: Path) -> list[str]:
    """``-c`` arguments for the constraints files the stage's environment names, as the tool
    reads them: pip ``PIP_CONSTRAINT``, ``uv pip`` ``UV_CONSTRAINT`` (each a space-separated
    list of files)."""
    value = run.scope.get("PIP_CONSTRAINT" if tool == "pip" else "UV_CONSTRAINT", "")
    return [arg for path in value.split() for arg in ("-c", str(_mapped(path, run, root)))]


def _pip_install(words: list[str], tool: str, run: RunStep, root: Path) -> Install:
    args: list[str] = []
    requirements: list[str] = []
    items = iter(words)
    for word in items:
        flag, _, inline = word.partition("=") if word.startswith("--") else (word, "", "")
        if flag in _VALUE_FLAGS | _PASSED_VALUE_FLAGS | _DROPPED_VALUE_FLAGS:
            value = inline or next(items, "")
            if flag in _VALUE_FLAGS:
                path = _mapped(value, run, root)
                args += [flag, str(path)]
                if flag in ("-r", "--requirement"):
                    requirements += _file_requirements(path)
                elif flag in ("-e", "--editable"):
                    requirements += _project_requirements(path)
            elif flag in _PASSED_VALUE_FLAGS:
                args += [flag, value]
        elif word.startswith("-"):
            args += [word] if word in _PASSED_FLAGS else []
        elif _is_path(word):
            path = _mapped(word, run, root)
            args.append(str(path))
            requirements += _project_requirements(path)
        else:
            args.append(word)
            requirements.append(word)
    command = " ".join([*(["uv", "pip"] if tool == "uv" else ["pip"]), "install", *words])
    args += _env_constraints(tool, run, root)
    return Install(run.line, tool, tuple(args), tuple(requirements), command)


def _is_path(word: str) -> bool:
    return word.startswith((".", "/")) and "://" not in word and " @ " not in word


def _mapped(path: str, run: RunStep, root: Path) -> Path:
    absolute = posixpath.normpath(posixpath.join(run.workdir, path))
    return root / absolute.lstrip("/")


def _project_table(project: Path) -> dict[str, Any]:
    """The ``[project]`` table of ``project``'s pyproject.toml ({} if unreadable)."""
    try:
        data = tomllib.loads((project / "pyproject.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    table = data.get("project", {})
    return table if isinstance(table, dict) else {}


def _tool_uv(project: Path) -> dict[str, Any]:
    """The ``[tool.uv]`` table of ``project``'s pyproject.toml ({} if none)."""
    try:
        data = tomllib.loads((project / "pyproject.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    tool = data.get("tool")
    table = tool.get("uv") if isinstance(tool, dict) else None
    return table if isinstance(table, dict) else {}


def _project_requirements(project: Path) -> tuple[str, ...]:
    return tuple(_project_table(project).get("dependencies", []))


def _file_requirements(path: Path) -> list[str]:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    stripped = (line.split(" #", 1)[0].strip() for line in lines)
    return [line for line in stripped if line and not line.startswith(("#", "-"))]
