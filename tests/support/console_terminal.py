"""The console in a real terminal: ``leash console --no-kennel`` in a tmux
pane on a private server, 80x24, over the demo's fleet (seeded at the real
time, its three agents' tmux sessions on a second private server), typed at
with ``send-keys`` as a person types and read with ``capture-pane``.

``type_after(key, text)`` sends a key and a burst of text in one tmux call,
so the text arrives with the key, before anything is drawn: what a fast
typist does when a dialog opens. Every wait polls the screen (or the store)
with a deadline; a wait that runs out says what the screen holds.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from .checkout import ROOT

COLUMNS, ROWS = 80, 24
WAIT_SECONDS = 15.0  # the console's first view on two busy cores; every other wait is much shorter
POLL_SECONDS = 0.05
PANEL_TITLES = {"1": "Sessions [", "2": "Pending halts [", "3": "Warrants [", "4": "Hands-off locks [",
                "5": "Loop breakers [", "6": "Ack log [", "7": "Approvals [", "8": "Budget ["}
AGENT_SESSIONS = ("agent-answers", "agent-silent", "agent-chatty")
DIALOG_EDGE = "▀" * 20  # the top of a dialog's thick border
LOG_SCREEN = ("matching line(s)", "verifying the chain", "chain intact")
HELP_SCREEN = "leash — keys"


class Terminal:
    """The console's pane: keys in, the screen out."""

    def __init__(self, socket: Path, home: Path):
        self.socket, self.home = socket, home

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-S", str(self.socket), *args], check=True, capture_output=True,
                              text=True).stdout

    def keys(self, *keys: str) -> None:
        """Press keys (tmux key names: ``Enter``, ``Escape``, ``C-y``, ``Tab``)."""
        self.tmux("send-keys", "-t", "console", *keys)

    def type_after(self, key: str, text: str, *then: str) -> None:
        """``key``, then ``text`` typed literally, then the keys ``then``: one burst, no pause between."""
        args = ["send-keys", "-t", "console", key, ";", "send-keys", "-t", "console", "-l", text]
        if then:
            args += [";", "send-keys", "-t", "console", *then]
        self.tmux(*args)

    def type(self, text: str, *then: str) -> None:
        args = ["send-keys", "-t", "console", "-l", text]
        if then:
            args += [";", "send-keys", "-t", "console", *then]
        self.tmux(*args)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "console")

    def wait_for(self, shown: str | Callable[[str], bool], timeout: float = 5.0) -> str:
        test = shown if callable(shown) else (lambda screen: shown in screen)
        deadline = time.monotonic() + timeout
        screen = self.screen()
        while not test(screen):
            if time.monotonic() > deadline:
                raise AssertionError(f"never shown: {shown!r}; the screen:\n{screen}")
            time.sleep(POLL_SECONDS)
            screen = self.screen()
        return screen

    def alive(self) -> bool:
        """The console runs (its pane stays after it ends, showing how it ended)."""
        found = subprocess.run(["tmux", "-S", str(self.socket), "display-message", "-p", "-t", "console",
                                "#{pane_dead}"], capture_output=True, text=True)
        return found.returncode == 0 and found.stdout.strip() == "0"

    def dialog_up(self, screen: str | None = None) -> bool:
        return DIALOG_EDGE in (self.screen() if screen is None else screen)

    def on_dashboard(self, screen: str) -> bool:
        """No dialog, no log screen, no help: the dashboard's footer at the bottom."""
        return (not self.dialog_up(screen) and not any(mark in screen for mark in LOG_SCREEN)
                and HELP_SCREEN not in screen and "palette" in screen.rstrip("\n").split("\n")[-1])

    def show_panel(self, number: str, timeout: float = 5.0) -> None:
        """Press the panel's number until its panel shows: a key pressed while
        the console still ignores keys after a dialog does nothing (a person
        presses again). Panel 5 first, so the press that lands shows a change."""
        for key in ("5", number) if number != "5" else ("5",):
            deadline = time.monotonic() + timeout
            while True:
                self.keys(key)
                try:
                    self.wait_for(PANEL_TITLES[key], 0.25)
                    break
                except AssertionError:
                    if time.monotonic() > deadline:
                        raise

    def select(self, number: str, words: str) -> None:
        """Show panel ``number`` with only the rows that hold ``words`` (the filter), the table focused."""
        self.show_panel(number)
        self.keys("/")
        self.wait_for("(escape clears)")
        self.type(words, "Enter")
        # the filter box holds the words and the panel's title says it is filtered (a toast may cover its end)
        self.wait_for(lambda screen: "(filter '" in screen and words in "".join(screen.rstrip().split("\n")[-3:]))

    def back_to_dashboard(self) -> None:
        """Escape until no dialog or screen is over the dashboard, and no filter shows."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            screen = self.screen()
            if self.on_dashboard(screen) and "(escape clears)" not in screen and "(filter '" not in screen:
                return
            self.keys("Escape")
            time.sleep(0.2)
        raise AssertionError(f"the dashboard never came back:\n{self.screen()}")


def seed_live_fleet(home: Path) -> None:
    """The demo's fleet at the real time (the console reads the real clock),
    a second halt on agent-answers and a second approval waiting."""
    from leash.console.tui.demo import seed_fleet, seed_warrant
    from leash.core.store.select import backend_for

    now = time.time()
    seed_fleet(home, now=now)
    seed_warrant(home, now=now)
    backend = backend_for(home)
    backend.halts.record({"session_token": "claude-7f3a", "task_id": "bash: make deploy", "halt_type": "execution",
                          "severity": "medium", "condition_name": "three_strikes",
                          "description": "make deploy failed 3 times.", "attempt_count": 3}, now=now - 60)
    backend.approvals.request("claude-c044", "Bash", {"command": "rm -rf build/"}, timeout_s=3600, now=now - 30)


def start_console(socket: Path, home: Path) -> Terminal:
    """The agents' tmux server (``<socket>-agents``) and the console on ``socket``, 80x24, its first view drawn."""
    agents = f"{socket}-agents"
    for name in AGENT_SESSIONS:
        subprocess.run(["tmux", "-S", agents, "new-session", "-d", "-s", name, "-x", "80", "-y", "10",
                        "cat > /dev/null"], check=True)
    return run_console(socket, home)


def run_console(socket: Path, home: Path) -> Terminal:
    """The console in session ``console`` of ``socket`` (the agents' server already up)."""
    agents = f"{socket}-agents"
    env = {"LEASH_HOME": str(home), "LEASH_TMUX_SOCKET": agents, "TERM": "xterm-256color", "USER": "pilot",
           "TMUX_TMPDIR": str(Path(socket).parent)}
    command = " ".join(["env", "-u", "COLUMNS", "-u", "LINES", "-u", "TMUX", "-u", "TMUX_PANE"]
                       + [f"{k}={v}" for k, v in env.items()]
                       + [sys.executable, "-m", "leash.console.cli", "console", "--no-kennel"])
    subprocess.run(["tmux", "-S", str(socket), "kill-session", "-t", "console"], capture_output=True)
    subprocess.run(["tmux", "-S", str(socket), "new-session", "-d", "-s", "console", "-x", str(COLUMNS), "-y",
                    str(ROWS), "-c", str(ROOT), command, ";", "set-option", "-t", "console", "remain-on-exit", "on"],
                   check=True)
    terminal = Terminal(socket, home)
    terminal.wait_for("agent-chatty", WAIT_SECONDS)
    return terminal


def stop_servers(socket: Path) -> None:
    for server in (str(socket), f"{socket}-agents"):
        subprocess.run(["tmux", "-S", server, "kill-server"], capture_output=True, check=False)
