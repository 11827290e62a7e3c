"""A Space's CMD is pointed at loopback and the port the embedded Hub chose, whatever server
serves it: a CMD left on 0.0.0.0:8000 never answers the Hub, and the Space would be judged by
our emulator's shortcut (real OpenEnv's dipg_safety_env serves with gunicorn ``-b``)."""

from __future__ import annotations

import pytest

from releaselib.space_runtime.process import _bind_loopback


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        (
            ("sh", "-c", "cd /app/env && gunicorn -w 4 -k uvicorn.workers.UvicornWorker -b 0.0.0.0:8000 server.app:app"),
            ("sh", "-c", "cd /app/env && gunicorn -w 4 -k uvicorn.workers.UvicornWorker -b 127.0.0.1:5555 server.app:app"),
        ),
        (("gunicorn", "--bind", "0.0.0.0:8000", "a:app"), ("gunicorn", "--bind", "127.0.0.1:5555", "a:app")),
        (("gunicorn", "--bind=:8000", "a:app"), ("gunicorn", "--bind=127.0.0.1:5555", "a:app")),
        (("gunicorn", "-b0.0.0.0:8000", "a:app"), ("gunicorn", "-b127.0.0.1:5555", "a:app")),
        (
            ("uvicorn", "a:app", "--host", "0.0.0.0", "--port", "8000"),
            ("uvicorn", "a:app", "--host", "127.0.0.1", "--port", "5555"),
        ),
        (("sh", "-c", "uvicorn a:app --host=0.0.0.0 --port=8000"), ("sh", "-c", "uvicorn a:app --host=127.0.0.1 --port=5555")),
        (("sh", "-c", "tool --db-b 1:2"), ("sh", "-c", "tool --db-b 1:2")),  # not a bind flag
    ],
)
def test_server_flags_point_at_loopback_and_the_chosen_port(argv: tuple[str, ...], want: tuple[str, ...]) -> None:
    assert tuple(_bind_loopback(argv, 5555)) == want
