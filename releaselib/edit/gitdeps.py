"""Which build stages need git, and the one generic fix that installs it.

Staging turns OpenEnv requirements into ``git+https://`` URLs, and neither the openenv-base
image nor ``python:*-slim`` ships git. A RUN needs git when it installs a git+ requirement:
named on its command line, in a requirements file it reads with ``-r``/``-c`` (followed through
nested ``-r``/``-c``), or in the pyproject of a project it installs (``uv sync``, ``pip install .``,
``pip install ./path``). Files are found in the staged tree by following the stage's COPYs back
from the RUN's working directory (ENV/ARG expanded); an install that cannot be followed to a
file (a bind mount, a variable) needs git when the tree names any git+ requirement, and a RUN
that removes git leaves the RUNs after it without. The staging rewrite (``rewrite_for_space``
with a context) and the ``git-for-git-deps`` check both use :func:`missing_git`, so the check
proves the fix.
"""

from __future__ import annotations

import itertools
import posixpath
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

from releaselib.edit.dockerfile_model import Dockerfile
from releaselib.edit.dockerfile_parse import Copy, Instruction, Stage
from releaselib.edit.dockerfile_words import expand

# Package managers, the verbs that install and remove with each, and their options that take
# a value (so the value is not read as a package or the verb).
PACKAGE_MANAGERS = frozenset({"apt-get", "apt", "apk", "dnf", "yum", "microdnf"})
_INSTALL_VERBS = frozenset({"install", "add"})
_REMOVE_VERBS = frozenset({"remove", "purge", "erase", "del", "autoremove"})
_PM_VALUE_OPTIONS = frozenset(
    {"-o", "--option", "-t", "--target-release", "--virtual", "-X", "--repository", "--setopt"}
)
APT_GIT = (
    "RUN apt-get update && apt-get install -y --no-install-recommends git "
    "&& rm -rf /var/lib/apt/lists/*"
)
APK_GIT = "RUN apk add --no-cache git"
INSTALLS = {
    "apt": APT_GIT,
    "apk": APK_GIT,
    "microdnf": "RUN microdnf install -y git && microdnf clean all",
    "dnf": "RUN dnf install -y git && dnf clean all",
    "yum": "RUN yum install -y git && yum clean all",
}
_RPM_IMAGE = re.compile(r"ubi\d*|fedora|centos|rockylinux|almalinux|amazonlinux|redhat|oraclelinux")
_DEBIAN_IMAGES = frozenset(
    {"debian", "ubuntu", "python", "buildpack-deps", "node", "pytorch", "cuda", "golang", "rust"}
)
_DEBIAN_TAG = re.compile(r"bookworm|bullseye|buster|trixie|jammy|focal|noble|ubuntu|debian|slim")
COMMENT = "# git for the git+ requirements below (added by openenv-release)"
_GIT_URL = re.compile(r"git\+(?:https?|ssh|git|file)://\S+")
_PIP = re.compile(r"(?:.*/)?pip\d*(?:\.\d+)*")
_PYTHON = re.compile(r"(?:.*/)?python\d*(?:\.\d+)*")
_UV = re.compile(r"(?:.*/)?uv")
_UV_VALUE_OPTIONS = frozenset(
    {"--directory", "--project", "--cache-dir", "--config-file", "--color", "--python", "-p"}
)
_PROJECT_OPTIONS = frozenset({"--project", "--directory"})
_INCLUDES = frozenset({"-r", "--requirement", "-c", "--constraint"})
_VALUE_OPTIONS = _INCLUDES | frozenset({"-e", "--editable", "-t", "--target", "--prefix"})
_ROOT_USERS = frozenset({"root", "0", "0:0", "root:root"})


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
            has_git = _git_after(text, has_git)


def _git_after(text: str, had: bool) -> bool:
    """Whether git is there after a RUN with shell ``text`` that began with git or not."""
    if removes_git(text):
        return False
    return had or installs_git(text)


def package_commands(text: str) -> Iterator[tuple[str, str, list[str]]]:
    """(manager, verb, packages) for each package-manager command of a RUN's shell text, read
    from parsed commands (the manager is the command word, also inside ``sh -c``), so text that
    only mentions one (``echo apt-get install git``) is not a command."""
    from releaselib.edit import shell_reader  # lazily: tomlkit and packaging load slowly

    for words in shell_reader.shell_commands(text):
        found = package_command(words)
        if found is not None:
            yield found


def package_command(words: list[str]) -> tuple[str, str, list[str]] | None:
    """(manager, verb, packages) if the simple command ``words`` runs a package manager."""
    words = _command_words(words)
    if not words or posixpath.basename(words[0]) not in PACKAGE_MANAGERS:
        return None
    args: list[str] = []
    skip = False
    for word in words[1:]:
        if skip:
            skip = False
        elif word.startswith("-"):
            skip = word in _PM_VALUE_OPTIONS
        else:
            args.append(word)
    return (posixpath.basename(words[0]), args[0], args[1:]) if args else None


def _is_git(package: str) -> bool:
    """True for the git package, with an optional version (``git=1:2.39*``, ``git>2``)."""
    return re.fullmatch(r"git(?:[=<>~].*)?", package) is not None


def installs_git(text: str) -> bool:
    """True if a RUN's shell text installs the git package with a package manager."""
    return any(_adds_git(command) for command in package_commands(text))


def command_installs_git(words: list[str]) -> bool:
    """True if the simple command ``words`` installs the git package with a package manager."""
    command = package_command(words)
    return command is not None and _adds_git(command)


def _adds_git(command: tuple[str, str, list[str]]) -> bool:
    _, verb, packages = command
    return verb in _INSTALL_VERBS and any(_is_git(p) for p in packages)


def removes_git(text: str) -> bool:
    """True if a RUN removes git: by name, or an apk virtual package that installed it."""
    from releaselib.edit import shell_reader  # lazily: tomlkit and packaging load slowly

    virtuals: set[str] = set()
    for words in shell_reader.shell_commands(text):
        words = _command_words(words)
        if words[:2] == ["apk", "add"] and any(_is_git(w) for w in words):
            virtuals |= {v for o, v in itertools.pairwise(words) if o in ("--virtual", "-t")}
            virtuals |= {w.partition("=")[2] for w in words if w.startswith("--virtual=")}
    for _, verb, packages in package_commands(text):
        if verb in _REMOVE_VERBS and any(_is_git(p) or p in virtuals for p in packages):
            return True
    return False


def install_git(df: Dockerfile, stage: Stage, instr: Instruction) -> str | None:
    """The lines that install git in ``stage`` before ``instr`` with the package manager of its
    base image's family, as root, returning to the stage's user after; None when the family is
    unknown (the ``git-for-git-deps`` check then names the stage)."""
    command = INSTALLS.get(image_family(root_image(df, stage)) or "")
    if command is None:
        return None
    user = user_at(df, stage, instr)
    if user is None or user in _ROOT_USERS:
        return f"{COMMENT}\n{command}"
    return f"{COMMENT}\nUSER root\n{command}\nUSER {user}"


def image_family(image: str) -> str | None:
    """The package manager of an image's distribution, from its name and tag: ``apk`` (Alpine),
    ``apt`` (Debian, Ubuntu and images known to build on them), ``microdnf``/``dnf``/``yum``
    (UBI, Fedora, CentOS, Rocky, Alma, Amazon Linux); None when it cannot tell."""
    repo, _, tag = image.lower().partition("@")[0].rpartition(":")
    if not repo or "/" in tag:  # no tag: the whole reference is the repository
        repo, tag = image.lower().partition("@")[0], ""
    name = repo.rsplit("/", 1)[-1]
    if "alpine" in name or "alpine" in tag:
        return "apk"
    if _RPM_IMAGE.search(repo):
        if "minimal" in repo:
            return "microdnf"
        old = ("amazonlinux" in repo and tag.startswith("2") and not tag.startswith("2023")) or (
            "centos" in repo and tag.startswith("7")
        )
        return "yum" if old else "dnf"
    if name in _DEBIAN_IMAGES or "openenv" in repo or "envtorch" in repo or _DEBIAN_TAG.search(tag):
        return "apt"
    return None


def root_image(df: Dockerfile, stage: Stage) -> str:
    """The image a stage is ultimately built on (through FROM <earlier stage>)."""
    parent = df.parent(stage)
    return root_image(df, parent) if parent is not None else df.resolved_base(stage)


def user_at(df: Dockerfile, stage: Stage, instr: Instruction) -> str | None:
    """The USER in force at ``instr`` (set in this stage or a parent), None when unset."""
    users = [
        i.value[0]
        for i in df.stage_instructions(stage)
        if i.cmd == "USER" and i.value and i.index < instr.index
    ]
    if users:
        return users[-1]
    parent = df.parent(stage)
    return user_at(df, parent, parent.last) if parent is not None else None


def shell_text(instr: Instruction) -> str:
    """The shell text a RUN runs; for a heredoc RUN (``RUN <<EOT``), its body too."""
    text = " ".join(instr.value)
    if text.lstrip().startswith("<<"):
        text += "\n" + "\n".join(instr.text.splitlines()[1:])
    return text


def git_at_start(df: Dockerfile, stage: Stage) -> bool:
    """True if the stage starts with git: its parent stage ends with it, or its base has it."""
    parent = df.parent(stage)
    if parent is None:
        return base_ships_git(df.resolved_base(stage))
    has_git = git_at_start(df, parent)
    for instr in df.stage_instructions(parent)[1:]:
        if instr.cmd == "RUN":
            has_git = _git_after(shell_text(instr), has_git)
    return has_git


def base_ships_git(image: str) -> bool:
    """Kept simple: the full ``python`` and ``buildpack-deps`` images (Debian with scm tools)
    ship git; slim, alpine and curl variants, openenv-base and anything else are assumed not to."""
    name, _, tag = image.partition(":")
    name = name.removeprefix("docker.io/").removeprefix("library/")
    return name in ("python", "buildpack-deps") and not re.search(
        r"slim|alpine|curl|windows|nanoserver", tag
    )


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


def run_installs(df: Dockerfile, stage: Stage, instr: Instruction) -> Iterator[tuple[str, str]]:
    """(kind, image path) for each file or project a RUN installs from, ENV/ARG expanded."""
    from releaselib.edit import shell_reader  # lazily: tomlkit and packaging load slowly

    scope = df.stage_env(stage)
    cwd = df.workdir(stage, at=instr) or "/"
    for words in shell_reader.simple_commands(shell_text(instr)):
        words = _command_words(words)
        if words[:1] == ["cd"] and len(words) == 2:
            cwd = posixpath.join(cwd, expand(words[1], scope))
        for kind, path in _installed(words):
            yield kind, posixpath.normpath(posixpath.join(cwd, expand(path, scope)))


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
    found = [f for _, file in installed_from(df, root) for f in with_includes(file)]
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


def conda_environments(root: Path) -> list[Path]:
    """The conda environment files (``environment*.yml``/``.yaml``) of a staged tree, outside
    ``src/`` (OpenEnv's own code)."""
    return [
        f
        for f in sorted(root.rglob("environment*.y*ml"))
        if f.is_file() and f.suffix in (".yml", ".yaml") and f.relative_to(root).parts[0] != "src"
    ]


def build_files(df: Dockerfile, root: Path) -> list[Path]:
    """Every requirements file and pyproject of the staged tree the build may read: the root's
    and each env's pyproject, ``requirements*.txt`` outside ``src/`` with their includes, and
    whatever a RUN installs from."""
    named = [
        p for p in sorted(root.rglob("requirements*.txt")) if p.relative_to(root).parts[0] != "src"
    ]
    pyprojects = [root / "pyproject.toml", *sorted(root.glob("envs/*/pyproject.toml"))]
    files = [*pyprojects, *(f for n in named for f in with_includes(n)), *installed_files(df, root)]
    return [f for f in dict.fromkeys(files) if f.is_file()]


def constraint_only(df: Dockerfile, root: Path, files: list[Path]) -> set[Path]:
    """The requirements files among ``files`` read only through ``-c`` (by another file or a
    RUN of ``df``), never installed from: pip refuses URLs and extras in them."""
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


def _command_words(words: list[str]) -> list[str]:
    from releaselib.edit import shell_reader  # lazily: tomlkit and packaging load slowly

    return shell_reader.command_words(words)


def _installed(words: list[str]) -> Iterator[tuple[str, str]]:
    """("requirements"|"constraints"|"project", path) for each file or project a command
    installs: pip (any, ``python -m pip``), ``uv pip install|sync`` and ``uv sync``."""
    if len(words) > 2 and _PYTHON.fullmatch(words[0]) and words[1] == "-m":
        words = words[2:]
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


def _file_need(found: Path, kind: str, root: Path, seen: set[Path]) -> str | None:
    """The git+ requirement ``found`` (a requirements file, a project) leads to, if any."""
    from releaselib.edit import requirements_txt  # lazily: tomlkit and packaging load slowly

    if found.is_dir():
        found = found / "pyproject.toml"
    if found in seen or not found.is_file():
        return None
    seen.add(found)
    shown = found.relative_to(root).as_posix()
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
