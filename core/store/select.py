"""Which backend a home uses: the shared PostgreSQL store or the home's own files.

``LEASH_STORE_URL``, else ``[store] url`` of the home's ``config.toml``,
names the shared store; without either, the file backend as always. The
password never sits in the url (``config.toml`` refuses one): libpq takes it
from ``PGPASSWORD`` or ``PGPASSFILE``, or leash reads ``[store]
password_file``, which must be readable by its owner only. This host's name is
``LEASH_HOST``, else ``[daemon] host``, else the machine's hostname.
``LEASH_STORE_OWNER_URL``, else ``[store] owner_url``, names the schema's
owner role (``core.store.pgroles``): migrations and grants go through it; its
password comes from libpq's own sources (``password_file`` is the runtime
role's, and is used for the owner only when both urls name one user).

leashd's backend (``daemon_backend``) on a home of files also makes the
home's ack-log MAC key when it is missing (``core.logkey``), so every line it
appends from then on carries a mac. On the shared store it makes none: every
host's leashd must sign with one key (a key per host would fail every other
host's check), so the operator gives it (``[acklog] mac_key_file``, or the
same ``run/log.key`` on each host).

Failure: a bad url, an unreadable password file or an unreachable server
raises ``StoreSelectionError`` / ``StoreOffline`` with one line that never
holds the password; nothing falls back to the files (that would be another
store, with other stops).
"""
from __future__ import annotations

import os

from leash.core.base.config import HOST_VARIABLE as HOST_VARIABLE
from leash.core.base.config import host_name as host_name

TYPE_CHECKING = False  # the protocol is for the type checker only: it checks each backend conforms
if TYPE_CHECKING:
    from typing import Callable, Mapping

    from leash.core.store.protocols import Backend

STORE_URL_VARIABLE = "LEASH_STORE_URL"
OWNER_URL_VARIABLE = "LEASH_STORE_OWNER_URL"
PASSWORD_FILE_MODE_MASK = 0o077  # group or others may not read the password file


class StoreSelectionError(Exception):
    """The shared store is named but cannot be used as named."""


def _config(home: str) -> dict:
    from leash.core.base.config import load_config

    return load_config(home)  # the defaults when the home has no config.toml


def _named_url(home: str, variable: str, key: str, environ: Mapping[str, str] | None = None) -> str:
    """The url the environment names in ``variable``, else ``[store] key``;
    a url in the environment may hold a password (never one in config.toml)."""
    environ = os.environ if environ is None else environ
    named = environ.get(variable, "")
    if named:
        from leash.core.base.config import store_url_problem

        problem = store_url_problem(named)
        if problem and not problem.startswith("holds a password"):
            raise StoreSelectionError(f"{variable} {problem}")
        return named
    configured = _config(home)["store"][key]  # a broken file: ConfigError, or the floor (operators' commands)
    if key == "url" and not configured:
        _refuse_a_broken_file_that_may_name_the_store(home)
    return configured


def _refuse_a_broken_file_that_may_name_the_store(home: str) -> None:
    """A config.toml that cannot be used and may name the shared store: the
    home's files are then not known to be the state (never fall back to them)."""
    from leash.core.base.config import config_problem, may_name_store

    problem = config_problem(home)
    if problem is not None and may_name_store(home):
        raise StoreSelectionError(f"config.toml cannot be used and may name the shared store, so leash cannot "
                                  f"tell which store holds the state: {problem} (mend it: leash doctor)")


def store_url(home: str, environ: Mapping[str, str] | None = None) -> str:
    """The shared store's url for ``home`` ("" for the files)."""
    return _named_url(home, STORE_URL_VARIABLE, "url", environ)


def owner_url(home: str, environ: Mapping[str, str] | None = None) -> str:
    """The schema owner's url for ``home`` ("": the runtime role owns it too)."""
    return _named_url(home, OWNER_URL_VARIABLE, "owner_url", environ)


def _owner_options(home: str, url: str, environ: Mapping[str, str] | None = None) -> dict:
    """``owner_url`` and ``owner_password`` for ``PostgresBackend``."""
    from urllib.parse import urlsplit

    owner = owner_url(home, environ)
    same_user = bool(owner) and urlsplit(owner).username == urlsplit(url).username
    return {"owner_url": owner, "owner_password": password(home) if same_user else None}


def password(home: str) -> str | None:
    """The password from ``[store] password_file`` (None: libpq's own sources)."""
    path = _config(home)["store"]["password_file"]
    if not path:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            if os.fstat(fd).st_mode & PASSWORD_FILE_MODE_MASK:
                raise StoreSelectionError(f"[store] password_file {path} may be read by others: chmod 600 it")
            raw = os.read(fd, 4096)
        finally:
            os.close(fd)
    except OSError as exc:
        raise StoreSelectionError(f"[store] password_file {path}: {exc.strerror}") from None
    return raw.decode("utf-8", "replace").strip("\r\n")


def daemon_backend(home: str, *, say: Callable[..., object] | None = None) -> Backend:
    """leashd's backend for its life: the files with their connections kept,
    or the shared store with its mirror listening (one line and an exit when
    the database cannot be reached at the start)."""
    url = store_url(home)
    if not url:
        from leash.core.store.files import FileBackend

        backend = FileBackend(home, keep_connections=True)
        from leash.core.base.config import config_problem
        from leash.core.base.logkey import ensure_key

        if config_problem(home) is None:  # a broken file may name another key file: no key made meanwhile
            ensure_key(home, next_seq=backend.acklog.log.next_seq())  # `leash doctor` then says "macs checked"
        return backend
    from leash.core.store.postgres import PostgresBackend

    store = _config(home)["store"]
    return PostgresBackend(url, home=home, host=host_name(home), password=password(home), mirrored=True,
                           offline_grace_s=store["offline_grace_s"], offline=store["offline"], say=say,
                           schema="upgrade", **_owner_options(home, url))


def backend_for(home: str | None = None, *, environ: Mapping[str, str] | None = None,
                schema: str = "create") -> Backend:
    """The backend of ``home``: ``PostgresBackend`` when a shared store is
    named (``schema`` as ``PostgresBackend`` takes it), else ``FileBackend``."""
    from leash.core.base.home import resolve_home

    where = os.fspath(resolve_home(home))
    url = store_url(where, environ)
    if not url:
        from leash.core.store.files import FileBackend

        return FileBackend(home)
    from leash.core.store.postgres import PostgresBackend

    return PostgresBackend(url, home=where, host=host_name(where, environ), password=password(where),
                           schema=schema, **_owner_options(where, url, environ))
