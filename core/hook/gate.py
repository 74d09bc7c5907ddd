"""The gate: one chokepoint that decides whether an agent's tool call may run.

``Gate.check(session_id, tool, tool_input)`` answers allow or deny with a
reason, in this order (the first rule that denies wins):

1. the stop state is unreadable: deny (fail closed, point at ``leash doctor``);
2. the fleet is stopped;
3. the session is stopped, by its id or by its tmux session name;
4. the session's entity (its id, tmux session or registered entity) is hands-off;
5. a path the call reaches matches a ``path:`` hands-off lock: the call is
   read once (``core.toolcall``, through the shell reader) and a written
   directory covers everything under it. A relative pattern is matched from
   the project (``core.project``: ``CLAUDE_PROJECT_DIR``, else the git work
   tree of the cwd, else the cwd), so ``cd`` changes nothing. While path
   locks are in force, a written path the reader cannot resolve (a command's
   output, an unknown variable) and a command too large to read to its end
   are denied: neither can be cleared. What read-only tools (Read, Grep)
   read is not held by path locks;
6. a spend cap that is reached holds the session (``core.policy.budgethold``):
   every call is denied, read-only ones too (every model request costs),
   until an operator raises the cap; read only while ``[[budget.cap]]`` is
   configured, and an unreadable budget store denies (fail closed). The
   first deny of a session under a hold records one ``budget`` halt (unless
   the ``budget`` condition is disabled: then caps warn and never hold);
7. the session's halt state: ``paused`` denies everything, ``halted`` denies
   all but the read-only tools (``[gate] read_only_tools``); an unreadable
   halts.db denies (fail safe);
8. the halt conditions one tool call can show (``core.halts.hookcontext``):
   a condition of high or critical severity that fires denies the call, and
   is recorded by the seed's auto-record rules, which halts the session;
   ``supervisor_tampering`` also appends a ``tamper_blocked`` ack-log line.

Every read goes through a cache keyed by the file's identity, so a check is a
few ``stat`` calls and dictionary lookups however many stops and locks exist;
config.toml as judged (``judged_config``) too: one dict per home and file
state, shared by every check of a process and never changed by any.
"""
from __future__ import annotations

import os

from leash.core.base.identity import protecting_entities
from leash.core.state.handsoff import HandsOffUnreadable
from leash.core.state.stop import StopStateUnreadable

TYPE_CHECKING = False  # for the type checker only: the hook path does not import typing
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from leash.core.store.protocols import Backend
    from leash.core.store.records import LockRecord, StopRecord


class Verdict:
    """allow or deny, why, and which rule decided (stop_unreadable,
    fleet_stop, session_stop, hands_off, locks_unreadable, path_lock, budget_unreadable,
    budget_hold, halts_unreadable, session_paused, session_halted, halt_condition)."""

    __slots__ = ("allow", "reason", "rule")

    def __init__(self, allow: bool, reason: str = "", rule: str = ""):
        self.allow, self.reason, self.rule = allow, reason, rule

    def __repr__(self) -> str:
        return f"Verdict(allow={self.allow}, rule={self.rule!r}, reason={self.reason!r})"


ALLOW = Verdict(True)

# config.toml as the gate judges by it, per home: (the file's identity, config, problem).
_JUDGED: dict[str, tuple[tuple | None, dict, str | None]] = {}
JUDGED_KEPT = 16  # homes; one per process in practice


def judged(home: str) -> tuple[dict, str | None]:
    """``core.base.config.judged_config(home)``, kept while config.toml keeps
    its inode, size and times (a missing file is an identity too): a leashd
    judging every call pays one ``stat``, not a read, a parse and a copy.
    The dict is shared: read it, never change it."""
    path = os.path.join(home, "config.toml")
    try:
        info = os.stat(path)
        identity: tuple | None = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    except FileNotFoundError:
        identity = None
    except OSError:
        identity = ("unreadable",)  # judged afresh each time: judged_config says why
    kept = _JUDGED.get(home)
    if kept is not None and kept[0] == identity and identity != ("unreadable",):
        return kept[1], kept[2]
    from leash.core.base.config import judged_config

    config, problem = judged_config(home)
    if len(_JUDGED) >= JUDGED_KEPT:
        _JUDGED.clear()
    _JUDGED[home] = (identity, config, problem)
    return config, problem


class Gate:
    """Reads every store through ``backend`` (default: the home's file backend)."""

    def __init__(self, home: str | os.PathLike, *, backend: Backend | None = None):
        if backend is None:
            from leash.core.store.files import FileBackend

            backend = FileBackend(home)
        self.backend = backend
        self.home = os.fspath(home)
        self.stops, self.locks, self.sessions = backend.stops, backend.locks, backend.sessions
        self._config: dict | None = None
        self.config_problem: str | None = None  # why config.toml could not be used

    def config(self) -> dict:
        """config.toml, or — when it cannot be used — every setting at its
        strictest (``core.base.config.strictest_config``: the gate keeps going
        and loosens nothing; ``config_problem`` then says why, and the
        approvals floor holds every call)."""
        if self._config is None:
            # Asked, not caught: in leashd (and an operator's command) load_config
            # answers a broken file with the floor instead of raising.
            self._config, self.config_problem = judged(self.home)
        return self._config

    def names(self, session_id: str, *, now: float | None = None, session=None) -> tuple[list[str], dict[str, Any]]:
        """The names a session answers to (id, tmux session) and its record
        (``session``: the record the caller has just read or written)."""
        known = session if session is not None else self.sessions.get(session_id, now=now)
        record = known.as_dict() if known is not None else {}
        names = [session_id]
        tmux_name = record.get("tmux_session")
        if tmux_name and tmux_name != session_id:
            names.append(tmux_name)
            host = self.sessions.host
            if host and tmux_name.startswith(host + "/"):  # a bare name means that name on every host
                names.append(tmux_name[len(host) + 1:])
        if record.get("parent"):  # resumed or forked: a stop on an ancestor holds it too
            record = {**record, "lineage": self.sessions.lineage(session_id, now=now)}
            names.extend(n for n in record["lineage"] if n not in names)
        return names, record

    def stopped_reason(self, session_id: str, *, now: float | None = None) -> Verdict | None:
        names, record = self.names(session_id, now=now)
        return self._stop_verdict(names, record.get("tmux_session_id") or "", now=now,
                                  lineage=tuple(record.get("lineage", ())))

    def _stop_verdict(self, names: list[str], tmux_session_id: str = "", *,
                      now: float | None = None, lineage: tuple[str, ...] = ()) -> Verdict | None:
        try:
            stops = self.stops.current(now=now)
        except StopStateUnreadable as exc:
            return Verdict(False, f"leash: {exc}", "stop_unreadable")
        if stops.fleet is not None:
            return Verdict(False, _said("the whole fleet is stopped", stops.fleet), "fleet_stop")
        for name in names:
            record = stops.sessions.get(name)
            if record is not None:
                what = ("this session" if name == names[0] else
                        f"session {name!r}, which this one was resumed from," if name in lineage else
                        f"tmux session {name!r}")
                return Verdict(False, _said(f"{what} is stopped", record), "session_stop")
        bound = stops.by_tmux_id.get(tmux_session_id) if tmux_session_id else None
        if bound is not None and bound in stops.sessions:  # stopped by the name it had when the stop was filed
            return Verdict(False, _said(f"tmux session {bound!r} (renamed since) is stopped",
                                        stops.sessions[bound]), "session_stop")
        return None

    def check(self, session_id: str, tool: str | None = None, tool_input: object = None, *,
              cwd: str | None = None, now: float | None = None, env: Mapping[str, str] | None = None,
              session=None) -> Verdict:
        """``session``: the session's record as the caller has just read or written it."""
        reader = CallReader(self.home, tool, tool_input, env)
        known = self.names(session_id, now=now, session=session)  # read once for every rule of this check
        verdict = self.check_stops_and_locks(session_id, tool, tool_input, cwd=cwd, now=now, reader=reader,
                                             known=known)
        if verdict.allow:
            verdict = self.check_budget(session_id, now=now, known=known)
        if verdict.allow:
            verdict = self.check_halts(session_id, tool, tool_input, cwd=cwd, now=now, env=env, reader=reader,
                                       lineage=known[1].get("lineage", []), record=known[1])
        return verdict

    def check_stops_and_locks(self, session_id: str, tool: str | None = None, tool_input: object = None, *,
                              cwd: str | None = None, now: float | None = None,
                              reader: "CallReader | None" = None,
                              known: tuple[list[str], dict[str, Any]] | None = None) -> Verdict:
        names, record = known if known is not None else self.names(session_id, now=now)
        tmux_session_id = record.get("tmux_session_id") or ""
        stopped = self._stop_verdict(names, tmux_session_id, now=now, lineage=tuple(record.get("lineage", ())))
        if stopped is not None:
            return stopped
        entities = protecting_entities(names, [record])
        try:
            # One reading of the locks answers the whole check (names, then every path).
            locks = self.locks.view(now=now)
            found = locks.covering(entities, tmux_session_id=tmux_session_id, now=now)
            if found is not None:
                return Verdict(False, _locked(found.entity, found), "hands_off")
            if not locks.has_path_locks(now=now):
                return ALLOW
        except HandsOffUnreadable as exc:
            return Verdict(False, f"leash: {exc}; every tool call is held", "locks_unreadable")
        where = cwd or record.get("cwd") or None
        reader = reader or CallReader(self.home, tool, tool_input, None)
        call = reader.read(where)
        try:
            return self._path_lock_verdict(call, where, now=now, locks=locks, anchor=call.project(where, reader.env))
        except HandsOffUnreadable as exc:
            return Verdict(False, f"leash: {exc}; every tool call is held", "locks_unreadable")

    def _path_lock_verdict(self, call, where: str | None, *, now: float | None, locks=None,
                           anchor: str | None = None) -> Verdict:
        """Rule 5: every path the call reaches (its real path too, after
        symbolic links), a written directory with everything under it;
        relative patterns matched from ``anchor`` (the project)."""
        locks = locks if locks is not None else self.locks
        for target in call.targets:
            if target.command is None and target.role == "read":
                continue  # what a read-only tool reads: path locks hold changes, not looks
            for path, base in _path_variants(target.path, anchor or where, call.real):
                found = locks.lock_for_path(path, cwd=base, now=now, subtree=target.subtree)
                if found is not None:
                    return Verdict(False, _locked(found.entity, found, path=_shown(target, where)), "path_lock")
        unresolved = next((t for t in call.targets if t.computed and t.role == "write"), None)
        if unresolved is not None:
            return Verdict(False, f"leash: this command writes a path leash cannot resolve "
                                  f"({_unresolved(unresolved, where)}), and it cannot be "
                                  "checked against the path locks in force; name the file literally.", "path_lock")
        if call.incomplete:
            return Verdict(False, f"leash: this command cannot be checked against the path locks in force "
                                  f"({call.incomplete}); split it into smaller commands.", "path_lock")
        return ALLOW


    def check_budget(self, session_id: str, *, now: float | None = None,
                     known: tuple[list[str], dict[str, Any]] | None = None) -> Verdict:
        """Rule 6: a held counter of a configured cap that covers the session
        denies. With no ``[[budget.cap]]`` nothing is read or imported."""
        budget = self.config()["budget"]
        if not budget["cap"]:
            return ALLOW
        from leash.core.store.budget import BudgetUnreadable

        try:
            holds = self.backend.budget.holds()
        except BudgetUnreadable as exc:
            return Verdict(False, f"leash: budget store unreadable ({exc}) — every tool call is held; "
                                  "run `leash doctor`", "budget_unreadable")
        if not holds:
            return ALLOW
        from leash.core.hook.budgetgate import held_by

        record = (known if known is not None else self.names(session_id, now=now))[1]
        reason = held_by(self, session_id, record, holds, budget, now=now)
        return ALLOW if reason is None else Verdict(False, reason, "budget_hold")

    def check_halts(self, session_id: str, tool: str | None, tool_input: object, *, cwd: str | None = None,
                    now: float | None = None, env: Mapping[str, str] | None = None,
                    reader: "CallReader | None" = None, lineage: list[str] | None = None,
                    record: dict | None = None) -> Verdict:
        """Rules 6 and 7 (``lineage``: the session's ancestors, ``record``: its
        record, when the caller has read them already). Imports the halt engine
        only when there is something for it to do, so the common hook call
        stays light."""
        reader = reader or CallReader(self.home, tool, tool_input, env)
        from leash.core.state.halts.store import HaltStoreUnavailable
        from leash.core.state.loghead import HeadMismatch

        try:  # a unit over no database at all when there is no halts.db and no halt line in the log
            with self.backend.halts.unit(now=now) as unit:
                return self._check_held(session_id, tool, tool_input, unit, cwd=cwd, now=now, env=env,
                                        reader=reader, lineage=lineage, record=record)
        except HeadMismatch as exc:
            return Verdict(False, f"leash: halt state unreadable ({exc}) — every tool call is held; "
                                  "run `leash doctor`", "halts_unreadable")
        except HaltStoreUnavailable as exc:
            return Verdict(False, f"leash: halt store unreadable ({exc}) — every tool call is held; "
                                  "run `leash doctor`", "halts_unreadable")

    def _check_held(self, session_id, tool, tool_input, unit, *, cwd, now, env, reader, lineage=None,
                    record=None) -> Verdict:
        state = unit.state(session_id)
        if state != "paused" and lineage is None:
            lineage = self.sessions.lineage(session_id, now=now)
        for ancestor in lineage if state != "paused" else ():
            held = unit.state(ancestor)  # a fork keeps its halts
            state = held if held == "paused" or (held == "halted" and state == "active") else state
        if state == "paused":
            return Verdict(False, "leash: this session is paused: an escalated halt waits for a human. "
                                  f"Do not retry; the operator resolves it (leash halts list --session "
                                  f"{session_id}).", "session_paused")
        if state == "halted" and not self._only_looks(tool, reader, cwd):
            return Verdict(False, "leash: this session is halted until the operator acknowledges its halts "
                                  f"(leash halts list --session {session_id}); only read-only tools and commands "
                                  "that only look (ls, cat, grep, git status ...) may run meanwhile.", "session_halted")
        return self._check_conditions(session_id, tool, tool_input, unit, cwd=cwd, now=now, env=env,
                                      reader=reader, lineage=lineage, record=record)

    def _only_looks(self, tool: str | None, reader: "CallReader", cwd: str | None) -> bool:
        """A read-only tool, or a Bash command that only looks (``core.readonly``)."""
        if tool in self.config()["gate"]["read_only_tools"]:
            return True
        if tool != "Bash":
            return False
        from leash.core.policy.readonly import is_read_only_call

        return is_read_only_call(reader.read(cwd))

    def _check_conditions(self, session_id, tool, tool_input, unit, *, cwd, now, env, reader, lineage=None,
                          record=None) -> Verdict:
        if tool is None:
            return ALLOW
        from leash.core.policy.halts.hookcontext import check_input

        files_read = self._files_read(session_id, unit, lineage or (), record, cwd=cwd, now=now) \
            if tool in ("Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch") else None
        data = check_input(session_id, tool, tool_input, cwd=cwd, env=env if env is not None else os.environ,
                           files_read=files_read, call=reader.read(cwd), home=self.home)
        if data is None:
            return ALLOW
        from leash.core.policy.halts.conditions.registry import blocks

        result = unit.check(data)
        blocking = [r for r in result.reasons if blocks(r.severity)]
        if not blocking:
            return ALLOW
        said = "; ".join(f"{r.condition_name} ({r.severity}): {r.description.rstrip('.')}" for r in blocking)
        held = any(r.auto_recorded for r in blocking)
        tail = (" The session is halted until the operator acknowledges "
                f"(leash halts list --session {session_id})." if held else "")
        if any(r.condition_name == "supervisor_tampering" for r in blocking):
            self._tamper_blocked(session_id, tool, tool_input, now=now)
            tail += " Only a human can lift this stop; do not try to work around it."
        return Verdict(False, f"leash: halt — {said}. {result.recommended_action}{tail}", "halt_condition")

    def _files_read(self, session_id: str, unit, lineage, record: dict | None, *, cwd: str | None,
                    now: float | None) -> list[str] | None:
        """The files the session has read, with its ancestors' (a fork's
        conversation holds what they read). None — no evidence either way —
        when no PostToolUse hook of theirs has reported and leash cannot tell
        that the session's reads are reported from its first call on."""
        found = None
        for reader_id in (session_id, *lineage):
            reads = unit.files_read(reader_id)
            if reads is not None:
                found = (found or []) + reads
        if found is None and self._reads_reported(session_id, record or {}, cwd, now=now):
            return []  # its PostToolUse reports every read, and none has come yet
        return found

    def _reads_reported(self, session_id: str, record: dict, cwd: str | None, *, now: float | None) -> bool:
        """True when the settings for the session's directory wire leash's
        PostToolUse hook: as SessionStart recorded them (``wired``), else as
        they are now, judged once and kept on the record (a session whose
        SessionStart came under another id, or was not wired)."""
        from leash.core.hook.agentwiring import wiring
        from leash.core.hook.install import WIRED_READS

        wired = record.get("wired") or ""
        if not wired:
            wired = wiring(str(record.get("cli") or ""), project=record.get("cwd") or cwd)
            try:
                self.sessions.observe(session_id, now=now, wired=wired)
            except OSError:
                pass  # judged again at the next such call
        return WIRED_READS in str(wired).split()

    def _tamper_blocked(self, session_id: str, tool: str | None, tool_input: object, *, now: float | None) -> None:
        """The ack log's ``tamper_blocked`` line: who tried what (masked, escaped)."""
        from leash.core.base.secrets import mask
        from leash.core.base.text import printable

        what = shell_summary(tool, tool_input)
        try:
            self.backend.acklog.append("tamper_blocked", source="leash", session_id=session_id,
                                     reason=printable(mask(what), limit=TAMPER_SUMMARY_CHARS), now=now)
        except OSError:
            pass  # the halt itself is recorded; a full disk must not turn the deny into an allow


TAMPER_SUMMARY_CHARS = 300
PATH_MAX = 4096



class CallReader:
    """Reads the tool call once (``core.toolcall.read_tool_call``) for every
    rule of one check; the shell reader is imported only when a call needs it."""

    __slots__ = ("home", "tool", "tool_input", "env", "_calls")

    def __init__(self, home: str, tool: str | None, tool_input: object, env: Mapping[str, str] | None):
        self.home, self.tool, self.tool_input = home, tool, tool_input
        self.env = env if env is not None else os.environ
        self._calls: dict = {}

    def read(self, cwd: str | None):
        if cwd not in self._calls:
            from leash.core.policy.toolcall import read_tool_call

            self._calls[cwd] = read_tool_call(self.tool, self.tool_input, cwd=cwd, env=self.env, home=self.home)
        return self._calls[cwd]


def shell_summary(tool: str | None, tool_input: object) -> str:
    from leash.core.policy.toolcall import input_paths, shell_command

    command = shell_command(tool, tool_input)
    if command is not None:
        return f"Bash: {command[:TAMPER_SUMMARY_CHARS * 2]}"
    return f"{tool}: {', '.join(path for path, _, _ in input_paths(tool, tool_input, None))}"


def _path_variants(path: str, where: str | None, real=os.path.realpath) -> list[tuple[str, str | None]]:
    """The path as written and, when a symbolic link is on the way, its real
    path (``real``: the call's own ``ToolCall.real``, each path resolved once)."""
    variants = [(path, where)]
    if len(path) > PATH_MAX:  # no file has such a name; realpath would walk every part of it
        return variants
    resolved = real(path)
    if resolved != path:
        variants.append((resolved, real(where) if where else where))
    return variants


def _shown(target, where: str | None) -> str:
    shown = os.path.relpath(target.path, where) if where and target.path.startswith(where) else target.path
    return shown + (" (and everything under it)" if target.subtree else "")


UNRESOLVED_SHOWN = 80


def _unresolved(target, where: str | None) -> str:
    """The unresolved word as the command wrote it, escaped and cut (it is the agent's text)."""
    from leash.core.base.text import printable

    return printable(_shown(target, where), limit=UNRESOLVED_SHOWN)


def _said(what: str, record: StopRecord) -> str:
    reason = record.reason or "no reason given"
    return (f"leash: {what} by {_known(record.source)} at {_known(record.stopped_at)}: {reason}. "
            "Do not retry; wait for the operator to resume.")


def _locked(entity: str, lock: LockRecord, *, path: str | None = None) -> str:
    subject = f"{path} is covered by hands-off lock {entity!r}" if path else f"{entity!r} is hands-off"
    reason = lock.reason or "no reason given"
    return (f"leash: {subject} until {_known(lock.expires_at)} "
            f"(locked by {_known(lock.source)}: {reason}). Do not touch it.")


def _known(value: str | None) -> str:
    return "?" if value is None else value
