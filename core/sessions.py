"""The session registry: agent sessions the hooks have seen.

``sessions.json`` maps a session id to
``{"tmux_session", "tmux_pane", "entity", "cwd", "last_seen", "last_tool"}``.
The pre-tool-use hook registers its session on every call, but writes the file
only when something changed or ``last_seen`` is older than ``REFRESH_SECONDS``,
so the common path is a read, not an fsync.

The tmux session name is how an operator who sees ``agent-3`` in tmux can stop
the Claude session running inside it: the hook resolves ``$TMUX_PANE`` to its
session name once (a ``tmux display-message`` call) and keeps it here.

Failure: this file is a cache of observations the hooks rebuild on their next
call, so a corrupt file is quarantined as ``<name>.corrupt-<timestamp>``, the
registry starts empty, and ``state_quarantined`` is logged.
"""
from __future__ import annotations

import os

from core.acklog import AckLog
from core.clock import iso, now_seconds, parse_iso
from core.selfhealing import SelfHealingJSON
from core.statefile import locked, write_json

SESSIONS_NAME = "sessions.json"
REFRESH_SECONDS = 30
TMUX_LOOKUP_TIMEOUT = 2.0
_FIELDS = ("tmux_session", "tmux_pane", "entity", "cwd")


def tmux_session_of_pane(pane: str, *, env: dict[str, str] | None = None) -> str:
    """The tmux session name that holds ``pane`` (``""`` when tmux cannot say)."""
    if not pane:
        return ""
    import subprocess

    try:
        done = subprocess.run(
            ["tmux", "display-message", "-p", "-t", pane, "#{session_name}"],
            capture_output=True, text=True, timeout=TMUX_LOOKUP_TIMEOUT,
            env=env if env is not None else os.environ,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


class SessionRegistry:
    def __init__(self, home: str | os.PathLike, acklog: AckLog | None = None):
        self.home = os.fspath(home)
        self.path = os.path.join(self.home, SESSIONS_NAME)
        self.acklog = acklog or AckLog(self.home)
        self.store = SelfHealingJSON(self.path, self.acklog, lambda data: data)

    def all(self, *, now: float | None = None) -> dict[str, dict[str, object]]:
        data = self.store.snapshot({}, now=now)
        return {k: v for k, v in data.items() if isinstance(v, dict)}

    def get(self, session_id: str, *, now: float | None = None) -> dict[str, object] | None:
        record = self.store.snapshot({}, now=now).get(session_id)
        return record if isinstance(record, dict) else None

    def observe(
        self,
        session_id: str,
        *,
        now: float | None = None,
        tool: str | None = None,
        **fields: str | None,
    ) -> dict[str, object]:
        """Record that the session is alive; writes only when it must."""
        moment = now_seconds(now)
        known = self.get(session_id, now=now) or {}
        wanted = {k: v for k, v in fields.items() if k in _FIELDS and v}
        changed = any(known.get(k) != v for k, v in wanted.items())
        try:
            stale = moment - parse_iso(known.get("last_seen", "")) >= REFRESH_SECONDS
        except ValueError:
            stale = True
        if not changed and not stale:
            return known
        with locked(self.path):
            data = self._load_for_write(now=now)
            record = data.get(session_id)
            if not isinstance(record, dict):
                record = data[session_id] = {}
            for key in _FIELDS:
                record.setdefault(key, "")
            record.update(wanted)
            record["last_seen"] = iso(moment)
            if tool:
                record["last_tool"] = tool
            write_json(self.path, data)
            return dict(record)

    def set_entity(self, session_id: str, entity: str, *, now: float | None = None) -> None:
        with locked(self.path):
            data = self._load_for_write(now=now)
            record = data.get(session_id)
            if not isinstance(record, dict):
                record = data[session_id] = {k: "" for k in _FIELDS}
                record["last_seen"] = iso(now_seconds(now))
            if record.get("entity") != entity:
                record["entity"] = entity
                write_json(self.path, data)

    def _load_for_write(self, *, now: float | None) -> dict[str, object]:
        return self.store.load_for_write(now=now)
