"""The README Space card over every README of the OpenEnv snapshot (34 envs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from huggingface_hub import SpaceCard
from huggingface_hub.repocard import metadata_load

from releaselib.edit.front_matter import HUB_COLOURS, metadata_problems
from releaselib.edit.readme import build_space_readme, runtime_url
from releaselib.env_facts import find_client_class, package_name, read_app_port

SNAPSHOT = Path(__file__).resolve().parents[3] / "shared" / "openenv-snapshot"
VERSION = "0.2.2"
HUB_TAG = "openenv-hub"
# From the survey's Table 4: what the Hub would refuse in the source READMEs.
NO_FRONT_MATTER = {"chess_env", "dipg_safety_env", "finrl_env", "git_env", "kernrl", "sumo_rl_env"}
HEX_COLOURS = {"atari_env", "chat_env"}

pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(
        not (SNAPSHOT / "envs").is_dir(),
        reason=f"OpenEnv snapshot not found at {SNAPSHOT}/envs (the shared fixture checkout)",
    ),
]


def env_dirs() -> list[Path]:
    if not (SNAPSHOT / "envs").is_dir():
        return []
    return sorted(path.parent for path in SNAPSHOT.glob("envs/*/README.md"))


def card_for(env_dir: Path) -> str:
    text, _ = build_space_readme(
        (env_dir / "README.md").read_text(encoding="utf-8"),
        path=f"envs/{env_dir.name}/README.md",
        env=env_dir.name,
        space_id=f"openenv/{env_dir.name}-{VERSION}",
        version=VERSION,
        ref="main",
        hub_tag=HUB_TAG,
        app_port=read_app_port(env_dir),
        client_class=find_client_class(env_dir),
        import_package=package_name(env_dir),
    )
    return text


def test_the_snapshot_has_all_34_readmes() -> None:
    assert len(env_dirs()) == 34


@pytest.mark.parametrize("env_dir", env_dirs(), ids=lambda path: path.name)
def test_card_is_what_the_hub_accepts(env_dir: Path, tmp_path: Path) -> None:
    text = card_for(env_dir)
    (tmp_path / "README.md").write_text(text, encoding="utf-8")
    loaded = metadata_load(tmp_path / "README.md")
    data = SpaceCard(text).data.to_dict()
    assert loaded == data
    assert data["sdk"] == "docker"
    assert {"openenv", HUB_TAG, f"openenv-{VERSION}"} <= set(data["tags"])
    assert len(data["tags"]) == len(set(data["tags"]))
    assert data["colorFrom"] in HUB_COLOURS and data["colorTo"] in HUB_COLOURS
    assert data["app_port"] == read_app_port(env_dir)
    assert metadata_problems(text) == []
    assert runtime_url(f"openenv/{env_dir.name}-{VERSION}") in text


@pytest.mark.parametrize("env_dir", env_dirs(), ids=lambda path: path.name)
def test_card_keeps_the_source_front_matter_and_body(env_dir: Path) -> None:
    source = (env_dir / "README.md").read_text(encoding="utf-8")
    text = card_for(env_dir)
    original = SpaceCard(source).data.to_dict() if env_dir.name not in NO_FRONT_MATTER else {}
    data = SpaceCard(text).data.to_dict()
    rewritten = {"colorFrom", "colorTo", "tags"}
    assert {k: v for k, v in data.items() if k in original and k not in rewritten} == {
        k: v for k, v in original.items() if k not in rewritten
    }
    body = SpaceCard(source).text.lstrip("\n") if original else source
    assert text.endswith(body if body.endswith("\n") else body + "\n")


def test_source_problems_are_the_known_ones() -> None:
    refused = {
        env_dir.name
        for env_dir in env_dirs()
        if metadata_problems((env_dir / "README.md").read_text(encoding="utf-8"))
    }
    assert refused == NO_FRONT_MATTER | HEX_COLOURS


def test_quirky_envs() -> None:
    envs = SNAPSHOT / "envs"
    calendar = SpaceCard(card_for(envs / "calendar_env")).data
    grid = SpaceCard(card_for(envs / "grid_world_env")).data
    awm = SpaceCard(card_for(envs / "agent_world_model_env")).data
    snake = SpaceCard(card_for(envs / "snake_env")).data
    opencode = SpaceCard(card_for(envs / "opencode_env")).data
    assert (calendar.app_port, calendar["base_path"]) == (8004, "/docs")
    assert (grid["base_path"], grid.tags[0]) == ("/web", "openenv")
    # The source line ends in a blank, which YAML drops from a plain scalar: the value is kept.
    assert awm.title == "Agent World Model Environment Server"
    assert (snake["colorFrom"], snake["colorTo"]) == ("blue", "green")
    assert len(opencode["short_description"]) == 60
    assert "…" not in opencode["short_description"]


def test_legacy_openenv_yaml_without_port_gives_8000() -> None:
    assert read_app_port(SNAPSHOT / "envs" / "browsergym_env") == 8000
    assert read_app_port(SNAPSHOT / "envs" / "calendar_env") == 8004


def test_snapshot_has_no_python_so_cards_use_the_generic_client() -> None:
    assert find_client_class(SNAPSHOT / "envs" / "echo_env") is None
    assert package_name(SNAPSHOT / "envs" / "echo_env") == "echo_env"
    assert "from openenv.core import GenericEnvClient" in card_for(SNAPSHOT / "envs" / "echo_env")
