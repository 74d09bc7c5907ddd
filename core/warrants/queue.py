"""The warrant queue: filing, listing, claiming and pardoning death warrants.

A warrant (``warrants/<id>.json``, gastown's keys ``id, target, reason,
requester, filed_at``) waits here until a dog claims it. Claiming moves it,
under the queue lock, into ``dogs/active/<id>.json`` as the dog's state, and
takes a held flock on ``dogs/active/<id>.claim`` that lasts as long as the dog
works: two kennels can never work the same warrant, and when a kennel dies its
claims die with it, so the next kennel resumes those dogs.

One live warrant per target: filing for a target that already has a pending or
active warrant is a no-op that returns the live one. Ids sort in filing order.

An operator may pardon at any time: a pending warrant is closed at once; an
active one gets a ``<id>.pardon`` request that its dog acts on at its next poll
— or, when no kennel holds it, is closed at once by the pardoner.
"""
from __future__ import annotations

import os

from core.clock import compact_stamp, iso, now_seconds
from core.statefile import locked, read_json, release_hold, try_hold, write_json

WARRANTS_DIR = "warrants"
ACTIVE_DIR = os.path.join("dogs", "active")
COMPLETED_DIR = os.path.join("dogs", "completed")
DEFAULT_REQUESTER = "operator"


class WarrantError(Exception):
    """A warrant operation the state does not allow (unknown id, finished)."""


class WarrantQueue:
    def __init__(self, home, acklog=None):
        from core.acklog import AckLog

        self.home = os.fspath(home)
        self.acklog = acklog or AckLog(self.home)
        self.pending_dir = os.path.join(self.home, WARRANTS_DIR)
        self.active_dir = os.path.join(self.home, ACTIVE_DIR)
        self.completed_dir = os.path.join(self.home, COMPLETED_DIR)
        self.lock_path = os.path.join(self.home, WARRANTS_DIR)  # the lock file is warrants.lock beside the dir

    def ensure_dirs(self) -> None:
        from core.home import private_dir

        for directory in (self.pending_dir, self.active_dir, self.completed_dir):
            private_dir(directory)

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
        try:
            names = sorted(n for n in os.listdir(directory) if n.endswith(".json") and n.startswith("w-"))
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
        matches = [(k, r) for k, rs in (("pending", self.pending()), ("active", self.active()),
                                        ("completed", self.completed()))
                   for r in rs if r.get("id", "").startswith(warrant_id)]
        return matches[0] if len(matches) == 1 and len(warrant_id) >= 6 else None

    def live_for(self, target: str) -> dict | None:
        for record in self.pending():
            if record.get("target") == target:
                return record
        for record in self.active():
            if (record.get("warrant") or {}).get("target") == target:
                return record["warrant"]
        return None

    # ------------------------------------------------------------ filing
    def file(self, target: str, *, reason: str, requester: str = DEFAULT_REQUESTER,
             now: float | None = None) -> tuple[dict, bool]:
        """(the warrant, True) when filed; (the live one, False) when the target
        already has a live warrant."""
        if not isinstance(target, str) or not target.strip():
            raise ValueError("a warrant needs a target session name")
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError("a warrant needs a reason")
        moment = now_seconds(now)
        self.ensure_dirs()
        with locked(self.lock_path):
            live = self.live_for(target)
            if live is not None:
                return live, False
            warrant = {"id": f"w-{compact_stamp(moment)}-{os.urandom(3).hex()}", "target": target,
                       "reason": reason, "requester": requester or DEFAULT_REQUESTER, "filed_at": iso(moment)}
            write_json(self.pending_path(warrant["id"]), warrant)
            self.acklog.append("warrant_filed", source=requester or DEFAULT_REQUESTER, session_id=target,
                               reason=reason, now=moment, warrant_id=warrant["id"])
        return warrant, True

    # ------------------------------------------------------------ claiming
    def _pending_names(self) -> list[str]:
        try:
            return sorted(n for n in os.listdir(self.pending_dir) if n.startswith("w-") and n.endswith(".json"))
        except FileNotFoundError:
            return []

    def has_pending(self) -> bool:
        """Whether any warrant waits (a directory listing, no file is read)."""
        return bool(self._pending_names())

    def claim_next(self, *, owner: dict, now: float | None = None) -> tuple[dict, int] | None:
        """Take the oldest pending warrant: (dog state, held claim fd) or None.
        Ids sort in filing order, so only the file taken is read."""
        moment = now_seconds(now)
        self.ensure_dirs()
        with locked(self.lock_path):
            for name in self._pending_names():
                try:
                    warrant = read_json(os.path.join(self.pending_dir, name), None)
                except Exception:
                    continue  # a corrupt warrant stays where it is for the operator
                if not isinstance(warrant, dict) or not warrant.get("id"):
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

    def claim_orphans(self, *, owner: dict, skip: set[str], limit: int | None = None) -> list[tuple[dict, int]]:
        """Up to ``limit`` active dogs whose kennel died (no one holds their claim)."""
        claimed = []
        for state in self.active():
            if limit is not None and len(claimed) >= limit:
                break
            warrant_id = state.get("id")
            if not warrant_id or warrant_id in skip:
                continue
            fd = try_hold(self.claim_path(warrant_id))
            if fd is None:
                continue
            try:
                current = read_json(self.active_path(warrant_id), None)
            except Exception:
                current = None
            if not isinstance(current, dict):  # finished (moved) while we looked
                release_hold(fd)
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
        from core.warrants.dog import finish_without_dog

        moment = now_seconds(now)
        found = self.find(warrant_id)
        if found is None:
            raise WarrantError(f"no warrant {warrant_id}")
        kind, record = found
        warrant_id = record["id"]
        if kind == "completed":
            raise WarrantError(f"warrant {warrant_id} is finished ({record.get('outcome')})")
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

    def listing(self) -> dict[str, list[dict]]:
        return {"pending": self.pending(), "active": self.active(), "completed": self.completed()}
