"""The warrant queue: filing, listing, claiming and pardoning death warrants.

A warrant (``warrants/<id>.json``, gastown's keys ``id, target, reason,
requester, filed_at``, plus ``target_id``) waits here until a dog claims it.

Filing checks the target (non-empty, printable, at most ``MAX_TARGET_LENGTH``
characters: a ``ValueError`` otherwise) and binds it to the tmux session it
names now: ``target`` keeps the name (or id) as given, ``target_id`` the
session's ``$N`` id, which survives a rename, or None when no such session
exists — its dog then finds it ``already_dead`` and touches nothing. (A
warrant without the key, filed before ids were kept, is bound when claimed.) Claiming moves it,
under the queue lock, into ``dogs/active/<id>.json`` as the dog's state, and
takes a held flock on ``dogs/active/<id>.claim`` that lasts as long as the dog
works: two kennels can never work the same warrant, and when a kennel dies its
claims die with it, so the next kennel resumes those dogs.

One live warrant per target: filing for a target that already has a pending or
active warrant is a no-op that returns the live one (the same session id, or
the same name when either is unbound). Ids sort in filing order.

Failure: a warrant or dog state that does not parse, or lacks its keys, is
moved aside as ``<name>.corrupt-<ts>`` (never deleted) with a
``state_quarantined`` ack-log line when a kennel meets it (or ``leash doctor
--repair`` runs): its warrant is not worked and nothing is killed for it.
``quarantined()`` and ``unreadable()`` name such files for ``warrant list``
and ``doctor``. A file that cannot be read at all (permissions) is skipped.

An operator may pardon at any time: a pending warrant is closed at once; an
active one gets a ``<id>.pardon`` request that its dog acts on at its next poll
— or, when no kennel holds it, is closed at once by the pardoner.
"""
from __future__ import annotations

import os

from leash.core.base.clock import compact_stamp, iso, now_seconds
from leash.core.base.statefile import (
    CORRUPT_MARK,
    JSONObject,
    StateCorrupt,
    locked,
    quarantine,
    read_json,
    release_hold,
    try_hold,
    write_json,
)
from leash.core.state.warrants.records import (
    RECORD_PREFIX,
    RECORD_SUFFIX,
    UNOPENABLE,
    dog_problem,
    file_problem,
    is_record,
    reason_problem,
    validate_target,
    warrant_problem,
)

WARRANTS_DIR = "warrants"
DOGS_DIR = "dogs"
ACTIVE_DIR = os.path.join(DOGS_DIR, "active")
COMPLETED_DIR = os.path.join(DOGS_DIR, "completed")
DEFAULT_REQUESTER = "operator"


def pardonable(found: tuple[str, dict] | None, named: str) -> tuple[str, dict]:
    """``find``'s answer for a warrant a pardon can still reach ("pending" or
    "active", record); WarrantError for an unknown or finished one (every
    backend's rule)."""
    if found is None:
        raise WarrantError(f"no warrant {named}")
    kind, record = found
    if kind == "completed":
        raise WarrantError(f"warrant {record['id']} is finished ({record.get('outcome')})")
    return kind, record


class WarrantError(Exception):
    """A warrant operation the state does not allow (unknown id, finished)."""


PREFIX_MIN_LENGTH = 6  # an id prefix shorter than this names no warrant
SHOWN_AMBIGUOUS = 3


def ambiguous(prefix: str, ids: list[str]) -> WarrantError:
    """The error for a prefix that several warrants' ids begin with (every backend's words)."""
    shown = ", ".join(sorted(ids)[:SHOWN_AMBIGUOUS]) + (", ..." if len(ids) > SHOWN_AMBIGUOUS else "")
    return WarrantError(f"ambiguous: {len(ids)} warrants begin with {prefix!r} ({shown}); give more of the id")


class WarrantQueue:
    def __init__(self, home, acklog=None, *, tmux=None):
        from leash.core.state.acklog import AckLog

        self.home = os.fspath(home)
        self.acklog = acklog or AckLog(self.home)
        self.tmux = tmux  # the server targets are bound on; the home's (config, env) when None
        self._unreadable: set[str] = set()  # pending files that cannot be opened: not "pending"
        self.pending_dir = os.path.join(self.home, WARRANTS_DIR)
        self.active_dir = os.path.join(self.home, ACTIVE_DIR)
        self.completed_dir = os.path.join(self.home, COMPLETED_DIR)
        self.lock_path = os.path.join(self.home, WARRANTS_DIR)  # the lock file is warrants.lock beside the dir

    def ensure_dirs(self) -> None:
        from leash.core.base.home import private_dir

        self.refuse_links()
        for directory in (self.pending_dir, self.active_dir, self.completed_dir):
            private_dir(directory)

    def linked_dirs(self) -> list[str]:
        """The queue's directories (and ``dogs/``) that are symbolic links:
        followed, they would put warrants and dog states outside the home."""
        dogs = os.path.dirname(self.active_dir)
        return [d for d in (self.pending_dir, dogs, self.active_dir, self.completed_dir) if os.path.islink(d)]

    def refuse_links(self) -> None:
        linked = self.linked_dirs()
        if linked:
            raise WarrantError(f"{self._relative(linked[0])} is a symbolic link (to {os.readlink(linked[0])}): "
                               "leash keeps warrants inside its home only; remove the link (leash doctor)")

    # ------------------------------------------------------------ paths
    def pending_path(self, warrant_id: str) -> str:
        return os.path.join(self.pending_dir, f"{warrant_id}.json")

    def active_path(self, warrant_id: str) -> str:
        return os.path.join(self.active_dir, f"{warrant_id}.json")

    def completed_path(self, warrant_id: str) -> str:
        return os.path.join(self.completed_dir, f"{warrant_id}.json")

    def claim_path(self, warrant_id: str) -> str:
        return os.path.join(self.active_dir, f"{warrant_id}.claim")

    def pardon_path(self, warrant_id: str) -> str:
        return os.path.join(self.active_dir, f"{warrant_id}.pardon")

    # ------------------------------------------------------------ reading
    @staticmethod
    def _read_dir(directory: str, newest: int | None = None) -> list[dict]:
        found = []
        if os.path.islink(directory) or (os.path.basename(os.path.dirname(directory)) == DOGS_DIR
                                         and os.path.islink(os.path.dirname(directory))):
            return []  # never read from outside the home (refused at every write)
        try:
            names = sorted(n for n in os.listdir(directory) if is_record(n))
        except FileNotFoundError:
            return []
        if newest is not None:
            names = names[-newest:]  # ids sort in filing order
        for name in names:
            try:
                data = read_json(os.path.join(directory, name), None)
            except Exception:  # a torn or corrupt record is skipped, never fatal
                continue
            if isinstance(data, dict):
                found.append(data)
        return found

    def pending(self) -> list[dict]:
        """Warrants no dog has taken yet, in filing order."""
        return sorted(self._read_dir(self.pending_dir), key=lambda w: (w.get("filed_at", ""), w.get("id", "")))

    def active(self) -> list[dict]:
        return self._read_dir(self.active_dir)

    def completed(self, newest: int | None = None) -> list[dict]:
        return self._read_dir(self.completed_dir, newest)

    def find(self, warrant_id: str) -> tuple[str, dict] | None:
        """("pending" | "active" | "completed", record) for an id or an id prefix."""
        for kind, records in (("pending", self.pending()), ("active", self.active()),
                              ("completed", self.completed())):
            for record in records:
                rid = record.get("id", "")
                if rid == warrant_id:
                    return kind, record
        if len(warrant_id) < PREFIX_MIN_LENGTH:
            return None
        matches = [(k, r) for k, rs in (("pending", self.pending()), ("active", self.active()),
                                        ("completed", self.completed()))
                   for r in rs if r.get("id", "").startswith(warrant_id)]
        if len(matches) > 1:
            raise ambiguous(warrant_id, [r.get("id", "") for _, r in matches])
        return matches[0] if matches else None

    def live_for(self, target: str, target_id: str | None = None) -> dict | None:
        """The pending or active warrant for this session: the same id when
        both are bound, else the same target text."""
        warrants = self.pending() + [r["warrant"] for r in self.active() if isinstance(r.get("warrant"), dict)]
        for warrant in warrants:
            if target_id and warrant.get("target_id"):
                if warrant["target_id"] == target_id:
                    return warrant
            elif warrant.get("target") == target:
                return warrant
        return None

    # ------------------------------------------------------------ bad files
    def quarantined(self) -> list[str]:
        """Corrupt warrants and dog states moved aside, as paths under the home."""
        found = []
        for directory in (self.pending_dir, self.active_dir):
            try:
                names = os.listdir(directory)
            except FileNotFoundError:
                continue
            found += [self._relative(os.path.join(directory, n)) for n in sorted(names) if CORRUPT_MARK in n]
        return found

    def unreadable(self) -> list[tuple[str, str]]:
        """(path under the home, what is wrong) for each warrant or dog state
        still in place that no dog can work."""
        found = []
        for directory, check in ((self.pending_dir, warrant_problem), (self.active_dir, dog_problem)):
            try:
                names = sorted(n for n in os.listdir(directory) if is_record(n))
            except FileNotFoundError:
                continue
            for name in names:
                problem = file_problem(os.path.join(directory, name), check)
                if problem:
                    found.append((self._relative(os.path.join(directory, name)), problem))
        return found

    def quarantine_unreadable(self, *, now: float | None = None) -> list[str]:
        """Move every unreadable warrant and free dog state aside; returns where to."""
        moved = []
        with locked(self.lock_path):
            for name in self._pending_names():
                path = os.path.join(self.pending_dir, name)
                problem = file_problem(path, warrant_problem)
                if problem and problem != UNOPENABLE:
                    moved.append(self._quarantine(path, problem, now=now))
        for name in self._active_names():
            warrant_id = name[:-len(RECORD_SUFFIX)]
            fd = try_hold(self.claim_path(warrant_id))
            if fd is None:
                continue  # a dog holds it; its kennel quarantines it if it must
            try:
                path = self.active_path(warrant_id)
                problem = file_problem(path, dog_problem)
                if problem and problem != UNOPENABLE:
                    moved.append(self._quarantine(path, problem, now=now))
            finally:
                self.release(warrant_id, fd)
        return [m for m in moved if m]

    def _relative(self, path: str) -> str:
        return os.path.relpath(path, self.home)

    def _quarantine(self, path: str, problem: str, *, now: float | None = None) -> str | None:
        """Move a bad record aside (call it holding its lock or claim) and say so."""
        moved = quarantine(path, now=now)
        if moved is not None:
            self.acklog.append("state_quarantined", source="leash", session_id="", now=now,
                               reason=f"{self._relative(path)} unreadable ({problem}); moved to "
                                      f"{os.path.basename(moved)}; its warrant is not worked",
                               file=self._relative(path), moved_to=os.path.basename(moved))
        return moved

    # ------------------------------------------------------------ filing
    def file(self, target: str, *, reason: str, requester: str = DEFAULT_REQUESTER,
             now: float | None = None) -> tuple[dict, bool]:
        """(the warrant, True) when filed; (the live one, False) when the target
        already has a live warrant. ``target_id`` is None when no tmux session
        has that name (or id) now."""
        validate_target(target)
        problem = reason_problem(reason)
        if problem:
            raise ValueError(problem)
        from leash.core.base.secrets import mask  # the warrant file never holds a secret

        reason, requester = mask(reason), mask(requester or DEFAULT_REQUESTER)
        moment = now_seconds(now)
        bound = self.bind(target)
        target_id = bound["id"] if bound else None
        self.ensure_dirs()
        with locked(self.lock_path):
            live = self.live_for(target, target_id)
            if live is not None:
                return live, False
            warrant: JSONObject = {
                "id": f"{RECORD_PREFIX}{compact_stamp(moment)}-{os.urandom(3).hex()}", "target": target,
                "target_id": target_id, "reason": reason, "requester": requester or DEFAULT_REQUESTER,
                "filed_at": iso(moment)}
            write_json(self.pending_path(warrant["id"]), warrant)
            self.acklog.append("warrant_filed", source=requester or DEFAULT_REQUESTER, session_id=target,
                               reason=reason, now=moment, warrant_id=warrant["id"], target_id=target_id)
        return warrant, True

    def session_names(self) -> dict[str, str]:
        """tmux session id -> its name now ({} when tmux cannot be asked)."""
        try:
            return {s["id"]: s["name"] for s in self._server().list_sessions()}
        except Exception:
            return {}

    def bind(self, target: str) -> dict | None:
        """The tmux session ``target`` names now (``Tmux.resolve``); None when
        there is none or tmux cannot be asked."""
        try:
            return self._server().resolve(target)
        except Exception:  # no tmux, no server: nothing to bind to
            return None

    def _server(self):
        if self.tmux is None:
            from leash.core.base.tmux import Tmux

            self.tmux = Tmux(home=self.home)
        return self.tmux

    # ------------------------------------------------------------ claiming
    def _pending_names(self) -> list[str]:
        try:
            return sorted(n for n in os.listdir(self.pending_dir) if is_record(n))
        except FileNotFoundError:
            return []

    def _active_names(self) -> list[str]:
        try:
            return sorted(n for n in os.listdir(self.active_dir) if is_record(n))
        except FileNotFoundError:
            return []

    def has_pending(self) -> bool:
        """Whether any warrant waits (a directory listing, no file is read);
        files found unopenable before do not count."""
        return any(n not in self._unreadable for n in self._pending_names())

    def claim_next(self, *, owner: dict, now: float | None = None) -> tuple[dict, int] | None:
        """Take the oldest pending warrant: (dog state, held claim fd) or None.
        Ids sort in filing order, so only the file taken is read."""
        moment = now_seconds(now)
        self.ensure_dirs()
        with locked(self.lock_path):
            for name in self._pending_names():
                warrant = self._read_pending(name, now=moment)
                if warrant is None:
                    continue
                if os.path.exists(self.active_path(warrant["id"])):  # claimed by a kennel that died before
                    os.unlink(self.pending_path(warrant["id"]))      # removing this copy
                    continue
                fd = try_hold(self.claim_path(warrant["id"]))
                if fd is None:
                    continue
                state = {"id": warrant["id"], "warrant": warrant, "state": "received", "attempt": 0,
                         "started_at": iso(moment), "last_message_at": None, "next_timeout": None,
                         "kennel": owner}
                write_json(self.active_path(warrant["id"]), state)
                os.unlink(self.pending_path(warrant["id"]))
                return state, fd
        return None

    def _read_pending(self, name: str, *, now: float) -> dict | None:
        """A pending warrant by file name; a bad one is quarantined (call it
        holding the queue lock)."""
        path = os.path.join(self.pending_dir, name)
        try:
            warrant = read_json(path, None)
        except StateCorrupt as exc:
            self._quarantine(path, exc.detail, now=now)
            return None
        except OSError:
            self._unreadable.add(name)
            return None
        if warrant is None:
            return None
        problem = warrant_problem(warrant, name)
        if problem:
            self._quarantine(path, problem, now=now)
            return None
        return warrant

    def claim_orphans(self, *, owner: dict, skip: set[str], limit: int | None = None,
                      now: float | None = None) -> list[tuple[dict, int]]:
        """Up to ``limit`` active dogs whose kennel died (no one holds their
        claim). A bad state is quarantined on the way."""
        claimed: list[tuple[dict, int]] = []
        for name in self._active_names():
            if limit is not None and len(claimed) >= limit:
                break
            warrant_id = name[:-len(RECORD_SUFFIX)]
            if warrant_id in skip:
                continue
            fd = try_hold(self.claim_path(warrant_id))
            if fd is None:
                continue
            path = self.active_path(warrant_id)
            try:
                current = read_json(path, None)
                problem = dog_problem(current, name) if current is not None else None
            except StateCorrupt as exc:
                current, problem = None, exc.detail
            except OSError:
                current, problem = None, None
            if problem:
                self._quarantine(path, problem, now=now)
            if problem or not isinstance(current, dict):  # bad, unopenable, or finished while we looked
                self.release(warrant_id, fd)
                continue
            current["kennel"] = owner
            write_json(self.active_path(warrant_id), current)
            claimed.append((current, fd))
        return claimed

    def release(self, warrant_id: str, fd: int) -> None:
        try:
            os.unlink(self.claim_path(warrant_id))
        except FileNotFoundError:
            pass
        release_hold(fd)

    # ------------------------------------------------------------ pardon
    def pardon(self, warrant_id: str, *, source: str, reason: str = "", now: float | None = None) -> tuple[str, dict]:
        """("pardoned" | "requested", record). Raises WarrantError for an unknown
        or finished warrant."""
        from leash.core.state.warrants.outcome import finish_without_dog

        moment = now_seconds(now)
        kind, record = pardonable(self.find(warrant_id), warrant_id)
        warrant_id = record["id"]
        if kind == "pending":
            with locked(self.lock_path):
                if not os.path.exists(self.pending_path(warrant_id)):
                    return self.pardon(warrant_id, source=source, reason=reason, now=now)
                state = {"id": warrant_id, "warrant": record, "state": "pardoned", "attempt": 0,
                         "started_at": iso(moment), "last_message_at": None, "next_timeout": None}
                os.unlink(self.pending_path(warrant_id))
                done = finish_without_dog(self, state, source=source, reason=reason, now=moment)
            return "pardoned", done
        fd = try_hold(self.claim_path(warrant_id))
        if fd is None:  # a dog is working it: ask it to stop
            write_json(self.pardon_path(warrant_id), {"source": source, "reason": reason, "at": iso(moment)})
            return "requested", record
        try:
            state = read_json(self.active_path(warrant_id), None)
            if not isinstance(state, dict):
                raise WarrantError(f"warrant {warrant_id} finished meanwhile")
            done = finish_without_dog(self, state, source=source, reason=reason, now=moment)
        finally:
            self.release(warrant_id, fd)
        return "pardoned", done

    def pardon_request(self, warrant_id: str) -> dict | None:
        try:
            data = read_json(self.pardon_path(warrant_id), None)
        except Exception:
            return {"source": "operator", "reason": ""}
        return data if isinstance(data, dict) else None

    def listing(self) -> dict[str, list]:
        return {"pending": self.pending(), "active": self.active(), "completed": self.completed(),
                "quarantined": self.quarantined(),
                "unreadable": [{"file": path, "problem": problem} for path, problem in self.unreadable()]}
