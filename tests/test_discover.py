"""Which envs a checkout has and which are deployable."""

from __future__ import annotations

from pathlib import Path

import pytest

from releaselib.errors import UsageError
from releaselib.stage.discover import checkout_project, discover_envs, select_envs


def make_checkout(root: Path) -> Path:
    (root / "pyproject.toml").write_text('[project]\nname = "openenv"\nversion = "0.2.2"\n')
    for env, files in {
        "echo_env": ["server/Dockerfile", "README.md"],
        "calendar_env": ["Dockerfile", "server/Dockerfile", "README.md"],
        "noreadme_env": ["server/Dockerfile"],
        "nodocker_env": ["README.md"],
        ".hidden": ["README.md"],
        "__pycache__": ["README.md"],
    }.items():
        for rel in files:
            path = root / "envs" / env / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("x")
    (root / "envs" / "README.md").write_text("not an env")
    return root


def test_envs_are_listed_with_why(tmp_path: Path) -> None:
    specs = {s.name: s for s in discover_envs(make_checkout(tmp_path))}
    assert list(specs) == ["calendar_env", "echo_env", "nodocker_env", "noreadme_env"]
    assert (
        specs["echo_env"].deployable
        and specs["echo_env"].reason == "server/Dockerfile and README.md"
    )
    assert specs["calendar_env"].dockerfile == tmp_path / "envs/calendar_env/server/Dockerfile"
    assert specs["noreadme_env"].deployable  # staging generates its card
    assert specs["noreadme_env"].reason == (
        "server/Dockerfile; no README.md, so staging generates the card"
    )
    assert not specs["nodocker_env"].deployable
    assert specs["nodocker_env"].reason.startswith("no server/Dockerfile or Dockerfile; add one")


def test_selection_defaults_to_every_env_dir_so_none_is_dropped_silently(tmp_path: Path) -> None:
    specs = discover_envs(make_checkout(tmp_path))
    assert [s.name for s in select_envs(specs, [])] == [
        "calendar_env",
        "echo_env",
        "nodocker_env",
        "noreadme_env",
    ]
    assert [s.name for s in select_envs(specs, ["echo_env", "calendar_env", "echo_env"])] == [
        "calendar_env",
        "echo_env",
    ]


def test_an_unknown_env_names_the_closest(tmp_path: Path) -> None:
    specs = discover_envs(make_checkout(tmp_path))
    with pytest.raises(UsageError, match="did you mean echo_env"):
        select_envs(specs, ["echo_envv"])


def test_checkout_version_comes_from_the_root_pyproject(tmp_path: Path) -> None:
    assert checkout_project(make_checkout(tmp_path)) == ("openenv", "0.2.2")
    (tmp_path / "pyproject.toml").write_text("[project\n")
    with pytest.raises(UsageError, match=r"pyproject\.toml: not readable TOML"):
        checkout_project(tmp_path)
