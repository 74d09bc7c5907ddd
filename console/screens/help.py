"""The help screen: every key, what it does, and where it applies."""
from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from leash.console.keymap import EVERYWHERE, PANEL_TITLES, KeyAction, display
from leash.console.widgets.legend import legend_text


def help_table(actions: tuple[KeyAction, ...]) -> Table:
    table = Table(title="leash — keys", expand=True, show_edge=False)
    table.add_column("Key", style="bold cyan", no_wrap=True)
    table.add_column("Action")
    table.add_column("Applies to")
    table.add_column("Asks first", justify="center")
    for action in actions:
        where = "everywhere" if action.panels == EVERYWHERE else ", ".join(
            PANEL_TITLES[p] for p in PANEL_TITLES if p in action.panels)
        table.add_row(display(action.key), action.description, where, "yes" if action.changes_state else "")
    table.add_row("tab", "Next panel", "everywhere", "")
    table.add_row("home / end", "First / last row", "everywhere", "")
    table.add_row("escape", "Close a screen, clear the filter", "everywhere", "")
    return table


SCREENS_TEXT = (
    "\n[b]Screens[/b]\n"
    "  Ack log (l): every control action; filter by session/event/source, search, follow (f), chain status.\n"
    "  Peek (enter on a session): the pane's last lines, refreshed every second.\n"
    "  Palette (ctrl+p): every action by name — stop a session, acknowledge a halt, pardon a warrant...\n"
    "  Every state change asks first: y confirms, n or escape cancels; Cancel has the focus.\n"
    "  Keys can be remapped in config.toml, [console.keys] (e.g. stop = \"x\").\n"
)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape", "close", "Close"), Binding("question_mark", "close", "Close"),
                Binding("q", "close", "Close")]

    def __init__(self, actions: tuple[KeyAction, ...]) -> None:
        super().__init__()
        self.actions = actions

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-dialog"):
            yield Static(help_table(self.actions))
            yield Static(SCREENS_TEXT)
            yield Static(legend_text())  # what the summary line's and the Sessions panel's symbols stand for

    def action_close(self) -> None:
        self.dismiss(None)
