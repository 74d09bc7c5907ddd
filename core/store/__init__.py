"""The storage seam: every store behind a protocol (``leash.core.store.protocols``
and its ``protocols_halts``, ``protocols_work``, ``protocols_budget``), typed
records (``leash.core.store.records`` and its ``records_halts``,
``records_warrants``, ``records_budget``), the full stop's one-step write
(``leash.core.store.transaction``), the embedded file backend
(``leash.core.store.files.FileBackend``), the shared PostgreSQL one
(``leash.core.store.postgres.PostgresBackend``) and which a home uses
(``leash.core.store.select.backend_for(home)``).

Importing this package imports no backend: the hook path pays only for what it
calls.

Layer ``store``, tier 4 of the layers (docs/architecture.md).
"""
