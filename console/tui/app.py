"""The leash console: eight live panels and a key for every control action.

The app holds no policy. Every read and write goes through one ``Backend``
(``backend=``, default the home's file backend). The app holds the screens
and the keymap (``console.tui.keymap``, with ``[console.keys]`` applied): its
default screen is the dashboard (``screens.dashboard``), which owns the
panels, their timers and its keys, and the ``Feed`` (``console.tui.feed``) that
reads the view in worker threads (``core.fleet.view`` over the backend), polls
tmux and follows the change stream, so the UI thread only ever renders. The
change stream is any async iterator of ``Change`` records: by default the
backend's ``changes()`` (for the file backend, the home watched with a
~150 ms debounce), or the one given as ``changes=`` (a daemon's ``subscribe``
stream). Each view arrives as a ``Feed.ViewArrived`` message: the app keeps
it, raises the alerts it calls for and hands it to the dashboard.

Every key and palette entry that changes state asks ``run_operation`` (the
dashboard calls it, or posts ``OperationAsked``); the app opens the
confirmation modal for the ``Operation`` it asks (``console.operations``,
shared by every front end; the cap raise is the console's own,
``screens.budgetraise``) and then runs it, a call into the backend's
stores, off the UI thread; the
result is in the store for the CLI, the hooks and the kennel at once, and
the change stream brings it back to the screen.

When no other kennel is running the console runs one of its own (in a thread
with its own event loop), so a warrant filed with ``w`` is worked at once.
SIGTERM and SIGHUP end the app the way ``q`` does, so the terminal is
restored.

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
import os
import threading
import time
from typing import TYPE_CHECKING, AsyncIterator, Callable, NamedTuple

from textual import on, work
from textual.app import App
from textual.notifications import SeverityLevel

from leash.console.errors import Refused
from leash.console.operations import Confirmed, Operation, Operations
from leash.console.tui.dialogs import OperationDone, confirm_screen
from leash.console.tui.ending import EndsOnSignals
from leash.console.tui.feed import Feed
from leash.console.tui.keymap import PALETTE, display, keymap
from leash.console.tui.screens.budgetraise import raise_operation
from leash.console.tui.screens.confirm import ConfirmScreen
from leash.console.tui.screens.dashboard import DashboardScreen
from leash.console.tui.widgets.budget import BudgetPanel
from leash.console.tui.widgets.panel import Panel
from leash.core.base.text import printable
from leash.core.store.protocols import Backend
from leash.core.store.records import Change
from leash.core.views.fleet import MAX_ROWS  # noqa: F401 (rows per panel; bench/console.py reads it here)

if TYPE_CHECKING:
    from leash.core.base.tmux import Tmux
    from leash.core.warrants.kennel import Kennel

KENNEL_WATCH_SECONDS = 0.1  # how soon the console's kennel notices the console has gone
NOTIFY_LIMIT = 300  # characters of a notification's message
CONFIG_NOTICE_SECONDS = 60  # how long what config.toml says stays on screen
DESKTOP_LIMIT = 160  # characters of an OSC 9 desktop notification's text
DESKTOP_PREFIX = "leash: "  # never a digit first: OSC 9;<n> means other things to some terminals
ALERTED_OUTCOMES = frozenset({"executed", "undelivered"})  # a warrant's end an operator must hear of


class Alert(NamedTuple):
    title: str
    message: str
    desktop: str = ""  # an OSC 9 notification's text too
    severity: SeverityLevel = "error"


def alerts_of(data: dict) -> dict[str, dict[str, Alert]]:
    """What an operator must hear of when it is new, by kind and id: an approval
    waiting, a critical halt, a warrant executed or undelivered, a tripped breaker."""
    approvals: dict[str, Alert] = {}
    for row in data.get("approvals", []):
        what = f"{row.get('session') or row.get('session_id')} {row.get('tool')}"
        approvals[row["id"]] = Alert(f"Approval waiting: {what}", str(row.get("summary") or ""),
                                     f"approval waiting: {what}", "warning")
    critical: dict[str, Alert] = {}
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


class LeashApp(EndsOnSignals, App[None]):
    CSS_PATH = "leash.tcss"
    TITLE = "leash"
    BINDINGS = [PALETTE]  # merged with App's own (ctrl+q, ctrl+c)

    def __init__(self, home: str | os.PathLike | None = None, *, tmux: Tmux | None = None,
                 list_tmux: Callable[[], list[dict]] | None = None, run_kennel: bool = True, watch: bool = True,
                 clock: Callable[[], float] = time.time, source: str | None = None,
                 on_exit: Callable[[], object] | None = None, read_only: bool = False,
                 on_hangup: Callable[[], object] | None = None, backend: Backend | None = None,
                 changes: AsyncIterator[Change] | None = None) -> None:
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
        config = load_config(self.home)
        self.key_actions = keymap(config["console"]["keys"])
        self.tmux = tmux
        self.want_kennel = run_kennel
        self.read_only = read_only  # keys that change state only say so
        self._unmounted = False
        self.source = source or default_source()
        self.operations = Operations(  # ``via`` set once mounted
            self.backend, self.source, home=self.home, keys={a.id: display(a.key) for a in self.key_actions},
            more={"raise_cap": lambda row: raise_operation(self.backend, row, source=self.source, home=self.home)})
        self.kennel: Kennel | None = None
        self.on_exit_callback = on_exit
        self.on_hangup = on_hangup  # run when the terminal hung up and the app could not end by itself
        self._seen: dict[str, set] | None = None
        self._kennel_thread: threading.Thread | None = None
        listed = list_tmux or (tmux.list_sessions if tmux is not None else (lambda: []))
        self.dashboard = DashboardScreen(self.backend, self.key_actions, clock=clock, list_tmux=listed,
                                         capture=tmux.capture if tmux is not None else None, changes=changes,
                                         watch=watch, check_tmux=list_tmux is None and tmux is not None)
        self.set_keymap(self.dashboard.keymap())  # [console.keys]: each remapped binding on its key

    def get_default_screen(self) -> DashboardScreen:
        return self.dashboard

    def on_mount(self) -> None:
        self.operations.via = "serve" if self.is_web else "console"
        if not self.is_headless:
            self._catch_ending_signals()
        if self.want_kennel:
            self.start_kennel()
        self._say_config()

    def _say_config(self) -> None:
        """What config.toml says that the console does not use (a file that
        cannot be used, an unknown key, a binding of [console.keys] left out):
        a warning each, as every command says it on stderr."""
        from leash.core.base.config import config_notices

        for notice in config_notices(self.home):
            self.notify(notice, title="config.toml", severity="warning", timeout=CONFIG_NOTICE_SECONDS)

    def on_unmount(self) -> None:
        self._restore_signal_handlers()
        self._unmounted = True  # the kennel's thread sees it even if it starts after this
        gc.unfreeze()  # (frozen by the first view) collectable again once the app is gone
        if self.kennel is not None:
            self.kennel.request_stop()
        if self.on_exit_callback is not None:
            self.on_exit_callback()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Every key of the keymap, the app's own too (quit, the palette), acts
        as the dashboard says: while it is on top, where the key applies."""
        return self.dashboard.check_action(action, parameters)

    # ------------------------------------------------------------ the view
    @property
    def view_data(self) -> dict:
        """The newest view (``core.views.fleet.view``); {} until the first arrives."""
        return self.dashboard.view

    @on(Feed.ViewArrived)
    def _view_arrived(self, message: Feed.ViewArrived) -> None:
        first = not self.view_data
        self.apply_view(message.view)
        if first:
            gc.freeze()  # what the first view built lives on: the collector's full passes skip it (stalls)

    @on(Feed.FeedFailed)
    def _feed_failed(self, message: Feed.FeedFailed) -> None:
        self.notify(message.problem, severity="error")

    def apply_view(self, data: dict) -> None:
        """Show ``data`` on the dashboard and alert on what is new in it."""
        self.dashboard.show_view(data)
        self._show_spend_hours(data.get("spend_hours", []))
        self._notify_changes(data)

    def _show_spend_hours(self, hours: list[float]) -> None:
        """The Budget panel's sparkline: the last hours' spend the feed read with the view."""
        panel = self.dashboard.query_one_optional("#panel-budget", BudgetPanel)
        if panel is not None and panel.query_one_optional("#budget-sparkline") is not None:
            panel.show_hours(hours)

    def refresh_view(self) -> None:
        """Read the view again (the feed serves one read at a time)."""
        self.dashboard.feed.refresh_view()

    # The dashboard's, for what holds the app (the tests, bench/console.py, the screenshots).
    def panel(self, name: str) -> Panel:
        return self.dashboard.panel(name)

    def tick_countdown(self) -> None:
        self.dashboard.tick_countdown()

    def tick_ages(self) -> None:
        self.dashboard.tick_ages()

    # ------------------------------------------------------------ alerts
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

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
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

    def _alert(self, title: str, message: str, *, desktop: str = "", severity: SeverityLevel = "error") -> None:
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

    # ------------------------------------------------------------ keys that change state
    @on(DashboardScreen.OperationAsked)
    def _operation_asked(self, message: DashboardScreen.OperationAsked) -> None:
        self.run_operation(message.kind, message.row, panel=message.panel)

    def run_operation(self, kind: str, row: dict | None = None, *, panel: str = "") -> None:
        """Confirm, then change state: the one path of every key and palette
        entry that does (a read-only console refuses here). ``panel``: ``row``
        is that panel's selected row (None: nothing is selected there)."""
        if self.read_only:
            self.notify("read-only console", severity="warning")
            return
        if panel and row is None:
            self.notify(f"Select a row in {panel} first.", severity="warning")
            return
        try:
            operation = self.operations.ask(kind, row)
        except Refused as exc:
            self.notify(str(exc), severity="warning")
            return
        except Exception as exc:
            self.notify(f"{exc}", severity="error")
            return

        def done(confirmed: Confirmed | None) -> None:
            if confirmed is not None:
                self._perform(operation, confirmed)
        self.push_screen(confirm_screen(operation), done)

    @work(thread=True, group="operation")
    def _perform(self, operation: Operation, confirmed: Confirmed) -> None:
        try:
            said = operation.run(confirmed)
        except Refused as exc:
            self.post_message(OperationDone(str(exc), "warning"))
        except Exception as exc:  # the core's refusal (e.g. HaltRefused) is the operator's answer
            self.post_message(OperationDone(str(exc), "error"))
        else:
            self.post_message(OperationDone(said))

    @on(OperationDone)
    def _operation_done(self, message: OperationDone) -> None:
        self.notify(message.said, severity=message.severity)
        self.refresh_view()

    # ------------------------------------------------------------ kennel
    def start_kennel(self) -> None:
        if self.tmux is not None and self.backend.kennels.alive() is None:
            self._run_kennel()

    @work(thread=True, group="kennel")
    def _run_kennel(self) -> None:
        import asyncio

        from leash.core.warrants.kennel import Kennel

        self._kennel_thread = threading.current_thread()
        self.kennel = Kennel(self.home, tmux=self.tmux, handle_signals=False)
        asyncio.run(_run_until(self.kennel, lambda: self._unmounted))

    def wait_for_kennel(self, timeout: float) -> None:
        """Wait until the console's own kennel thread has ended (after the app has)."""
        if self._kennel_thread is not None:
            self._kennel_thread.join(timeout)


async def _run_until(kennel: Kennel, gone: Callable[[], bool]) -> None:
    """Run ``kennel`` until ``gone()``: the console may leave before the
    kennel has started, when ``request_stop`` would not reach it yet."""
    import asyncio

    running = asyncio.ensure_future(kennel.run())
    while not running.done():
        if gone():
            kennel.request_stop()
        await asyncio.wait([running], timeout=KENNEL_WATCH_SECONDS)
    running.result()
