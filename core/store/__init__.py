"""The storage seam: every store behind a protocol (``leash.core.store.protocols``),
typed records (``leash.core.store.records``) and the embedded file backend
(``leash.core.store.files.FileBackend``).

``backend_for(home)`` is the backend a home uses; today that is always the
file backend (today's files and SQLite). Importing this package imports no
backend: the hook path pays only for what it calls.
"""
from __future__ import annotations


def backend_for(home):
    """The backend of ``home`` (the file backend)."""
    from leash.core.store.files import FileBackend

    return FileBackend(home)
