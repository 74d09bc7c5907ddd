"""``leash demo``'s home: it passes ``leash doctor``, its warrant and breaker
are there to be looked at for minutes, and ``--home DIR`` puts it in DIR and
keeps it there."""
from __future__ import annotations

import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..support.checkout import ROOT
from ..support.waiting import wait_for

NOW = 1_900_000_000.0
LOOKED_AT = 10 * 60          # a newcomer's first minutes in the console


@pytest.fixture
def demo(tmp_path, tmux_socket):
    """A live demo's home (agents on the test's private tmux server)."""
    from leash.console.tui.demo import demo_home, prepare_demo

    home = demo_home(str(tmp_path / "demo-home"))
    prepare_demo(home, str(tmux_socket), now=NOW)
    return home


def test_the_demo_home_passes_doctor(demo, cli):
    from leash.core.views.doctor import examine

    failures = [f for f in examine(demo, now=NOW + 1) if f.level == "fail"]
    assert failures == []
    assert stat.S_IMODE((Path(demo) / "config.toml").stat().st_mode) == 0o600
    result = cli("--home", demo, "doctor")
    assert result.code == 0, result


def test_the_demo_warrant_and_breaker_last_for_minutes(demo):
    from leash.console.tui.demo import DEMO_BREAKER, DEMO_BREAKER_LIMITS
    from leash.core.base.config import load_config
    from leash.core.store.select import backend_for

    timeouts = load_config(demo)["warrants"]["timeouts"]
    assert timeouts[0] >= LOOKED_AT / 2 and sum(timeouts) >= LOOKED_AT  # the first gate alone, then all of them
    breakers = backend_for(demo).breakers
    for later in (0, LOOKED_AT, 3 * LOOKED_AT):
        assert breakers.tripped(DEMO_BREAKER, **DEMO_BREAKER_LIMITS, now=NOW + later), later
    warrant, = backend_for(demo).warrants.pending()
    assert warrant.target == "agent-silent"


def test_demo_home_must_be_new_or_empty(tmp_path, cli):
    taken = tmp_path / "real-home"
    taken.mkdir()
    (taken / "stops.json").write_text("{}")
    result = cli("--home", str(taken), "demo")
    assert result.code == 2 and result.err.count("\n") == 1 and str(taken) in result.err, result
    assert [p.name for p in taken.iterdir()] == ["stops.json"]


def _screen(socket, target: str) -> str:
    return subprocess.run(["tmux", "-S", str(socket), "capture-pane", "-p", "-t", target], capture_output=True,
                          text=True).stdout


@pytest.mark.heavy("a real `leash demo` in a terminal, ~1.7 s of CPU; make test keeps the demo home's checks "
                   "above and a real terminal's console (test_console_live.py)")
def test_demo_home_flag_puts_the_demo_there_and_keeps_it(tmp_path, tmux_socket):
    home = tmp_path / "kept-demo"
    command = (f"env -u COLUMNS -u LINES TMPDIR={tmp_path} TERM=xterm-256color {sys.executable} -m leash.console.cli "
               f"demo --home {home}")
    subprocess.run(["tmux", "-S", str(tmux_socket), "new-session", "-d", "-s", "console", "-x", "160", "-y", "45",
                    "-c", str(ROOT), command], check=True)
    demo_socket = None
    try:
        wait_for(lambda: "agent-silent" in _screen(tmux_socket, "console"), timeout=20, what="the demo drawn")
        import tomllib

        demo_socket = tomllib.loads((home / "config.toml").read_text())["tmux"]["socket"]
        subprocess.run(["tmux", "-S", str(tmux_socket), "send-keys", "-t", "console", "q"], check=True)
        wait_for(lambda: subprocess.run(["tmux", "-S", str(demo_socket), "has-session"],
                                          capture_output=True).returncode != 0, timeout=15, what="the demo over")
        time.sleep(0.5)  # the demo's own clean-up, after its tmux server, would remove the home: it must not
        assert (home / "stop_ack_log.jsonl").exists(), "the demo's --home was not kept"
    finally:
        if demo_socket:
            subprocess.run(["tmux", "-S", str(demo_socket), "kill-server"], capture_output=True)
