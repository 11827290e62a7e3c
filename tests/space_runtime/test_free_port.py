"""``free_port``: a port a Space's server can still bind after seconds of imports."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from releaselib.space_runtime import process
from releaselib.space_runtime.process import free_port


def test_the_port_is_below_the_ephemeral_range_and_bindable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outgoing connections take their local port from the ephemeral range; a Space's port
    drawn there could be taken before its server binds it."""
    ranges = tmp_path / "ip_local_port_range"
    ranges.write_text("32768\t60999\n")
    monkeypatch.setattr(process, "_EPHEMERAL", ranges)
    ports = {free_port() for _ in range(20)}
    assert all(10000 <= port < 32768 for port in ports), ports
    for port in ports:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_a_port_in_use_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ranges = tmp_path / "ip_local_port_range"
    ranges.write_text("32768 60999")
    monkeypatch.setattr(process, "_EPHEMERAL", ranges)
    with socket.socket() as taken, socket.socket() as spare:
        taken.bind(("127.0.0.1", 0))
        spare.bind(("127.0.0.1", 0))
        busy, free = taken.getsockname()[1], spare.getsockname()[1]
        spare.close()
        draws = iter([busy, busy, free])
        monkeypatch.setattr(process.random, "randrange", lambda *_: next(draws, free))
        assert free_port() == free


@pytest.mark.parametrize("text", [None, "", "not numbers", "5000 6000"])
def test_without_a_usable_range_the_kernel_picks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str | None
) -> None:
    """No /proc (another system), an unreadable file, or a range too low to stay under."""
    ranges = tmp_path / "ip_local_port_range"
    if text is not None:
        ranges.write_text(text)
    monkeypatch.setattr(process, "_EPHEMERAL", ranges)
    monkeypatch.setattr(process.random, "randrange", lambda *_: pytest.fail("drew a port"))
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
