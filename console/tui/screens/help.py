"""The help screen: every key, what it does, and where it applies; the
screens; and how a confirmation dialog is typed at and confirmed."""
from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from leash.console.tui.keymap import EVERYWHERE, PANEL_TITLES, KeyAction, display
from leash.console.tui.screens.confirm import CANCEL_KEY, CONFIRM_KEY, SETTLE_SECONDS
from leash.console.tui.widgets.legend import legend_text


def help_table(actions: tuple[KeyAction, ...]) -> Table:
    table = Table(title="leash — keys", expand=True, show_edge=False)
    table.add_column("Key", style="bold cyan", no_wrap=True)
    table.add_column("Action")
    table.add_column("Applies to")
    table.add_column("Asks first (Dialogs, below)", justify="center")
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
    "  Keys can be remapped in config.toml, [console.keys] (e.g. stop = \"x\").\n"
)
DIALOGS_TEXT = (
    "\n[b]Dialogs[/b] (every state change asks first)\n"
    "  The cursor starts in the reason, note or message (or the field the action needs, a lock's entity):\n"
    "  type it straight after the key. Letters in a field are text: y, n and i too.\n"
    f"  {CONFIRM_KEY} confirms, {CANCEL_KEY} or escape cancels, from anywhere.\n"
    "  enter: the next field; from the last, the confirm button (enter again presses it).\n"
    "  On a button: y confirms, n cancels, i ticks 'also interrupt'. tab moves; space or enter on a box\n"
    "  ticks it ('continue with caution' is ticked only that way).\n"
    f"  For {SETTLE_SECONDS:g} s after a dialog closes the main screen's keys do nothing (typing that ran on).\n"
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
            yield Static(DIALOGS_TEXT)

    def action_close(self) -> None:
        self.dismiss(None)
