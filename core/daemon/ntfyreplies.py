"""leashd's ear on the ntfy reply topics: a tapped Allow or Deny reaches the
host without opening a port on it.

For each ntfy route with a ``reply_topic``, a thread reads ntfy's JSON stream
of that topic (``GET <server>/<topic>/json?since=…``: one JSON object a line,
``event`` "message" for a publication, "keepalive" and "open" otherwise; only
outbound HTTP). Each message's text is judged as an answer token
(``core.notify.answers.judge``): a valid one is applied through the approvals
store, by ``ntfy:<route>`` via ``ntfy:<route>``, as any answer leashd applied,
so the held call gets it at once and a stop filed meanwhile still wins. Any
other is refused: an ``approval_answer_refused`` line with why, and a message
on the route saying so.

Where it left off is kept per route in ``<home>/run/ntfy-replies.json`` (the
last message id), so a reconnect or a restarted leashd reads each publication
once; the first time, it starts from now. Beside it, each reply topic's health
(open or down since when, why, taps applied and refused) for ``leash doctor``
(``core.notify.state``). A tapped token is single use in any
case: the approval it names closes once.

Failure: a server that cannot be reached, answers an error or closes the
stream is tried again after ``BACKOFF_SECONDS`` doubling to
``BACKOFF_MAX_SECONDS`` (said once per outage); a line that is not JSON is
skipped. Nothing here raises into leashd. What it cannot see: a tap ntfy did
not keep (a server without a cache); the operator then answers another way.
"""
from __future__ import annotations

import json
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.protocols import Backend

BACKOFF_SECONDS = 1.0
BACKOFF_MAX_SECONDS = 30.0
READ_TIMEOUT_SECONDS = 90.0  # ntfy sends a keepalive every 45 s
STATE_NAME = "ntfy-replies.json"
LINE_LIMIT_BYTES = 64 * 1024
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


class ReplyListener:
    def __init__(self, home: str, backend: Backend, routes, *, clock=time.time, say=None):
        self.home, self.backend, self.clock = home, backend, clock
        self.routes = [route for route in routes if route.reply_url]
        self.say = say or (lambda *args, **kwargs: None)
        self.stopping = threading.Event()
        self.mutex = threading.Lock()
        self.threads: list[threading.Thread] = []
        self.applied = 0
        self.refused = 0

    def start(self) -> int:
        for route in self.routes:
            thread = threading.Thread(target=self._follow, args=(route,), name=f"ntfy-replies-{route.number}",
                                      daemon=True)
            thread.start()
            self.threads.append(thread)
        return len(self.threads)

    def close(self) -> None:
        self.stopping.set()

    # ------------------------------------------------------------ the stream
    def _follow(self, route) -> None:
        wait, said_down = BACKOFF_SECONDS, False
        while not self.stopping.is_set():
            try:
                self._read_stream(route)
                wait, said_down = BACKOFF_SECONDS, False
            except (OSError, urllib.error.URLError, ValueError) as exc:
                if not said_down:
                    self.say("ntfy-replies-down", route=route.number, problem=f"{exc.__class__.__name__}: {exc}")
                    self._health(route, state="down", problem=f"{exc.__class__.__name__}: {exc}")
                    said_down = True
            if self.stopping.wait(wait):
                return
            wait = min(wait * 2, BACKOFF_MAX_SECONDS)

    def _read_stream(self, route) -> None:
        since = self._since(route)
        url = f"{route.reply_url}/json?since={urllib.parse.quote(since)}"
        handlers: list = []
        if (urllib.parse.urlsplit(url).hostname or "") in LOOPBACK_HOSTS:
            handlers.append(urllib.request.ProxyHandler({}))
        opener = urllib.request.build_opener(*handlers)
        with opener.open(urllib.request.Request(url, headers={"User-Agent": "leash"}),
                         timeout=READ_TIMEOUT_SECONDS) as stream:
            self.say("ntfy-replies-open", route=route.number)
            self._health(route, state="open", problem="")
            while not self.stopping.is_set():
                raw = stream.readline(LINE_LIMIT_BYTES)
                if not raw:
                    return  # the server closed the stream: read again from where it left off
                try:
                    message = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(message, dict) and message.get("event") == "message":
                    self.handle(route, str(message.get("message") or ""))
                    if isinstance(message.get("id"), str):
                        self._keep(route, message["id"])

    # ------------------------------------------------------------ one tap
    def handle(self, route, text: str) -> bool:
        """Apply one tapped answer, or refuse it; True when applied."""
        from leash.core.notify.answers import Refused, answer_key, judge

        via = f"ntfy:{route.name or route.number}"
        now = self.clock()
        try:
            key = answer_key(self.home)
            approval_id, decision = judge(key, text, self.backend.approvals, now=now)
            record = self.backend.approvals.answer(approval_id, allow=decision == "allow", by=via, via=via, now=now)
        except Refused as exc:
            self._refuse(route, via, text, str(exc), now=now)
            return False
        except Exception as exc:  # the key unreadable, the approval closed a moment ago, the store down
            self._refuse(route, via, text, f"{exc.__class__.__name__}: {exc}", now=now)
            return False
        with self.mutex:
            self.applied += 1
        self._health(route, counted="applied")
        self.say("ntfy-answer-applied", route=route.number, approval=approval_id, decision=decision,
                 session=record.session_id)
        return True

    def _refuse(self, route, via: str, text: str, why: str, *, now: float) -> None:
        from leash.core.base.text import printable
        from leash.core.notify.events import Event
        from leash.core.notify.sender import DeliveryFailed, deliver

        with self.mutex:
            self.refused += 1
        self._health(route, counted="refused")
        approval = printable(text.split(".", 1)[0], limit=64)
        session = ""
        try:
            session = self.backend.approvals.get(approval).session_id
        except Exception:  # an id no approval has: nobody's session
            pass
        self.say("ntfy-answer-refused", route=route.number, approval=approval, problem=why)
        try:
            self.backend.acklog.append("approval_answer_refused", source=via, session_id=session, reason=why, now=now,
                                       approval=approval, via=via)
        except Exception as exc:
            self.say("ntfy-refusal-not-logged", problem=f"{exc.__class__.__name__}: {exc}")
        try:
            deliver(route, Event("answer", f"answer-refused:{approval}:{int(now)}",
                                 title="leash refused an answer", body=f"approval {approval}: {why}", time=now))
        except DeliveryFailed as exc:
            self.say("ntfy-refusal-not-told", route=route.number, problem=str(exc))

    # ------------------------------------------------------------ where it left off
    def _path(self) -> str:
        from leash.core.base.wellknown import RUN_DIR

        return os.path.join(self.home, RUN_DIR, STATE_NAME)

    def _read_kept(self) -> dict:
        try:
            with open(self._path()) as handle:
                kept = json.load(handle)
        except (OSError, ValueError):
            return {}
        return kept if isinstance(kept, dict) else {}

    def _since(self, route) -> str:
        with self.mutex:
            kept = self._read_kept()
            found = kept.setdefault("since", {}).get(route.key)
            if isinstance(found, str) and found:
                return found
            start = str(int(self.clock()))
            kept["since"][route.key] = start  # first time: from now; a tap before leashd listened is not applied
            self._write_kept(kept)
            return start

    def _keep(self, route, message_id: str) -> None:
        with self.mutex:
            kept = self._read_kept()
            kept.setdefault("since", {})[route.key] = message_id
            self._write_kept(kept)

    def _health(self, route, *, state: str = "", problem: str | None = None, counted: str = "") -> None:
        """What ``leash doctor`` says of the route's reply topic: open or down
        since when (and why), and the taps applied and refused."""
        with self.mutex:
            kept = self._read_kept()
            health = kept.setdefault("health", {}).setdefault(route.key, {})
            if state and health.get("state") != state:
                health.update(state=state, since=self.clock())
            if problem is not None:
                health["problem"] = problem
            if counted:
                health[counted] = int(health.get(counted) or 0) + 1
            self._write_kept(kept)

    def _write_kept(self, kept: dict) -> None:
        from leash.core.base.statefile import write_bytes_atomic

        try:
            write_bytes_atomic(self._path(), json.dumps(kept).encode())
        except OSError as exc:
            self.say("ntfy-replies-not-kept", problem=exc.strerror)
