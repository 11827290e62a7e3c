"""The podman/docker builders without an engine: the embedded Hub drives a stand-in engine CLI
(a script named like the engine, first on PATH) and the real Hub client watches the Space.

The stand-in records every argv; ``run`` serves HTTP on the published port like a container.
The same flows against a real engine are in test_engine_real.py.
"""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from huggingface_hub import HfApi, SpaceRuntime

from releaselib.localhub import LocalHub
from releaselib.space_runtime.builders import BUILDERS
from releaselib.space_runtime.containers import EngineUnavailable
from tests.helpers import MAIN, waits

ROOT = Path(__file__).resolve().parents[2]
CLI = ["-c", MAIN]
DONE = {"RUNNING", "BUILD_ERROR", "RUNTIME_ERROR"}
SECRET = "s3cr3t-value-never-on-argv"

FAKE_ENGINE = r"""
import json, os, sys, time
from pathlib import Path

state = Path(os.environ["FAKE_ENGINE_STATE"])
args = sys.argv[1:]
with open(state / "calls.jsonl", "a") as log:
    log.write(json.dumps(args) + "\n")
images = state / "images"
images.mkdir(exist_ok=True)
key = lambda tag: tag.replace("/", "_").replace(":", "_")
if args[:1] == ["buildx"]:
    args = args[1:]
verb = args[0]
if verb in ("info", "version"):
    sys.exit(0)
if verb == "image":
    sys.exit(0 if (images / key(args[2])).exists() else 1)
if verb == "build":
    tag, context = args[args.index("-t") + 1], Path(args[-1])
    dockerfile = (context / "Dockerfile").read_text()
    print("STEP 1/2: FROM ghcr.io/huggingface/openenv-base:latest", flush=True)
    started = time.monotonic()
    if "slow-build" in dockerfile:
        time.sleep(60)
    if "takes-a-second" in dockerfile:
        time.sleep(1)
    with open(state / "builds.jsonl", "a") as log:
        log.write(json.dumps([started, time.monotonic()]) + "\n")
    if "fails-to-build" in dockerfile:
        print("ERROR: Cannot find command 'git' - do you have 'git' installed?", file=sys.stderr)
        sys.exit(1)
    (images / key(tag)).write_text(str(context))
    print(f"Successfully tagged {tag}")
    sys.exit(0)
if verb == "run" and args[-1] == "true":  # the builder's smoke run of the base image
    sys.exit(0 if (images / key(args[-2])).exists() and not (state / "cannot-run").exists() else 1)
if verb == "run":
    name = args[args.index("--name") + 1]
    port = args[args.index("-p") + 1].split(":")[1]
    names = [args[i + 1] for i, arg in enumerate(args) if arg == "-e"]
    (state / f"{name}.env.json").write_text(json.dumps({n: os.environ.get(n) for n in names}))
    context = Path((images / key(args[-1])).read_text())
    if "exits" in (context / "Dockerfile").read_text():
        print("ModuleNotFoundError: No module named 'server'", file=sys.stderr)
        sys.exit(1)
    (state / f"{name}.pid").write_text(str(os.getpid()))
    os.execv(sys.executable, [sys.executable, "-m", "http.server", port, "--bind", "127.0.0.1"])
if verb == "rm":
    pid = state / f"{args[-1]}.pid"
    if pid.exists():
        os.kill(int(pid.read_text()), 9)
        pid.unlink()
    sys.exit(0)
if verb == "rmi":
    (images / key(args[-1])).unlink(missing_ok=True)
    sys.exit(0)
sys.exit(f"stand-in engine: {args} is not modelled")
"""


class FakeEngine:
    """The stand-in engine's state folder: what it was asked to do."""

    def __init__(self, name: str, state: Path) -> None:
        self.name = name
        self.state = state

    def calls(self, verb: str | None = None) -> list[list[str]]:
        lines = (self.state / "calls.jsonl").read_text().splitlines()
        calls = [json.loads(line) for line in lines]
        calls = [c for c in calls if c[:2] != ["run", "--rm"] or c[-1] != "true"]  # the smoke run
        return [c for c in calls if verb is None or verb in c[:2]]

    def running(self) -> list[str]:
        return [p.name.removesuffix(".pid") for p in self.state.glob("*.pid")]


def install_engine(name: str, where: Path, monkeypatch: pytest.MonkeyPatch) -> FakeEngine:
    bin_dir, state = where / "bin", where / "state"
    bin_dir.mkdir(parents=True)
    state.mkdir()
    script = bin_dir / name
    script.write_text(f"#!{sys.executable}\n{FAKE_ENGINE}")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_ENGINE_STATE", str(state))
    monkeypatch.delenv("CONTAINER_ENGINE", raising=False)
    (state / "images").mkdir()
    (state / "images" / "ghcr.io_huggingface_openenv-base_latest").write_text("base")
    return FakeEngine(name, state)


def space_tree(where: Path, cmd: str = '["python", "-m", "http.server", "8000"]') -> Path:
    where.mkdir(parents=True)
    (where / "Dockerfile").write_text(
        f"FROM ghcr.io/huggingface/openenv-base:latest\nWORKDIR /app\nCMD {cmd}\n"
    )
    (where / "README.md").write_text("---\nsdk: docker\napp_port: 8000\n---\n# a Space\n")
    return where


def deploy(
    hub: LocalHub, tree: Path, name: str, secrets: dict[str, str] | None = None, within: float = 60
) -> SpaceRuntime:
    """Commit ``tree`` as the private Space openenv/<name>; its runtime once it runs or fails."""
    api = HfApi(endpoint=hub.endpoint, token=hub.token)
    repo_id = f"openenv/{name}"
    api.create_repo(repo_id, repo_type="space", space_sdk="docker", private=True)
    for key, value in (secrets or {}).items():
        api.add_space_secret(repo_id, key, value)
    api.upload_folder(repo_id=repo_id, repo_type="space", folder_path=tree)
    return deploy_wait(api, repo_id, within)


def deploy_wait(api: HfApi, repo_id: str, within: float = 60) -> SpaceRuntime:
    """The Space's runtime once it runs or fails."""
    deadline = time.monotonic() + waits(within)
    while (runtime := api.get_space_runtime(repo_id)).stage not in DONE:
        assert time.monotonic() < deadline, f"{repo_id} still {runtime.stage}"
        time.sleep(0.1)
    return runtime


@pytest.fixture(params=["podman", "docker"])
def engine_hub(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[LocalHub, FakeEngine]]:
    engine = install_engine(request.param, tmp_path / "engine", monkeypatch)
    with LocalHub(tmp_path / "hub", builder=request.param) as hub:
        yield hub, engine


def test_the_engines_are_builders() -> None:
    assert {"podman", "docker"} <= set(BUILDERS)


def test_the_space_runs_as_a_container_behind_its_domain_and_deleting_it_removes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = install_engine("podman", tmp_path / "engine", monkeypatch)
    with LocalHub(tmp_path / "hub", builder="podman") as hub:
        runtime = deploy(hub, space_tree(tmp_path / "s"), "web", {"API_KEY": SECRET})
        assert runtime.stage == "RUNNING", runtime.raw.get("errorMessage")
        (build,) = engine.calls("build")
        assert build[0] == "build" and "--pull=never" in build and "--layers=false" in build
        tag = build[build.index("-t") + 1]
        assert tag.startswith("localhost/openenv-release-space/web-")
        (run,) = engine.calls("run")
        assert run[-1] == tag and run[run.index("-p") + 1].startswith("127.0.0.1:")
        assert run[run.index("-p") + 1].endswith(":8000")
        assert SECRET not in json.dumps(engine.calls())  # secrets go by name only
        (container,) = engine.running()
        seen = json.loads((engine.state / f"{container}.env.json").read_text())
        assert seen["API_KEY"] == SECRET and seen["SPACE_ID"] == "openenv/web"

        tls = ssl.create_default_context(cafile=str(hub.ca_bundle))
        url = f"https://{runtime.raw['domains'][0]['domain']}/"
        auth = {"authorization": f"Bearer {hub.token}"}
        assert httpx.get(url, verify=tls, headers=auth, timeout=waits(10)).status_code == 200

        api = HfApi(endpoint=hub.endpoint, token=hub.token)
        api.restart_space("openenv/web")
        again = deploy_wait(api, "openenv/web")
        assert again.stage == "RUNNING" and len(engine.calls("build")) == 1  # the image is reused
        (restarted,) = engine.running()
        assert ["rm", "-f", "--time=0", container] in engine.calls("rm")  # the old one is gone

        api.delete_repo("openenv/web", repo_type="space")
        assert engine.running() == []
        assert ["rm", "-f", "--time=0", restarted] in engine.calls("rm")
    assert engine.calls("rmi") == [["rmi", "-f", tag]]  # the Hub's images go with it


def test_podman_builds_natively_and_docker_through_buildkit(
    engine_hub: tuple[LocalHub, FakeEngine], tmp_path: Path
) -> None:
    hub, engine = engine_hub
    assert deploy(hub, space_tree(tmp_path / "s"), "web").stage == "RUNNING"
    (build,) = engine.calls("build")
    if engine.name == "docker":
        assert build[:3] == ["buildx", "build", "--load"]
    else:
        assert build[:2] == ["build", "--layers=false"] and "--pull=never" in build


def test_a_failed_image_build_is_a_build_error_with_the_logs_last_lines(
    engine_hub: tuple[LocalHub, FakeEngine], tmp_path: Path
) -> None:
    hub, engine = engine_hub
    tree = space_tree(tmp_path / "s")
    (tree / "Dockerfile").write_text((tree / "Dockerfile").read_text() + "# fails-to-build\n")
    runtime = deploy(hub, tree, "broken")
    assert runtime.stage == "BUILD_ERROR"
    assert "Cannot find command 'git'" in runtime.raw["errorMessage"]
    api = HfApi(endpoint=hub.endpoint, token=hub.token)
    log = "".join(api.fetch_space_logs("openenv/broken", build=True))
    assert "STEP 1/2" in log and "Cannot find command 'git'" in log
    assert engine.calls("run") == []


def test_a_container_that_exits_is_a_runtime_error_with_its_stderr(
    engine_hub: tuple[LocalHub, FakeEngine], tmp_path: Path
) -> None:
    hub, _ = engine_hub
    runtime = deploy(hub, space_tree(tmp_path / "s", cmd='["python", "-m", "exits"]'), "crash")
    assert runtime.stage == "RUNTIME_ERROR"
    assert "ModuleNotFoundError: No module named 'server'" in runtime.raw["errorMessage"]


def test_a_build_past_the_timeout_is_a_build_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_engine("podman", tmp_path / "engine", monkeypatch)
    with LocalHub(tmp_path / "hub", builder="podman", build_timeout=2) as hub:
        tree = space_tree(tmp_path / "s")
        (tree / "Dockerfile").write_text((tree / "Dockerfile").read_text() + "# slow-build\n")
        runtime = deploy(hub, tree, "slow")
    assert runtime.stage == "BUILD_ERROR"
    assert "took longer than 2 s" in runtime.raw["errorMessage"]


def test_no_more_than_build_jobs_images_build_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = install_engine("podman", tmp_path / "engine", monkeypatch)
    with LocalHub(tmp_path / "hub", builder="podman", build_jobs=1) as hub:
        api = HfApi(endpoint=hub.endpoint, token=hub.token)
        for name in ("one", "two"):
            tree = space_tree(tmp_path / name)
            (tree / "Dockerfile").write_text(
                (tree / "Dockerfile").read_text() + "# takes-a-second\n"
            )
            api.create_repo(f"openenv/{name}", repo_type="space", space_sdk="docker")
            api.upload_folder(repo_id=f"openenv/{name}", repo_type="space", folder_path=tree)
        for name in ("one", "two"):
            assert deploy_wait(api, f"openenv/{name}").stage == "RUNNING"
    lines = (engine.state / "builds.jsonl").read_text().splitlines()
    first, second = sorted(json.loads(line) for line in lines)
    assert first[1] <= second[0]  # one after the other


def test_a_missing_engine_is_one_line_naming_it_and_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no podman here
    with pytest.raises(EngineUnavailable) as raised:
        LocalHub(tmp_path / "hub", builder="podman")
    message = raised.value.one_line()
    assert message.startswith(
        "the container engine podman is not available (podman: not installed)"
    )
    assert message.endswith("or choose --builder venv") and "\n" not in message
    assert raised.value.exit_code == 2


@pytest.mark.parametrize(
    ("broken", "says", "remedy"),
    [
        ("no-base", "podman has no ghcr.io/huggingface/openenv-base:latest", "make-local-images.sh"),
        ("cannot-run", "podman cannot run a container", "docs/local-containers.md"),
    ],
)
def test_an_engine_that_cannot_run_the_base_image_refuses_to_start_the_hub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broken: str, says: str, remedy: str
) -> None:
    """Our engine's set-up problem is one line at start, never a RUNTIME_ERROR (a FAIL) per Space."""
    engine = install_engine("podman", tmp_path / "engine", monkeypatch)
    if broken == "no-base":
        for image in (engine.state / "images").iterdir():
            image.unlink()
    else:
        (engine.state / "cannot-run").touch()
    with pytest.raises(EngineUnavailable) as raised:
        LocalHub(tmp_path / "hub", builder="podman")
    message = raised.value.one_line()
    assert message.startswith(says) and remedy in message and "\n" not in message


@pytest.mark.parametrize(
    "command",
    [
        ["-m", "releaselib.localhub", "--builder", "docker"],
        [*CLI, "rehearse", "--builder", "docker"],
    ],
    ids=["localhub.serve", "rehearse"],
)
def test_a_missing_engine_exits_2_with_one_line(command: list[str], tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"  # git (rehearse copies examples/ into a checkout), no docker
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(shutil.which("git") or "git")
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, *command],
        env=env,
        capture_output=True,
        text=True,
        timeout=waits(60),
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: the container engine docker is not available")
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1
