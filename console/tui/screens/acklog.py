"""The ack-log screen: filter, search, follow, and the chain's verify status.

The filter line takes ``session:ID``, ``event:NAME`` and ``source:WHO`` terms;
any other words are searched for in the whole line. ``f`` toggles follow
(jump to the newest line as lines arrive). The lines come from the
backend's ack-log store (``backend.acklog``); looking for new lines, reading
and verifying run in worker threads; the newest ``SHOWN_LINES`` matches are
shown. The columns share the screen's width as the dashboard's panels do
(``widgets.panel.layout``): short of room the date goes first, then the
source, and the reason takes what the others leave; the detail line under the
table shows the selected line whole (its reason, source, date). Every field is
shown as plain text (never parsed as markup) with its control characters
escaped: the lines hold what agents and operators wrote.
"""
from __future__ import annotations

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.coordinate import Coordinate
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Input, Label

from leash.console.tui.widgets.detail import DetailLine, log_detail
from leash.console.tui.widgets.footer import KeysFooter
from leash.console.tui.widgets.panel import Column, FittedTable, cell_width, label_width, layout
from leash.core.base.text import printable
from leash.core.store.protocols import AckLogStore

SHOWN_LINES = 2000
REASON_LIMIT = 300
DETAIL_LINES = 5  # the selected line's whole text: a reason of REASON_LIMIT at 80 columns
# Short of room the date goes first, then the source (the detail line shows both); the reason takes the rest.
COLUMNS = (Column("seq", "#", keep=True), Column("date", "Date", keep=True, drop=1),
           Column("time", "Time", keep=True), Column("event", "Event", keep=True),
           Column("source", "Source", drop=2), Column("session", "Session", 12),
           Column("reason", "Reason", 24))
FILL = "reason"


def _cell(value: object, limit: int | None = None) -> Text:
    return Text(printable(value, limit=limit), no_wrap=True, end="", overflow="ellipsis")


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


def cells_of(record: dict) -> tuple[Text, ...]:
    """A line's cell in each of ``COLUMNS``."""
    stamp = str(record.get("timestamp", ""))
    return (_cell(record.get("seq", "")), _cell(stamp[:10]), _cell(stamp[11:19]), _cell(record.get("event", "")),
            _cell(record.get("source", "")), _cell(record.get("session_id") or "-"),
            _cell(record.get("reason") or "", REASON_LIMIT))


class LogTable(FittedTable):
    """The log's lines; ``home`` and ``end`` go to the first and the newest line."""

    BINDINGS = [Binding("home", "scroll_top", "First line", show=False),
                Binding("end", "scroll_bottom", "Newest line", show=False)]

    def on_resize(self, event: events.Resize) -> None:
        screen = self.screen
        if isinstance(screen, AckLogScreen):
            screen.fit_columns()


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
        self._lines: dict[str, tuple[dict, tuple[Text, ...]]] = {}  # row key -> (line, its every cell), as shown
        self._wants = [label_width(column) for column in COLUMNS]  # the widest cell of each column
        self._columns: tuple[int, ...] = ()  # the indexes in COLUMNS of the table's columns

    def compose(self) -> ComposeResult:
        with Vertical(id="acklog-screen"):
            yield Label("Ack log", id="acklog-title")
            yield Label("verifying the chain...", id="acklog-verify")
            yield Input(placeholder="filter: session:ID event:NAME source:WHO words...", id="acklog-filter")
            yield LogTable(id="acklog-table", cursor_type="row")
            yield DetailLine(id="acklog-detail", lines=DETAIL_LINES)
        yield KeysFooter()

    def on_mount(self) -> None:
        table = self.query_one("#acklog-table", LogTable)
        self._add_columns(tuple(range(len(COLUMNS))))
        table.focus()
        self.reload()
        self.action_verify()
        self.set_interval(0.5, self.poll)

    @work(thread=True, exclusive=True, group="acklog-poll")
    def poll(self) -> None:
        """Read the log again when its newest line is another one."""
        newest = self.acklog.tail(1)
        signature = (newest[-1].seq, newest[-1].hash) if newest else None
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
        table = self.query_one("#acklog-table", LogTable)
        shown = {str(k.value) for k in table.rows}
        wanted = [(f"{r.get('seq')}:{str(r.get('hash', ''))[:12]}", r) for r in entries]
        if [k for k, _ in wanted[:len(shown)]] != [str(k.value) for k in table.rows][:len(wanted)] or \
                len(shown) > len(wanted):
            table.clear()
            shown = set()
            self._lines = {}
            self._wants = [label_width(column) for column in COLUMNS]
        added = False
        for key, r in wanted:
            if key in shown:
                continue
            added = True
            cells = cells_of(r)
            self._lines[key] = (r, cells)
            self._wants = [max(want, cell_width(cell)) for want, cell in zip(self._wants, cells, strict=True)]
            table.add_row(*self._in_table(cells), key=key)
        self.fit_columns()
        mode = "following" if self.follow else "paused"
        self.query_one("#acklog-title", Label).update(
            Text(f"Ack log — {total} matching line(s), showing the newest {len(wanted)} ({mode}; f toggles)"))
        if self.follow and added:  # to the newest line as it arrives (a cursor moved meanwhile stays till then)
            table.move_cursor(row=table.row_count - 1, animate=False)
        self._show_detail()

    # ------------------------------------------------------------ the columns and the detail line
    def _add_columns(self, shown: tuple[int, ...]) -> None:
        self._columns = shown
        table = self.query_one("#acklog-table", LogTable)
        for index in shown:
            table.add_column(COLUMNS[index].label, key=COLUMNS[index].key, width=label_width(COLUMNS[index]))

    def _in_table(self, cells: tuple[Text, ...]) -> tuple[Text, ...]:
        return tuple(cells[index] for index in self._columns)

    def fit_columns(self) -> None:
        """The columns that fit the table's width (the others left out), and their widths."""
        table = self.query_one("#acklog-table", LogTable)
        if not table.content_region.width:
            return
        shown, widths = layout(COLUMNS, self._wants, table.width(), 2 * table.cell_padding, FILL)
        if shown != self._columns:  # the table again, with these columns, its cursor kept
            cursor = table.cursor_row
            table.clear(columns=True)
            self._add_columns(shown)
            for key, (_, cells) in self._lines.items():
                table.add_row(*self._in_table(cells), key=key)
            if table.row_count:
                table.move_cursor(row=min(cursor, table.row_count - 1), animate=False)
        table.set_widths(widths)

    @on(DataTable.RowHighlighted, "#acklog-table")
    def _show_detail(self) -> None:
        """The selected line, whole, on the detail line."""
        table = self.query_one("#acklog-table", LogTable)
        line = None
        if table.row_count and table.cursor_row >= 0:
            key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
            line = self._lines.get(str(key))
        self.query_one("#acklog-detail", DetailLine).show(log_detail(line[0], 0.0) if line else "no line selected")

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
        table = self.query_one("#acklog-table", LogTable)
        if self.follow and table.row_count:
            table.move_cursor(row=table.row_count - 1, animate=False)
        self.reload()

    def action_close(self) -> None:
        if self.query_one("#acklog-filter", Input).has_focus and self.filter_text:
            self.query_one("#acklog-filter", Input).value = ""
            return
        self.app.pop_screen()
