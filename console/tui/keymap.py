"""Every key of the console in one place: action, default key, where it applies.

Each action is one of the dashboard's bindings (``bindings()``), its id the
action's name in ``[console.keys]`` (``stop``; a panel's number key is
``focus_<panel>``). ``[console.keys]`` in config.toml remaps an action to
another key (``stop = "x"``): ``keymap()`` gives the actions with the keys
the operator chose, and the app hands them to Textual's own keymap
(``App.set_keymap``), so the binding of that id is on the new key, in the
footer too. The footer shows the ones that apply to the focused panel; the
help screen lists them all; the command palette offers them. The number keys
come from the panel registry (``console.tui.panels``: ``1`` shows its first
panel). The names and default keys an operator writes are
``core.base.consolekeys``'s, so that reading the file and ``leash doctor``
judge a binding as the console does; a binding the console cannot use is a
``KeymapError`` before any screen is drawn.
"""
from __future__ import annotations

from typing import NamedTuple

from textual.binding import Binding

from leash.console.tui import panels as registry

PANELS = registry.KEYS  # the panels' keys, in the order of their number keys
PANEL_TITLES = {spec.key: spec.title for spec in registry.PANELS}
EVERYWHERE = frozenset(PANELS)
# The keymap's actions that are the app's (``q`` and ctrl+q quit, ctrl+p opens
# the palette): they act over the dashboard only, as its own keys do.
APP_ACTIONS = frozenset({"quit", "command_palette"})


class KeyAction(NamedTuple):
    name: str           # its name in [console.keys]; the dashboard's action_<name> (but see ``binding``)
    key: str
    description: str
    panels: frozenset   # where it applies (footer, check_action)
    on: str | None = None  # changes state: on the selected row of this panel when it is the focused one ("": none)

    @property
    def changes_state(self) -> bool:
        """It opens a dialog: the dashboard's ``operate`` action asks the app for it."""
        return self.on is not None

    @property
    def base(self) -> str:
        """The action without its arguments (``focus_panel``)."""
        return self.name.split("(")[0]

    @property
    def binding(self) -> str:
        """The action as the dashboard binds it (the app's with its namespace)."""
        if self.changes_state:
            return f"operate('{self.name}')"
        return f"app.{self.name}" if self.base in APP_ACTIONS else self.name

    @property
    def id(self) -> str:
        """Its binding's id: its name in [console.keys] (``focus_halts`` for ``focus_panel('halts')``)."""
        return "focus_" + self.name.split("'")[1] if self.base == "focus_panel" else self.name

    @property
    def shown(self) -> bool:
        """In the footer: not the number keys, nor peek (``enter`` selects a row)."""
        return self.base != "focus_panel" and self.name != "peek"


SESSIONS, HALTS = frozenset({"sessions"}), frozenset({"halts"})
ACTIONS: tuple[KeyAction, ...] = (
    *(KeyAction(f"focus_panel('{spec.key}')", number, spec.short, EVERYWHERE) for number, spec in registry.numbered()),
    KeyAction("stop", "s", "Stop", SESSIONS, "sessions"),
    KeyAction("fleet_stop", "S", "Fleet stop", EVERYWHERE, ""),
    KeyAction("resume", "u", "Resume", SESSIONS, "sessions"),
    KeyAction("acknowledge", "a", "Acknowledge", HALTS, "halts"),
    KeyAction("dismiss", "d", "Dismiss", HALTS, "halts"),
    KeyAction("escalate", "e", "Escalate", HALTS, "halts"),
    KeyAction("pardon", "p", "Pardon", frozenset({"warrants"}), "warrants"),
    KeyAction("warrant", "w", "File warrant", SESSIONS, "sessions"),
    KeyAction("hands_off", "h", "Hands-off", frozenset({"sessions", "locks"}), "sessions"),  # Locks: any entity
    KeyAction("release", "r", "Release", frozenset({"locks"}), "locks"),
    KeyAction("allow", "y", "Allow", frozenset({"approvals"}), "approvals"),
    KeyAction("deny", "n", "Deny", frozenset({"approvals"}), "approvals"),
    KeyAction("raise_cap", "plus", "Raise cap", frozenset({"budget"}), "budget"),
    KeyAction("peek", "enter", "Peek pane", SESSIONS),
    KeyAction("why", "i", "Why held", SESSIONS),
    KeyAction("zoom", "z", "Zoom", EVERYWHERE),
    KeyAction("ack_log", "l", "Log screen", EVERYWHERE),
    KeyAction("filter", "slash", "Filter", EVERYWHERE),
    KeyAction("help", "question_mark", "Help", EVERYWHERE),
    KeyAction("command_palette", "ctrl+p", "Palette", EVERYWHERE),
    KeyAction("quit", "q", "Quit", EVERYWHERE),
)
# Each action's name in [console.keys] (the operator's word: ``focus_acklog``)
# -> its name here (``focus_panel('acklog')``, never shown to the operator).
CONFIG_NAMES = {a.id: a.name for a in ACTIONS}


class KeymapError(ValueError):
    pass


def keymap(overrides: dict[str, str] | None = None) -> tuple[KeyAction, ...]:
    """The actions with ``[console.keys]`` applied. Reading config.toml
    leaves out, with a warning naming its line, every binding the console
    cannot use (``core.base.consolekeys.rebind``, the same rule): one given
    here anyway is a ``KeymapError`` in the operator's words."""
    from leash.core.base.consolekeys import rebind

    kept, left_out = rebind(dict(overrides or {}))
    if left_out:
        name, why = left_out[0]
        raise KeymapError(f"[console.keys] {name}: {why}")
    by_action = {CONFIG_NAMES[name]: key for name, key in kept.items()}
    return tuple(a._replace(key=by_action.get(a.name, a.key)) for a in ACTIONS)


def bindings(actions: tuple[KeyAction, ...] = ACTIONS) -> list[Binding]:
    """The dashboard's binding of each action, by its id (the palette's is the
    app's own, ``PALETTE``): priority ones, read as each key arrives (``screens.dashboard``)."""
    return [Binding(a.key, a.binding, a.description, show=a.shown, priority=True, id=a.id)
            for a in actions if a.name != "command_palette"]


# The app's binding of the palette: Textual's own (it adds none when the app has
# one), with the id [console.keys] moves it by.
PALETTE = Binding("ctrl+p", "command_palette", "palette", show=False, priority=True,
                  tooltip="Open the command palette", id="command_palette")


def find(actions: tuple[KeyAction, ...], name: str) -> KeyAction | None:
    """The key action of the action ``name`` (without its arguments:
    ``focus_panel``; its name too: ``dismiss``), or None."""
    return next((action for action in actions if name in (action.base, action.name)), None)


def display(key: str) -> str:
    return {"slash": "/", "question_mark": "?", "enter": "⏎", "plus": "+"}.get(key, key)
