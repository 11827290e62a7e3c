"""What the embedded Hub's venv builder cannot do that a real Space build does: reach hosts
beyond the package registries, and run the RUN steps that are not Python installs (a ``git
clone``, ``apt-get``, ``npm``, a download). A build that fails for either is the builder's
doing (``BUILDER_MADE``), which verify calls INCONCLUSIVE: never the Space's evidence, never
a pin."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Sequence

from releaselib.edit.git_packages import PACKAGE_MANAGERS, package_command
from releaselib.edit.shell_reader import command_words, shell_commands
from releaselib.space_runtime.plan import RunStep
from releaselib.space_runtime.process import Layout

#: A host the build could not reach (this machine reaches only the package registries).
UNREACHABLE = re.compile(
    r"Could not resolve host[^\n]*|Temporary failure in name resolution|Name or service not known"
    r"|Network is unreachable|failed to lookup address[^\n]*|dns error[^\n]*"
    r"|Failed to connect to (?!127\.0\.0\.1|localhost)[^\n]*",
    re.IGNORECASE,
)
#: Commands the venv builder does not run: they fetch, build or install outside Python.
NOT_RUN = frozenset(
    {
        "curl", "wget", "apt-get", "apt", "apk", "yum", "dnf", "microdnf", "npm", "npx", "yarn",
        "pnpm", "playwright", "make", "cmake", "cargo", "conda", "mamba", "micromamba",
        "huggingface-cli",
    }
)
#: Two-word commands the venv builder does not run.
NOT_RUN_PAIRS = frozenset({("git", "clone"), ("go", "build"), ("hf", "download")})
#: Packages whose install the builder need not run: git (the host's serves git+ installs, and
#: staging adds its install itself) and what comes with it.
HOST_HAS = frozenset({"git", "ca-certificates"})
#: Commands that fetch files (a wheel a later install may need).
FETCHES = frozenset({"curl", "wget", "huggingface-cli"})
FETCH_PAIRS = frozenset({("git", "clone"), ("hf", "download")})
#: A resolver that found no solution: the Space's own requirements, unless a skipped step
#: fetched files before it (a wheel it would have found).
UNRESOLVABLE = re.compile(
    r"No matching distribution found|Could not find a version that satisfies"
    r"|No solution found when resolving|requirements are unsatisfiable|ResolutionImpossible"
    r"|conflicting dependencies",
    re.IGNORECASE,
)


def skipped_steps(layout: Layout) -> list[RunStep]:
    """The RUN steps of the stages the final one needs that do what the builder does not run."""
    return [
        run
        for index in sorted(layout.roots)
        for run in layout.plan.stages[index].runs
        if any(_not_run(*command) for command in _commands(run.text))
    ]


def _commands(text: str) -> Iterator[tuple[str, str, list[str]]]:
    """(command name, its first argument, its words) for each simple command of a RUN's shell
    text, read from the command word (``echo apt-get`` runs ``echo``), ``sh -c`` strings too."""
    for words in shell_commands(text):
        words = command_words(words)
        if words:
            yield posixpath.basename(words[0]), words[1] if len(words) > 1 else "", words


def _fetches(run: RunStep) -> bool:
    """Whether the step fetches files (``curl``, ``wget``, ``git clone``...)."""
    return any(
        name in FETCHES or (name, first) in FETCH_PAIRS for name, first, _ in _commands(run.text)
    )


def _not_run(name: str, first: str, words: list[str]) -> bool:
    """Whether a simple command does what the builder does not run; a package manager's
    ``update``/``clean`` or install of git alone left out."""
    if (name, first) in NOT_RUN_PAIRS:
        return True
    if name not in NOT_RUN:
        return False
    managed = package_command(words)
    if managed is None or name not in PACKAGE_MANAGERS:
        return True
    _, verb, packages = managed
    installs = verb in {"install", "add"}
    return installs and any(p.split("=")[0].split(">")[0] not in HOST_HAS for p in packages)


def builders_doing(message: str, skipped: Sequence[RunStep], line: int) -> str | None:
    """Why the install at Dockerfile ``line`` that failed with ``message`` (its log's last
    lines) is the builder's doing, or None when it is the Space's own failure: a resolver that
    finds no solution is the Space's own unless a skipped step fetched files before it."""
    if (unreachable := UNREACHABLE.search(message)) is not None:
        return (
            f"line {line} needs a host beyond the package registries ({unreachable.group(0)}), "
            "which the embedded Hub cannot reach; a real Space build can"
        )
    before = [run for run in skipped if run.line <= line]
    if UNRESOLVABLE.search(message) and not any(_fetches(run) for run in before):
        return None
    if not before:
        return None
    first = " ".join(before[0].text.split())
    shown = first if len(first) <= 80 else first[:79] + "…"
    lines = ", ".join(str(run.line) for run in before[:3])
    return (
        f"line {line} failed after RUN line(s) {lines} that the venv builder does not run "
        f"({shown}); a real Space build runs them"
    )
