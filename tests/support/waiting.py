"""Waiting for something a real process, pane or server does: polled, with a
deadline, never a bare sleep. Shared by the tests that watch tmux panes,
kennels, daemons and PostgreSQL mirrors."""
from __future__ import annotations

import time

POLL_SECONDS = 0.02


def wait_for(predicate, timeout: float = 10.0, interval: float = POLL_SECONDS, what: str = "condition"):
    """``predicate()``'s first true value; AssertionError naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


def eventually(check, seconds: float = 10.0) -> bool:
    """Whether ``check()`` came true within ``seconds`` (one last look after)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(POLL_SECONDS)
    return check()
