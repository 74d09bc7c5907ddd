"""The session registry: agent sessions the hooks have seen.

``sessions.json`` maps a session id to
``{"tmux_session", "tmux_pane", "entity", "cwd", "last_seen", "last_tool"}``.
The pre-tool-use hook registers its session on every call, but writes the file
only when something changed or ``last_seen`` is older than ``REFRESH_SECONDS``,
so the common path is a read, not an fsync.

``agent_process`` is the Claude Code process that ran the session's hooks
(``core.agentproc``: ``{"pid", "started", "uid", "headless", "tmux_socket"}``),
found from the hook's process tree; it changes only when another process
takes the session on, and it is how ``leash stop --interrupt`` reaches it.

The tmux session name is how an operator who sees ``agent-3`` in tmux can stop
the Claude session running inside it: the hook resolves ``$TMUX_PANE`` to its
session's id (``$N``) and name once (a ``tmux display-message`` call) and keeps
them here. The id is what counts: an agent may rename its tmux session, and a
stop or lock filed by the old name was bound to the id when it was filed.

Sessions unseen for ``[sessions] forget_after_days`` (default 7) are dropped at
the next write, so the file, and a hook's read of it, stays the size of the
live fleet.

Failure: this file is a cache of observations the hooks rebuild on their next
call, so a corrupt file is quarantined as ``<name>.corrupt-<timestamp>``, the
registry starts empty, and ``state_quarantined`` is logged.
"""
from __future__ import annotations

import os

from leash.core.base.clock import iso, now_seconds, parse_iso
from leash.core.base.statefile import JSONObject, JSONValue, locked, write_json
from leash.core.state.acklog import AckLog
from leash.core.state.selfhealing import SelfHealingJSON

TYPE_CHECKING = False  # typing is for the type checker only: this module is on the hook path
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

SESSIONS_NAME = "sessions.json"
REFRESH_SECONDS = 30
TMUX_LOOKUP_TIMEOUT = 2.0
_FIELDS = ("tmux_session", "tmux_session_id", "tmux_pane", "entity", "cwd", "transcript_path", "parent", "parent_by",
           "agent", "cli", "wired", "host", "agent_process")
# What a session is doing, as its hooks last said (docs/claude-code.md, "What each session is doing"):
# PreToolUse to PostToolUse it is working (a tool in flight, since
# ``status_since``); a prompt taken or a call done, it is thinking; its turn
# ended (Stop), it is idle; Claude Code's notifications say when it waits.
STATUS_WORKING = "working"
STATUS_THINKING = "thinking"
STATUS_IDLE = "idle"
STATUS_WAITING_INPUT = "waiting for input"
STATUS_WAITING_PERMISSION = "waiting for permission"
STATUS_WAITING_APPROVAL = "waiting for approval"
STATUS_ENDED = "ended"
AGENT_STATUSES = (STATUS_WORKING, STATUS_THINKING, STATUS_IDLE, STATUS_WAITING_INPUT, STATUS_WAITING_PERMISSION,
                  STATUS_WAITING_APPROVAL, STATUS_ENDED)
MAX_LINEAGE = 16
_SEPARATOR = "\x1f"
DEFAULT_FORGET_AFTER_DAYS = 7


def _tmux(args: list[str], *, env: dict[str, str] | None = None, socket: str | None = None) -> list[str] | None:
    """tmux's output lines, or None when tmux cannot answer."""
    import subprocess

    command = ["tmux"] + (["-S", socket] if socket else []) + args
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TMUX_LOOKUP_TIMEOUT,
                              env=env if env is not None else os.environ)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.splitlines() if done.returncode == 0 else None


def tmux_identity_of_pane(pane: str, *, env: dict[str, str] | None = None) -> tuple[str, str]:
    """(session id ``$N``, session name) of the tmux session holding ``pane``
    (``%N``), asked of the server ``$TMUX`` names; ("", "") when tmux cannot
    say. The id survives a rename. A pane with no ``$TMUX`` beside it is not
    asked: the default server's pane of that number may be another one (and
    asking it would make tmux's socket directory in /tmp)."""
    socket = (env if env is not None else os.environ).get("TMUX", "").split(",")[0]
    if not pane or not socket:
        return "", ""
    out = _tmux(["display-message", "-p", "-t", pane, f"#{{session_id}}{_SEPARATOR}#{{session_name}}"], env=env,
                socket=socket)
    if not out or _SEPARATOR not in out[0]:
        return "", ""
    session_id, _, name = out[0].partition(_SEPARATOR)
    return session_id, name


def tmux_session_id_for(name: str, *, home=None, known: Mapping[str, Any] | None = None) -> str:
    """The id (``$N``) of the tmux session named exactly ``name`` now, so a
    stop or a lock filed by that name keeps holding it after a rename; else
    the id the hooks last saw under that name; "" when neither knows it."""
    from leash.core.base.tmux import resolve_socket

    try:
        socket = resolve_socket(home=home)
    except Exception:  # a bad config must not stop a stop
        socket = None
    listed = _tmux(["list-sessions", "-F", f"#{{session_id}}{_SEPARATOR}#{{session_name}}"], socket=socket) \
        if _server_may_run(socket) else None
    for line in listed or []:
        session_id, _, session_name = line.partition(_SEPARATOR)
        if session_name == name:
            return session_id
    for record in (known or {}).values():
        if record.get("tmux_session") == name and record.get("tmux_session_id"):
            return record["tmux_session_id"]
    return ""


def tmux_session_names(*, home=None) -> list[str]:
    """The names of the tmux sessions running now on the server leash uses
    ([] when none runs, or tmux cannot say)."""
    from leash.core.base.tmux import resolve_socket

    try:
        socket = resolve_socket(home=home)
    except Exception:  # a bad config names no server to ask
        return []
    if not _server_may_run(socket):
        return []
    return [line for line in _tmux(["list-sessions", "-F", "#{session_name}"], socket=socket) or [] if line]


BOUND_KEYS = ("tmux_session_id", "tmux_session_ids")  # a stop's or lock's tmux session ids


def bound_tmux_ids(record: dict) -> list[str]:
    """The tmux session ids a stop or lock record was bound to when filed: one
    (``tmux_session_id``) in a home of one host; in the shared store, every
    host's session by that name (``tmux_session_ids``, each ``HOST/$N``)."""
    found = [record.get("tmux_session_id")]
    listed = record.get("tmux_session_ids")
    if isinstance(listed, list):
        found.extend(listed)
    return [bound for bound in found if isinstance(bound, str) and bound]


def _server_may_run(socket: str | None) -> bool:
    """False when the server's socket file is not there: no tmux process to ask."""
    if socket is None and os.environ.get("TMUX"):
        socket = os.environ["TMUX"].split(",")[0]  # inside tmux, the client talks to that server
    if socket is None:
        directory = os.environ.get("TMUX_TMPDIR") or "/tmp"
        socket = os.path.join(directory, f"tmux-{os.getuid()}", "default")
    return os.path.exists(socket)


class FileSessionRows:
    """The registry's records in ``sessions.json`` (quarantined and started
    empty when it does not parse)."""

    def __init__(self, path: str, acklog: AckLog):
        self.path = path
        self.store = SelfHealingJSON(path, acklog, lambda data: data)

    def all(self, *, now: float | None = None) -> dict[str, JSONObject]:
        data = self.store.snapshot({}, now=now)
        return {k: v for k, v in data.items() if isinstance(v, dict)}

    def get(self, session_id: str, *, now: float | None = None) -> JSONObject | None:
        record = self.store.snapshot({}, now=now).get(session_id)
        return record if isinstance(record, dict) else None

    def update(self, session_id: str, change, *, horizon: float, now: float | None = None) -> JSONObject | None:
        """``change(record or None)`` -> the new record, or None to leave it;
        records last seen before ``horizon`` are dropped with any write."""
        with locked(self.path):
            data = self.store.load_for_write(now=now)
            for stale in [k for k, v in data.items() if last_seen_of(v) < horizon]:
                del data[stale]
            record = data.get(session_id)
            changed = change(dict(record) if isinstance(record, dict) else None)
            if changed is None:
                return record if isinstance(record, dict) else None
            data[session_id] = changed
            write_json(self.path, data)
            return changed


class SessionRegistry:
    """The sessions over ``sessions.json`` by default, or the ``rows`` another
    backend keeps them in (``all``/``get``/``update`` as ``FileSessionRows``)."""

    def __init__(self, home: str | os.PathLike, acklog=None, *, rows=None, host: str = ""):
        """``host``: this host's name when the store is shared by many hosts
        (tmux names, ids and panes are then kept as ``HOST/NAME``)."""
        self.home = os.fspath(home)
        self.host = host
        self.path = os.path.join(self.home, SESSIONS_NAME)
        self.acklog = acklog if acklog is not None else AckLog(self.home)
        self.rows = rows or FileSessionRows(self.path, self.acklog)
        self._forget_after: float | None = None

    def all(self, *, now: float | None = None) -> dict[str, JSONObject]:
        return self.rows.all(now=now)

    def get(self, session_id: str, *, now: float | None = None) -> JSONObject | None:
        return self.rows.get(session_id, now=now)

    def observe(
        self,
        session_id: str,
        *,
        now: float | None = None,
        tool: str | None = None,
        status: str | None = None,
        known: JSONObject | None = None,
        **fields: str | None,
    ) -> JSONObject:
        """Record that the session is alive; writes only when it must.
        ``status`` None leaves the status as it is (one of ``AGENT_STATUSES``;
        ``status_since`` says since when). ``known``:
        the record the caller has just read (else it is read here). Returns
        the record as stored now."""
        moment = now_seconds(now)
        known = known if known is not None else (self.get(session_id, now=now) or {})
        wanted = {k: v for k, v in fields.items() if k in _FIELDS and v}
        if self.host:  # a shared store: the host whose hook saw it
            wanted["host"] = self.host
        changed = any(known.get(k) != v for k, v in wanted.items())
        new_status = status is not None and known.get("status", "") != status
        # The newest tool is worth a write: "last tool" must never lag behind the agent.
        changed = changed or new_status or bool(tool and known.get("last_tool") != tool)
        try:
            stale = moment - parse_iso(known.get("last_seen", "")) >= REFRESH_SECONDS
        except ValueError:
            stale = True
        if not changed and not stale:
            return known

        def seen(record: JSONObject | None) -> JSONObject:
            record = record or {}
            for key in _FIELDS:
                record.setdefault(key, "")
            record.update(wanted)
            record["last_seen"] = iso(moment)
            if tool:
                record["last_tool"] = tool
            if status is not None:
                if record.get("status", "") != status or not record.get("status_since"):
                    record["status_since"] = iso(moment)
                record["status"] = status
            return record

        return dict(self.rows.update(session_id, seen, horizon=self._horizon(moment), now=now) or {})

    def lineage(self, session_id: str, *, now: float | None = None) -> list[str]:
        """The sessions this one was resumed or forked from, nearest first: a
        stop filed against an ancestor holds it too."""
        found: list[str] = []
        seen = {session_id}
        record = self.get(session_id, now=now) or {}
        while record.get("parent") and record["parent"] not in seen and len(found) < MAX_LINEAGE:
            found.append(record["parent"])
            seen.add(record["parent"])
            record = self.get(record["parent"], now=now) or {}
        return found

    def predecessor_in_pane(self, session_id: str, pane: str, *, now: float | None = None) -> str:
        """The session that last ran in tmux pane ``pane`` before this one ("" when none)."""
        if not pane:
            return ""
        others = [(record.get("last_seen", ""), sid) for sid, record in self.all(now=now).items()
                  if sid != session_id and record.get("tmux_pane") == pane]
        return max(others)[1] if others else ""

    def set_entity(self, session_id: str, entity: str, *, now: float | None = None) -> None:
        moment = now_seconds(now)

        def named(record: JSONObject | None) -> JSONObject | None:
            if record is None:
                record = {k: "" for k in _FIELDS}
                record["last_seen"] = iso(moment)
            elif record.get("entity") == entity:
                return None
            record["entity"] = entity
            return record

        self.rows.update(session_id, named, horizon=self._horizon(moment), now=now)

    def _horizon(self, moment: float) -> float:
        """Sessions unseen since this moment are dropped at a write
        (``[sessions] forget_after_days``): the store stays as small as the live
        fleet, so a hook's read does not grow with every session ever seen."""
        return moment - self.forget_after_days() * 86400

    def forget_after_days(self) -> float:
        if self._forget_after is None:
            self._forget_after = DEFAULT_FORGET_AFTER_DAYS
            if os.path.exists(os.path.join(self.home, "config.toml")):
                from leash.core.base.config import ConfigError, load_config

                try:
                    self._forget_after = load_config(self.home)["sessions"]["forget_after_days"]
                except (ConfigError, KeyError):
                    pass
        return self._forget_after

    def hosted(self, value: str) -> str:
        """A tmux session name, id or pane as this store keeps it: ``HOST/value``
        in a store shared by many hosts, ``value`` in a home of one."""
        return f"{self.host}/{value}" if self.host and value else value

    def bind_tmux_names(self, name: str) -> list[str]:
        """In a shared store, the tmux session ids (``HOST/$N``) a stop or lock
        filed under ``name`` binds to, so a rename on any host escapes nothing:
        ``HOST/NAME``'s, or for a bare name (every host) each host's session of
        that name the hooks have seen, and this host's own now."""
        known = self.all()
        if name in known:  # an agent's session id: it names one agent, not a tmux session
            return []
        host, _, bare = name.rpartition("/")
        found = {record["tmux_session_id"] for record in known.values()
                 if isinstance(record.get("tmux_session_id"), str) and record["tmux_session_id"]
                 and (record.get("tmux_session") == name
                      or (not host and str(record.get("tmux_session", "")).partition("/")[2] == name))}
        if not host or host == self.host:
            here = tmux_session_id_for(bare, home=self.home, known={})
            if here:
                found.add(self.hosted(here))
        return sorted(found)

    def bind_tmux_name(self, name: str) -> str:
        """The tmux session id a stop or lock filed under ``name`` binds to:
        "" for an agent's session id (it names one agent, not its tmux session)."""
        known = self.all()
        if name in known:
            return ""
        return tmux_session_id_for(name, home=self.home, known=known)


def host_of(record: dict) -> str:
    """The host a session of a shared store runs on: the one whose hook saw it
    last, else the ``HOST/`` of its tmux pane or session; "" when neither says."""
    if isinstance(record.get("host"), str) and record["host"]:
        return record["host"]
    for key in ("tmux_pane", "tmux_session"):
        value = record.get(key)
        if isinstance(value, str) and "/" in value:
            return value.partition("/")[0]
    return ""


def last_seen_of(record: JSONValue) -> float:
    """When a record was last seen; a record without a readable time is never
    too old to keep (it is not ours to forget before we understand it)."""
    try:
        return parse_iso(record.get("last_seen", ""))
    except (ValueError, AttributeError, TypeError):
        return float("inf")
