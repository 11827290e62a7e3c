"""``rehearse`` leaves nothing in the temp directory unless --keep names a folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from releaselib.rehearse import workspace


def leftovers(tmp: Path) -> list[Path]:
    return list(tmp.glob("openenv-rehearsal-*"))


def test_without_keep_the_temp_folder_is_removed_even_after_a_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    with pytest.raises(RuntimeError), workspace() as workdir:
        (workdir / "staging").mkdir(parents=True)
        (workdir / "staging" / "briefing.md").write_text("x")
        assert leftovers(tmp_path)
        raise RuntimeError("the release failed")
    assert leftovers(tmp_path) == []


def test_keep_names_the_folder_and_leaves_it(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    with workspace(kept) as workdir:
        workdir.mkdir()
    assert workdir == kept and kept.is_dir()


def test_rehearse_without_a_clone_names_what_to_do(monkeypatch, tmp_path) -> None:
    """An installed wheel carries no examples/: one line saying to use a clone, not exit 70."""
    import releaselib.rehearse as rehearsal
    from releaselib.errors import ReleaseError

    monkeypatch.setattr(rehearsal.resources, "files", lambda name: tmp_path / "site-packages" / name)
    with pytest.raises(ReleaseError, match="comes with a clone of openenv-release") as raised:
        rehearsal.examples_dir()
    assert "pip install -e" in raised.value.one_line()
