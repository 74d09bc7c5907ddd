"""A panel: a titled table whose rows keep stable keys.

``show(rows, now)`` turns rows (dicts with a ``key``) into cells with the
subclass's ``cells`` and applies only the difference: changed cells are
updated in place, vanished rows removed, new rows added — so nothing flickers
and the cursor stays on the row it was on. A text filter hides rows that do
not contain it.

Cells are agent text: ``literal`` turns each into a ``Text`` (a plain ``str``
cell would be parsed as markup by DataTable) with its control characters
escaped (``core.text.printable``). A row whose cells are unchanged keeps its
``Text`` objects, so a refresh builds new ones only for the cells that moved.
"""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Label

from leash.core.base.clock import human_duration
from leash.core.base.text import printable

# A cell changes at most once a minute after the first one, so refreshes touch few cells.
duration = human_duration
CELL_LIMIT = 200  # characters of a cell's text kept: wider than any column, so the cut never shows


def literal(value: object) -> Text:
    """A table cell that shows ``value`` as it is: never parsed as markup, one
    line, control characters escaped. A styled ``Text`` keeps its style."""
    if isinstance(value, Text):
        if value.plain.isprintable():
            return value
        return Text(printable(value.plain, limit=CELL_LIMIT), style=value.style, no_wrap=True, end="")
    return Text(printable(value, limit=CELL_LIMIT), no_wrap=True, end="")


class PanelTable(DataTable):
    """The table inside a panel (the focusable part). ``tab`` and
    ``shift+tab`` go to the next and previous panel, shown or not."""

    BINDINGS = [Binding("tab", "app.next_panel(1)", "Next panel", show=False),
                Binding("shift+tab", "app.next_panel(-1)", "Previous panel", show=False)]

    def __init__(self, panel: str, **kwargs):
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)
        self.panel = panel


class Panel(Vertical):
    PANEL = ""
    TITLE = ""
    COLUMNS: tuple[tuple[str, str, int | None], ...] = ()  # (key, label, width)

    def __init__(self, **kwargs):
        super().__init__(id=f"panel-{self.PANEL}", classes="panel", **kwargs)
        self.rows: dict[str, dict] = {}
        self.filter_text = ""
        self._shown: dict[str, tuple] = {}
        self._literals: dict[str, tuple[tuple, tuple]] = {}  # key -> (cells as given, cells as shown)
        self._count = 0
        self._title = ""

    def compose(self) -> ComposeResult:
        yield Label(self.TITLE, classes="panel-title", id=f"title-{self.PANEL}")
        yield PanelTable(self.PANEL, id=f"table-{self.PANEL}")

    def on_mount(self) -> None:
        table = self.table
        for key, label, width in self.COLUMNS:
            table.add_column(label, key=key, width=width)

    @property
    def table(self) -> PanelTable:
        return self.query_one(PanelTable)

    def cells(self, row: dict, now: float) -> tuple:
        raise NotImplementedError

    def selected(self) -> dict | None:
        table = self.table
        if not table.row_count or table.cursor_row is None or table.cursor_row < 0:
            return None
        try:
            key = table.coordinate_to_cell_key((table.cursor_row, 0)).row_key.value
        except Exception:
            return None
        return self.rows.get(key)

    def _matches(self, cells: tuple) -> bool:
        if not self.filter_text:
            return True
        text = " ".join(c.plain if isinstance(c, Text) else str(c) for c in cells).lower()
        return self.filter_text.lower() in text

    def show(self, rows: list[dict], now: float) -> None:
        table = self.table
        self.rows = {r["key"]: r for r in rows}
        wanted: dict[str, tuple] = {}
        literals: dict[str, tuple[tuple, tuple]] = {}
        for row in rows:
            given = self.cells(row, now)
            cells = self._literal_cells(given, self._literals.get(row["key"]))
            literals[row["key"]] = (given, cells)
            if self._matches(cells):
                wanted[row["key"]] = cells
        current = self.selected()
        for key in [k for k in self._shown if k not in wanted]:
            table.remove_row(key)
            del self._shown[key]
        column_keys = [c[0] for c in self.COLUMNS]
        for key, cells in wanted.items():
            old = self._shown.get(key)
            if old is None:
                table.add_row(*cells, key=key)
            elif old != cells:
                for column, value, before in zip(column_keys, cells, old, strict=False):
                    if value != before:
                        table.update_cell(key, column, value)
                    else:
                        cells = cells[:column_keys.index(column)] + (before,) + cells[column_keys.index(column) + 1:]
            else:
                cells = old  # the table holds the old (equal) objects
            wanted[key] = cells
            literals[key] = (literals[key][0], cells)  # the next refresh compares with what the table holds
        self._literals = literals
        if list(self._shown) + [k for k in wanted if k not in self._shown] != list(wanted):
            self._resort(wanted, current)
        self._shown = dict(wanted)
        self._count = len(rows)
        title = self.title_text()
        if title != self._title:  # a label update re-lays out the screen: only when it changed
            self._title = title
            self.query_one(f"#title-{self.PANEL}", Label).update(Text(printable(title)))

    @staticmethod
    def _literal_cells(given: tuple, cached: tuple[tuple, tuple] | None) -> tuple:
        """The row's cells as shown, reusing the ``Text`` of every cell whose value did not change."""
        if cached is None or len(cached[0]) != len(given):
            return tuple(map(literal, given))
        if cached[0] == given:
            return cached[1]
        return tuple(shown if value == before else literal(value)
                     for value, before, shown in zip(given, cached[0], cached[1], strict=True))

    def _resort(self, wanted: dict[str, tuple], current: dict | None) -> None:
        """Put the rows in the panel's order without re-adding them (re-adding
        makes the table measure every cell again). DataTable sorts by cell
        values; the cells are the very objects given to it, so their ids name
        the row."""
        table = self.table
        order = {tuple(map(id, cells)): index for index, cells in enumerate(wanted.values())}
        try:
            table.sort(key=lambda values: order.get(tuple(map(id, values)), len(order)))
        except Exception:
            self._rebuild(wanted)
            return
        if current is not None and current["key"] in wanted:
            table.move_cursor(row=table.get_row_index(current["key"]), animate=False)

    def _rebuild(self, wanted: dict[str, tuple]) -> None:
        table = self.table
        current = self.selected()
        table.clear()
        for key, cells in wanted.items():
            table.add_row(*cells, key=key)
        self._shown = dict(wanted)
        if current is not None and current["key"] in wanted:
            table.move_cursor(row=list(wanted).index(current["key"]), animate=False)

    def title_text(self) -> str:
        shown = len(self._shown)
        filtered = f" (filter '{self.filter_text}': {shown})" if self.filter_text else ""
        return f"{self.TITLE} [{self._count}]{filtered}"

    def set_filter(self, text: str, now: float) -> None:
        self.filter_text = text
        self.show(list(self.rows.values()), now)
