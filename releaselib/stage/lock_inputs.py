"""What a staged env's build installs with Python tools, read for the lock: requirement lines,
index options and constraints, from the files staging pinned and the Dockerfile's RUN lines.

Left out of the resolution, and named: the OpenEnv requirement (its own dependencies come from
the release's OpenEnv pyproject instead, ``openenv_dependencies``) and every other direct URL or
path requirement (git, archives, local projects), which the lock cannot pin to a version.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from releaselib.dockerfile_syntax.parse import Stage
from releaselib.dockerfile_syntax.words import expand, key_values
from releaselib.edit import install_sources, shell_reader
from releaselib.edit.dockerfile_model import OPENENV_BASE_IMAGE, Dockerfile
from releaselib.edit.git_packages import shell_text
from releaselib.edit.requirement import OPENENV_DISTS
from releaselib.errors import StageError
from releaselib.stage import git_needs

#: The Space's Python when no stage names one: openenv-base is built on python:3.11-slim.
DEFAULT_PYTHON = "3.11"
_PYTHON_IMAGE = re.compile(r"(?:^|/)python:(\d+\.\d+)")
#: Requirements-file options that change where packages come from: kept for the resolution.
_INDEX_OPTIONS = ("--index-url", "-i", "--extra-index-url", "-f", "--find-links", "--no-index")


@dataclass
class LockInputs:
    """What one env's resolution reads, in a stable order."""

    requirements: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=list)
    openenv_extras: set[str] = field(default_factory=set)
    openenv: bool = False
    unpinned: list[str] = field(default_factory=list)  # direct URL/path requirements, by name
    own: set[str] = field(default_factory=set)  # the env's own project names
    python: str = DEFAULT_PYTHON

    def add(self, line: str, *, constraint: bool = False) -> None:
        """Sort one requirement line: OpenEnv, a URL/path one, or one to resolve."""
        try:
            req = Requirement(line)
        except InvalidRequirement:
            return  # a path or an expanded variable: nothing a version can pin
        name = canonicalize_name(req.name)
        if name in OPENENV_DISTS:
            self.openenv = self.openenv or not constraint
            self.openenv_extras |= req.extras
        elif req.url:
            self.unpinned.append(name)
        elif name not in self.own:
            (self.constraints if constraint else self.requirements).append(str(req))

    def text(self) -> str:
        """The resolution's input file: options, then requirements (constraints apart)."""
        lines = [*dict.fromkeys(self.options), *sorted(set(self.requirements))]
        return "".join(f"{line}\n" for line in lines)


def gather(df: Dockerfile, stage_dir: Path) -> LockInputs:
    """The lock inputs of the staged tree ``stage_dir`` built by ``df``."""
    found = LockInputs(python=space_python(df))
    files = git_needs.build_files(df, stage_dir)
    constraint_files = git_needs.constraint_only(df, stage_dir, files)
    tomls = [f for f in files if f.suffix == ".toml"]
    for file in tomls:
        found.own |= own_names(file)
    for file in tomls:
        for line in pyproject_requirements(file):
            found.add(line)
        found.options += pyproject_index_options(file)
    for file in files:
        if file.suffix != ".toml":
            for kind, line in requirement_lines(file):
                if kind == "option":
                    found.options.append(line)
                else:
                    found.add(line, constraint=file in constraint_files)
    for line in own_constraints(df, stage_dir, tomls):
        found.add(line, constraint=True)
    for instr in df.instructions:
        if instr.cmd == "RUN":
            for value in installed_packages(shell_text(instr)):
                found.add(value)
            found.options += run_index_options(shell_text(instr))
    return found


def own_constraints(df: Dockerfile, stage_dir: Path, tomls: list[Path]) -> Iterator[str]:
    """The env's own constraints: files its ``PIP_CONSTRAINT``/``UV_CONSTRAINT`` ENV names and
    its pyprojects' ``[tool.uv] constraint-dependencies``. A file the staged tree does not hold
    is a StageError naming the Dockerfile line: the lock could not honour it."""
    for stage in df.stages:
        for instr in df.stage_instructions(stage):
            if instr.cmd != "ENV":
                continue
            for key, value in key_values(instr):
                if key not in ("PIP_CONSTRAINT", "UV_CONSTRAINT"):
                    continue
                for path in expand(value, df.stage_env(stage)).split():
                    found = git_needs.in_tree(df, stage, path, stage_dir)
                    if found is None or not found.is_file():
                        raise StageError(
                            f"Dockerfile line {instr.start_line}: {key}={value} names {path}, "
                            "which the build context does not hold, so the lock cannot honour it",
                            remedy="COPY the constraints file from the env folder, or drop the ENV",
                        )
                    yield from (s for k, s in requirement_lines(found) if k == "requirement")
    for file in tomls:
        yield from strings(table(read_toml(file), "tool", "uv").get("constraint-dependencies"))


def pyproject_index_options(file: Path) -> list[str]:
    """``[tool.uv]`` index settings (``index``, ``find-links``, ``no-index`` and the older
    ``index-url``/``extra-index-url``) as requirements-file options."""
    uv_table = table(read_toml(file), "tool", "uv")
    options = ["--no-index"] if uv_table.get("no-index") is True else []
    for index in uv_table.get("index", []) if isinstance(uv_table.get("index"), list) else []:
        if isinstance(index, dict) and isinstance(index.get("url"), str):
            flag = "--index-url" if index.get("default") is True else "--extra-index-url"
            options.append(f"{flag} {index['url']}")
    for key, flag in (("index-url", "--index-url"), ("extra-index-url", "--extra-index-url")):
        options += [f"{flag} {url}" for url in strings(_listed(uv_table.get(key)))]
    options += [f"--find-links {link}" for link in strings(uv_table.get("find-links"))]
    return options


def _listed(value: object) -> object:
    return [value] if isinstance(value, str) else value


def run_index_options(command: str) -> list[str]:
    """Index options of the pip and uv install commands in a RUN's text."""
    options = []
    for words in shell_reader.simple_commands(command):
        words = shell_reader.command_words(words)
        tool = words[0].rsplit("/", 1)[-1] if words else ""
        pip = tool.startswith("pip") or (tool.startswith("python") and words[1:3] == ["-m", "pip"])
        if not (pip or tool == "uv") or "install" not in words:
            continue
        for at, word in enumerate(words):
            name, eq, value = word.partition("=")
            if name in _INDEX_OPTIONS and name != "--no-index":
                value = value if eq else (words[at + 1] if at + 1 < len(words) else "")
                if value and "$" not in value:
                    options.append(f"{name} {value}")
            elif word == "--no-index":
                options.append(word)
    return options


def installs_python(df: Dockerfile, stage_dir: Path) -> bool:
    """Whether any RUN of ``df`` installs Python packages (files, projects or named ones)."""
    for stage in df.stages:
        for instr in df.stage_instructions(stage):
            if instr.cmd != "RUN":
                continue
            if next(install_sources.run_installs(df, stage, instr), None) is not None:
                return True
            if next(installed_packages(shell_text(instr)), None) is not None:
                return True
    return False


def installs_at_run_time(df: Dockerfile) -> str | None:
    """The command line of the final stage's CMD/ENTRYPOINT when it installs packages."""
    for instr in df.stage_instructions(df.final_stage):
        if instr.cmd in ("CMD", "ENTRYPOINT"):
            text = shlex.join(instr.value) if instr.json else " ".join(instr.value)
            if next(installed_packages(text), None) is not None or re.search(
                r"\buv\s+sync\b", text
            ):
                return text
    return None


def installed_packages(command: str, depth: int = 0) -> Iterator[str]:
    """The packages ``command`` gives an installer, inside ``sh -c`` strings too."""
    for _, _, value, prefix in shell_reader.install_arguments(command):
        if prefix is None:
            if depth < 3:
                yield from installed_packages(value, depth + 1)
        elif "$" not in value:
            yield value


def space_python(df: Dockerfile) -> str:
    """The Space's Python version (X.Y): that of the stages that install Python packages
    (``install_pythons``; the first when they differ), else that of the first stage whose base
    names one, else DEFAULT_PYTHON (openenv-base and images that do not name it)."""
    installing = install_pythons(df)
    if installing:
        return next(iter(installing))
    for stage in df.stages:
        found = stage_python(df, stage)
        if found:
            return found
    return DEFAULT_PYTHON


def install_pythons(df: Dockerfile) -> dict[str, list[str]]:
    """The Python versions (X.Y) of the stages whose RUNs install Python packages, each with
    the base images of those stages: more than one version, and no lock fits them all."""
    found: dict[str, list[str]] = {}
    for stage in df.stages:
        version = stage_python(df, stage)
        if version and any(
            instr.cmd == "RUN"
            and (
                next(install_sources.run_installs(df, stage, instr), None) is not None
                or next(installed_packages(shell_text(instr)), None) is not None
            )
            for instr in df.stage_instructions(stage)
        ):
            found.setdefault(version, []).append(df.resolved_base(stage))
    return found


def stage_python(df: Dockerfile, stage: Stage) -> str | None:
    """The Python (X.Y) a stage runs: its ``python:X.Y`` base, followed through the earlier
    stages it is built FROM; DEFAULT_PYTHON on openenv-base; None for other images."""
    at: Stage | None = stage
    while at is not None:
        image = df.resolved_base(at)
        match = _PYTHON_IMAGE.search(image)
        if match:
            return match.group(1)
        if OPENENV_BASE_IMAGE.fullmatch(image):
            return DEFAULT_PYTHON
        at = df.parent(at)
    return None


def unreadable_project(df: Dockerfile, stage_dir: Path) -> str | None:
    """The first local project or archive a RUN installs whose dependencies the lock cannot
    read (a ``setup.py``/``setup.cfg`` project, dynamic dependencies, a wheel or sdist), as
    written in the RUN; None when every one is a pyproject with static dependencies."""
    for stage in df.stages:
        for instr in df.stage_instructions(stage):
            if instr.cmd != "RUN":
                continue
            scope = df.scope_at(stage, instr)
            for words in shell_reader.shell_commands(shell_text(instr)):
                words = shell_reader.command_words(words)
                for kind, path in install_sources.installed(words):
                    image = expand(path, scope)
                    cwd = df.workdir(stage, at=instr) or "/"
                    full = image if image.startswith("/") else f"{cwd.rstrip('/')}/{image}"
                    found = git_needs.in_tree(df, stage, full, stage_dir)
                    if kind == "project" and found is not None and not _static_project(found):
                        return path
    return None


def _static_project(found: Path) -> bool:
    """True if ``found`` is a project folder whose pyproject lists its dependencies statically."""
    project = table(read_toml(found / "pyproject.toml"), "project") if found.is_dir() else {}
    dynamic = project.get("dynamic")
    return bool(project.get("name")) and "dependencies" not in (
        dynamic if isinstance(dynamic, list) else []
    )


def read_toml(file: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def table(doc: dict[str, Any], *keys: str) -> dict[str, Any]:
    """The table at ``keys`` in a parsed TOML document ({} where any is missing or no table)."""
    found: Any = doc
    for key in keys:
        found = found.get(key) if isinstance(found, dict) else None
    return found if isinstance(found, dict) else {}


def own_names(file: Path) -> set[str]:
    """The project's own name, and the names its ``[tool.uv.sources]`` take from elsewhere."""
    doc = read_toml(file)
    names = {canonicalize_name(n) for n in table(doc, "tool", "uv", "sources")}
    own = table(doc, "project").get("name")
    return names | ({canonicalize_name(own)} if isinstance(own, str) else set())


def pyproject_requirements(file: Path) -> Iterator[str]:
    """``[project].dependencies`` and the ``dev`` group ``uv sync`` installs by default."""
    doc = read_toml(file)
    yield from strings(table(doc, "project").get("dependencies"))
    yield from strings(table(doc, "dependency-groups").get("dev"))
    yield from strings(table(doc, "tool", "uv").get("dev-dependencies"))


def strings(value: object) -> Iterator[str]:
    if isinstance(value, list):
        yield from (v for v in value if isinstance(v, str))


def requirement_lines(file: Path) -> Iterator[tuple[str, str]]:
    """("option", line) for index options, ("requirement", spec) for requirement lines of a
    requirements file (includes are files of their own in ``git_needs.build_files``)."""
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return
    for line in re.sub(r"\\\r?\n", " ", text).splitlines():
        line = re.sub(r"(^|\s)#.*", "", line).strip()
        if not line:
            continue
        if line.startswith("-"):
            if line.split("=", 1)[0].split()[0] in _INDEX_OPTIONS:
                yield "option", line
            continue
        yield "requirement", re.split(r"\s+--?\w", line, maxsplit=1)[0]
