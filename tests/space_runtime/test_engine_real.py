"""The podman/docker builders against a real engine: an image build, a container behind the Space's
domain, a git+ requirement failing on the git-less base, a container that exits.

Skipped unless an engine answers (``$CONTAINER_ENGINE``, else docker, else podman) and holds the
local openenv-base stand-in (``tools/make-local-images.sh``); ``nox -s engine_builders`` runs them.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from huggingface_hub import HfApi

from releaselib.hub.signatures import SIGNATURES
from releaselib.localhub import LocalHub
from releaselib.shell import run
from releaselib.space_runtime.containers import Engine, EngineUnavailable, detect_engine
from tests.helpers import waits
from tests.space_runtime.test_engine_builder import deploy

BASE = "ghcr.io/huggingface/openenv-base:latest"


@pytest.fixture(scope="module")
def engine() -> Engine:
    try:
        found = detect_engine()
    except EngineUnavailable as exc:
        pytest.skip(f"no container engine: {exc.one_line()}")
    if not run([found.name, "image", "inspect", BASE], timeout=waits(30)).ok:
        pytest.skip(f"{found.name} has no {BASE}: run tools/make-local-images.sh")
    smoke = run([found.name, "run", "--rm", BASE, "true"], timeout=waits(60))
    if not smoke.ok:  # e.g. podman without docs/local-containers.md's containers.conf here
        pytest.skip(f"{found.name} cannot run a container: {smoke.stderr.strip()[:200]}")
    return found


@pytest.fixture(scope="module")
def hub(engine: Engine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalHub]:
    with LocalHub(tmp_path_factory.mktemp("engine-hub"), builder=engine.name) as local:
        yield local


def tree(where: Path, *lines: str) -> Path:
    where.mkdir(parents=True)
    (where / "Dockerfile").write_text("\n".join([f"FROM {BASE}", "WORKDIR /app", *lines, ""]))
    (where / "README.md").write_text("---\nsdk: docker\napp_port: 8000\n---\n")
    return where


def containers(engine: Engine) -> list[str]:
    listed = run([engine.name, "ps", "-a", "--format", "{{.Names}}"], timeout=waits(30))
    return [name for name in listed.stdout.split() if name.startswith("openenv-release-")]


def test_the_space_runs_in_a_container_and_deleting_it_removes_the_container(
    engine: Engine, hub: LocalHub, tmp_path: Path
) -> None:
    space = tree(tmp_path / "s", 'CMD ["python", "-m", "http.server", "8000"]')
    runtime = deploy(hub, space, "served", within=600)
    assert runtime.stage == "RUNNING", runtime.raw.get("errorMessage")
    assert len(containers(engine)) == 1
    tls = ssl.create_default_context(cafile=str(hub.ca_bundle))
    url = f"https://{runtime.raw['domains'][0]['domain']}/"
    auth = {"authorization": f"Bearer {hub.token}"}
    assert httpx.get(url, verify=tls, headers=auth, timeout=waits(30)).status_code == 200
    HfApi(endpoint=hub.endpoint, token=hub.token).delete_repo("openenv/served", repo_type="space")
    assert containers(engine) == []


def test_a_git_requirement_on_the_gitless_base_is_a_build_error_recover_can_name(
    hub: LocalHub, tmp_path: Path
) -> None:
    space = tree(
        tmp_path / "s",
        'RUN pip install --no-cache-dir "inflection @ git+https://github.com/jpvanhal/inflection.git"',
        'CMD ["python", "-m", "http.server", "8000"]',
    )
    runtime = deploy(hub, space, "gitless", within=600)
    assert runtime.stage == "BUILD_ERROR"
    assert [s.name for s in SIGNATURES if s.search(runtime.raw["errorMessage"])] == ["git-missing"]


def test_a_container_that_exits_is_a_runtime_error(hub: LocalHub, tmp_path: Path) -> None:
    space = tree(tmp_path / "s", 'CMD ["python", "-c", "import server.app"]')
    runtime = deploy(hub, space, "exits", within=600)
    assert runtime.stage == "RUNTIME_ERROR"
    assert "No module named 'server'" in runtime.raw["errorMessage"]
