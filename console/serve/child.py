"""One browser's console: a ``leash console`` process behind a WebSocket.

textual-serve's ``AppService`` speaks the protocol (packets on the child's
stdin and stdout); this subclass changes how the process is started and
ended. The child is started without a shell, in a session of its own (so the
tmux clients and threads it runs go with it), with ``console.serve.driver`` as
its Textual driver. ``stop()`` ends it within ``STOP_SECONDS`` whatever state
it is in: the protocol's quit and the end of its stdin first, SIGTERM to its
process group after ``QUIT_GRACE_SECONDS``, SIGKILL after
``TERM_GRACE_SECONDS`` more. Files offered for download and URLs to open are
dropped: a served console offers neither.

A console ended while it starts (its browser left at once) never says it is
ready; textual-serve logs that as "Application failed to start". That is no
failure, so the line is dropped for a console being stopped; a console that
fails on its own still gets it.
"""
from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import signal
import sys

from textual_serve.app_service import AppService
from textual_serve.download_manager import DownloadManager

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from typing import Any

QUIT_GRACE_SECONDS = 0.5
TERM_GRACE_SECONDS = 0.7
STOP_SECONDS = QUIT_GRACE_SECONDS + TERM_GRACE_SECONDS + 0.3
DRIVER = f"{__package__}.driver:ServedDriver"
# The console whose protocol task is running (each task has its own context).
_reading: contextvars.ContextVar[ConsoleProcess | None] = contextvars.ContextVar("leash_served", default=None)


class _QuietWhenStopped(logging.Filter):
    """Drop textual-serve's lines about a console that is being stopped."""

    def filter(self, record: logging.LogRecord) -> bool:
        console = _reading.get()
        return console is None or not console.stopping


logging.getLogger("textual-serve").addFilter(_QuietWhenStopped())


class ConsoleProcess(AppService):
    # aiohttp's WebSocketResponse: its close() answers a bool where textual-serve's type says None
    def __init__(self, argv: list[str], websocket: Any) -> None:
        super().__init__(" ".join(argv), write_bytes=websocket.send_bytes, write_str=websocket.send_str,
                         close=websocket.close, download_manager=DownloadManager())
        self.argv = argv
        self.stopping = False

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        environment = super()._build_environment(width, height)
        environment["TEXTUAL_DRIVER"] = DRIVER
        return environment

    async def _open_app_process(self, width: int = 80, height: int = 24) -> asyncio.subprocess.Process:
        self._process = process = await asyncio.create_subprocess_exec(
            *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=self._build_environment(width, height), start_new_session=True)
        self._stdin = process.stdin
        return process

    async def run(self) -> None:
        _reading.set(self)
        await super().run()

    async def on_meta(self, data: bytes) -> None:
        import json

        try:
            kind = json.loads(data).get("type")
        except (ValueError, AttributeError):
            return
        if kind == "exit":
            await self.remote_close()

    async def send_input(self, text: str) -> None:
        if self._stdin is not None and not self._stdin.is_closing():
            await self.send_bytes(text.encode("utf-8"))

    async def send_meta(self, data: dict) -> bool:
        if self._stdin is None or self._stdin.is_closing():
            return False
        return await super().send_meta(data)

    async def stop(self) -> None:
        """End the child (quit, SIGTERM, SIGKILL) and the task reading it."""
        self.stopping = True
        process = self._process
        if process is not None and process.returncode is None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.send_meta({"type": "quit"}), QUIT_GRACE_SECONDS)
            if self._stdin is not None:
                self._stdin.close()
            for signal_number, grace in ((None, QUIT_GRACE_SECONDS), (signal.SIGTERM, TERM_GRACE_SECONDS),
                                         (signal.SIGKILL, None)):
                if signal_number is not None:
                    _signal_group(process.pid, signal_number)
                try:
                    await asyncio.wait_for(process.wait(), grace)
                    break
                except asyncio.TimeoutError:
                    continue
        if process is not None:
            _signal_group(process.pid, signal.SIGKILL)   # what the child left in its group goes too
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    def kill_now(self) -> None:
        """The last resort when the server itself is leaving: no waiting."""
        if self._process is not None:
            _signal_group(self._process.pid, signal.SIGKILL)


def _signal_group(pid: int, signal_number: int) -> None:
    try:
        os.killpg(pid, signal_number)
    except (ProcessLookupError, PermissionError):
        pass


def console_argv(home: str, *, read_only: bool, no_kennel: bool) -> list[str]:
    """The command line of one served console."""
    argv = [sys.executable, "-m", "leash.console.cli", "--home", str(home), "console"]
    if read_only:
        argv.append("--read-only")
    if no_kennel:
        argv.append("--no-kennel")
    return argv
