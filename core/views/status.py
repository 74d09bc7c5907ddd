"""A snapshot of a home for ``leash status``: what is stopped, locked and seen.

``snapshot`` returns the shape ``leash status --json`` prints
(docs/command-line.md): ``fleet_stopped``, ``stopped_sessions``,
``hands_off``, ``pending_halts``, ``warrants``, ``loops``, ``sessions``, each a
list of objects with the keys of its file format plus the key it is filed under.
``fleet_stopped`` holds the fleet stop record, or nothing when the fleet runs.

``problems(home, sessions)`` is what is wrong around that state, each
``{"kind", "message"}``: ``config_broken``, ``tmux_no_server``,
``tmux_wrong_socket`` — for ``leash status``, ``leash doctor`` and the console.

Every store is read through the caller's ``Backend`` (``leash.core.store``);
the halts through one unit of work on its halt store (the caller's, when it
holds one open). Failure: an unreadable stop state is reported
(``stop_state_error``) rather than hidden, since the gate is denying everything
while it lasts; so is a halt store that cannot be read (``halt_store_error``).
"""
from __future__ import annotations

from typing import Any

from leash.core.base.clock import now_seconds
from leash.core.state.stop import StopStateUnreadable

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.protocols import Backend


def backend_of(owner=None, backend: Backend | None = None):
    """The backend to read: ``backend`` when given, else the one over
    ``owner`` (a ``StopProtocol``, whose open registries it shares, or a home)."""
    if backend is not None:
        return backend
    from leash.core.store.files import FileBackend
    from leash.core.store.select import backend_for, store_url
    from leash.core.views.protocol import StopProtocol

    if not isinstance(owner, StopProtocol):
        return backend_for(owner)
    if getattr(owner, "backend", None) is None:  # one per command, shared by whatever it reads
        owner.backend = backend_for(owner.home) if store_url(owner.home) else FileBackend.sharing(owner)
    return owner.backend


def snapshot(protocol=None, *, backend: Backend | None = None, now: float | None = None, halts_limit: int = 10_000,
             halts=None, connection=None) -> dict[str, Any]:
    """The state of ``backend`` (default: the one over ``protocol``, a
    ``StopProtocol`` or a home). ``halts``: an open unit of the halt store to
    read pending halts in (``connection``: an open halts.db connection, the
    older way to say the same); none is read when ``halts_limit`` is 0."""
    backend = backend_of(protocol, backend)
    result: dict[str, Any] = {
        "fleet_stopped": [], "stopped_sessions": [], "hands_off": [], "pending_halts": [],
        "warrants": [], "loops": [], "sessions": [],
    }
    try:
        stops = backend.stops.current(now=now)
    except StopStateUnreadable as exc:
        result["stop_state_error"] = str(exc)
    else:
        if stops.fleet is not None:
            result["fleet_stopped"].append(stops.fleet.as_dict())
        for session_id, record in stops.sessions.items():
            result["stopped_sessions"].append({"session_id": session_id, **record.as_dict()})
    for entity, lock in backend.locks.active(now=now).items():
        result["hands_off"].append({"entity": entity, **lock.as_dict()})
    if halts_limit > 0:
        _pending_halts(result, backend, halts, connection, halts_limit, now)
    for warrant in backend.warrants.pending():
        result["warrants"].append({**warrant.as_dict(), "state": "pending", "attempt": 0})
    for dog in backend.warrants.active():
        result["warrants"].append({**(dog.warrant or {}), **{k: v for k, v in dog.as_dict().items() if k != "warrant"}})
    from leash.core.store.records import loop_limits

    config = _config(backend)
    limits = loop_limits(config)
    for name in backend.breakers.names():
        result["loops"].append(backend.breakers.describe(name, limits=limits.get(name), now=now).as_dict())
    from leash.core.state.sessions import host_of

    here = host_of_backend(backend)
    result["host"] = here
    shared = bool(backend.sessions.host)
    for session_id, record in backend.sessions.all(now=now).items():
        fields = record.as_dict()
        result["sessions"].append({"session_id": session_id, **fields,
                                   "host": host_of(fields) if shared else here})
    _budget(result, backend, config, now_seconds(now))
    return result


def _budget(result: dict, backend: Backend, config: dict, now: float) -> None:
    """The spend figures (``core.views.budget``): each session's ``cost_usd``
    and ``cost_estimated`` when metered, and ``budget``: today's fleet spend,
    the windows, each cap's rows (holds included); ``budget_error`` when the
    budget store cannot be read, and ``budget_holds_error`` when its holds
    cannot be while caps are configured: the gate then holds every call."""
    from dataclasses import asdict

    from leash.core.store.budget import BudgetUnreadable
    from leash.core.views.budget import cap_rows, fleet_figures, session_costs

    if (config.get("budget") or {}).get("cap"):  # what the gate reads, as it reads it
        try:
            backend.budget.holds()
        except BudgetUnreadable as exc:
            result["budget_holds_error"] = str(exc)

    try:
        costs = session_costs(backend)
        figures = fleet_figures(backend, config, now=now)
        rows = cap_rows(backend, config, now=now)
        windows = [w.as_dict() for w in backend.budget.windows()]
    except BudgetUnreadable as exc:
        result["budget_error"] = str(exc)
        return
    for row in result["sessions"]:
        cost = costs.get(row["session_id"])
        if cost is not None:
            row.update(cost_usd=round(cost.usd, 6), cost_estimated=cost.estimated)
    result["budget"] = {"today_usd": round(figures.today_usd, 6), "estimated": figures.estimated,
                        "windows": windows, "caps": [asdict(row) for row in rows],
                        "held": [asdict(row) for row in rows if row.held]}


def host_of_backend(backend: Backend) -> str:
    """This host's name (``LEASH_HOST``, ``[daemon] host``, the hostname)."""
    named = backend.host
    if named:
        return named
    from leash.core.base.config import ConfigError
    from leash.core.store.select import host_name

    try:
        return host_name(backend.home)
    except ConfigError:  # a bad config.toml is doctor's to report; the machine still has a name
        import socket

        return socket.gethostname()


def _pending_halts(result: dict, backend: Backend, unit, connection, limit: int, now: float | None) -> None:
    from leash.core.state.halts import HaltStoreUnavailable

    try:
        if unit is None and connection is not None:  # a caller that still holds a raw connection
            from leash.core.store.filehalts import FileHaltUnit

            unit = FileHaltUnit(connection, backend.home)
        if unit is not None:
            result["pending_halts"] = [halt.as_dict() for halt in unit.pending(limit=limit)]
            return
        with backend.halts.unit(now=now) as opened:
            result["pending_halts"] = [halt.as_dict() for halt in opened.pending(limit=limit)]
    except HaltStoreUnavailable as exc:
        result["halt_store_error"] = str(exc)


def _config(backend: Backend) -> dict:
    """config.toml of the backend's home (breakers are described against it); {} when it is bad."""
    from leash.core.base.config import ConfigError, load_config

    try:
        return load_config(backend.home)
    except ConfigError:
        return {}


# ------------------------------------------------------------------ problems around the state
CONFIG_BROKEN = "config_broken"  # config.toml cannot be used: the hooks keep every rule at its strictest
TMUX_NO_SERVER = "tmux_no_server"  # no tmux server runs on the socket leash uses
TMUX_WRONG_SOCKET = "tmux_wrong_socket"  # the socket leash uses cannot be the agents' tmux server
CONFIG_BROKEN_EFFECT = ("the hooks keep every rule at its strictest and every tool call needs an operator "
                        "until it is mended")


def store_may_be_named(home) -> bool:
    """Whether a config.toml that cannot be used may name the shared store
    (``LEASH_STORE_URL``, or any ``store`` in its text): the home's files are
    then not known to be the state."""
    import os

    from leash.core.store.select import STORE_URL_VARIABLE

    if os.environ.get(STORE_URL_VARIABLE):
        return True
    try:
        with open(os.path.join(os.fspath(home), "config.toml"), "rb") as handle:
            return b"store" in handle.read()
    except OSError:
        return True


def config_broken(home) -> str | None:
    """``config.toml``'s problem (``<path>:<line>: ...``) and what the hooks do
    meanwhile, as one line; None when it can be used."""
    from leash.core.base.config import config_problem

    problem = config_problem(home)
    return f"{problem} ({CONFIG_BROKEN_EFFECT})" if problem else None


def tmux_problem(home, sessions=None, *, environ=None) -> dict | None:
    """``{"kind": TMUX_NO_SERVER | TMUX_WRONG_SOCKET, "message"}`` when the
    tmux server leash uses cannot be reached and something expects it: a
    socket is named (``$LEASH_TMUX_SOCKET``, ``[tmux] socket``), or a session
    on this host was seen in a tmux pane and has not ended (``sessions``:
    this host's status rows or session records). None otherwise
    (``core.base.tmux.server_problem``)."""
    import os

    from leash.core.base.tmux import NO_SERVER, SOCKET_ENV, server_problem
    from leash.core.store.records import Record

    environ = os.environ if environ is None else environ
    seen, in_tmux = [], False
    for session in sessions or ():
        record = session.as_dict() if isinstance(session, Record) else dict(session)  # a record, or a status row
        if record.get("status") == "ended":
            continue
        in_tmux = in_tmux or bool(record.get("tmux_pane"))
        process = record.get("agent_process")
        socket = process.get("tmux_socket") if isinstance(process, dict) else None
        if isinstance(socket, str) and socket:
            seen.append(socket)
    named = bool(environ.get(SOCKET_ENV))
    if not named:
        from leash.core.base.config import ConfigError, load_config

        try:
            named = bool(load_config(home)["tmux"]["socket"])
        except ConfigError:
            home = None  # config_broken says so; the server is looked for without [tmux] socket
    if not (named or in_tmux or seen):
        return None
    said = server_problem(home=home, seen_sockets=seen, environ=environ)
    if said is None:
        return None
    return {"kind": TMUX_NO_SERVER if said.startswith(NO_SERVER) else TMUX_WRONG_SOCKET, "message": said}


def problems(home, sessions=None, *, environ=None) -> list[dict]:
    """What is wrong around the state ``leash status`` shows, each
    ``{"kind", "message"}``: ``config_broken``, then ``tmux_no_server`` or
    ``tmux_wrong_socket`` (see ``tmux_problem``). For status, the doctor and
    the console; cheap (a parse kept per process, a stat and a connect)."""
    found = []
    broken = config_broken(home)
    if broken:
        found.append({"kind": CONFIG_BROKEN, "message": broken})
    tmux = tmux_problem(home, sessions, environ=environ)
    if tmux:
        found.append(tmux)
    return found
