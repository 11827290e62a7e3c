"""Installs in a Dockerfile's RUNs whose OpenEnv staging cannot pin, each a StageError.

Staging pins OpenEnv in the files and command lines a build installs from. These it cannot read
or rewrite, so the build would install what the env's author wrote, or break:

- a requirements file chosen by a variable with no default in the Dockerfile
  (``ARG REQS`` then ``pip install -r $REQS``): only ``--build-arg`` knows which file;
- a requirements or constraints file fetched from a URL (``pip install -r https://...``);
- a requirements file outside what the stage copies (``-r ../shared.txt`` from the env's folder);
- a package URL that names OpenEnv but is no requirement staging recognises
  (``pip install https://example.com/openenv.zip``);
- Python code that installs OpenEnv (``python -c "...subprocess.run(['pip', 'install',
  'openenv-core==0.1'])"``), or Python in a heredoc that runs pip install: staging never edits
  code;
- packages known only when the build runs (``pip install $(cat deps.txt)``, ``cat deps.txt |
  xargs pip install``).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterator

from releaselib.dockerfile_syntax.parse import Instruction, Stage
from releaselib.dockerfile_syntax.words import expand
from releaselib.edit import shell_reader
from releaselib.edit.dockerfile_model import Dockerfile
from releaselib.edit.git_packages import shell_text
from releaselib.edit.install_sources import installed
from releaselib.edit.requirement import names_openenv
from releaselib.edit.run_pins import shell_specs
from releaselib.errors import StageError

_PYTHON = re.compile(r"(?:.*/)?python\d*(?:\.\d+)*")


_STRING = re.compile(r"""(?P<q>['"])(?P<body>[^'"\n]+)(?P=q)""")


_URL = re.compile(r"[a-z][a-z0-9+.-]*://", re.IGNORECASE)


#: (stage, instruction, image path) -> whether the staged tree lands a file there.
InTree = Callable[[Stage, Instruction, str], bool]


def check_installs(df: Dockerfile, in_tree: InTree) -> None:
    """StageError naming ``df.path:line``, the install and what to do, for the first install
    in a RUN of ``df`` that staging cannot pin (see the module docstring)."""
    for stage in df.stages:
        for instr in df.stage_instructions(stage):
            if instr.cmd == "RUN":
                for found in _unpinnable(df, stage, instr, in_tree):
                    needle, what, remedy = found
                    raise StageError(f"{df.path}:{_line(instr, needle)}: {what}", remedy=remedy)


def _unpinnable(
    df: Dockerfile, stage: Stage, instr: Instruction, in_tree: InTree
) -> Iterator[tuple[str, str, str]]:
    """(word to find the line by, what is wrong, remedy) for each unpinnable install."""
    scope = df.scope_at(stage, instr)
    cwd = df.workdir(stage, at=instr) or "/"
    for needle, how in _unreadable(instr):
        yield (
            needle,
            f"staging cannot read what this installs ({how})",
            "list the packages in a requirements file and install it with pip install -r",
        )
    for value in _remote_openenv(shell_text(instr)):
        yield (
            value,
            f"installs {value}, a URL naming OpenEnv that is no OpenEnv release staging can pin",
            "install OpenEnv from a requirement (openenv-core>=...) or its git URL instead",
        )
    for words in shell_reader.shell_commands(shell_text(instr)):
        words = shell_reader.command_words(words)
        if words[:1] == ["cd"] and len(words) == 2:
            cwd = posixpath.join(cwd, expand(words[1], scope))
        code = _python_code(words)
        specs = _code_installs(code or "")
        if specs:
            yield (
                specs[0],
                f"Python code installs {specs[0]!r}, which staging cannot pin (it never edits "
                "code)",
                "install OpenEnv with pip install in the RUN, or from a requirements file",
            )
        for kind, path in installed(words):
            if kind == "project":
                continue
            value = expand(path, scope)
            unset = _unset(path, scope)
            if unset:
                yield (
                    path,
                    f"installs {kind} {path}, a file chosen at build time that staging cannot "
                    "read to pin OpenEnv",
                    f"give {unset} a default with ARG or ENV before this RUN, or name the file",
                )
            elif _URL.match(value):
                yield (
                    path,
                    f"installs {kind} from {value}, which staging cannot pin OpenEnv in",
                    "copy the file into the env's folder and install it from there",
                )
            elif ".." in path.split("/") and not _has(stage, instr, cwd, value, in_tree):
                yield (
                    path,
                    f"installs {kind} {path}, outside what the build copies from the env's folder "
                    "(the staged tree will not contain it)",
                    "move the file into the env's folder, or copy it in a plugin fix",
                )


_PYTHON_WORD = re.compile(r"(?:^|[\s/])python\d*(?:\.\d+)*(?:\s|$)")


_INSTALLER = re.compile(r"(?:.*/)?(?:pip\d*(?:\.\d+)*|uv)")


_SUBSTITUTED = re.compile(r"\b(?:pip\d*(?:\.\d+)*|uv\s+pip)\s+install\b[^;&|\n]*?(\$\(|`)")


def _unreadable(instr: Instruction) -> Iterator[tuple[str, str]]:
    """(word to find the line by, how) for each install whose packages staging cannot know:
    Python fed by a heredoc that runs pip, a command substitution in an install's arguments,
    and an installer run by ``xargs``."""
    first, _, body = instr.text.partition("\n")
    if "<<" in first and (
        _PYTHON_WORD.search(first.partition("<<")[0]) or re.match(r"#!.*python", body)
    ):
        found = re.search(r"\bpip\b.*\binstall\b|\binstall\b.*\bpip\b", body)
        if found:
            yield found.group(), "Python in a heredoc runs pip install"
    for found in _SUBSTITUTED.finditer(shell_text(instr)):
        yield found.group(1), "its packages come from a command substitution"
    for words in shell_reader.shell_commands(shell_text(instr)):
        words = shell_reader.command_words(words)
        if words[:1] == ["xargs"] and "install" in words and any(
            _INSTALLER.fullmatch(w) for w in words
        ):
            yield "xargs", "xargs passes it the packages"


def _remote_openenv(command: str) -> Iterator[str]:
    """Package URLs given to an installer that name OpenEnv yet are not an OpenEnv requirement
    (``https://example.com/openenv.zip``), in ``sh -c`` strings too."""
    for _, _, value, prefix in shell_reader.install_arguments(command):
        if prefix is None:
            yield from _remote_openenv(value)
        elif _URL.match(value) and _names_openenv_file(value) and not names_openenv(value):
            yield value


_OPENENV_FILE = re.compile(
    r"openenv(?:[-_]core)?(?:\.git|\.zip|\.tar\.gz|\.tgz|\.whl|[-_]\d[^/]*)?", re.IGNORECASE
)


def _names_openenv_file(url: str) -> bool:
    """True if the last path segment of ``url`` (ref and fragment cut) is OpenEnv's."""
    path = url.split("#", 1)[0].split("://", 1)[-1].rstrip("/")
    last = path.rsplit("/", 1)[-1].split("@", 1)[0]
    return _OPENENV_FILE.fullmatch(last) is not None


def _has(stage: Stage, instr: Instruction, cwd: str, path: str, in_tree: InTree) -> bool:
    return in_tree(stage, instr, posixpath.normpath(posixpath.join(cwd, path)))


def _code_installs(code: str) -> list[str]:
    """The OpenEnv requirements Python ``code`` that installs something names in its string
    literals: one a literal (``['pip', 'install', 'openenv-core==0.1']``), or one that a command
    line in a literal installs (``os.system('pip install openenv')``)."""
    if not re.search(r"\binstall\b", code):
        return []
    found: list[str] = []
    for match in _STRING.finditer(code):
        body = match["body"]
        found += [body] if names_openenv(body) else shell_specs(body)
    return found


def _python_code(words: list[str]) -> str | None:
    """The code of ``python -c CODE`` (options before ``-c`` allowed), else None."""
    if not words or not _PYTHON.fullmatch(words[0]):
        return None
    for index, word in enumerate(words[1:], start=1):
        if not word.startswith("-"):
            return None
        if word == "-c":
            return words[index + 1] if index + 1 < len(words) else None
    return None


_REFERENCE = re.compile(r"\$(?:\{(?P<braced>[A-Za-z_]\w*)(?P<op>:?[-+?])?|(?P<bare>[A-Za-z_]\w*))")


def _unset(path: str, scope: dict[str, str]) -> str | None:
    """The first variable ``path`` reads that has no value there and no default in the word
    itself (``${X:-x}``), else None."""
    for match in _REFERENCE.finditer(path):
        name = match["braced"] or match["bare"]
        if name not in scope and not (match["op"] or "").endswith("-"):
            return name
    return None


def _line(instr: Instruction, needle: str) -> int:
    """The file line of ``instr`` where ``needle`` first appears (its first line otherwise)."""
    for offset, text in enumerate(instr.text.splitlines()):
        if needle in text:
            return instr.start_line + offset
    return instr.start_line


def check_includes(text: str, *, path: str, exists: Callable[[str], bool]) -> None:
    """StageError naming ``path:line`` for the first ``-r``/``-c`` of a requirements file the
    build reads that is a URL, or a file the staged tree lacks (``-r ../shared.txt`` reaching
    outside the env's folder): staging cannot pin OpenEnv there, or pip cannot open it.
    ``exists`` tells whether a path relative to the file's folder is in the staged tree."""
    from releaselib.edit.requirements_txt import include_lines

    for line, option, file in include_lines(text):
        if _URL.match(file):
            raise StageError(
                f"{path}:{line}: {option} {file} is fetched at build time; staging cannot pin "
                "OpenEnv in it",
                remedy="copy the file into the env's folder and include it from there",
            )
        if not exists(file):
            raise StageError(
                f"{path}:{line}: {option} {file} is not in the staged tree (only the env's "
                "folder is staged), so pip cannot open it",
                remedy="move the file into the env's folder, or copy it in a plugin fix",
            )
