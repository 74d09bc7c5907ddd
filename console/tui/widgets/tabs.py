"""The tab strip of a narrow screen: one tab per panel, numbered as its key.

Below ~120 columns the dashboard shows one panel at a time; this strip
names them all (each by its short name in ``console.tui.panels``) and marks the
one shown. It never takes the focus (the panel's table keeps it); a click
shows that panel.
"""
from __future__ import annotations

from textual.widgets import Tab, Tabs


class PanelTabs(Tabs):
    can_focus = False

    def __init__(self, names: list[tuple[str, str, str]], *, id: str) -> None:  # noqa: A002 (Textual's name)
        """``names``: (number key, panel key, short name) of each panel, in order."""
        super().__init__(*(Tab(f"{number} {short}", id=f"tab-{key}") for number, key, short in names), id=id)

    def show_panel(self, name: str) -> None:
        if self.active != f"tab-{name}":
            self.active = f"tab-{name}"
