"""The command palette offers a raise for each cap's row (the Budget panel's
``+``), naming the cap and its bucket, HELD when it holds; choosing one opens
the same raise dialog. The fleet and caps are the demo's, charged through a
real file backend (``console.tui.demo.seed_budget``)."""
from __future__ import annotations

from leash.console.tui.demo import budget_config, seed_budget
from leash.core.store.select import backend_for

from ..support.console import CONSOLE_NOW, running, screen_text, settle


async def test_the_palette_raises_each_caps_row_and_opens_its_dialog(console_app, home):
    from leash.console.tui.palette import LeashCommands

    with open(home / "config.toml", "a") as config:
        config.write(budget_config())
    seed_budget(home, now=CONSOLE_NOW)
    app = console_app()
    async with running(app, (120, 35)) as pilot:
        rows = app.screen.view["budget"]
        entries = {name: (run, said) for name, run, said in LeashCommands(app.screen)._entries()}
        raises = [name for name in entries if name.startswith("Raise cap ")]
        assert len(raises) == len(rows) and rows
        held = next(row for row in rows if row["held"])
        name = f"Raise cap {held['cap']} ({held['scope']}/{held['bucket']})"
        assert entries[name][1] == "HELD"
        entries[name][0]()
        await settle(pilot, app)
        assert f"Raise cap {held['cap']}?" in screen_text(app)
        await pilot.press(*"20", "enter", *"from the palette", "ctrl+y")
        await settle(pilot, app)
    counter = next(c for c in backend_for(home).budget.counters(cap=held["cap"]) if c.bucket == held["bucket"])
    assert counter.raised_to == 20 and not counter.held
