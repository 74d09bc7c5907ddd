"""Render the console to PNG for the README: `make screenshots` (or
`python screenshots/render.py NAME...` for those pictures only).

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


async def scene_stop_interrupt(pilot):
    """The stop modal with "also interrupt the call in flight" ticked."""
    await _settle(pilot)
    await _select(pilot, "sessions", "agent-answers")
    await pilot.press("s", "enter")  # from the reason field to the Stop button, where i ticks the box
    await pilot.pause()
    await pilot.press("i")
    await pilot.pause()


async def scene_long_halt(pilot):
    await _settle(pilot)
    await pilot.press("2")
    await _select(pilot, "halts", pilot.app.long_halt_id)
    await _settle(pilot)


async def scene_zoomed(pilot):
    await scene_long_halt(pilot)
    await pilot.press("z")
    await _settle(pilot)


async def scene_why(pilot):
    await _settle(pilot)
    await pilot.press("1")
    await _select(pilot, "sessions", "agent-answers")
    await pilot.press("i")
    await _settle(pilot)


async def scene_approvals(pilot):
    """The Approvals panel focused: the waiting Edit's diff in the detail line."""
    await _settle(pilot)
    await pilot.press("7")
    await _settle(pilot)


async def scene_deny(pilot):
    """Denying it, with a message for the agent typed."""
    await scene_approvals(pilot)
    await pilot.press("n", *"keep total() as it is; add the tax in checkout.py")
    pilot.app.screen.query_one("#confirm-text").cursor_blink = False
    await pilot.pause()


async def scene_tmux_unreachable(pilot):
    """The console asking a tmux server that is not there: the summary says so."""
    await _settle(pilot)


async def scene_budget(pilot):
    """The Budget panel focused (8) on the cap that holds claude-c044: the demo's spend and caps."""
    await _settle(pilot)
    await pilot.press("8")
    await _select(pilot, "budget", "claude-c044")
    await _settle(pilot)


# name: (scene, size, whether the fleet has the long halt)
SCENES = {"console-main": (scene_main, SIZE, False), "console-acklog": (scene_acklog, SIZE, False),
          "console-help": (scene_help, SIZE, False), "console-dismiss-modal": (scene_modal, SIZE, False),
          "console-stop-interrupt": (scene_stop_interrupt, SIZE, False),
          "console-approvals": (scene_approvals, SIZE, False), "console-deny-modal": (scene_deny, SIZE, False),
          "console-80x24-approvals": (scene_approvals, (80, 24), False),
          "console-80x24-long-halt": (scene_long_halt, (80, 24), True),
          "console-200x50-long-halt": (scene_long_halt, (200, 50), True),
          "console-80x24-zoomed": (scene_zoomed, (80, 24), True),
          "console-200x50-zoomed": (scene_zoomed, (200, 50), True),
          "console-80x24-why": (scene_why, (80, 24), True),
          "console-200x50-why": (scene_why, (200, 50), True)}
# Scenes whose fleet has spent against the demo's caps (console.tui.demo.seed_budget), one of them held.
BUDGET_SCENES = {"console-budget": (scene_budget, SIZE, False)}
SCENES.update(BUDGET_SCENES)
# Scenes whose console asks a real tmux client at a socket nothing listens on.
DEAD_TMUX_SCENES = {"console-tmux-unreachable": scene_tmux_unreachable}


async def render(name: str, scene, size, long_halt: bool) -> str:
    from leash.console.tui.app import LeashApp
    from leash.core import StopProtocol
    from tests.support.console import CONSOLE_NOW, CONSOLE_TMUX, seed_console_fleet, seed_long_fleet

    with tempfile.TemporaryDirectory() as home:
        os.environ["LEASH_HOME"] = home
        halt_id = None
        if long_halt:
            halt_id = seed_long_fleet(Path(home))
            StopProtocol(home).hands_off("ezra", hours=2, reason="migrating the billing schema", source="ops@demo",
                                        now=CONSOLE_NOW - 60)
        else:
            seed_console_fleet(Path(home))
        if name in BUDGET_SCENES:
            from leash.console.tui.demo import budget_config, seed_budget

            with open(os.path.join(home, "config.toml"), "a") as config:
                config.write(budget_config())
            seed_budget(home, now=CONSOLE_NOW)
        if name in DEAD_TMUX_SCENES:
            from leash.core.base.tmux import Tmux

            app = LeashApp(home, tmux=Tmux(os.path.join(home, "no-tmux-here.sock"), home=home), run_kennel=False,
                           watch=False, clock=lambda: CONSOLE_NOW, source="ops@demo")
        else:
            app = LeashApp(home, list_tmux=lambda: CONSOLE_TMUX, run_kennel=False, watch=False,
                           clock=lambda: CONSOLE_NOW, source="ops@demo")
        app.long_halt_id = halt_id
        async with app.run_test(size=size) as pilot:
            await scene(pilot)
            return app.export_screenshot(title="leash")


async def render_shared(scene) -> str:
    """The console of host web1 on a shared PostgreSQL store holding two hosts' fleet."""
    from leash.console.tui.app import LeashApp
    from tests.support.console import CONSOLE_NOW, CONSOLE_TMUX, seed_shared_fleet
    from tests.support.postgres import Cluster

    cluster = Cluster()
    try:
        with tempfile.TemporaryDirectory() as root:
            backends = seed_shared_fleet(cluster.url(), Path(root))
            try:
                web1 = backends["web1"]
                app = LeashApp(web1.home, backend=web1, list_tmux=lambda: CONSOLE_TMUX, run_kennel=False,
                               watch=False, clock=lambda: CONSOLE_NOW, source="ops@web1")
                async with app.run_test(size=SIZE) as pilot:
                    await scene(pilot)
                    return app.export_screenshot(title="leash")
            finally:
                for backend in backends.values():
                    backend.close()
    finally:
        cluster.stop()


async def scene_hosts_filtered(pilot):
    await _settle(pilot)
    await pilot.press("1", "slash", *"host:web2")
    await _settle(pilot)


SHARED_SCENES = {"console-hosts": scene_main, "console-hosts-filtered": scene_hosts_filtered}


def to_png(svg: str, target: Path, width: int = 1600) -> None:
    import cairosvg

    # Textual asks for Fira Code; the machine's monospace font stands in for it.
    svg = re.sub(r"font-family:[^;\"]*", "font-family: DejaVu Sans Mono, monospace", svg)
    cairosvg.svg2png(bytestring=svg.encode(), write_to=str(target), output_width=width)


def main(only: list[str]) -> None:
    """Every picture; ``only``: the pictures of those names (``render.py console-budget``)."""
    OUT.mkdir(exist_ok=True)
    for name, (scene, size, long_halt) in [*SCENES.items(),
                                           *((name, (scene, SIZE, False)) for name, scene in DEAD_TMUX_SCENES.items())]:
        if only and name not in only:
            continue
        svg = asyncio.run(render(name, scene, size, long_halt))
        (OUT / f"{name}.svg").write_text(svg)
        to_png(svg, OUT / f"{name}.png", width=max(800, size[0] * 10))
        print(f"screenshots/{name}.png")
    for name, scene in SHARED_SCENES.items():
        if only and name not in only:
            continue
        svg = asyncio.run(render_shared(scene))
        (OUT / f"{name}.svg").write_text(svg)
        to_png(svg, OUT / f"{name}.png", width=max(800, SIZE[0] * 10))
        print(f"screenshots/{name}.png")


if __name__ == "__main__":
    main(sys.argv[1:])
