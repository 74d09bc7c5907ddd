"""A stop of a name nothing answers to is refused (exit 1) unless --force,
which files it with a one-line warning; a look-alike of a known name (a
Cyrillic letter, a bidi override) or a tmux target with ':' says what it
looks like."""
from __future__ import annotations

from leash.core.base.nameguard import skeleton, warning_for
from leash.core.views.protocol import StopProtocol


def seen(home, session_id: str, **fields) -> None:
    StopProtocol(home).sessions.observe(session_id, now=1_800_000_000.0, **fields)


def test_a_known_session_stops_quietly(home, cli):
    seen(home, "sess-1", tmux_session="agent-1")
    for name in ("sess-1", "agent-1"):
        result = cli("stop", name, "--reason", "r")
        assert result.code == 0 and "warning" not in result.err


def test_an_unknown_name_is_filed_with_a_warning(home, cli):
    assert cli("stop", "nobody-yet", "--reason", "r").code == 1
    result = cli("stop", "nobody-yet", "--force", "--reason", "r")
    assert result.code == 0 and "nothing answers to this name yet" in result.err
    assert StopProtocol(home).is_stopped("nobody-yet")


def test_a_cyrillic_look_alike_is_named(home, cli):
    seen(home, "sess-1", tmux_session="agent-1")
    result = cli("stop", "аgent-1", "--reason", "r")  # the first letter is Cyrillic
    assert result.code == 1 and "looks like 'agent-1'" in result.err
    forced = cli("stop", "аgent-1", "--force", "--reason", "r")
    assert forced.code == 0 and "looks like 'agent-1'" in forced.err


def test_a_bidi_override_and_a_target_with_a_colon(home, cli):
    assert "invisible formatting" in cli("stop", "agent\u202e1", "--reason", "r").err
    assert "':' or '.'" in cli("stop", "a:b", "--force", "--reason", "r").err


def test_the_skeleton_maps_homoglyphs():
    assert skeleton("Агент") != skeleton("agent")  # not every Cyrillic word is a look-alike
    assert skeleton("аgеnt-1") == skeleton("agent-1")
    assert warning_for("agent-1", {"agent-1"}) is None
