"""The console's seams: one registry of panels that the keymap, the tab strip,
the help screen and the dashboard read; a feed that delivers what it reads as
messages; one refusal error for every command and key."""
from __future__ import annotations

import ast
import time

import pytest

from leash.console.tui import panels
from leash.console.tui.keymap import CONFIG_NAMES, PANELS, keymap

from ..support.checkout import ROOT
from ..support.console import CONSOLE_TMUX, console, running, settle


def test_each_panel_is_declared_once_and_everything_reads_it():
    keys = [spec.key for spec in panels.PANELS]
    assert len(set(keys)) == len(keys) and PANELS == tuple(keys)
    focus = [action for action in keymap() if action.base == "focus_panel"]
    assert [(action.key, action.description) for action in focus] == \
        [(str(number), spec.short) for number, spec in enumerate(panels.PANELS, start=1)]
    assert all(CONFIG_NAMES[f"focus_{key}"] == f"focus_panel('{key}')" for key in keys)
    assert [spec.key for spec in panels.GRID if spec.across] == [spec.key for spec in panels.GRID][:1]


async def test_the_dashboard_lays_out_the_registry(console_app):
    from leash.console.tui.screens.help import help_table
    from leash.console.tui.widgets.tabs import PanelTabs

    app = console_app()
    async with running(app, (160, 45)):
        grid = [panel.key for panel in app.screen.query("#panels > .panel")]
        assert grid == [spec.key for spec in panels.GRID]
        tabs = [str(tab.label) for tab in app.screen.query_one(PanelTabs).query("Tab")]
        assert tabs == [f"{number} {spec.short}" for number, spec in panels.numbered()]
        for spec in panels.PANELS:
            assert app.panel(spec.key).panel_title == spec.title
            assert len(app.panel(spec.key).rows) == len(spec.rows(app.view_data))
        applies = set(help_table(app.key_actions).columns[2].cells)  # the help screen's "Applies to"
        assert "Pending halts" in applies and "Sessions, Hands-off locks" in applies


def test_no_data_reaches_the_ui_by_call_from_thread_and_the_app_has_no_key_handler():
    sources = {path: path.read_text() for path in (ROOT / "console").rglob("*.py")}
    assert not [str(path) for path, text in sources.items() if "call_from_thread" in text]
    app = ast.parse(sources[ROOT / "console" / "tui" / "app.py"])
    leash_app = next(node for node in app.body if isinstance(node, ast.ClassDef) and node.name == "LeashApp")
    assert "on_key" not in {node.name for node in leash_app.body if isinstance(node, ast.FunctionDef)}


async def test_reads_asked_for_while_one_runs_are_served_once_after_it(home, monkeypatch):
    import threading

    import leash.core.views.fleet as fleet

    real_view, started, release = fleet.view, [], threading.Event()

    def slow_view(*args, **kwargs):
        started.append(time.monotonic())
        release.wait(5)
        return real_view(*args, **kwargs)

    monkeypatch.setattr(fleet, "view", slow_view)
    app = console(home, list_tmux=lambda: CONSOLE_TMUX)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        for _ in range(5):  # while the first read runs
            app.refresh_view()
        release.set()
        await settle(pilot, app)
        assert len(started) == 2  # the first, and one more for the five asked meanwhile
        assert app.view_data


async def test_a_view_that_cannot_be_read_is_said_once_as_an_error(home, monkeypatch):
    import leash.core.views.fleet as fleet

    def broken(*args, **kwargs):
        raise OSError("disk on fire")

    monkeypatch.setattr(fleet, "view", broken)
    app = console(home, list_tmux=lambda: CONSOLE_TMUX)
    async with app.run_test(size=(160, 45), notifications=True) as pilot:
        await settle(pilot, app)
        said = [n for n in app._notifications if "cannot read the state home: disk on fire" in n.message]
        assert len(said) == 1 and said[0].severity == "error"
        assert app.view_data == {}


@pytest.mark.parametrize("argv, words", [
    (("resume", "nobody"), "not stopped"),  # the core refuses
    (("halts", "ack", "abcdefgh"), "no halt abcdefgh"),  # the command refuses
    (("release", "nothing-locked"), "nothing-locked"),
])
def test_every_refusal_is_one_line_and_exit_1(cli, argv, words):
    result = cli(*argv)
    assert result.code == 1, result
    assert result.err.startswith("leash: error: ") and result.err.count("\n") == 1 and words in result.err, result


def test_a_refusal_with_json_is_one_object_too(cli):
    result = cli("resume", "nobody", "--json")
    assert result.code == 1 and result.json()["exit_code"] == 1 and result.json()["ok"] is False


def test_bad_input_is_a_refusal_that_exits_2(cli):
    from leash.console.errors import Refused, UsageError

    assert issubclass(UsageError, Refused) and (Refused.exit_code, UsageError.exit_code) == (1, 2)
    result = cli("stop", "--all")
    assert result.code == 2 and result.err.count("\n") == 1 and "--reason" in result.err
