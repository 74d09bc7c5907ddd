"""A name nothing knows is refused with the names near it: ``leash stop``
(exit 1, nothing filed, unless ``--force``), ``resume`` and ``why``; an empty
name is a usage error. Real stores, a real tmux server on a private socket."""
from __future__ import annotations

import time

from leash.core.views.protocol import StopProtocol


def seen(home, session_id: str, **fields) -> None:
    StopProtocol(home).sessions.observe(session_id, now=time.time(), **fields)


def test_a_typo_of_a_known_session_is_refused_with_did_you_mean(home, cli):
    seen(home, "sess-1", tmux_session="agent-chatty")
    result = cli("stop", "agent-chaty", "--reason", "loops")
    assert result.code == 1, result
    assert result.err == ("leash: error: nothing knows 'agent-chaty': no agent session, tmux session or entity by "
                          "that name has been seen; did you mean 'agent-chatty'?; nothing was filed "
                          "(`leash stop --force agent-chaty` files it for a session not yet seen)\n")
    assert not StopProtocol(home).is_stopped("agent-chaty")
    assert cli("log", "--event", "stop_ack").out == ""


def test_force_files_a_stop_for_a_session_not_yet_seen(home, cli):
    seen(home, "sess-1", tmux_session="agent-chatty")
    result = cli("stop", "agent-new", "--force", "--reason", "before it starts")
    assert result.code == 0 and "nothing answers to this name yet" in result.err
    assert StopProtocol(home).is_stopped("agent-new")


def test_a_running_tmux_session_an_entity_and_a_stop_are_known(home, tmux, cli):
    seen(home, "sess-1", entity="ezra")
    tmux.new_session("agent-tmux-only", "sleep 600")
    assert cli("stop", "agent-tmux-only").code == 0
    assert cli("stop", "ezra").code == 0
    assert cli("stop", "agent-tmux-only", "--reason", "again").code == 0  # stopped already: known


def test_a_look_alike_is_refused_and_named(home, cli):
    seen(home, "sess-1", tmux_session="agent-1")
    result = cli("stop", "аgent-1")  # the first letter is Cyrillic
    assert result.code == 1 and "looks like 'agent-1'" in result.err


def test_resume_of_a_typo_says_which_stopped_name_is_near(home, cli):
    seen(home, "sess-1", tmux_session="agent-chatty")
    cli("stop", "agent-chatty")
    result = cli("resume", "agent-chaty")
    assert result.code == 1
    assert result.err == "leash: error: session 'agent-chaty' is not stopped; did you mean 'agent-chatty'?\n"


def test_why_of_a_typo_says_did_you_mean_and_an_empty_name_is_a_usage_error(home, cli):
    seen(home, "sess-1", tmux_session="agent-chatty")
    typo = cli("why", "agent-chaty")
    assert typo.code == 1 and typo.err.endswith("did you mean 'agent-chatty'?\n"), typo
    for empty in ("", "  "):
        result = cli("why", empty)
        assert result.code == 2, result
        assert "is free" not in result.out and "why needs a SESSION" in result.err
