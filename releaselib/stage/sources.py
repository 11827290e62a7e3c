"""The checkout files an env's staged tree is made of: what git tracks, less junk and secrets."""

from __future__ import annotations

import fnmatch
import functools
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from releaselib.errors import StageError, short
from releaselib.records import Change, EnvSpec
from releaselib.stage.gitfiles import GitFiles, on_disk

if TYPE_CHECKING:
    from releaselib.stage.scan_cache import ContentScan
    from releaselib.stage.shared_files import Pooled, SharedFiles


SKIP_DIRS = frozenset(
    {
        ".venv",
        "venv",
        ".git",
        "__pycache__",
        ".pytest_cache",
        ".ruff_cache",
        ".mypy_cache",
        "node_modules",
        ".tox",
        ".nox",
    }
)


SKIP_FILES = frozenset({".DS_Store", "uv.lock"})


SKIP_SUFFIXES = (".pyc", ".pyo")


#: Files that look like credentials (fnmatch on the lower-cased name, or on the last folders and
#: the name when the pattern has a '/'): never staged, and each one left out is recorded.
CREDENTIALS = (
    ".env*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    "credentials*.json",
    ".aws/credentials",
    ".ssh/*",
    ".huggingface/*token*",
    ".cache/huggingface/*token*",
)


CREDENTIALS_WHY = "credentials are never staged"


#: The checkout's parts staging reads, as git pathspecs.
STAGED_PATHS = ("envs", "src", "pyproject.toml")


def junk(name: str, is_dir: bool) -> bool:
    """True for build junk and locks that never go into a Space."""
    if is_dir:
        return name in SKIP_DIRS
    return name in SKIP_FILES or name.endswith(SKIP_SUFFIXES)


@functools.lru_cache(maxsize=8192)
def credentials(rel: str) -> bool:
    """True if the file at ``rel`` (relative to the folder being copied) looks like credentials;
    memoised, as ``src/``'s names recur in every env."""
    parts = [part.lower() for part in PurePosixPath(rel).parts]
    for pattern in CREDENTIALS:
        depth = pattern.count("/") + 1
        if len(parts) >= depth and fnmatch.fnmatchcase("/".join(parts[-depth:]), pattern):
            return True
    return False


def resolved(link: Path, root: Path, listing: GitFiles | None) -> tuple[Path, str]:
    """The target of ``link`` and its checkout-relative path; StageError for a loop, a target
    outside ``root`` or inside ``.git/``, or (in git) a file git does not track."""
    name = short(str(link.relative_to(root)))
    try:
        target = link.resolve(strict=True)
    except (RuntimeError, OSError) as exc:
        raise StageError(
            f"{name}: symlink loop or dangling symlink",
            remedy="replace it with a real file or a link to one in the checkout",
        ) from exc
    if not target.is_relative_to(root.resolve()):
        raise StageError(
            f"{name}: symlink points outside the checkout ({short(str(target))})",
            remedy="replace it with a real file or a link inside the checkout",
        )
    inner = target.relative_to(root.resolve()).as_posix()
    if ".git" in inner.split("/"):
        why = "inside .git/"
    elif listing is None:
        return target, inner
    elif target.is_dir():
        prefix = inner.rstrip("/") + "/"
        if any(p.startswith(prefix) for p in listing.everywhere) or inner == ".":
            return target, inner
        why = "a folder git tracks nothing in"
    elif inner in listing.everywhere:
        return target, inner
    else:
        why = "a file git does not track"
    raise StageError(
        f"{name}: a symlink to {short(inner)}, {why}",
        remedy="staging takes only files git tracks; link to a tracked file or remove the link",
    )


def walked(base: Path) -> list[str]:
    """Every file and symlink under ``base`` (posix, relative), junk folders pruned."""
    found = []
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not junk(d, True))
        links = [d for d in dirnames if (here / d).is_symlink()]
        found += [(here / n).relative_to(base).as_posix() for n in (*filenames, *links)]
    return sorted(found)


def files_under(
    repo: Path, folder: str, listing: GitFiles | None, seen: tuple[Path, ...] = ()
) -> Iterator[tuple[str, Path, str]]:
    """(path relative to ``folder``, file to read, its checkout-relative path) for what staging
    takes from ``folder`` (checkout-relative): what git tracks there (everything, outside git),
    without junk; symlinks to what git tracks in the checkout followed, loops refused."""
    base = repo / folder
    seen = seen or (base.resolve(),)
    if listing is None:
        names = walked(base) if base.is_dir() else []
    else:
        prefix = folder + "/"
        submodule = next((p for p in sorted(listing.submodules) if p.startswith(prefix)), None)
        if submodule is not None:
            raise StageError(
                f"{short(submodule)}: a git submodule; staging takes files git tracks in this "
                "repository",
                remedy="vendor its files into the env, or install it as a dependency",
            )
        names = sorted(p.removeprefix(prefix) for p in listing.tracked if p.startswith(prefix))
        if not names:  # a folder a symlink points at, outside the listed parts of the checkout
            names = [
                p.removeprefix(prefix)
                for p in sorted(listing.everywhere)
                if p.startswith(prefix) and on_disk(repo, p)
            ]
    for rel in names:
        if junk_path(rel):
            continue
        path = base / rel
        if not rel.isprintable():
            raise StageError(
                f"{short(f'{folder}/{rel}')}: a file name with a control character",
                remedy="rename it in the checkout",
            )
        if not path.is_symlink():
            yield rel, path, f"{folder}/{rel}"
            continue
        target, inner = resolved(path, repo, listing)
        if not target.is_dir():
            yield rel, path, inner
            continue
        if any(target == s or s.is_relative_to(target) for s in seen):
            raise StageError(
                f"{short(f'{folder}/{rel}')}: symlink loop (to {short(str(target))})",
                remedy="remove the link or point it at a folder outside its own",
            )
        for sub, source, origin in files_under(repo, inner, listing, (*seen, target)):
            yield f"{rel}/{sub}", source, origin


@dataclass(frozen=True)
class Sources:
    """The checkout files one env's staged tree is made of, and what was left out."""

    files: dict[str, Path]  # staged path -> checkout file
    scanned: dict[str, Path]  # checkout-relative path -> checkout file, each once
    credentials: tuple[str, ...]  # staged paths of credential files left out
    modified: tuple[str, ...] = ()
    untracked: tuple[str, ...] = ()


def sources(spec: EnvSpec, repo: Path, listing: GitFiles | None, scanner: ContentScan) -> Sources:
    """Map each file of ``src/``, ``envs/<env>/`` (again at the root) and the root
    pyproject.toml to its staged path; credential files are left out and named. A file name
    holding a token fails the env; names listed in the output have their tokens redacted."""
    env_dir = spec.path.relative_to(repo).as_posix()
    files: dict[str, Path] = {}
    scanned: dict[str, Path] = {}
    left_out: list[str] = []
    parts = [("src", ("src",)), (env_dir, (f"envs/{spec.name}", ""))]
    for folder, destinations in parts:
        for rel, source, origin in files_under(repo, folder, listing):
            if credentials(rel) or credentials(origin):
                left_out.append(scanner.redact_name(f"{destinations[0]}/{rel}")[0])
                continue
            shown, kinds = scanner.redact_name(f"{folder}/{rel}")
            if kinds:
                raise StageError(
                    f"{short(shown, 160)}: a file name holding a {kinds[0]}",
                    remedy="rename the file in the checkout (and revoke the token)",
                )
            scanned[f"{folder}/{rel}"] = source
            for dest in destinations:
                files[f"{dest}/{rel}".lstrip("/")] = source
    root_pyproject = repo / "pyproject.toml"
    tracked = listing is None or "pyproject.toml" in listing.tracked
    if "pyproject.toml" not in files and tracked and root_pyproject.is_file():
        files["pyproject.toml"] = scanned["pyproject.toml"] = root_pyproject
    if listing is None:
        return Sources(files, scanned, tuple(left_out))
    mine = listing.under(env_dir)
    untracked = sorted(scanner.redact_name(p)[0] for p in mine.untracked if not junk_path(p))
    if not mine.tracked and untracked:
        raise StageError(
            f"{env_dir}: git tracks none of its files ({len(untracked)} untracked)",
            remedy="commit the env to release it",
        )
    modified = sorted(scanner.redact_name(p)[0] for p in mine.modified)
    return Sources(files, scanned, tuple(left_out), tuple(modified), tuple(untracked))


def junk_path(rel: str) -> bool:
    parts = rel.split("/")
    return any(junk(d, True) for d in parts[:-1]) or junk(parts[-1], False)


def lay_out(
    found: Sources, stage_dir: Path, shared: SharedFiles | None = None
) -> tuple[list[Change], dict[str, Pooled]]:
    """Copy ``found``'s files into an empty ``stage_dir`` (``src/`` as links into ``shared``'s
    pool, when given); a Change per credential file left out, named by its staged path, and the
    linked files with the pooled copy of each."""
    root = os.fspath(stage_dir)
    made = {root}
    linked: dict[str, Pooled] = {}
    for dest, source in found.files.items():
        target = f"{root}/{dest}"
        folder = target.rpartition("/")[0]
        if folder not in made:
            os.makedirs(folder, exist_ok=True)
            while folder not in made:
                made.add(folder)
                folder = folder.rpartition("/")[0]
        if shared is not None and dest.startswith("src/"):
            if (pooled := shared.place(source, target)) is not None:
                linked[dest] = pooled
        else:
            shutil.copyfile(source, target)
    changes = [
        Change(path, None, path.rsplit("/", 1)[-1], "", CREDENTIALS_WHY)
        for path in found.credentials
    ]
    return changes, linked
