"""``[console.keys]``: the console's actions by the names an operator writes, and their keys.

The console (``console.tui.keymap``) binds these actions, each name the id of
its binding in Textual's keymap; config.toml remaps them (``stop = "x"``; a
panel's number key is ``focus_<panel>``). The names and the
default keys are here, below the console, so that reading config.toml
(``core.base.config``) and ``leash doctor`` judge a binding as the console
will: ``rebind`` applies the operator's bindings and says, for each one it
cannot use, why, in the operator's words (the action's config name, the key
as written), and leaves that action on its own key. It never raises: a
binding the console cannot use never stops the console, nor makes
config.toml unusable.
"""
from __future__ import annotations

# The dashboard's panels, in the order of their number keys (console.tui.panels.PANELS; a test holds them equal).
PANEL_KEYS = ("sessions", "halts", "warrants", "locks", "loops", "acklog", "approvals", "budget")

# Each action's name in [console.keys] and its key (console.tui.keymap.ACTIONS; a test holds them equal).
DEFAULT_KEYS: dict[str, str] = {
    **{f"focus_{panel}": str(number) for number, panel in enumerate(PANEL_KEYS, start=1)},
    "stop": "s", "fleet_stop": "S", "resume": "u", "acknowledge": "a", "dismiss": "d", "escalate": "e",
    "pardon": "p", "warrant": "w", "hands_off": "h", "release": "r", "allow": "y", "deny": "n",
    "raise_cap": "plus",
    "peek": "enter", "why": "i", "zoom": "z", "ack_log": "l", "filter": "slash", "help": "question_mark",
    "command_palette": "ctrl+p", "quit": "q",
}


def rebind(bindings: dict[str, object]) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """``bindings`` (action name -> key, as config.toml gives them) applied to
    ``DEFAULT_KEYS``: the bindings kept, and ``(name, why)`` for each one left
    out (an unknown action, a key that is not a non-empty string, a key another
    action ends up with: the later binding is the one left out)."""
    from leash.core.base.tomllines import did_you_mean

    kept: dict[str, str] = {}
    left_out: list[tuple[str, str]] = []
    for name, key in bindings.items():
        if name not in DEFAULT_KEYS:
            left_out.append((name, f"is not an action of the console{did_you_mean(name, DEFAULT_KEYS)}"))
        elif not isinstance(key, str) or not key.strip():
            left_out.append((name, "must be a key name such as \"x\" or \"ctrl+x\""))
        else:
            kept[name] = key.strip()
    while True:  # a clash: leave out the latest binding in it, until none is left
        keys = {**DEFAULT_KEYS, **kept}
        holders: dict[str, list[str]] = {}
        for name, key in keys.items():
            holders.setdefault(key, []).append(name)
        clashing = [name for name in kept if len(holders[kept[name]]) > 1]
        if not clashing:
            return kept, left_out
        latest = clashing[-1]
        others = [name for name in holders[kept[latest]] if name != latest]
        left_out.append((latest, f"{kept[latest]!r} is already the key of {', '.join(others)}"))
        del kept[latest]
