"""``rewrite_for_space`` on small fixtures, compared byte for byte with golden files.

Each ``golden/dockerfile/<case>.Dockerfile`` is rewritten into ``<case>.expected.Dockerfile``
and its changes into ``<case>.changes.txt``. Set ``UPDATE_GOLDEN=1`` to rewrite the goldens,
then read the diff before committing it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from releaselib.config import base_image
from releaselib.edit.dockerfile_model import Dockerfile
from releaselib.records import Change
from releaselib.stage.staged_dockerfile import rewrite_for_space
from tests.helpers import assert_golden

GOLDEN = Path(__file__).parent / "golden" / "dockerfile"
CASES = sorted(p.name.removesuffix(".Dockerfile") for p in GOLDEN.glob("*.Dockerfile"))
CASES = [c for c in CASES if not c.endswith(".expected")]
SHA = "0123abc"
REF = "v0.3.1"


def _rewrite(case: str) -> tuple[str, list[Change]]:
    text = (GOLDEN / f"{case}.Dockerfile").read_bytes().decode()
    image = base_image(sha=SHA) if case == "base_sha" else base_image()
    return rewrite_for_space(text, path="Dockerfile", base_image=image, dist="openenv", ref=REF)


def _render(changes: list[Change]) -> str:
    return "".join(f"{c.line}: {c.before!r} -> {c.after!r} ({c.why})\n" for c in changes)


def test_every_case_is_listed() -> None:
    assert len(CASES) == 11


@pytest.mark.parametrize("case", CASES)
def test_rewrite_matches_golden(case: str) -> None:
    new, changes = _rewrite(case)
    assert_golden(GOLDEN / f"{case}.expected.Dockerfile", new)
    assert_golden(GOLDEN / f"{case}.changes.txt", _render(changes))


@pytest.mark.parametrize("case", CASES)
def test_rewrite_is_idempotent(case: str) -> None:
    new, _ = _rewrite(case)
    image = base_image(sha=SHA) if case == "base_sha" else base_image()
    again, changes = rewrite_for_space(
        new, path="Dockerfile", base_image=image, dist="openenv", ref=REF
    )
    assert again == new
    assert changes == []


@pytest.mark.parametrize("case", CASES)
def test_change_lines_point_at_the_new_text(case: str) -> None:
    new, changes = _rewrite(case)
    lines = new.replace("\r\n", "\n").split("\n")
    for change in changes:
        assert change.line is not None
        shown = lines[change.line - 1]
        first_after = change.after.split("\n")[0]
        assert first_after in shown or change.after in shown or shown in change.after, change


def test_base_sha_reaches_every_openenv_from() -> None:
    new, _ = _rewrite("base_sha")
    df = Dockerfile.parse(new)
    assert [s.base for s in df.stages] == [f"ghcr.io/huggingface/openenv-base:{SHA}"] * 2
    assert df.args()["BASE_IMAGE"] == f"ghcr.io/huggingface/openenv-base:{SHA}"


def test_public_images_stay_and_flags_are_kept() -> None:
    new, _ = _rewrite("public_image")
    df = Dockerfile.parse(new)
    assert [s.base for s in df.stages] == [
        "python:3.11-slim",
        "mcr.microsoft.com/playwright/python:v1.44.0-jammy",
    ]
    assert df.stages[0].first.flags == ("--platform=linux/amd64",)
    assert f"OpenEnv.git@{REF}" in df.instructions[1].text


def test_hardcoded_meta_base_becomes_the_configured_one() -> None:
    new, _ = _rewrite("hardcoded_base")
    df = Dockerfile.parse(new)
    assert [s.base for s in df.stages] == ["ghcr.io/huggingface/openenv-base:latest"] * 2
    assert df.stages[0].name == "builder"
    assert df.stages[1].first.flags == ("--platform=linux/amd64",)


def test_legacy_core_exposes_only_app_src() -> None:
    new, _ = _rewrite("legacy_core")
    df = Dockerfile.parse(new)
    sources = [c.sources for c in df.copies()]
    assert ("src/openenv/",) in sources
    assert df.stage_env()["PYTHONPATH"] == "/app/src:/app/envs"


def test_crlf_stays_crlf() -> None:
    new, _ = _rewrite("crlf")
    assert new.count("\n") == new.count("\r\n")
    assert "ENABLE_WEB_INTERFACE=true\r\n" in new


def test_append_never_glues_onto_cmd() -> None:
    new, _ = _rewrite("no_trailing_newline")
    assert new.endswith("--port ${PORT:-8000}\nENV ENABLE_WEB_INTERFACE=true\n")


def test_multi_key_env_keeps_other_keys() -> None:
    new, _ = _rewrite("multi_key_env")
    env = Dockerfile.parse(new).stage_env()
    assert env == {
        "PYTHONDONTWRITEBYTECODE": "1",
        "ENABLE_WEB_INTERFACE": "true",
        "PYTHONPATH": "/app",
    }


def test_uv_frozen_is_gone_and_uv_is_pinned_once() -> None:
    new, _ = _rewrite("uv_frozen")
    assert "--frozen" not in new
    assert new.count("COPY --from=ghcr.io/astral-sh/uv:") == 1
    df = Dockerfile.parse(new)
    uv_copy = next(c for c in df.copies(0) if c.from_ and "astral-sh/uv" in c.from_)
    following = df.instructions[uv_copy.instruction.index + 1]
    assert following.flags == ("--mount=type=cache,target=/root/.cache/uv",)
