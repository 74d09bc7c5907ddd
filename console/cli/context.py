"""What a ``leash`` command acts on: its home, and that home's ``Backend``.

``Context(home)`` holds the home, checked and created before the command runs
(``core.base.home.ensure_home``), and ``backend``: the stores the command reads
and writes (``core.store.protocols.Backend``), the shared store when the home
names one (``[store] url``, ``LEASH_STORE_URL``), else the home's files
(``core.store.select.backend_for``). It is opened on first use, once per
command: a command that touches no state (``install``, ``setup``) opens none.
"""
from __future__ import annotations

from leash.core.store.protocols import Backend


class Context:
    def __init__(self, home: str) -> None:
        self.home = home
        self._backend: Backend | None = None

    @property
    def backend(self) -> Backend:
        if self._backend is None:
            from leash.core.store.select import backend_for

            self._backend = backend_for(self.home)
        return self._backend

    def default_hours(self) -> float:
        """``[hands_off] default_hours`` of config.toml (24 when unset)."""
        from leash.core.base.config import load_config
        from leash.core.state.handsoff import DEFAULT_HOURS

        return float(load_config(self.home)["hands_off"].get("default_hours", DEFAULT_HOURS))
