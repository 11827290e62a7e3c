"""Property: every OpenEnv requirement, however written, comes out pinned to the release's ref,
with its marker and comment kept (requirements files and pyproject arrays)."""

from __future__ import annotations

import tomllib

import tomlkit
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.markers import Marker
from packaging.requirements import Requirement

from releaselib.edit.pyproject_deps import rewrite_pyproject
from releaselib.edit.requirements_txt import rewrite_requirements_txt

REF = "v0.2.2"
URL = f"git+https://github.com/huggingface/OpenEnv.git@{REF}"
NAMES = ["openenv", "openenv-core", "OpenEnv", "openenv_core", "OPENENV-CORE", "openenv.core"]
EXTRAS = ["core", "cli", "all", "daytona", "inspect"]
VERSIONS = ["0.2.0", "0.2.2", "1.0", "0.3.2.dev0", "0.2.1rc1", "2024.11.1"]
MARKERS = [
    'python_version >= "3.11"',
    "sys_platform == 'linux'",
    'python_version < "3.12" and os_name == "posix"',
    '(platform_machine == "x86_64" or platform_machine == "aarch64")',
]
URLS = [
    "git+https://github.com/huggingface/OpenEnv.git",
    "git+https://github.com/huggingface/OpenEnv",
    "git+https://github.com/meta-pytorch/OpenEnv.git@main",
    "git+https://github.com/huggingface/OpenEnv.git@v0.1.0",
    "git+https://github.com/huggingface/OpenEnv.git@8d4ed80b245516d479321c3b",
    "git+https://github.com/someone/OpenEnv-fork.git@dev",
    "https://example.com/openenv-0.2.0-py3-none-any.whl",
]

clause = st.one_of(
    st.tuples(
        st.sampled_from(["==", "!=", ">=", "<=", ">", "<", "~=", "==="]), st.sampled_from(VERSIONS)
    ).map("".join),
    st.tuples(st.sampled_from(["==", "!="]), st.sampled_from(["0.2.*", "1.*"])).map("".join),
)
specifier = st.one_of(
    st.just(""),
    st.lists(clause, min_size=1, max_size=3).map(",".join),
    st.lists(clause, min_size=1, max_size=2).map(lambda c: " " + ", ".join(c)),
    st.lists(clause, min_size=1, max_size=2).map(lambda c: " (" + ",".join(c) + ")"),
)


@st.composite
def requirements(draw: st.DrawFn) -> tuple[str, frozenset[str], str | None]:
    """(requirement text, its extras, its marker as written)."""
    name = draw(st.sampled_from(NAMES))
    extras = draw(st.lists(st.sampled_from(EXTRAS), unique=True, max_size=3))
    head = name + (f"[{','.join(extras)}]" if extras else "")
    separators = [" ; ", "; ", " ;"]
    if draw(st.booleans()):
        body = head + draw(specifier)
    else:
        body = f"{head} @ {draw(st.sampled_from(URLS))}"
        separators = [" ; ", "  ;  "]  # PEP 508: a URL needs a space before the marker
    marker = draw(st.none() | st.sampled_from(MARKERS))
    if marker is not None:
        body += draw(st.sampled_from(separators)) + marker
    return body, frozenset(e.lower() for e in extras), marker


comments = st.none() | st.text(st.sampled_from("abc xyz-_.0123"), min_size=1, max_size=20).map(
    str.strip
).filter(bool)


def check_pinned(spec: str, extras: frozenset[str], marker: str | None) -> None:
    req = Requirement(spec)
    assert req.name == "openenv"
    assert req.url == URL
    assert extras | {"core"} <= set(req.extras)
    assert not req.specifier
    if marker is None:
        assert req.marker is None
    else:
        assert req.marker == Marker(marker)
        assert spec.endswith(f" ; {marker}")  # kept as written


@settings(max_examples=300, deadline=None)
@given(
    requirements(), comments, st.sampled_from(["", "   ", "\t"]), st.sampled_from(["\n", "\r\n"])
)
def test_a_requirements_line_is_pinned_with_marker_and_comment_kept(
    requirement: tuple[str, frozenset[str], str | None],
    comment: str | None,
    indent: str,
    newline: str,
) -> None:
    spec, extras, marker = requirement
    line = indent + spec + (f"  # {comment}" if comment else "")
    text = f"fastapi>=0.1{newline}{line}{newline}"
    new, changes = rewrite_requirements_txt(text, path="requirements.txt", dist="openenv", ref=REF)
    [change] = changes
    assert change.before == spec.strip() and change.line == 2
    first, pinned_line, end = new.split("\n")
    assert first == "fastapi>=0.1" + newline.rstrip("\n") and end == ""
    pinned_line = pinned_line.removesuffix("\r")
    assert pinned_line.startswith(indent)
    if comment:
        assert pinned_line.endswith(f"  # {comment}")
        pinned_line = pinned_line.removesuffix(f"  # {comment}")
    check_pinned(pinned_line.strip(), extras, marker)
    assert rewrite_requirements_txt(new, path="r", dist="openenv", ref=REF) == (new, [])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(requirements(), comments), min_size=1, max_size=4),
    st.sampled_from(["dependencies", "optional", "group"]),
)
def test_pyproject_arrays_are_pinned_with_marker_and_comment_kept(
    items: list[tuple[tuple[str, frozenset[str], str | None], str | None]], where: str
) -> None:
    lines = []
    for (spec, _, _), comment in items:
        lines.append(
            f"    {tomlkit.string(spec).as_string()},{f'  # {comment}' if comment else ''}"
        )
    array = "[\n" + "\n".join(lines) + "\n]"
    table = {
        "dependencies": f'[project]\nname = "e"\ndependencies = {array}\n',
        "optional": f'[project]\nname = "e"\n[project.optional-dependencies]\nx = {array}\n',
        "group": f'[project]\nname = "e"\n[dependency-groups]\ndev = {array}\n',
    }[where]
    new, changes = rewrite_pyproject(table, path="pyproject.toml", dist="openenv", ref=REF)
    assert len(changes) == len(items)
    data = tomllib.loads(new)
    pinned = {
        "dependencies": lambda: data["project"]["dependencies"],
        "optional": lambda: data["project"]["optional-dependencies"]["x"],
        "group": lambda: data["dependency-groups"]["dev"],
    }[where]()
    for spec, ((_, extras, marker), comment) in zip(pinned, items, strict=True):
        check_pinned(spec, extras, marker)
        if comment:
            assert f"  # {comment}" in new
    assert rewrite_pyproject(new, path="p", dist="openenv", ref=REF) == (new, [])
