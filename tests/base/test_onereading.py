"""``core.base.onereading``: within one hook judgement the home's safety and
the ack log's end are read once, whichever stores ask; a line this process
appends is seen at once; nothing is kept outside a judgement or across
judgements; an answer that raised is asked again."""
from __future__ import annotations

import os

import pytest

from leash.core.base import home as homes
from leash.core.base.onereading import judging, kept
from leash.core.state.acklog import AckLog
from leash.core.views.protocol import StopProtocol


def test_kept_within_a_judgement_only():
    asked = []

    def ask():
        asked.append(1)
        return len(asked)

    assert (kept(("k",), ask), kept(("k",), ask)) == (1, 2)  # outside: asked every time
    with judging():
        assert (kept(("k",), ask), kept(("k",), ask)) == (3, 3)
        with judging():  # inside another: part of it
            assert kept(("k",), ask) == 3
    with judging():
        assert kept(("k",), ask) == 4


def test_an_answer_that_raised_is_asked_again():
    calls = []

    def ask():
        calls.append(1)
        raise ValueError("no")

    with judging():
        for _ in range(2):
            with pytest.raises(ValueError):
                kept(("bad",), ask)
    assert len(calls) == 2


def test_the_log_end_follows_this_processs_own_lines_within_a_judgement(home):
    protocol = StopProtocol(home)
    protocol.acknowledge_stop("ops", "s1", "first")
    log = AckLog(str(home))
    with judging():
        before = log.head.current(log)
        protocol.acknowledge_stop("ops", "s2", "second")  # appended: the kept end is forgotten
        after = log.head.current(log)
        assert after["seq"] == before["seq"] + 1


def test_an_unsafe_home_is_refused_on_every_ask_and_a_safe_one_checked_once(home, monkeypatch):
    homes.ensure_home(home)
    os.chmod(home, 0o777)
    with judging():
        for _ in range(2):
            with pytest.raises(homes.UnsafeHome):
                homes.ensure_home(home)
    os.chmod(home, 0o700)
    looked = []
    original = homes.home_problem
    monkeypatch.setattr(homes, "home_problem", lambda path: looked.append(path) or original(path))
    with judging():
        homes.ensure_home(home)
        homes.ensure_home(home)
    homes.ensure_home(home)
    assert len(looked) == 2  # once in the judgement, once outside it
