"""Issue 26: which existing Space at a candidate id deploy may write (releaselib.hub.ownership)."""

from __future__ import annotations

import pytest
from huggingface_hub import CommitOperationAdd, HfApi
from rich.console import Console

from releaselib.console import print_deployed
from releaselib.hub.deploy import commit_message
from tests import test_deploy
from tests.test_deploy import config_for, release, remote_tree

checkout = test_deploy.checkout  # the fixture: three copies of the example echo env
localhub = test_deploy.localhub  # the fixture: a Hub that never starts the Spaces

THEIRS = "openenv/alpha_env-0.2.2"


def their_space(api: HfApi, *, private: bool, title: str, description: str | None = None) -> dict[str, str]:
    """Someone else's Space at alpha_env's candidate id, one commit with ``title``; its tree."""
    api.create_repo(THEIRS, repo_type="space", space_sdk="docker", private=private)
    operation = CommitOperationAdd("README.md", b"# theirs\n")
    api.create_commit(THEIRS, [operation], commit_message=title, commit_description=description, repo_type="space")
    return remote_tree(api, THEIRS)


@pytest.mark.parametrize("private", [False, True], ids=["public", "private"])
def test_a_space_whose_history_has_the_tools_commit_title_is_not_ours(localhub, checkout, tmp_path, private) -> None:
    """The title is anyone's to write: it used to make a stranger's Space a candidate."""
    api = HfApi(endpoint=localhub.endpoint, token=localhub.token)
    config = config_for(checkout, tmp_path)
    before = their_space(api, private=private, title=commit_message(config, "alpha_env"))
    planned = release(localhub.endpoint, localhub.token, config, dry_run=True)
    plan = planned["alpha_env"].plan
    assert plan is not None and plan.refused and plan.upload == () and plan.delete == () and plan.as_json()["action"] == "refused"
    assert not planned["alpha_env"].ok and THEIRS in (planned["alpha_env"].error or "")  # the dry run fails it, as the run does
    shown = Console(record=True, width=200)
    print_deployed(shown, list(planned.values()), dry_run=True)
    row = next(line for line in shown.export_text().splitlines() if "alpha_env" in line and THEIRS in line)
    assert "refused" in row and "exists" not in row and " ok" not in row
    results = release(localhub.endpoint, localhub.token, config)
    error = results["alpha_env"].error or ""
    assert not results["alpha_env"].ok and THEIRS in error and "pick another --suffix" in error
    assert ("is public" in error) if not private else ("Openenv-release-candidate" in error)
    assert remote_tree(api, THEIRS) == before and api.space_info(THEIRS).private is private
    assert results["beta_env"].ok and results["beta_env"].created


def test_a_public_space_carrying_the_marker_is_never_written(localhub, checkout, tmp_path) -> None:
    api = HfApi(endpoint=localhub.endpoint, token=localhub.token)
    config = config_for(checkout, tmp_path)
    before = their_space(api, private=False, title="copied", description=f"Openenv-release-candidate: {THEIRS}")
    results = release(localhub.endpoint, localhub.token, config)
    assert not results["alpha_env"].ok and "is public" in (results["alpha_env"].error or "")
    assert remote_tree(api, THEIRS) == before and api.space_info(THEIRS).private is False


def test_a_marker_naming_another_space_does_not_make_a_space_ours(localhub, checkout, tmp_path) -> None:
    """A Space duplicated from a candidate carries the marker of the Space it came from."""
    api = HfApi(endpoint=localhub.endpoint, token=localhub.token)
    config = config_for(checkout, tmp_path)
    before = their_space(api, private=True, title="copy", description="Openenv-release-candidate: openenv/beta_env-0.2.2")
    results = release(localhub.endpoint, localhub.token, config)
    assert not results["alpha_env"].ok and remote_tree(api, THEIRS) == before


def test_the_tools_own_private_candidate_is_written_again_and_made_public_it_is_not(localhub, checkout, tmp_path) -> None:
    api = HfApi(endpoint=localhub.endpoint, token=localhub.token)
    config = config_for(checkout, tmp_path)
    first = release(localhub.endpoint, localhub.token, config)["alpha_env"]
    (body,) = [c.message for c in api.list_repo_commits(THEIRS, repo_type="space")][:1]
    assert f"Openenv-release-candidate: {THEIRS}" in body.splitlines()
    (checkout / "envs" / "alpha_env" / "server" / "extra.py").write_text("X = 1\n")
    second = release(localhub.endpoint, localhub.token, config)["alpha_env"]
    assert second.ok and second.commit and second.commit != first.commit
    api.update_repo_settings(THEIRS, private=False, repo_type="space")
    (checkout / "envs" / "alpha_env" / "server" / "extra.py").write_text("X = 2\n")
    third = release(localhub.endpoint, localhub.token, config)["alpha_env"]
    assert not third.ok and "is public" in (third.error or "")
    assert api.space_info(THEIRS).sha == second.commit
