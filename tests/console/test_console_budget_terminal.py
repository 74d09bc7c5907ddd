"""Raising a held cap in a real terminal: ``leash console`` in a tmux pane at
80x24 over the demo's fleet and spend (seeded at the real time), typed at as
a person types (``tests/support/console_terminal.py``): ``8`` for the Budget
panel, the held cap's row filtered, ``+`` with the new limit typed in the
same burst, Enter, the reason, ctrl+y. The store and the ack log say what
was done, and the panel stops saying HELD."""
from __future__ import annotations

import os
import shutil
import time

import pytest

from ..support.console_terminal import seed_live_fleet, start_console, stop_servers

pytestmark = [pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"), pytest.mark.heavy(
    "a console process in a real terminal, ~2.6 s of CPU; make test raises a held cap by the same keys under "
    "Pilot (test_console_budget.py) and types into dialogs in a real terminal (test_console_dialogs_typed.py)")]

HELD_SESSION = "claude-c044"
STORE_WAIT_SECONDS = 5.0


def held_counter(backend):
    return next(c for c in backend.budget.counters(cap="session-daily") if c.bucket == HELD_SESSION)


def test_a_held_cap_is_raised_by_keys_typed_in_a_real_terminal(tmp_path, tmux_socket):
    from leash.console.tui.demo import budget_config, seed_budget
    from leash.core.store.select import backend_for

    home = tmp_path / "home"
    seed_live_fleet(home)
    descriptor = os.open(home / "config.toml", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(descriptor, "w") as config:
        config.write(budget_config())
    seed_budget(home, now=time.time())
    backend = backend_for(home)
    assert held_counter(backend).held
    try:
        term = start_console(tmux_socket, home)
        term.select("8", HELD_SESSION)
        screen = term.wait_for("HELD")
        assert f"session/{HELD_SESSION}" in screen
        term.type_after("+", "12.5", "Enter")  # the limit arrives with the key, before the dialog is drawn
        term.type("reviewed the refactor", "C-y")
        deadline = time.monotonic() + STORE_WAIT_SECONDS
        while held_counter(backend).held and time.monotonic() < deadline:
            time.sleep(0.05)
        counter = held_counter(backend)
        assert counter.raised_to == 12.5 and not counter.held
        raised = [line for line in backend.acklog.read() if line.event == "budget_raised"]
        assert len(raised) == 1 and raised[0].reason == "reviewed the refactor"
        assert raised[0].source.startswith("pilot@")  # the operator at the console (USER=pilot)
        term.wait_for(lambda screen: f"session/{HELD_SESSION}" in screen and "HELD" not in screen)
    finally:
        stop_servers(tmux_socket)
