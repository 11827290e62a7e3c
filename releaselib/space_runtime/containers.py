"""Build a staged Space in a local Docker or Podman engine, run it on loopback, probe it, remove it.

The engine is ``$CONTAINER_ENGINE`` if set, else the first of docker and podman whose ``info``
answers. Docker builds go through BuildKit (``buildx`` when present, else ``DOCKER_BUILDKIT=1``),
because staged Dockerfiles use ``RUN --mount``; Podman's builder supports it natively. Offline,
the staged pyprojects install a wheel built from the checkout instead of the OpenEnv git ref, and
Podman never pulls, so the base images must exist locally (docs/local-containers.md).
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import httpx
import tomlkit
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import parse_wheel_filename

from releaselib.edit.requirement import OPENENV_DISTS
from releaselib.env_facts import read_app_port
from releaselib.errors import ReleaseError
from releaselib.shell import Completed, Runner
from releaselib.shell import run as default_run
from releaselib.space_runtime.process import free_port
from releaselib.verify.probe import Outcome, ProbeResult, probe_base_url

ENGINE_VAR = "CONTAINER_ENGINE"
ENGINES = ("docker", "podman")
WHEELS = "wheels"
LOG_LINES = 30


class EngineUnavailable(ReleaseError):
    """No container engine answers on this machine (a usage error: pick another builder)."""

    exit_code = 2


@dataclass(frozen=True)
class Engine:
    """A container CLI that answered ``info``, and the argv that builds with BuildKit."""

    name: str
    build: tuple[str, ...]


def detect_engine(runner: Runner = default_run, preferred: str | None = None) -> Engine:
    """The first engine whose ``info`` answers; EngineUnavailable says why none did."""
    chosen = preferred or os.environ.get(ENGINE_VAR)
    reasons = []
    for name in (chosen,) if chosen else ENGINES:
        info = runner([name, "info"], timeout=30)
        if info.ok:
            return Engine(name, build_argv(name, runner))
        reasons.append(f"{name}: {_first_line(info)}")
    if chosen:
        raise EngineUnavailable(
            f"the container engine {chosen} is not available ({reasons[0]})",
            remedy=f"install or start {chosen} (docs/local-containers.md)",
        )
    raise EngineUnavailable(
        "no container engine answers (" + "; ".join(reasons) + ")",
        remedy="start Docker or install Podman (docs/local-containers.md)",
    )


def build_argv(name: str, runner: Runner) -> tuple[str, ...]:
    """How ``name`` builds with BuildKit: buildx, else the classic CLI with DOCKER_BUILDKIT=1."""
    if name != "docker":
        return (name, "build")
    if runner(["docker", "buildx", "version"], timeout=30).ok:
        return ("docker", "buildx", "build", "--load")
    return ("env", "DOCKER_BUILDKIT=1", "docker", "build")


def _first_line(done: Completed) -> str:
    lines = (done.stderr or done.stdout).strip().splitlines()
    if done.returncode == 127:
        return "not installed"
    return lines[0] if lines else f"exit {done.returncode}"


def _tail(done: Completed, lines: int = LOG_LINES) -> str:
    return "\n".join((done.stdout + done.stderr).strip().splitlines()[-lines:])


# -- offline: a wheel of the checkout instead of the git ref ------------------------------------


def build_checkout_wheel(repo: Path, dest: Path, runner: Runner = default_run) -> Path:
    """Build the checkout's own wheel (``pip wheel --no-deps``) into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    done = runner(
        ["python", "-m", "pip", "wheel", "--no-deps", "-w", str(dest), str(repo.resolve())],
        timeout=600,
    )
    wheels = sorted(dest.glob("*.whl"))
    if not done.ok or not wheels:
        raise ReleaseError(
            f"could not build a wheel of {repo}: {_tail(done, 5)}",
            remedy="check that the checkout's pyproject.toml builds (pip wheel --no-deps .)",
        )
    dist = str(parse_wheel_filename(wheels[0].name)[0])
    if dist not in OPENENV_DISTS:
        raise ReleaseError(
            f"{repo} builds {dist}, not one of {', '.join(sorted(OPENENV_DISTS))}",
            remedy="pass --repo an OpenEnv checkout",
        )
    return wheels[0]


def use_local_wheel(tree: Path, wheel: Path) -> str:
    """Point the staged pyprojects' OpenEnv requirement at ``wheel`` through
    ``[tool.uv.sources]``, with a copy of it beside each; only for Dockerfiles that ``uv sync``."""
    if "uv sync" not in (tree / "Dockerfile").read_text(encoding="utf-8"):
        return "offline wheel not used: the Dockerfile does not run uv sync (it keeps the git ref)"
    dist = parse_wheel_filename(wheel.name)[0]
    changed = []
    pyprojects = sorted(tree.glob("pyproject.toml")) + sorted(tree.glob("envs/*/pyproject.toml"))
    for pyproject in pyprojects:
        text = pyproject.read_text(encoding="utf-8")
        new = wheel_sourced(text, dist, f"{WHEELS}/{wheel.name}")
        if new != text:
            (pyproject.parent / WHEELS).mkdir(exist_ok=True)
            shutil.copyfile(wheel, pyproject.parent / WHEELS / wheel.name)
            pyproject.write_text(new, encoding="utf-8")
            changed.append(pyproject.relative_to(tree).as_posix())
    return f"{dist} from {wheel.name} in " + (", ".join(changed) or "no pyproject (none names it)")


def wheel_sourced(text: str, dist: str, wheel_path: str) -> str:
    """``text`` with each OpenEnv dependency renamed to ``dist`` without a URL, and
    ``[tool.uv.sources]`` pointing ``dist`` at ``wheel_path``."""
    doc = tomlkit.parse(text)
    dependencies = doc.get("project", {}).get("dependencies")
    if dependencies is None:
        return text
    found = False
    for index, spec in enumerate(list(dependencies)):
        local = _local_requirement(str(spec), dist)
        if local is not None:
            dependencies[index] = local
            found = True
    if not found:
        return text
    sources = doc.setdefault("tool", tomlkit.table()).setdefault("uv", tomlkit.table())
    sources = sources.setdefault("sources", tomlkit.table())
    sources[dist] = tomlkit.inline_table()
    sources[dist]["path"] = wheel_path
    return tomlkit.dumps(doc)


def _local_requirement(spec: str, dist: str) -> str | None:
    try:
        requirement = Requirement(spec)
    except InvalidRequirement:
        return None
    if requirement.name.lower() not in OPENENV_DISTS:
        return None
    extras = f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else ""
    marker = f"; {requirement.marker}" if requirement.marker else ""
    return f"{dist}{extras}{marker}"


# -- build, run, probe, remove ------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One engine command and how long it took."""

    what: str
    ok: bool
    seconds: float

    def __str__(self) -> str:
        return f"  {'ok  ' if self.ok else 'FAIL'} {self.seconds:7.1f}s  {self.what}"


@dataclass(frozen=True)
class DockerReport:
    """The outcome of building and probing one staged Space in an engine."""

    env: str
    outcome: Outcome
    reason: str
    steps: tuple[Step, ...]
    probe: ProbeResult | None = None
    logs: str = ""
    cleanup: tuple[Step, ...] = ()

    def render(self) -> str:
        lines = [f"{self.env}: {self.outcome.value}: {self.reason}"] + [str(s) for s in self.steps]
        if self.probe is not None:
            lines += self.probe.render().splitlines()[1:]
        lines += [str(s) for s in self.cleanup]
        if self.logs and self.outcome is not Outcome.PASS:
            lines += ["  output (last lines):"] + [f"    {x}" for x in self.logs.splitlines()]
        return "\n".join(lines)


class _Steps:
    """Runs engine commands through the runner and records them."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.done: list[Step] = []

    def run(self, argv: Sequence[str], timeout: float) -> Completed:
        start = time.monotonic()
        result = self.runner(argv, timeout=timeout)
        self.done.append(Step(" ".join(argv), result.ok, time.monotonic() - start))
        return result


def build_and_probe(
    engine: Engine,
    env: str,
    tree: Path,
    *,
    offline: bool = False,
    probe_timeout: float = 20,
    start_timeout: float = 120,
    build_timeout: float = 1800,
    runner: Runner = default_run,
) -> DockerReport:
    """Build ``tree``, run it on a loopback port, probe it, and remove container and image (the
    report's ``cleanup``)."""
    suffix = secrets.token_hex(4)
    tag = f"localhost/openenv-release-check/{env.lower()}:{suffix}"
    name = f"openenv-release-check-{env.lower()}-{suffix}"
    steps = _Steps(runner)
    try:
        built = steps.run(image_build_argv(engine, tag, tree, pull_never=offline), build_timeout)
        if not built.ok:
            logs = _tail(built)
            report = DockerReport(env, Outcome.FAIL, "build failed", tuple(steps.done), logs=logs)
        else:
            report = _run_and_probe(
                engine, env, tree, tag, name, steps, probe_timeout, start_timeout
            )
    finally:
        used = len(steps.done)
        steps.run(container_remove_argv(engine, name), 60)
        steps.run(image_remove_argv(engine, tag), 120)
    return replace(report, cleanup=tuple(steps.done[used:]))


def image_build_argv(engine: Engine, tag: str, context: Path, *, pull_never: bool) -> list[str]:
    """Build ``context`` as ``tag``; ``pull_never`` (podman) uses only local base images."""
    pull = ("--pull=never",) if pull_never and engine.name == "podman" else ()
    return [*engine.build, *_no_layers(engine), *pull, "-t", tag, str(context)]


def container_run_argv(
    engine: Engine,
    name: str,
    tag: str,
    *,
    port: int,
    app_port: int,
    env_names: Sequence[str] = (),
    detach: bool = True,
) -> list[str]:
    """Run ``tag`` as ``name`` with ``app_port`` published on 127.0.0.1:``port``; ``env_names``
    are passed by name only (their values come from the CLI's environment, never the argv)."""
    variables = [arg for key in env_names for arg in ("-e", key)]
    mode = ["-d"] if detach else ["--rm"]
    publish = f"127.0.0.1:{port}:{app_port}"
    return [engine.name, "run", *mode, "--name", name, "-p", publish, *variables, tag]


def container_remove_argv(engine: Engine, name: str) -> list[str]:
    return [engine.name, "rm", "-f", *_no_grace(engine), name]


def image_remove_argv(engine: Engine, tag: str) -> list[str]:
    return [engine.name, "rmi", "-f", tag]


def _no_layers(engine: Engine) -> tuple[str, ...]:
    """Podman/buildah keeps an untagged image per instruction of every stage (``--layers``), and
    ``rmi`` of the final tag leaves a multi-stage build's builder stage behind (hundreds of MB a
    run); ``--layers=false`` commits only the final image. The uv cache mount still persists."""
    return ("--layers=false",) if engine.name == "podman" else ()


def _no_grace(engine: Engine) -> tuple[str, ...]:
    """``podman rm -f`` stops with SIGTERM and a 10 s grace first, which a ``sh -c`` CMD (PID 1)
    ignores; ``--time=0`` kills at once, as ``docker rm -f`` does."""
    return ("--time=0",) if engine.name == "podman" else ()


def _run_and_probe(
    engine: Engine,
    env: str,
    tree: Path,
    tag: str,
    name: str,
    steps: _Steps,
    probe_timeout: float,
    start_timeout: float,
) -> DockerReport:
    port = free_port()
    run = container_run_argv(engine, name, tag, port=port, app_port=read_app_port(tree))
    started = steps.run(run, 120)
    if not started.ok:
        return DockerReport(env, Outcome.FAIL, "run failed", tuple(steps.done), logs=_tail(started))
    url = f"http://127.0.0.1:{port}"

    def running() -> bool:
        state = steps.runner([engine.name, "inspect", "-f", "{{.State.Running}}", name], timeout=30)
        return state.stdout.strip() == "true"

    if not wait_http(url, start_timeout, running):
        alive = running()
        outcome = Outcome.INCONCLUSIVE if alive else Outcome.FAIL
        why = f"no HTTP answer after {start_timeout:.0f}s" if alive else "the container exited"
        logs = _tail(steps.run([engine.name, "logs", name], 60))
        return DockerReport(env, outcome, why, tuple(steps.done), logs=logs)
    probe = probe_base_url(url, timeout=probe_timeout)
    failed = probe.outcome is not Outcome.PASS
    logs = _tail(steps.run([engine.name, "logs", name], 60)) if failed else ""
    return DockerReport(env, probe.outcome, probe.reason, tuple(steps.done), probe, logs)


def wait_http(url: str, timeout: float, running: Callable[[], bool]) -> bool:
    """Poll ``url/health`` until anything answers; False when ``running()`` turns False or
    ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{url}/health", timeout=2)
            return True
        except httpx.HTTPError:
            if not running():
                return False
        time.sleep(0.5)
    return False
