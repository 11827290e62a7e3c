"""File downloads (``/spaces/<id>/resolve/<rev>/<path>``) and collection slug aliases, driven
through huggingface_hub's public API and the Hub façade."""

from __future__ import annotations

from pathlib import Path

import pytest
from huggingface_hub import HfApi, hf_hub_download, snapshot_download
from huggingface_hub.errors import (
    EntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from localhub_helpers import write_tree

from releaselib.errors import HubError
from releaselib.hub.client import Hub
from releaselib.hub.retry import RetryPolicy
from releaselib.localhub import LocalHub

FILES = {"README.md": "---\ntitle: t\n---\n# hi\n", "server/app.py": "print(1)\n", "a b/ü.txt": "x\n"}


@pytest.fixture(scope="module")
def space(api: HfApi, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A private Space with FILES (no Dockerfile, so no process starts): (id, head sha)."""
    repo_id = api.create_repo("acme/files", repo_type="space", space_sdk="docker", private=True).repo_id
    folder = write_tree(tmp_path_factory.mktemp("tree"), FILES)
    return repo_id, api.upload_folder(folder_path=folder, repo_id=repo_id, repo_type="space").oid


def test_snapshot_download_at_the_head_sha_gets_every_file(hub: LocalHub, space, tmp_path: Path) -> None:
    repo_id, sha = space
    hub.reset_counters()
    folder = Path(snapshot_download(repo_id, repo_type="space", revision=sha, cache_dir=tmp_path, endpoint=hub.endpoint, token=hub.token))
    assert {p.relative_to(folder).as_posix(): p.read_text() for p in folder.rglob("*") if p.is_file()} == FILES
    assert hub.counters().by_endpoint.get("resolve_file", 0) >= len(FILES)


def test_hf_hub_download_of_one_file_at_main(hub: LocalHub, space, tmp_path: Path) -> None:
    repo_id, _ = space
    path = hf_hub_download(repo_id, "server/app.py", repo_type="space", cache_dir=tmp_path, endpoint=hub.endpoint, token=hub.token)
    assert Path(path).read_text() == FILES["server/app.py"]


def test_missing_file_revision_and_private_repo_map_to_the_client_errors(hub: LocalHub, space, tmp_path: Path) -> None:
    repo_id, sha = space
    common = {"repo_type": "space", "cache_dir": tmp_path, "endpoint": hub.endpoint}
    with pytest.raises(EntryNotFoundError):
        hf_hub_download(repo_id, "nope.txt", token=hub.token, **common)
    with pytest.raises(RevisionNotFoundError):
        hf_hub_download(repo_id, "README.md", revision="0" * 40, token=hub.token, **common)
    with pytest.raises(RepositoryNotFoundError):
        hf_hub_download(repo_id, "README.md", revision=sha, token=False, **common)


def test_hub_download_writes_only_the_space_files(hub: LocalHub, space, tmp_path: Path) -> None:
    repo_id, sha = space
    façade = Hub.connect(hub.endpoint, token=hub.token, policy=RetryPolicy(attempts=2, base=0.01, cap=0.02))
    dest = façade.download(repo_id, sha, tmp_path / "tree")
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == sorted(FILES)
    with pytest.raises(HubError, match="acme/files@000000000000"):
        façade.download(repo_id, "0" * 40, tmp_path / "other")


def test_a_collection_slug_with_other_title_words_resolves_to_the_canonical_slug(api: HfApi) -> None:
    created = api.create_collection("OpenEnv Environment Hub 0.2.2", namespace="acme")
    object_id = created.slug.rpartition("-")[2]
    assert api.get_collection(f"acme/old-title-{object_id}").slug == created.slug
    with pytest.raises(Exception, match="404"):
        api.get_collection(f"other/old-title-{object_id}")
