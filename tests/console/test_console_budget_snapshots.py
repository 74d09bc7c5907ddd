"""How the Budget panel looks (pytest-textual-snapshot): the demo's spend and
caps at a fixed time, the panel focused with its held cap selected, at
120x35 (the grid) and 80x24 (one panel under the tab strip)."""
from __future__ import annotations

import pytest

from leash.console.tui.demo import budget_config, seed_budget

from ..support.console import CONSOLE_NOW, settle


@pytest.fixture
def budget_app(console_app, home):
    with open(home / "config.toml", "a") as config:
        config.write(budget_config())
    seed_budget(home, now=CONSOLE_NOW)
    return console_app()


async def _held_cap_selected(pilot):
    await settle(pilot, pilot.app)
    await pilot.press("8")
    table = pilot.app.panel("budget").table
    key = next(str(k.value) for k in table.rows if "claude-c044" in str(k.value))
    table.move_cursor(row=table.get_row_index(key))
    await settle(pilot, pilot.app)


@pytest.mark.parametrize("size", [(120, 35), (80, 24)], ids=lambda size: f"{size[0]}x{size[1]}")
def test_the_budget_panel_with_a_held_cap_selected(snap_compare, budget_app, size):
    assert snap_compare(budget_app, terminal_size=size, run_before=_held_cap_selected)
