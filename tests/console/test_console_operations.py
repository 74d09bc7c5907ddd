"""One dialog shape for every front end: an ``Operation`` of console/operations.py
says what an action asks and runs, without the Textual console; ``Operations``
is typed against the store protocols, so a misspelled store call fails the
type check; the console's keys are bindings by id in Textual's own keymap."""
from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from leash.core import StopProtocol

from ..support.checkout import ROOT
from ..support.console import pressed, running, select, settle

SHARED = ROOT / "console" / "operations.py"
STOP_CALL = "self.backend.stops.stop(name, source=self.source, reason=c.text)"


def test_every_dialog_the_console_opens_is_built_without_the_textual_console(home):
    """The fleet stop, a warrant, a lock and the rest are ``Operations``': a
    front end with no Textual (``leash serve``, the CLI) asks the same."""
    code = textwrap.dedent("""
        import sys
        from leash.console.operations import Confirmed, Operation, Operations
        from leash.core.store.select import backend_for

        backend = backend_for(None)
        operations = Operations(backend, "ops@test")
        session = {"name": "agent-a", "agents": [], "in_tmux": True, "tmux_session": "agent-a"}
        asked = {kind: operations.ask(kind, row) for kind, row in (
            ("fleet_stop", None), ("hands_off", None), ("hands_off", session), ("warrant", session),
            ("stop", session))}
        assert all(isinstance(operation, Operation) for operation in asked.values()), asked
        assert asked["warrant"].check(Confirmed()) == "a warrant needs a reason"
        assert asked["hands_off"].check(Confirmed(values=(("entity", "x"), ("hours", "nan")))).startswith("hours ")
        print(asked["fleet_stop"].run(Confirmed(text="window")))
        print(sorted(name for name in sys.modules if name.split(".")[0] in ("textual", "rich")
                     or name.startswith("leash.console.tui")))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60,
                          env={**os.environ, "LEASH_HOME": str(home)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["fleet stopped", "[]"], done.stdout
    assert StopProtocol(home).stops.snapshot()["fleet"]["reason"] == "window"


def test_the_dialog_has_one_shape_and_the_console_no_private_bindings():
    console = ROOT / "console"
    assert not (console / "tui" / "ask.py").exists()
    texts = {path.relative_to(ROOT): path.read_text() for path in console.rglob("*.py")}
    assert [str(path) for path, text in texts.items() if re.search(r"\._bindings\b", text)] == []
    assert [str(path) for path, text in texts.items() if "ask_of" in text or "ConsoleOperations" in text] == []
    confirm = ast.parse(texts[console.relative_to(ROOT) / "tui" / "screens" / "confirm.py"])
    screen = next(node for node in confirm.body if isinstance(node, ast.ClassDef) and node.name == "ConfirmScreen")
    init = next(node for node in screen.body if isinstance(node, ast.FunctionDef) and node.name == "__init__")
    assert [arg.arg for arg in init.args.args + init.args.kwonlyargs] == ["self", "operation"]


# mypy's cache for these checks, kept between runs in the checkout's (git-ignored)
# .cache: from cold it costs ~15 s of CPU, warm ~2 s. Each check runs in a
# folder of its own: mypy takes a file at the path, size and second its cache
# entry records as unchanged (a typo of the same length written within the
# same second would be), and at a path it has not seen it compares the hash.
MYPY_TEST_CACHE = ROOT / ".cache" / "mypy-tests"


def checkout_copy(tmp_path, monkeypatch):
    """console/ copied beside the checkout's core/, linked as ``make lint``
    links them for mypy (.cache/mypy-path), in a new working folder."""
    tree = Path(tempfile.mkdtemp(prefix="tree-", dir=tmp_path))
    shutil.copytree(ROOT / "console", tree / "console", ignore=shutil.ignore_patterns("__pycache__"))
    links = tree / ".cache" / "mypy-path" / "leash"
    links.mkdir(parents=True)
    (links / "core").symlink_to(ROOT / "core")
    (links / "console").symlink_to(tree / "console")
    monkeypatch.chdir(tree)  # the configuration's paths (.cache/mypy-path) are the working folder's
    return tree


def mypy_errors(tmp_path, monkeypatch, operations: str) -> list[str]:
    """mypy with the project's configuration, with ``operations`` as
    console/operations.py: its errors in that file."""
    from mypy import api

    tree = checkout_copy(tmp_path, monkeypatch)
    (tree / "console" / "operations.py").write_text(operations)
    MYPY_TEST_CACHE.mkdir(parents=True, exist_ok=True)
    out, err, _ = api.run(["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(MYPY_TEST_CACHE),
                           "-p", "leash.console.operations"])
    assert not err, err
    return [line for line in out.splitlines() if "console/operations.py" in line and ": error:" in line]


def test_a_misspelled_store_call_in_the_operations_fails_the_type_check(tmp_path, monkeypatch):
    source = SHARED.read_text()
    assert source.count(STOP_CALL) == 1
    assert mypy_errors(tmp_path, monkeypatch, source) == []
    misspelled = source.replace(STOP_CALL, "self.backend.stops.stopp(name, sourc=self.source, reason=c.text)")
    errors = mypy_errors(tmp_path, monkeypatch, misspelled)
    assert any('"StopStore" has no attribute "stopp"' in line for line in errors), errors


async def test_a_remapped_key_is_its_bindings_in_textuals_keymap_the_footer_shows_it(console_app, home):
    from leash.console.tui.screens.help import help_table

    (home / "config.toml").write_text('[console.keys]\nstop = "x"\npeek = "o"\n')
    app = console_app()
    async with running(app) as pilot:
        await select(pilot, app, "sessions", "agent-answers")
        active = app.screen.active_bindings
        assert active["x"].binding.id == "stop" and "s" not in active
        assert active["o"].binding.id == "peek"
        footer = " ".join(str(key.render()) for key in app.screen.query("FooterKey"))
        assert "x Stop" in footer and "s Stop" not in footer, footer
        keys, descriptions = (list(column.cells) for column in help_table(app.key_actions).columns[:2])
        shown = dict(zip(descriptions, keys, strict=True))
        assert (shown["Stop"], shown["Peek pane"]) == ("x", "o")  # the help screen's keys
        await pilot.press("s")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "DashboardScreen"  # s is nothing now
        await pilot.press("x")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "ConfirmScreen"
        await pilot.press("ctrl+y")
        await settle(pilot, app)
        assert StopProtocol(home).is_stopped("agent-answers")


async def test_enter_still_filters_and_moves_on_the_rows_when_peek_is_on_another_key(console_app, home):
    """Textual moves a remapped binding by taking its old key from the bindings
    on it: Enter's other bindings (the filter's, the table's) stay."""
    (home / "config.toml").write_text('[console.keys]\npeek = "o"\n')
    app = console_app()
    async with running(app) as pilot:
        await pilot.press("1", "slash", *"silent", "enter")
        await pilot.pause()
        table = app.panel("sessions").table
        assert app.focused is table and table.row_count == 1
        assert app.screen.active_bindings["enter"].binding.action == "table('select_cursor')"


async def test_the_palette_opens_on_the_key_console_keys_gives_it(console_app, home):
    (home / "config.toml").write_text('[console.keys]\ncommand_palette = "ctrl+o"\n')
    app = console_app()
    async with running(app) as pilot:
        assert await pressed(pilot, "ctrl+p") == "DashboardScreen"  # the palette moved off it
        assert await pressed(pilot, "ctrl+o") == "CommandPalette"
