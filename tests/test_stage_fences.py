"""Staging takes only what the release owns: what git tracks, no secrets, only folders it made."""

from __future__ import annotations

import json
import os
import random
import shutil
import string
import subprocess
import sys
from pathlib import Path

import pytest

from releaselib.errors import UsageError
from releaselib.hookspecs import hookimpl
from releaselib.locks import LOCK_NAME, held
from releaselib.options import check_staging_dir
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.records import AllowedSecret, EnvProfile
from releaselib.stage.discover import discover_envs
from releaselib.stage.secret_gate import allow_flags
from releaselib.stage.sources import CREDENTIALS_WHY
from releaselib.stage.stage_env import StageRun, stage_envs
from releaselib.stage.staged_tree import manifest_path
from tests.helpers import (
    MAIN,
    builtin_registry,
    make_env,
    offline,
    openenv_root,
    task,
    user_cli,
    waits,
    write,
)
from tests.test_bad_input import config_for

CANARY = "hf_" + "".join(random.choices(string.ascii_letters, k=34))


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A git checkout: a_env with a canary in an untracked and an ignored file, b_env clean."""
    repo = openenv_root(tmp_path / "OpenEnv")
    make_env(repo, "a_env", **{".gitignore": "build/\n*.egg-info/\n"})
    make_env(repo, "b_env", **{"data/old.txt": "old\n"})
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    env = repo / "envs" / "a_env"
    write(env / "notes.txt", f"token = {CANARY}\n")  # untracked
    write(env / "build" / "lib" / "leak.py", f"TOKEN = '{CANARY}'\n")  # ignored
    write(env / "x.egg-info" / "PKG-INFO", "Name: x\n")  # ignored
    write(env / "server" / "app.py", "app = 1\n")  # modified
    (repo / "envs" / "b_env" / "data" / "old.txt").unlink()  # tracked, deleted
    return repo


def stage(repo: Path, tmp_path: Path, run: StageRun | None = None) -> dict[str, object]:
    registry = builtin_registry()
    return {s.env: s for s in stage_envs(config_for(repo, tmp_path), discover_envs(repo), registry, run)}


def test_only_tracked_files_are_staged_and_the_rest_is_named(checkout: Path, tmp_path: Path) -> None:
    staged = stage(checkout, tmp_path)
    a = staged["a_env"]
    assert a.ok, a.error
    assert not any(f.startswith(("build/", "x.egg-info", "notes.txt")) or "/build/" in f or "notes.txt" in f for f in a.manifest)
    assert (a.staged_dir / "server" / "app.py").read_text() == "app = 1\n"  # the working tree's content
    assert a.worktree == (
        "envs/a_env: 1 file modified (server/app.py), 1 untracked (notes.txt) — untracked files are "
        "left out; commit them to release them"
    )
    assert a.as_json()["untracked"] == ["envs/a_env/notes.txt"] and a.as_json()["git"] is True
    b = staged["b_env"]
    assert b.ok and "envs/b_env/data/old.txt" not in b.manifest and b.worktree is not None
    tree = b"".join(p.read_bytes() for p in (tmp_path / "staging").rglob("*") if p.is_file())
    assert CANARY.encode() not in tree


def test_a_tracked_secret_under_an_innocent_name_fails_its_env_only(checkout: Path, tmp_path: Path) -> None:
    write(checkout / "envs" / "a_env" / "settings.ini", f"[hub]\ntoken = {CANARY}\n")
    git(checkout, "add", "envs/a_env/settings.ini")
    staged = stage(checkout, tmp_path)
    assert staged["b_env"].ok
    a = staged["a_env"]
    assert not a.ok and a.error is not None
    assert a.error.startswith("a_env: envs/a_env/settings.ini:2: Hugging Face token;")
    assert CANARY not in a.error and not a.staged_dir.exists()
    assert not [p for p in (tmp_path / "staging" / "openenv").iterdir() if p.name.startswith(".")]
    allowed = stage(checkout, tmp_path, StageRun(allow_flags(["envs/a_env/settings.ini"], checkout)))["a_env"]
    assert allowed.ok and [str(f) for f in allowed.allowed_secrets] == ["envs/a_env/settings.ini:2: Hugging Face token"]
    assert allowed.allowed_secrets[0].allowed_by == "--allow-secret envs/a_env/settings.ini"


def test_the_canary_is_in_no_output_ledger_or_briefing(checkout: Path, tmp_path: Path) -> None:
    write(checkout / "envs" / "a_env" / "settings.ini", f"[hub]\ntoken = {CANARY}\n")
    git(checkout, "add", "envs/a_env/settings.ini")
    staging = tmp_path / "staging"
    result = user_cli("release", "--repo", str(checkout), "--staging-dir", str(staging), "--until", "stage", "--json")
    assert result.returncode == 1, result.stderr
    assert "envs/a_env/settings.ini:2: Hugging Face token" in result.stderr
    assert "1 untracked (notes.txt)" in result.stderr
    assert CANARY not in result.stdout + result.stderr
    report = user_cli("report", "--repo", str(checkout), "--staging-dir", str(staging))
    assert report.returncode == 0 and CANARY not in report.stdout + report.stderr, report.stderr
    written = [p for p in staging.rglob("*") if p.is_file()]
    assert any(p.name.startswith("ledger-") for p in written) and any(p.name.startswith("briefing-") for p in written)
    assert not [p for p in written if CANARY.encode() in p.read_bytes()]


def test_a_folder_staging_did_not_make_is_never_touched(checkout: Path, tmp_path: Path) -> None:
    mine = tmp_path / "staging" / "openenv" / "a_env-0.2.2"
    write(mine / "mywork.py", "precious\n")
    staged = stage(checkout, tmp_path)
    assert staged["b_env"].ok
    assert (mine / "mywork.py").read_text() == "precious\n" and os.listdir(mine) == ["mywork.py"]
    error = staged["a_env"].error or ""
    assert f"{mine}: a folder staging did not make" in error and "move your files out" in error


def test_a_staged_tree_is_replaced_but_not_one_holding_a_users_file(checkout: Path, tmp_path: Path) -> None:
    first = stage(checkout, tmp_path)["a_env"]
    assert json.loads(manifest_path(first.staged_dir).read_text())["tool"] == "openenv-release"
    write(checkout / "envs" / "a_env" / "server" / "app.py", "app = 2\n")
    again = stage(checkout, tmp_path)["a_env"]
    assert again.ok and (again.staged_dir / "server" / "app.py").read_text() == "app = 2\n"
    write(again.staged_dir / "mywork.py", "precious\n")
    refused = stage(checkout, tmp_path)["a_env"]
    assert "holds files staging did not write (mywork.py)" in (refused.error or "")
    assert (again.staged_dir / "mywork.py").is_file()
    assert [p.name for p in (tmp_path / "staging" / "openenv").iterdir() if p.name.startswith(".")] == []


def test_a_staging_dir_the_tool_creates_is_gitignored(checkout: Path, tmp_path: Path) -> None:
    stage(checkout, tmp_path)
    assert (tmp_path / "staging" / ".gitignore").read_text().splitlines()[-1] == "*"
    inside = task("stage", "--repo", str(checkout), "--env", "b_env", cwd=checkout)
    assert inside.returncode == 0, inside.stderr
    status = subprocess.run(["git", "status", "--porcelain"], cwd=checkout, capture_output=True, text=True)
    assert "hf-staging" not in status.stdout, status.stdout


def test_a_symlink_loop_fails_its_env_only(checkout: Path, tmp_path: Path) -> None:
    (checkout / "envs" / "a_env" / "loop").symlink_to("..")
    git(checkout, "add", "envs/a_env/loop")
    staged = stage(checkout, tmp_path)
    assert staged["b_env"].ok
    assert "envs/a_env/loop: symlink loop" in (staged["a_env"].error or "")
    assert [p.name for p in (tmp_path / "staging" / "openenv").iterdir() if p.name.startswith(".")] == []


def test_a_name_with_a_newline_fails_its_env_on_one_line(checkout: Path, tmp_path: Path) -> None:
    write(checkout / "envs" / "a_env" / "bad\nname.txt", "x\n")
    git(checkout, "add", "-A", "envs/a_env")
    staged = stage(checkout, tmp_path)
    error = staged["a_env"].error or ""
    assert "envs/a_env/bad\\nname.txt: a file name with a control character" in error and "\n" not in error
    assert staged["b_env"].ok


def test_a_second_run_with_no_wait_names_the_holder(checkout: Path, tmp_path: Path) -> None:
    staging = tmp_path / "staging"
    staging.mkdir()
    with held(staging / LOCK_NAME, "staging dir", wait=False, on_wait=print):
        result = user_cli("stage", "--repo", str(checkout), "--staging-dir", str(staging), "--no-wait")
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"is in use by another openenv-release run (pid {os.getpid()}" in result.stderr


@pytest.mark.parametrize(
    ("where", "fragment"),
    [
        pytest.param("file", "a file, not a folder", id="staging-dir-is-a-file"),
        pytest.param("namespace-file", "openenv: a file where a folder should be", id="namespace-is-a-file"),
    ],
)
def test_staging_dir_problems_are_exit_2(checkout: Path, tmp_path: Path, where: str, fragment: str) -> None:
    staging = tmp_path / "staging"
    if where == "file":
        write(staging, "x")
    else:
        write(staging / "openenv", "x")
    result = task("stage", "--repo", str(checkout), "--staging-dir", str(staging))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and fragment in result.stderr


def test_a_read_only_staging_dir_is_exit_2(checkout: Path, tmp_path: Path) -> None:
    staging = tmp_path / "ro"
    staging.mkdir()
    staging.chmod(0o555)
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"] if os.geteuid() == 0 else []
    result = subprocess.run(
        [*prefix, sys.executable, "-c", MAIN, "stage", "--repo", str(checkout), "--staging-dir", str(staging)],
        capture_output=True, text=True, timeout=waits(120),
        env={**os.environ, **offline(tmp_path)},
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"--staging-dir {staging}" in result.stderr and "Permission denied" in result.stderr


class AllowsSettings:
    @hookimpl
    def openenv_release_envs(self) -> list[EnvProfile]:
        return [EnvProfile("a_env")]

    @hookimpl
    def openenv_release_allowed_secrets(self, env: str) -> list[AllowedSecret]:
        return [AllowedSecret("envs/a_env/*.ini", why="a test fixture", kind="Hugging Face token")] if env == "a_env" else []


def test_a_plugin_allows_a_known_false_positive(checkout: Path, tmp_path: Path) -> None:
    write(checkout / "envs" / "a_env" / "settings.ini", f"[hub]\ntoken = {CANARY}\n")
    git(checkout, "add", "envs/a_env/settings.ini")
    pm = get_plugin_manager(entry_points=False)
    pm.register(AllowsSettings())
    [a, _] = stage_envs(config_for(checkout, tmp_path), discover_envs(checkout), PluginRegistry(pm))
    assert a.ok, a.error
    assert a.as_json()["allowed_secrets"] == [
        {"file": "envs/a_env/settings.ini", "line": 2, "kind": "Hugging Face token", "allowed_by": a.allowed_secrets[0].allowed_by}
    ]
    assert a.allowed_secrets[0].allowed_by.endswith(": a test fixture")


@pytest.mark.parametrize(
    ("name", "content"),
    [
        pytest.param("static/app.css", f"body {{ --t: '{CANARY}'; }}\n", id="by-extension"),
        pytest.param("package-lock.json", f'{{"t": "{CANARY}"}}\n', id="lock-file"),
        pytest.param("docs/swagger.json", f'{{"t": "{CANARY}"}}\n', id="swagger"),
        pytest.param("settings.py", f'TOKEN = "{CANARY}"  # pragma: allowlist secret\n', id="inline-allowlist"),
    ],
)
def test_every_tracked_file_is_scanned_by_content(checkout: Path, tmp_path: Path, name: str, content: str) -> None:
    write(checkout / "envs" / "a_env" / name, content)
    git(checkout, "add", f"envs/a_env/{name}")
    a = stage(checkout, tmp_path)["a_env"]
    assert not a.ok and (a.error or "").startswith(f"a_env: envs/a_env/{name}:1: Hugging Face token;")


@pytest.mark.parametrize(
    ("link", "target", "says"),
    [
        pytest.param("settings.py", "../../.env", ".env, a file git does not track", id="ignored-file"),
        pytest.param("notes.md", "notes.txt", "envs/a_env/notes.txt, a file git does not track", id="untracked-file"),
        pytest.param("gitcfg.ini", "../../.git/config", ".git/config, inside .git/", id="git-dir"),
        pytest.param("build_link", "build", "envs/a_env/build, a folder git tracks nothing in", id="ignored-folder"),
    ],
)
def test_a_tracked_symlink_stages_only_what_git_tracks(checkout: Path, tmp_path: Path, link: str, target: str, says: str) -> None:
    write(checkout / ".env", f"HF_TOKEN={CANARY}\n")
    write(checkout / ".gitignore", ".env\n")
    (checkout / "envs" / "a_env" / link).symlink_to(target)
    git(checkout, "add", ".gitignore", f"envs/a_env/{link}")
    git(checkout, "commit", "-qm", "link")
    staged = stage(checkout, tmp_path)
    assert staged["b_env"].ok
    error = staged["a_env"].error or ""
    assert error.startswith(f"a_env: envs/a_env/{link}: a symlink to {says}; "), error
    written = [p.read_bytes() for p in (tmp_path / "staging").rglob("*") if p.is_file()]
    assert not [b for b in written if CANARY.encode() in b or b"repositoryformatversion" in b]


def test_a_symlink_to_a_tracked_credential_file_is_left_out(checkout: Path, tmp_path: Path) -> None:
    write(checkout / "deploy" / ".env.prod", "HF_HOME=/data\n")
    (checkout / "envs" / "a_env" / "config.txt").symlink_to("../../deploy/.env.prod")
    git(checkout, "add", "-f", "deploy/.env.prod", "envs/a_env/config.txt")
    a = stage(checkout, tmp_path)["a_env"]
    assert a.ok, a.error
    assert "config.txt" not in a.manifest
    assert ("envs/a_env/config.txt", CREDENTIALS_WHY) in {(c.file, c.why) for c in a.changes}


def test_a_symlink_to_a_tracked_file_outside_envs_is_staged(checkout: Path, tmp_path: Path) -> None:
    write(checkout / "docs" / "guide.md", "# guide\n")
    (checkout / "envs" / "a_env" / "guide.md").symlink_to("../../docs/guide.md")
    (checkout / "envs" / "a_env" / "docs").symlink_to("../../docs")
    git(checkout, "add", "docs", "envs/a_env/guide.md", "envs/a_env/docs")
    a = stage(checkout, tmp_path)["a_env"]
    assert a.ok, a.error
    assert (a.staged_dir / "guide.md").read_text() == "# guide\n"
    assert (a.staged_dir / "docs" / "guide.md").read_text() == "# guide\n"


@pytest.mark.parametrize("linked", ["envs", "src", "env-dir"])
def test_a_staging_dir_inside_a_linked_envs_src_or_env_dir_is_refused(checkout: Path, tmp_path: Path, linked: str) -> None:
    real = tmp_path / "elsewhere"
    if linked == "env-dir":
        (checkout / "envs" / "b_env").rename(real)
        (checkout / "envs" / "b_env").symlink_to(real)
    else:
        (checkout / linked).rename(real)
        (checkout / linked).symlink_to(real)
    with pytest.raises(UsageError, match="overlaps the checkout"):
        check_staging_dir(real / "hf-staging", checkout)
    assert check_staging_dir(tmp_path / "staging", checkout) == (tmp_path / "staging").resolve()


def test_a_non_git_checkout_never_stages_its_own_staged_trees(checkout: Path, tmp_path: Path) -> None:
    shutil.rmtree(checkout / ".git")
    (checkout / "envs" / "a_env" / "notes.txt").unlink()
    (checkout / "envs" / "a_env" / "build").rename(tmp_path / "build")
    inside = checkout / "envs" / "a_env" / "hf-staging"
    with pytest.raises(UsageError, match="overlaps the checkout"):
        stage_envs(config_for(checkout, tmp_path, staging_dir=inside), discover_envs(checkout), builtin_registry())
    assert not inside.exists()


def test_a_folder_at_the_manifest_temp_name_does_not_break_staging(checkout: Path, tmp_path: Path) -> None:
    namespace = tmp_path / "staging" / "openenv"
    (namespace / "a_env-0.2.2.manifest.json.tmp").mkdir(parents=True)
    a = stage(checkout, tmp_path)["a_env"]
    assert a.ok, a.error
    assert json.loads(manifest_path(a.staged_dir).read_text())["hash"] == a.manifest_hash


def test_a_manifest_that_cannot_be_written_fails_the_env_and_moves_no_tree(checkout: Path, tmp_path: Path) -> None:
    namespace = tmp_path / "staging" / "openenv"
    (namespace / "a_env-0.2.2.manifest.json" / "x").mkdir(parents=True)
    staged = stage(checkout, tmp_path)
    assert staged["b_env"].ok
    error = staged["a_env"].error or ""
    assert error.startswith("a_env: ") and "\n" not in error, error
    assert not (namespace / "a_env-0.2.2").exists()
    assert [p.name for p in namespace.iterdir() if p.name.startswith(".")] == []


def test_a_manifest_without_the_tool_key_is_not_ours(checkout: Path, tmp_path: Path) -> None:
    mine = tmp_path / "staging" / "openenv" / "a_env-0.2.2"
    write(mine / "mywork.py", "precious\n")
    manifest_path(mine).write_text(json.dumps({"hash": "x", "files": {"mywork.py": {"sha1": "x", "size": 9}}}))
    a = stage(checkout, tmp_path)["a_env"]
    assert "a folder staging did not make" in (a.error or "")
    assert (mine / "mywork.py").read_text() == "precious\n"


def test_what_a_killed_run_left_is_removed_when_it_is_ours(checkout: Path, tmp_path: Path) -> None:
    namespace = tmp_path / "staging" / "openenv"
    ours = [namespace / ".openenv-release-tmp.a_env-0.2.2.new.abcd_123", namespace / ".openenv-release-tmp.a_env-0.2.2.old.zz99zz99"]
    for folder in ours:
        write(folder / "server" / "app.py", "x\n")
    write(namespace / ".openenv-release-tmp.a_env-0.2.2.manifest.k2k2k2k2", "{}")
    theirs = namespace / ".a_env-0.2.2.mine"
    write(theirs / "notes.txt", "keep\n")
    assert stage(checkout, tmp_path)["a_env"].ok
    assert sorted(p.name for p in namespace.iterdir() if p.name.startswith(".")) == [theirs.name]


def test_allow_secret_is_an_exact_path_recorded_as_given(checkout: Path, tmp_path: Path) -> None:
    for name in ("settings.ini", "other.ini"):
        write(checkout / "envs" / "a_env" / name, f"[hub]\ntoken = {CANARY}\n")
        git(checkout, "add", f"envs/a_env/{name}")
    given = str(checkout / "envs" / "a_env" / "settings.ini")
    a = stage(checkout, tmp_path, StageRun(allow_flags([given], checkout)))["a_env"]
    assert (a.error or "").startswith("a_env: envs/a_env/other.ini:2: Hugging Face token;")
    write(checkout / "envs" / "a_env" / "other.ini", "[hub]\n")
    a = stage(checkout, tmp_path, StageRun(allow_flags([given], checkout)))["a_env"]
    assert a.ok, a.error
    assert [f.allowed_by for f in a.allowed_secrets] == [f"--allow-secret {given}"]
    with pytest.raises(UsageError, match="an exact path, not a pattern"):
        allow_flags(["envs/*/settings.ini"], checkout)


def test_token_shaped_file_names_are_redacted_and_a_tracked_one_fails(checkout: Path, tmp_path: Path) -> None:
    write(checkout / "envs" / "b_env" / f"cache-{CANARY}.txt", "x\n")  # untracked
    staged = stage(checkout, tmp_path)
    b = staged["b_env"]
    assert b.ok, b.error
    assert "cache-hf_***.txt" in (b.worktree or "") and b.as_json()["untracked"] == ["envs/b_env/cache-hf_***.txt"]
    git(checkout, "add", f"envs/b_env/cache-{CANARY}.txt")
    b = stage(checkout, tmp_path)["b_env"]
    assert not b.ok and (b.error or "").startswith("b_env: envs/b_env/cache-hf_***.txt: a file name holding a Hugging Face token;")
    assert CANARY not in json.dumps(b.as_json(), default=str)


@pytest.mark.parametrize("where", ["envs/a_env/vendor", "src/vendor"])
def test_a_git_submodule_fails_with_one_clear_line(checkout: Path, tmp_path: Path, where: str) -> None:
    (checkout / where).mkdir()
    git(checkout, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},{where}")
    staged = stage(checkout, tmp_path)
    message = f"{where}: a git submodule; staging takes files git tracks in this repository"
    assert message in (staged["a_env"].error or "")
    assert staged["b_env"].ok == (where != "src/vendor")


def test_a_file_hidden_by_a_sparse_checkout_is_reported(checkout: Path, tmp_path: Path) -> None:
    write(checkout / "envs" / "b_env" / "extra.txt", "x\n")
    git(checkout, "add", "envs/b_env/extra.txt")
    git(checkout, "commit", "-qm", "extra")
    git(checkout, "update-index", "--skip-worktree", "envs/b_env/extra.txt")
    (checkout / "envs" / "b_env" / "extra.txt").unlink()
    b = stage(checkout, tmp_path)["b_env"]
    assert b.ok and "extra.txt" not in b.manifest
    assert "envs/b_env/extra.txt" in b.modified and "extra.txt" in (b.worktree or "")


@pytest.mark.parametrize("linked", ["envs/b_env/conf", "envs/b_env", "src/openenv"])
def test_a_file_behind_an_untracked_symlinked_folder_is_never_read(checkout: Path, tmp_path: Path, linked: str) -> None:
    write(checkout / "envs" / "b_env" / "conf" / "app.ini", "port = 1\n")
    git(checkout, "add", "envs/b_env/conf/app.ini")
    git(checkout, "commit", "-qm", "conf")
    private = tmp_path / "private"
    shutil.copytree(checkout / linked, private)
    for outside in private.rglob("*"):
        if outside.is_file():
            outside.write_text("OUTSIDE THE CHECKOUT\n")
    shutil.rmtree(checkout / linked)
    (checkout / linked).symlink_to(private)
    staged = stage(checkout, tmp_path)
    tree = b"".join(p.read_bytes() for p in (tmp_path / "staging").rglob("*") if p.is_file())
    assert b"OUTSIDE THE CHECKOUT" not in tree
    b = staged["b_env"]
    if linked == "envs/b_env/conf":
        assert b.ok and "conf/app.ini" not in b.manifest, b.error
        assert "envs/b_env/conf/app.ini" in b.modified


def test_the_card_port_comes_from_what_git_tracks_not_an_ignored_file(checkout: Path, tmp_path: Path) -> None:
    (checkout / ".git" / "info" / "exclude").write_text("openenv.yaml\n")
    write(checkout / "envs" / "a_env" / "openenv.yaml", "port: 9001\n")
    write(checkout / "envs" / "b_env" / "README.md", '---\ntitle: B\napp_port: "80a"\n---\n# B\n')
    git(checkout, "add", "envs/b_env/README.md")
    staged = stage(checkout, tmp_path)
    a = staged["a_env"]
    assert a.ok, a.error
    assert "app_port: 8000" in (a.staged_dir / "README.md").read_text()
    assert staged["b_env"].error == "b_env: envs/b_env/README.md: app_port 80a is not a port (an integer 1-65535); fix app_port in the README front matter"
