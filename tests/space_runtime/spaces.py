"""Small staged Space trees written for the builder tests: real openenv-core servers whose
dependencies say what a build must install, and an image that lacks git."""

from __future__ import annotations

import subprocess
from pathlib import Path

#: The OpenEnv pin as staging writes it; the venv builder serves it from its --openenv checkout
#: at that ref (``examples_at_pin``: the examples, whose ``core`` extra is openenv-core 0.3.0).
OPENENV_PIN = "openenv[core] @ git+https://github.com/huggingface/OpenEnv.git@v0.3.0"


def examples_at_pin(dest: Path) -> Path:
    """A git checkout of the examples at ``dest`` whose HEAD is tagged as OPENENV_PIN's ref."""
    from releaselib.rehearse import copy_checkout, examples_dir

    checkout = copy_checkout(examples_dir(), dest)
    subprocess.run(["git", "-C", str(checkout), "tag", "v0.3.0"], check=True, capture_output=True)
    return checkout

_DOCKERFILE = """\
ARG BASE_IMAGE=ghcr.io/huggingface/openenv-base:latest
FROM ${BASE_IMAGE} AS builder
WORKDIR /app/env
COPY . /app/env
RUN apt-get update && apt-get install -y --no-install-recommends git \\
    && rm -rf /var/lib/apt/lists/*
RUN --mount=type=cache,target=/root/.cache/uv \\
    if [ -f uv.lock ]; then uv sync --frozen --no-editable; else uv sync --no-editable; fi

FROM ${BASE_IMAGE}
WORKDIR /app
COPY --from=builder /app/env/.venv /app/.venv
COPY --from=builder /app/env /app/env
ENV PATH="/app/.venv/bin:$PATH"
ENV PYTHONPATH="/app/env:$PYTHONPATH"
CMD ["sh", "-c", "cd /app/env && uvicorn server.app:app --host 0.0.0.0 --port 8000"]
"""

_PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "0.1.0"
dependencies = {dependencies}

[tool.setuptools]
packages = []
"""

_APP = '''\
"""An echo env whose step runs the message through {module}.{function}."""

from uuid import uuid4

import {module}
from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State


class Say(Action):
    message: str


class Heard(Observation):
    echoed: str = ""


class Env(Environment):
    def __init__(self) -> None:
        self._state = State(episode_id=str(uuid4()), step_count=0)

    def reset(self, seed=None, episode_id=None, **kwargs) -> Heard:
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return Heard(echoed="", reward=0.0, done=False)

    def step(self, action: Say, timeout_s=None, **kwargs) -> Heard:
        self._state.step_count += 1
        return Heard(echoed=str({module}.{function}(action.message)), reward=1.0, done=False)

    @property
    def state(self) -> State:
        return self._state


app = create_app(Env, Say, Heard, env_name="{name}")
'''


def openenv_space(folder: Path, name: str, *, imports: str, declares: list[str]) -> Path:
    """A staged openenv-core Space whose app imports ``imports`` (a pure-Python module whose
    ``camelize``/``intcomma`` it calls) and whose pyproject declares ``declares``."""
    function = {"inflection": "camelize", "humanize": "intcomma"}[imports]
    files = {
        "Dockerfile": _DOCKERFILE,
        "pyproject.toml": _PYPROJECT.format(name=name, dependencies=[OPENENV_PIN, *declares]),
        "server/__init__.py": "",
        "server/app.py": _APP.format(module=imports, function=function, name=name),
    }
    for path, text in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text.replace("'", '"') if path == "pyproject.toml" else text)
    return folder


def git_on_gitless_space(folder: Path) -> Path:
    """A Space on python:3.11-slim that pip-installs a git+ requirement without installing git."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "Dockerfile").write_text(
        "FROM python:3.11-slim\n"
        "WORKDIR /app\n"
        'RUN pip install --no-cache-dir "inflection @ git+https://github.com/jpvanhal/inflection.git@0.5.1"\n'
        'CMD ["python", "-m", "http.server", "8000"]\n'
    )
    return folder
