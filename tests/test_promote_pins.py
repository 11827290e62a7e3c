"""Promote refuses a candidate whose OpenEnv requirement is still a pin ``pin`` wrote."""

from __future__ import annotations

from pathlib import Path

from huggingface_hub import CommitOperationAdd

from releaselib.publish.pin_files import pin_below
from releaselib.publish.promote import promote
from releaselib.records import Verdict
from tests.release_world import make_release

PYPROJECT = '[project]\nname = "echo"\nversion = "0.1.0"\ndependencies = ["openenv[core]>=0.2.0"]\n'


def test_a_tree_carrying_a_tool_written_pin_is_not_published(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path, {"echo_env": ("PASS", ">=0.2.0")}, canonicals=("openenv/echo_env",))
    before = release.head("openenv/echo_env")
    candidate = release.candidate("echo_env")
    pinned, _ = pin_below(PYPROJECT, version="0.2.2", path="pyproject.toml")
    operation = CommitOperationAdd("envs/echo_env/pyproject.toml", pinned.encode())
    commit = release.api.create_commit(candidate, [operation], commit_message="pinned", repo_type="space")
    verdicts = {"echo_env": Verdict("echo_env", candidate, "PASS", commit.oid)}
    (decision,) = promote(release.hub, release.config, verdicts, release.registry)
    assert decision.status == "failed"
    assert "envs/echo_env/pyproject.toml: openenv[core]>=0.2.0,<0.2.2 is a pin openenv-release wrote" in decision.reason
    assert release.head("openenv/echo_env") == before
