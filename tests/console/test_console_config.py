"""The console with a config.toml that has a mistake: it starts and shows
what the file says as a warning. A ``[console.keys]`` binding it cannot use
(an unknown action, a key another action has) is left out, named by its line
and in the operator's words (``focus_acklog``, never the console's
``focus_panel('acklog')``), the action keeping its own key; ``leash doctor``
reports the same. A file that cannot be used: the console runs on the
strictest settings, as every command does, and says so."""
from __future__ import annotations

import time

import pytest

from leash.console.tui import panels
from leash.console.tui.keymap import ACTIONS, CONFIG_NAMES, KeymapError, keymap
from leash.core import StopProtocol
from leash.core.base.config import strictest_when_broken
from leash.core.base.consolekeys import DEFAULT_KEYS, PANEL_KEYS

from ..support.console import running, select, settle

BAD_KEYS = '[console.keys]\nstop = "q"\nfocus_acklg = "x"\nresume = "x"\n'


def test_the_names_and_keys_config_toml_is_judged_by_are_the_consoles():
    assert PANEL_KEYS == panels.KEYS
    by_config_name = {name: action for name, action in CONFIG_NAMES.items()}
    keys = {name: next(a.key for a in ACTIONS if a.name == action) for name, action in by_config_name.items()}
    assert keys == DEFAULT_KEYS


def test_the_actions_are_offered_by_the_operators_names_only():
    assert "focus_acklog" in CONFIG_NAMES and not [name for name in CONFIG_NAMES if "(" in name]
    with pytest.raises(KeymapError) as raised:
        keymap({"focus_panel('acklog')": "x"})
    assert "did you mean 'focus_acklog'" in str(raised.value)
    with pytest.raises(KeymapError) as raised:
        keymap({"focus_acklog": "1"})
    assert str(raised.value) == "[console.keys] focus_acklog: '1' is already the key of focus_sessions"


async def test_a_binding_the_console_cannot_use_is_left_out_with_a_warning(console_app, home):
    (home / "config.toml").write_text(BAD_KEYS)
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        said = [n.message for n in app._notifications if n.title == "config.toml"]
        assert len(said) == 2, said
        assert said[0].startswith(f"{home}/config.toml:2: key 'console.keys.stop': 'q' is already the key of quit")
        assert said[1].startswith(f"{home}/config.toml:3: key 'console.keys.focus_acklg': is not an action of "
                                  "the console (did you mean 'focus_acklog'?)")
        assert not [text for text in said if "focus_panel" in text]
        await select(pilot, app, "sessions", "agent-answers")
        await pilot.press("s")  # stop keeps its own key: "q" was left out
        await pilot.pause()
        assert app.screen.__class__.__name__ == "ConfirmScreen"
        await app.screen.run_action("confirm")  # the dialog's own confirm, whatever key it is on
        await settle(pilot, app)
        assert StopProtocol(home).is_stopped("agent-answers")
        keys = {action.name: action.key for action in app.key_actions}
        assert (keys["stop"], keys["resume"], keys["quit"], keys["focus_panel('acklog')"]) == ("s", "x", "q", "6")


def test_doctor_reports_the_bindings_left_out(cli, home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(BAD_KEYS)
    result = cli("doctor")
    found = [line for line in result.out.splitlines() if line.startswith("warn  config_warning: ")]
    assert len(found) == 2 and f"{home}/config.toml:2: key 'console.keys.stop'" in found[0], result
    assert f"{home}/config.toml:3: key 'console.keys.focus_acklg'" in found[1]
    assert "config.toml: valid" not in result.out


async def test_the_console_starts_on_a_broken_file_and_says_so(console_app, home):
    (home / "config.toml").write_text('[console.keys]\nstop = "x"\n[warrants]\ndogs = 0\n')
    with strictest_when_broken():  # as `leash` holds it for the console
        app = console_app(clock=time.time)
        async with running(app) as pilot:
            (said,) = [n.message for n in app._notifications if n.title == "config.toml"]
            assert said.startswith(f"config.toml cannot be used: {home}/config.toml:4: key 'warrants.dogs'"), said
            await select(pilot, app, "sessions", "agent-answers")
            await pilot.press("x")  # none of the broken file's values: stop is on its own key
            await pilot.pause()
            assert app.screen.__class__.__name__ != "ConfirmScreen"
            await pilot.press("s")
            await pilot.pause()
            assert app.screen.__class__.__name__ == "ConfirmScreen"
