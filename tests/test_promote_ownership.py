"""Promote replaces only what the release owns in a canonical: the staged files and the card
fields it writes. The canonical's own metadata, body and files stay; deletions need --yes."""

from __future__ import annotations

from pathlib import Path

from huggingface_hub import CommitOperationAdd, SpaceCard

from releaselib.publish.promote import promote
from tests.release_world import make_release

CANONICAL = "openenv/echo_env"
OWN_CARD = b"""---
title: Echo, by hand
license: apache-2.0
models:
- acme/echo-model
tags:
- openenv
- openenv-0.2.1
- leaderboard
sdk: docker
---
# Echo

Our hand-written page, with the ![board](assets/leaderboard.png).
"""


def test_promote_keeps_the_canonicals_own_card_fields_body_and_files(localhub, tmp_path: Path) -> None:
    release = make_release(localhub, tmp_path, {"echo_env": ("PASS", ">=0.2.0")}, canonicals=(CANONICAL,))
    own = [
        CommitOperationAdd("README.md", OWN_CARD),
        CommitOperationAdd("assets/leaderboard.png", b"\x89PNG not really"),
        CommitOperationAdd("envs/echo_env/removed_module.py", b"# shipped by 0.2.1, gone in 0.2.2\n"),
    ]
    release.api.create_commit(CANONICAL, own, commit_message="the canonical's own", repo_type="space")
    before = release.head(CANONICAL)

    (plan,) = promote(release.hub, release.config, release.verdicts, release.registry, dry_run=True)
    assert plan.status == "held" and plan.delete == ("envs/echo_env/removed_module.py",)
    assert set(plan.kept) == {"assets/leaderboard.png", "old.txt"}

    (held,) = promote(release.hub, release.config, release.verdicts, release.registry)
    assert held.status == "held" and "would delete 1 file(s)" in held.reason and "envs/echo_env/removed_module.py" in held.reason
    assert "pass --yes" in held.reason and release.head(CANONICAL) == before
    assert held.reason == plan.reason  # the dry run says what the run does

    (done,) = promote(release.hub, release.config, release.verdicts, release.registry, delete=True)
    assert done.status == "promoted", done.reason
    published = release.tree(CANONICAL)
    assert published["assets/leaderboard.png"] == b"\x89PNG not really" and "old.txt" in published
    assert "envs/echo_env/removed_module.py" not in published
    card = SpaceCard(published["README.md"].decode())
    ours = SpaceCard(release.tree(release.candidate("echo_env"))["README.md"].decode())
    assert card.data.license == "apache-2.0" and card.data.to_dict()["models"] == ["acme/echo-model"]
    assert card.data.tags == [*ours.data.tags, "leaderboard"]  # openenv-0.2.1 was a release's
    assert card.data.title == ours.data.title and card.data.to_dict()["app_port"] == ours.data.to_dict()["app_port"]
    assert card.text.strip() == OWN_CARD.decode().split("---\n", 2)[2].strip()

    after = release.head(CANONICAL)
    (again,) = promote(release.hub, release.config, release.verdicts, release.registry, delete=True)
    assert again.status == "current" and release.head(CANONICAL) == after
