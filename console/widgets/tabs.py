"""The tab strip of a narrow screen: one tab per panel, numbered as its key.

Below ~120 columns the main screen shows one panel at a time; this strip
names them all and marks the one shown. It never takes the focus (the
panel's table keeps it); a click shows that panel.
"""
from __future__ import annotations

from textual.widgets import Tab, Tabs

from leash.console.keymap import PANELS

TAB_TITLES = {"sessions": "Sessions", "halts": "Halts", "warrants": "Warrants", "locks": "Locks", "loops": "Breakers",
              "acklog": "Ack log", "approvals": "Approvals"}


class PanelTabs(Tabs):
    can_focus = False

    def __init__(self, **kwargs):
        super().__init__(*(Tab(f"{index} {TAB_TITLES[name]}", id=f"tab-{name}")
                           for index, name in enumerate(PANELS, start=1)), **kwargs)

    def show_panel(self, name: str) -> None:
        if self.active != f"tab-{name}":
            self.active = f"tab-{name}"
