"""Leases: one holder at a time for a job that one process of a store must do
(leashd's notifier: in a store many hosts share, one of them sends), and every
host's kennel heartbeat, for a lease holder that watches the others.

A lease is a record ``{"holder", "host", "until"}`` under a name. ``claim``
takes it when it is free or expired, renews it for its holder, and says
whether the caller holds it now; a holder that stops renewing loses it when
``until`` passes, so a host that died hands the job over within one lease
time. Times are the caller's clock (``now=``); hosts whose clocks differ by
less than the lease time agree on who holds it.

* ``FileLeases``: ``<home>/run/<name>.lease``, read and written under the
  file's lock (``core.statefile``);
* ``PgLeases``: one ``leash_meta`` row per lease (key ``lease:<name>``), taken
  and renewed by one ``INSERT ... ON CONFLICT DO UPDATE ... WHERE`` statement,
  which the database runs atomically: no new table, and the runtime role
  already may insert and update ``leash_meta``.

``leases_of(backend)`` and ``kennel_beats(backend)`` pick the implementation
by the backend's name; tests/store/test_store_leases.py is their contract.

Failure: a lease file that cannot be parsed is taken as free (the next claim
writes a good one); a database that cannot be reached raises ``StoreOffline``
from ``claim`` (the caller keeps the role it had: see ``core.notify.runner``);
``holder`` answers None when it cannot read, ``kennel_beats`` raises it.
"""
from __future__ import annotations

import json
import os

from leash.core.base.clock import now_seconds
from leash.core.base.wellknown import RUN_DIR
from leash.core.store.records_warrants import HeartbeatRecord

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.pg import Database
    from leash.core.store.protocols import Backend


LEASE_SUFFIX = ".lease"
LEASE_KEY_PREFIX = "lease:"


class FileLeases:
    def __init__(self, home: str | os.PathLike):
        self.run_dir = os.path.join(os.fspath(home), RUN_DIR)

    def _path(self, name: str) -> str:
        return os.path.join(self.run_dir, f"{name}{LEASE_SUFFIX}")

    def claim(self, name: str, holder: str, *, host: str = "", seconds: float, now: float | None = None) -> bool:
        from leash.core.base.home import private_dir
        from leash.core.base.statefile import locked, write_json

        moment = now_seconds(now)
        private_dir(self.run_dir)
        path = self._path(name)
        with locked(path):
            current = self._read(path)
            if current and current.get("holder") != holder and float(current.get("until", 0)) >= moment:
                return False
            write_json(path, {"holder": holder, "host": host, "until": moment + seconds}, durable=False)
        return True

    def holder(self, name: str, *, now: float | None = None) -> dict | None:
        current = self._read(self._path(name))
        return current if current and float(current.get("until", 0)) >= now_seconds(now) else None

    def release(self, name: str, holder: str) -> None:
        from leash.core.base.statefile import locked, write_json

        path = self._path(name)
        if not os.path.exists(path):
            return
        with locked(path):
            current = self._read(path)
            if current and current.get("holder") == holder:
                write_json(path, {"holder": "", "host": "", "until": 0}, durable=False)

    @staticmethod
    def _read(path: str) -> dict | None:
        from leash.core.base.statefile import read_json

        try:
            found = read_json(path, None)
        except Exception:  # corrupt or a link: free, the next claim writes a good one
            return None
        return found if isinstance(found, dict) and isinstance(found.get("until", 0), (int, float)) else None


class PgLeases:
    def __init__(self, db: Database):
        self.db = db

    def claim(self, name: str, holder: str, *, host: str = "", seconds: float, now: float | None = None) -> bool:
        moment = now_seconds(now)
        value = json.dumps({"holder": holder, "host": host, "until": moment + seconds})
        rows = self.db.rows(
            "INSERT INTO leash_meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
            " WHERE (leash_meta.value::jsonb ->> 'holder') = %s"
            " OR (leash_meta.value::jsonb ->> 'until')::double precision < %s RETURNING value",
            (LEASE_KEY_PREFIX + name, value, holder, moment))
        return bool(rows)

    def holder(self, name: str, *, now: float | None = None) -> dict | None:
        from leash.core.store.pg import StoreOffline

        try:
            rows = self.db.rows("SELECT value FROM leash_meta WHERE key = %s", (LEASE_KEY_PREFIX + name,))
            current = json.loads(rows[0][0]) if rows else None
        except (StoreOffline, ValueError):
            return None
        if not isinstance(current, dict) or float(current.get("until", 0)) < now_seconds(now):
            return None
        return current

    def release(self, name: str, holder: str) -> None:
        self.db.rows("UPDATE leash_meta SET value = %s WHERE key = %s AND (value::jsonb ->> 'holder') = %s "
                     "RETURNING key", (json.dumps({"holder": "", "host": "", "until": 0}), LEASE_KEY_PREFIX + name,
                                       holder))


def _database_of(backend: Backend) -> Database | None:
    """The shared store's database, or None for one home's files (leases and
    every host's heartbeat are the shared store's own tables, not a protocol's)."""
    if backend.name != "postgres":
        return None
    from leash.core.store.postgres import PostgresBackend

    return backend.db if isinstance(backend, PostgresBackend) else None


def leases_of(backend: Backend) -> FileLeases | PgLeases:
    """The leases of ``backend``'s store (a file home or the shared store)."""
    database = _database_of(backend)
    return PgLeases(database) if database is not None else FileLeases(backend.home)


def kennel_beats(backend: Backend) -> list[HeartbeatRecord]:
    """Every host's last kennel heartbeat, stopped ones included (a file home
    has its one ``kennel.json``, [] when it cannot be read); ``StoreOffline``
    when the shared store cannot be read."""
    database = _database_of(backend)
    if database is not None:
        rows = database.rows("SELECT record FROM kennels ORDER BY host")
        return [HeartbeatRecord.of(record) for (record,) in rows if isinstance(record, dict)]
    from leash.core.base.statefile import read_json
    from leash.core.store.filestores import KENNEL_NAME

    try:
        found = read_json(os.path.join(backend.home, KENNEL_NAME), None)
    except Exception:
        return []
    return [HeartbeatRecord.of(found)] if isinstance(found, dict) else []
