"""``free_port``: a port a Space's server can still bind after seconds of imports."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from releaselib.space_runtime import process
from releaselib.space_runtime.process import free_port


def ranges(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str | None) -> None:
    """Stand ``text`` in for the kernel's ephemeral range (None: no such file)."""
    path = tmp_path / "ip_local_port_range"
    if text is not None:
        path.write_text(text)
    monkeypatch.setattr(process, "_EPHEMERAL", path)


def bindable(port: int) -> bool:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
    return 0 < port < 65536


@pytest.mark.parametrize(("text", "top"), [("32768\t60999\n", 30000), ("20000 60999", 20000)])
def test_the_port_is_drawn_below_the_ephemeral_range_and_nodeports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, top: int
) -> None:
    """Outgoing connections take their local port from the ephemeral range; a Space's port
    drawn there could be taken before its server binds it. Kubernetes NodePorts start at 30000."""
    ranges(tmp_path, monkeypatch, text)
    asked = []
    draw = process._RNG.randrange
    monkeypatch.setattr(process._RNG, "randrange", lambda *a: asked.append(a) or draw(*a))
    ports = {free_port() for _ in range(20)}
    assert set(asked) == {(10000, top)}
    assert all(10000 <= port < top and bindable(port) for port in ports), ports


def test_a_port_in_use_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ranges(tmp_path, monkeypatch, "32768 60999")
    with socket.socket() as taken, socket.socket() as spare:
        taken.bind(("127.0.0.1", 0))
        spare.bind(("127.0.0.1", 0))
        busy, free = taken.getsockname()[1], spare.getsockname()[1]
        spare.close()
        draws = iter([busy, busy, free])
        monkeypatch.setattr(process._RNG, "randrange", lambda *_: next(draws, free))
        assert free_port() == free


@pytest.mark.parametrize("text", [None, "", "not numbers", "5000 6000", "10000 60999"])
def test_without_a_range_above_10000_the_kernel_picks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str | None
) -> None:
    """No /proc (another system), an unreadable file, or a range too low to stay under."""
    ranges(tmp_path, monkeypatch, text)
    monkeypatch.setattr(process._RNG, "randrange", lambda *_: pytest.fail("drew a port"))
    assert bindable(free_port())


def test_the_lowest_range_it_draws_under_draws_10000(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ranges(tmp_path, monkeypatch, "10001 60999")
    drawn = []
    draw = process._RNG.randrange
    monkeypatch.setattr(process._RNG, "randrange", lambda *a: drawn.append(draw(*a)) or drawn[-1])
    assert bindable(free_port()) and set(drawn) == {10000}
