"""A text file the Hub client must read as UTF-8 and cannot is a clear error for its env alone,
naming the file and the encoding found; the other envs deploy."""

from __future__ import annotations

import codecs
from pathlib import Path

from releaselib.text_encoding import encoding_found
from tests.test_deploy import checkout, config_for, localhub, release  # noqa: F401 (fixtures)


def test_a_utf16_gitignore_fails_its_env_naming_the_file_and_encoding(
    localhub, checkout: Path, tmp_path: Path  # noqa: F811
) -> None:
    gitignore = checkout / "envs" / "beta_env" / ".gitignore"
    gitignore.write_bytes(codecs.BOM_UTF16_LE + "__pycache__/\n*.pyc\n".encode("utf-16-le"))

    results = release(localhub.endpoint, localhub.token, config_for(checkout, tmp_path))

    error = results["beta_env"].error or ""
    assert not results["beta_env"].ok
    assert "envs/beta_env/.gitignore: not UTF-8" in error and "UTF-16 LE" in error
    assert "codec" not in error and "\n" not in error
    assert results["alpha_env"].ok and results["gamma_env"].ok


def test_the_encoding_found_without_a_byte_order_mark() -> None:
    text = "Grüße aus Köln, ça va très bien, merci beaucoup à vous tous\n" * 4
    assert encoding_found(text.encode("utf-16-be")).replace("_", "").startswith("utf16")
    assert encoding_found(codecs.BOM_UTF32_LE + "x".encode("utf-32-le")).startswith("UTF-32 LE")
