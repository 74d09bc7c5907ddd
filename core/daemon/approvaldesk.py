"""Where leashd's held hook calls wait for their approval to close.

A ``hook`` request held as an approval (``core.approvals.hold.Held``) waits
here, in its connection's thread and holding no serving slot, until the first
of:

* an answer: the operator's (the CLI, the console, ``leash serve``), read from
  the approvals store; the hook gets ``Held.reply``;
* the approval's deadline (``[approvals] timeout_s``): leashd closes it
  ``timeout`` (an answer that came first wins) and answers as
  ``on_timeout`` says;
* the hook's client going away (the connection closes: Claude Code killed the
  hook, as it does when its dialog is dismissed with Escape): the approval is
  closed ``withdrawn`` and nobody is answered;
* the session's call going on without it (``seen_hook``: a PermissionRequest's
  dialog answered "Yes" in the pane does not end the hook, but the call's
  PostToolUse, the batch's end, the turn's end or a new prompt of that session
  shows it was answered): closed ``withdrawn`` ``via`` "pane", and the hook
  is answered with nothing.

Waiting costs no CPU: each waiter sleeps in ``select`` on its connection and a
wake-up pipe. The pipe is written when a registry of this home changes an
approval in this process (``core.approvals.store.listen``: an answer that came
through leashd wakes its hook at once), when the backend's change feed reports
the approvals changed (another process on this host, or another host's answer
in a shared store), and the waiter looks again every
``FALLBACK_POLL_SECONDS`` whatever happens, for a notice that never came.

An allow answers allow only while nothing holds the session: a stop or lock
filed while the approval waited denies the call with its own reason. In a
home of files an allow counts only when this leashd applied it (its operator
socket, the console through it): an ``approval_allowed`` another process wrote
into the home (the agent's own script, using leash's Python API and the
home's log key, in the single-user profile) denies the call and records a
critical ``supervisor_tampering`` halt.

Failure: a store that cannot be read while waiting is retried at the next
wake-up; past the deadline the hook is denied as for a timeout even when the
close cannot be written (fail closed). Nothing here raises into the
connection's thread but ``OSError`` from the connection itself.
"""
from __future__ import annotations

import os
import queue
import select
import socket
import threading
import time

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.protocols import Backend


FALLBACK_POLL_SECONDS = 5.0  # how often a waiter looks without being woken (a missed notice)
# Hooks of a session that show its waiting permission dialog was answered in the
# pane: the call itself went on (matched by what it runs), or its batch or turn ended.
CALL_WENT_ON = frozenset({"post-tool-use", "post-tool-use-failure"})
TURN_WENT_ON = frozenset({"post-tool-batch", "stop", "user-prompt-submit", "session-end"})
WENT_ON_KEPT = 10_000  # sessions whose last such hook is remembered (then forgotten all at once)
FEED_WAIT_SECONDS = 1.0  # how often the feed thread checks that the desk is still open
WAKING_STORES = frozenset({"approvals", "*"})  # changes that may have closed an approval
FORGED_ANSWER = ("leash: this approval was answered outside leash daemon (an allow written into leash's home by "
                 "another process, not by an operator through leashd): the call is denied and recorded as "
                 "supervisor_tampering. Only a human can lift the halt.")


class ApprovalDesk:
    def __init__(self, home: str, backend: Backend, *, feed=None, clock=time.time, say=None,
                 poll_seconds: float = FALLBACK_POLL_SECONDS):
        self.home, self.backend, self.feed, self.clock = home, backend, feed, clock
        self.say = say or (lambda *args, **kwargs: None)
        self.poll_seconds = poll_seconds
        self.pipes: set[int] = set()  # the write ends of the waiters' wake-up pipes
        self.held: dict[str, list] = {}  # session id -> its calls waiting here (``Held``)
        # session id -> (time.monotonic(), event, tool, tool input) of its last hook that shows it went on
        self.went_on: dict[str, tuple] = {}
        self.mutex = threading.Lock()
        self.closed = threading.Event()
        self.thread: threading.Thread | None = None
        self.inbox: queue.Queue | None = None  # the change feed's queue for this desk

    # ------------------------------------------------------------ lifecycle
    def start(self) -> None:
        from leash.core.store.approvals import listen

        listen(self.home, self.wake)
        if self.feed is not None:
            self.inbox = self.feed.join()
            self.thread = threading.Thread(target=self._follow_feed, name="approvals", daemon=True)
            self.thread.start()

    def close(self) -> None:
        from leash.core.store.approvals import unlisten

        self.closed.set()
        unlisten(self.home, self.wake)
        self.wake()
        if self.inbox is not None:
            try:
                self.inbox.put_nowait(None)  # the feed thread wakes now, not at its next look
            except queue.Full:
                pass
        if self.thread is not None:
            self.thread.join(timeout=5)

    def withdraw_left_over(self, host: str) -> int:
        """Close as withdrawn this host's approvals left waiting by a daemon
        that ended: no hook waits for them any more. Returns how many."""
        closed = 0
        from leash.core.store.approvals import ApprovalClosed

        for approval in self.backend.approvals.pending():
            if approval.host != host:
                continue
            try:
                self.backend.approvals.close(approval.id, "withdrawn", now=self.clock())
                closed += 1
            except ApprovalClosed:
                pass
        return closed

    # ------------------------------------------------------------ waking
    def wake(self) -> None:
        # Under the mutex: a waiter closes its pipe under it too, so a number
        # reused by another open file is never written to.
        with self.mutex:
            for fd in self.pipes:
                try:
                    os.write(fd, b"!")
                except OSError:  # full: it will be drained
                    pass

    def _follow_feed(self) -> None:
        assert self.feed is not None and self.inbox is not None
        self.feed.follow(self.inbox, WAKING_STORES, self.wake, closed=self.closed, wait=FEED_WAIT_SECONDS)

    # ------------------------------------------------------------ waiting
    def wait(self, held, conn: socket.socket) -> tuple[str, str, int] | None:
        """The hook's (stdout, stderr, exit code) once ``held``'s approval is
        closed; None when the client went away (the approval is withdrawn)."""
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        session = held.approval.session_id
        with self.mutex:
            self.pipes.add(write_end)
            self.held.setdefault(session, []).append(held)
        try:
            self._settle(held)  # the session went on while the approval was being opened
            return self._wait(held, conn, read_end)
        except BaseException:  # the connection failed under the waiter: nobody waits for it any more
            self._close(held, "withdrawn")
            raise
        finally:
            with self.mutex:
                self.pipes.discard(write_end)
                os.close(write_end)
                waiting = self.held.get(session, [])
                if held in waiting:
                    waiting.remove(held)
                if not waiting:
                    self.held.pop(session, None)
            os.close(read_end)

    def seen_hook(self, event: str, payload: dict) -> None:
        """A session's hook: when it shows the session's call went on, a
        permission dialog of that session waiting here was answered in the pane."""
        if event not in CALL_WENT_ON and event not in TURN_WENT_ON:
            return
        session = str(payload.get("session_id"))
        with self.mutex:
            if len(self.went_on) >= WENT_ON_KEPT:
                self.went_on.clear()
            self.went_on[session] = (time.monotonic(), event, payload.get("tool_name"), payload.get("tool_input"))
            waiting = list(self.held.get(session, ()))
        for held in waiting:
            self._settle(held)

    def _settle(self, held) -> None:
        """Withdraw ``held`` (via the pane) when its session went on since it was opened."""
        from leash.core.hook.approvalhold import PERMISSION_EVENT

        with self.mutex:
            seen = self.went_on.get(held.approval.session_id)
        if held.event != PERMISSION_EVENT or seen is None or seen[0] < held.opened:
            return
        if seen[1] in CALL_WENT_ON:
            from leash.core.policy.approvalsummary import one_line

            if one_line(seen[2], seen[3]) != held.approval.summary:
                return  # another call of the session (one that needed no dialog)
        self._close(held, "withdrawn", via="pane")

    def _wait(self, held, conn: socket.socket, wake_fd: int) -> tuple[str, str, int] | None:
        approval_id = held.approval.id
        while True:
            record = self._read(approval_id)
            if record is not None and record.status != "waiting":
                return self._finish(held, record)
            left = held.deadline - self.clock()
            if left <= 0:
                return self._finish(held, self._close(held, "timeout"))
            if self.closed.is_set():  # leashd is stopping: the hook is told it could not be answered
                return self._finish(held, self._close(held, "withdrawn"))
            ready, _, _ = select.select([conn, wake_fd], [], [], min(left, self.poll_seconds))
            if conn in ready and _gone(conn):
                self.gone(held)
                return None
            if wake_fd in ready:
                os.read(wake_fd, 4096)

    def gone(self, held) -> None:
        """``held``'s hook went away (its connection closed): the approval is
        withdrawn, since no hook waits for its answer any more."""
        record = self._close(held, "withdrawn")
        self.say("approval-withdrawn", approval=held.approval.id, status=record.status)
        self._note_status(held, record)

    def _read(self, approval_id: str):
        try:
            return self.backend.approvals.get(approval_id)
        except Exception as exc:  # read again at the next wake-up; the deadline still holds
            self.say("approval-unreadable", approval=approval_id, problem=f"{exc.__class__.__name__}: {exc}")
            return None

    def _close(self, held, outcome: str, *, via: str = "leash"):
        """Close the approval ``outcome``; the record that closed it (an
        answer may have come first). Unwritable: a record saying ``outcome``."""
        from leash.core.store.approvals import ApprovalClosed
        from leash.core.store.records import ApprovalRecord

        try:
            return self.backend.approvals.close(held.approval.id, outcome, via=via, now=self.clock())
        except ApprovalClosed:
            found = self._read(held.approval.id)
            if found is not None:
                return found
        except Exception as exc:
            self.say("approval-not-closed", approval=held.approval.id, problem=f"{exc.__class__.__name__}: {exc}")
        return ApprovalRecord.of({**held.approval.as_dict(), "status": outcome})

    def _finish(self, held, record) -> tuple[str, str, int]:
        self._note_status(held, record)
        self.say("approval-closed", approval=held.approval.id, status=record.status, by=record.by)
        if record.status == "allowed" and self._written_behind(held):
            return held.deny(FORGED_ANSWER)
        held_since = self._stopped_meanwhile(held) if record.status == "allowed" else ""
        return held.deny(held_since) if held_since else held.reply(record)

    def _written_behind(self, held) -> bool:
        """An allow that this leashd did not apply, in a home of files: written
        into the home by another process (the agent's own script can, in the
        single-user profile), so it is tampering, not an answer. On a shared
        store every host's leashd answers, so there it is not asked."""
        from leash.core.store.approvals import applied_here

        if getattr(self.backend, "name", "") != "file" or applied_here(self.home, held.approval.id):
            return False
        session_id = held.approval.session_id
        summary = f"approval {held.approval.id} answered allow outside leash daemon ({held.approval.summary})"
        self.say("approval-forged", approval=held.approval.id, session=session_id)
        try:
            self.backend.acklog.append("tamper_blocked", source="leash", session_id=session_id, reason=summary,
                                       now=self.clock())
            self.backend.halts.record({"session_token": session_id, "halt_type": "security", "severity": "critical",
                                       "condition_name": "supervisor_tampering", "description": summary},
                                      now=self.clock())
        except Exception as exc:  # the call is denied whatever could be written
            self.say("tampering-not-recorded", problem=f"{exc.__class__.__name__}: {exc}")
        return True

    def _stopped_meanwhile(self, held) -> str:
        """Why a stop, a lock or a halt filed while the approval waited holds
        the session now ("" when nothing does): an allow does not lift it."""
        from leash.core.hook.gate import Gate

        try:
            verdict = Gate(self.home, backend=self.backend).check_stops_and_locks(held.approval.session_id,
                                                                                  now=self.clock())
        except Exception as exc:  # what cannot be read cannot be taken as free
            return f"leash: the session's stops cannot be read ({exc.__class__.__name__}: {exc}); denied"
        return "" if verdict.allow else verdict.reason

    def _note_status(self, held, record) -> None:
        try:
            self.backend.sessions.observe(held.approval.session_id, now=self.clock(), status=held.status_after(record))
        except Exception as exc:  # shown best effort
            self.say("session-not-noted", problem=f"{exc.__class__.__name__}: {exc}")


def _gone(conn: socket.socket) -> bool:
    """Whether a readable waiting connection was closed by its client (or sent
    more than its one request, which a hook client never does)."""
    try:
        conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return False
    except OSError:
        return True
    return True  # the end of the stream, or bytes a hook client never sends after its request
