"""``rehearse --spaces 1``: the same verdicts and decisions as without a bound, while the
embedded Hub never had more than one Space building or starting."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from releaselib.rehearse import INTENDED, examples_dir, rehearse
from tests.helpers import waits

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ENVS = ("broken_env", "echo_env", "slow_env")  # FAIL/pinned, PASS/promoted, INCONCLUSIVE/held
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "commit.gpgsign=false"]


def _checkout(root: Path) -> Path:
    examples = examples_dir()
    root.mkdir()
    shutil.copy(examples / "pyproject.toml", root / "pyproject.toml")
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(examples / "src", root / "src", ignore=ignore)
    for env in ENVS:
        shutil.copytree(examples / "envs" / env, root / "envs" / env, ignore=ignore)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run([*GIT, *args], cwd=root, check=True, capture_output=True)
    return root


def test_one_space_starting_at_a_time_gives_the_verdicts_of_no_bound(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path / "OpenEnv")
    heard: list[tuple[str, str]] = []
    ended = {}
    for name, bound in (("free", None), ("one", 1)):
        result = rehearse(
            tmp_path / name,
            repo=checkout,
            envs=ENVS,
            builder="host",
            timeout=5.0,  # slow_env resets in 20 s: INCONCLUSIVE, as in the examples
            wait=waits(300),
            spaces=bound,
            on_progress=(lambda *seen: heard.append(seen)) if bound else None,
        )
        decided = {e["env"]: (e["outcome"], e["decision"]) for e in result.report["envs"]}
        canonicals = {c["target"]: c["outcome"] for c in result.report.get("canonicals", [])}
        ended[name] = (decided, canonicals, result.report["rehearsal"]["starting_peak"])
    assert ended["one"][:2] == ended["free"][:2]
    assert ended["one"][0] == {env: INTENDED[env] for env in ENVS}
    assert ended["one"][1] == {"openenv/echo_env": "PASS"}  # the promoted canonical, checked
    assert ended["one"][2] == 1 and ended["free"][2] >= 2
    queued = {space_id for space_id, stage in heard if stage == "queued"}
    assert len(queued) >= 2, heard  # deployed while the first held the one slot
