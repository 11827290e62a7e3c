"""The secret scan reads every file's content: no file is skipped by its name, no inline comment
allows a secret, and tokens hidden by an encoding, gzip or a string escape are still found."""

from __future__ import annotations

import bz2
import codecs
import gzip
import io
import lzma
import random
import string
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from releaselib.stage import unpack
from releaselib.stage.secretscan import Scanner

rng = random.Random(12)
TOKEN = "hf_" + "".join(rng.choices(string.ascii_letters + string.digits, k=34))
HF = "Hugging Face token"


def scan(tmp_path: Path, name: str, content: bytes) -> list[tuple[int, str]]:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return [(f.line, f.kind) for f in Scanner().scan([(name, path)])]


@pytest.mark.parametrize(
    "name",
    [
        "static/app.css", "package-lock.json", "poetry.lock", "pdm.lock", "yarn.lock", "Cargo.lock",
        "go.sum", "docs/swagger.yaml", "api/swagger/spec.json", "app.js.map", "logo.svg",
        "model.bin", "image.png", "font.woff2",
    ],
)
def test_no_file_is_skipped_by_its_name(tmp_path: Path, name: str) -> None:
    assert scan(tmp_path, name, f"a {{\n  x: '{TOKEN}';\n}}\n".encode()) == [(2, HF)]


def test_a_binary_is_scanned_for_token_patterns(tmp_path: Path) -> None:
    blob = b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe" + TOKEN.encode() + b"\x00\x01\x02"
    assert [kind for _, kind in scan(tmp_path, "image.png", blob)] == [HF]


NOISE = bytes(rng.randrange(256) for _ in range(200_000))  # like compressed pixels
MEDIA = {  # what comes before a text chunk, comment or metadata box, and what closes it
    "png": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", b"tEXtComment\x00", b"\x00"),
    "gif": (b"GIF89a", b"\x21\xfe\x40", b"\x00\x3b"),
    "jpeg": (b"\xff\xd8\xff\xe1", b"\xff\xfe", b"\xff\xd9"),
    "mp4": (b"\x00\x00\x00\x18ftypisom", b"udta", b""),
}


def media(kind: str, text: bytes) -> bytes:
    magic, before, after = MEDIA[kind]
    return magic + NOISE[:5000] + before + text + after + NOISE


@pytest.mark.parametrize("kind", MEDIA)
@pytest.mark.parametrize("encoding", ["ascii", "utf-16-le", "utf-16-be"])
def test_a_token_in_an_image_or_video_is_found_by_its_strings(tmp_path: Path, kind: str, encoding: str) -> None:
    """Media is known by its magic bytes (the name says nothing) and read as its printable runs."""
    blob = media(kind, f"note\ntoken={TOKEN}\n".encode(encoding))
    found = scan(tmp_path, "assets/blob", blob)
    assert [kind for _, kind in found] == [HF]
    assert found[0][0] == blob[: blob.index("token=".encode(encoding))].count(b"\n") + 1


def test_a_netrc_entry_in_an_image_is_found(tmp_path: Path) -> None:
    entry = f"machine a.example.org\nlogin bob\npassword {TOKEN[3:15]}\n".encode()
    assert [kind for _, kind in scan(tmp_path, "a.png", media("png", entry))] == ["netrc password"]


def test_an_image_is_read_as_its_strings_not_as_three_decodings_of_its_bytes() -> None:
    image = media("png", TOKEN.encode())
    [text] = unpack.texts(image, "a.png")
    assert isinstance(text, str) and TOKEN in text and len(text) < len(image) / 10
    assert len(list(unpack.texts(b"\x00\x01" + image, "a.png"))) == 3  # no magic: every decoding


def test_an_inline_allowlist_pragma_allows_nothing(tmp_path: Path) -> None:
    text = f'TOKEN = "{TOKEN}"  # pragma: allowlist secret\n# pragma: allowlist nextline secret\nT2 = "{TOKEN}"\n'
    assert scan(tmp_path, "settings.py", text.encode()) == [(1, HF), (3, HF)]


@pytest.mark.parametrize(
    "encoded",
    [
        pytest.param(codecs.BOM_UTF16_LE + "x\nt = {}\n".encode("utf-16-le"), id="utf-16-le-bom"),
        pytest.param(codecs.BOM_UTF16_BE + "x\nt = {}\n".encode("utf-16-be"), id="utf-16-be-bom"),
        pytest.param("x\nt = {}\n".encode("utf-16-le"), id="utf-16-le"),
        pytest.param("x\nt = {}\n".encode("utf-16-be"), id="utf-16-be"),
    ],
)
def test_a_token_in_utf_16_is_found(tmp_path: Path, encoded: bytes) -> None:
    content = encoded.replace("{}".encode("utf-16-le"), TOKEN.encode("utf-16-le"))
    content = content.replace("{}".encode("utf-16-be"), TOKEN.encode("utf-16-be"))
    assert (2, HF) in scan(tmp_path, "settings.ini", content)


def test_a_token_in_a_gzip_file_is_found(tmp_path: Path) -> None:
    packed = gzip.compress(f"a\nb\ntoken={TOKEN}\n".encode())
    assert (3, HF) in scan(tmp_path, "data/cache.json.gz", packed)
    twice = gzip.compress(gzip.compress(f"token={TOKEN}\n".encode()))
    assert [kind for _, kind in scan(tmp_path, "data/twice.gz", twice)] == [HF]


@pytest.mark.parametrize(
    "line",
    [
        '{"env": "A=1\\nHF_TOKEN=%s"}',
        'x = "a\\t%s"',
        'x = "a\\r\\n%s"',
        "https://x.org/login?token%%3D%s&a=1",
        "url = 'https://x.org/?token=%s'",
        "x = '\\x3d%s'",
    ],
)
def test_a_token_after_an_escape_is_found(tmp_path: Path, line: str) -> None:
    assert scan(tmp_path, "config.json", (line % TOKEN).encode() + b"\n") == [(1, HF)]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("api_org_" + "".join(rng.choices(string.ascii_letters, k=34)), HF),
        (
            "github_pat_" + "".join(rng.choices(string.ascii_letters + string.digits, k=22)) + "_"
            + "".join(rng.choices(string.ascii_letters + string.digits, k=59)),
            "GitHub fine-grained token",
        ),
    ],
)
def test_org_and_fine_grained_tokens_are_found(tmp_path: Path, text: str, kind: str) -> None:
    assert scan(tmp_path, "notes.md", f"token: {text}\n".encode()) == [(1, kind)]


@pytest.mark.parametrize(
    "text",
    [
        "hf_" + "x" * 34,
        "api_org_" + "x" * 34,
        "HF_TOKEN=hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "model_hf_" + "".join(rng.choices(string.ascii_letters, k=34)),  # inside a word
        "snake_case_name_hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
    ],
)
def test_placeholders_and_words_are_not_tokens(tmp_path: Path, text: str) -> None:
    assert scan(tmp_path, "README.md", f"{text}\n".encode()) == []


def zipped(**members: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return out.getvalue()


@pytest.mark.parametrize(
    ("name", "packed"),
    [
        ("data/a.zip", lambda text: zipped(**{"readme.txt": b"hi\n", "conf/settings.ini": text})),
        ("dist/x-1.0-py3-none-any.whl", lambda text: zipped(**{"x/__init__.py": text})),
        ("docs/notes.docx", lambda text: zipped(**{"word/document.xml": text})),
        ("data/arrays.npz", lambda text: zipped(**{"a.npy": b"\x93NUMPY" + text})),
        ("data/b.ini.bz2", bz2.compress),
        ("data/c.ini.xz", lzma.compress),
        ("data/d.ini.lzma", lambda text: lzma.compress(text, format=lzma.FORMAT_ALONE)),
        ("data/e.zip.gz", lambda text: gzip.compress(zipped(**{"inner.txt.bz2": bz2.compress(text)}))),
    ],
)
def test_a_token_in_a_zip_or_bz2_xz_lzma_file_is_found(tmp_path: Path, name: str, packed: Callable[[bytes], bytes]) -> None:
    assert (3, HF) in scan(tmp_path, name, packed(f"a\nb\ntoken={TOKEN}\n".encode()))


def test_archive_content_over_the_bound_is_a_finding_not_a_hang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unpack, "MAX_UNPACKED", 1000)
    bomb = zipped(**{f"m{i}.txt": b"0" * 600 for i in range(3)})
    assert [kind for _, kind in scan(tmp_path, "data/bomb.zip", bomb)] == [unpack.TOO_BIG]
    assert [kind for _, kind in scan(tmp_path, "data/bomb.xz", lzma.compress(b"0" * 5000))] == [unpack.TOO_BIG]


@pytest.mark.parametrize(
    "line",
    [
        # OpenEnv's src/openenv/core/tools/git_server_client.py writes git credentials this way
        'f"http://{self.username}:{self.password}@{self.domain}:{self.port}\\n"',
        'url = "https://user:<password>@gitea.local"',
        'url = "https://user:${GITEA_PASSWORD}@gitea.local"',
        'f"https://{user}:{db_password}@{host}"',
    ],
)
def test_a_template_placeholder_in_a_url_is_no_secret(tmp_path: Path, line: str) -> None:
    assert scan(tmp_path, "src/client.py", f"{line}\n".encode()) == []


@pytest.mark.parametrize(
    ("line", "kinds"),
    [
        ('url = "https://bob:hunter2secret@gitea.local"', ["Basic Auth Credentials"]),
        # braces or angle brackets around a password do not make it a placeholder
        ('url = "https://admin:{Xk9vQ2mLp7Rt}@db.example.com"', ["Basic Auth Credentials"]),
        ("DATABASE_URL=postgres://app:<Pr0dP4ssw0rd2026>@10.0.0.5:5432/app", ["Basic Auth Credentials"]),
        ('url = "https://admin:{x}Pr0dP4ssw0rd{y}@db"', ["Basic Auth Credentials"]),
        ("url: https://bot:{Zq8Lm3Np5Rt7Vx}@registry.internal/simple", ["Basic Auth Credentials"]),
        (f'url = "https://u:{{{TOKEN}}}@h"', ["Basic Auth Credentials", HF]),  # token in braces
    ],
)
def test_a_password_or_token_in_a_url_is_still_found(tmp_path: Path, line: str, kinds: list[str]) -> None:
    assert [kind for _, kind in scan(tmp_path, "src/client.py", f"{line}\n".encode())] == kinds


@pytest.mark.parametrize(
    ("text", "found"),
    [
        (f"ENV HF_TOKEN={TOKEN[:9]}\\\n{TOKEN[9:]}\n", [(1, HF)]),
        (f"RUN echo {TOKEN[:20]}\\\r\n    {TOKEN[20:]}\n", [(1, HF)]),
        (f"# x\nmachine a.example.org\n  login bob\n  password {TOKEN[3:15]}\n", [(4, "netrc password")]),
        (f"machine a.example.org\naccount x login bob\npassword {TOKEN[3:15]}\n", [(3, "netrc password")]),
    ],
)
def test_a_secret_over_several_lines_is_found_and_redacted_on_each(
    tmp_path: Path, text: str, found: list[tuple[int, str]]
) -> None:
    assert scan(tmp_path, "Dockerfile", text.encode()) == found
    redacted, kinds = Scanner().redact(text)
    assert len(kinds) == 1
    assert TOKEN[3:15] not in redacted and TOKEN[20:] not in redacted and TOKEN[9:] not in redacted


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        ("run.sh", f'export HF_TOKEN="{TOKEN[:19]}"\\\n"{TOKEN[19:]}"\n', 1),
        ("app.py", f'TOKEN = "{TOKEN[:19]}" \\\n    "{TOKEN[19:]}"\n', 1),
        ("app.py", f'import os\nTOKEN = (\n    "{TOKEN[:19]}"\n    "{TOKEN[19:]}"\n)\n', 3),
        ("app.py", f"TOKEN = '{TOKEN[:19]}' '{TOKEN[19:]}'\n", 1),
    ],
)
def test_a_token_split_over_adjacent_string_literals_is_found_on_its_first_line(
    tmp_path: Path, name: str, text: str, line: int
) -> None:
    assert scan(tmp_path, name, text.encode()) == [(line, HF)]
    redacted, kinds = Scanner().redact(text)
    assert kinds == [HF]
    assert TOKEN[3:19] not in redacted and TOKEN[19:] not in redacted


@pytest.mark.parametrize(
    "text",
    [
        'x = ("hf_" "abc")\nNAMES = (\n    "alpha"\n    "beta"\n)\n',  # literals, no token
        'echo "a" "b"\\\n  "c"\n',
    ],
)
def test_adjacent_literals_without_a_token_find_nothing(tmp_path: Path, text: str) -> None:
    assert scan(tmp_path, "app.py", text.encode()) == []


@pytest.mark.parametrize(
    "text",
    [
        "RUN pip install a \\\n    b \\\n    c\n",  # continuations without a secret
        "machine learning\npassword reset links expire\n",  # prose: no login, no netrc entry
        "machine a.example.org\nlogin bob\npassword $NETRC_PASSWORD\n",  # a placeholder
    ],
)
def test_continued_lines_and_netrc_words_without_a_secret_find_nothing(
    tmp_path: Path, text: str
) -> None:
    assert scan(tmp_path, "notes.txt", text.encode()) == []
