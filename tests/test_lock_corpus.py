"""Lock the 34 real envs of the snapshot: how many are locked, and why each other one is not.

Slow (a cold lock cache resolves every env against PyPI: about two minutes; warm, the staged
checks of 34 trees still take tens of seconds). The numbers are in bench/lock_corpus.py too.
"""

from __future__ import annotations

import re

import pytest

from releaselib.edit.dockerfile_model import Dockerfile
from releaselib.options import Options, build_config
from releaselib.shell import run
from releaselib.stage.discover import discover_envs, select_envs
from releaselib.stage.lock_tree import CONSTRAINTS_FILE, LOCK_PATH
from releaselib.stage.stage_env import StageRun, stage_envs
from tests.corpus import git_materialise
from tests.helpers import builtin_registry

pytestmark = [pytest.mark.corpus, pytest.mark.slow]
PIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[^\s;]+(?: ?;.+)?$")
#: envs whose own pins contradict OpenEnv's dependencies at the ref (or each other): no
#: resolution exists, so they are named, never locked wrong
CONFLICTING = {
    "carla_env": "websockets==13.1",
    "finrl_env": "alpaca-trade-api>=3.0.0 depends on websockets>=9.0,<11",
    "openapp_env": "Because all of:",
}


def test_the_corpus_is_locked_but_for_the_envs_named_with_their_reason(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    checkout = git_materialise(tmp_path_factory.mktemp("checkout"))
    staging = tmp_path_factory.mktemp("staging")
    remote = str(staging.parent / "no-remote")
    head = run(["git", "-C", str(checkout), "rev-parse", "HEAD"]).stdout.strip()  # the pin: offline
    options = Options(
        repo=str(checkout), version="0.2.2", staging_dir=str(staging), remote=remote, ref=head,
        dist="openenv",
    )
    config, _ = build_config(options)
    specs = select_envs(discover_envs(checkout), [])
    results = stage_envs(config, specs, builtin_registry(), StageRun())
    assert len(results) == 34 and [r.error for r in results if not r.ok] == []
    unlocked = {r.env: r.lock.unlocked for r in results if r.lock and r.lock.unlocked}
    locked = [r for r in results if r.lock and r.lock.digest]
    print(f"\n{len(locked)} of 34 locked; not locked: {unlocked}")
    assert len(locked) + len(unlocked) == 34
    assert set(unlocked) == set(CONFLICTING)
    for env, why in unlocked.items():
        assert why.startswith("resolution failed: ") and CONFLICTING[env] in why, (env, why)
        assert not (staging / "openenv" / f"{env}-0.2.2" / CONSTRAINTS_FILE).exists()
    for result in locked:
        pins = (result.staged_dir / CONSTRAINTS_FILE).read_text().splitlines()
        assert len(pins) == result.lock.packages and all(PIN.match(p) for p in pins), result.env
        assert not any(p.startswith(("openenv==", "openenv-core==")) for p in pins), result.env
        df = Dockerfile.parse((result.staged_dir / "Dockerfile").read_text())
        stages = [s for s in df.stages if df.parent(s) is None]
        named = [df.stage_env(s).get("PIP_CONSTRAINT") for s in stages]
        assert LOCK_PATH in named, result.env  # every image stage that runs commands has it
