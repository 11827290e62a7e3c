"""Stage all 34 real envs of the snapshot and check the staging invariants for every one."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import dockerfile
import pytest
import yaml
from packaging.requirements import Requirement

from releaselib.options import Options, build_config
from releaselib.stage.discover import discover_envs, select_envs
from releaselib.stage.stage_env import StageRun, stage_envs
from tests.corpus import materialise, tree_digest
from tests.helpers import TEST_SHA, builtin_registry

pytestmark = pytest.mark.corpus

OPENENV_URL = re.compile(
    r"git\+https://github\.com/(?:huggingface|meta-pytorch)/OpenEnv(?:\.git)?(@[\w.\-/]+)?"
)
LOOSE = re.compile(r"""(?<![\w-])openenv(?:-core)?(?:\[[\w,]+\])?\s*(?:[<>=!~]=?|$|["'])""")


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory):
    checkout = materialise(tmp_path_factory.mktemp("checkout"))
    before = tree_digest(checkout)
    staging = tmp_path_factory.mktemp("staging")
    config, _ = build_config(
        Options(
            repo=str(checkout),
            version="0.2.2",
            staging_dir=str(staging),
            remote=str(staging / "no-remote"), ref=TEST_SHA, dist="openenv",
        )
    )
    registry = builtin_registry()
    # without the lock, which resolves against PyPI: tests/test_lock_corpus.py (slow) locks
    results = stage_envs(config, select_envs(discover_envs(checkout), []), registry, StageRun(lock=False))
    return config, results, before, tree_digest(checkout)


def test_all_34_envs_stage(staged) -> None:
    _, results, _, _ = staged
    assert len(results) == 34
    assert [r.error for r in results if not r.ok] == []


def test_the_checkout_is_byte_identical_afterwards(staged) -> None:
    _, _, before, after = staged
    assert before == after


def openenv_requirements(pyproject: Path) -> list[str]:
    data = tomllib.loads(pyproject.read_text())
    project = data.get("project", {})
    specs = list(project.get("dependencies", []))
    for group in (project.get("optional-dependencies", {}), data.get("dependency-groups", {})):
        for values in group.values():
            specs += [v for v in values if isinstance(v, str)]
    return [s for s in specs if Requirement(s).name in {"openenv", "openenv-core"}]


def final_stage(commands):
    starts = [i for i, c in enumerate(commands) if c.cmd == "FROM"]
    return commands[starts[-1] :]


def test_every_env_meets_the_staging_invariants(staged) -> None:
    config, results, _, _ = staged
    for result in results:
        tree = result.staged_dir
        where = result.env
        assert not list(tree.rglob("uv.lock")), where
        commands = dockerfile.parse_file(str(tree / "Dockerfile"))
        for command in commands:
            if command.cmd == "FROM":
                assert "$" not in " ".join(command.value), (where, command.original)
            if command.cmd == "RUN":
                text = command.original
                for match in OPENENV_URL.finditer(text):
                    assert match.group(1) == f"@{config.ref}", (where, text)
                assert not LOOSE.search(text.replace(f"{config.dist}[core] @", "")), (where, text)
        env_pairs = [c.value for c in final_stage(commands) if c.cmd == "ENV"]
        flat = {pairs[i]: pairs[i + 1] for pairs in env_pairs for i in range(0, len(pairs), 2)}
        assert flat.get("ENABLE_WEB_INTERFACE") == "true", where
        for pyproject in (tree / "pyproject.toml", tree / "envs" / result.env / "pyproject.toml"):
            for spec in openenv_requirements(pyproject):
                assert (
                    spec
                    == f"{config.dist}[core] @ git+https://github.com/huggingface/OpenEnv.git@{config.ref}"
                ), (where, spec)
        for requirements in tree.rglob("requirements*.txt"):
            for line in requirements.read_text().splitlines():
                if line.strip().startswith("openenv"):
                    assert line.strip().endswith(f"@{config.ref}"), (where, line)
        front = (tree / "README.md").read_text().split("---")[1]
        tags = yaml.safe_load(front)["tags"]
        assert "openenv" in tags and f"openenv-{config.version}" in tags, where


def test_manifest_lists_every_staged_file(staged) -> None:
    _, results, _, _ = staged
    for result in results:
        on_disk = {
            p.relative_to(result.staged_dir).as_posix()
            for p in result.staged_dir.rglob("*")
            if p.is_file()
        }
        assert set(result.manifest) == on_disk, result.env
