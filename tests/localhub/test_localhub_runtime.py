"""The container-less Space runtime, with a real openenv-core server behind an https domain."""

from __future__ import annotations

import ssl
from pathlib import Path

import certifi
import httpx
import pytest
from huggingface_hub import HfApi
from localhub_helpers import (
    QUICK_APP,
    copy_tiny_env,
    processes_mentioning,
    wait_for_stage,
    write_tree,
)

from releaselib.localhub import LocalHub, free_port, start_space_process
from tests.helpers import waits

SETTLED = {"RUNNING", "RUNTIME_ERROR", "BUILD_ERROR"}


@pytest.fixture(scope="module")
def counter_space(api: HfApi, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The tiny openenv-core env, deployed once to a private Space."""
    repo_id = api.create_repo(
        "acme/counter_env-0.3", repo_type="space", space_sdk="docker", private=True
    ).repo_id
    tree = copy_tiny_env(tmp_path_factory.mktemp("counter") / "tree")
    api.upload_folder(folder_path=tree, repo_id=repo_id, repo_type="space")
    return repo_id


@pytest.fixture
def probe_env(hub: LocalHub, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """What the release tool's probes get: the client env, SSL_CERT_FILE included."""
    env = hub.client_env()
    monkeypatch.setenv("SSL_CERT_FILE", env["SSL_CERT_FILE"])
    return {"Authorization": f"Bearer {env['HF_TOKEN']}"}


def _domain(api: HfApi, repo_id: str, *, stages: set[str] = SETTLED) -> str:
    runtime = wait_for_stage(api, repo_id, stages)
    assert runtime.stage == "RUNNING", runtime.raw.get("errorMessage")
    return f"https://{runtime.raw['domains'][0]['domain']}"


def test_openenv_space_serves_reset_and_step(
    api: HfApi, counter_space: str, probe_env: dict[str, str]
) -> None:
    domain = _domain(api, counter_space)
    with httpx.Client(base_url=domain, headers=probe_env, timeout=waits(30)) as client:
        assert client.get("/health").json() == {"status": "healthy"}
        assert client.post("/reset", json={}).json()["observation"] == {"total": 0}
        step = client.post("/step", json={"action": {"amount": 3}}).json()
        assert step["observation"] == {"total": 3} and step["reward"] == 3.0


def test_private_domain_answers_404_without_the_token(
    api: HfApi, counter_space: str, probe_env: dict[str, str]
) -> None:
    domain = _domain(api, counter_space)
    assert httpx.get(f"{domain}/health").status_code == 404
    assert httpx.get(f"{domain}/health", headers={"Authorization": "Bearer x"}).status_code == 404


def test_domains_need_the_local_ca(api: HfApi, counter_space: str) -> None:
    domain = _domain(api, counter_space)
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        httpx.get(domain, verify=ssl.create_default_context(cafile=certifi.where()))


def test_variables_reach_the_process(
    api: HfApi, counter_space: str, probe_env: dict[str, str]
) -> None:
    api.add_space_variable(counter_space, "COUNTER_START", "41")
    domain = _domain(api, counter_space)
    reset = httpx.post(f"{domain}/reset", json={}, headers=probe_env, timeout=waits(30))
    assert reset.json()["observation"] == {"total": 41}


def test_stdlib_shadowing_ends_in_runtime_error(api: HfApi, tmp_path: Path) -> None:
    repo_id = api.create_repo("acme/shadowed", repo_type="space", space_sdk="docker").repo_id
    tree = copy_tiny_env(tmp_path / "tree")
    write_tree(tree, {"src/core/types.py": "from dataclasses import dataclass\n"})
    dockerfile = (tree / "Dockerfile").read_text()
    (tree / "Dockerfile").write_text(
        dockerfile.replace(
            "COPY --from=builder /app/env /app/env",
            "COPY --from=builder /app/env /app/env\nCOPY src/ /app/src/",
        ).replace('ENV PYTHONPATH="/app/env:$PYTHONPATH"', "ENV PYTHONPATH=/app/src/core:/app/env")
    )
    api.upload_folder(folder_path=tree, repo_id=repo_id, repo_type="space")
    runtime = wait_for_stage(api, repo_id, SETTLED)
    assert runtime.stage == "RUNTIME_ERROR"
    assert "ImportError: cannot import name" in runtime.raw["errorMessage"]
    assert "types.py" in runtime.raw["errorMessage"]


def test_pause_stops_the_process_and_restart_brings_it_back(
    hub: LocalHub, api: HfApi, tmp_path: Path, probe_env: dict[str, str]
) -> None:
    repo_id = api.create_repo("acme/quick", repo_type="space", space_sdk="docker").repo_id
    api.upload_folder(
        folder_path=write_tree(tmp_path, QUICK_APP), repo_id=repo_id, repo_type="space"
    )
    domain = _domain(api, repo_id)
    assert httpx.get(f"{domain}/x").json()["path"] == "/x"
    run_dir = str(hub.state_dir / "runtime" / repo_id)
    assert processes_mentioning(run_dir)

    assert api.pause_space(repo_id).stage == "PAUSED"
    assert processes_mentioning(run_dir) == []
    assert httpx.get(f"{domain}/x").status_code == 503

    api.restart_space(repo_id)
    assert httpx.get(f"{_domain(api, repo_id)}/y").json()["path"] == "/y"


def test_no_space_process_survives_the_hub(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with LocalHub(state) as hub:
        api = HfApi(endpoint=hub.endpoint, token=hub.token)
        repo_id = api.create_repo("acme/quick", repo_type="space", space_sdk="docker").repo_id
        api.upload_folder(
            folder_path=write_tree(tmp_path / "tree", QUICK_APP), repo_id=repo_id, repo_type="space"
        )
        _domain(api, repo_id)
        assert processes_mentioning(str(state))
    assert processes_mentioning(str(state)) == []


def test_start_space_process_maps_image_paths_onto_its_root(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "tree", QUICK_APP)
    with start_space_process(tree, port=free_port(), env={"GREETING": "hi"}) as process:
        assert process.wait_ready(30), process.stderr_tail()
        answer = httpx.get(f"http://127.0.0.1:{process.port}/env", trust_env=False).json()
        assert answer == {"path": "/env", "greeting": "hi"}
        environ = Path(f"/proc/{process.pid}/environ").read_bytes().split(b"\0")
        assert f"HOME={process.root}/home/user".encode() in environ
        assert f"PYTHONPATH={process.root}/app/src".encode() in environ
    assert process.exit_code() is not None and not process.root.exists()


#: A Space whose server keeps connections alive (HTTP/1.1) and answers with the client's port.
KEEP_ALIVE_APP = {
    "Dockerfile": QUICK_APP["Dockerfile"],
    "app.py": (
        "import argparse\n"
        "from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer\n"
        "class Handler(BaseHTTPRequestHandler):\n"
        "    protocol_version = 'HTTP/1.1'\n"
        "    def do_GET(self):\n"
        "        body = str(self.client_address[1]).encode()\n"
        "        self.send_response(200)\n"
        "        self.send_header('Content-Length', str(len(body)))\n"
        "        self.end_headers()\n"
        "        self.wfile.write(body)\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--host')\n"
        "parser.add_argument('--port', type=int)\n"
        "args = parser.parse_args()\n"
        "ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()\n"
    ),
}


def test_each_request_reaches_the_space_on_a_new_connection(
    api: HfApi, tmp_path: Path, probe_env: dict[str, str]
) -> None:
    """A connection kept alive between requests can be closed by the Space's server as idle just
    as the next request goes out: that request fails unanswered, a 502 that is not the Space's."""
    repo_id = api.create_repo("acme/keep_alive", repo_type="space", space_sdk="docker").repo_id
    api.upload_folder(
        folder_path=write_tree(tmp_path / "tree", KEEP_ALIVE_APP), repo_id=repo_id, repo_type="space"
    )
    domain = _domain(api, repo_id)
    with httpx.Client(base_url=domain, headers=probe_env, timeout=waits(30)) as client:
        ports = [client.get("/").text for _ in range(3)]
    assert len(set(ports)) == 3, ports
