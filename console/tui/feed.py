"""The dashboard's data feed: what the core says, read off the UI thread, as messages.

``Feed`` is a widget that draws nothing. It reads ``core.views.fleet.view``
(with the budget's figures, ``widgets.budget.add_budget``) over the backend
in a worker thread, one read at a time (a request while one runs is served
once, right after it: reads never pile up); follows the
backend's change stream (or the one given, a daemon's ``subscribe``) in an
exclusive worker; polls tmux every ``TMUX_POLL_SECONDS`` in a thread; and
reads ``core.views.why``'s answer for a session when asked. Nothing it reads
is handed over by a call into the UI: each result is a message, posted from
the worker and handled on the UI thread, bubbling from the feed to the
dashboard and the app:

- ``ViewArrived``: a new view (the app keeps it and hands it to the dashboard);
- ``FeedFailed``: a read that failed, in one line (the app notifies it);
- ``StoreChanged``: a store a panel shows changed (the feed reads the view again);
- ``TmuxListed``: the tmux poll found another list (the feed reads the view again);
- ``Explained``: ``core.why``'s answer for a session's row (the dashboard shows it).
"""
from __future__ import annotations

from typing import AsyncIterator, Callable

from textual import on, work
from textual.message import Message
from textual.widget import Widget
from textual.worker import Worker

from leash.core.store.protocols import Backend
from leash.core.store.records import Change

TMUX_POLL_SECONDS = 1.5
WATCH_DEBOUNCE_MS = 150
UNSHOWN_STORES = frozenset({"kennels"})  # a kennel's heartbeat (each second) changes nothing a panel shows
VIEW_GROUP = "view"


class Feed(Widget):
    DEFAULT_CSS = "Feed { display: none; }"

    class ViewArrived(Message):
        def __init__(self, view: dict) -> None:
            super().__init__()
            self.view = view

    class FeedFailed(Message):
        def __init__(self, problem: str) -> None:
            super().__init__()
            self.problem = problem

    class StoreChanged(Message):
        def __init__(self, change: Change) -> None:
            super().__init__()
            self.change = change

    class TmuxListed(Message):
        def __init__(self, sessions: list[dict]) -> None:
            super().__init__()
            self.sessions = sessions

    class Explained(Message):
        """``answer``: ``core.views.why`` for the row ``key``; ``asked``: the operator asked for it in full."""

        def __init__(self, key: str, answer: dict, *, asked: bool = False) -> None:
            super().__init__()
            self.key, self.answer, self.asked = key, answer, asked

    def __init__(self, backend: Backend, *, list_tmux: Callable[[], list[dict]], clock: Callable[[], float],
                 changes: AsyncIterator[Change] | None = None, watch: bool = True, check_tmux: bool = False) -> None:
        """``changes``: the stream to follow (default ``backend.changes()``); ``watch=False`` follows none.
        ``check_tmux``: ``list_tmux`` asks the real tmux server, so an empty
        list is looked into (a dead or wrong socket is a problem shown)."""
        super().__init__()
        self.backend = backend
        self.list_tmux = list_tmux
        self.check_tmux = check_tmux
        self.clock = clock
        self.change_stream = changes
        self.want_watch = watch
        self.tmux_sessions: list[dict] = []
        self._reading = False
        self._read_again = False

    def on_mount(self) -> None:
        try:
            self.tmux_sessions = self.list_tmux()
        except Exception:
            self.tmux_sessions = []
        self.refresh_view()
        if self.want_watch:
            self.watch_changes()
        self.set_interval(TMUX_POLL_SECONDS, self.poll_tmux)

    # ------------------------------------------------------------ the view
    def refresh_view(self) -> None:
        """Read the view again: at once, or right after the read that runs now."""
        if self._reading:
            self._read_again = True
            return
        self._reading = True
        self._read_view()

    @work(thread=True, group=VIEW_GROUP)
    def _read_view(self) -> None:
        from leash.console.tui.widgets.budget import add_budget
        from leash.core.views.fleet import view

        now = self.clock()
        try:
            data = view(backend=self.backend, tmux_sessions=self.tmux_sessions, now=now)
        except Exception as exc:  # never let a bad file take the console down
            self.post_message(self.FeedFailed(f"cannot read the state home: {exc}"))
            return
        add_budget(data, self.backend, now=now)  # the caps, the spend and the sessions' costs (never raises)
        if self.check_tmux and not self.tmux_sessions:
            data["problems"] = [*data["problems"], *self._tmux_problem()]
        self.post_message(self.ViewArrived(data))

    def _tmux_problem(self) -> list[str]:
        """Why no tmux session is listed, when something expects one: the
        server the console asks is dead, or is not the agents' (``core.views.status.tmux_problem``)."""
        from leash.core.views.status import tmux_problem

        try:
            found = tmux_problem(self.backend.home, list(self.backend.sessions.all().values()))
        except Exception:  # the sessions cannot be read: the view says so itself
            return []
        return [f"tmux unreachable ({found['message']})"] if found else []

    @on(Worker.StateChanged)
    def _worker_changed(self, event: Worker.StateChanged) -> None:
        """A read has ended: the one asked for meanwhile starts now."""
        if event.worker.group != VIEW_GROUP or not event.worker.is_finished:
            return
        self._reading = False
        if self._read_again:
            self._read_again = False
            self.refresh_view()

    @on(StoreChanged)
    def _store_changed(self) -> None:
        self.refresh_view()

    # ------------------------------------------------------------ tmux
    @work(thread=True, exclusive=True, group="tmux")
    def poll_tmux(self) -> None:
        try:
            sessions = self.list_tmux()
        except Exception:
            sessions = []
        if sessions != self.tmux_sessions:
            self.post_message(self.TmuxListed(sessions))

    @on(TmuxListed)
    def _tmux_listed(self, message: TmuxListed) -> None:
        self.tmux_sessions = message.sessions
        self.refresh_view()

    # ------------------------------------------------------------ the change stream
    @work(exclusive=True, group="watch")
    async def watch_changes(self) -> None:
        """A ``StoreChanged`` for each change to a store the panels show; the
        stream is closed when the worker ends (the app quits), so a file
        watcher's thread stops too."""
        stream = self.change_stream
        if stream is None:
            stream = self.backend.changes(debounce_ms=WATCH_DEBOUNCE_MS)
        try:
            async for change in stream:
                if change.store not in UNSHOWN_STORES:
                    self.post_message(self.StoreChanged(change))
        finally:
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()

    # ------------------------------------------------------------ why a session is held
    @work(thread=True, exclusive=True, group="why")
    def explain(self, row: dict) -> None:
        """``Explained`` for the detail line; nothing when it cannot be read (the row's own state still shows)."""
        try:
            answer = self._why(row)
        except Exception:
            return
        self.post_message(self.Explained(row["key"], answer))

    @work(thread=True, group="why-screen")
    def explain_in_full(self, row: dict) -> None:
        """``Explained`` (``asked``) for the why screen, or ``FeedFailed`` saying why not."""
        try:
            answer = self._why(row)
        except Exception as exc:
            self.post_message(self.FeedFailed(f"cannot tell why: {exc}"))
            return
        self.post_message(self.Explained(row["key"], answer, asked=True))

    def _why(self, row: dict) -> dict:
        """``core.why`` in a unit of the halt store's kept reader (opening the
        store per answer would make changes the change stream reports)."""
        from leash.core.state.halts.store import HaltStoreUnavailable
        from leash.core.views.why import why

        now = self.clock()
        tmux_id = row.get("tmux_session_id") or ""
        try:
            with self.backend.halts.reading(now=now) as unit:
                return why(session=row["name"], now=now, tmux_session_id=tmux_id, halts=unit, backend=self.backend)
        except HaltStoreUnavailable:
            return why(session=row["name"], now=now, tmux_session_id=tmux_id, backend=self.backend)
