"""One hook judgement, one reading of what every store of the home asks again.

A hook's judgement reads the session, the stops, the locks and the halts,
each through its own store, and each store asks the same two questions of
the home before it trusts its file: is the home still safe
(``core.base.home.ensure_home``), and where does the ack log end
(``core.state.loghead.AckHead.current``, against which each state file is
checked). Asked once per store, that is three readings of the log's end and
two of the home per tool call: eight system calls of leashd's 37, and the
Python around them. Within ``judging()`` the answers are kept for the rest
of that judgement (``kept``); outside it, and in another thread, nothing is
kept and every question is asked as before.

Why that is the same answer: one judgement takes well under a millisecond
and reads a snapshot either way (another process's write can land between
any two of its reads); what this process writes itself forgets what it
changed (``forget``: the log's end once a line is appended). An answer that
raised is never kept: the next store asks again and raises again.

Failure: none of its own; ``kept`` raises what ``compute`` raises.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

_local = threading.local()


@contextmanager
def judging() -> Iterator[None]:
    """The block is one judgement: ``kept`` answers hold until it ends (a
    judgement inside another is part of it)."""
    if getattr(_local, "answers", None) is not None:
        yield
        return
    _local.answers = {}
    try:
        yield
    finally:
        _local.answers = None


def kept(key: tuple, compute: Callable[[], Any]) -> Any:
    """``compute()``, once per judgement for ``key`` (every time outside one)."""
    answers = getattr(_local, "answers", None)
    if answers is None:
        return compute()
    try:
        return answers[key]
    except KeyError:
        value = answers[key] = compute()
        return value


def forget(key: tuple) -> None:
    """This process changed what ``key`` answered: ask again."""
    answers = getattr(_local, "answers", None)
    if answers is not None:
        answers.pop(key, None)
