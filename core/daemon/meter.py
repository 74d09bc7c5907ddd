"""leashd's spend meter: reads what sessions spent off every hook's path.

A hook that shows spend may have happened (a tool call done, a turn ended, a
prompt, Gemini CLI's model response) only names its session to ``seen``; a
thread of its own meters the named sessions (``core.views.spendmeter``), each
once however many of its hooks came meanwhile, so the hook's answer waits for
nothing. Every ``METER_EVERY_SECONDS`` it also meters the sessions that are
working on this host (spend a long tool call's model made; another host's
sessions are its own leashd's to read) and runs ``tick`` (resets,
lowered limits, silent meters: ``core.views.metering.tick``). A Gemini CLI ``AfterModel`` payload is
metered from the payload itself, which the hook hands over. Codex CLI writes
a response's ``token_count`` only once the response's tool calls are done,
just after their PostToolUse hook is answered: a session named by one is
read again ``FOLLOW_UP_SECONDS`` later, so that response's spend (and a cap
it reaches) is known before the model's next answer, not one call late.

Failure: a reading that raises (a store that cannot be written, a file it
may not read) is said once per kind of problem on leashd's log and tried
again (a session's reading after ``RETRY_SECONDS``, the rest at the next
hook or timer); the meter never stops leashd, and a
session's hook is never failed by it. ``QUEUE_LIMIT`` bounds what waits.
"""
from __future__ import annotations

import threading
import time

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.protocols import Backend

METER_EVERY_SECONDS = 30.0
RETRY_SECONDS = 1.0  # a session whose reading failed (a busy store, a file mid-write) is read again this soon
FOLLOW_UP_SECONDS = 0.3  # after a Codex PostToolUse: its response's token_count lands just after the hook
FOLLOWED_UP = frozenset({"codex-post-tool-use"})
QUEUE_LIMIT = 10_000  # sessions (and Gemini payloads) waiting to be metered; more are dropped till it drains
# Hooks after which a session may have spent: its transcript is read again.
SPENT_AFTER = frozenset({"post-tool-use", "post-tool-use-failure", "post-tool-batch", "stop", "user-prompt-submit",
                         "session-end", "gemini-after-tool", "gemini-before-agent", "gemini-session-end",
                         "codex-post-tool-use", "codex-stop", "codex-user-prompt-submit", "codex-session-end"})
GEMINI_RESPONSE = frozenset({"gemini-after-model", "model-response"})
WORKING = ("working", "thinking")


def _cli_of(event: str) -> str:
    """The agent CLI a hook verb is of (``codex-…``, ``gemini-…``; Claude Code's are plain)."""
    prefix = event.partition("-")[0]
    return prefix if prefix in ("codex", "gemini") else "claude"


class Meter:
    def __init__(self, home: str, backend: Backend, *, say=None, clock=time.time,
                 every: float = METER_EVERY_SECONDS):
        self.home, self.backend, self.clock, self.every = home, backend, clock, every
        self.say = say or (lambda *args, **kwargs: None)
        self.sessions: dict[str, None] = {}  # named since the last pass, in order
        # session -> (transcript path, cli) as its hooks last said (a record may not
        # keep them: a PostToolUse alone registers no transcript); bounded.
        self.sources: dict[str, tuple[str, str]] = {}
        self.payloads: list[tuple[str, dict]] = []
        self.wake = threading.Condition()
        self.stopping = False
        self.problems: set[str] = set()
        self.retry: list[str] = []  # sessions whose last reading failed, read again after RETRY_SECONDS
        self.follow_ups: dict[str, float] = {}  # session -> when (monotonic) to read it again
        self.thread: threading.Thread | None = None
        self.passes = 0  # completed passes (tests wait on it)

    # ------------------------------------------------------------- the hook's side
    def seen_hook(self, event: str, payload: dict) -> None:
        """A session's hook was answered (called on leashd's serving thread: cheap)."""
        session = payload.get("session_id")
        if not isinstance(session, str) or not session:
            return
        if event in GEMINI_RESPONSE:
            with self.wake:
                if len(self.payloads) < QUEUE_LIMIT:
                    self.payloads.append((session, payload))
                    self.wake.notify()
            return
        if event not in SPENT_AFTER:
            return
        transcript = payload.get("transcript_path")
        with self.wake:
            if isinstance(transcript, str) and transcript:
                if len(self.sources) >= QUEUE_LIMIT:
                    self.sources.clear()  # learned again from each session's next hook
                self.sources[session] = (transcript, _cli_of(event))
            if session not in self.sessions and len(self.sessions) < QUEUE_LIMIT:
                self.sessions[session] = None
                self.wake.notify()
            if event in FOLLOWED_UP and len(self.follow_ups) < QUEUE_LIMIT:
                self.follow_ups[session] = time.monotonic() + FOLLOW_UP_SECONDS

    # ------------------------------------------------------------- the thread
    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name="meter", daemon=True)
        self.thread.start()

    def close(self) -> None:
        with self.wake:
            self.stopping = True
            self.wake.notify()
        if self.thread is not None:
            self.thread.join(timeout=10)

    def _run(self) -> None:
        last_round = 0.0
        while True:
            with self.wake:
                if not self.sessions and not self.payloads and not self.stopping:
                    wait = max(0.0, self.every - (time.monotonic() - last_round))
                    if self.retry:
                        wait = min(wait, RETRY_SECONDS)
                    if self.follow_ups:
                        wait = min(wait, max(0.0, min(self.follow_ups.values()) - time.monotonic()))
                    self.wake.wait(timeout=wait)
                    self.sessions.update(dict.fromkeys(self.retry))
                    self.retry.clear()
                self._take_follow_ups()
                if self.stopping:
                    return
                sessions, self.sessions = list(self.sessions), {}
                payloads, self.payloads = self.payloads, []
            due = time.monotonic() - last_round >= self.every
            self.run_once(sessions, payloads, whole_round=due)
            if due:
                last_round = time.monotonic()

    def _take_follow_ups(self) -> None:
        """The follow-up readings now due join the sessions to read (the lock is held)."""
        moment = time.monotonic()
        for session in [s for s, due in self.follow_ups.items() if due <= moment]:
            del self.follow_ups[session]
            self.sessions.setdefault(session, None)

    def run_once(self, sessions: list[str], payloads: list[tuple[str, dict]], *, whole_round: bool) -> None:
        """Meter ``sessions`` and ``payloads`` now; with ``whole_round``, the
        working sessions too, then ``tick``."""
        from leash.core.base.config import load_config
        from leash.core.views import metering, spendmeter

        try:
            config = load_config(self.home)
        except Exception as exc:
            self._problem("config", exc)
            return
        now = self.clock()
        for session, payload in payloads:
            self._guarded("gemini", lambda s=session, p=payload: spendmeter.meter_gemini(
                self.backend, s, p, config=config, now=now))
        if whole_round:
            sessions = list(dict.fromkeys(sessions + self._working()))
        for session in sessions:
            transcript, cli = self.sources.get(session, (None, None))
            if not self._guarded("read", lambda s=session, t=transcript, c=cli: spendmeter.meter_session(
                    self.backend, s, config=config, now=now, transcript_path=t, cli=c)):
                with self.wake:
                    if session not in self.retry and len(self.retry) < QUEUE_LIMIT:
                        self.retry.append(session)
        if whole_round:
            self._guarded("tick", lambda: metering.tick(self.backend, config=config, now=now))
        self.passes += 1

    def _working(self) -> list[str]:
        """This host's working sessions: another host's files are on that host,
        read by its own leashd (two meters of one file would race over its state)."""
        from leash.core.state.sessions import host_of

        try:
            here = self.backend.sessions.host
            return [sid for sid, record in self.backend.sessions.all().items() if record.status in WORKING
                    and (not here or host_of(record.as_dict()) in ("", here))]
        except Exception as exc:
            self._problem("sessions", exc)
            return []

    def _guarded(self, kind: str, work) -> bool:
        try:
            work()
        except Exception as exc:  # the meter never takes leashd down; it reads again next time
            self._problem(kind, exc)
            return False
        self.problems.discard(kind)
        return True

    def _problem(self, kind: str, exc: Exception) -> None:
        if kind not in self.problems:
            self.problems.add(kind)
            self.say("meter-problem", kind=kind, problem=f"{exc.__class__.__name__}: {exc}")
