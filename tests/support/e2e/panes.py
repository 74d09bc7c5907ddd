"""A private tmux server and its panes, as the e2e agent labs use them: the
``Lab`` of ``agent_tui`` (the interrupt tests) and the ``Lab`` of
``capture_processes`` (the script that re-finds tests/e2e/agents/PROCESS_FACTS.md) both are a
``PaneServer``.

``PaneServer(folder, ...)`` runs ``tmux -S folder/tmux.sock -f /dev/null``,
started with a closed environment whose HOME is ``folder``. A pane runs ``bash
--noprofile --norc`` in a given folder with a given environment; text is typed
into it as a person does (``type_line``: the text, then Enter a moment later,
since a burst that ends in Enter reads as a paste).

What the two labs want differently is said when the server is made:

* ``check``: whether a tmux command that fails raises by default (``tmux(...,
  check=None)``); the commands that must work (a new pane, its pid, keys) always
  raise, a screen capture never does;
* ``error``: what is raised then (AssertionError in a test, RuntimeError in the
  script);
* ``screen_seconds``: how long ``wait_screen`` waits by default;
* ``screen_required``: whether ``wait_screen`` raises ``error`` (with the
  screen) when the words never show, or returns None.

This module imports nothing of its siblings, so both labs can use it.
"""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from ..waiting import eventually

PANE_WIDTH, PANE_HEIGHT = 120, 40
ENTER_PAUSE_SECONDS = 0.4  # a burst of text that ends in Enter reads as a paste
POLL = 0.05


class PaneServer:
    """A private tmux server whose socket and HOME are in ``folder``, and its panes."""

    def __init__(self, folder: Path, *, check: bool, error: type[Exception], screen_seconds: float,
                 screen_required: bool):
        self.pane_home = folder
        self.socket = folder / "tmux.sock"
        self.check = check
        self.error = error
        self.screen_seconds = screen_seconds
        self.screen_required = screen_required

    def tmux(self, *args: str, check: bool | None = None, path: str | None = None) -> subprocess.CompletedProcess:
        """``tmux ARGS`` on this server; when it fails and ``check`` (None: the
        server's ``check``), ``error``."""
        # The first command starts the server with this environment, not the caller's; tmux gives a
        # new pane the PATH of the client that asks for it, whatever ``-e`` says.
        env = {"PATH": path or os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.pane_home),
               "LANG": "C.UTF-8", "TERM": "xterm-256color"}
        done = subprocess.run(["tmux", "-S", str(self.socket), "-f", "/dev/null", *args], capture_output=True,
                              text=True, env=env, timeout=30)
        if (self.check if check is None else check) and done.returncode != 0:
            raise self.error(f"tmux {' '.join(args[:2])} failed: {done.stderr.strip()}")
        return done

    def new_pane(self, name: str, cwd: Path, env: dict[str, str]) -> str:
        """A tmux session ``name`` whose pane runs ``bash --noprofile --norc`` in
        ``cwd`` with ``env`` (and the server's HOME, LANG, TERM); its pane id (``%N``).
        The pane stays when its shell ends (``remain-on-exit``)."""
        args = ["new-session", "-d", "-s", name, "-x", str(PANE_WIDTH), "-y", str(PANE_HEIGHT), "-c", str(cwd),
                "-P", "-F", "#{pane_id}"]
        for key, value in env.items():
            args += ["-e", f"{key}={value}"]
        pane = self.tmux(*args, "--", "bash", "--noprofile", "--norc", check=True, path=env.get("PATH")).stdout.strip()
        self.tmux("set-option", "-t", name, "remain-on-exit", "on")
        return pane

    def pane_pid(self, pane: str) -> int:
        return int(self.tmux("display-message", "-p", "-t", pane, "#{pane_pid}", check=True).stdout.strip())

    def screen(self, pane: str) -> str:
        return self.tmux("capture-pane", "-p", "-t", pane, check=False).stdout

    def keys(self, pane: str, *keys: str) -> None:
        self.tmux("send-keys", "-t", pane, *keys, check=True)

    def type_line(self, pane: str, words: str) -> None:
        """Type ``words``, then Enter a moment later, as a person does."""
        self.tmux("send-keys", "-t", pane, "-l", words, check=True)
        time.sleep(ENTER_PAUSE_SECONDS)
        self.keys(pane, "Enter")

    def wait_screen(self, pane: str, words: str | tuple[str, ...], seconds: float | None = None) -> str | None:
        """The screen once it shows ``words`` (or any of them) within ``seconds``
        (None: ``screen_seconds``); after that, ``error`` with the screen when
        ``screen_required``, else None."""
        seconds = self.screen_seconds if seconds is None else seconds
        wanted = (words,) if isinstance(words, str) else words

        def shown() -> str | None:
            screen = self.screen(pane)
            return screen if any(word in screen for word in wanted) else None

        found = eventually(shown, seconds, interval=POLL)
        if found is None and self.screen_required:
            raise self.error(f"pane {pane} did not show {words!r} within {seconds} s; its screen:\n"
                             f"{self.screen(pane)}")
        return found
