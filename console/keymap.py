"""Every key of the console in one place: action, default key, where it applies.

The main screen builds its bindings from ``ACTIONS``; the footer shows the
ones that apply to the focused panel; the help screen lists them all; the
command palette offers them. ``[console.keys]`` in config.toml remaps an
action to another key (``stop = "x"``).
"""
from __future__ import annotations

from typing import NamedTuple

PANELS = ("sessions", "halts", "warrants", "locks", "loops", "acklog", "approvals")
PANEL_TITLES = {"sessions": "Sessions", "halts": "Pending halts", "warrants": "Warrants",
                "locks": "Hands-off locks", "loops": "Loop breakers", "acklog": "Ack log",
                "approvals": "Approvals"}
EVERYWHERE = frozenset(PANELS)


class KeyAction(NamedTuple):
    name: str           # the action method is action_<name>
    key: str
    description: str
    panels: frozenset   # where it applies (footer, check_action)
    changes_state: bool = False


ACTIONS: tuple[KeyAction, ...] = (
    KeyAction("focus_panel('sessions')", "1", "Sessions", EVERYWHERE),
    KeyAction("focus_panel('halts')", "2", "Halts", EVERYWHERE),
    KeyAction("focus_panel('warrants')", "3", "Warrants", EVERYWHERE),
    KeyAction("focus_panel('locks')", "4", "Locks", EVERYWHERE),
    KeyAction("focus_panel('loops')", "5", "Breakers", EVERYWHERE),
    KeyAction("focus_panel('acklog')", "6", "Ack log", EVERYWHERE),
    KeyAction("focus_panel('approvals')", "7", "Approvals", EVERYWHERE),
    KeyAction("stop", "s", "Stop", frozenset({"sessions"}), True),
    KeyAction("fleet_stop", "S", "Fleet stop", EVERYWHERE, True),
    KeyAction("resume", "u", "Resume", frozenset({"sessions"}), True),
    KeyAction("acknowledge", "a", "Acknowledge", frozenset({"halts"}), True),
    KeyAction("dismiss", "d", "Dismiss", frozenset({"halts"}), True),
    KeyAction("escalate", "e", "Escalate", frozenset({"halts"}), True),
    KeyAction("pardon", "p", "Pardon", frozenset({"warrants"}), True),
    KeyAction("warrant", "w", "File warrant", frozenset({"sessions"}), True),
    KeyAction("hands_off", "h", "Hands-off", frozenset({"sessions", "locks"}), True),
    KeyAction("release", "r", "Release", frozenset({"locks"}), True),
    KeyAction("allow", "y", "Allow", frozenset({"approvals"}), True),
    KeyAction("deny", "n", "Deny", frozenset({"approvals"}), True),
    KeyAction("peek", "enter", "Peek pane", frozenset({"sessions"})),
    KeyAction("why", "i", "Why held", frozenset({"sessions"})),
    KeyAction("zoom", "z", "Zoom", EVERYWHERE),
    KeyAction("ack_log", "l", "Log screen", EVERYWHERE),
    KeyAction("filter", "slash", "Filter", EVERYWHERE),
    KeyAction("help", "question_mark", "Help", EVERYWHERE),
    KeyAction("command_palette", "ctrl+p", "Palette", EVERYWHERE),
    KeyAction("quit", "q", "Quit", EVERYWHERE),
)
# Config names of the actions that take an argument.
CONFIG_NAMES = {a.name: a.name for a in ACTIONS}
CONFIG_NAMES.update({f"focus_{p}": f"focus_panel('{p}')" for p in PANELS})


class KeymapError(ValueError):
    pass


def keymap(overrides: dict[str, str] | None = None) -> tuple[KeyAction, ...]:
    """The actions with ``[console.keys]`` applied; unknown names are an error."""
    overrides = overrides or {}
    by_action = {}
    for config_name, key in overrides.items():
        if config_name not in CONFIG_NAMES:
            known = ", ".join(sorted(CONFIG_NAMES))
            raise KeymapError(f"[console.keys] {config_name!r} is not an action (known: {known})")
        by_action[CONFIG_NAMES[config_name]] = key
    result = tuple(a._replace(key=by_action.get(a.name, a.key)) for a in ACTIONS)
    keys = [a.key for a in result]
    clash = sorted({k for k in keys if keys.count(k) > 1})
    if clash:
        raise KeymapError(f"[console.keys] gives more than one action the key(s) {', '.join(clash)}")
    return result


def display(key: str) -> str:
    return {"slash": "/", "question_mark": "?", "enter": "⏎"}.get(key, key)
