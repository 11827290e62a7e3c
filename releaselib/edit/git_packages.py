"""Which RUNs install or remove git with a package manager, and the lines that install it."""

from __future__ import annotations

import itertools
import posixpath
import re
from collections.abc import Iterator

from releaselib.dockerfile_syntax.parse import Instruction, Stage
from releaselib.edit.dockerfile_model import Dockerfile

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


_ROOT_USERS = frozenset({"root", "0", "0:0", "root:root"})


def git_after(text: str, had: bool) -> bool:
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
            has_git = git_after(shell_text(instr), has_git)
    return has_git


def base_ships_git(image: str) -> bool:
    """Kept simple: the full ``python`` and ``buildpack-deps`` images (Debian with scm tools)
    ship git; slim, alpine and curl variants, openenv-base and anything else are assumed not to."""
    name, _, tag = image.partition(":")
    name = name.removeprefix("docker.io/").removeprefix("library/")
    return name in ("python", "buildpack-deps") and not re.search(
        r"slim|alpine|curl|windows|nanoserver", tag
    )


def _command_words(words: list[str]) -> list[str]:
    from releaselib.edit import shell_reader  # lazily: tomlkit and packaging load slowly

    return shell_reader.command_words(words)
