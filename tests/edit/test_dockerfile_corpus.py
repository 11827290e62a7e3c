"""``rewrite_for_space`` over every real env Dockerfile of the OpenEnv snapshot."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from releaselib.edit.dockerfile_model import Dockerfile
from releaselib.stage.staged_dockerfile import rewrite_for_space
from tests.corpus import SNAPSHOT as ROOT

SNAPSHOT = ROOT / "envs"
BASE = "ghcr.io/huggingface/openenv-base:latest"
REF = "v0.3.1"
OPENENV_URL = re.compile(
    r"git\+https://github\.com/(?:huggingface|meta-pytorch)/OpenEnv(?:\.git)?\S*"
)


def _dockerfiles() -> list[Path]:
    return sorted(SNAPSHOT.glob("*/server/Dockerfile")) + sorted(SNAPSHOT.glob("*/Dockerfile"))


pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(not SNAPSHOT.is_dir(), reason=f"OpenEnv snapshot not found at {SNAPSHOT}"),
]


@pytest.mark.parametrize("path", _dockerfiles(), ids=lambda p: p.relative_to(SNAPSHOT).as_posix())
def test_rewrite_real_dockerfile(path: Path) -> None:
    env = path.relative_to(SNAPSHOT).parts[0]
    new, changes = rewrite_for_space(
        path.read_text(), path=f"envs/{env}/Dockerfile", base_image=BASE, dist="openenv", ref=REF
    )
    df = Dockerfile.parse(new)
    variable_froms = [s.base for s in df.stages if "$" in s.base]
    assert variable_froms == (["${OPENSPIEL_BASE_IMAGE}"] if env == "openspiel_env" else [])
    for url in OPENENV_URL.findall(new):
        assert url.split(".git", 1)[-1].startswith(f"@{REF}"), url
    assert df.stage_env(base_env={})["ENABLE_WEB_INTERFACE"] == "true"
    assert "uv sync --frozen" not in new
    assert all(c.file == f"envs/{env}/Dockerfile" for c in changes)


def test_the_corpus_is_all_there() -> None:
    assert len(_dockerfiles()) == 34
