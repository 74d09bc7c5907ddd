"""Command palette (ctrl+p) of the dashboard: every action by name, for every row it applies to.

"Stop session agent-3", "Acknowledge halt three_strikes on s1", "Pardon
warrant agent-7", "Release ezra", "Reset breaker gateway", "Allow Bash for
agent-3", "Deny Edit for agent-5", "Raise cap daily (fleet)", "Fleet stop",
"Open the ack log"... Each runs the same confirmation flow as its key
(``DashboardScreen.ask``). Only what the core's view says can be done is
offered: a session's resume while a stop holds it (its state ``stopped``), the
fleet's while a fleet stop is filed.
The provider is the dashboard's (``DashboardScreen.COMMANDS``): ``self.screen`` is
the dashboard the palette was opened over, and its view names the rows.

Entry names hold agent text (session ids, halt conditions, breaker names):
they are shown as plain ``Content`` with control characters escaped, and the
help line (which the palette parses as markup) has its brackets escaped.
"""
from __future__ import annotations

from functools import partial
from typing import Callable, Protocol, cast

from textual.command import DiscoveryHit, Hit, Hits, Matcher, Provider
from textual.content import Content

from leash.console.tui.widgets.budget import bucket_text
from leash.core.base.text import printable


class PaletteHost(Protocol):
    """What the palette reads of the screen that provides it (the dashboard):
    the view it shows, and the calls its entries make. A protocol, so the
    palette and the dashboard do not import each other."""
    view: dict

    def ask(self, kind: str, row: dict | None) -> None: ...
    def action_ack_log(self) -> None: ...
    def action_help(self) -> None: ...
    def peek(self, row: dict) -> None: ...

NAME_LIMIT = 120
STOPPED = "stopped"  # the state the core's view gives a session a stop holds (core.views.fleet)
Entry = tuple[str, Callable[[], object], str]  # (name, what it does, help)


def _markup_escaped(text: str) -> str:
    """The palette renders a hit's help as markup: every bracket escaped shows as itself."""
    return printable(text).replace("[", "\\[")


def _highlighted(matcher: Matcher, name: str) -> Content:
    """``name`` as plain content with the query's letters highlighted (the
    matcher's own highlight would parse the name as markup)."""
    content = Content(name)
    _, offsets = matcher.fuzzy_search.match(matcher.query, name)
    for offset in offsets:
        if not name[offset].isspace():
            content = content.stylize(matcher.match_style, offset, offset + 1)
    return content


class LeashCommands(Provider):
    def _entries(self) -> list[Entry]:
        dashboard = cast(PaletteHost, self.screen)  # the provider of DashboardScreen.COMMANDS only
        view, ask = dashboard.view, dashboard.ask
        entries: list[Entry] = [
            ("Fleet stop", partial(ask, "fleet_stop", None), "Stop every session"),
            ("Open the ack log", dashboard.action_ack_log, "Every control action"),
            ("Help: keys and screens", dashboard.action_help, "What every key does"),
            ("Lock an entity hands-off", partial(ask, "hands_off", {}), "A name or path:<glob>"),
        ]
        if view.get("summary", {}).get("fleet_stopped"):
            entries.insert(1, ("Resume the fleet", partial(ask, "fleet_resume", None), "Lift the fleet stop"))
        for row in view.get("sessions", []):
            name = printable(row["name"], limit=NAME_LIMIT)
            entries.append((f"Stop session {name}", partial(ask, "stop", row), row["state"]))
            if row["state"] == STOPPED:
                entries.append((f"Resume session {name}", partial(ask, "resume", row), row["state"]))
            entries += [(f"Lock session {name} hands-off", partial(ask, "hands_off", row), ""),
                        (f"Peek at session {name}", partial(dashboard.peek, row), "")]
            if row.get("in_tmux"):
                entries.append((f"File warrant against {name}", partial(ask, "warrant", row), ""))
        for row in view.get("halts", []):
            label = printable(f"{row.get('condition_name') or row['halt_type']} on {row['session_id']}",
                              limit=NAME_LIMIT)
            for verb, op in (("Acknowledge", "acknowledge"), ("Dismiss", "dismiss"), ("Escalate", "escalate")):
                entries.append((f"{verb} halt {label}", partial(ask, op, row), row["severity"]))
        for row in view.get("warrants", []):
            entries.append((f"Pardon warrant {printable(row.get('target'), limit=NAME_LIMIT)}",
                            partial(ask, "pardon", row),
                            row.get("state", "")))
        for row in view.get("locks", []):
            entries.append((f"Release {printable(row['entity'], limit=NAME_LIMIT)}",
                            partial(ask, "release", row), ""))
        for row in view.get("loops", []):
            entries.append((f"Reset breaker {printable(row['name'], limit=NAME_LIMIT)}",
                            partial(ask, "loop_reset", row),
                            "TRIPPED" if row.get("tripped") else ""))
        for row in view.get("approvals", []):
            label = printable(f"{row.get('tool')} for {row.get('session')}", limit=NAME_LIMIT)
            for verb, op in (("Allow", "allow"), ("Deny", "deny")):
                entries.append((f"{verb} {label}", partial(ask, op, row), str(row.get("summary") or "")))
        for row in view.get("budget", []):
            label = printable(f"{row.get('cap')} ({bucket_text(row)})", limit=NAME_LIMIT)
            entries.append((f"Raise cap {label}", partial(ask, "raise_cap", row), "HELD" if row.get("held") else ""))
        return entries

    async def discover(self) -> Hits:
        for name, callback, help_text in self._entries()[:5]:
            yield DiscoveryHit(Content(name), callback, text=name, help=_markup_escaped(help_text))

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, callback, help_text in self._entries():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, _highlighted(matcher, name), callback, text=name, help=_markup_escaped(help_text))
