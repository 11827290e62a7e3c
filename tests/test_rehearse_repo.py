"""``rehearse --repo PATH``: a whole release of a checkout, rehearsed on a private copy of what
git tracks there; the checkout itself is never written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from openenv_release.cli import program
from releaselib.errors import UsageError
from releaselib.private_copy import pin_reason, private_copy
from releaselib.rehearse import BRIEFING_MARKER, examples_dir
from releaselib.stage.discover import discover_envs
from releaselib.stage.stage_env import stage_envs
from tests.corpus import tree_digest
from tests.helpers import builtin_registry, cli, release_config

TOKEN = "hf_" + "untrackedTokenOnlyOnDisk" * 2  # in an untracked file: must reach nothing
OUTSIDE = b"OUTSIDE-THE-CHECKOUT-7f3a"  # behind a tracked symlink leading out of the checkout
EDIT = "# LOCAL-EDIT-5c1d: a tracked file changed in the work tree, not committed"
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "commit.gpgsign=false"]


def git_status(repo: Path) -> str:
    return subprocess.run(["git", "--no-optional-locks", "status", "--porcelain", "--ignored"], cwd=repo, capture_output=True, text=True, check=True).stdout


def make_checkout(root: Path, outside: Path) -> Path:
    """Two example envs in a git checkout, then an untracked token file, a tracked file edited
    in the work tree, a tracked symlink out of the checkout (where staging never looks) and
    one inside it."""
    examples = examples_dir()
    root.mkdir()
    shutil.copy(examples / "pyproject.toml", root / "pyproject.toml")
    shutil.copytree(examples / "src", root / "src", ignore=shutil.ignore_patterns("__pycache__"))
    for env in ("echo_env", "broken_env"):
        shutil.copytree(examples / "envs" / env, root / "envs" / env, ignore=shutil.ignore_patterns("__pycache__"))
    outside.write_bytes(OUTSIDE)
    os.symlink(outside, root / "outside.txt")
    os.symlink("../README.md", root / "envs" / "echo_env" / "server" / "README-link.md")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run([*GIT, *args], cwd=root, check=True, capture_output=True)
    (root / "envs" / "echo_env" / "token.txt").write_text(f"HF_TOKEN={TOKEN}\n")
    server = root / "envs" / "echo_env" / "server" / "echo_environment.py"
    server.write_text(server.read_text() + f"\n{EDIT}\n")
    return root


def files_holding(root: Path, needle: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and needle in p.read_bytes()]


def test_the_private_copy_holds_what_git_tracks_as_the_work_tree_has_it(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path / "OpenEnv", tmp_path / "secret.txt")
    (checkout / "envs" / "broken_env" / "README.md").unlink()  # tracked, deleted: not copied
    (checkout / "envs" / "broken_env" / "models.py").unlink()
    (checkout / "envs" / "broken_env" / "models.py").mkdir()  # tracked file, now a folder
    before, status = tree_digest(checkout), git_status(checkout)
    events: list[str] = []
    copy = private_copy(checkout, tmp_path / "copy", events.append)
    assert tree_digest(checkout) == before and git_status(checkout) == status
    echo = copy / "envs" / "echo_env"
    assert EDIT in (echo / "server" / "echo_environment.py").read_text()
    assert not (echo / "token.txt").exists() and not files_holding(copy, TOKEN.encode())
    assert os.readlink(copy / "outside.txt") == str(tmp_path / "secret.txt")  # a link, as it is
    assert not files_holding(copy, OUTSIDE)
    assert events == ["not copied: envs/broken_env/models.py (no longer a file in the work tree)"]
    link = echo / "server" / "README-link.md"
    assert os.readlink(link) == "../README.md" and link.resolve() == (echo / "README.md").resolve()
    assert not (copy / "envs" / "broken_env" / "README.md").exists()
    committed = subprocess.run(["git", "status", "--porcelain"], cwd=copy, capture_output=True, text=True, check=True)
    assert committed.stdout == ""  # one commit holds the whole copy: pin can commit on top


def git_out(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True).stdout


def test_a_git_hooks_variables_never_redirect_the_copys_git_to_the_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from a hook (GIT_DIR, GIT_INDEX_FILE, GIT_WORK_TREE set), the copy still gets its own
    repository: the user's branch, index and work tree are as they were."""
    checkout = make_checkout(tmp_path / "OpenEnv", tmp_path / "secret.txt")
    head, index = git_out(checkout, "rev-parse", "HEAD"), (checkout / ".git" / "index").read_bytes()
    before, status = tree_digest(checkout), git_status(checkout)
    monkeypatch.setenv("GIT_DIR", str(checkout / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(checkout / ".git" / "index"))
    monkeypatch.setenv("GIT_WORK_TREE", str(checkout))
    copy = private_copy(checkout, tmp_path / "copy")
    assert git_out(checkout, "rev-parse", "HEAD") == head and (checkout / ".git" / "index").read_bytes() == index
    assert tree_digest(checkout) == before and git_status(checkout) == status
    assert git_out(copy, "log", "-1", "--format=%s") == f"rehearsal copy of {checkout}: its uncommitted changes\n"
    assert git_out(copy, "rev-parse", "HEAD~1") == head
    assert git_out(copy, "rev-parse", "--absolute-git-dir").strip() == str((copy / ".git").resolve())


def test_a_clean_checkouts_copy_has_its_head_and_an_edited_ones_one_commit_on_top(tmp_path: Path) -> None:
    """The rehearsal pins the copy's HEAD: the checkout's own when it is clean; else a commit
    whose parent is the checkout's HEAD, and the pin's reason says so."""
    checkout = make_checkout(tmp_path / "OpenEnv", tmp_path / "secret.txt")
    head = git_out(checkout, "rev-parse", "HEAD").strip()
    dirty = private_copy(checkout, tmp_path / "dirty")
    mine = git_out(dirty, "rev-parse", "HEAD").strip()
    assert mine != head and git_out(dirty, "rev-parse", "HEAD~1").strip() == head
    assert pin_reason(checkout, dirty) == (
        f"the private copy's commit {mine[:12]}: {checkout}'s HEAD {head[:12]} plus your uncommitted changes"
    )
    assert git_out(dirty, "status", "--porcelain") == ""  # pin can commit on top
    subprocess.run(["git", "checkout", "-q", "--", "."], cwd=checkout, check=True)  # the edit undone
    clean = private_copy(checkout, tmp_path / "clean")
    assert git_out(clean, "rev-parse", "HEAD").strip() == head
    assert pin_reason(checkout, clean) == "the rehearsed checkout's HEAD"
    assert git_out(clean, "cat-file", "-t", head).strip() == "commit"  # the copy can serve it


def test_a_checkout_missing_objects_gets_a_fresh_commit_that_says_why(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path / "OpenEnv", tmp_path / "secret.txt")
    subprocess.run(["git", "checkout", "-q", "--", "."], cwd=checkout, check=True)
    blob = git_out(checkout, "rev-parse", "HEAD:pyproject.toml").strip()
    (checkout / ".git" / "objects" / blob[:2] / blob[2:]).unlink()  # as a damaged mirror has it
    copy = private_copy(checkout, tmp_path / "copy")
    assert git_out(copy, "log", "--format=%s") == f"rehearsal copy of {checkout}\n"
    assert "lacks objects git would need to serve it" in pin_reason(checkout, copy)


def test_a_token_in_a_file_name_left_out_is_redacted_as_staging_redacts_it(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path / "OpenEnv", tmp_path / "secret.txt")
    named = checkout / "envs" / "echo_env" / f"cache-{TOKEN}.txt"
    named.write_text("x\n")
    subprocess.run([*GIT, "add", "-f", str(named)], cwd=checkout, check=True)
    subprocess.run([*GIT, "commit", "-qm", "named"], cwd=checkout, check=True)
    named.unlink()
    named.mkdir()  # tracked file, now a folder: left out and named
    events: list[str] = []
    private_copy(checkout, tmp_path / "copy", events.append)
    assert events == ["not copied: envs/echo_env/cache-hf_***.txt (no longer a file in the work tree)"]


def stage_errors(repo: Path, staging: Path) -> dict[str, str | None]:
    config = release_config(repo, staging)
    registry = builtin_registry()
    return {s.env: s.error for s in stage_envs(config, discover_envs(repo), registry)}


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("{outside}", "symlink points outside the checkout"),
        ("../../../secret.txt", "symlink points outside the checkout"),
        ("untracked.txt", "a symlink to envs/echo_env/untracked.txt, a file git does not track"),
        ("notes", "a symlink to envs/echo_env/notes, a folder git tracks nothing in"),
        ("../../.git/config", "a symlink to .git/config, inside .git/"),
        ("missing.txt", "symlink loop or dangling symlink"),
    ],
)
def test_staging_the_copy_fails_an_env_for_a_bad_symlink_as_staging_the_checkout_does(target: str, says: str, tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path / "OpenEnv", tmp_path / "secret.txt")
    echo = checkout / "envs" / "echo_env"
    os.symlink(target.format(outside=tmp_path / "secret.txt"), echo / "leak.txt")
    subprocess.run([*GIT, "add", "envs/echo_env/leak.txt"], cwd=checkout, check=True)
    subprocess.run([*GIT, "commit", "-qm", "link"], cwd=checkout, check=True)
    (echo / "untracked.txt").write_text(f"HF_TOKEN={TOKEN}\n")
    (echo / "notes").mkdir()
    (echo / "notes" / "n.txt").write_text(f"HF_TOKEN={TOKEN}\n")
    copy = private_copy(checkout, tmp_path / "copy")
    real, rehearsed = stage_errors(checkout, tmp_path / "s1"), stage_errors(copy, tmp_path / "s2")
    assert says in (real["echo_env"] or "") and rehearsed == real
    assert not files_holding(copy, OUTSIDE) and not files_holding(copy, TOKEN.encode())


def test_a_folder_outside_git_is_one_usage_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    shutil.copytree(examples_dir(), plain)
    with pytest.raises(UsageError, match="not a git checkout") as raised:
        private_copy(plain, tmp_path / "copy")
    assert str(plain) in raised.value.one_line() and not (tmp_path / "copy").exists()


def run_task(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        program.run(["openenv-release", *argv])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("kind", ["not git", "no envs", "untracked in a repo", "nothing added"])
def test_a_path_that_is_no_git_checkout_of_openenv_is_exit_2_in_one_line(kind: str, tmp_path: Path, capsys) -> None:
    path = tmp_path / "x"
    if kind == "no envs":
        path.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    elif kind == "untracked in a repo":  # an untracked folder inside another repository
        subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
        shutil.copytree(examples_dir(), path)
    else:
        shutil.copytree(examples_dir(), path)
        if kind == "nothing added":
            subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    code, out, err = run_task(capsys, "rehearse", "--repo", str(path), "--builder", "host", "--briefing", str(tmp_path / "b.md"))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and str(path) in err and "Traceback" not in err
    if kind in ("untracked in a repo", "nothing added"):
        assert f"--repo {path}: nothing git tracks in {path}" in err


def test_the_root_folder_is_named_as_no_checkout_before_any_briefing_check(capsys) -> None:
    code, out, err = run_task(capsys, "rehearse", "--repo", "/", "--builder", "host")
    assert code == 2 and out == "" and err.startswith("error: --repo /: not an OpenEnv checkout")


@pytest.mark.e2e
@pytest.mark.slow  # a whole rehearsal for where one file goes: .ci/run runs it
def test_run_from_inside_the_checkout_the_briefing_goes_to_the_temp_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    checkout = make_checkout(tmp_path / "OpenEnv", tmp_path / "secret.txt")
    before, status = tree_digest(checkout), git_status(checkout)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr("tempfile.tempdir", None)
    monkeypatch.chdir(checkout / "envs")
    code, out, err = run_task(capsys, "rehearse", "--repo", str(checkout), "--env", "echo_env", "--builder", "host")
    saved = tmp_path / "tmp" / "rehearsal-briefing.md"
    assert code == 0, err[-2000:]
    assert f"briefing copied to {saved}\n" in out and saved.read_text().startswith(BRIEFING_MARKER)
    assert tree_digest(checkout) == before and git_status(checkout) == status


def test_briefing_never_overwrites_a_file_it_did_not_write(tmp_path: Path, capsys) -> None:
    mine = tmp_path / "notes.md"
    mine.write_text("# my notes\n")
    checkout = make_checkout(tmp_path / "OpenEnv", tmp_path / "secret.txt")
    code, _, err = run_task(capsys, "rehearse", "--repo", str(checkout), "--briefing", str(mine))
    assert code == 2 and f"--briefing {mine}" in err and "not a rehearsal briefing" in err
    assert mine.read_text() == "# my notes\n"


@pytest.mark.parametrize("kind", ["fifo", "/dev/stdout", "folder"])
def test_a_briefing_path_that_is_no_regular_file_is_refused_unopened(kind: str, tmp_path: Path) -> None:
    """A FIFO no one writes would hang a reader: exit 2 at once, without opening it."""
    dest = {"fifo": tmp_path / "fifo", "/dev/stdout": Path("/dev/stdout"), "folder": tmp_path}[kind]
    if kind == "fifo":
        os.mkfifo(dest)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}
    done = cli("rehearse", "--briefing", str(dest), env=env, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"error: --briefing {dest}: exists and is not a regular file") and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--env", "echo_env"], "--env goes with --repo"),
        (["--allow-secret", "x.ini"], "--allow-secret goes with --repo"),
        (["--builder", "nope"], "--builder 'nope': choose one of host, venv"),
        (["--build-timeout", "soon"], "--build-timeout 'soon' must be a number of seconds"),
        (["--build-jobs", "0"], "--build-jobs '0' must be a whole number"),
        (["--wait", "soon"], "--wait 'soon' must be a number of seconds above 0"),
        (["--timeout", "0"], "--timeout '0' must be a number of seconds above 0"),
    ],
)
def test_bad_flags_are_exit_2_in_one_line(argv: list[str], says: str, capsys) -> None:
    code, out, err = run_task(capsys, "rehearse", *argv)
    assert code == 2 and out == "" and says in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("flag", ["--briefing", "--keep"])
def test_nothing_is_written_inside_the_checkout_whatever_the_flags_say(flag: str, tmp_path: Path, capsys) -> None:
    checkout = make_checkout(tmp_path / "OpenEnv", tmp_path / "secret.txt")
    before, status = tree_digest(checkout), git_status(checkout)
    inside = checkout / "out"
    code, _, err = run_task(capsys, "rehearse", "--repo", str(checkout), "--builder", "host", flag, str(inside))
    assert code == 2 and f"{flag} {inside}: inside the checkout" in err
    assert tree_digest(checkout) == before and git_status(checkout) == status


@pytest.mark.parametrize("where", ["holds the checkout", "is the checkout", "not empty", "not empty, examples"])
def test_a_keep_folder_holding_the_checkout_or_not_empty_is_exit_2_in_one_line(where: str, tmp_path: Path, capsys) -> None:
    checkout = make_checkout(tmp_path / "OpenEnv", tmp_path / "secret.txt")
    keep = {"holds the checkout": tmp_path, "is the checkout": checkout}.get(where, tmp_path / "kept")
    if where.startswith("not empty"):
        keep.mkdir()
        (keep / "mine.txt").write_text("mine\n")
    before, status = tree_digest(checkout), git_status(checkout)
    repo = [] if where.endswith("examples") else ["--repo", str(checkout), "--briefing", str(tmp_path / "b.md")]
    code, out, err = run_task(capsys, "rehearse", *repo, "--builder", "host", "--keep", str(keep))
    says = "exists and is not an empty folder" if where.startswith("not empty") else "holds the checkout"
    assert code == 2 and out == "" and f"--keep {keep}: {says}" in err and len(err.strip().splitlines()) == 1
    assert tree_digest(checkout) == before and git_status(checkout) == status
    if keep != checkout:  # nothing written there either
        assert sorted(p.name for p in keep.iterdir()) == (["OpenEnv", "secret.txt"] if keep == tmp_path else ["mine.txt"])


def test_wait_and_timeout_reach_the_rehearsals_verify(tmp_path: Path) -> None:
    from releaselib.rehearse import rehearse

    checkout = make_checkout(tmp_path / "OpenEnv", tmp_path / "secret.txt")
    done = rehearse(tmp_path / "w", repo=checkout, envs=["echo_env"], wait=0.01, timeout=7)
    (echo,) = done.report["envs"]
    assert echo["outcome"] == "INCONCLUSIVE", echo
    assert "after our wait of 0.01 s; verify again with a longer --wait" in echo["reason"]


@pytest.fixture(scope="module")
def rehearsed(tmp_path_factory: pytest.TempPathFactory):
    """One rehearsal of the checkout through the console script, its workspace kept."""
    tmp = tmp_path_factory.mktemp("rehearse-repo")
    checkout = make_checkout(tmp / "OpenEnv", tmp / "secret.txt")
    before, status = tree_digest(checkout), git_status(checkout)
    (tmp / "rehearsal-briefing.md").write_text(f"{BRIEFING_MARKER}\nan earlier rehearsal's\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}
    argv = ["rehearse", "--repo", str(checkout), "--builder", "host", "--keep", str(tmp / "w")]
    done = cli(*argv, cwd=tmp, env=env, timeout=600)
    return done, tmp, checkout, (before, status)


@pytest.mark.e2e
def test_the_checkout_is_untouched_and_its_release_exits_as_release_does(rehearsed) -> None:
    done, _, checkout, (before, status) = rehearsed
    assert done.returncode == 1, done.stderr[-2000:]  # broken_env FAILs, as under release
    assert tree_digest(checkout) == before and git_status(checkout) == status
    assert "<0.2.2" not in (checkout / "envs" / "broken_env" / "pyproject.toml").read_text()


@pytest.mark.e2e
def test_the_board_comes_out_and_the_briefing_survives_saying_it_is_a_rehearsal(rehearsed) -> None:
    done, tmp, _, _ = rehearsed
    assert "echo_env" in done.stdout and "broken_env" in done.stdout
    saved = tmp / "rehearsal-briefing.md"  # the default, over an earlier rehearsal's briefing
    assert f"briefing copied to {saved.resolve()}\n" in done.stdout
    text = saved.read_text()
    assert text.startswith(BRIEFING_MARKER + "\n") and "rehearsal on the embedded Hub, builder `host`" in text
    assert "### echo_env: PASS, promoted" in text and "### broken_env: FAIL, pinned" in text
    (report_json,) = (tmp / "w" / "staging").glob("briefing-*.json")
    report = json.loads(report_json.read_text())
    assert report["rehearsal"]["builder"] == "host"
    assert sorted(e["env"] for e in report["envs"]) == ["broken_env", "echo_env"]


@pytest.mark.e2e
def test_the_work_tree_edit_is_deployed_and_untracked_or_outside_bytes_reach_nothing(rehearsed) -> None:
    done, tmp, _, _ = rehearsed
    blobs = tmp / "w" / "hub" / "blobs"  # every file any Space of the embedded Hub holds
    assert files_holding(blobs, EDIT.encode())
    for needle in (TOKEN.encode(), OUTSIDE):
        assert not files_holding(tmp / "w", needle)
        assert needle.decode() not in done.stdout + done.stderr
    pinned = (tmp / "w" / "OpenEnv" / "envs" / "broken_env" / "pyproject.toml").read_text()
    assert '"openenv-core[core]>=0.2.1,<0.2.2"' in pinned  # the copy is pinned, not the checkout


@pytest.mark.venv
def test_under_venv_each_space_gets_its_own_build_and_the_briefing_names_it(tmp_path: Path) -> None:
    from releaselib.rehearse import rehearse

    checkout = make_checkout(tmp_path / "OpenEnv", tmp_path / "secret.txt")
    result = rehearse(tmp_path / "w", repo=checkout, envs=["echo_env"], builder="venv")
    assert [(e["env"], e["outcome"]) for e in result.report["envs"]] == [("echo_env", "PASS")]
    assert result.report["rehearsal"]["builder"] == "venv" and result.briefing is not None
    assert "builder `venv` (each Space ran in its own uv virtual env" in result.briefing.read_text()
    assert any((tmp_path / "w" / "hub" / "runtime").rglob("pyvenv.cfg"))  # the Space's own venv
