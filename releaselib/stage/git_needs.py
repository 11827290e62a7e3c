"""Which RUNs of a staged Dockerfile need git the stage lacks, read from the staged tree.

Staging turns OpenEnv requirements into ``git+https://`` URLs, and neither the openenv-base
image nor ``python:*-slim`` ships git. A RUN needs git when it installs a git+ requirement:
named on its command line, in a requirements file it reads with ``-r``/``-c`` (followed through
nested ``-r``/``-c``), in the pyproject of a project it installs (``uv sync``, ``pip install .``,
``pip install ./path``), or in the ``Pipfile`` that ``pipenv install`` reads. Files are found in
the staged tree by following the stage's COPYs back from the RUN's working directory (ENV/ARG
expanded); an install that cannot be followed to a file (a bind mount, a variable) needs git
when the tree names any git+ requirement, and a RUN that removes git leaves the RUNs after it
without. The staging rewrite (``rewrite_for_space``
with a context) and the ``git-for-git-deps`` check both use :func:`missing_git`, so the check
proves the fix; the fix itself is ``releaselib.edit.git_packages.install_git``.
"""

from __future__ import annotations

import posixpath
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

from releaselib.dockerfile_syntax.parse import Copy, Instruction, Stage
from releaselib.edit.dockerfile_model import Dockerfile
from releaselib.edit.git_packages import git_after, git_at_start, installs_git, shell_text
from releaselib.edit.install_sources import run_installs
from releaselib.errors import StageError

_GIT_URL = re.compile(r"git\+(?:https?|ssh|git|file)://\S+")


def missing_git(df: Dockerfile, root: Path) -> Iterator[tuple[Stage, Instruction, str]]:
    """(stage, RUN, what needs git) for each RUN that needs git the stage lacks at that point:
    git is there from the base or a parent stage, or installed by an earlier RUN, and gone
    after a RUN that removes it (``apt-get purge git``, ``apk del`` of a virtual with git)."""
    for stage in df.stages:
        has_git = git_at_start(df, stage)
        for instr in df.stage_instructions(stage)[1:]:
            if instr.cmd != "RUN":
                continue
            text = shell_text(instr)
            if not has_git and not installs_git(text):
                need = git_need(df, stage, instr, root)
                if need:
                    yield stage, instr, need
            has_git = git_after(text, has_git)


def git_need(df: Dockerfile, stage: Stage, instr: Instruction, root: Path) -> str | None:
    """What in this RUN needs git: a git+ URL, a requirements file or a project naming one.

    An install of a file or project not found in the staged tree (a variable, a bind mount, a
    path outside the COPYs) needs git if anything in the tree names a git+ requirement.
    """
    text = shell_text(instr)
    url = _GIT_URL.search(text)
    if url:
        return url.group()
    for kind, path in run_installs(df, stage, instr):
        found = in_tree(df, stage, path, root) if "$" not in path else None
        if found is None:
            anywhere = tree_git_requirement(root)
            if anywhere:
                return f"{path} (not found in the staged tree, which names {anywhere})"
            continue
        need = _file_need(found, kind, root, set())
        if need:
            return need
    return None


def tree_git_requirement(root: Path) -> str | None:
    """The first git+ requirement of any requirements file or pyproject in the staged tree."""
    for file in sorted(root.rglob("*")):
        if ".git" in file.parts or not file.is_file():
            continue
        if file.name == "pyproject.toml" or (file.suffix == ".txt" and "requirement" in file.name):
            need = _file_need(file, "requirements", root, set())
            if need:
                return need
    return None


def installed_files(df: Dockerfile, root: Path) -> list[Path]:
    """Every requirements file and pyproject in ``root`` that a RUN of ``df`` installs from,
    with the files those requirements files include through ``-r``/``-c``."""
    found = [
        f
        for kind, file in installed_from(df, root)
        if kind != "pipfile"
        for f in with_includes(file)
    ]
    return list(dict.fromkeys(found))


def installed_from(df: Dockerfile, root: Path) -> Iterator[tuple[str, Path]]:
    """(kind, staged-tree file) for each file or project a RUN of ``df`` installs from."""
    for stage in df.stages:
        for instr in df.stage_instructions(stage):
            if instr.cmd == "RUN":
                for kind, path in run_installs(df, stage, instr):
                    file = in_tree(df, stage, path, root)
                    if file is not None:
                        yield kind, file


def env_constraint_files(df: Dockerfile, root: Path) -> list[Path]:
    """The staged files an ``ENV PIP_CONSTRAINT``/``UV_CONSTRAINT`` of ``df`` names: every pip
    (or uv pip) of the build after it reads them as ``-c`` files."""
    from releaselib.dockerfile_syntax.words import expand, key_values

    found: list[Path] = []
    for stage in df.stages:
        for instr in df.stage_instructions(stage):
            if instr.cmd != "ENV":
                continue
            for key, value in key_values(instr):
                if key in ("PIP_CONSTRAINT", "UV_CONSTRAINT"):
                    for path in expand(value, df.stage_env(stage)).split():
                        file = in_tree(df, stage, path, root)
                        if file is not None and file.is_file():
                            found.append(file)
    return list(dict.fromkeys(found))


def outside_src(root: Path, pattern: str) -> list[Path]:
    """``sorted(root.rglob(pattern))`` less what is under the top-level ``src/`` (OpenEnv's own
    code), which is never walked."""
    found = [p for p in root.glob(pattern) if p.name != "src"]
    for top in root.iterdir():
        if top.name != "src" and top.is_dir() and not top.is_symlink():
            found += top.rglob(pattern)
    return sorted(found)


def conda_environments(root: Path) -> list[Path]:
    """The conda environment files (``environment*.yml``/``.yaml``) of a staged tree, outside
    ``src/`` (OpenEnv's own code)."""
    return [
        f
        for f in outside_src(root, "environment*.y*ml")
        if f.is_file() and f.suffix in (".yml", ".yaml")
    ]


def build_files(df: Dockerfile, root: Path) -> list[Path]:
    """Every requirements file and pyproject of the staged tree the build may read: the root's
    and each env's pyproject, ``requirements*.txt`` outside ``src/`` with their includes, and
    whatever a RUN installs from."""
    named = outside_src(root, "requirements*.txt")
    pyprojects = [root / "pyproject.toml", *sorted(root.glob("envs/*/pyproject.toml"))]
    files = [*pyprojects, *(f for n in named for f in with_includes(n)), *installed_files(df, root)]
    return [f for f in dict.fromkeys(files) if f.is_file()]


def constraint_only(df: Dockerfile, root: Path, files: list[Path]) -> set[Path]:
    """The requirements files among ``files`` read only through ``-c`` (by another file, a RUN
    of ``df`` or its ``PIP_CONSTRAINT`` ENV), never installed from: pip refuses URLs and extras
    in them."""
    from releaselib.edit import requirements_txt  # lazily: tomlkit and packaging load slowly

    read: dict[str, set[Path]] = {"-c": set(), "-r": set()}
    for file in files:
        if file.suffix != ".toml":
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            for option, include in requirements_txt.includes(text):
                read[option].add((file.parent / include).resolve())
    for kind, found in installed_from(df, root):
        read["-c" if kind == "constraints" else "-r"].add(found.resolve())
    read["-c"] |= {f.resolve() for f in env_constraint_files(df, root)}
    return {f for f in files if f.resolve() in read["-c"] - read["-r"]}


def with_includes(file: Path, seen: set[Path] | None = None) -> list[Path]:
    """``file`` (a pyproject for a project folder) and the files it includes, recursively."""
    from releaselib.edit import requirements_txt  # lazily: tomlkit and packaging load slowly

    seen = set() if seen is None else seen
    if file.is_dir():
        file = file / "pyproject.toml"
    if file in seen or not file.is_file():
        return []
    seen.add(file)
    if file.suffix == ".toml":
        return [file]
    try:
        includes = requirements_txt.included_files(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        includes = []
    return [file, *(f for i in includes for f in with_includes(file.parent / i, seen))]


def _file_need(found: Path, kind: str, root: Path, seen: set[Path]) -> str | None:
    """The git+ requirement ``found`` (a requirements file, a project) leads to, if any."""
    from releaselib.edit import requirements_txt  # lazily: tomlkit and packaging load slowly

    if found.is_dir():
        found = found / "pyproject.toml"
    if found in seen or not found.is_file():
        return None
    seen.add(found)
    shown = found.relative_to(root).as_posix()
    if kind == "pipfile":
        from releaselib.edit import pipfile

        try:
            need = pipfile.git_entry(found.read_text(encoding="utf-8"), shown)
        except (OSError, UnicodeDecodeError, StageError):
            return None
        return f"{shown}'s {need}" if need else None
    if found.suffix == ".toml":
        need = pyproject_git_requirement(found)
        return f"{shown}'s {need}" if need else None
    if kind == "project":
        return None
    try:
        text = found.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    for line in text.splitlines():
        body = re.split(r"(?:^|\s)#", line, maxsplit=1)[0]
        url = _GIT_URL.search(body)
        if url:
            return f"{url.group()} (in {shown})"
    for include in requirements_txt.included_files(text):
        need = _file_need(found.parent / include, "requirements", root, seen)
        if need:
            return need
    return None


def pyproject_git_requirement(pyproject: Path) -> str | None:
    """The first git+ dependency or git source of a pyproject, if any."""
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    project = data.get("project", {})
    requirements = list(project.get("dependencies", []))
    for values in [*project.get("optional-dependencies", {}).values()]:
        requirements += values
    for values in data.get("dependency-groups", {}).values():
        requirements += values
    uv = data.get("tool", {}).get("uv", {})
    requirements += uv.get("dev-dependencies", []) + uv.get("override-dependencies", [])
    poetry = data.get("tool", {}).get("poetry", {}).get("dependencies", {})
    for name, entry in poetry.items():
        if isinstance(entry, dict) and "git" in entry:
            return f"poetry dependency {name} (git)"
    for requirement in requirements:
        if isinstance(requirement, str) and _GIT_URL.search(requirement):
            return f"dependency {requirement!r}"
    for name, source in data.get("tool", {}).get("uv", {}).get("sources", {}).items():
        entries = source if isinstance(source, list) else [source]
        if any(isinstance(e, dict) and "git" in e for e in entries):
            return f"uv source {name} (git)"
    return None


# -- image paths back to the staged tree ---------------------------------------------------------


def in_tree(df: Dockerfile, stage: Stage, path: str, root: Path) -> Path | None:
    """The staged-tree path that lands at ``path`` in ``stage``'s image, if one does.

    Follows the stage's COPYs, latest first, back through ``--from=<stage>`` and FROM <stage>.
    """
    for copy in reversed(df.copies(stage)):
        rest = _relative(path, copy.target)
        if rest is None:
            continue
        for source in reversed(copy.sources):
            found = _source_path(df, copy, source, rest, root)
            if found is not None:
                return found
    parent = df.parent(stage)
    return in_tree(df, parent, path, root) if parent is not None else None


def _source_path(df: Dockerfile, copy: Copy, source: str, rest: str, root: Path) -> Path | None:
    if copy.from_ is not None:
        try:
            origin = df.stage(copy.from_)
        except KeyError:
            return None  # copied out of an image: nothing of the tree
        return in_tree(df, origin, posixpath.join("/", source, rest).rstrip("/"), root)
    base = root / source.lstrip("/")
    if base.is_dir():
        candidate = base / rest if rest else base
    elif rest in ("", base.name):  # a file copied to that path, or into that directory
        candidate = base
    else:
        return None
    return candidate if candidate.exists() else None


def _relative(path: str, target: str) -> str | None:
    path, target = posixpath.normpath(path), posixpath.normpath(target)
    if path == target:
        return ""
    prefix = target.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else None
