"""The Hub API contract, driven only through huggingface_hub's public API."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi
from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError
from huggingface_hub.utils.sha import git_hash
from localhub_helpers import write_tree

from releaselib.localhub import LocalHub
from tests.helpers import waits


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalHub]:
    with LocalHub(tmp_path_factory.mktemp("hub"), page_size=2) as running:
        yield running


@pytest.fixture(scope="module")
def api(hub: LocalHub) -> HfApi:
    return HfApi(endpoint=hub.endpoint, token=hub.token)


@pytest.fixture(scope="module")
def anonymous(hub: LocalHub) -> HfApi:
    return HfApi(endpoint=hub.endpoint, token=False)


def _space(api: HfApi, name: str, *, private: bool = True) -> str:
    return api.create_repo(
        f"acme/{name}", repo_type="space", space_sdk="docker", private=private, exist_ok=True
    ).repo_id


def test_whoami_needs_the_right_token(hub: LocalHub, api: HfApi) -> None:
    assert api.whoami()["name"] == "openenv"
    with pytest.raises(HfHubHTTPError) as caught:
        HfApi(endpoint=hub.endpoint, token="hf_wrong").whoami()
    assert caught.value.response.status_code == 401


def test_create_repo_is_idempotent_with_exist_ok(hub: LocalHub, api: HfApi) -> None:
    first = api.create_repo("acme/twice", repo_type="space", space_sdk="docker", private=True)
    again = api.create_repo("acme/twice", repo_type="space", space_sdk="docker", exist_ok=True)
    assert first.repo_id == again.repo_id == "acme/twice"
    assert first == f"{hub.endpoint}/spaces/acme/twice"
    with pytest.raises(HfHubHTTPError) as caught:
        api.create_repo("acme/twice", repo_type="space", space_sdk="docker")
    assert caught.value.response.status_code == 409


def test_private_repos_are_hidden_without_a_token(hub: LocalHub, api: HfApi, anonymous: HfApi):
    repo_id = _space(api, "secret")
    assert api.repo_exists(repo_id, repo_type="space")
    assert not anonymous.repo_exists(repo_id, repo_type="space")
    with pytest.raises(RepositoryNotFoundError):
        anonymous.space_info(repo_id)
    with pytest.raises(HfHubHTTPError) as caught:
        HfApi(endpoint=hub.endpoint, token="hf_wrong").space_info(repo_id)
    assert caught.value.response.status_code == 401


def test_update_repo_settings_changes_visibility(api: HfApi, anonymous: HfApi) -> None:
    repo_id = _space(api, "flip")
    api.update_repo_settings(repo_id, private=False, repo_type="space")
    assert anonymous.space_info(repo_id).private is False
    api.update_repo_settings(repo_id, private=True, repo_type="space")
    assert not anonymous.repo_exists(repo_id, repo_type="space")


def test_upload_commits_and_tree_oids_are_git_blob_shas(
    hub: LocalHub, api: HfApi, tmp_path: Path
) -> None:
    repo_id = _space(api, "files")
    files = {"README.md": "---\ntags: [openenv]\n---\n# hi\n", "server/app.py": "print(1)\n"}
    folder = write_tree(tmp_path, files)
    before = hub.counters()
    first = api.upload_folder(folder_path=folder, repo_id=repo_id, repo_type="space")
    after = hub.counters()
    assert after.commits == before.commits + 1
    assert after.uploaded_bytes - before.uploaded_bytes == sum(len(t) for t in files.values())

    tree = {e.path: e for e in api.list_repo_tree(repo_id, repo_type="space", recursive=True)}
    assert set(tree) == {"README.md", "server", "server/app.py"}
    for path, text in files.items():
        assert tree[path].blob_id == git_hash(text.encode())
        assert tree[path].size == len(text)
    top = [e.path for e in api.list_repo_tree(repo_id, repo_type="space")]
    assert sorted(top) == ["README.md", "server"]
    info = api.space_info(repo_id)
    assert info.sha == first.oid
    assert "openenv" in (info.tags or [])


def test_unchanged_upload_creates_no_commit(hub: LocalHub, api: HfApi, tmp_path: Path) -> None:
    repo_id = _space(api, "same")
    folder = write_tree(tmp_path, {"a.txt": "a\n"})
    first = api.upload_folder(folder_path=folder, repo_id=repo_id, repo_type="space")
    hub.reset_counters()
    again = api.upload_folder(folder_path=folder, repo_id=repo_id, repo_type="space")
    assert again.oid == first.oid
    assert hub.counters().commits == 0
    assert "commit" not in hub.counters().by_endpoint


def test_commit_with_deletions(api: HfApi) -> None:
    repo_id = _space(api, "deletions")
    api.create_commit(
        repo_id,
        [
            CommitOperationAdd("keep.txt", b"keep"),
            CommitOperationAdd("old/a.txt", b"a"),
            CommitOperationAdd("old/b.txt", b"b"),
        ],
        commit_message="add",
        repo_type="space",
    )
    api.create_commit(
        repo_id,
        [CommitOperationDelete("old/")],
        commit_message="drop the folder",
        repo_type="space",
    )
    assert api.list_repo_files(repo_id, repo_type="space") == ["keep.txt"]
    api.delete_file("keep.txt", repo_id, repo_type="space")
    assert api.list_repo_files(repo_id, repo_type="space") == []


def test_space_info_with_expand_returns_only_the_runtime(api: HfApi) -> None:
    repo_id = _space(api, "expanded")
    info = api.space_info(repo_id, expand=["runtime"])
    assert info.runtime is not None and info.runtime.stage == "NO_APP_FILE"
    assert info.sdk is None
    assert api.space_info(repo_id).sdk == "docker"
    assert api.get_space_runtime(repo_id).stage == "NO_APP_FILE"


def test_list_spaces_filters_and_follows_pagination(hub: LocalHub, api: HfApi) -> None:
    for name in ("list-a", "list-b", "list-c"):
        _space(api, name)
    hub.reset_counters()
    listed = list(api.list_spaces(author="acme", search="list-", expand=["runtime"]))
    assert [s.id for s in listed] == ["acme/list-a", "acme/list-b", "acme/list-c"]
    assert all(s.runtime is not None and s.runtime.stage == "NO_APP_FILE" for s in listed)
    assert hub.counters().by_endpoint == {"list_repos": 2}  # page size 2: two pages
    assert list(api.list_spaces(author="nobody")) == []


def test_delete_repo(api: HfApi) -> None:
    repo_id = _space(api, "doomed")
    api.delete_repo(repo_id, repo_type="space")
    assert not api.repo_exists(repo_id, repo_type="space")
    with pytest.raises(RepositoryNotFoundError):
        api.delete_repo(repo_id, repo_type="space")
    api.delete_repo(repo_id, repo_type="space", missing_ok=True)


def test_variables_and_secrets(api: HfApi) -> None:
    repo_id = _space(api, "settings")
    api.add_space_variable(repo_id, "MODE", "fast", description="speed")
    api.add_space_secret(repo_id, "API_KEY", "s3cret")
    variables = api.get_space_variables(repo_id)
    assert variables["MODE"].value == "fast"
    assert variables["MODE"].description == "speed"
    api.delete_space_variable(repo_id, "MODE")
    assert "MODE" not in api.get_space_variables(repo_id)


def test_pause_and_restart_of_an_empty_space(api: HfApi) -> None:
    repo_id = _space(api, "pausable")
    assert api.pause_space(repo_id).stage == "PAUSED"
    assert api.get_space_runtime(repo_id).stage == "PAUSED"
    assert api.restart_space(repo_id, factory_reboot=True).stage == "PAUSED"


def test_collections(hub: LocalHub, api: HfApi, anonymous: HfApi) -> None:
    created = api.create_collection("OpenEnv 0.3", namespace="acme", private=True)
    again = api.create_collection("OpenEnv 0.3", namespace="acme", exists_ok=True)
    assert again.slug == created.slug and created.slug.startswith("acme/openenv-0-3-")

    api.add_collection_item(created.slug, "acme/files", "space", note="first")
    updated = api.add_collection_item(created.slug, "acme/files", "space", exists_ok=True)
    assert [(i.item_id, i.item_type, i.position) for i in updated.items] == [
        ("acme/files", "space", 0)
    ]
    assert updated.items[0].note == "first"

    listed = list(api.list_collections(owner="acme"))
    assert [c.slug for c in listed] == [created.slug]
    assert list(anonymous.list_collections(owner="acme")) == []
    with pytest.raises(HfHubHTTPError):
        anonymous.get_collection(created.slug)

    api.update_collection_metadata(created.slug, private=False)
    assert anonymous.get_collection(created.slug).private is False

    api.delete_collection_item(created.slug, updated.items[0].item_object_id)
    assert api.get_collection(created.slug).items == []
    api.delete_collection(created.slug)
    assert list(api.list_collections(owner="acme")) == []


def test_counters_endpoint_matches_the_python_api(hub: LocalHub, api: HfApi) -> None:
    api.whoami()
    served = httpx.get(f"{hub.endpoint}/__localhub/counters", trust_env=False).json()
    assert served == hub.counters().as_dict()


def test_state_survives_a_restart(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory):
    state = tmp_path / "state"
    with LocalHub(state) as first:
        api = HfApi(endpoint=first.endpoint, token=first.token)
        repo_id = _space(api, "durable")
        commit = api.upload_file(
            path_or_fileobj=b"x", path_in_repo="x.txt", repo_id=repo_id, repo_type="space"
        )
        slug = api.create_collection("Kept", namespace="acme").slug
        token = first.token
    with LocalHub(state) as second:
        assert second.token == token
        api = HfApi(endpoint=second.endpoint, token=second.token)
        assert api.space_info(repo_id).sha == commit.oid
        assert api.get_collection(slug).title == "Kept"
        assert api.get_space_runtime(repo_id).stage == "SLEEPING"


def test_a_configured_token_is_the_one_accepted(tmp_path: Path) -> None:
    token = "hf_CANARYcanary0123456789abcdefghijklmnop"
    with LocalHub(tmp_path / "state", token=token) as hub:
        assert hub.token == token
        assert HfApi(endpoint=hub.endpoint, token=token).whoami()["name"] == "openenv"
        with pytest.raises(HfHubHTTPError) as caught:
            HfApi(endpoint=hub.endpoint, token="hf_local_other").whoami()
        assert caught.value.response.status_code == 401
    with LocalHub(tmp_path / "state") as again:  # a restart keeps the configured token
        assert again.token == token


def test_a_client_gone_mid_upload_is_logged_not_raised(
    hub: LocalHub, api: HfApi, caplog: pytest.LogCaptureFixture
) -> None:
    """A client that hangs up while sending a commit (a SIGTERM'd release) is a logged request
    with no answer, not an ASGI exception uvicorn prints as a traceback; the Hub serves on."""
    api.create_repo("acme/cut", repo_type="space", space_sdk="docker", exist_ok=True)
    host, port = hub.endpoint.removeprefix("http://").split(":")
    path = "/api/spaces/acme/cut/commit/main"
    with socket.create_connection((host, int(port))) as conn:
        conn.sendall(
            f"POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {hub.token}\r\n"
            "Content-Type: application/x-ndjson\r\nContent-Length: 100000\r\n\r\n"
            '{"key": "header", "value": {"summary": "cut"}}\n'.encode()
        )
    deadline = time.monotonic() + waits(10)
    while not any(r.path == path for r in hub.requests()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [(r.status, r.client_gone) for r in hub.requests() if r.path == path] == [(None, True)]
    assert "dropped" not in hub.counters().by_status  # a scenario's drop fault, not this
    assert hub.counters().by_status["client gone"] == 1
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    assert api.space_info("acme/cut").id == "acme/cut"
