"""The console under test: the demo's fleet at a fixed time, the console as
every test builds it, and driving it through Textual's pilot (a screen size,
waiting for its workers, selecting a row, the screen as text).
``screenshots/render.py`` and ``bench/console.py`` seed the same fleet."""
from __future__ import annotations

import time
from contextlib import asynccontextmanager
from typing import AsyncIterator, Callable

CONSOLE_NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z
CONSOLE_TMUX = [
    {"name": "agent-answers", "created": int(CONSOLE_NOW - 3600), "attached": False,
     "panes": [{"id": "%0", "pid": 101, "command": "python3", "active": True}]},
    {"name": "agent-chatty", "created": int(CONSOLE_NOW - 3000), "attached": False,
     "panes": [{"id": "%1", "pid": 102, "command": "python3", "active": True}]},
    {"name": "agent-silent", "created": int(CONSOLE_NOW - 2400), "attached": False,
     "panes": [{"id": "%2", "pid": 103, "command": "cat", "active": True}]},
]
SIZE = (160, 45)  # the terminal the pilot tests run in unless they say otherwise


def seed_console_fleet(home) -> None:
    """The demo's fleet at a fixed time, with one warrant mid-interrogation."""
    from leash.console.tui.demo import seed_fleet, seed_warrant
    from leash.core.base.clock import iso
    from leash.core.base.statefile import write_json
    from leash.core.state.warrants import WarrantQueue

    seed_fleet(home, now=CONSOLE_NOW)
    seed_warrant(home, now=CONSOLE_NOW - 10)
    queue = WarrantQueue(home)
    state, fd = queue.claim_next(owner={"pid": 0, "host": "test"}, now=CONSOLE_NOW - 8)
    state.update(state="interrogating", attempt=1, last_message_at=iso(CONSOLE_NOW - 5),
                 next_timeout=iso(CONSOLE_NOW + 15), baseline=0)
    write_json(queue.active_path(state["id"]), state)
    queue.release(state["id"], fd)


class StridingClock:
    """The dashboard's key clock in a test (``key_clock``): each reading an hour
    after the one before, so the keys' settle after a dialog is always over
    by the next key (a test of the settle gives its own clock)."""
    STRIDE = 3600.0

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += self.STRIDE
        return self.now


def console(home, key_clock=None, **options):
    """The console as every test builds it: no kennel and no watcher unless
    asked for, acting as ``ops@test``, its keys' settle after a dialog
    measured by ``key_clock`` (a ``StridingClock`` unless given); the other
    ``options`` go to ``LeashApp``."""
    from leash.console.tui.app import LeashApp

    options.setdefault("run_kennel", False)
    options.setdefault("watch", False)
    options.setdefault("source", "ops@test")
    app = LeashApp(home, **options)
    app.dashboard.key_clock = key_clock or StridingClock()
    return app


async def settle(pilot, app, cycles: int = 3):
    """Let the console's workers finish and the screen catch up."""
    from textual.worker import WorkerCancelled

    for _ in range(cycles):
        await pilot.pause()
        try:
            await app.workers.wait_for_complete()
        except WorkerCancelled:  # an exclusive worker a newer one replaced: it is done too
            pass
    await pilot.pause()


async def until(pilot, holds: Callable[[], bool], what: str, *, timeout: float = 5.0) -> None:
    """Pause, the screen catching up, until ``holds()``; after ``timeout``
    seconds fail saying ``what`` never came (a wait for the screen, not a sleep)."""
    deadline = time.monotonic() + timeout
    while not holds():
        assert time.monotonic() < deadline, f"never: {what}"
        await pilot.pause()


async def ready(pilot, app):
    """Settled, with the first view read."""
    await settle(pilot, app)
    assert app.view_data, "the first view never arrived"


async def select(pilot, app, panel: str, key_contains: str):
    """Focus ``panel`` by its number key and put the cursor on the row whose key holds ``key_contains``."""
    await pilot.press({"sessions": "1", "halts": "2", "warrants": "3", "locks": "4", "loops": "5",
                       "acklog": "6"}[panel])
    table = app.panel(panel).table
    key = next(str(k.value) for k in table.rows if key_contains in str(k.value))
    table.move_cursor(row=table.get_row_index(key))
    await pilot.pause()


@asynccontextmanager
async def running(app, size: tuple[int, int] = SIZE) -> AsyncIterator:
    """``app`` run under Textual's pilot at ``size``, its first view read: the pilot."""
    async with app.run_test(size=size) as pilot:
        await ready(pilot, app)
        yield pilot


async def open_dialog(pilot, app, key: str, *typed: str, on: tuple[str, str] | None = None) -> None:
    """``key`` pressed, then ``typed``, on the row ``on`` (a panel and what its
    row's key holds: selected first; None: on what is focused): its dialog is up."""
    if on is not None:
        await select(pilot, app, *on)
    await pilot.press(key, *typed)
    await pilot.pause()
    assert app.screen.__class__.__name__ == "ConfirmScreen", key


async def confirm(pilot, app, key: str, *typed: str, on: tuple[str, str] | None = None,
                  confirm_key: str = "ctrl+y") -> None:
    """Press, select, confirm: the dialog of ``key`` on the row ``on`` (see
    ``open_dialog``), ``typed`` into its field, confirmed with ``confirm_key``;
    the console settled after it."""
    await open_dialog(pilot, app, key, on=on)
    await pilot.press(*typed, confirm_key)
    await settle(pilot, app)


async def pressed(pilot, *keys: str) -> str:
    """``keys`` pressed and the console settled: the name of the screen on top."""
    await pilot.press(*keys)
    await settle(pilot, pilot.app)
    return pilot.app.screen.__class__.__name__


def screen_text(app) -> str:
    """What the terminal shows now, as text."""
    return "\n".join("".join(segment.text for segment in strip) for strip in app.screen._compositor.render_strips())


# ------------------------------------------------------------ fleets the layout tests and screenshots show
HOSTS = ("web1", "web2")  # the shared store's two hosts (seed_shared_fleet)
LONG_DESCRIPTION = "Write to infra/prod/main.tf would touch a file under the hands-off lock path:infra/prod/**"
LONG_SESSION = "claude-7f3a"


def record_long_halt(home) -> str:
    from leash.core.state.halts import api as halts

    return halts.record_halt({"session_token": LONG_SESSION, "halt_type": "security", "severity": "critical",
                              "condition_name": "hands_off_path_write", "description": LONG_DESCRIPTION},
                             home=home, now=CONSOLE_NOW - 30)["halt_id"]



def seed_long_fleet(home) -> str:
    """The console's seeded fleet plus a critical halt whose description is
    longer than any column at any size; returns the halt's id."""
    seed_console_fleet(home)
    return record_long_halt(home)


def seed_shared_fleet(url: str, root) -> dict:
    """Two hosts' worth of fleet in one store; returns each host's backend
    (the caller closes them). web1 is the console's host: its tmux sessions are
    ``CONSOLE_TMUX``."""
    from leash.core.store.postgres import PostgresBackend

    backends = {}
    for host in HOSTS:
        folder = root / f"home-{host}"
        folder.mkdir(mode=0o700, exist_ok=True)
        backends[host] = PostgresBackend(url, home=folder, host=host)
    web1, web2 = backends["web1"], backends["web2"]
    moment = CONSOLE_NOW - 30
    for n, tmux in enumerate(CONSOLE_TMUX):
        web1.sessions.observe(f"claude-web1-{n}", now=moment, tool="Bash", tmux_session=f"web1/{tmux['name']}",
                              tmux_session_id=f"web1/${n}", tmux_pane=f"web1/{tmux['panes'][0]['id']}", cwd="/srv")
    for n, name in enumerate(("agent-build", "agent-docs", "agent-silent")):
        web2.sessions.observe(f"claude-web2-{n}", now=moment - 60 * n, tool="Edit", tmux_session=f"web2/{name}",
                              tmux_session_id=f"web2/${n}", tmux_pane=f"web2/%{n}", cwd="/srv")
    web1.stops.stop("web2/agent-docs", source="ops@web1", reason="rewriting the deploy docs by hand",
                    now=moment)
    web1.stops.stop("agent-silent", source="ops@web1", reason="no output on any host", now=moment)
    web2.locks.lock("web2/agent-build", hours=2, source="ops@web2", reason="release branch frozen",
                    now=moment)
    return backends
