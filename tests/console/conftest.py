"""The console tests' own ``console_app``: the same console on the same
seeded fleet as the suite's (tests/conftest.py), its home a copy of one fleet
seeded once per test process. Seeding writes every store (~12 ms, ~100 ms for
the first); a copy is ~1 ms, and the console tests start ~150 consoles. A
template that fails to seed fails the first test that asks for it. The
browser tests' one Chromium per module (``chromium``) is tests/support/browser.py's."""
from __future__ import annotations

import shutil

import pytest

from ..support.browser import chromium  # noqa: F401  (a fixture the browser tests ask for)
from ..support.console import CONSOLE_NOW, CONSOLE_TMUX, console, seed_console_fleet


@pytest.fixture(autouse=True, scope="session")
def _pilot_looks_for_idle_every_5_ms():
    """Textual's Pilot waits after every key and pause until the process is
    idle, judged over windows of 20 ms (``textual._wait``): with a few dozen
    keys and pauses a test, most of a console test's time was those windows.
    Judged over 5 ms (with the same proportion of work allowed in one), the
    same keys are read the same way, four times sooner."""
    from textual import _wait

    saved = _wait.SLEEP_GRANULARITY, _wait.SLEEP_IDLE
    _wait.SLEEP_GRANULARITY, _wait.SLEEP_IDLE = 1 / 200, 1 / 200 / 20
    yield
    _wait.SLEEP_GRANULARITY, _wait.SLEEP_IDLE = saved


@pytest.fixture(autouse=True, scope="session")
def _consoles_draw_no_animation():
    """The consoles under Pilot slide nothing: a tab strip's underline glides
    for 0.3 s at 60 frames a second after a number key on a narrow screen, and
    Pilot waits for every animation to end after every key. Where things end
    up is the same (Textual's ``animation_level`` "none" jumps to the end);
    the consoles in a real terminal (``console_terminal``) still animate."""
    from textual import constants

    saved = constants.TEXTUAL_ANIMATIONS
    constants.TEXTUAL_ANIMATIONS = "none"
    yield
    constants.TEXTUAL_ANIMATIONS = saved


@pytest.fixture(scope="session")
def console_fleet(tmp_path_factory):
    """The seeded fleet every ``console_app`` home starts as a copy of (pytest removes it with its other folders)."""
    template = tmp_path_factory.mktemp("console-fleet") / "leash-home"
    seed_console_fleet(template)
    return template


@pytest.fixture
def console_app(home, console_fleet):
    """A console on a seeded home with a fixed clock, a fixed tmux list, no
    watcher thread of its own choosing and no kennel."""
    shutil.copytree(console_fleet, home, symlinks=True)

    def make(**options):
        options.setdefault("list_tmux", lambda: CONSOLE_TMUX)
        options.setdefault("clock", lambda: CONSOLE_NOW)
        return console(home, **options)

    return make
