"""A local package index on 127.0.0.1 for lock tests: a folder of tiny wheels written here and
served by ``http.server`` (its directory listing is a find-links page for pip and uv)."""

from __future__ import annotations

import base64
import functools
import hashlib
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def write_wheel(folder: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> Path:
    """A pure-Python wheel ``name`` ``version`` whose module holds ``VERSION = "<version>"``."""
    dist = f"{name}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
    files = {
        f"{name}/__init__.py": f'VERSION = "{version}"\n',
        f"{dist}/METADATA": meta,
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    files[f"{dist}/RECORD"] = "\n".join([*record, f"{dist}/RECORD,,"]) + "\n"
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel, "w") as out:
        for path, text in files.items():
            out.writestr(path, text)
    return wheel


@dataclass(frozen=True)
class PackageIndex:
    folder: Path
    url: str

    def publish(self, name: str, version: str, requires: tuple[str, ...] = ()) -> Path:
        return write_wheel(self.folder, name, version, requires)

    def options(self) -> str:
        """Requirements-file lines that make pip and uv read only this index."""
        return f"--no-index\n--find-links {self.url}\n"


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """No request log on stderr."""


@contextmanager
def serve_index(folder: Path) -> Iterator[PackageIndex]:
    folder.mkdir(parents=True, exist_ok=True)
    handler = functools.partial(_Quiet, directory=str(folder))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield PackageIndex(folder, f"http://127.0.0.1:{server.server_address[1]}/")
    finally:
        server.shutdown()
        server.server_close()
