"""leash.core.base.tmux on a real tmux server: sessions and panes reached by their
ids through libtmux's objects; text typed literally, Enter a key of its own; a
listing no pane's content can break; names tmux would read as targets found
missing; a server that is not running is "no sessions"."""
from __future__ import annotations

import os

import pytest

from leash.core.base.tmux import Tmux, TmuxError

from ..support.waiting import wait_for

LIBTMUX_SEPARATOR = "\u241e"  # the field separator of libtmux's own listings


def shows(tmux: Tmux, target: str, text: str, times: int = 1) -> bool:
    return sum(line.strip() == text for line in tmux.capture(target)) >= times


def test_sessions_are_listed_with_their_panes_and_resolved_by_id(tmux):
    tmux.new_session("alpha", "cat", width=80, height=20)
    tmux.new_session("beta", "cat", environment={"LEASH_ENTITY": "beta"})
    listed = tmux.list_sessions()
    assert [s["name"] for s in listed] == ["alpha", "beta"]
    alpha = listed[0]
    assert alpha["id"].startswith("$") and alpha["created"] > 0 and alpha["attached"] is False
    (pane,) = alpha["panes"]
    assert pane["id"].startswith("%") and pane["pid"] > 0 and pane["active"] is True
    wait_for(lambda: [p["command"] for s in tmux.list_sessions() for p in s["panes"]] == ["cat", "cat"],
             what="cat to run in both panes")
    assert tmux.resolve("alpha") == tmux.resolve(alpha["id"]) == tmux.resolve(pane["id"]) == \
        {"id": alpha["id"], "name": "alpha", "panes": [pane["id"]]}
    tmux.server.cmd("rename-session", "-t", alpha["id"], "gamma")
    assert tmux.resolve(alpha["id"])["name"] == "gamma" and tmux.resolve("alpha") is None
    assert tmux.has_session(alpha["id"]) and tmux.has_session(pane["id"]) and tmux.has_session("gamma")
    assert not tmux.has_session("alpha") and not tmux.has_session("gam")  # exact names only


def test_a_message_is_typed_literally_and_enter_is_a_key_of_its_own(tmux):
    """Words tmux knows as key names reach the pane as text: ``C-c`` does not
    interrupt cat, ``Enter`` inside the text does not end the line early."""
    tmux.new_session("agent", "cat")
    # typed before cat runs, a line can be flushed as the pane's terminal is set up
    wait_for(lambda: tmux.list_sessions()[0]["panes"][0]["command"] == "cat", what="cat to run")
    session_id = tmux.resolve("agent")["id"]
    # One at a time: a message typed while cat still writes the last one out
    # would share its line on the screen (the terminal's echo and cat's copy).
    for sent, target in enumerate(("agent", session_id, tmux.resolve("agent")["panes"][0]), start=1):
        tmux.send_message(target, "C-c Enter Escape $(id) ; q")
        try:
            wait_for(lambda sent=sent: shows(tmux, "agent", "C-c Enter Escape $(id) ; q", times=2 * sent),
                     what=f"message {sent} echoed")
        except AssertionError:
            raise AssertionError(f"message {sent} never showed twice: {tmux.capture('agent')!r}") from None
    assert tmux.has_session(session_id)  # cat never saw a Ctrl-C
    assert tmux.list_sessions()[0]["panes"][0]["command"] == "cat"


def test_a_message_that_tmux_would_read_as_flags_is_refused(tmux):
    tmux.new_session("agent", "cat")
    wait_for(lambda: tmux.list_sessions()[0]["panes"][0]["command"] == "cat", what="cat to run")
    with pytest.raises(TmuxError, match="cannot begin with"):
        tmux.send_message("agent", "-x yes")
    tmux.send_message("agent", "after")
    wait_for(lambda: shows(tmux, "agent", "after", times=2), what="the next message")
    assert not any("yes" in line for line in tmux.capture("agent"))


def test_no_pane_content_breaks_the_listing(tmux, tmp_path):
    """A working directory holding libtmux's separator or a newline, a program
    whose name holds a control character, a session made with the separator in
    its name and command: every session is still made, listed, resolved, read
    and killed."""
    odd_dir = tmp_path / f"a{LIBTMUX_SEPARATOR}b\nc"
    odd_dir.mkdir()
    odd_program = tmp_path / f"x{LIBTMUX_SEPARATOR}\x1fy"
    odd_program.symlink_to("/bin/cat")
    tmux.new_session("plain", "cat")
    tmux.new_session("moved", f"cd '{odd_dir}' && exec cat")
    tmux.new_session("program", f"exec '{odd_program}'")
    tmux.new_session(f"re{LIBTMUX_SEPARATOR}named", f"echo {LIBTMUX_SEPARATOR}; exec cat")
    names = {"plain", "moved", "program", f"re{LIBTMUX_SEPARATOR}named"}
    wait_for(lambda: {s["name"] for s in tmux.list_sessions()} == names, what="every session listed")
    for name in names:
        found = tmux.resolve(name)
        assert found and found["name"] == name and tmux.has_session(name) and tmux.has_session(found["id"])
        tmux.send_message(found["id"], f"hello {len(name)}")
        wait_for(lambda name=name: shows(tmux, name, f"hello {len(name)}"), what=f"{name!r} to show the message")
    tmux.kill(f"re{LIBTMUX_SEPARATOR}named")
    assert {s["name"] for s in tmux.list_sessions()} == names - {f"re{LIBTMUX_SEPARATOR}named"}


def test_a_name_tmux_would_read_as_a_target_is_found_missing(tmux):
    tmux.new_session("agent", "cat")
    for name in ("agent:", "agent.0", "agent:0.0", "=agent"):
        assert tmux.resolve(name) is None and not tmux.has_session(name)
        with pytest.raises(TmuxError, match="can't find"):
            tmux.capture(name)
        with pytest.raises(TmuxError, match="can't find"):
            tmux.send_message(name, "hello")
        tmux.kill(name)  # nothing to kill: quiet
    assert tmux.has_session("agent")
    with pytest.raises(TmuxError):
        tmux.new_session("a:b", "cat")  # never a name tmux would change into another
    with pytest.raises(TmuxError):
        tmux.new_session("agent", "cat")  # taken
    assert [s["name"] for s in tmux.list_sessions()] == ["agent"]


def test_a_session_is_killed_by_name_session_id_or_pane_id(tmux):
    for name in ("by-name", "by-session", "by-pane", "bystander"):
        tmux.new_session(name, "cat")
    pane_id = tmux.resolve("by-pane")["panes"][0]
    tmux.kill("by-name")
    tmux.kill(tmux.resolve("by-session")["id"])
    tmux.kill(pane_id)
    assert [s["name"] for s in tmux.list_sessions()] == ["bystander"]
    tmux.kill(pane_id)  # gone already: quiet
    with pytest.raises(TmuxError):
        tmux.capture(pane_id)
    with pytest.raises(TmuxError, match="can't find"):
        tmux.mark("$999")


def test_capture_reads_history_and_drops_the_blank_rows_below(tmux):
    tmux.new_session("printer", "seq 1 100; exec cat", width=80, height=20)
    wait_for(lambda: shows(tmux, "printer", "100"), what="the numbers")
    assert tmux.capture("printer", 30) == [str(n) for n in range(71, 101)]
    tmux.new_session("blank", "exec cat")
    assert tmux.capture("blank") == []  # a live pane with nothing on it, not an error


def test_without_a_server_there_are_no_sessions(tmux_socket):
    tmux = Tmux(str(tmux_socket))
    assert tmux.list_sessions() == [] and tmux.resolve("agent") is None
    assert not tmux.has_session("agent") and not tmux.has_session("$0")
    tmux.kill("agent")
    tmux.kill_server()
    with pytest.raises(TmuxError):
        tmux.capture("agent")
    assert not os.path.exists(tmux_socket)
