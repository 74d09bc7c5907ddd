"""``PostgresBackend``: every store of the seam in one PostgreSQL database shared by all hosts.

The ack log, stops, locks and sessions live in ``pgacklog`` and ``pgstate``;
the halt, warrant, breaker, reply and kennel stores register their makers in
``PG_STORES`` and are built on first use. Each store takes the one
``Database`` (a pool), the ack log (so a write and its line are one
transaction), this host's home (its ``config.toml``) and this host's name.

Failure: a database that cannot be reached raises ``StoreOffline`` when the
backend is opened; afterwards each store raises what its protocol names (the
stop and lock readers raise their "unreadable" errors, so the gate fails
closed).
"""
from __future__ import annotations

import os

from leash.core.store.pg import Database
from leash.core.store.pgacklog import PgAckLog

# store name -> maker(db, log, home, host); filled in by each store's module below.
PG_STORES: dict = {}


class PostgresBackend:
    """The shared backend (see the module's docstring)."""

    name = "postgres"

    def __init__(self, url: str, *, home: str | os.PathLike, host: str):
        from leash.core.home import ensure_home

        self.home = ensure_home(home)
        self.host = host
        self.db = Database(url)
        self.acklog = PgAckLog(self.db)

    def __getattr__(self, name: str):
        maker = PG_STORES.get(name)
        if maker is None:
            raise AttributeError(name)
        return self.__dict__.setdefault(name, maker(self.db, self.acklog, self.home, self.host))

    def close(self) -> None:
        self.db.close()
