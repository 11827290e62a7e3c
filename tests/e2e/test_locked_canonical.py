"""What was verified is what the canonical runs: a dependency's breaking release, published
between the candidate's build and the promotion, reaches the canonical only when the env was
staged with ``--no-lock``; there the canonical FAILs on its own evidence and is rolled back.

Embedded Hub with the ``venv`` builder; ``tinydep`` comes from a local wheel index on 127.0.0.1.
The env is a stdlib HTTP server that refuses to start with tinydep 2.x."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from huggingface_hub import CommitOperationAdd, HfApi

from releaselib.config import release_key
from releaselib.hub.client import Hub
from releaselib.ledger.ledger import Ledger
from releaselib.ledger.paths import default_path
from releaselib.localhub import LocalHub
from releaselib.options import Options, build_config
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.release import Release, ReleaseOptions
from releaselib.stage.discover import discover_envs, select_envs
from releaselib.stage.lock_tree import CONSTRAINTS_FILE
from tests.helpers import waits
from tests.package_index import PackageIndex, serve_index

pytestmark = pytest.mark.venv
ENV, CANONICAL, CANDIDATE = "tiny_env", "openenv/tiny_env", "openenv/tiny_env-0.2.2"
DOCKERFILE = (
    "FROM python:3.11-slim\nWORKDIR /app\nCOPY requirements.txt .\n"
    "RUN pip install -r requirements.txt\nCOPY server.py .\n"
    'CMD ["python", "server.py"]\n'
)
SERVER = '''"""An OpenEnv-shaped echo server on $PORT that breaks with tinydep 2.x."""
import json
import os
from http.server import BaseHTTPRequestHandler, HTTPServer
from importlib.metadata import version

import tinydep  # noqa: F401

if version("tinydep").startswith("2."):
    raise RuntimeError(f"tinydep {version('tinydep')} is not supported")

STEP = {"observation": {"echoed": "x"}, "reward": 0.0, "done": False}
ACTION = {"type": "object", "properties": {"message": {"type": "string"}}}
ANSWERS = {
    ("GET", "/health"): {"status": "healthy", "tinydep": version("tinydep")},
    ("GET", "/schema"): {"action": ACTION, "observation": {"type": "object"}},
    ("POST", "/reset"): STEP,
    ("POST", "/step"): STEP,
}


class Handler(BaseHTTPRequestHandler):
    def answer(self, method):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        body = ANSWERS.get((method, self.path.split("?")[0]))
        data = json.dumps(body if body is not None else {"detail": "Not Found"}).encode()
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.answer("GET")

    def do_POST(self):
        self.answer("POST")


HTTPServer((os.environ.get("HOST", "127.0.0.1"), int(os.environ["PORT"])), Handler).serve_forever()
'''
README = "---\ntitle: Tiny\nsdk: docker\napp_port: 8000\n---\n# tiny\n"
PREVIOUS = {"README.md": b"---\ntitle: tiny, 0.2.1\nsdk: docker\n---\n# Tiny 0.2.1\n"}


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PackageIndex]:
    """tinydep 1.0 on a local index; uv's cache and the lock cache are this test's own."""
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    with serve_index(tmp_path / "index") as served:
        served.publish("tinydep", "1.0")
        yield served


def tree(api: HfApi, space_id: str, revision: str) -> dict[str, bytes]:
    """Every file of the Space at ``revision``, by path."""
    paths = api.list_repo_files(space_id, repo_type="space", revision=revision)
    return {
        p: Path(api.hf_hub_download(space_id, p, repo_type="space", revision=revision)).read_bytes()
        for p in paths
    }


def built(local: LocalHub, space_id: str, commit: str) -> str:
    """The tinydep version the venv builder installed for ``space_id`` at ``commit``."""
    env = local.state_dir / "runtime" / space_id / f"env-{commit}"
    [found] = env.glob("lib/python*/site-packages/tinydep-*.dist-info")
    return found.name.removesuffix(".dist-info").split("-")[1]


@pytest.mark.parametrize("lock", [True, False], ids=["lock", "no-lock"])
def test_a_breaking_release_after_verify_reaches_only_the_unlocked_canonical(
    index: PackageIndex, checkout: Path, tmp_path: Path, lock: bool
) -> None:
    env = checkout / "envs" / ENV
    env.mkdir()
    files = {
        "Dockerfile": DOCKERFILE,
        "requirements.txt": index.options() + "tinydep>=1\n",
        "server.py": SERVER,
        "README.md": README,
    }
    for name, text in files.items():
        (env / name).write_text(text)
    with LocalHub(tmp_path / "hub", builder="venv", build_timeout=waits(120)) as local:
        api = HfApi(endpoint=local.endpoint, token=local.token)
        api.create_repo(CANONICAL, repo_type="space", space_sdk="docker")
        own = [CommitOperationAdd(path, content) for path, content in PREVIOUS.items()]
        previous = api.create_commit(CANONICAL, own, commit_message="0.2.1", repo_type="space").oid

        config, resolution = build_config(
            Options(
                repo=str(checkout),
                staging_dir=str(tmp_path / "staging"),
                hub_endpoint=local.endpoint,
            )
        )
        ledger = Ledger.load(default_path(config), release_key(config))
        hub = Hub.connect(local.endpoint, token=local.token)
        registry = PluginRegistry(get_plugin_manager())
        specs = select_envs(discover_envs(checkout), [ENV])
        tls = ssl.create_default_context(cafile=str(local.ca_bundle))

        def release(until_step: str = "report") -> None:
            options = ReleaseOptions(
                interval=0.2, timeout=waits(10), wait=waits(120), rehearsal="venv",
                allow_embedded_hub=True, tls=tls, lock=lock, until_step=until_step,
            )  # fmt: skip
            Release(config, resolution, hub, registry, ledger, options).run(specs)

        release(until_step="verify")
        verify = ledger.env(ENV).get("verify")
        assert verify is not None and verify.data["outcome"] == "PASS", verify
        assert built(local, CANDIDATE, verify.data["commit"]) == "1.0"
        constraints = config.staging_dir / "openenv" / "tiny_env-0.2.2" / CONSTRAINTS_FILE
        locked = constraints.read_text() if constraints.is_file() else None
        assert locked == ("tinydep==1.0\n" if lock else None)

        index.publish("tinydep", "2.0")  # the breaking release, before the canonical rebuilds
        release()  # resumed: re-staged (the lock from its cache), promote, canonical check, pin
        entry = ledger.env(ENV)
        promoted = entry.get("promote").data["promotions"][0]["pushed"]  # type: ignore[union-attr]
        (check,) = entry.get("canonical").data["checks"]  # type: ignore[union-attr]
        assert (check["target"], check["previous"], check["promoted"]) == (
            CANONICAL,
            previous,
            promoted,
        )
        pin = entry.get("pin")  # its code passed as a candidate: never pinned, checkout untouched
        assert pin is not None and pin.data["decision"] == "lifted", pin
        assert {p.name: p.read_text() for p in env.iterdir()} == files
        if lock:
            assert check["outcome"] == "PASS" and not check["rolled_back"], check
            assert api.space_info(CANONICAL).sha == promoted
            assert built(local, CANONICAL, promoted) == "1.0"  # the verified version
            return
        assert check["outcome"] == "FAIL" and "RUNTIME_ERROR" in check["reason"], check
        assert "tinydep 2.0 is not supported" in check["reason"], check
        assert check["rolled_back"], check
        restored = check["rollback"]["commit"]
        assert restored not in (previous, promoted) and api.space_info(CANONICAL).sha == restored
        assert tree(api, CANONICAL, restored) == tree(api, CANONICAL, previous)
        assert built(local, CANONICAL, promoted) == "2.0"  # the breaking release
