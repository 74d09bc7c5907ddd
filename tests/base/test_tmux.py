"""leash.core.base.tmux against a real tmux server on a private socket: reading what a
pane showed since a position, in one command when the pane did not scroll and
exactly when it did."""
from __future__ import annotations

import os
import subprocess
import time
from collections import Counter

import pytest

from leash.core.base.tmux import Tmux, TmuxError


def counting(monkeypatch) -> Counter:
    """Count the tmux processes started from now on, whoever starts them
    (``server.cmd`` or a libtmux object)."""
    calls: Counter[str] = Counter()
    real = subprocess.Popen

    def popen(args, *rest, **kwargs):
        if os.path.basename(str(args[0])) == "tmux":
            calls["processes"] += 1
        return real(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", popen)
    return calls


def settle(tmux: Tmux, name: str, last: str, *, times: int = 2) -> None:
    """Wait for ``last`` twice (``times``): the tty's echo of what was typed, then cat's copy."""
    deadline = time.monotonic() + 10
    while sum(line.strip() == last for line in tmux.capture(name, 400)) < times:
        if time.monotonic() > deadline:
            raise AssertionError(f"{last!r} never reached the pane")
        time.sleep(0.02)


def test_read_since_takes_one_command_while_the_pane_does_not_scroll(tmux, monkeypatch):
    tmux.new_session("agent", "cat", width=80, height=20)
    session_id = tmux.resolve("agent")["id"]  # a kennel addresses its target by id
    marks, _ = tmux.mark(session_id)
    tmux.send_message(session_id, "first")
    settle(tmux, "agent", "first")
    calls = counting(monkeypatch)
    now, lines = tmux.read_since(session_id, marks["position"], history=marks["history"])
    assert calls["processes"] == 1
    assert now["history"] == marks["history"]
    assert lines == ["first", "first"]  # the tty's echo, then cat's copy
    assert tmux.read_since("agent", marks["position"], history=marks["history"])[1] == lines
    assert calls["processes"] == 3  # a name is looked up first: one listing more


def wait_for_cat(tmux: Tmux) -> None:
    """Until the pane runs cat: what is typed before that meets the shell, echo and all."""
    deadline = time.monotonic() + 10
    while tmux.list_sessions()[0]["panes"][0]["command"] != "cat":
        if time.monotonic() > deadline:
            raise AssertionError("cat never ran in the pane")
        time.sleep(0.02)


def type_lines(tmux: Tmux, name: str, lines: list[str]) -> None:
    """Each of ``lines`` typed into the pane, then Enter, by one tmux process (a
    ``send_message`` each would start three)."""
    keys = [key for line in lines for key in (line, "Enter")]
    subprocess.run(["tmux", "-S", tmux.socket, "send-keys", "-t", f"={name}:", *keys], check=True)


@pytest.mark.parametrize("shown", [25, 300])
def test_read_since_reads_exactly_from_the_position_after_the_pane_scrolled(tmux, monkeypatch, shown):
    # No echo: text typed ahead of cat would be echoed into the middle of the
    # lines cat is still writing, and a line would be found nowhere whole.
    tmux.new_session("agent", "stty -echo; exec cat", width=80, height=10)
    session_id = tmux.resolve("agent")["id"]
    wait_for_cat(tmux)
    for n in range(12):  # the pane is full: what comes next scrolls it
        tmux.send_message("agent", f"before {n}")
    settle(tmux, "agent", "before 11", times=1)
    marks, before = tmux.mark("agent")
    tmux.send_message("agent", "; ".join(f"after {n}" for n in range(shown // 4)))
    assert marks["history"] > 0 and before[-1] == "before 11"
    type_lines(tmux, "agent", [f"line {n}" for n in range(shown // 2)])
    settle(tmux, "agent", f"line {shown // 2 - 1}", times=1)
    calls = counting(monkeypatch)
    now, lines = tmux.read_since(session_id, marks["position"], history=marks["history"])
    assert now["history"] > marks["history"]
    assert calls["processes"] == 2  # the marks said it moved: one more, exact, capture
    assert lines[0].startswith("after 0; after 1")  # nothing from before the position, nothing lost
    assert lines[-1] == f"line {shown // 2 - 1}"
    assert not any(line.startswith("before") for line in lines)


def test_read_since_of_a_missing_session_raises(tmux):
    tmux.new_session("agent", "cat")
    with pytest.raises(TmuxError, match="agent-1"):
        tmux.read_since("agent-1", 0, history=0)
