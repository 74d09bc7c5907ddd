"""The leash console: seven live panels and a key for every control action.

The app holds no policy. Every read and write goes through one ``Backend``
(``backend=``, default the home's file backend). Reading the view runs in
worker threads (``core.fleet.view`` over the backend), tmux is polled every 1.5 s in a thread, and the view is
read again on each ``Change`` of the app's change stream (an exclusive
worker), so the UI thread only ever renders. The change stream is any async
iterator of ``Change`` records: by default the backend's ``changes()`` (for
the file backend, the home watched with a ~150 ms debounce), or the one given
as ``changes=`` (a daemon's ``subscribe`` stream). Every key that changes
state opens the confirmation modal and then calls the backend's stores
(``console.operations``); the result is in the store for the CLI, the hooks
and the kennel at once, and the change stream brings it back to the screen.

When no other kennel is running the console runs one of its own (in a thread
with its own event loop), so a warrant filed with ``w`` is worked at once.

At any size: below ``WIDE_COLUMNS`` the main screen shows one panel at a time
at full width under a tab strip (``1``-``7`` and ``tab`` switch), from there
on the grid (the Approvals panel across its top); ``z`` zooms the focused
panel. The detail line above the footer shows the selected row's whole text;
for a session, every rule that holds it (``core.why``, read in a worker
thread); for an approval, the whole command or diff. The main screen's keys
act only while it is on top. SIGTERM and SIGHUP end the app the way ``q``
does, so the terminal is restored.

What an operator must hear of at once raises a notification: a new approval
waiting and a new critical halt also ring the terminal (the bell, and an OSC 9
desktop notification, ``leash: approval waiting: SESSION TOOL``, its text
escaped); an executed warrant and a tripped breaker ring the bell. A served
console (``leash serve``) writes them to the browser's terminal and answers
approvals ``via`` "serve".

Agent text is data: every widget shows it as plain text, never as markup, and
with its control characters escaped (``core.text.printable``); notifications
never parse markup either.
"""
from __future__ import annotations

import gc
import time
from typing import AsyncIterator, NamedTuple

from textual import on, work
from textual.app import App, ComposeResult
from textual.containers import Container
from textual.widgets import Footer, Input

from leash.console.app_operations import ConsoleOperations, OperationKeys
from leash.console.commands import LeashCommands
from leash.console.ending import EndsOnSignals
from leash.console.keymap import PANELS, keymap
from leash.console.screens.acklog import AckLogScreen
from leash.console.screens.confirm import ConfirmScreen
from leash.console.screens.help import HelpScreen
from leash.console.screens.peek import PeekScreen
from leash.console.screens.why import WhyScreen
from leash.console.widgets.acktail import AckTailPanel
from leash.console.widgets.approvals import ApprovalsPanel
from leash.console.widgets.detail import DetailLine, detail_text
from leash.console.widgets.halts import HaltsPanel
from leash.console.widgets.locks import LocksPanel
from leash.console.widgets.loops import LoopsPanel
from leash.console.widgets.panel import Panel, PanelTable
from leash.console.widgets.sessions import SessionsPanel
from leash.console.widgets.summary import SummaryBar
from leash.console.widgets.tabs import PanelTabs
from leash.console.widgets.warrants import WarrantsPanel
from leash.core.base.text import printable
from leash.core.store.records import Change
from leash.core.views.fleet import MAX_ROWS  # rows per panel; the title shows the full count

TMUX_POLL_SECONDS = 1.5
COUNTDOWN_SECONDS = 0.5
AGES_SECONDS = 5.0
WATCH_DEBOUNCE_MS = 150
UNSHOWN_STORES = frozenset({"kennels"})  # a kennel's heartbeat (each second) changes nothing a panel shows
KENNEL_WATCH_SECONDS = 0.1  # how soon the console's kennel notices the console has gone
NOTIFY_LIMIT = 300  # characters of a notification's message
DESKTOP_LIMIT = 160  # characters of an OSC 9 desktop notification's text
DESKTOP_PREFIX = "leash: "  # never a digit first: OSC 9;<n> means other things to some terminals
ALERTED_OUTCOMES = frozenset({"executed", "undelivered"})  # a warrant's end an operator must hear of
WIDE_COLUMNS = 120  # from this width on, the grid of seven panels; below it, one panel and a tab strip
# In the grid's order: the approvals across the top, then two by two (the keys follow ``keymap.PANELS``).
PANEL_CLASSES = (ApprovalsPanel, SessionsPanel, HaltsPanel, WarrantsPanel, LocksPanel, LoopsPanel, AckTailPanel)


class Alert(NamedTuple):
    title: str
    message: str
    desktop: str = ""  # an OSC 9 notification's text too
    severity: str = "error"


def alerts_of(data: dict) -> dict[str, dict[str, Alert]]:
    """What an operator must hear of when it is new, by kind and id: an approval
    waiting, a critical halt, a warrant executed or undelivered, a tripped breaker."""
    approvals = {}
    for row in data.get("approvals", []):
        what = f"{row.get('session') or row.get('session_id')} {row.get('tool')}"
        approvals[row["id"]] = Alert(f"Approval waiting: {what}", str(row.get("summary") or ""),
                                     f"approval waiting: {what}", "warning")
    critical = {}
    for halt in data["halts"]:
        if halt["severity"] == "critical":
            what = f"{halt.get('condition_name') or halt['halt_type']} on {halt.get('session') or halt['session_id']}"
            critical[halt["halt_id"]] = Alert(f"Critical halt: {what}", halt["description"][:120],
                                              f"critical halt: {what}")
    executed = {warrant["id"]: Alert(f"Warrant {warrant['outcome']}: {warrant['warrant']['target']}",
                                     _warrant_end(warrant))
                for warrant in data["finished_warrants"] if warrant.get("outcome") in ALERTED_OUTCOMES}
    tripped = {loop["name"]: Alert(f"Restart-loop breaker tripped: {loop['name']}", "auto-resume is skipped")
               for loop in data["loops"] if loop.get("tripped")}
    return {"approvals": approvals, "critical": critical, "executed": executed, "tripped": tripped}


def _warrant_end(warrant: dict) -> str:
    """How a warrant ended, in the core's words, and the attempt it ended at
    of the number its dog made (``attempt_label``: the record's own count)."""
    from leash.core.state.warrants.records import attempt_label

    reason = str(warrant.get("log_reason") or warrant["outcome"])[:120]
    return f"{reason} (attempt {attempt_label(warrant)})"


def desktop_notification(text: str) -> str:
    """An OSC 9 notification of ``text``: one line, controls escaped (none can end it early)."""
    return f"\x1b]9;{printable(DESKTOP_PREFIX + text, limit=DESKTOP_LIMIT)}\x07"


class LeashApp(OperationKeys, EndsOnSignals, App):
    CSS_PATH = "leash.tcss"
    TITLE = "leash"
    COMMANDS = App.COMMANDS | {LeashCommands}
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (WIDE_COLUMNS, "-wide")]

    def __init__(self, home=None, *, tmux=None, list_tmux=None, run_kennel: bool = True, watch: bool = True,
                 clock=time.time, source: str | None = None, on_exit=None, read_only: bool = False,
                 on_hangup=None, backend=None, changes: AsyncIterator[Change] | None = None):
        """``backend``: the stores every key reads and writes (default
        ``backend_for(home)``). ``changes``: the stream the live view follows
        (default ``backend.changes()``); ``watch=False`` follows none."""
        from leash.core.base.config import load_config
        from leash.core.base.home import ensure_home
        from leash.core.base.source import default_source
        from leash.core.store.select import backend_for

        super().__init__()
        self.home = ensure_home(home)
        self.backend = backend if backend is not None else backend_for(self.home)
        self.change_stream = changes  # any async iterator of Change; None: the backend's own
        config = load_config(self.home)
        self.key_actions = keymap(config["console"]["keys"])
        self.tmux = tmux
        self.list_tmux = list_tmux or (tmux.list_sessions if tmux is not None else (lambda: []))
        self.want_kennel = run_kennel
        self.read_only = read_only  # keys that change state only say so
        self._unmounted = False
        self.want_watch = watch
        self.clock = clock
        self.source = source or default_source()
        self.operations = ConsoleOperations(self.backend, self.source, home=self.home)  # ``via`` set once mounted
        self.view_data: dict = {}
        self.tmux_sessions: list[dict] = []
        self.kennel = None
        self.on_exit_callback = on_exit
        self.on_hangup = on_hangup  # run when the terminal hung up and the app could not end by itself
        self._seen: dict[str, set] | None = None
        self._refreshing = False
        self._refresh_again = False
        self._filter_panel = "sessions"
        self._last_panel = "sessions"
        self._shown_panel = ""  # the panel the tab strip, the detail line and a narrow screen show
        self._why: dict[str, dict] = {}  # row key -> core.why's answer, for the view shown now
        self._why_before: dict[str, dict] = {}  # the answers for the view before
        self._kennel_thread = None
        for action in self.key_actions:
            if action.name == "command_palette":
                continue
            self.bind(action.key, action.name, description=action.description,
                      show=not action.name.startswith("focus_panel") and action.name != "peek")

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield SummaryBar(id="summary")
        yield PanelTabs(id="panel-tabs")
        with Container(id="panels"):
            for panel_class in PANEL_CLASSES:
                yield panel_class()
        yield DetailLine(id="detail")
        yield Input(placeholder="filter the focused panel (escape clears)", id="filter")
        yield Footer()

    def on_mount(self) -> None:
        self.operations.via = "serve" if self.is_web else "console"
        self._activate("sessions")
        self.panel("sessions").table.focus()
        if not self.is_headless:
            self._catch_ending_signals()
        try:
            self.tmux_sessions = self.list_tmux()
        except Exception:
            self.tmux_sessions = []
        self.refresh_view()
        if self.want_watch:
            self.watch_changes()
        if self.tmux is not None or self.list_tmux is not None:
            self.set_interval(TMUX_POLL_SECONDS, self.poll_tmux)
        self.set_interval(COUNTDOWN_SECONDS, self.tick_countdown)
        self.set_interval(AGES_SECONDS, self.tick_ages)
        if self.want_kennel:
            self.start_kennel()

    def on_unmount(self) -> None:
        self._restore_signal_handlers()
        self._unmounted = True  # the kennel's thread sees it even if it starts after this
        gc.unfreeze()  # (frozen by the first view) collectable again once the app is gone
        if self.kennel is not None:
            self.kennel.request_stop()
        if self.on_exit_callback is not None:
            self.on_exit_callback()

    def panel(self, name: str) -> Panel:
        return self.query_one(f"#panel-{name}", Panel)

    def _dashboard_gone(self) -> bool:
        """True while the app shuts down: Textual removes the panels (one by
        one, with awaits between) before the timers and workers that feed them
        have stopped."""
        return len(self.query(Panel)) < len(PANELS) or not self.query(SummaryBar) or not self.query(DetailLine)

    def _on_main_screen(self) -> bool:
        return self.screen is self.screen_stack[0]

    def _activate(self, name: str) -> None:
        """Make ``name`` the panel shown on a narrow screen, zoomed, and named by the tab strip."""
        self._shown_panel = name
        for panel in self.query(Panel):
            panel.set_class(panel.PANEL == name, "-active")
        for tabs in self.query(PanelTabs):
            tabs.show_panel(name)
        self.show_detail()

    def focused_panel(self) -> str:
        widget = self.focused
        if isinstance(widget, PanelTable):
            self._last_panel = widget.panel
        return self._last_panel

    # ------------------------------------------------------------ data
    def refresh_view(self) -> None:
        """Read the home again. One read at a time: a request while one runs is
        remembered and served once, right after it (reads never pile up)."""
        if self._refreshing:
            self._refresh_again = True
            return
        self._refreshing = True
        self._read_view()

    @work(thread=True, group="view")
    def _read_view(self) -> None:
        from leash.core.views.fleet import view

        try:
            data = view(backend=self.backend, tmux_sessions=self.tmux_sessions, now=self.clock())
        except Exception as exc:  # never let a bad file take the console down
            data = None
            self.call_from_thread(self.notify, f"cannot read the state home: {exc}", severity="error")
        self.call_from_thread(self._view_read, data)

    def _view_read(self, data: dict | None) -> None:
        self._refreshing = False
        if data is not None:
            first = not self.view_data
            self.apply_view(data)
            if first:
                gc.freeze()  # what the first view built lives on: the collector's full passes skip it (stalls)
        if self._refresh_again:
            self._refresh_again = False
            self.refresh_view()

    def apply_view(self, data: dict) -> None:
        if self._dashboard_gone():
            return
        self.view_data = data
        self._why_before, self._why = self._why, {}  # shown until the new answer comes, so nothing flickers
        now = self.clock()
        self.query_one(SummaryBar).show(data["summary"], data["problems"], now)
        for name in PANELS:  # each panel shows the view's list of the same name
            self.panel(name).show(data[name][:MAX_ROWS] if name != "acklog" else data[name][-MAX_ROWS:], now)
        self.show_detail()
        self._notify_changes(data)

    # ------------------------------------------------------------ detail line
    def show_detail(self) -> None:
        """The selected row's whole text; a session's rules come from a worker."""
        if self._dashboard_gone():
            return
        panel = self.focused_panel()
        row = self.panel(panel).selected()
        fresh = self._why.get(row["key"]) if panel == "sessions" and row else None
        answer = fresh or (self._why_before.get(row["key"]) if panel == "sessions" and row else None)
        self.query_one(DetailLine).show(detail_text(panel, row, self.clock(), answer))
        if panel == "sessions" and row and fresh is None:
            self._explain(row)

    @staticmethod
    def _tmux_id(row: dict) -> str:
        return row.get("tmux_session_id") or ""

    @work(thread=True, exclusive=True, group="why")
    def _explain(self, row: dict) -> None:
        try:
            answer = self._why_now(row)
        except Exception:  # never let a bad file take the console down; the row's own state still shows
            return
        self.call_from_thread(self._explained, row["key"], answer)

    def _why_now(self, row: dict) -> dict:
        """``core.why`` in a unit of the halt store's kept reader (opening the
        store per answer would make changes the change stream reports)."""
        from leash.core.state.halts.store import HaltStoreUnavailable
        from leash.core.views.why import why

        now = self.clock()
        try:
            with self.backend.halts.reading(now=now) as unit:
                return why(session=row["name"], now=now, tmux_session_id=self._tmux_id(row), halts=unit,
                           backend=self.backend)
        except HaltStoreUnavailable:
            return why(session=row["name"], now=now, tmux_session_id=self._tmux_id(row), backend=self.backend)

    def _explained(self, key: str, answer: dict) -> None:
        self._why[key] = answer
        self.show_detail()

    @on(PanelTable.RowHighlighted)
    def _row_highlighted(self) -> None:
        self.show_detail()

    def _notify_changes(self, data: dict) -> None:
        """Alert on what an operator must hear of at once (``alerts_of``); none
        for what the first view shows."""
        current = alerts_of(data)
        if self._seen is not None:
            for kind, alerts in current.items():
                for key, alert in alerts.items():
                    if key not in self._seen[kind]:
                        self._alert(alert.title, alert.message, desktop=alert.desktop, severity=alert.severity)
        self._seen = {kind: set(alerts) for kind, alerts in current.items()}

    def notify(self, message: str, *, title: str = "", severity="information", timeout: float | None = None,
               markup: bool = False) -> None:
        """Every notification, from any widget: plain text (``markup`` is
        ignored: messages name agent things), one line, controls escaped. While
        a confirmation is up it shows on the dialog's notice line (no toast
        covers the dialog; the toast shows once it closes, if still due)."""
        message, title = printable(message, limit=NOTIFY_LIMIT), printable(title, limit=NOTIFY_LIMIT)
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)
        try:
            dialog = self.screen_stack[-1]
        except IndexError:
            return
        if isinstance(dialog, ConfirmScreen):  # call_later: notify may be called from any thread
            self.call_later(dialog.show_notice, f"{title}: {message}" if title else message, severity)

    def _alert(self, title: str, message: str, *, desktop: str = "", severity="error") -> None:
        """A notification and the bell; ``desktop``: an OSC 9 notification's text too."""
        self.notify(message, title=title, severity=severity, timeout=10)
        self.bell()
        if desktop:
            self.write_to_terminal(desktop_notification(desktop))

    def write_to_terminal(self, sequence: str) -> None:
        """Write ``sequence`` raw to the terminal the app runs in (as ``bell()``
        does; a served console's goes to the browser's); nothing when headless."""
        if not self.is_headless and self._driver is not None:
            self._driver.write(sequence)

    @work(thread=True, exclusive=True, group="tmux")
    def poll_tmux(self) -> None:
        try:
            sessions = self.list_tmux()
        except Exception:
            sessions = []
        if sessions != self.tmux_sessions:
            self.tmux_sessions = sessions
            self.call_from_thread(self.refresh_view)

    @work(exclusive=True, group="watch")
    async def watch_changes(self) -> None:
        """Read the view again on each change to a store the panels show; the
        stream is closed when the worker ends (the app quits), so a file
        watcher's thread stops too."""
        stream = self.change_stream
        if stream is None:
            stream = self.backend.changes(debounce_ms=WATCH_DEBOUNCE_MS)
        try:
            async for change in stream:
                if change.store not in UNSHOWN_STORES:
                    self.refresh_view()
        finally:
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()

    def tick_countdown(self) -> None:
        """The counting-down cells: a warrant's gate, an approval's time left (and its urgency in the summary)."""
        if self.view_data and not self._dashboard_gone():
            now = self.clock()
            for name in ("warrants", "approvals"):
                self.panel(name).show(self.view_data[name][:MAX_ROWS], now)
            self.query_one(SummaryBar).show(self.view_data["summary"], self.view_data["problems"], now)
            if self._last_panel in ("warrants", "approvals"):
                self.show_detail()

    def tick_ages(self) -> None:
        if self.view_data and not self._dashboard_gone():
            now = self.clock()
            for name in ("sessions", "halts", "locks"):
                self.panel(name).show(self.view_data[name][:MAX_ROWS], now)

    # ------------------------------------------------------------ kennel
    def start_kennel(self) -> None:
        if self.tmux is not None and self.backend.kennels.alive() is None:
            self._run_kennel()

    @work(thread=True, group="kennel")
    def _run_kennel(self) -> None:
        import asyncio
        import threading

        from leash.core.warrants.kennel import Kennel

        self._kennel_thread = threading.current_thread()
        self.kennel = Kennel(self.home, tmux=self.tmux, handle_signals=False)
        asyncio.run(_run_until(self.kennel, lambda: self._unmounted))

    def wait_for_kennel(self, timeout: float) -> None:
        """Wait until the console's own kennel thread has ended (after the app has)."""
        if self._kennel_thread is not None:
            self._kennel_thread.join(timeout)

    # ------------------------------------------------------------ keys
    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action in ("next_panel", "zoom"):
            return self._on_main_screen()
        for key_action in self.key_actions:
            if key_action.name.split("(")[0] == action:  # a main-screen key: never on the screens above it
                return self._on_main_screen() and self.focused_panel() in key_action.panels
        return True

    def action_focus_panel(self, name: str) -> None:
        self._last_panel = name
        self._activate(name)
        table = self.panel(name).table
        table.focus()
        self.call_after_refresh(self._focus_shown, name)  # a panel just shown can take the focus once laid out
        self.refresh_bindings()

    def _focus_shown(self, name: str) -> None:
        if self._dashboard_gone() or not self._on_main_screen() or self._last_panel != name:
            return
        table = self.panel(name).table
        table.focus()
        table.move_cursor(row=table.cursor_row, animate=False)  # scrolled to the cursor at its new size

    def action_next_panel(self, step: int = 1) -> None:
        index = PANELS.index(self.focused_panel())
        self.action_focus_panel(PANELS[(index + step) % len(PANELS)])

    def action_zoom(self) -> None:
        self.screen.toggle_class("-zoomed")
        self.action_focus_panel(self.focused_panel())

    def on_descendant_focus(self) -> None:
        name = self.focused_panel()
        if name != self._shown_panel:
            self._activate(name)
        self.refresh_bindings()

    @on(PanelTabs.TabActivated)
    def _tab_clicked(self, event: PanelTabs.TabActivated) -> None:
        name = (event.tab.id or "").removeprefix("tab-")
        if name in PANELS and name != self._last_panel:
            self.action_focus_panel(name)


    def action_peek(self) -> None:
        row = self._selected("sessions")
        if row is not None:
            self.peek(row)

    def peek(self, row: dict) -> None:
        if not row.get("in_tmux") or self.tmux is None:
            self.notify(f"{row['name']} has no tmux pane to peek at.", severity="warning")
            return
        self.push_screen(PeekScreen(row.get("local_tmux") or row["tmux_session"], self.tmux.capture))

    @on(PanelTable.RowSelected)
    def _row_selected(self, event: PanelTable.RowSelected) -> None:
        if getattr(event.data_table, "panel", "") == "sessions" and any(
                a.name == "peek" and a.key == "enter" for a in self.key_actions):
            self.action_peek()

    def action_why(self) -> None:
        row = self._selected("sessions")
        if row is not None:
            self._why_screen(row)

    @work(thread=True, group="why-screen")
    def _why_screen(self, row: dict) -> None:
        try:
            answer = self._why_now(row)
        except Exception as exc:
            self.call_from_thread(self.notify, f"cannot tell why: {exc}", severity="error")
            return
        self.call_from_thread(self.push_screen, WhyScreen(answer))

    def action_ack_log(self) -> None:
        self.push_screen(AckLogScreen(self.backend.acklog))

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.key_actions))

    def action_filter(self) -> None:
        self._filter_panel = self.focused_panel()
        box = self.query_one("#filter", Input)
        box.add_class("visible")
        box.value = self.panel(self._filter_panel).filter_text
        box.placeholder = f"filter {self._filter_panel} (escape clears)"
        box.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.panel(self._filter_panel).set_filter(event.value, self.clock())

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self) -> None:
        self.panel(self._filter_panel).table.focus()

    def on_key(self, event) -> None:
        box = self.query_one("#filter", Input)
        if event.key == "escape" and box.has_class("visible"):
            box.value = ""
            box.remove_class("visible")
            self.panel(self._filter_panel).set_filter("", self.clock())
            self.panel(self._filter_panel).table.focus()
            event.stop()


async def _run_until(kennel, gone) -> None:
    """Run ``kennel`` until ``gone()``: the console may leave before the
    kennel has started, when ``request_stop`` would not reach it yet."""
    import asyncio

    running = asyncio.ensure_future(kennel.run())
    while not running.done():
        if gone():
            kennel.request_stop()
        await asyncio.wait([running], timeout=KENNEL_WATCH_SECONDS)
    running.result()
