"""How the console ends on SIGTERM and SIGHUP, as a mixin of ``LeashApp``.

Either signal ends the app as ``q`` does, which restores the terminal. A
terminal that has hung up cannot be written to, and a write to it can block
Textual's shutdown forever: then stdin, stdout and stderr are pointed at
/dev/null first, and if the app still has not ended after
``HANGUP_GRACE_SECONDS`` its kennel is stopped, its ``on_exit`` and
``on_hangup`` callbacks run and the process ends.
"""
from __future__ import annotations

import asyncio
import os
import signal
import time
from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:
    from leash.core.warrants.kennel import Kennel

ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
HANGUP_GRACE_SECONDS = 3.0


class Ending(Protocol):
    """What of the app an ending reaches (the mixin's methods take it as
    ``self``): its exit, its kennel and its callbacks."""

    kennel: Kennel | None
    on_exit_callback: Callable[[], object] | None
    on_hangup: Callable[[], object] | None
    _unmounted: bool
    _ending_loop: asyncio.AbstractEventLoop
    _previous_handlers: dict[int, Any]

    def exit(self, result: Any = None, return_code: int = 0, message: Any = None) -> None: ...

    def wait_for_kennel(self, timeout: float) -> None: ...

    def _signalled(self, number: int, frame: object = None) -> None: ...

    def _last_resort(self, number: int) -> None: ...


class EndsOnSignals:
    _ending_loop: asyncio.AbstractEventLoop
    _previous_handlers: dict[int, Any]

    def _catch_ending_signals(self: Ending) -> None:
        """Python-level handlers, not the event loop's: when the terminal hangs
        up, Textual's shutdown can block the loop itself (joining its writer
        thread), and only a handler that runs in the main thread between
        bytecodes still gets to start the last resort."""
        self._ending_loop = asyncio.get_running_loop()
        self._previous_handlers = {}
        for number in ENDING_SIGNALS:
            try:
                self._previous_handlers[number] = signal.signal(number, self._signalled)
            except ValueError:  # not the main thread (leash serve's child)
                pass

    def _restore_signal_handlers(self) -> None:
        for number, handler in getattr(self, "_previous_handlers", {}).items():
            try:
                signal.signal(number, handler)
            except (ValueError, TypeError):
                pass

    def _signalled(self: Ending, number: int, frame: object = None) -> None:
        """End as ``q`` does, which restores the terminal. When the terminal
        has hung up, writes go to /dev/null instead (a write to a hung-up
        terminal can block Textual's shutdown forever); and if the app still
        has not ended after ``HANGUP_GRACE_SECONDS``, the kennel is stopped,
        ``on_exit`` and ``on_hangup`` run and the process ends."""
        import threading

        if not _terminal_alive():
            _silence_terminal()
        threading.Thread(target=self._last_resort, args=(number,), daemon=True).start()
        try:
            self._ending_loop.call_soon_threadsafe(self.exit, None, 128 + number)
        except RuntimeError:  # the loop has closed: the app has ended already
            pass

    def _last_resort(self: Ending, number: int) -> None:
        time.sleep(HANGUP_GRACE_SECONDS)
        self._unmounted = True
        if self.kennel is not None:
            self.kennel.request_stop()
        self.wait_for_kennel(HANGUP_GRACE_SECONDS)
        for callback in (self.on_exit_callback, self.on_hangup):
            if callback is not None:
                try:
                    callback()
                except Exception:
                    pass
        os._exit(128 + number)


def _terminal_alive() -> bool:
    import sys
    import termios

    stdin = sys.__stdin__
    if stdin is None:
        return False
    try:
        termios.tcgetattr(stdin.fileno())
    except (OSError, ValueError, AttributeError, termios.error):
        return False
    return True


def _silence_terminal() -> None:
    """Point stdin, stdout and stderr at /dev/null: the terminal is gone."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        try:
            os.dup2(null, fd)
        except OSError:
            pass
    os.close(null)
