"""The Textual driver of a console served by ``leash serve``.

Textual's web driver speaks the server's protocol on stdin/stdout. Left as it
is, a served console outlives its server: when stdin reaches its end (the
server is gone) the input thread just stops, and SIGTERM only posts an exit
message to the app, which nobody reads once the app has finished and the
process is waiting for its worker threads (the console's kennel among them).

This driver makes both mean "leave": the end of stdin and SIGTERM (or SIGHUP)
ask the app to exit, and arm a timer that ends the process outright if a
normal exit has not happened within ``HARD_EXIT_SECONDS``. The kennel's
claims are file locks and its heartbeat goes stale, so a hard exit loses
nothing: the next kennel resumes the dogs.

Textual's web driver starts the app blurred, and a blurred app's footer is
not drawn: the page showed no keys until the terminal was clicked. This
driver starts it focused (the browser's own focus and blur still follow).
"""
from __future__ import annotations

import asyncio
import os
import signal
import threading

from textual import events, messages
from textual.drivers.web_driver import WebDriver

HARD_EXIT_SECONDS = 1.0
EXIT_ABANDONED = 1


class ServedDriver(WebDriver):
    _leave_loop: asyncio.AbstractEventLoop | None = None
    _leaving = False

    def start_application_mode(self) -> None:
        loop = self._leave_loop = asyncio.get_running_loop()  # before the input thread starts
        super().start_application_mode()
        self._app.call_later(self._app.post_message, events.AppFocus())   # after the web driver's AppBlur
        for signal_number in (signal.SIGTERM, signal.SIGHUP):   # replaces the web driver's own
            loop.add_signal_handler(signal_number, self.leave)

    def run_input_thread(self) -> None:
        super().run_input_thread()
        loop = self._leave_loop
        if not self.exit_event.is_set() and loop is not None:   # stdin ended, not the app
            try:
                loop.call_soon_threadsafe(self.leave)
            except RuntimeError:  # the loop is closed: the process is on its way out
                pass

    def leave(self) -> None:
        """Exit the app now, and the process within ``HARD_EXIT_SECONDS`` whatever happens."""
        if self._leaving:
            return
        self._leaving = True
        deadline = threading.Timer(HARD_EXIT_SECONDS, os._exit, (EXIT_ABANDONED,))
        deadline.daemon = True
        deadline.start()
        self._app.post_message(messages.ExitApp())
