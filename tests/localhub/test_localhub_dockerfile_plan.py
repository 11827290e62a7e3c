"""Reading what a Dockerfile's final stage runs, on real OpenEnv Dockerfiles and edge cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from releaselib.dockerfile_syntax.words import expand
from releaselib.localhub import BuildError, read_plan
from releaselib.space_runtime.plan import Copy
from releaselib.space_runtime.process import IMAGE_BASE_ENV

SNAPSHOT = Path(__file__).parents[3] / "shared" / "openenv-snapshot" / "envs"
BASE = {**IMAGE_BASE_ENV, "PATH": "/usr/bin"}


@pytest.mark.skipif(not SNAPSHOT.is_dir(), reason="needs ../shared/openenv-snapshot")
def test_echo_env_final_stage() -> None:
    plan = read_plan((SNAPSHOT / "echo_env/server/Dockerfile").read_text(), base_env=BASE)
    builder, final = plan.stages
    assert builder.name == "builder" and builder.copies == (Copy((".",), "/app/env"),)
    assert final.copies == (
        Copy(("/app/env/.venv",), "/app/.venv", from_stage=0),
        Copy(("/app/env",), "/app/env", from_stage=0),
    )
    assert final.env["PYTHONPATH"] == "/app/env:/app/src"
    assert final.env["PATH"] == "/app/.venv/bin:/usr/bin"
    assert final.workdir == "/app"
    assert final.argv == (
        "sh",
        "-c",
        "cd /app/env && uvicorn server.app:app --host 0.0.0.0 --port 8000",
    )


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ('"/app/env:$PYTHONPATH"', "/app/env:/app/src"),
        ("${PYTHONPATH}/x", "/app/src/x"),
        ("${MISSING:-fallback}", "fallback"),
        ("${MISSING:-$PYTHONPATH}", "/app/src"),  # the word is expanded too (one expand for both)
        ("${PYTHONPATH:+set}", "set"),
        ("'$PYTHONPATH'", "$PYTHONPATH"),
        (r"\$PYTHONPATH", "$PYTHONPATH"),
    ],
)
def test_expand_like_docker(word: str, expected: str) -> None:
    assert expand(word, BASE) == expected


def test_shell_form_entrypoint_relative_workdir_and_stage_inheritance() -> None:
    plan = read_plan(
        "FROM python:3.11 AS base\nWORKDIR /srv\nENV A=1\nCOPY app.py ./\n"
        'FROM base\nWORKDIR web\nENTRYPOINT ["python"]\nCMD ["-m", "web"]\n',
        base_env=BASE,
    )
    base, final = plan.stages
    assert base.copies == (Copy(("app.py",), "/srv/"),)
    assert final.base_stage == 0 and final.env["A"] == "1"
    assert (final.workdir, final.argv) == ("/srv/web", ("python", "-m", "web"))
    shell = read_plan("FROM x\nCMD uvicorn app:app --port 8000\n", base_env=BASE).final
    assert shell.argv == ("/bin/sh", "-c", "uvicorn app:app --port 8000")


def test_copies_from_an_image_are_skipped_like_run_steps() -> None:
    text = "FROM x\nCOPY --from=ghcr.io/astral-sh/uv:0.13.8 /uv /uvx /usr/local/bin/\nCOPY app.py /srv/\nCMD x\n"
    assert read_plan(text, base_env=BASE).final.copies == (Copy(("app.py",), "/srv/"),)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("CMD x\n", "no FROM"),
        ("FROM x\nRUN true\n", "no CMD"),
    ],
)
def test_unrunnable_dockerfiles(text: str, message: str) -> None:
    with pytest.raises(BuildError, match=message):
        read_plan(text, base_env=BASE)
