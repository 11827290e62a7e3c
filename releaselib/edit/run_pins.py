"""OpenEnv specs pinned where a Dockerfile installs them: RUN installers, build variables."""

from __future__ import annotations

from releaselib.edit.requirement import (
    EDITABLE,
    names_openenv,
    parse_requirement,
    rewrite_at,
    why_pinned,
)
from releaselib.edit.shell_reader import install_arguments, shell_quote, unquote
from releaselib.errors import StageError
from releaselib.records import Change


def rewrite_shell_command(
    command: str, *, path: str, line: int, dist: str, ref: str
) -> tuple[str, list[Change]]:
    """Pin OpenEnv specs given to an installer in one RUN instruction: ``pip install`` (any
    pip, ``uv pip``), ``uv add``, ``uv tool install``, ``uv run --with``, ``uvx --from``,
    ``pipx install|run --spec|inject``; a ``sh -c`` string is rewritten inside and re-quoted.

    ``line`` is the file line where ``command`` starts; only the rewritten words change.
    """
    pieces: list[str] = []
    changes: list[Change] = []
    done = 0
    for start, match, value, prefix in install_arguments(command):
        word_line = line + command.count("\n", 0, start)
        if prefix is None:  # the string of sh -c
            inner, found = rewrite_shell_command(
                value, path=path, line=word_line, dist=dist, ref=ref
            )
            if found:
                pieces += [command[done:start], shell_quote(inner, match.group()[0])]
                done = match.end()
                changes += found
            continue
        new = rewrite_at(value, path, word_line, dist=dist, ref=ref)
        if new is None:
            continue
        option = prefix.rstrip("=") or "".join(command[:start].split()[-1:])
        if option == "--with" and "," in new:  # uv reads --with a,b as two packages
            raise StageError(
                f"{path}:{word_line}: cannot pin {value!r} given to --with "
                "(uv splits its value at commas)",
                remedy="install OpenEnv with pip install or a requirements file instead",
            )
        pieces += [command[done:start], shell_quote(prefix + new, match.group()[0])]
        done = match.end()
        why, before = why_pinned(value, ref), value
        if start != match.start() or EDITABLE.fullmatch(unquote(match.group())):
            why += "; installed non-editable"
            before = " ".join(unquote(w) for w in command[start : match.end()].split())
        changes.append(Change(path, word_line, before, new, why))
    return "".join([*pieces, command[done:]]), changes


def shell_specs(command: str) -> list[str]:
    """Every OpenEnv requirement an installer in ``command`` is given (``sh -c`` strings read)."""
    found = []
    for _, _, value, prefix in install_arguments(command):
        if prefix is None:
            found += shell_specs(value)
        elif names_openenv(value):
            found.append(value)
    return found


def rewrite_words(value: str, *, path: str, line: int, dist: str, ref: str) -> str | None:
    """``value`` (an ARG or ENV value a RUN expands) with each OpenEnv requirement among its
    whitespace-separated words pinned in the form without spaces (``openenv[core]@git+...``),
    which survives word splitting of an unquoted ``$VAR``; None if nothing changes. A spec
    that needs spaces (a marker) cannot be written so: StageError naming it."""
    if names_openenv(value.strip()) and parse_requirement(value.strip()) is not None:
        words = [value.strip()]
    else:
        words = value.split()
    out, changed = [], False
    for word in words:
        new = rewrite_at(word, path, line, dist=dist, ref=ref) if names_openenv(word) else None
        if new is not None and " ; " in new:
            raise StageError(
                f"{path}:{line}: cannot pin {word!r} in a build variable (its marker needs "
                "spaces, which word splitting breaks)",
                remedy="install OpenEnv with pip install or a requirements file instead",
            )
        compact = new.replace(" @ ", "@") if new is not None else None
        if compact is not None and compact != word:
            changed = True
        out.append(compact or word)
    return " ".join(out) if changed else None
