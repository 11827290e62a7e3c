"""The content scan's clean verdicts kept across runs: what was clean is not scanned again by the
same scanner, what holds a secret is found every time, and nothing derived from a secret, nor
the secret, is written."""

from __future__ import annotations

import json
import os
import random
import string
import time
from pathlib import Path

import pytest

from releaselib.stage import scan_cache
from releaselib.stage.scan_cache import CleanVerdicts, ContentScan

rng = random.Random(7)
TOKEN = "hf_" + "".join(rng.choices(string.ascii_letters + string.digits, k=34))


def files(tmp_path: Path, **contents: str) -> list[tuple[str, Path]]:
    out = []
    for name, text in contents.items():
        path = tmp_path / "checkout" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        out.append((name, path))
    return out


def next_run(folder: Path) -> ContentScan:
    """A scan as a later process would make it: the verdicts read from ``folder`` anew."""
    return ContentScan(CleanVerdicts(folder))


def test_what_was_clean_is_not_scanned_again(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    clean = files(tmp_path, **{"app.py": "print('hello')\n", "README.md": "# env\n"})
    first = ContentScan(CleanVerdicts(cache))
    assert first.scan(clean) == [] and first.redact_name("envs/x/app.py") == ("envs/x/app.py", ())
    first._verdicts.save()
    later = next_run(cache)
    assert later.scan(clean) == [] and later.redact_name("envs/x/app.py") == ("envs/x/app.py", ())
    assert later._scanner is None  # answered without loading the scanner


def test_a_secret_is_found_every_run_and_never_written(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    leaky = files(tmp_path, **{"app.py": f"TOKEN = '{TOKEN}'\n", "ok.py": "x = 1\n"})
    for _ in range(2):
        scan = next_run(cache)
        found = scan.scan(leaky)
        assert [(f.path, f.line, f.kind) for f in found] == [
            ("app.py", 1, "Hugging Face token")
        ]
        assert scan.redact_name(f"envs/{TOKEN}.txt")[1]
        scan._verdicts.save()
    [written] = cache.iterdir()
    keys = json.loads(written.read_text())["clean"]
    assert len(keys) == 1  # ok.py only: not the file with the token, not the name
    assert TOKEN not in written.read_text()


def test_findings_an_allowance_pins_are_kept_and_others_are_not(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    a, b = files(tmp_path, **{"a.py": f"A = '{TOKEN}'\n", "b.py": f"B = '{TOKEN[:-1]}Q'\n"})
    runs = []
    for pinned in ((), "a", "a", "a"):
        scan = next_run(cache)
        [found] = scan.scan([a], pinned={runs[0][0].sha256} if pinned else ())
        [other] = scan.scan([b], pinned={runs[0][0].sha256} if pinned else ())
        scan._verdicts.save()
        runs.append((found, other, scan._scanner is not None))
    first = runs[0][0]
    assert first.sha256 != runs[0][1].sha256 and first.kind == "Hugging Face token"
    assert all((f.line, f.kind, f.sha256) == (first.line, first.kind, first.sha256) for f, *_ in runs)
    assert [scanned for *_, scanned in runs] == [True, True, True, True]  # b.py: never kept
    later = next_run(cache)
    assert [f.sha256 for f in later.scan([a], pinned={first.sha256})] == [first.sha256]
    assert later._scanner is None  # a.py: from the verdict kept once an allowance pinned it
    [written] = cache.iterdir()
    assert TOKEN not in written.read_text() and runs[0][1].sha256 not in written.read_text()


def test_a_changed_file_is_scanned_again(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    [(name, path)] = files(tmp_path, **{"app.py": "x = 1\n"})
    scan = next_run(cache)
    assert scan.scan([(name, path)]) == []
    scan._verdicts.save()
    path.write_text(f"x = '{TOKEN}'\n")
    assert [f.kind for f in next_run(cache).scan([(name, path)])] == ["Hugging Face token"]


def test_another_scanner_version_keeps_its_own_verdicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    clean = files(tmp_path, **{"app.py": "x = 1\n"})
    scan = next_run(cache)
    scan.scan(clean)
    scan._verdicts.save()
    import importlib.metadata

    real = importlib.metadata.version
    monkeypatch.setattr(
        importlib.metadata, "version", lambda d: "9.9" if "kingfisher" in d else real(d)
    )
    later = next_run(cache)
    assert later.scan(clean) == [] and later._scanner is not None  # scanned: no verdict of its
    later._verdicts.save()
    assert len(list(cache.iterdir())) == 2


def test_off_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(scan_cache.ENV, "off")
    assert scan_cache.cache_folder() is None
    scan = ContentScan(CleanVerdicts(None))
    assert scan.scan(files(tmp_path, **{"app.py": "x = 1\n"})) == []
    scan._verdicts.save()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkout"]


def test_a_damaged_cache_is_scanned_past_and_rewritten(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    clean = files(tmp_path, **{"app.py": "x = 1\n"})
    cache.mkdir()
    (cache / f"{scan_cache.scanner_version()}.json").write_text('{"clean": [1, ')
    scan = ContentScan(CleanVerdicts(cache))
    assert scan.scan(clean) == [] and scan._scanner is not None
    scan._verdicts.save()
    later = next_run(cache)
    assert later.scan(clean) == [] and later._scanner is None


def test_runs_writing_at_once_keep_each_others_verdicts(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    one, two = next_run(cache), next_run(cache)
    a, b = files(tmp_path, **{"a.py": "a = 1\n", "b.py": "b = 2\n"})
    one.scan([a])
    two.scan([b])
    one._verdicts.save()
    two._verdicts.save()
    later = next_run(cache)
    assert later.scan([a, b]) == [] and later._scanner is None


def test_a_token_flag_value_is_refused_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scan_cache, "_verdicts", CleanVerdicts(tmp_path / "cache"))
    monkeypatch.setattr(scan_cache, "_flag_scan", None)
    assert scan_cache.holds_secret(TOKEN) and scan_cache.holds_secret(TOKEN)
    assert not scan_cache.holds_secret("/home/me/OpenEnv")
    assert scan_cache.verdict("text", b"/home/me/OpenEnv") in scan_cache.clean_verdicts()
    assert scan_cache.verdict("text", TOKEN.encode()) not in scan_cache.clean_verdicts()


@pytest.mark.parametrize("value", ["off", "OFF", "0", "false", "No", " none "])
def test_the_usual_ways_to_say_off_keep_nothing(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(scan_cache.ENV, value)
    assert scan_cache.cache_folder() is None


def test_a_relative_cache_folder_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from releaselib.errors import UsageError

    monkeypatch.setenv(scan_cache.ENV, "scan-cache")
    with pytest.raises(UsageError, match="OPENENV_RELEASE_SCAN_CACHE=scan-cache: not an absolute"):
        scan_cache.cache_folder()


def poisoned(cache: Path, clean: list[tuple[str, Path]]) -> Path:
    """A cache file that calls a file holding a token clean, as someone else could write it."""
    [(_, path)] = clean
    cache.mkdir(exist_ok=True)
    written = cache / f"{scan_cache.scanner_version()}.json"
    written.write_text(json.dumps({"clean": [scan_cache.verdict("file", path.read_bytes())]}))
    return written


def spoil(cache: Path, written: Path, how: str) -> None:
    """Make the cache file one that others could have written."""
    if how == "others may write the folder":
        cache.chmod(0o777)
    elif how == "others may write the file":
        written.chmod(0o666)
    else:  # a symlink to a file elsewhere
        real = cache.parent / "elsewhere.json"
        written.rename(real)
        written.symlink_to(real)


@pytest.mark.parametrize("how", ["others may write the folder", "the file is a symlink"])
def test_a_cache_others_could_write_is_not_used(tmp_path: Path, how: str) -> None:
    leaky = files(tmp_path, **{"app.py": f"TOKEN = '{TOKEN}'\n"})
    cache = tmp_path / "cache"
    written = poisoned(cache, leaky)
    spoil(cache, written, how)
    scan = next_run(cache)
    assert [f.kind for f in scan.scan(leaky)] == ["Hugging Face token"]
    scan.scan(files(tmp_path, **{"ok.py": "x = 1\n"}))
    scan._verdicts.save()
    assert json.loads(written.read_text())["clean"] == [scan_cache.verdict("file", leaky[0][1].read_bytes())]


@pytest.mark.parametrize("how", ["others may write the file", "the file is a symlink"])
def test_a_cache_file_changed_after_its_path_was_trusted_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """The check is made on the file as opened: one swapped in between the look at its path and
    the read (a rename race in its folder) is refused too."""
    leaky = files(tmp_path, **{"app.py": f"TOKEN = '{TOKEN}'\n"})
    cache = tmp_path / "cache"
    written = poisoned(cache, leaky)
    cache.chmod(0o700)
    spoil(cache, written, how)
    monkeypatch.setattr(scan_cache, "trusted", lambda path, follow: True)  # the race: it looked fine
    assert [f.kind for f in next_run(cache).scan(leaky)] == ["Hugging Face token"]


def test_a_cache_only_its_owner_writes_is_used(tmp_path: Path) -> None:
    """The counterpart of the test above: the same poisoned file, trusted, is believed (which is
    why only its owner may write it)."""
    leaky = files(tmp_path, **{"app.py": f"TOKEN = '{TOKEN}'\n"})
    cache = tmp_path / "cache"
    poisoned(cache, leaky)
    cache.chmod(0o700)
    assert next_run(cache).scan(leaky) == []


def test_saving_removes_other_versions_files_unused_for_30_days(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    old, recent, other = cache / "0123456789abcdef.json", cache / "fedcba9876543210.json", cache / "notes.json"
    for file in (old, recent, other):
        file.write_text("{}")
    month_ago = time.time() - scan_cache.STALE_SECONDS - 60
    for file in (old, other):
        os.utime(file, (month_ago, month_ago))
    scan = next_run(cache)
    scan.scan(files(tmp_path, **{"ok.py": "x = 1\n"}))
    scan._verdicts.save()
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        [f"{scan_cache.scanner_version()}.json", recent.name, other.name]
    )
