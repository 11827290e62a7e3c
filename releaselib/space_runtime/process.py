"""Run a staged Space tree without a container: lay out its image files, then start its CMD.

The Dockerfile's stages are replayed as file copies into ``<run_dir>/root`` (COPY --from copies
between stage roots; RUN is skipped), image paths such as ``/app/env`` in ENV, WORKDIR and the
command are mapped onto that root, ``--host``/``--port`` are pointed at a loopback port, and the
command runs with the current Python's ``bin`` first on PATH, so it uses this environment's
packages.
"""

from __future__ import annotations

import glob
import itertools
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from releaselib import shell
from releaselib.space_runtime.plan import BuildError, Copy, RunPlan, read_plan

#: ENV the OpenEnv base image provides before a Dockerfile adds its own.
IMAGE_BASE_ENV = {"PYTHONPATH": "/app/src", "HOME": "/home/user", "LANG": "C.UTF-8"}
#: The PATH of a Debian-based image before its Dockerfile changes it.
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

_HOST_FLAG = re.compile(r"(--host[= ])\S+")
_PORT_FLAG = re.compile(r"(--port[= ])\d+")
#: gunicorn's ``-b``/``--bind HOST:PORT`` (dipg_safety_env serves with gunicorn).
_BIND_FLAG = re.compile(r"((?:^|\s)(?:-b|--bind)[= ]?)[^\s:]*:\d+")


@dataclass
class SpaceProcess:
    """A running Space command; ``stop()`` ends its whole process group."""

    popen: subprocess.Popen[bytes]
    port: int
    root: Path
    stderr_path: Path
    owned_dir: Path | None = None
    stopped: bool = False

    @property
    def pid(self) -> int:
        return self.popen.pid

    def exit_code(self) -> int | None:
        """The exit status, or None while it runs."""
        return self.popen.poll()

    def is_listening(self) -> bool:
        """True once something accepts connections on the Space's port."""
        with socket.socket() as probe:
            probe.settimeout(0.2)
            return probe.connect_ex(("127.0.0.1", self.port)) == 0

    def wait_ready(self, timeout: float) -> bool:
        """Wait until the port accepts connections; False if the process exits or time runs out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.exit_code() is not None:
                return False
            if self.is_listening():
                return True
            time.sleep(0.05)
        return False

    def stderr_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines the process wrote to stderr."""
        try:
            text = self.stderr_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.strip().splitlines()[-lines:])

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM the process group, SIGKILL it after ``timeout`` seconds; idempotent."""
        if self.stopped:
            return
        self.stopped = True
        shell.stop(self.popen, timeout)
        if self.owned_dir is not None:
            shutil.rmtree(self.owned_dir, ignore_errors=True)

    def __enter__(self) -> SpaceProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


#: Where the kernel picks the local port of an outgoing connection (Linux's default).
_EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: The ports :func:`free_port` draws from, below the ephemeral range where it starts higher:
#: from 10000 up to 30000 (Kubernetes NodePorts, 30000-32767, may be redirected on a node).
_LOWEST, _HIGHEST = 10000, 30000
#: Its own generator: a seed shared by processes (a test plugin's) must not give them one port.
_RNG = random.SystemRandom()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing is bound to right now.

    A Space's server binds it seconds later (after its imports), so it is drawn below the
    kernel's ephemeral range where that can be read: a port from that range may meanwhile become
    the local end of any outgoing connection, and the server then fails "address already in use"
    (an intermittent RUNTIME_ERROR of ours). Elsewhere the kernel picks one (``bind`` to 0)."""
    try:
        top = min(int(_EPHEMERAL.read_text().split()[0]), _HIGHEST)
    except (OSError, ValueError, IndexError):
        top = 0
    draws = 50 if top > _LOWEST else 0
    failed: OSError | None = None
    for port in itertools.chain((_RNG.randrange(_LOWEST, top) for _ in range(draws)), [0]):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError as exc:
                failed = exc
                continue
            found: int = sock.getsockname()[1]
            return found
    raise OSError(f"no free TCP port on 127.0.0.1: {failed}") from failed


@dataclass(frozen=True)
class Layout:
    """A Space's image files laid out under ``work``: ``root`` is the final stage's, ``roots``
    every stage's the final one needs (by index); ``context`` is the tree they came from."""

    plan: RunPlan
    work: Path
    roots: Mapping[int, Path]
    context: Path

    @property
    def root(self) -> Path:
        return self.roots[self.plan.final.index]


def lay_out(tree: Path, work: Path, *, base_path: str) -> Layout:
    """Replay ``tree/Dockerfile``'s COPYs into ``work/root`` and ``work/stages`` (replaced).

    Stages FROM an image start with IMAGE_BASE_ENV and ``PATH=base_path``. Raises BuildError
    when the Dockerfile cannot be run.
    """
    dockerfile = tree / "Dockerfile"
    if not dockerfile.is_file():
        raise BuildError("no Dockerfile at the root of the Space")
    # Docker takes bytes that are not UTF-8 (in a comment, say); here they read as U+FFFD
    text = dockerfile.read_text(encoding="utf-8", errors="replace")
    plan = read_plan(text, base_env={**IMAGE_BASE_ENV, "PATH": base_path})
    for previous in (work / "root", work / "stages"):
        shutil.rmtree(previous, ignore_errors=True)
    return Layout(plan, work, _materialize(plan, tree, work), tree)


def host_path() -> str:
    """The current Python's ``bin`` first, then this process's PATH: the host builder's."""
    python_bin = str(Path(sys.executable).parent)
    return f"{python_bin}:{os.environ.get('PATH', os.defpath)}"


def start_space_process(
    tree: Path,
    *,
    port: int,
    env: Mapping[str, str] | None = None,
    run_dir: Path | None = None,
) -> SpaceProcess:
    """Start the CMD of ``tree/Dockerfile``'s final stage on 127.0.0.1:``port`` with the current
    Python environment (the host builder).

    ``env`` (Space variables and secrets) is added to the image's ENV. The image files and logs go
    under ``run_dir`` (its ``root``/``stages`` are replaced), or a temporary folder that ``stop()``
    removes. Raises BuildError when the
    Dockerfile cannot be run and OSError when the command cannot be started.
    """
    owned = None if run_dir is not None else Path(tempfile.mkdtemp(prefix="space-"))
    work = run_dir or owned
    assert work is not None
    try:
        process = start_layout(lay_out(tree, work, base_path=host_path()), port=port, env=env)
    except BaseException:
        if owned is not None:
            shutil.rmtree(owned, ignore_errors=True)
        raise
    process.owned_dir = owned
    return process


def start_layout(
    layout: Layout, *, port: int, env: Mapping[str, str] | None = None
) -> SpaceProcess:
    """Start the final stage's CMD from a laid-out image; logs go to ``layout.work``."""
    plan, root, work = layout.plan, layout.root, layout.work
    home = plan.final.env.get("HOME", "").lstrip("/")
    if home:  # a writable home inside the image root, like the container's
        (root / home).mkdir(parents=True, exist_ok=True)
    mapper = _PathMapper(root, own=(work, Path(sys.executable).parent))
    argv = [mapper.map(arg) for arg in _bind_loopback(plan.final.argv, port)]
    cwd = Path(mapper.map(plan.final.workdir))
    cwd.mkdir(parents=True, exist_ok=True)
    process_env = {key: mapper.map(value) for key, value in plan.final.env.items()}
    process_env.update(env or {})
    process_env["PORT"] = str(port)
    stderr_path = work / "stderr.log"
    with open(work / "stdout.log", "wb") as out, open(stderr_path, "wb") as err:
        popen = shell.start(argv, cwd=cwd, env=process_env, stdout=out, stderr=err)
    return SpaceProcess(popen, port, root, stderr_path)


def _bind_loopback(argv: tuple[str, ...], port: int) -> list[str]:
    """Point ``--host``/``--port`` (uvicorn) and ``-b``/``--bind`` (gunicorn) flags, separate or
    inline, also inside ``sh -c``, at loopback and ``port``."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1] == "--host":
            arg = "127.0.0.1"
        elif out and out[-1] == "--port":
            arg = str(port)
        elif out and out[-1] in ("-b", "--bind") and ":" in arg:
            arg = f"127.0.0.1:{port}"
        else:
            arg = _HOST_FLAG.sub(r"\g<1>127.0.0.1", arg)
            arg = _PORT_FLAG.sub(rf"\g<1>{port}", arg)
            arg = _BIND_FLAG.sub(rf"\g<1>127.0.0.1:{port}", arg)
        out.append(arg)
    return out


class _PathMapper:
    """Rewrites absolute image paths whose top folder exists in ``root`` to paths under it.

    Paths inside ``own`` (the builder's workspace: its run folder with the Space's venv, and the
    interpreter it runs) are this machine's, never the image's, and stay as they are, even when
    the image has their top folder (``/tmp``)."""

    def __init__(self, root: Path, own: tuple[Path, ...] = ()) -> None:
        self.root = root
        tops = sorted((entry.name for entry in root.iterdir()), key=len, reverse=True)
        names = "|".join(re.escape(top) for top in tops)
        self.pattern = re.compile(rf"(?<![\w./-])/(?:{names})(?=[/:\s\"';&|]|$)") if tops else None
        self.own = tuple(str(path).rstrip("/") for path in own if path.is_absolute())

    def map(self, text: str) -> str:
        if self.pattern is None:
            return text
        return self.pattern.sub(lambda match: self._mapped(text, match), text)

    def _mapped(self, text: str, match: re.Match[str]) -> str:
        rest = text[match.start() :]
        for own in self.own:
            if rest.startswith(own) and _PATH_END.match(rest, len(own)):
                return match.group(0)
        return f"{self.root}{match.group(0)}"


#: What may follow a whole path (or a folder of it) in ENV, WORKDIR and CMD text.
_PATH_END = re.compile(r"[/:\s\"';&|]|$")


def _materialize(plan: RunPlan, context: Path, work: Path) -> dict[int, Path]:
    """Replay the COPYs of every stage the final one needs; the final one lands in ``work/root``."""
    roots: dict[int, Path] = {}

    def stage_root(index: int) -> Path:
        if index in roots:
            return roots[index]
        stage = plan.stages[index]
        root = work / "root" if index == plan.final.index else work / "stages" / str(index)
        root.mkdir(parents=True, exist_ok=True)
        if stage.base_stage is not None:
            shutil.copytree(stage_root(stage.base_stage), root, symlinks=True, dirs_exist_ok=True)
        for copy in stage.copies:
            source_root = context if copy.from_stage is None else stage_root(copy.from_stage)
            _apply_copy(copy, source_root, root, strict=copy.from_stage is None)
        roots[index] = root
        return root

    stage_root(plan.final.index)
    return roots


def _apply_copy(copy: Copy, source_root: Path, root: Path, *, strict: bool) -> None:
    """Copy like Docker: a folder's contents into dest, a file to dest (or into dest/)."""
    dest = root / copy.dest.lstrip("/")
    into_folder = copy.dest.endswith("/") or len(copy.sources) > 1
    for pattern in copy.sources:
        matches = sorted(glob.glob(str(source_root / pattern.lstrip("/"))))
        if not matches and strict:
            raise BuildError(f"COPY source {pattern!r} is not in the Space repository")
        for match in map(Path, matches):
            if match.is_dir():
                shutil.copytree(match, dest, symlinks=True, dirs_exist_ok=True)
            else:
                target = dest / match.name if into_folder or dest.is_dir() else dest
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(match, target)
