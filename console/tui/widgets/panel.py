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

The columns share the table's width (``share``): each is as wide as its
widest cell when all fit, and the panel's free-text column takes what is
left. When they do not fit, the least important columns are left out first
(``Column.drop``: a row's last tool, a halt's description, which the detail
line shows), until every column left can have its floor: a key column (a
name, a state, a halt's type, an age) its whole text up to ``KEEP_LIMIT``
cells, a free-text one its ``floor``, and every column its header. Only then
are the widest cut (a cut cell ends in ``…``), key columns last and headers
never. Widths are shared again when the rows change and when the table is
resized, and a resize keeps the cursor's row in view (the ack log keeps
following its newest line). Home and End move the cursor to the first and
last row.
"""
from __future__ import annotations

from typing import NamedTuple

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Label

from leash.core.base.clock import human_duration
from leash.core.base.text import printable

# A cell changes at most once a minute after the first one, so refreshes touch few cells.
duration = human_duration
CELL_LIMIT = 200  # characters of a cell's text kept: wider than any column, so the cut never shows
# How the columns share a table's width (``share``); a free-text column's whole text is on the detail line.
KEEP_LIMIT = 24  # cells of its text a key column keeps before a free-text one has more than TEXT_MIN
TEXT_MIN = 3  # cells a free-text column keeps before a key column is cut
TEXT_FLOOR = 8  # cells a free-text column has (its floor) before any column grows past its floor


class Column(NamedTuple):
    key: str
    label: str
    floor: int = TEXT_FLOOR  # a free-text column: this many cells before the others grow past their floors
    keep: bool = False  # a key column: its whole text (up to KEEP_LIMIT) before the free-text ones pass TEXT_MIN
    drop: int = 0  # left out when the room is short: 1 first, then 2...; 0 never


def label_width(column: Column) -> int:
    return Text(column.label).cell_len


def floor_of(column: Column, want: int) -> int:
    """The cells ``column`` has before any column is cut: a key column's whole
    text (up to ``KEEP_LIMIT``), a free-text one's ``floor``; its header always."""
    return max(label_width(column), min(want, KEEP_LIMIT if column.keep else column.floor))


def fitting(columns: tuple[Column, ...], wants: list[int], width: int, padding: int) -> tuple[int, ...]:
    """The indexes of the columns shown in ``width`` cells (each column takes
    ``padding`` more): the ``drop`` ones are left out, the least important
    first, while the columns left cannot each have their floor."""
    shown = list(range(len(columns)))
    droppable = sorted((column.drop, index) for index, column in enumerate(columns) if column.drop)
    for _, index in droppable:
        if sum(floor_of(columns[i], wants[i]) + padding for i in shown) <= width:
            break
        shown.remove(index)
    return tuple(shown)


def layout(columns: tuple[Column, ...], wants: list[int], width: int, padding: int,
           fill: str = "") -> tuple[tuple[int, ...], dict[str, int]]:
    """The columns shown in ``width`` cells (``fitting``: indexes in
    ``columns``) and each one's width (by key): shared (``share``) first to
    their headers, then the key columns' whole text (up to ``KEEP_LIMIT``) and
    ``TEXT_MIN`` cells of each other, then each column's floor, then what each
    wants; the ``fill`` column takes what is left."""
    shown = fitting(columns, wants, width, padding)
    chosen = [columns[index] for index in shown]
    room = max(0, width - padding * len(shown))
    stages = [[label_width(column) for column in chosen],
              [KEEP_LIMIT if column.keep else TEXT_MIN for column in chosen],
              [KEEP_LIMIT if column.keep else column.floor for column in chosen]]
    widths = share([wants[index] for index in shown], stages, room)
    keys = [column.key for column in chosen]
    if fill in keys and sum(widths) < room:
        widths[keys.index(fill)] += room - sum(widths)
    return shown, dict(zip(keys, widths, strict=True))


def cell_width(cell: object) -> int:
    return cell.cell_len if isinstance(cell, Text) else len(str(cell))


def share(wants: list[int], stages: list[list[int]], room: int) -> list[int]:
    """Each column's width, never more than it ``wants``: stage by stage, each
    column grows to its target in the stage (the last stage: what it wants);
    in the first stage that does not fit in ``room``, the widest are cut to
    one level, so the room left is shared fairly, and the sharing ends."""
    shared = [0] * len(wants)
    for stage in [*stages, wants]:
        targets = [max(now, min(target, want)) for now, target, want in zip(shared, stage, wants, strict=True)]
        if sum(targets) <= room:
            shared = targets
            continue
        low, high = 0, max(targets)
        while low < high:  # the highest level that fits
            middle = (low + high + 1) // 2
            low, high = (middle, high) if sum(_level(shared, targets, middle)) <= room else (low, middle - 1)
        cut = _level(shared, targets, low)
        spare = room - sum(cut)
        for index, target in enumerate(targets):  # what is left over goes to the cut ones, one cell each
            if spare > 0 and cut[index] < target:
                cut[index] += 1
                spare -= 1
        return cut
    return shared


def _level(shared: list[int], targets: list[int], height: int) -> list[int]:
    """Each column grown toward its target, up to ``height`` (never shrunk)."""
    return [max(now, min(target, height)) for now, target in zip(shared, targets, strict=True)]


def literal(value: object) -> Text:
    """A table cell that shows ``value`` as it is: never parsed as markup, one
    line, control characters escaped, cut with ``…`` where its column ends. A
    styled ``Text`` keeps its style."""
    if isinstance(value, Text):
        if value.plain.isprintable():
            value.no_wrap, value.overflow = True, "ellipsis"
            return value
        return Text(printable(value.plain, limit=CELL_LIMIT), style=value.style, no_wrap=True, end="",
                    overflow="ellipsis")
    return Text(printable(value, limit=CELL_LIMIT), no_wrap=True, end="", overflow="ellipsis")


class FittedTable(DataTable):
    """A table whose columns are given their widths (``share``), never left to measure themselves."""

    def width(self) -> int:
        """The cells the columns may take, their padding too: the table's
        width, less the scroll bar its rows need."""
        width = self.content_region.width
        if self.row_count + (1 if self.show_header else 0) > self.content_region.height:
            width -= self.styles.scrollbar_size_vertical
        return max(0, width)

    def set_widths(self, widths: dict[str, int]) -> None:
        """Give the columns these widths (by key); lay the table out again only when one changed."""
        changed = False
        for key, column in self.columns.items():
            width = widths.get(str(key.value))
            if width is not None and (column.width != width or column.auto_width):
                column.width, column.auto_width = width, False
                changed = True
        if changed:  # as DataTable does when a column changes: measure again, render every cell again
            self._require_update_dimensions = True
            self._update_count += 1
            self.refresh()


class PanelTable(FittedTable):
    """The table inside a panel (the focusable part). ``tab`` and
    ``shift+tab`` go to the next and previous panel, shown or not (the
    dashboard's ``next_panel``); ``home`` and ``end`` to the first and last row."""

    BINDINGS = [Binding("tab", "screen.next_panel(1)", "Next panel", show=False),
                Binding("shift+tab", "screen.next_panel(-1)", "Previous panel", show=False),
                Binding("home", "scroll_top", "First row", show=False),
                Binding("end", "scroll_bottom", "Last row", show=False)]

    def __init__(self, panel: str, *, id: str) -> None:  # noqa: A002 (Textual's name)
        super().__init__(cursor_type="row", zebra_stripes=False, id=id)
        self.panel = panel

    def on_resize(self, event: events.Resize) -> None:
        """Share the new width, and keep the cursor's row in view (a panel
        following its newest line goes on showing it)."""
        panel = next((ancestor for ancestor in self.ancestors if isinstance(ancestor, Panel)), None)
        if panel is not None:
            panel.fit_columns()
        if self.row_count:
            self.call_after_refresh(self._scroll_cursor_into_view)


class Panel(Vertical):
    """One panel: ``key`` and ``title`` come from its entry in ``console.tui.panels``."""

    COLUMNS: tuple[Column, ...] = ()
    FILL = ""  # the free-text column that takes the width the others leave

    def __init__(self, key: str, title: str, *, classes: str = "") -> None:
        super().__init__(id=f"panel-{key}", classes=f"panel {classes}".strip())
        self.key = key
        self.panel_title = title
        self.rows: dict[str, dict] = {}
        self.filter_text = ""
        self._shown: dict[str, tuple] = {}  # key -> every column's cell (the table holds the shown columns')
        self._literals: dict[str, tuple[tuple, tuple]] = {}  # key -> (cells as given, cells as shown)
        self._columns: tuple[int, ...] = ()  # the indexes in COLUMNS of the table's columns
        self._count = 0
        self._title = ""

    def compose(self) -> ComposeResult:
        yield Label(self.panel_title, classes="panel-title", id=f"title-{self.key}")
        yield PanelTable(self.key, id=f"table-{self.key}")

    def on_mount(self) -> None:
        self.add_columns()

    def add_columns(self, shown: tuple[int, ...] | None = None) -> None:
        """Give the table the columns ``shown`` (indexes in ``COLUMNS``; default all)."""
        self._columns = tuple(range(len(self.COLUMNS))) if shown is None else shown
        table = self.table
        for index in self._columns:
            column = self.COLUMNS[index]
            table.add_column(column.label, key=column.key, width=label_width(column))

    def in_table(self, cells: tuple) -> tuple:
        """The cells of the table's columns, of a row's every cell."""
        return tuple(cells[index] for index in self._columns)

    def fit_columns(self) -> None:
        """Lay the columns out in the table's width (``layout``): those that
        do not fit left out, the others' widths shared, the ``FILL`` column
        taking what is left. Nothing while the table is not shown."""
        table = self.table
        if not table.content_region.width or len(table.columns) != len(self._columns):
            return
        wants = [label_width(column) for column in self.COLUMNS]
        for cells in self._shown.values():
            for index, cell in enumerate(cells[:len(wants)]):
                wants[index] = max(wants[index], cell_width(cell))
        shown, widths = layout(self.COLUMNS, wants, table.width(), 2 * table.cell_padding, self.FILL)
        if shown != self._columns:
            self._show_columns(shown)
        table.set_widths(widths)

    def _show_columns(self, shown: tuple[int, ...]) -> None:
        """Lay the table out again with the columns ``shown``, its rows and cursor kept."""
        table = self.table
        current = self.selected()
        table.clear(columns=True)
        self.add_columns(shown)
        for key, cells in self._shown.items():
            table.add_row(*self.in_table(cells), key=key)
        if current is not None and current["key"] in self._shown:
            table.move_cursor(row=table.get_row_index(current["key"]), animate=False)

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
            key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
        except Exception:
            return None
        return self.rows.get(key) if key is not None else None

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
        for key, cells in wanted.items():
            old = self._shown.get(key)
            if old is None:
                table.add_row(*self.in_table(cells), key=key)
            elif old != cells:  # the unchanged cells keep the objects the table holds
                cells = tuple(before if value == before else value for value, before in zip(cells, old, strict=True))
                for index in self._columns:
                    if cells[index] is not old[index]:
                        table.update_cell(key, self.COLUMNS[index].key, cells[index])
            else:
                cells = old  # the table holds the old (equal) objects
            wanted[key] = cells
            literals[key] = (literals[key][0], cells)  # the next refresh compares with what the table holds
        self._literals = literals
        if list(self._shown) + [k for k in wanted if k not in self._shown] != list(wanted):
            self._resort(wanted, current)
        self._shown = dict(wanted)
        self._count = len(rows)
        self.fit_columns()
        title = self.title_text()
        if title != self._title:  # a label update re-lays out the screen: only when it changed
            self._title = title
            self.query_one(f"#title-{self.key}", Label).update(Text(printable(title)))

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
        order = {tuple(map(id, self.in_table(cells))): index for index, cells in enumerate(wanted.values())}
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
            table.add_row(*self.in_table(cells), key=key)
        self._shown = dict(wanted)
        if current is not None and current["key"] in wanted:
            table.move_cursor(row=list(wanted).index(current["key"]), animate=False)

    def title_text(self) -> str:
        shown = len(self._shown)
        filtered = f" (filter '{self.filter_text}': {shown})" if self.filter_text else ""
        return f"{self.panel_title} [{self._count}]{filtered}"

    def set_filter(self, text: str, now: float) -> None:
        self.filter_text = text
        self.show(list(self.rows.values()), now)
