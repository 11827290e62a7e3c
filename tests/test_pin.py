"""Tests for releaselib.publish.pin: pinning failed envs below the release, lifting pins, committing.

Golden files live in golden/pin/: ``<case>.toml`` is the input, ``<case>.pinned.toml`` the input
pinned below 0.2.2, ``<case>.lifted.toml`` the pinned file lifted for a passing 0.2.3, and
``<case>.changes.json`` the recorded changes of both. Set UPDATE_GOLDEN=1 to rewrite them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import stat
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest
import tomlkit
from packaging.requirements import Requirement

from releaselib.edit.pyproject_deps import find_openenv_requirements, rewrite_pyproject, tool_pins
from releaselib.errors import PinError, ReleaseError
from releaselib.publish.pin import (
    PinResult,
    commit_message,
    commit_pins,
    lift_env_pin,
    pin_env,
    unified_diff,
)
from releaselib.publish.pin_files import lift_pin, pin_below, tool_written_pins
from releaselib.records import Change
from releaselib.shell import Completed
from tests.corpus import SNAPSHOT, snapshot_or_skip

GOLDEN = Path(__file__).parent / "golden" / "pin"
CASES = sorted(
    p.name.removesuffix(".toml")
    for p in GOLDEN.glob("*.toml")
    if not p.name.endswith((".pinned.toml", ".lifted.toml"))
)
RELEASE = "0.2.2"
NEXT = "0.2.3"
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def read(path: Path) -> str:
    """The file's text with its line endings untouched."""
    return path.read_bytes().decode("utf-8")


def as_json(changes: list[Change]) -> list[dict[str, object]]:
    return [dataclasses.asdict(c) for c in changes]


def one(spec: str, *, version: str = RELEASE, lift: bool = False) -> str:
    """``spec`` after pinning (or lifting) a one-dependency pyproject."""
    text = tomlkit.dumps({"project": {"name": "x", "dependencies": [spec]}})
    edit = lift_pin if lift else pin_below
    new, _ = edit(text, version=version, path="pyproject.toml")
    return str(tomlkit.parse(new)["project"]["dependencies"][0])  # type: ignore[index]


MARKER = re.compile(
    r"(?:\r?\n)?\[tool\.openenv-release\]\r?\n(?:#.*\n)?pins = \[\r?\n(?:.*\n)*?\]\r?\n"
)


def without_marker(text: str) -> str:
    """``text`` without the ``[tool.openenv-release]`` table pin writes (and the gap before)."""
    return MARKER.sub("", text)


def changed_lines(before: str, after: str) -> set[int]:
    before, after = without_marker(before).rstrip("\r\n"), without_marker(after).rstrip("\r\n")
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    assert len(old) == len(new), "a pin adds or removes no requirement line"
    return {n for n, (a, b) in enumerate(zip(old, new, strict=True), start=1) if a != b}


# Golden files


def test_every_case_has_golden_files() -> None:
    assert len(CASES) >= 9
    for case in CASES:
        for suffix in (".pinned.toml", ".lifted.toml", ".changes.json"):
            assert (GOLDEN / f"{case}{suffix}").is_file() or os.environ.get("UPDATE_GOLDEN")


@pytest.mark.parametrize("case", CASES)
def test_golden(case: str) -> None:
    source = read(GOLDEN / f"{case}.toml")
    pinned, pin_changes = pin_below(source, version=RELEASE, path=f"{case}.toml")
    lifted, lift_changes = lift_pin(pinned, version=NEXT, path=f"{case}.toml")
    recorded = {"pin": as_json(pin_changes), "lift": as_json(lift_changes)}
    if os.environ.get("UPDATE_GOLDEN"):
        (GOLDEN / f"{case}.pinned.toml").write_bytes(pinned.encode())
        (GOLDEN / f"{case}.lifted.toml").write_bytes(lifted.encode())
        (GOLDEN / f"{case}.changes.json").write_text(json.dumps(recorded, indent=2) + "\n")
    assert pinned == read(GOLDEN / f"{case}.pinned.toml")
    assert lifted == read(GOLDEN / f"{case}.lifted.toml")
    assert recorded == json.loads((GOLDEN / f"{case}.changes.json").read_text())


@pytest.mark.parametrize("case", CASES)
def test_only_the_recorded_lines_change(case: str) -> None:
    source = read(GOLDEN / f"{case}.toml")
    pinned, pin_changes = pin_below(source, version=RELEASE, path="p")
    lifted, lift_changes = lift_pin(pinned, version=NEXT, path="p")
    assert changed_lines(source, pinned) == {c.line for c in pin_changes}
    assert changed_lines(pinned, lifted) == {c.line for c in lift_changes}


@pytest.mark.parametrize("case", CASES)
def test_pin_and_lift_are_idempotent(case: str) -> None:
    pinned, _ = pin_below(read(GOLDEN / f"{case}.toml"), version=RELEASE, path="p")
    assert pin_below(pinned, version=RELEASE, path="p") == (pinned, [])
    lifted, _ = lift_pin(pinned, version=NEXT, path="p")
    assert lift_pin(lifted, version=NEXT, path="p") == (lifted, [])


@pytest.mark.parametrize("case", CASES)
def test_every_pinned_requirement_excludes_the_release_and_later(case: str) -> None:
    pinned, _ = pin_below(read(GOLDEN / f"{case}.toml"), version=RELEASE, path="p")
    for spec in find_openenv_requirements(pinned):
        req = Requirement(spec)
        if req.url is None:
            assert not any(
                req.specifier.contains(v, prereleases=True) for v in (RELEASE, "0.2.3", "1.0")
            )


def test_crlf_case_keeps_crlf_line_endings() -> None:
    pinned = read(GOLDEN / "crlf.pinned.toml")
    assert pinned.count("\r\n") == pinned.count("\n") == 15
    assert '    "openenv[core]>=0.2.1,<0.2.2",  # floor\r\n' in pinned


# How <V combines with what is there


@pytest.mark.parametrize(
    ("spec", "version", "expected"),
    [
        ("openenv>=0.2.0", RELEASE, "openenv>=0.2.0,<0.2.2"),
        ("openenv>=0.2.0, <0.3", RELEASE, "openenv>=0.2.0, <0.3, <0.2.2"),
        ("openenv~=0.2.0", RELEASE, "openenv~=0.2.0,<0.2.2"),
        ("openenv==0.2.*", RELEASE, "openenv==0.2.*,<0.2.2"),
        ("openenv!=0.2.1", RELEASE, "openenv!=0.2.1,<0.2.2"),
        ("openenv", RELEASE, "openenv<0.2.2"),
        ("openenv (>=0.2)", RELEASE, "openenv (>=0.2,<0.2.2)"),
        ("openenv ; python_version < '3.12'", RELEASE, "openenv<0.2.2 ; python_version < '3.12'"),
        ("openenv[core]>=0.2.1", "v0.2.2", "openenv[core]>=0.2.1,<0.2.2"),
        ("openenv[core]>=0.3.0", "0.3.2.dev0", "openenv[core]>=0.3.0,<0.3.2.dev0"),
    ],
)
def test_pin_combines_with_existing_bounds(spec: str, version: str, expected: str) -> None:
    assert one(spec, version=version) == expected


@pytest.mark.parametrize(
    ("spec", "version"),
    [
        ("openenv[core]<0.2.2", RELEASE),
        ("openenv<0.2", RELEASE),
        ("openenv<=0.2.1", RELEASE),
        ("openenv==0.2.1", RELEASE),
        ("openenv~=0.1.0", RELEASE),
        ("openenv==0.1.*", RELEASE),
        ("openenv<0.3.2", "0.3.2.dev0"),  # <0.3.2 excludes 0.3.2's pre-releases too
        ("openenv[core] @ git+https://github.com/huggingface/OpenEnv.git@v0.2.1", RELEASE),
        ("openenv @ git+https://github.com/huggingface/OpenEnv.git@8d4ed80b2455", RELEASE),
        ("openenv @ git+https://github.com/huggingface/OpenEnv.git@feature-x", RELEASE),
        ("openenv @ git+https://github.com/someone/fork.git", RELEASE),
        ("openenv @ https://example.com/openenv-0.2.0-py3-none-any.whl", RELEASE),
        ("fastapi>=0.2.2", RELEASE),
    ],
)
def test_pin_leaves_what_cannot_reach_the_release(spec: str, version: str) -> None:
    assert one(spec, version=version) == spec


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("openenv[core] @ git+https://github.com/huggingface/OpenEnv.git", "openenv[core]<0.2.2"),
        ("openenv @ git+https://github.com/huggingface/OpenEnv@master", "openenv<0.2.2"),
        ("openenv @ git+https://github.com/meta-pytorch/OpenEnv.git@v0.2.2", "openenv<0.2.2"),
        ("openenv @ git+https://github.com/huggingface/OpenEnv.git@0.3.0", "openenv<0.2.2"),
        (
            "openenv[core] @ git+https://github.com/huggingface/OpenEnv.git ; os_name == 'posix'",
            "openenv[core]<0.2.2 ; os_name == 'posix'",
        ),
    ],
)
def test_pin_replaces_a_url_that_would_install_the_release(spec: str, expected: str) -> None:
    assert one(spec) == expected


def test_a_replaced_url_says_why() -> None:
    text = (
        '[project]\ndependencies = ["openenv @ git+https://github.com/huggingface/OpenEnv.git"]\n'
    )
    _, [change] = pin_below(text, version=RELEASE, path="envs/x/pyproject.toml")
    assert change.file == "envs/x/pyproject.toml" and change.line == 2
    assert "direct URL" in change.why and "cannot carry a version bound" in change.why


@pytest.mark.parametrize(
    ("spec", "version", "clause"),
    [
        ("openenv[core]>=0.2.2", RELEASE, ">=0.2.2"),
        ("openenv[core]>=0.2.3", RELEASE, ">=0.2.3"),
        ("openenv>0.2.2", RELEASE, ">0.2.2"),
        ("openenv==0.2.2", RELEASE, "==0.2.2"),
        ("openenv~=0.2.2", RELEASE, "~=0.2.2"),
        ("openenv==0.3.*", RELEASE, "==0.3.*"),
        ("openenv>=0.2.0,>=0.2.2.dev0", RELEASE, ">=0.2.2.dev0"),
        ("openenv[core]>=0.3.2rc1", "0.3.2.dev0", ">=0.3.2rc1"),
    ],
)
def test_pin_refuses_when_the_env_requires_the_release_or_later(
    spec: str, version: str, clause: str
) -> None:
    """``<V`` beside a lower bound at or above V is a contradiction: refused, nothing written."""
    text = tomlkit.dumps({"project": {"name": "x", "dependencies": [spec]}})
    with pytest.raises(PinError) as caught:
        pin_below(text, version=version, path="envs/x/pyproject.toml")
    message = str(caught.value)
    assert message.startswith("envs/x/pyproject.toml:")
    assert f"requires {clause}, at or above the release" in message
    assert "contradict" in message


def test_pin_env_refusing_writes_nothing(tmp_path: Path) -> None:
    text = '[project]\nname = "e"\ndependencies = ["openenv[core]>=0.2.3"]\n'
    path = make_env(tmp_path, "e", text)
    with pytest.raises(PinError, match=re.escape("at or above the release 0.2.2")):
        pin_env(tmp_path, "e", version=RELEASE)
    assert read(path) == text


def test_pins_are_marked_for_staging_lifting_and_promote(tmp_path: Path) -> None:
    """The table survives tomlkit; staging names the pin it replaces; lift removes the mark."""
    text = '[project]\nname = "e"\ndependencies = [\n    "openenv[core]>=0.2.0",  # keep\n]\n'
    pinned, _ = pin_below(text, version=RELEASE, path="p")
    doc = tomlkit.parse(tomlkit.dumps(tomlkit.parse(pinned)))
    assert tool_pins(doc) == {"openenv[core]>=0.2.0,<0.2.2": RELEASE}
    assert '    "openenv[core]>=0.2.0,<0.2.2",  # keep\n' in pinned
    make_env(tmp_path, "e", pinned)
    assert tool_written_pins(tmp_path, "e") == [
        "envs/e/pyproject.toml: openenv[core]>=0.2.0,<0.2.2"
    ]
    staged, [change] = rewrite_pyproject(pinned, path="p", dist="openenv", ref="v0.2.3")
    assert change.before == "openenv[core]>=0.2.0,<0.2.2"
    assert "a pin openenv-release wrote" in change.why
    make_env(tmp_path, "e", staged)
    assert tool_written_pins(tmp_path, "e") == []
    lifted, _ = lift_pin(pinned, version=NEXT, path="p")
    assert lifted == text


# Lifting


@pytest.mark.parametrize(
    ("spec", "version", "expected"),
    [
        ("openenv[core]<0.2.2", NEXT, "openenv[core]>=0.2.3"),
        ("openenv[core]<0.2.2", RELEASE, "openenv[core]>=0.2.2"),
        ("openenv>=0.2.0,<0.2.2", NEXT, "openenv>=0.2.0"),
        ("openenv>=0.2.0,<0.3,<0.2.2", NEXT, "openenv>=0.2.0,<0.3"),
        ("openenv<0.2.1,<0.2.2", NEXT, "openenv>=0.2.3"),
        ("openenv!=0.2.1,<0.2.2", NEXT, "openenv!=0.2.1,>=0.2.3"),
        (
            "openenv<0.2.2 ; python_version < '3.12'",
            NEXT,
            "openenv>=0.2.3 ; python_version < '3.12'",
        ),
        ("openenv<0.3.2", "0.3.2.dev0", "openenv>=0.3.2.dev0"),
        ("openenv<0.3.2.dev0", "0.3.2.dev0", "openenv>=0.3.2.dev0"),
    ],
)
def test_lift_removes_bounds_that_exclude_the_release(
    spec: str, version: str, expected: str
) -> None:
    assert one(spec, version=version, lift=True) == expected


@pytest.mark.parametrize(
    ("spec", "version"),
    [
        ("openenv[core]<0.2.2", "0.2.1"),  # a pin above the passing version is not ours to lift
        ("openenv>=0.2.0,<0.3", NEXT),
        ("openenv<=0.2.1", NEXT),  # pin never writes <=; an author's cap stays
        ("openenv==0.2.1", NEXT),
        ("openenv[core]>=0.2.2", NEXT),
        ("openenv[core] @ git+https://github.com/huggingface/OpenEnv.git@v0.2.1", NEXT),
    ],
)
def test_lift_leaves_other_bounds(spec: str, version: str) -> None:
    assert one(spec, version=version, lift=True) == spec


# Errors and odd input


def test_a_version_that_is_not_pep440_is_refused() -> None:
    with pytest.raises(PinError, match="not a PEP 440 version"):
        pin_below('[project]\ndependencies = ["openenv"]\n', version="nightly", path="p")


def test_an_unparseable_openenv_requirement_names_file_and_line() -> None:
    text = '[project]\nname = "e"\ndependencies = [\n  "openenv[core>=0.2",\n]\n'
    with pytest.raises(PinError, match=r"envs/e/pyproject.toml:4: cannot parse"):
        pin_below(text, version=RELEASE, path="envs/e/pyproject.toml")


def test_invalid_toml_is_a_release_error_naming_the_file() -> None:
    with pytest.raises(ReleaseError, match=r"envs/e/pyproject\.toml"):
        pin_below("[project\n", version=RELEASE, path="envs/e/pyproject.toml")


def test_a_project_referring_to_itself_is_left_alone() -> None:
    text = '[project]\nname = "openenv"\n[project.optional-dependencies]\nall = ["openenv[core]"]\n'
    assert pin_below(text, version=RELEASE, path="p") == (text, [])


def test_unified_diff() -> None:
    assert unified_diff("a\n", "a\n", "p") == ""
    diff = unified_diff("a\nb\n", "a\nc", "envs/x/pyproject.toml")
    assert diff.splitlines() == [
        "--- a/envs/x/pyproject.toml",
        "+++ b/envs/x/pyproject.toml",
        "@@ -1,2 +1,2 @@",
        " a",
        "-b",
        "+c",
        "\\ No newline at end of file",
    ]


# Files in a checkout


def make_env(repo: Path, env: str, text: str) -> Path:
    path = repo / "envs" / env / "pyproject.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode())
    return path


def test_pin_env_writes_atomically_and_keeps_bytes_and_mode(tmp_path: Path) -> None:
    source = read(GOLDEN / "crlf.toml")
    path = make_env(tmp_path, "crlf_env", source)
    path.chmod(0o640)
    result = pin_env(tmp_path, "crlf_env", version=RELEASE)
    assert result.changed and result.action == "pin"
    assert result.path == "envs/crlf_env/pyproject.toml"
    assert read(path) == read(GOLDEN / "crlf.pinned.toml")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in path.parent.iterdir()) == ["pyproject.toml"]
    assert result.diff == unified_diff(source, read(path), result.path)
    assert '-    "openenv[core]>=0.2.1",  # floor\r\n' in result.diff
    assert [c.line for c in result.changes] == [7]


def test_pin_env_twice_changes_nothing_the_second_time(tmp_path: Path) -> None:
    path = make_env(tmp_path, "e", read(GOLDEN / "loose.toml"))
    pin_env(tmp_path, "e", version=RELEASE)
    written = path.stat().st_mtime_ns, read(path)
    again = pin_env(tmp_path, "e", version=RELEASE)
    assert (again.changed, again.diff, again.changes) == (False, "", ())
    assert (path.stat().st_mtime_ns, read(path)) == written


def test_lift_env_pin_after_pin_env(tmp_path: Path) -> None:
    path = make_env(tmp_path, "e", read(GOLDEN / "loose.toml"))
    pin_env(tmp_path, "e", version=RELEASE)
    result = lift_env_pin(tmp_path, "e", version=NEXT)
    assert result.changed and result.action == "lift"
    assert '"openenv[core]>=0.2.1"' in read(path)


def test_pin_env_without_a_pyproject_says_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "envs" / "bare_env").mkdir(parents=True)
    with pytest.raises(PinError) as caught:
        pin_env(tmp_path, "bare_env", version=RELEASE)
    message = str(caught.value)
    assert "bare_env" in message and "envs/bare_env/pyproject.toml" in message
    assert "--repo" in message
    with pytest.raises(PinError, match="no OpenEnv dependency to lift"):
        lift_env_pin(tmp_path, "bare_env", version=RELEASE)


def test_pin_env_refuses_a_path_for_an_env_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a valid env name"):
        pin_env(tmp_path, "../outside", version=RELEASE)


def test_real_world_file_changes_only_its_dependency_line(tmp_path: Path) -> None:
    snapshot_or_skip()
    source = SNAPSHOT / "envs" / "echo_env" / "pyproject.toml"
    if not source.is_file():
        pytest.skip(f"{source} is absent from the snapshot")
    path = make_env(tmp_path, "echo_env", read(source))
    with pytest.raises(
        PinError, match=re.escape("requires >=0.2.2, at or above the release 0.2.2")
    ):
        pin_env(tmp_path, "echo_env", version=RELEASE)  # its own floor is the release
    result = pin_env(tmp_path, "echo_env", version=NEXT)
    before, after = read(source).splitlines(), without_marker(read(path)).splitlines()
    assert len(before) == len(after)
    differing = [(n, a, b) for n, (a, b) in enumerate(zip(before, after, strict=True), 1) if a != b]
    assert differing == [(18, '    "openenv[core]>=0.2.2",', '    "openenv[core]>=0.2.2,<0.2.3",')]
    assert [c.line for c in result.changes] == [18]


def test_every_snapshot_env_pins_to_below_the_release() -> None:
    """At 0.3.1 every real env can be pinned; at 0.2.2 those asking for >=0.2.2 are refused."""
    snapshot_or_skip()
    refused = []
    for source in sorted(SNAPSHOT.glob("envs/*/pyproject.toml")):
        text = read(source)
        pinned, changes = pin_below(text, version="0.3.1", path=str(source))
        assert changed_lines(text, pinned) == {c.line for c in changes}, source
        for spec in find_openenv_requirements(pinned):
            assert not Requirement(spec).specifier.contains("0.3.1", prereleases=True), spec
        assert pin_below(pinned, version="0.3.1", path="p")[1] == []
        try:
            pin_below(text, version=RELEASE, path=str(source))
        except PinError:
            refused.append(source.parent.name)
    assert "echo_env" in refused and "calendar_env" not in refused and "wildfire_env" not in refused


# Committing


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A git repository with two envs committed, and an unrelated file staged."""
    repo = tmp_path / "OpenEnv"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Release Bot")
    git(repo, "config", "user.email", "release@example.com")
    git(repo, "config", "commit.gpgsign", "false")
    make_env(repo, "broken_env", read(GOLDEN / "loose.toml"))
    make_env(repo, "fixed_env", read(GOLDEN / "loose.pinned.toml"))
    make_env(repo, "quiet_env", read(GOLDEN / "already_pinned.toml"))
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "initial")
    (repo / "NOTES.md").write_text("work in progress\n")
    git(repo, "add", "NOTES.md")
    return repo


@needs_git
def test_commit_pins_commits_only_the_changed_pyprojects(checkout: Path) -> None:
    results = [
        pin_env(checkout, "broken_env", version=RELEASE),
        pin_env(checkout, "quiet_env", version=RELEASE),
        lift_env_pin(checkout, "fixed_env", version=RELEASE),
    ]
    for result in results:
        if result.changed:  # the recorded diff is exactly what changed on disk
            subprocess.run(
                ["git", "apply", "-R", "--check", "-"],
                input=result.diff,
                text=True,
                cwd=checkout,
                check=True,
            )
    sha = commit_pins(checkout, results, version=RELEASE)
    assert sha == git(checkout, "rev-parse", "HEAD").strip()
    assert git(checkout, "show", "--name-only", "--format=", "HEAD").split() == [
        "envs/broken_env/pyproject.toml",
        "envs/fixed_env/pyproject.toml",
    ]
    message = git(checkout, "log", "-1", "--format=%B")
    assert "Pinned below 0.2.2 (failed): broken_env" in message
    assert "Lifted (passed 0.2.2): fixed_env" in message
    assert "quiet_env" not in message
    assert git(checkout, "status", "--porcelain").splitlines() == ["A  NOTES.md"]
    assert git(checkout, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"


@needs_git
def test_commit_pins_outside_a_git_repository_names_what_failed(tmp_path: Path) -> None:
    make_env(tmp_path, "e", read(GOLDEN / "loose.toml"))
    result = pin_env(tmp_path, "e", version=RELEASE)
    with pytest.raises(PinError) as caught:
        commit_pins(tmp_path, [result], version=RELEASE)
    assert f"git commit failed in {tmp_path}" in str(caught.value)
    assert "not a git repository" in str(caught.value)
    assert "commit envs/e/pyproject.toml by hand" in str(caught.value)


def test_commit_pins_with_nothing_changed_runs_nothing(tmp_path: Path) -> None:
    calls: list[Sequence[str]] = []

    def runner(args: Sequence[str], *, cwd: Path | None = None, timeout: float = 60) -> Completed:
        calls.append(args)
        return Completed(tuple(args), 0, "", "")

    unchanged = PinResult("e", "envs/e/pyproject.toml", "pin", False, "", ())
    assert commit_pins(tmp_path, [unchanged], version=RELEASE, runner=runner) is None
    assert calls == []


def test_commit_message_lists_pinned_and_lifted_envs() -> None:
    def result(env: str, action: str) -> PinResult:
        return PinResult(env, f"envs/{env}/pyproject.toml", action, True, "diff", ())  # type: ignore[arg-type]

    message = commit_message(
        [result("b_env", "pin"), result("a_env", "pin"), result("c_env", "lift")], version=RELEASE
    )
    assert message == (
        "Pin 2 env(s) below 0.2.2; lift the pins of 1 env(s) passing 0.2.2\n\n"
        "Pinned below 0.2.2 (failed): a_env, b_env\n"
        "Lifted (passed 0.2.2): c_env\n"
    )
    assert commit_message([result("c_env", "lift")], version=RELEASE).startswith(
        "Lift the pins of 1 env(s) passing 0.2.2\n\nLifted"
    )


# Every file the build reads


PYPROJECT_LOOSE = '[project]\nname = "e"\ndependencies = ["openenv[core]>=0.2.0"]\n'


def test_pin_env_pins_requirements_files_too_and_lift_restores_them(tmp_path: Path) -> None:
    make_env(tmp_path, "e", PYPROJECT_LOOSE)
    reqs = tmp_path / "envs" / "e" / "server" / "requirements.txt"
    reqs.parent.mkdir(parents=True, exist_ok=True)
    reqs.write_text("fastapi\nopenenv>=0.2.0  # the env\n-r extra.txt\n")
    (reqs.parent / "extra.txt").write_text("openenv-core\n")
    result = pin_env(tmp_path, "e", version=RELEASE)
    assert reqs.read_text() == (
        "fastapi\nopenenv>=0.2.0,<0.2.2  # the env  # openenv-release pin (was openenv>=0.2.0)\n"
        "-r extra.txt\n"
    )
    assert (reqs.parent / "extra.txt").read_text() == (
        "openenv-core<0.2.2  # openenv-release pin (was openenv-core)\n"
    )
    assert set(result.paths) == {
        "envs/e/pyproject.toml",
        "envs/e/server/requirements.txt",
        "envs/e/server/extra.txt",
    }
    lift_env_pin(tmp_path, "e", version=NEXT)
    assert reqs.read_text() == "fastapi\nopenenv>=0.2.0  # the env\n-r extra.txt\n"
    assert (reqs.parent / "extra.txt").read_text() == "openenv-core\n"
    assert read(tmp_path / "envs" / "e" / "pyproject.toml") == PYPROJECT_LOOSE


def test_pin_env_refuses_a_contradiction_in_a_requirements_file_writing_nothing(
    tmp_path: Path,
) -> None:
    path = make_env(tmp_path, "e", PYPROJECT_LOOSE)
    reqs = tmp_path / "envs" / "e" / "requirements.txt"
    reqs.write_text("openenv>=0.2.3\n")
    with pytest.raises(PinError, match=r"^envs/e/requirements.txt:1: .*at or above the release"):
        pin_env(tmp_path, "e", version=RELEASE)
    assert read(path) == PYPROJECT_LOOSE and reqs.read_text() == "openenv>=0.2.3\n"


def test_lift_restores_the_recorded_spec_not_a_new_lower_bound() -> None:
    text = '[project]\nname = "e"\ndependencies = ["openenv[core]"]\n'
    pinned, _ = pin_below(text, version=RELEASE, path="p")
    assert '"openenv[core]<0.2.2"' in pinned
    lifted, [change] = lift_pin(pinned, version=NEXT, path="p")
    assert lifted == text and "restored 'openenv[core]'" in change.why
