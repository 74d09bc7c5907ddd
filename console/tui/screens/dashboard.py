"""The dashboard: the console's main screen, its panels, their timers and its keys.

It lays out the panels of ``console.tui.panels`` (from ``WIDE_COLUMNS`` on the
grid, the panels across its top first; below it one panel at a time under a
tab strip; ``z`` zooms the focused one), the summary line, the detail line
and the filter, and owns the ``Feed`` that reads the core off the UI thread.
The app hands it each view (``show_view``); its timers redraw the counting
cells between views (a warrant's gate and an approval's time left each
``COUNTDOWN_SECONDS``, ages each ``AGES_SECONDS``). Its keys are the
keymap's (``console.tui.keymap``), bound on this screen, so they act only while
it is on top; each applies where the keymap says (the footer shows those
that apply to the focused panel). A key that changes state has the app
open its dialog (``run_operation``; an app without one gets
``OperationAsked``); the other keys show a panel, filter it, or open a
screen (peek, why, the ack log, help).

Keys typed at a dialog never reach this screen. Every key of the keymap,
and the table's own (``TABLE_KEYS``, tab), is a priority binding: Textual
reads each as it arrives, in the order typed, before it hands the next to a
widget (a key that opens a dialog acts on the row the keys before it chose).
``action_operate`` waits until the dialog's field has the focus
(``ConfirmScreen.opened``) before the next key is read, so the rest of a
reason typed in the same burst lands in the field; ``/`` gives the filter
the focus at once, and its Enter filters the panel at once, for the same
reason. For ``SETTLE_SECONDS`` after a dialog closes — or after a key that
would have opened one was refused — none of this screen's keys acts (nor
Enter's peek): what was typed on past the close, before the operator saw
it, does nothing (``key_clock``: monotonic, a test's own). It cannot see
typing that goes on longer than that, nor keys that reach another screen
(the log screen, help) on their own.

The detail line shows the selected row's whole text (the panel's ``detail``
in the registry); for a session, every rule that holds it (``core.why``,
read by the feed: the answer for the view before shows until the new one
comes, so nothing flickers).
"""
from __future__ import annotations

import time
from typing import AsyncIterator, Callable, Iterable, Iterator

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Input

from leash.console.tui.feed import Feed
from leash.console.tui.keymap import KeyAction, bindings, find
from leash.console.tui.palette import LeashCommands
from leash.console.tui.panels import BY_KEY, GRID, KEYS, PANELS, PanelSpec, numbered
from leash.console.tui.screens.acklog import AckLogScreen
from leash.console.tui.screens.confirm import SETTLE_SECONDS, ConfirmScreen, drained
from leash.console.tui.screens.help import HelpScreen
from leash.console.tui.screens.peek import Capture, PeekScreen
from leash.console.tui.screens.why import WhyScreen
from leash.console.tui.widgets.detail import DetailLine, session_detail
from leash.console.tui.widgets.footer import KeysFooter
from leash.console.tui.widgets.panel import Panel, PanelTable
from leash.console.tui.widgets.summary import SummaryBar
from leash.console.tui.widgets.tabs import PanelTabs
from leash.core.store.protocols import Backend
from leash.core.store.records import Change

COUNTDOWN_SECONDS = 0.5
AGES_SECONDS = 5.0
WIDE_COLUMNS = 120  # from this width on, the grid of panels; below it, one panel and a tab strip
# The focused table's keys, read as they arrive like the keymap's, so a key
# typed after them acts on the row and panel they chose: (key, PanelTable action).
TABLE_KEYS = (("up", "cursor_up"), ("down", "cursor_down"), ("pageup", "page_up"), ("pagedown", "page_down"),
              ("home", "scroll_top"), ("end", "scroll_bottom"), ("enter", "select_cursor"))
OPEN_WAIT_SECONDS = 2.0  # the longest a key that opens a dialog holds the keys after it


class DashboardScreen(Screen[None]):
    COMMANDS = {LeashCommands}
    AUTO_FOCUS = ""  # the first panel's table takes the focus (on_mount), not the first in the grid
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (WIDE_COLUMNS, "-wide")]
    # Every binding has an id, and the app's keymap names each (``keymap``): Textual
    # moves a remapped binding by taking its old key from every binding on it.
    BINDINGS = [Binding("escape", "clear_filter", "Clear the filter", show=False, priority=True, id="clear_filter"),
                Binding("enter", "filter_done", "Filter", show=False, priority=True, id="filter_done"),
                *bindings(),  # the keymap's, in its order (the footer's)
                *(Binding(key, f"table('{name}')", show=False, priority=True, id=f"table_{name}")
                  for key, name in TABLE_KEYS),
                *(Binding(key, f"next_panel({step})", show=False, priority=True, id=f"next_panel_{key}")
                  for key, step in (("tab", 1), ("shift+tab", -1)))]

    class OperationAsked(Message):
        """A key or a palette entry asks to change state: ``kind`` on ``row``
        (``panel``: the row is that panel's selected one, None when none is)."""

        def __init__(self, kind: str, row: dict | None = None, panel: str = "") -> None:
            super().__init__()
            self.kind, self.row, self.panel = kind, row, panel

    def __init__(self, backend: Backend, key_actions: tuple[KeyAction, ...], *, clock: Callable[[], float],
                 capture: Capture | None = None, list_tmux: Callable[[], list[dict]],
                 changes: AsyncIterator[Change] | None = None, watch: bool = True, check_tmux: bool = False,
                 key_clock: Callable[[], float] = time.monotonic) -> None:
        """``capture``: what peek reads a pane with (none: nothing to peek at);
        ``check_tmux``: ``list_tmux`` is the real server's (``Feed``);
        ``key_clock``: the seconds the settle after a dialog is measured in."""
        super().__init__()
        self.backend = backend
        self.key_actions = key_actions
        self.clock = clock
        self.capture = capture
        self.feed = Feed(backend, list_tmux=list_tmux, clock=clock, changes=changes, watch=watch,
                         check_tmux=check_tmux)
        self.view: dict = {}
        self._last_panel = self._shown_panel = KEYS[0]
        self._filter_panel = KEYS[0]
        self._why: dict[str, dict] = {}  # row key -> core.why's answer, for the view shown now
        self._why_before: dict[str, dict] = {}  # the answers for the view before
        self.key_clock = key_clock
        self._settle_until = float("-inf")  # key_clock's time until which no key acts here

    def keymap(self) -> dict[str, str]:
        """The app's Textual keymap (``App.set_keymap``): the key of every
        binding of this screen by its id, as [console.keys] remaps them; empty
        when it remaps none."""
        keys = {binding.id: binding.key for binding in self.BINDINGS if isinstance(binding, Binding) and binding.id}
        chosen = keys | {action.id: action.key for action in self.key_actions}
        # Nothing remapped: no keymap at all. Textual applies the keymap to
        # every binding each time it reads the bindings (each key, each footer
        # look), and a keymap of every binding on its own key was 7 % of the
        # console's time to change nothing.
        return {} if chosen == keys else chosen

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        # The width's class before the panels mount, so each is styled for it
        # once: Textual adds it at the first resize otherwise, and a class on
        # the screen styles every node under it again (5 % of a start). Read
        # from the same breakpoints Textual reads at every resize after.
        width = self.app.size.width
        shown = max((at, name) for at, name in self.HORIZONTAL_BREAKPOINTS if width >= at)[1]
        for _, name in self.HORIZONTAL_BREAKPOINTS:
            self.set_class(name == shown, name)
        yield SummaryBar(id="summary")
        yield PanelTabs([(number, spec.key, spec.short) for number, spec in numbered()], id="panel-tabs")
        with Container(id="panels"):
            for spec in GRID:
                yield spec.build()
        yield DetailLine(id="detail")
        yield Input(placeholder="filter the focused panel (escape clears)", id="filter")
        yield KeysFooter()
        yield self.feed

    def on_mount(self) -> None:
        self._activate(self._last_panel)
        self.panel(self._last_panel).table.focus()
        self.set_interval(COUNTDOWN_SECONDS, self.tick_countdown)
        self.set_interval(AGES_SECONDS, self.tick_ages)

    def panel(self, name: str) -> Panel:
        return self.query_one(f"#panel-{name}", Panel)

    def _present(self, specs: Iterable[PanelSpec]) -> Iterator[tuple[PanelSpec, Panel]]:
        """Each of ``specs`` with its panel, while it is there."""
        for spec in specs:
            panel = self._whole_panel(spec.key)
            if panel is not None:
                yield spec, panel

    def _whole_panel(self, name: str) -> Panel | None:
        """Panel ``name`` while it has its table: at shutdown Textual removes a
        panel's table before the panel, and a tick or a read can land between."""
        panel = self.query_one_optional(f"#panel-{name}", Panel)
        return panel if panel is not None and panel.query_one_optional(PanelTable) is not None else None

    def _activate(self, name: str) -> None:
        """Make ``name`` the panel shown on a narrow screen, zoomed, and named by the tab strip."""
        self._shown_panel = name
        for panel in self.query(Panel):
            panel.set_class(panel.key == name, "-active")
        for tabs in self.query(PanelTabs):
            tabs.show_panel(name)
        self.show_detail()

    def focused_panel(self) -> str:
        widget = self.focused
        if isinstance(widget, PanelTable):
            self._last_panel = widget.panel
        return self._last_panel

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A key of the keymap acts where it applies (the focused panel), and
        none while a screen is above this one (the footer under a dialog shows
        none) or the filter has the focus (its keys are the filter's); none
        acts while settling after a dialog (the footer shows them dimmed), nor
        does Enter's peek. The table's keys act on a focused table."""
        if action in ("clear_filter", "filter_done"):
            box = self.query_one_optional("#filter", Input)
            shown = box is not None and box.has_class("visible") and self.is_active
            return shown and (action == "clear_filter" or self.focused is box)
        if action in ("table", "next_panel"):
            on_table = self.is_active and isinstance(self.focused, PanelTable)
            return on_table and not (parameters == ("select_cursor",) and self.settling())
        found = find(self.key_actions, str(parameters[0]) if action == "operate" and parameters else action)
        if found is None:
            return True
        if not self.is_active or self.focused_panel() not in found.panels or isinstance(self.focused, Input):
            return False
        return None if self.settling() else True

    # ------------------------------------------------------------ keys typed at a dialog
    def settling(self) -> bool:
        """A dialog closed (or was refused) less than ``SETTLE_SECONDS`` ago."""
        return self.key_clock() < self._settle_until

    def _settle(self) -> None:
        """A dialog closes or a key that opens one is refused: the keys typed on do nothing for a while."""
        self._settle_until = self.key_clock() + SETTLE_SECONDS
        self.refresh_bindings()
        self.set_timer(SETTLE_SECONDS, self.refresh_bindings)  # the footer's keys lit again

    # ------------------------------------------------------------ the view
    def show_view(self, view: dict) -> None:
        """Each panel shows its slice of ``view`` (``core.views.fleet.view``)."""
        self.view = view
        self._why_before, self._why = self._why, {}  # shown until the new answer comes, so nothing flickers
        now = self.clock()
        self._show_summary(now)
        for spec, panel in self._present(PANELS):
            panel.show(spec.rows(view), now)
        self.show_detail()

    def _show_summary(self, now: float) -> None:
        bar = self.query_one_optional(SummaryBar)
        if bar is not None:
            bar.show(self.view["summary"], self.view["problems"], now)

    def tick_countdown(self) -> None:
        """The counting-down cells: a warrant's gate, an approval's time left (and its urgency in the summary)."""
        now = self._tick("countdown")
        if now is not None:
            self._show_summary(now)
            if BY_KEY[self._last_panel].tick == "countdown":
                self.show_detail()

    def tick_ages(self) -> None:
        self._tick("ages")

    def _tick(self, kind: str) -> float | None:
        """Redraw the panels whose cells count (``PanelSpec.tick``) as of now; the time, or None before any view."""
        if not self.view:
            return None
        now = self.clock()
        for spec, panel in self._present(spec for spec in PANELS if spec.tick == kind):
            panel.show(spec.rows(self.view), now)
        return now

    # ------------------------------------------------------------ the detail line
    def show_detail(self) -> None:
        """The selected row's whole text; a session's rules come from the feed."""
        name = self.focused_panel()
        panel, line = self._whole_panel(name), self.query_one_optional(DetailLine)
        if panel is None or line is None:
            return
        row = panel.selected()
        detail = BY_KEY[name].detail
        if row is None:
            line.show("nothing selected")
        elif detail is not None:
            line.show(detail(row, self.clock()))
        else:
            fresh = self._why.get(row["key"])
            line.show(session_detail(row, fresh or self._why_before.get(row["key"])))
            if fresh is None:
                self.feed.explain(row)

    @on(Feed.Explained)
    def _explained(self, message: Feed.Explained) -> None:
        if message.asked:
            self.app.push_screen(WhyScreen(message.answer))
            return
        self._why[message.key] = message.answer
        self.show_detail()

    @on(PanelTable.RowHighlighted)
    def _row_highlighted(self) -> None:
        self.show_detail()

    # ------------------------------------------------------------ showing a panel
    def action_focus_panel(self, name: str) -> None:
        self._last_panel = name
        self._activate(name)
        self.set_focus(self.panel(name).table)  # now: a key read next acts on this panel
        self.call_after_refresh(self._focus_shown, name)  # a panel just shown can take the focus once laid out
        self.refresh_bindings()

    def _focus_shown(self, name: str) -> None:
        panel = self._whole_panel(name)
        if panel is None or not self.is_active or self._last_panel != name or isinstance(self.focused, Input):
            return  # (nor from the filter, given the focus meanwhile)
        table = panel.table
        self.set_focus(table)
        table.move_cursor(row=table.cursor_row, animate=False)  # scrolled to the cursor at its new size

    def action_table(self, name: str) -> None:
        """One of ``TABLE_KEYS`` on the focused table."""
        table = self.focused
        if isinstance(table, PanelTable):
            getattr(table, f"action_{name}")()

    def action_next_panel(self, step: int = 1) -> None:
        index = KEYS.index(self.focused_panel())
        self.action_focus_panel(KEYS[(index + step) % len(KEYS)])

    def action_zoom(self) -> None:
        self.toggle_class("-zoomed")
        self.action_focus_panel(self.focused_panel())

    def on_descendant_focus(self) -> None:
        name = self.focused_panel()
        if name != self._shown_panel:
            self._activate(name)
        if isinstance(self.focused, PanelTable):  # however it got there (a click): the detail line follows
            self.show_detail()
        self.refresh_bindings()

    @on(PanelTabs.TabActivated)
    def _tab_clicked(self, event: PanelTabs.TabActivated) -> None:
        name = (event.tab.id or "").removeprefix("tab-")
        if event.tabs.active != event.tab.id:  # a tab this screen showed and has moved on from (5 then 1, fast)
            return
        if name in KEYS and name != self._last_panel:
            self.action_focus_panel(name)

    # ------------------------------------------------------------ the filter
    def action_filter(self) -> None:
        self._filter_panel = self.focused_panel()
        box = self.query_one("#filter", Input)
        box.add_class("visible")
        box.value = self.panel(self._filter_panel).filter_text
        box.placeholder = f"filter {self._filter_panel} (escape clears)"
        self.set_focus(box)  # now: the keys read after '/' are the filter's

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.panel(self._filter_panel).set_filter(event.value, self.clock())

    async def action_filter_done(self) -> None:
        """Enter in the filter: once it has what was typed before, the panel is
        filtered by it and has the focus (a key read next acts on its rows)."""
        await drained(self.focused)
        panel = self.panel(self._filter_panel)
        panel.set_filter(self.query_one("#filter", Input).value, self.clock())
        self.set_focus(panel.table)

    async def action_clear_filter(self) -> None:
        """Escape, while the filter shows: clear it and give the panel the focus back."""
        await drained(self.focused)
        box = self.query_one("#filter", Input)
        if not box.has_class("visible"):
            return
        box.value = ""
        box.remove_class("visible")
        panel = self.panel(self._filter_panel)
        panel.set_filter("", self.clock())
        self.set_focus(panel.table)

    # ------------------------------------------------------------ screens
    def _selected(self, panel: str) -> dict | None:
        row = self.panel(panel).selected()
        if row is None:
            self.notify(f"Select a row in {panel} first.", severity="warning")
        return row

    def action_peek(self) -> None:
        row = self._selected("sessions")
        if row is not None:
            self.peek(row)

    def peek(self, row: dict) -> None:
        if not row.get("in_tmux") or self.capture is None:
            self.notify(f"{row['name']} has no tmux pane to peek at.", severity="warning")
            return
        self.app.push_screen(PeekScreen(row.get("local_tmux") or row["tmux_session"], self.capture))

    @on(PanelTable.RowSelected)
    def _row_selected(self, event: PanelTable.RowSelected) -> None:
        peek = find(self.key_actions, "peek")
        if self.settling():
            return
        if getattr(event.data_table, "panel", "") == "sessions" and peek is not None and peek.key == "enter":
            self.action_peek()

    def action_why(self) -> None:
        row = self._selected("sessions")
        if row is not None:
            self.feed.explain_in_full(row)

    def action_ack_log(self) -> None:
        self.app.push_screen(AckLogScreen(self.backend.acklog))

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(self.key_actions))

    # ------------------------------------------------------------ keys that change state
    def ask(self, kind: str, row: dict | None = None) -> None:
        """Ask the app to confirm and run ``kind`` on ``row`` (the palette's entries)."""
        self._open(kind, row)

    def _open(self, kind: str, row: dict | None, panel: str = "") -> ConfirmScreen | None:
        """Have the app open the dialog of ``kind`` now (``run_operation``; an
        app without it gets ``OperationAsked``): the dialog, or None when the
        app refused (it says why). The dialog's close starts the settle."""
        run_operation = getattr(self.app, "run_operation", None)
        if run_operation is None:
            self.post_message(self.OperationAsked(kind, row, panel))
            return None
        run_operation(kind, row, panel=panel)
        dialog = self.app.screen
        if not isinstance(dialog, ConfirmScreen):
            self._settle()
            return None
        dialog.when_closed(self._settle)
        return dialog

    async def action_operate(self, kind: str) -> None:
        """The key of ``kind``: open its dialog on the selected row of the panel
        it acts on (``KeyAction.on``: a lock asks for its entity from the Locks
        panel), and hold the keys typed after this one until its field has the focus."""
        action = find(self.key_actions, kind)
        panel = action.on if action is not None and action.on == self.focused_panel() else ""
        dialog = self._open(kind, self.panel(panel).selected() if panel else None, panel)
        if dialog is not None:
            await dialog.opened(OPEN_WAIT_SECONDS)
