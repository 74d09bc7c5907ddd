"""Waiting for something a real process, pane or server does: polled, with a
deadline, never a bare sleep. Shared by the tests that watch tmux panes,
kennels, daemons and PostgreSQL mirrors, and by the end-to-end suite's tests
and helpers (which poll a real CLI's screen or process table more slowly:
``interval``)."""
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
            raise AssertionError(f"timed out waiting for {what} ({timeout:g} s)")
        time.sleep(interval)


def eventually(check, seconds: float = 10.0, interval: float = POLL_SECONDS):
    """``check()``'s first true value within ``seconds``, else its (false) value at
    one last look after: true exactly when it came true in time."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    return check()
