"""The built-in static checks of a staged Space tree, as a plugin.

A staged tree has ``Dockerfile`` and ``README.md`` at its root, the env's files at the root,
``envs/<env>/`` and ``src/``; it is the Docker build context. Every finding names the file and
line and says what to do. Checks that read the Dockerfile find nothing when it is missing or
unparseable; ``dockerfile-parses`` reports that once.
"""

from __future__ import annotations

import json
import posixpath
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

from releaselib.edit.dockerfile import Copy, Dockerfile, Instruction, Stage
from releaselib.errors import StageError
from releaselib.hookspecs import hookimpl
from releaselib.records import Check, Finding

DOCKERFILE = "Dockerfile"
README = "README.md"
INSTALL_GIT = (
    "RUN apt-get update && apt-get install -y --no-install-recommends git "
    "&& rm -rf /var/lib/apt/lists/*"
)
# A package-manager install whose package list names git (not git-lfs, not libgit2).
_GIT_INSTALL = re.compile(
    r"\b(?:apt-get|apt|apk|yum|dnf|microdnf)\b[^;&|]*?\b(?:install|add)\b"
    r"[^;&|]*?(?<![\w.+-])git(?:=\S*)?(?![\w.+-])"
)
_GIT_URL = re.compile(r"git\+(?:https?|ssh|git|file)://\S+")
_PIP_INSTALL = re.compile(r"\bpip3?\s+install\b([^;&|]*)")
_UV_SYNC = re.compile(r"\buv\s+sync\b")


@hookimpl
def openenv_release_checks() -> tuple[Check, ...]:
    return (
        Check("dockerfile-parses", "the staged Dockerfile exists and parses", check_parses),
        Check(
            "stdlib-shadowing",
            "no PYTHONPATH directory holds a module named like a stdlib module",
            check_stdlib_shadowing,
        ),
        Check("git-for-git-deps", "git is installed before git+ installs", check_git),
        Check("copy-source-missing", "every COPY source exists in the tree", check_copies),
        Check("cmd-json-form", "the final CMD is in JSON form", check_cmd_form),
        Check("from-unresolved", "no FROM holds a variable", check_from),
        Check("readme-metadata", "the README metadata is what the Hub accepts", check_readme),
    )


# -- the checks ---------------------------------------------------------------------------------


def check_parses(stage_dir: Path) -> Iterator[Finding]:
    path = stage_dir / DOCKERFILE
    if not path.is_file():
        yield Finding("dockerfile-parses", DOCKERFILE, None, "no Dockerfile", "stage the env again")
        return
    try:
        Dockerfile.parse(path.read_text(encoding="utf-8"), DOCKERFILE)
    except StageError as exc:
        yield Finding("dockerfile-parses", DOCKERFILE, None, exc.message, exc.remedy or "")


def check_stdlib_shadowing(stage_dir: Path) -> Iterator[Finding]:
    df = _parsed(stage_dir)
    if df is None:
        return
    line = _python_path_line(df)
    for entry in df.stage_env().get("PYTHONPATH", "").split(":"):
        directory = entry or df.workdir() or "/"  # an empty entry means the working directory
        found = _in_tree(df, df.final_stage, directory, stage_dir)
        if found is None or not found.is_dir():
            continue
        for module, name in _top_level_modules(found):
            if name in sys.stdlib_module_names:
                shown = module.relative_to(stage_dir).as_posix()
                yield Finding(
                    "stdlib-shadowing",
                    DOCKERFILE,
                    line,
                    f"PYTHONPATH entry {directory} holds {shown}, which shadows the stdlib "
                    f"module {name}",
                    f"rename {shown}, or take {directory} off PYTHONPATH (put its parent there "
                    "and import it as a package)",
                )


def check_git(stage_dir: Path) -> Iterator[Finding]:
    df = _parsed(stage_dir)
    if df is None:
        return
    for stage in df.stages:
        has_git = _git_at_start(df, stage)
        for instr in df.stage_instructions(stage)[1:]:
            if instr.cmd != "RUN":
                continue
            if _GIT_INSTALL.search(_shell_text(instr)):
                has_git = True
                continue
            need = None if has_git else _git_dependency(df, stage, instr, stage_dir)
            if need:
                yield Finding(
                    "git-for-git-deps",
                    DOCKERFILE,
                    instr.start_line,
                    f"stage {stage.name or stage.index} installs {need} but has no git",
                    f"install git earlier in the stage: {INSTALL_GIT}",
                )


def check_copies(stage_dir: Path) -> Iterator[Finding]:
    df = _parsed(stage_dir)
    if df is None:
        return
    for stage in df.stages:
        for copy in df.copies(stage):
            for source in _context_sources(copy):
                if not _exists(stage_dir, source):
                    yield Finding(
                        "copy-source-missing",
                        DOCKERFILE,
                        copy.instruction.start_line,
                        f"{copy.instruction.cmd} source {source} is not in the staged tree",
                        "add the file to the env (or a plugin fix that stages it), "
                        "or drop it from the COPY",
                    )


def check_cmd_form(stage_dir: Path) -> Iterator[Finding]:
    df = _parsed(stage_dir)
    cmd = df.cmd() if df is not None else None
    if cmd is not None and not cmd.json:
        yield Finding(
            "cmd-json-form",
            DOCKERFILE,
            cmd.instruction.start_line,
            "the final CMD is in shell form, so signals never reach the server",
            f"write it as CMD {json.dumps(['sh', '-c', cmd.argv[-1]])}",
        )


def check_from(stage_dir: Path) -> Iterator[Finding]:
    df = _parsed(stage_dir)
    for stage in df.stages if df is not None else ():
        if "$" in stage.base:
            yield Finding(
                "from-unresolved",
                DOCKERFILE,
                stage.first.start_line,
                f"FROM {stage.base} holds a variable, and Spaces override build-args "
                "(BASE_IMAGE arrives empty)",
                "write the literal image, or add a plugin fix for this env's base image",
            )


def check_readme(stage_dir: Path) -> Iterator[Finding]:
    path = stage_dir / README
    if not path.is_file():
        yield Finding("readme-metadata", README, None, "no README.md", "stage the env again")
        return
    from releaselib.edit.readme import metadata_problems  # lazily: it loads huggingface_hub

    for line, problem in metadata_problems(path.read_text(encoding="utf-8")):
        yield Finding(
            "readme-metadata", README, line, problem, "fix the README front matter in the env"
        )


# -- Dockerfile helpers -------------------------------------------------------------------------


def _parsed(stage_dir: Path) -> Dockerfile | None:
    try:
        return Dockerfile.parse((stage_dir / DOCKERFILE).read_text(encoding="utf-8"), DOCKERFILE)
    except (OSError, UnicodeDecodeError, StageError):
        return None


def _shell_text(instr: Instruction) -> str:
    return " ".join(instr.value)


def _python_path_line(df: Dockerfile) -> int:
    """The line of the last ENV setting PYTHONPATH for the final stage (else its FROM)."""
    stage: Stage | None = df.final_stage
    while stage is not None:
        setting = [
            i
            for i in df.stage_instructions(stage)
            if i.cmd == "ENV" and "PYTHONPATH" in i.value[::2]
        ]
        if setting:
            return setting[-1].start_line
        stage = df.parent(stage)
    return df.final_stage.first.start_line


def _in_tree(df: Dockerfile, stage: Stage, path: str, root: Path) -> Path | None:
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
    return _in_tree(df, parent, path, root) if parent is not None else None


def _source_path(df: Dockerfile, copy: Copy, source: str, rest: str, root: Path) -> Path | None:
    if copy.from_ is not None:
        try:
            origin = df.stage(copy.from_)
        except KeyError:
            return None  # copied out of an image: nothing of the tree
        return _in_tree(df, origin, posixpath.join("/", source, rest).rstrip("/"), root)
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


def _top_level_modules(directory: Path) -> Iterator[tuple[Path, str]]:
    """(path, module name) for each module or regular package directly in ``directory``."""
    for child in sorted(directory.iterdir()):
        if child.is_file() and child.suffix == ".py":
            yield child, child.stem
        elif child.is_dir() and (child / "__init__.py").is_file():
            yield child, child.name


def _git_at_start(df: Dockerfile, stage: Stage) -> bool:
    """True if the stage starts with git: its parent stage installed it, or its base has it."""
    parent = df.parent(stage)
    if parent is not None:
        return _git_at_start(df, parent) or any(
            _GIT_INSTALL.search(_shell_text(i))
            for i in df.stage_instructions(parent)
            if i.cmd == "RUN"
        )
    return _base_ships_git(df.resolved_base(stage))


def _base_ships_git(image: str) -> bool:
    """Kept simple: the full ``python`` and ``buildpack-deps`` images (Debian with scm tools)
    ship git; slim, alpine and curl variants, openenv-base and anything else are assumed not to."""
    name, _, tag = image.partition(":")
    name = name.removeprefix("docker.io/").removeprefix("library/")
    return name in ("python", "buildpack-deps") and not re.search(
        r"slim|alpine|curl|windows|nanoserver", tag
    )


def _git_dependency(df: Dockerfile, stage: Stage, instr: Instruction, root: Path) -> str | None:
    """What in this RUN needs git: a git+ URL, or a local project with a git+ dependency."""
    text = _shell_text(instr)
    url = _GIT_URL.search(text)
    if url:
        return url.group()
    workdir = df.workdir(stage, at=instr) or "/"
    projects = [workdir] if _UV_SYNC.search(text) else []
    for match in _PIP_INSTALL.finditer(text):
        words = [w.split("[")[0] for w in match.group(1).split()]
        projects += [posixpath.join(workdir, w) for w in words if w.startswith((".", "/"))]
    for project in projects:
        found = _in_tree(df, stage, posixpath.normpath(project), root)
        if found is None or not (found / "pyproject.toml").is_file():
            continue
        dependency = _git_requirement(found / "pyproject.toml")
        if dependency:
            return f"{(found / 'pyproject.toml').relative_to(root).as_posix()}'s {dependency}"
    return None


def _git_requirement(pyproject: Path) -> str | None:
    """The first git+ dependency or git source of a pyproject, if any."""
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    requirements = list(data.get("project", {}).get("dependencies", []))
    for group in data.get("dependency-groups", {}).values():
        requirements += group
    for requirement in requirements:
        if isinstance(requirement, str) and _GIT_URL.search(requirement):
            return f"dependency {requirement!r}"
    for name, source in data.get("tool", {}).get("uv", {}).get("sources", {}).items():
        if isinstance(source, dict) and "git" in source:
            return f"uv source {name} (git)"
    return None


def _context_sources(copy: Copy) -> list[str]:
    """Sources read from the build context: not --from, heredocs, URLs or variables."""
    if copy.from_ is not None:
        return []
    return [
        s
        for s in copy.sources
        if not s.startswith("<<") and "://" not in s and not s.startswith("git@") and "$" not in s
    ]


def _exists(root: Path, source: str) -> bool:
    relative = source.lstrip("/") or "."
    if re.search(r"[*?\[]", relative):
        return any(root.glob(relative))
    return (root / relative).exists()
