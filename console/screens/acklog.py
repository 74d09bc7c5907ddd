"""The ack-log screen: filter, search, follow, and the chain's verify status.

The filter line takes ``session:ID``, ``event:NAME`` and ``source:WHO`` terms;
any other words are searched for in the whole line. ``f`` toggles follow
(jump to the newest line as lines arrive). The lines come from the
backend's ack-log store (``backend.acklog``); looking for new lines, reading
and verifying run in worker threads; the newest ``SHOWN_LINES`` matches are
shown. Every field is
shown as plain text (never parsed as markup) with its control characters
escaped: the lines hold what agents and operators wrote.
"""
from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Label

from leash.core.base.text import printable
from leash.core.store.protocols import AckLogStore

SHOWN_LINES = 2000
REASON_LIMIT = 300


def _cell(value: object, limit: int | None = None) -> Text:
    return Text(printable(value, limit=limit), no_wrap=True, end="")


def parse_filter(text: str) -> tuple[dict[str, str], list[str]]:
    terms, words = {}, []
    for word in text.split():
        key, sep, value = word.partition(":")
        if sep and key in ("session", "event", "source") and value:
            terms[key] = value
        else:
            words.append(word.lower())
    return terms, words


def matches(record: dict, terms: dict[str, str], words: list[str]) -> bool:
    if "session" in terms and record.get("session_id") != terms["session"]:
        return False
    if "event" in terms and record.get("event") != terms["event"]:
        return False
    if "source" in terms and record.get("source") != terms["source"]:
        return False
    if words:
        text = " ".join(str(v) for k, v in record.items() if k not in ("prev", "hash")).lower()
        return all(w in text for w in words)
    return True


class LogTable(DataTable):
    """The log's lines; ``home`` and ``end`` go to the first and the newest line."""

    BINDINGS = [Binding("home", "scroll_top", "First line", show=False),
                Binding("end", "scroll_bottom", "Newest line", show=False)]


class AckLogScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "close", "Back"),
        Binding("f", "toggle_follow", "Follow"),
        Binding("slash", "focus_filter", "Filter"),
        Binding("v", "verify", "Verify"),
    ]

    class NewerLines(Message):
        """The log's newest line is another one."""

    class LinesRead(Message):
        """The newest matching lines (``entries``) of ``total`` matching."""

        def __init__(self, entries: list[dict], total: int) -> None:
            super().__init__()
            self.entries, self.total = entries, total

    class ChainVerified(Message):
        def __init__(self, text: str, ok: bool) -> None:
            super().__init__()
            self.text, self.ok = text, ok

    def __init__(self, acklog: AckLogStore) -> None:
        """``acklog``: the ack-log store to show (``backend.acklog``)."""
        super().__init__()
        self.acklog = acklog
        self.follow = True
        self.filter_text = ""
        self._signature: tuple[object, object] | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="acklog-screen"):
            yield Label("Ack log", id="acklog-title")
            yield Label("verifying the chain...", id="acklog-verify")
            yield Input(placeholder="filter: session:ID event:NAME source:WHO words...", id="acklog-filter")
            yield LogTable(id="acklog-table", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#acklog-table", DataTable)
        for key, label in (("seq", "#"), ("time", "Time"), ("event", "Event"), ("source", "Source"),
                           ("session", "Session"), ("reason", "Reason")):
            table.add_column(label, key=key)
        table.focus()
        self.reload()
        self.action_verify()
        self.set_interval(0.5, self.poll)

    @work(thread=True, exclusive=True, group="acklog-poll")
    def poll(self) -> None:
        """Read the log again when its newest line is another one."""
        newest = self.acklog.tail(1)
        signature = (newest[-1].get("seq"), newest[-1].get("hash")) if newest else None
        if signature != self._signature:
            self._signature = signature
            self.post_message(self.NewerLines())

    @on(NewerLines)
    def _newer_lines(self) -> None:
        if self.is_attached:
            self.reload()

    @work(thread=True, exclusive=True, group="acklog-read")
    def reload(self) -> None:
        terms, words = parse_filter(self.filter_text)
        entries = [r for r in (line.as_dict() for line in self.acklog.read()) if matches(r, terms, words)]
        self.post_message(self.LinesRead(entries[-SHOWN_LINES:], len(entries)))

    @on(LinesRead)
    def _show(self, message: AckLogScreen.LinesRead) -> None:
        if not self.is_attached:
            return
        entries, total = message.entries, message.total
        table = self.query_one("#acklog-table", DataTable)
        shown = {str(k.value) for k in table.rows}
        wanted = [(f"{r.get('seq')}:{str(r.get('hash', ''))[:12]}", r) for r in entries]
        if [k for k, _ in wanted[:len(shown)]] != [str(k.value) for k in table.rows][:len(wanted)] or \
                len(shown) > len(wanted):
            table.clear()
            shown = set()
        added = False
        for key, r in wanted:
            if key in shown:
                continue
            added = True
            table.add_row(_cell(r.get("seq", "")), _cell(str(r.get("timestamp", ""))[:19]),
                          _cell(r.get("event", "")), _cell(r.get("source", "")), _cell(r.get("session_id") or "-"),
                          _cell(r.get("reason") or "", REASON_LIMIT), key=key)
        mode = "following" if self.follow else "paused"
        self.query_one("#acklog-title", Label).update(
            Text(f"Ack log — {total} matching line(s), showing the newest {len(wanted)} ({mode}; f toggles)"))
        if self.follow and added:  # to the newest line as it arrives (a cursor moved meanwhile stays till then)
            table.move_cursor(row=table.row_count - 1, animate=False)

    @work(thread=True, exclusive=True, group="acklog-verify")
    def action_verify(self) -> None:
        report = self.acklog.verify()
        if report.ok:
            text = f"chain intact: {report.lines} lines verified"
            if report.torn_bytes:
                text += f" (torn tail of {report.torn_bytes} bytes skipped)"
        else:
            text = f"CHAIN BROKEN at line {report.first_broken_line}: {report.problem}"
        self.post_message(self.ChainVerified(text, report.ok))

    @on(ChainVerified)
    def _verified(self, message: AckLogScreen.ChainVerified) -> None:
        if self.is_attached:
            label = self.query_one("#acklog-verify", Label)
            label.update(Text(printable(message.text)))
            label.set_class(not message.ok, "broken")

    @on(Input.Changed, "#acklog-filter")
    def _filter(self, event: Input.Changed) -> None:
        self.filter_text = event.value
        self.reload()

    @on(Input.Submitted, "#acklog-filter")
    def _filter_done(self) -> None:
        self.query_one("#acklog-table", DataTable).focus()

    def action_focus_filter(self) -> None:
        self.query_one("#acklog-filter", Input).focus()

    def action_toggle_follow(self) -> None:
        self.follow = not self.follow
        table = self.query_one("#acklog-table", DataTable)
        if self.follow and table.row_count:
            table.move_cursor(row=table.row_count - 1, animate=False)
        self.reload()

    def action_close(self) -> None:
        if self.query_one("#acklog-filter", Input).has_focus and self.filter_text:
            self.query_one("#acklog-filter", Input).value = ""
            return
        self.app.pop_screen()
