"""Render the console to PNG for the README: `make screenshots`.

Each scene runs the real console headless on the seeded demo fleet (fixed
clock, fixed tmux list), exports Textual's SVG, and converts it to PNG with
cairosvg using a monospace font.
"""
from __future__ import annotations

import asyncio
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZE = (160, 45)
OUT = ROOT / "screenshots"


async def _select(pilot, panel: str, contains: str) -> None:
    table = pilot.app.panel(panel).table
    table.focus()
    key = next(str(k.value) for k in table.rows if contains in str(k.value))
    table.move_cursor(row=table.get_row_index(key))
    await pilot.pause()


async def _settle(pilot) -> None:
    for _ in range(3):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def scene_main(pilot):
    await _settle(pilot)


async def scene_acklog(pilot):
    await _settle(pilot)
    await pilot.press("l")
    await _settle(pilot)


async def scene_help(pilot):
    await _settle(pilot)
    await pilot.press("question_mark")
    await pilot.pause()


async def scene_modal(pilot):
    await _settle(pilot)
    await _select(pilot, "halts", "halt:")
    await pilot.press("d")
    await pilot.pause()


SCENES = {"console-main": scene_main, "console-acklog": scene_acklog, "console-help": scene_help,
          "console-dismiss-modal": scene_modal}


async def render(name: str, scene) -> str:
    from console.app import LeashApp
    from tests.conftest import CONSOLE_NOW, CONSOLE_TMUX, seed_console_fleet

    with tempfile.TemporaryDirectory() as home:
        os.environ["LEASH_HOME"] = home
        seed_console_fleet(Path(home))
        app = LeashApp(home, list_tmux=lambda: CONSOLE_TMUX, run_kennel=False, watch=False,
                       clock=lambda: CONSOLE_NOW, source="ops@demo")
        async with app.run_test(size=SIZE) as pilot:
            await scene(pilot)
            return app.export_screenshot(title="leash")


def to_png(svg: str, target: Path) -> None:
    import cairosvg

    # Textual asks for Fira Code; the machine's monospace font stands in for it.
    svg = re.sub(r"font-family:[^;\"]*", "font-family: DejaVu Sans Mono, monospace", svg)
    cairosvg.svg2png(bytestring=svg.encode(), write_to=str(target), output_width=1600)


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for name, scene in SCENES.items():
        svg = asyncio.run(render(name, scene))
        (OUT / f"{name}.svg").write_text(svg)
        to_png(svg, OUT / f"{name}.png")
        print(f"screenshots/{name}.png")


if __name__ == "__main__":
    main()
