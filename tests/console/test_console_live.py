"""The console live: another process writes, the watcher brings it to the
panel; and the console in a real terminal (a tmux pane on a private server),
driven with send-keys and read with capture-pane."""
from __future__ import annotations

import os
import subprocess
import sys
import time

from leash.core import StopProtocol

from ..support.checkout import ROOT, leash_argv
from ..support.console import CONSOLE_TMUX, console, running

WATCH_ROUNDS = 1000  # pauses of 20 ms at least: far beyond any debounce, bounded all the same


async def test_a_change_by_another_process_shows_through_the_watcher(home):
    StopProtocol(home)  # the home exists before the watcher starts
    app = console(home, list_tmux=lambda: CONSOLE_TMUX, watch=True)
    async with app.run_test(size=(160, 45)) as pilot:
        for _ in range(10):
            await pilot.pause()
            if app.view_data:
                break
        await pilot.pause(0.3)  # the watcher is up
        subprocess.run(leash_argv() + ["stop", "--force", "agent-silent", "--reason", "from another process"], cwd=ROOT,
                       check=True, capture_output=True, env=dict(os.environ))
        # Only the watcher reads the home again: the tmux list and the clock
        # are fixed, and the tickers redraw what was read. How soon it shows
        # is a figure for bench/console.py, not a bound to assert under load.
        shown = False
        for _ in range(WATCH_ROUNDS):
            await pilot.pause(0.02)
            row = app.panel("sessions").rows.get("tmux:agent-silent")
            if row and row["state"] == "stopped":
                shown = True
                break
        assert shown, "the stop never reached the sessions panel"


async def _stop_shows(pilot, app, name: str, rounds: int = WATCH_ROUNDS) -> bool:
    for _ in range(rounds):
        await pilot.pause(0.02)
        row = app.panel("sessions").rows.get(f"tmux:{name}")
        if row and row["state"] == "stopped":
            return True
    return False


async def test_each_change_of_a_given_stream_reads_the_view_again(home):
    """The live view needs only an async iterator of Change (a daemon's
    subscribe stream, say): nothing watches the home, and a stop made
    elsewhere shows when the stream says the stops changed."""
    import asyncio

    from leash.core.store.files import FileBackend
    from leash.core.store.records import Change
    from leash.core.store.select import backend_for

    arrived: asyncio.Queue = asyncio.Queue()
    closed = []

    async def subscribed():
        try:
            while True:
                yield await arrived.get()
        finally:
            closed.append(True)

    app = console(home, list_tmux=lambda: CONSOLE_TMUX, watch=True, changes=subscribed())
    assert isinstance(app.backend, FileBackend) and app.backend.home == app.home
    async with app.run_test(size=(160, 45)) as pilot:
        for _ in range(WATCH_ROUNDS):  # not ready(): that waits for every worker, and this one follows the stream
            await pilot.pause(0.02)
            if app.view_data:
                break
        backend_for(home).stops.stop("agent-silent", source="elsewhere", reason="from another host")
        for _ in range(20):  # no watcher on the home: without a change nothing is read again
            await pilot.pause(0.02)
        assert app.panel("sessions").rows["tmux:agent-silent"]["state"] != "stopped"
        read_before = app.view_data
        arrived.put_nowait(Change("kennels"))  # a heartbeat: nothing a panel shows
        for _ in range(20):
            await pilot.pause(0.02)
        assert app.view_data is read_before
        arrived.put_nowait(Change("stops"))
        assert await _stop_shows(pilot, app, "agent-silent"), "the change never reached the sessions panel"
    assert closed == [True]  # the stream is closed when the console ends


async def test_the_keys_act_through_the_backend_given(home, tmp_path):
    """A backend given to the console is where every key reads and writes."""
    from leash.core.store.files import FileBackend

    elsewhere = FileBackend(tmp_path / "elsewhere")
    app = console(home, list_tmux=lambda: CONSOLE_TMUX, backend=elsewhere)
    async with running(app, (160, 45)) as pilot:
        await pilot.press("s")
        await pilot.pause()
        await pilot.press("ctrl+y")  # the dialog's confirm (y in its reason field is a letter)
        for _ in range(WATCH_ROUNDS):
            await pilot.pause(0.02)
            if elsewhere.stops.stopped():
                break
    assert list(elsewhere.stops.stopped()) == ["agent-answers"]
    assert StopProtocol(home).stops.snapshot()["sessions"] == {}


async def test_the_ack_log_screen_reads_the_backend_given_and_follows_it(home, tmp_path):
    from leash.core.store.files import FileBackend

    elsewhere = FileBackend(tmp_path / "elsewhere")
    elsewhere.stops.stop("far-away", source="other", reason="first line")
    app = console(home, list_tmux=lambda: CONSOLE_TMUX, backend=elsewhere)
    async with running(app, (160, 45)) as pilot:
        await pilot.press("l")
        table = None
        for _ in range(WATCH_ROUNDS):
            await pilot.pause(0.02)
            if app.screen.__class__.__name__ == "AckLogScreen":
                table = app.screen.query_one("#acklog-table")
                if table.row_count == 1:
                    break
        assert table is not None and table.row_count == 1
        FileBackend(elsewhere.home).stops.resume("far-away", source="other", reason="second line")
        for _ in range(WATCH_ROUNDS):
            await pilot.pause(0.02)
            if table.row_count == 2:
                break
        assert table.row_count == 2, "the new line never reached the ack log screen"


async def test_timers_and_late_reads_after_the_panels_are_gone_do_nothing(home):
    """At shutdown Textual removes the panels before the timers and the
    workers that feed them stop; a tick or a read landing then must not fail."""
    from leash.console.tui.widgets.panel import Panel, PanelTable

    StopProtocol(home)
    app = console(home, list_tmux=lambda: CONSOLE_TMUX)
    async with running(app, (160, 45)) as pilot:
        data = app.view_data
        # one panel gone; every table gone with its panel still there (as
        # Textual takes them down, children first); then all of them
        for gone in ("#panel-warrants", PanelTable, Panel):
            await app.query(gone).remove()
            app.tick_countdown()
            app.tick_ages()
            app.apply_view(data)
            await pilot.pause()


def _wait_for(socket, text: str, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = subprocess.run(["tmux", "-S", str(socket), "capture-pane", "-p", "-t", "console"],
                                capture_output=True, text=True).stdout
        if text in screen:
            return screen
        time.sleep(0.1)
    raise AssertionError(f"{text!r} never appeared on the screen:\n{screen}")


def test_the_console_in_a_real_terminal(home, tmux_socket):
    """Runs `leash` in a tmux pane, stops a session with real key presses and
    reads the result from the screen and from the core."""
    agents = str(tmux_socket) + "-agents"
    home.mkdir(mode=0o700)  # the console reads a home, never creates one
    try:
        subprocess.run(["tmux", "-S", agents, "new-session", "-d", "-s", "agent-one", "-x", "80", "-y", "10",
                        "cat > /dev/null"], check=True)
        env = {"LEASH_HOME": str(home), "LEASH_TMUX_SOCKET": agents, "TERM": "xterm-256color", "USER": "pilot"}
        command = " ".join(["env", "-u", "COLUMNS", "-u", "LINES"] + [f"{k}={v}" for k, v in env.items()]
                           + [sys.executable, "-m", "leash.console.cli", "console", "--no-kennel"])
        subprocess.run(["tmux", "-S", str(tmux_socket), "new-session", "-d", "-s", "console", "-x", "160", "-y",
                        "45", "-c", str(ROOT), command], check=True)
        _wait_for(tmux_socket, "agent-one")
        for keys in (["1"], ["s"]):
            subprocess.run(["tmux", "-S", str(tmux_socket), "send-keys", "-t", "console", *keys], check=True)
            time.sleep(0.3)
        _wait_for(tmux_socket, "Stop agent-one?")
        subprocess.run(["tmux", "-S", str(tmux_socket), "send-keys", "-t", "console", "C-y"], check=True)
        screen = _wait_for(tmux_socket, "stopped")
        assert "agent-one" in screen
        deadline = time.monotonic() + 5
        while not StopProtocol(home).is_stopped("agent-one") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert StopProtocol(home).stops.snapshot()["sessions"]["agent-one"]["source"].startswith("pilot@")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # q again while the keys still settle after the dialog
            subprocess.run(["tmux", "-S", str(tmux_socket), "send-keys", "-t", "console", "q"], capture_output=True)
            time.sleep(0.3)
            alive = subprocess.run(["tmux", "-S", str(tmux_socket), "has-session", "-t", "console"],
                                   capture_output=True).returncode == 0
            if not alive:
                break
        assert not alive, "q did not quit the console"
    finally:
        subprocess.run(["tmux", "-S", agents, "kill-server"], capture_output=True)


def _listening_addresses(port: int) -> set[str]:
    """Addresses with a listening TCP socket on ``port``, from /proc/net/tcp{,6}."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            local, state = row.split()[1], row.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:
                if len(address) == 8:
                    found.add(".".join(str(b) for b in reversed(bytes.fromhex(address))))
                else:
                    found.add("::" if set(address) == {"0"} else address)
    return found


def test_serve_listens_on_loopback_only(home):
    import socket
    import urllib.request

    home.mkdir(mode=0o700)  # serve reads a home, never creates one
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(leash_argv() + ["serve", "--port", str(port)], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
    try:
        url = server.stdout.readline().decode().split()[3]  # the URL with its token, printed once
        assert url.startswith(f"http://127.0.0.1:{port}/?token=")
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())  # the token's cookie
        page = opener.open(url, timeout=5).read().decode()
        assert "<html" in page.lower()
        assert _listening_addresses(port) == {"127.0.0.1"}
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_demo_runs_and_cleans_up_after_itself(tmp_path, tmux_socket):
    """`leash demo` in a real terminal: its fleet shows, and quitting removes
    the demo's tmux server and home."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    # COLUMNS/LINES from the test process would pin the console to their size
    command = f"env -u COLUMNS -u LINES TMPDIR={scratch} TERM=xterm-256color {sys.executable} -m leash.console.cli demo"
    subprocess.run(["tmux", "-S", str(tmux_socket), "new-session", "-d", "-s", "console", "-x", "160", "-y", "45",
                    "-c", str(ROOT), command], check=True)
    for expected in ("agent-chatty", "agent-answers", "agent-silent", "secrets_exposure", "three_strikes",
                     "path:infra/prod/**", "gateway", "interrogating"):
        _wait_for(tmux_socket, expected, timeout=15)
    (home,) = list(scratch.glob("leash-demo-*"))
    import tomllib

    demo_socket = tomllib.loads((home / "config.toml").read_text())["tmux"]["socket"]
    assert subprocess.run(["tmux", "-S", str(demo_socket), "has-session"], capture_output=True).returncode == 0
    try:
        subprocess.run(["tmux", "-S", str(tmux_socket), "send-keys", "-t", "console", "q"], check=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and home.exists():
            time.sleep(0.1)
        assert not home.exists(), "the demo's home was left behind"
        assert subprocess.run(["tmux", "-S", str(demo_socket), "has-session"], capture_output=True).returncode != 0
    finally:  # whatever happened, the demo's own tmux server goes
        subprocess.run(["tmux", "-S", str(demo_socket), "kill-server"], capture_output=True)


async def test_the_console_goes_live_over_a_daemons_subscribe_stream(home):
    """With leashd running, the console follows its ``subscribe`` stream (no
    watcher on the home): a stop made by another process through the daemon
    reaches the sessions panel."""
    from leash.core.store.remote import subscribed_changes as live_changes

    from ..support.daemon import sockets, start_daemon

    daemon = start_daemon(home)
    try:
        app = console(home, list_tmux=lambda: CONSOLE_TMUX, watch=True, changes=live_changes(sockets(home)[1]))
        async with app.run_test(size=(160, 45)) as pilot:
            for _ in range(WATCH_ROUNDS):
                await pilot.pause(0.02)
                if app.view_data and any("verb=subscribe" in line for line in daemon.log_stream.lines):
                    break
            for _attempt in range(10):  # the daemon's watcher may still be starting
                done = subprocess.run(leash_argv() + ["stop", "--force", "agent-silent", "--reason", "through leashd"],
                                      cwd=ROOT, capture_output=True, env=dict(os.environ))
                assert done.returncode in (0, 1), done.stderr
                if await _stop_shows(pilot, app, "agent-silent", rounds=150):
                    break
            else:
                raise AssertionError("the stop never reached the sessions panel")
        assert any("verb=cli" in line for line in daemon.log_stream.lines)  # the stop went through the daemon
    finally:
        daemon.close()
