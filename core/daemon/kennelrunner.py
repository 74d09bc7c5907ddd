"""leashd's kennel: the warrants' dogs run in a thread of leashd's own.

``KennelRunner.start`` runs a ``Kennel`` over leashd's backend until
``close``. A run that fails (the shared store away for a moment ends it with
an error) is said on leashd's log and a new kennel starts after
``KENNEL_RESTART_SECONDS``, so warrants filed after an outage are still
worked. ``close`` asks the kennel to stop and waits for it: dogs keep their
state and resume at their deadlines under the next kennel.
"""
from __future__ import annotations

import threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from leash.core.store.protocols import Backend
    from leash.core.warrants.kennel import Kennel

KENNEL_RESTART_SECONDS = 2.0  # a kennel whose run failed is started again after this
KENNEL_STOP_SECONDS = 30.0  # how long close() waits for the dogs to put their state down


class KennelRunner:
    def __init__(self, home: str, backend: Backend, *, stopping: threading.Event, say: Callable[..., None]) -> None:
        self.home, self.backend, self.stopping, self.say = home, backend, stopping, say
        self.kennel: Kennel | None = None
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        from leash.core.warrants.kennel import Kennel

        self.kennel = Kennel(self.home, handle_signals=False, backend=self.backend)
        self.thread = threading.Thread(target=self._run, name="kennel", daemon=True)
        self.thread.start()

    def close(self) -> None:
        if self.kennel is not None:
            self.kennel.request_stop()
        if self.thread is not None:
            self.thread.join(timeout=KENNEL_STOP_SECONDS)

    def _run(self) -> None:
        import asyncio

        from leash.core.warrants.kennel import Kennel

        kennel = self.kennel
        while kennel is not None and not self.stopping.is_set():
            try:
                # once its loop runs, a stop asked meanwhile reaches it (close() may have come first)
                asyncio.run(kennel.run(on_start=lambda k=kennel: self.stopping.is_set() and k.request_stop()))
                return
            except Exception as exc:  # noqa: BLE001 - any failure: say it, wait, run a new kennel
                self.say("kennel-failed", problem=f"{exc.__class__.__name__}: {exc}")
            if self.stopping.wait(KENNEL_RESTART_SECONDS):
                return
            kennel = self.kennel = Kennel(self.home, handle_signals=False, backend=self.backend)
