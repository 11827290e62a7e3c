"""The ``src/`` files every staged tree of a run holds are one file linked into each tree: the
same content as copies, never shared with the checkout or with a tree a plugin fix edits, and a
file written through by a plugin check fails that env instead of passing into the others."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from releaselib.hookspecs import hookimpl
from releaselib.records import Check, EnvProfile, Fix
from releaselib.stage.discover import discover_envs
from releaselib.stage.shared_files import POOL_PREFIX
from releaselib.stage.stage_env import StageRun, stage_envs
from releaselib.stage.staged_tree import build_manifest
from tests.corpus import tree_digest
from tests.helpers import builtin_registry, make_env, openenv_root, release_config, write

CORE = "src/openenv/core/env.py"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = openenv_root(tmp_path / "OpenEnv")
    write(root / CORE, "class Env:\n    pass\n")
    for name in ("a_env", "b_env", "c_env"):
        make_env(root, name)
    return root


def staged(repo: Path, tmp_path: Path, *plugins: object, run: StageRun | None = None) -> dict:
    config = release_config(repo, tmp_path / "staging")
    found = stage_envs(
        config, discover_envs(repo), builtin_registry(*plugins), run or StageRun(lock=False)
    )
    return {s.env: s for s in found}


def test_each_tree_links_one_copy_of_src_and_matches_copies(repo: Path, tmp_path: Path) -> None:
    before = tree_digest(repo)
    trees = staged(repo, tmp_path)
    assert all(s.ok for s in trees.values()), [s.error for s in trees.values()]
    files = [s.staged_dir / CORE for s in trees.values()]
    assert len({os.stat(f).st_ino for f in files}) == 1
    assert os.stat(repo / CORE).st_ino != os.stat(files[0]).st_ino  # never the checkout's
    assert all(s.manifest == build_manifest(s.staged_dir) for s in trees.values())
    assert oct(os.stat(files[0]).st_mode & 0o777) == oct(0o666 & ~current_umask())
    assert not list(files[0].parents[4].glob(f"{POOL_PREFIX}*"))  # the pool went with the run
    assert tree_digest(repo) == before


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class EditsCore:
    """b_env's plugin: a fix that appends to the shared file in place."""

    @hookimpl
    def openenv_release_envs(self) -> list[EnvProfile]:
        return [EnvProfile("b_env")]

    @hookimpl
    def openenv_release_fixes(self, env: str) -> tuple[Fix, ...]:
        if env != "b_env":
            return ()

        def apply(tree: Path) -> str:
            with (tree / CORE).open("a") as out:
                out.write("PATCHED = True\n")
            return "patched"

        return (Fix("patch-core", "test", apply),)


def test_a_tree_a_fix_edits_gets_its_own_copies(repo: Path, tmp_path: Path) -> None:
    trees = staged(repo, tmp_path, EditsCore())
    assert all(s.ok for s in trees.values()), [s.error for s in trees.values()]
    assert "PATCHED" in (trees["b_env"].staged_dir / CORE).read_text()
    for env in ("a_env", "c_env"):
        assert (trees[env].staged_dir / CORE).read_text() == (repo / CORE).read_text()


class WritingCheck:
    """A check that breaks its contract: it writes into b_env's tree (after editing the
    checkout's file, given ``edits``), then passes, raises, or hides the write (removes the file
    it wrote through)."""

    def __init__(self, then: str, edits: Path | None = None) -> None:
        self.then = then
        self.edits = edits

    @hookimpl
    def openenv_release_checks(self) -> tuple[Check, ...]:
        def run(tree: Path) -> list[object]:
            if "b_env" in tree.name:
                if self.edits is not None:
                    write(self.edits, "class Env:\n    edited = True\n")
                with (tree / CORE).open("a") as out:
                    out.write("CHANGED = True\n")
                if self.then == "raises":
                    raise RuntimeError("check crashed")
                if self.then == "hides":
                    (tree / CORE).unlink()
            return []

        return (Check("writes", "writes in place", run),)


@pytest.mark.parametrize("then", ["passes", "raises", "hides"])
def test_a_check_writing_a_shared_file_fails_its_env_only(
    repo: Path, tmp_path: Path, then: str
) -> None:
    trees = staged(repo, tmp_path, WritingCheck(then))
    b = trees["b_env"]
    assert not b.ok and b.error is not None
    assert ("check crashed" if then == "raises" else f"{CORE} changed in place") in b.error
    for env in ("a_env", "c_env"):  # staged before and after: neither has the write
        tree = trees[env]
        assert tree.ok, tree.error
        assert (tree.staged_dir / CORE).read_text() == (repo / CORE).read_text()
        assert tree.manifest == build_manifest(tree.staged_dir)


def test_a_checkout_file_changed_during_the_run_is_pooled_anew(
    repo: Path, tmp_path: Path
) -> None:
    config = release_config(repo, tmp_path / "staging")
    run = StageRun(lock=False)
    registry = builtin_registry()
    a, b, _ = discover_envs(repo)
    [first] = stage_envs(config, [a], registry, run)
    write(repo / CORE, "class Env:\n    changed = True\n")
    os.utime(repo / CORE, ns=(1, 1))  # a different mtime, whatever the clock's resolution
    [second] = stage_envs(config, [b], registry, run)
    assert (first.staged_dir / CORE).read_text() == "class Env:\n    pass\n"
    assert (second.staged_dir / CORE).read_text() == "class Env:\n    changed = True\n"
    assert second.manifest == build_manifest(second.staged_dir)


def test_a_tree_staged_before_gets_back_what_it_was_staged_with(
    repo: Path, tmp_path: Path
) -> None:
    """The checkout's file changes while b_env stages, then b_env's check writes through its
    link: a_env, staged before, gets back what it was staged with, not the checkout's."""
    before = (repo / CORE).read_text()
    trees = staged(repo, tmp_path, WritingCheck("passes", edits=repo / CORE))
    a = trees["a_env"]
    assert a.ok and (a.staged_dir / CORE).read_text() == before
    assert a.manifest == build_manifest(a.staged_dir)
    assert not trees["b_env"].ok


def test_without_file_locks_the_run_copies(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl

    def no_locks(fd: int, op: int) -> None:
        raise OSError(37, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    trees = staged(repo, tmp_path)
    assert all(s.ok for s in trees.values())
    assert all(os.stat(s.staged_dir / CORE).st_nlink == 1 for s in trees.values())
    assert not list((tmp_path / "staging" / "openenv").glob(f"{POOL_PREFIX}*"))


def test_only_a_killed_runs_pool_is_removed(repo: Path, tmp_path: Path) -> None:
    folder = tmp_path / "staging" / "openenv"
    killed = folder / f"{POOL_PREFIX}deadbeef"
    write(killed / "0", "x")
    write(killed / ".lock", "")
    mine = folder / f"{POOL_PREFIX}my-notes"  # not a name this tool makes
    write(mine / "keep.txt", "x")
    config = release_config(repo, tmp_path / "staging")
    a, _, c = discover_envs(repo)
    living = StageRun(lock=False)  # another run, still staging
    stage_envs(config, [a], builtin_registry(), living)
    [pool] = [p for p in folder.glob(f"{POOL_PREFIX}*") if p not in (killed, mine)]
    trees = staged(repo, tmp_path)
    assert all(s.ok for s in trees.values())
    assert not killed.exists() and (mine / "keep.txt").is_file() and pool.is_dir()
    [later] = stage_envs(config, [c], builtin_registry(), living)
    assert os.stat(later.staged_dir / CORE).st_nlink > 1  # its pool still served it
    del living
    assert not pool.exists()
