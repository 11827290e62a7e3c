"""Shared by the localhub tests: small Space trees, waiting for stages, finding leftover processes."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from huggingface_hub import HfApi, SpaceRuntime

from tests.helpers import waits

TINY_ENV = Path(__file__).parent / "tiny_env"

#: A Space that starts in well under a second: a stdlib HTTP server that answers JSON.
QUICK_APP = {
    "Dockerfile": (
        "FROM python:3.11-slim\n"
        "WORKDIR /app\n"
        "COPY app.py /app/\n"
        'CMD ["python", "/app/app.py", "--host", "0.0.0.0", "--port", "7860"]\n'
    ),
    "app.py": (
        "import argparse, json, os\n"
        "from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer\n"
        "class Handler(BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        body = json.dumps({'path': self.path, 'greeting': os.environ.get('GREETING')})\n"
        "        self.send_response(200)\n"
        "        self.send_header('Content-Type', 'application/json')\n"
        "        self.end_headers()\n"
        "        self.wfile.write(body.encode())\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--host')\n"
        "parser.add_argument('--port', type=int)\n"
        "args = parser.parse_args()\n"
        "ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()\n"
    ),
}


def write_tree(folder: Path, files: dict[str, str]) -> Path:
    for path, text in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    return folder


def copy_tiny_env(folder: Path) -> Path:
    shutil.copytree(TINY_ENV, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def wait_for_stage(
    api: HfApi, repo_id: str, stages: set[str], *, timeout: float = waits(60)
) -> SpaceRuntime:
    """Poll get_space_runtime until its stage is one of ``stages``; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        runtime = api.get_space_runtime(repo_id)
        if runtime.stage in stages:
            return runtime
        assert time.monotonic() < deadline, f"{repo_id} still {runtime.stage}: {runtime.raw}"
        time.sleep(0.1)


def processes_mentioning(text: str) -> list[int]:
    """Pids whose environment contains ``text``: a Space's PYTHONPATH holds its state directory."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if text.encode() in environ.read_bytes():
                found.append(int(environ.parent.name))
        except OSError:
            continue
    return found
