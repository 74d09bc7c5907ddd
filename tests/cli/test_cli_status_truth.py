"""``leash status`` says what is true: a session whose agent is dead is gone
(its tmux session not shown as its live one), sessions sort as people count,
and an unreadable halt store is never "fleet: running". Real tmux servers on
private sockets, a real kennel."""
from __future__ import annotations

import time

from leash.core.state.warrants import WarrantQueue
from leash.core.views.protocol import StopProtocol
from tests.support.kennel import run_kennel, start_agent


def session_lines(out: str) -> list[str]:
    lines = out.splitlines()
    return [line.strip() for line in lines[lines.index(next(x for x in lines if x.startswith("sessions seen"))) + 1:]]


def test_a_session_whose_warrant_was_executed_is_gone_in_status(home, tmux, tmp_path, cli):
    start_agent(tmux, tmp_path, "agent-chatty")
    tmux.new_session("agent-other", "sleep 600")
    chatty = next(s for s in tmux.list_sessions() if s["name"] == "agent-chatty")
    sessions = StopProtocol(home).sessions
    sessions.observe("sess-chatty", now=time.time(), status="waiting for permission", tmux_session="agent-chatty",
                     tmux_session_id=chatty["id"], tmux_pane=chatty["panes"][0]["id"])
    sessions.observe("sess-other", now=time.time(), status="idle", tmux_session="agent-other")
    WarrantQueue(home).file("agent-chatty", reason="no answer", requester="deacon")
    assert run_kennel(home, tmux)["agent-chatty"]["outcome"] == "executed"
    result = cli("status")
    assert result.code == 0, result
    chatty_line, other_line = session_lines(result.out)
    assert chatty_line.startswith("sess-chatty  gone  claude  tmux agent-chatty (gone)  "), result.out
    assert "waiting" not in result.out
    assert other_line.startswith("sess-other  idle  claude  tmux agent-other  "), result.out
    (row,) = [s for s in cli("status", "--json").json()["sessions"] if s["session_id"] == "sess-chatty"]
    assert (row["state"], row["gone"]) == ("gone", True)


def test_status_sorts_sessions_as_people_count(home, cli):
    for name in ("s10", "s2", "s1", "s11"):
        StopProtocol(home).sessions.observe(name, now=time.time(), status="idle")
    assert [line.split()[0] for line in session_lines(cli("status").out)] == ["s1", "s2", "s10", "s11"]
    assert [s["session_id"] for s in cli("status", "--json").json()["sessions"]] == ["s1", "s2", "s10", "s11"]


def test_an_unreadable_halt_store_is_not_a_running_fleet(home, cli):
    StopProtocol(home).sessions.observe("s1", now=time.time(), status="idle")
    (home / "halts.db").write_bytes(b"not a database " * 16)
    result = cli("status")
    assert "HALT STORE UNREADABLE" in result.out
    assert "fleet: running" not in result.out
    assert "fleet: HELD (halt store unreadable: every tool call is held" in result.out
