"""Space ids: a candidate always carries a non-empty suffix, and only promote builds a canonical."""

from __future__ import annotations

import ast
import copy
from pathlib import Path

import pytest

from releaselib.config import ReleaseConfig
from releaselib.errors import UsageError
from releaselib.space_ids import CandidateId, CanonicalId, Canonicals

ROOT = Path(__file__).resolve().parents[1]
FENCE = Canonicals.of(["echo_env", "textarena_env"], ["sudoku", "wordle"])


@pytest.mark.parametrize("suffix", ["", " ", "\t", "\n"])
def test_a_candidate_needs_a_non_blank_suffix(suffix: str) -> None:
    with pytest.raises(UsageError, match="needs a non-empty suffix"):
        CandidateId.of("openenv", "echo_env", suffix)


def test_a_release_tuple_with_an_empty_suffix_cannot_be_made(tmp_path: Path) -> None:
    config = ReleaseConfig(repo=tmp_path, version="0.2.2", ref="main", ref_reason="t", dist="openenv", suffix="-0.2.2")
    assert isinstance(config.space_id("echo_env"), CandidateId)
    assert config.space_id("echo_env") == "openenv/echo_env-0.2.2"
    with pytest.raises(UsageError, match="suffix ''"):
        config.with_(suffix="")


@pytest.mark.parametrize("kind", [CandidateId, CanonicalId])
def test_neither_id_can_be_built_by_a_plain_call(kind: type) -> None:
    with pytest.raises(TypeError, match="class methods"):
        kind("openenv/echo_env")


def test_parse_takes_only_env_plus_suffix() -> None:
    assert CandidateId.parse("openenv/echo_env-0.2.2", "-0.2.2") == "openenv/echo_env-0.2.2"
    assert CandidateId.parse("openenv/echo_env", "-0.2.2") is None
    assert CandidateId.parse("openenv/-0.2.2", "-0.2.2") is None
    with pytest.raises(UsageError):
        CandidateId.parse("openenv/echo_env", "")


@pytest.mark.parametrize("repo_id", ["openenv/echo_env", "openenv/textarena_env", "openenv/sudoku", "openenv/wordle"])
def test_a_repo_id_into_a_canonical_space_is_refused_naming_promote(repo_id: str) -> None:
    with pytest.raises(UsageError, match=f"--repo-id {repo_id}: {repo_id} is a canonical Space.*only promote") as raised:
        CandidateId.given(repo_id, FENCE)
    assert raised.value.exit_code == 2


@pytest.mark.parametrize("repo_id", ["OpenEnv/Echo_Env", "openenv/ECHO_ENV", "foo/echo_env", "me/Sudoku"])
def test_the_fence_ignores_case_and_namespace(repo_id: str) -> None:
    """The Hub's ids are case-insensitive, and --namespace must not move the fence."""
    with pytest.raises(UsageError, match="is a canonical Space"):
        CandidateId.given(repo_id, FENCE)


@pytest.mark.parametrize("suffix", ["_env", "-", ".", "-0.2.", "--0.2.2", "-0..2", ".git", "0.2.2"])
def test_a_suffix_starts_with_a_dash_and_makes_a_valid_name(suffix: str) -> None:
    """``_env`` on env ``echo`` would spell echo_env's canonical; ``-`` ends a name badly."""
    with pytest.raises(UsageError, match="starts with '-'") as raised:
        CandidateId.of("openenv", "echo", suffix)
    assert raised.value.exit_code == 2


def test_a_repo_id_elsewhere_is_a_candidate() -> None:
    given = CandidateId.given("me/echo-test", FENCE)
    assert isinstance(given, CandidateId) and (given.namespace, given.name) == ("me", "echo-test")
    assert copy.deepcopy(given) is given and copy.copy(given) is given


def test_only_promote_names_canonical_id() -> None:
    """The type is the fence: no other module of the tool can hold a canonical id."""
    allowed = {
        Path("releaselib/space_ids.py"),
        Path("releaselib/publish/promote.py"),
        Path("releaselib/publish/canonical_targets.py"),  # promote's target rules
    }
    naming = set()
    for package in ("releaselib", "openenv_release", "env_plugins"):
        for path in (ROOT / package).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
            names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
            if "CanonicalId" in names:
                naming.add(path.relative_to(ROOT))
    assert naming <= allowed, naming - allowed
    assert Path("releaselib/publish/canonical_targets.py") in naming  # the ids promote writes
