"""``leash log --session`` shows a session's whole history whatever name each
line was logged under (a halt under the agent's id, a stop and a warrant under
the tmux session's name); ``--event`` takes the logged names and short
aliases, refuses an unknown one (exit 2) naming the valid ones, and ``--help``
lists them."""
from __future__ import annotations

import json
import time

from leash.core.state.warrants import WarrantQueue
from leash.core.views.protocol import StopProtocol


def history(home, cli) -> None:
    """sess-1 (an agent in tmux session agent-1) halted, stopped and warranted; sess-2 stopped."""
    sessions = StopProtocol(home).sessions
    sessions.observe("sess-1", now=time.time(), tmux_session="agent-1")
    sessions.observe("sess-2", now=time.time(), tmux_session="agent-2")
    assert cli("halts", "record", "--session", "sess-1", "--type", "security", "--severity", "low",
               "--description", "looked at a key").code == 0
    assert cli("stop", "agent-1", "--reason", "looping").code == 0
    assert cli("stop", "agent-2").code == 0
    WarrantQueue(home).file("agent-1", reason="no answer", requester="deacon")


def events_of(result) -> list[tuple[str, str]]:
    assert result.code == 0, result
    return [(line["event"], line["session_id"]) for line in map(json.loads, result.out.splitlines())]


def test_session_matches_every_name_of_the_session(home, cli):
    history(home, cli)
    whole = [("halt_recorded", "sess-1"), ("stop_ack", "agent-1"), ("warrant_filed", "agent-1")]
    assert events_of(cli("log", "--session", "agent-1", "--json")) == whole
    assert events_of(cli("log", "--session", "sess-1", "--json")) == whole
    assert events_of(cli("log", "--session", "sess-2", "--json")) == [("stop_ack", "agent-2")]


def test_event_takes_logged_names_and_aliases(home, cli):
    history(home, cli)
    stops = [("stop_ack", "agent-1"), ("stop_ack", "agent-2")]
    assert events_of(cli("log", "--event", "stop", "--json")) == stops
    assert events_of(cli("log", "--event", "stop_ack", "--json")) == stops
    assert events_of(cli("log", "--event", "stop-ack", "--json")) == stops
    assert events_of(cli("log", "--event", "halt", "--session", "agent-1", "--json")) == [("halt_recorded", "sess-1")]


def test_an_unknown_event_is_a_usage_error_naming_the_valid_ones(home, cli):
    history(home, cli)
    result = cli("log", "--event", "stopped")
    assert result.code == 2 and result.out == ""
    (line,) = result.err.splitlines()
    assert line.startswith("leash: error: unknown event 'stopped': one of stop_ack, resume, ")
    assert "approval_answer_refused, budget_warn," in line
    assert "budget_stale; or an alias: stop, fleet, lock, halt" in line


def test_help_lists_the_events_and_aliases(leash_proc):
    result = leash_proc("log", "--help")
    shown = " ".join(result.out.split())
    assert result.code == 0 and "stop_ack, resume, fleet_stop" in shown
    assert "stop = stop_ack" in shown and "halt = halt_*" in shown
