"""A dead agent is never shown waiting: a session whose tmux session or pane is
gone, or whose warrant was executed, is ``gone`` and sorts with the rest; the
sessions sort by name as people count (s1, s2, ..., s10). Real tmux servers
on private sockets, a real kennel executing a real warrant."""
from __future__ import annotations

import time

from leash.core.state.warrants import WarrantQueue
from leash.core.views.fleet import view
from leash.core.views.protocol import StopProtocol
from leash.core.views.sessionrows import natural_key
from tests.support.kennel import run_kennel, start_agent

T0 = 1_800_000_000.0


def rows_of(home, tmux_sessions, now) -> list[dict]:
    return view(home, tmux_sessions=tmux_sessions, now=now)["sessions"]


def test_an_agent_waiting_for_permission_whose_tmux_session_is_gone_is_gone(home, tmux):
    sessions = StopProtocol(home).sessions
    sessions.observe("sess-dead", now=T0, status="waiting for permission", tmux_session="agent-dead",
                     tmux_session_id="$9", tmux_pane="%9")
    sessions.observe("sess-idle", now=T0, status="idle", tmux_session="agent-idle")
    tmux.new_session("agent-idle", "sleep 600")
    rows = rows_of(home, tmux.list_sessions(), T0 + 5)
    dead = next(row for row in rows if row["name"] == "sess-dead")
    assert (dead["state"], dead["gone"]) == ("gone", True)
    assert "agent-dead gone" in dead["detail"]
    assert [row["name"] for row in rows] == ["agent-idle", "sess-dead"]  # with the rest, by name


def test_an_agent_whose_pane_is_gone_from_a_live_tmux_session_is_gone(home, tmux):
    tmux.new_session("agent-1", "sleep 600")
    (listed,) = tmux.list_sessions()
    sessions = StopProtocol(home).sessions
    sessions.observe("sess-1", now=T0, status="waiting for permission", tmux_session="agent-1",
                     tmux_session_id=listed["id"], tmux_pane="%77")
    (row,) = rows_of(home, tmux.list_sessions(), T0 + 5)
    assert (row["name"], row["state"], row["gone"]) == ("agent-1", "gone", True)


def test_an_agent_whose_warrant_was_executed_is_gone_with_no_tmux_left(home, tmux, tmp_path):
    start_agent(tmux, tmp_path, "agent-chatty")
    (listed,) = tmux.list_sessions()
    StopProtocol(home).sessions.observe("sess-chatty", now=time.time(), status="waiting for permission",
                                        tmux_session="agent-chatty", tmux_session_id=listed["id"],
                                        tmux_pane=listed["panes"][0]["id"])
    WarrantQueue(home).file("agent-chatty", reason="no answer", requester="deacon")
    assert run_kennel(home, tmux)["agent-chatty"]["outcome"] == "executed"
    assert tmux.list_sessions() == []  # its server ended with its only session
    (row,) = rows_of(home, [], time.time())
    assert (row["name"], row["state"], row["detail"], row["gone"]) == ("sess-chatty", "gone", "warrant executed",
                                                                       True)


def test_a_stop_on_a_gone_session_still_shows_but_it_sorts_with_the_rest(home, tmux):
    protocol = StopProtocol(home)
    protocol.sessions.observe("sess-a", now=T0, status="waiting for input", tmux_session="agent-a")
    protocol.sessions.observe("sess-b", now=T0, status="waiting for input", tmux_session="agent-b")
    protocol.stops.stop("sess-a", source="ops@test", reason="look first", now=T0)
    tmux.new_session("agent-b", "sleep 600")
    rows = rows_of(home, tmux.list_sessions(), T0 + 1)
    gone = next(row for row in rows if row["name"] == "sess-a")
    assert gone["state"] == "stopped" and gone["gone"] and "gone: tmux session agent-a gone" in gone["detail"]
    assert [row["name"] for row in rows] == ["agent-b", "sess-a"]  # waiting for input first


def test_sessions_sort_as_people_count(home):
    for name in ("s10", "s2", "s1", "S3", "s11"):
        StopProtocol(home).sessions.observe(name, now=T0, status="idle")
    assert [row["name"] for row in rows_of(home, [], T0)] == ["s1", "s2", "S3", "s10", "s11"]
    assert sorted(["b2", "a10", "a9", "a", ""], key=natural_key) == ["", "a", "a9", "a10", "b2"]
