"""The local Hub's state on disk: repos with their commits, content-addressed blobs, collections.

Layout under the state directory::

    hub.json                          user and token (mode 0600)
    blobs/ab/ab12...                  file contents, named by git blob sha1
    repos/<type>/<ns>/<name>.json     one Repo: settings, variables, secrets, commits
    collections/<object id>.json      one Collection
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import threading
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO_TYPES = ("spaces", "models", "datasets")


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def git_blob_oid(content: bytes) -> str:
    """The git blob sha1 of ``content`` (what the Hub calls a regular file's ``oid``)."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def git_tree_oids(files: Mapping[str, str]) -> dict[str, str]:
    """Git tree sha1 of every folder ("" is the root) of a ``path -> blob oid`` map."""
    children: dict[str, dict[str, tuple[str, str]]] = {"": {}}
    for path in files:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            children.setdefault("/".join(parts[:depth]), {})
    for folder in children:
        if folder:
            parent, _, name = folder.rpartition("/")
            children[parent][name] = ("40000", folder)
    for path, oid in files.items():
        parent, _, name = path.rpartition("/")
        children[parent][name] = ("100644", oid)
    oids: dict[str, str] = {}
    for folder in sorted(children, key=lambda f: f.count("/") + bool(f), reverse=True):
        entries = sorted(
            children[folder].items(), key=lambda e: e[0] + ("/" if e[1][0] == "40000" else "")
        )
        body = b"".join(
            f"{mode} {name}\0".encode() + bytes.fromhex(oids[ref] if mode == "40000" else ref)
            for name, (mode, ref) in entries
        )
        oids[folder] = hashlib.sha1(b"tree %d\0" % len(body) + body).hexdigest()
    return oids


@dataclass
class Commit:
    oid: str
    title: str
    description: str
    date: str
    parent: str | None
    files: dict[str, str]  # path -> blob oid


@dataclass
class Repo:
    type: str
    id: str
    private: bool
    sdk: str | None
    created_at: str
    variables: dict[str, dict[str, str]] = field(default_factory=dict)
    secrets: dict[str, dict[str, str]] = field(default_factory=dict)
    commits: list[Commit] = field(default_factory=list)

    @property
    def head(self) -> Commit | None:
        return self.commits[-1] if self.commits else None

    @property
    def last_modified(self) -> str:
        return self.head.date if self.head else self.created_at

    def files(self) -> dict[str, str]:
        return dict(self.head.files) if self.head else {}


@dataclass
class Collection:
    """A collection; its slug is fixed at creation (``<ns>/<title words>-<object id>``)."""

    object_id: str
    slug: str
    namespace: str
    title: str
    description: str | None
    private: bool
    last_updated: str
    items: list[dict[str, Any]] = field(default_factory=list)


def _object_id() -> str:
    return secrets.token_hex(12)


class HubStore:
    """Reads and writes the state directory; every write is atomic and under one lock."""

    def __init__(self, root: Path, *, user: str, token: str | None = None) -> None:
        """``token``, when given, becomes the one token accepted (else the stored or a new one)."""
        self.root = root
        self.lock = threading.RLock()
        (root / "blobs").mkdir(parents=True, exist_ok=True)
        identity_path = root / "hub.json"
        if identity_path.is_file():
            identity = json.loads(identity_path.read_text())
        else:
            identity = {"user": user, "token": f"hf_local_{secrets.token_urlsafe(24)}"}
        if token is not None:
            identity["token"] = token
        _write_json(identity_path, identity, private=True)
        self.user: str = identity["user"]
        self.token: str = identity["token"]

    # blobs
    def put_blob(self, content: bytes) -> str:
        oid = git_blob_oid(content)
        path = self._blob_path(oid)
        if not path.exists():
            path.parent.mkdir(exist_ok=True)
            _write_bytes(path, content)
        return oid

    def blob(self, oid: str) -> bytes:
        return self._blob_path(oid).read_bytes()

    def blob_size(self, oid: str) -> int:
        return self._blob_path(oid).stat().st_size

    def _blob_path(self, oid: str) -> Path:
        return self.root / "blobs" / oid[:2] / oid

    def checkout(self, files: Mapping[str, str], dest: Path) -> None:
        """Write a ``path -> blob oid`` tree into ``dest``."""
        for path, oid in files.items():
            target = dest / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(self.blob(oid))

    # repos
    def _repo_path(self, repo_type: str, repo_id: str) -> Path:
        return self.root / "repos" / repo_type / f"{repo_id}.json"

    def repo(self, repo_type: str, repo_id: str) -> Repo | None:
        path = self._repo_path(repo_type, repo_id)
        with self.lock:
            if not path.is_file():
                return None
            return _load_repo(json.loads(path.read_text()))

    def repos(self, repo_type: str) -> list[Repo]:
        folder = self.root / "repos" / repo_type
        with self.lock:
            return sorted(
                (_load_repo(json.loads(p.read_text())) for p in folder.glob("*/*.json")),
                key=lambda repo: repo.id,
            )

    def save_repo(self, repo: Repo) -> None:
        with self.lock:
            _write_json(self._repo_path(repo.type, repo.id), asdict(repo), private=True)

    def delete_repo(self, repo: Repo) -> None:
        with self.lock:
            self._repo_path(repo.type, repo.id).unlink(missing_ok=True)

    def commit(
        self, repo: Repo, *, title: str, description: str, files: dict[str, str]
    ) -> Commit | None:
        """Record ``files`` as the new head; None (no commit) when the tree is unchanged."""
        with self.lock:
            if repo.head is not None and repo.head.files == files:
                return None
            date = now_iso()
            parent = repo.head.oid if repo.head else None
            seed = json.dumps([parent, title, description, date, sorted(files.items())])
            commit = Commit(
                hashlib.sha1(seed.encode()).hexdigest(), title, description, date, parent, files
            )
            repo.commits.append(commit)
            self.save_repo(repo)
            return commit

    # collections
    def collections(self) -> list[Collection]:
        with self.lock:
            return sorted(
                (Collection(**json.loads(p.read_text())) for p in self._collection_paths()),
                key=lambda c: c.last_updated,
                reverse=True,
            )

    def _collection_paths(self) -> Iterator[Path]:
        return (self.root / "collections").glob("*.json")

    def collection(self, slug: str) -> Collection | None:
        """The collection ``slug`` names. As on the Hub, the namespace and the trailing object id
        identify it; the title words in between may be an alias (an older title, say)."""
        namespace, _, rest = slug.partition("/")
        object_id = rest.rpartition("-")[2]
        path = self.root / "collections" / f"{object_id}.json"
        with self.lock:
            if not re.fullmatch(r"[0-9a-f]{24}", object_id) or not path.is_file():
                return None
            found = Collection(**json.loads(path.read_text()))
            return found if found.namespace == namespace else None

    def new_collection(
        self, *, namespace: str, title: str, description: str | None, private: bool
    ) -> Collection:
        object_id = _object_id()
        words = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
        slug = f"{namespace}/{words}-{object_id}"
        found = Collection(object_id, slug, namespace, title, description, private, now_iso())
        self.save_collection(found)
        return found

    def save_collection(self, found: Collection) -> None:
        with self.lock:
            found.last_updated = now_iso()
            _write_json(self.root / "collections" / f"{found.object_id}.json", asdict(found))

    def delete_collection(self, found: Collection) -> None:
        with self.lock:
            (self.root / "collections" / f"{found.object_id}.json").unlink(missing_ok=True)

    @staticmethod
    def new_item_id() -> str:
        return _object_id()


def _load_repo(data: dict[str, Any]) -> Repo:
    commits = [Commit(**c) for c in data.pop("commits")]
    return Repo(**data, commits=commits)


def _write_json(path: Path, data: object, *, private: bool = False) -> None:
    _write_bytes(path, json.dumps(data, indent=1).encode(), private=private)


def _write_bytes(path: Path, content: bytes, *, private: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as out:
        out.write(content)
    os.replace(tmp, path)
