"""``leash demo``: a throwaway home and a private tmux server with a small fleet.

The fleet: an agent that answers health checks, one that never does (its pane
only echoes), one that keeps printing, and an agent session seen by the hooks
in each; a critical and a high halt; a hands-off lock; a warrant in
interrogation with demo-length timeouts; a restart-loop breaker one boot
short of tripping; an Edit waiting for an operator's approval; a day's
spend against three caps, one of them holding an agent (``seed_budget``). ``seed_fleet``
is also what the snapshot tests and the screenshots use (with a fixed clock
and no tmux).

The live demo (``prepare_demo``) holds its warrant and breaker long enough to
be looked at: the silent agent's warrant is interrogated for five minutes a
gate, and the breaker is tripped (a third boot, in an hour's window) until
someone resets it. Its home passes ``leash doctor``: config.toml is 0600 and
the agents' programs are given on their command lines, not written into it.
``leash demo --home DIR`` builds it in DIR (new or empty), kept afterwards.
"""
from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
from typing import TYPE_CHECKING, Union

if TYPE_CHECKING:
    from types import FrameType

    from leash.core.base.tmux import Tmux

Home = Union[str, "os.PathLike[str]"]  # a leash home, as the stores take it
DEMO_TIMEOUTS = [300, 300, 300]   # seconds a gate: the interrogation is there to watch for a quarter of an hour
DEMO_BREAKER = "gateway"
DEMO_BREAKER_LIMITS = {"max_restarts": 3, "window_seconds": 3600}  # tripped by the third boot, for an hour
KENNEL_STOP_SECONDS = 5.0
REMOVE_ATTEMPTS = 20
AGENT_SCRIPTS = {
    "answering": (
        "import sys, time\n"
        "print('agent ready: answers health checks', flush=True)\n"
        "for line in sys.stdin:\n"
        "    if 'HEALTH CHECK' in line:\n"
        "        time.sleep(2)\n"
        "        print('ALIVE', flush=True)\n"
    ),
    "chatty": (
        "import itertools, time\n"
        "for n in itertools.count(1):\n"
        "    print(f'step {n}: refactoring module_{n % 7}.py ... ok', flush=True)\n"
        "    time.sleep(1.5)\n"
    ),
}
DEMO_SESSIONS = (
    ("agent-answers", "answering", "claude-7f3a", "ezra"),
    ("agent-silent", None, "claude-2b91", "nova"),
    ("agent-chatty", "chatty", "claude-c044", "orion"),
)
# What each demo agent's hooks last said it was doing (its held state, if any, shows first).
DEMO_STATUS = {"claude-7f3a": "waiting for approval", "claude-2b91": "waiting for permission",
               "claude-c044": "thinking"}
# The call waiting for an answer: an Edit by the one agent nothing holds (a held one's calls are refused at once).
DEMO_APPROVAL = ("claude-7f3a", "Edit", {
    "file_path": "/work/ezra/src/billing/invoice.py",
    "old_string": "def total(lines):\n    return sum(line.amount for line in lines)\n",
    "new_string": "def total(lines, *, tax_rate=0.0):\n    subtotal = sum(line.amount for line in lines)\n"
                  "    return round(subtotal * (1 + tax_rate), 2)\n"})
DEMO_APPROVAL_WAITED = 75  # seconds it has waited
DEMO_APPROVAL_TIMEOUT = 600
# The demo's caps (name, scope, period, limit line) and what its agents spent: one (model, usd) per agent of
# DEMO_SESSIONS for each hour back from now (the first: this hour). claude-c044's own day passes its cap.
DEMO_SESSION_LIMIT = 8.0
DEMO_CAPS = (("fleet-daily", "fleet", "day", "limit_usd = 20"),
             ("session-daily", "session", "day", f"limit_usd = {DEMO_SESSION_LIMIT:g}"),
             ("max-5h", "fleet", "window-5h", "limit_percent = 90"))
DEMO_MODEL, DEMO_UNKNOWN_MODEL = "claude-sonnet-4-5", "claude-internal-preview"
DEMO_SPEND_HOURS = tuple(((DEMO_MODEL, a), ("", 0.0), (DEMO_UNKNOWN_MODEL, c)) for a, c in (
    (0.84, 1.72), (1.36, 2.41), (0.52, 1.96), (1.10, 1.58), (0.40, 0.71), (0.95, 0.0), (0.0, 0.0), (0.0, 0.0),
    (0.0, 0.0), (0.31, 0.0), (0.78, 0.0), (0.92, 0.0), (0.66, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0)))
DEMO_HELD_FOR = 420  # seconds claude-c044 has been held by its cap
DEMO_WINDOW_PERCENT = 63.0


def seed_fleet(home: Home, *, now: float, source: str = "ops@demo") -> None:
    """Write a small, believable fleet into ``home`` (deterministic for a fixed ``now``)."""
    from leash.core.store.select import backend_for

    backend = backend_for(os.fspath(home))
    for tmux_name, _, session_id, entity in DEMO_SESSIONS:
        backend.sessions.observe(session_id, now=now - 40, tool="Bash", tmux_session=tmux_name, tmux_pane="%0",
                                 entity=entity, cwd=f"/work/{entity}", status=DEMO_STATUS[session_id])
    backend.halts.record({"session_token": "claude-2b91", "halt_type": "security", "severity": "critical",
                          "condition_name": "secrets_exposure",
                          "description": "Credentials would be exposed in commands or changes: github_token",
                          "context": {"commands": ["curl -H 'Authorization: token [REDACTED:github_token]' ..."]}},
                         now=now - 300)
    backend.halts.record({"session_token": "claude-c044", "task_id": "bash: pytest -x", "halt_type": "execution",
                          "severity": "high", "condition_name": "three_strikes",
                          "description": "Task has failed 3 times. Context may be contaminated.",
                          "attempt_count": 3}, now=now - 120)
    backend.locks.lock("path:infra/prod/**", hours=8, reason="prod freeze until the release", source=source,
                       now=now - 600)
    backend.stops.stop("claude-legacy", source=source, reason="explicit halt: wrong repository", now=now - 900)
    for t in (now - 50, now - 20):
        backend.breakers.record_boot("gateway", window_seconds=60, now=t)
    session_id, tool, tool_input = DEMO_APPROVAL
    backend.approvals.request(session_id, tool, tool_input, timeout_s=DEMO_APPROVAL_TIMEOUT,
                              now=now - DEMO_APPROVAL_WAITED)


def budget_config() -> str:
    """The demo's ``[[budget.cap]]`` tables (config.toml's text)."""
    return "".join(f'[[budget.cap]]\nname = "{name}"\nscope = "{scope}"\nperiod = "{period}"\n{limit}\n\n'
                   for name, scope, period, limit in DEMO_CAPS)


def seed_budget(home: Home, *, now: float) -> None:
    """What the demo's agents spent, an hour at a time over the last
    ``len(DEMO_SPEND_HOURS)`` hours (those before midnight folded into today's
    first hour), charged through the budget store's unit,
    and the caps' counters it makes today: the fleet's day near its warn
    point, claude-c044's own day held, the 5-hour window at 63%. Needs
    ``budget_config()`` in config.toml for the caps to show."""
    from leash.core.policy.caps import period_of
    from leash.core.store.records_budget import BudgetCounterRecord, BudgetWindowRecord, SpendRecord
    from leash.core.store.select import backend_for

    hour = int(now // 3600) * 3600
    day = period_of("day", now=now)
    if day is None or day.start is None:  # (a day always has its start)
        return
    today: dict[str, float] = {}
    with backend_for(os.fspath(home)).budget.unit(now=now) as unit:
        for back, shares in enumerate(DEMO_SPEND_HOURS):
            # Hours before midnight are folded into today's first hour, so the
            # story (claude-c044 held by its day's cap) holds at any hour.
            start = max(hour - 3600 * back, int(day.start))
            for (_, _, session_id, entity), (model, usd) in zip(DEMO_SESSIONS, shares, strict=True):
                if not usd:
                    continue
                unit.charge(SpendRecord(hour=float(start), session_id=session_id, model=model, host="demo",
                                        entity=entity, cli="claude", usd=usd, estimated=model == DEMO_UNKNOWN_MODEL,
                                        input=int(usd * 40_000), output=int(usd * 8_000), cache_write=0,
                                        cache_read=int(usd * 200_000), reasoning=0, requests=int(usd * 6) + 1))
                today[session_id] = today.get(session_id, 0.0) + usd

        def counter(cap: str, bucket: str, period: str, end: float | None, unit_name: str, used: float,
                    held_since: float | None = None) -> BudgetCounterRecord:
            return BudgetCounterRecord(cap=cap, bucket=bucket, period=period, period_end=end, unit=unit_name,
                                       used=round(used, 2), estimated=unit_name == "usd" and bucket != "claude-7f3a",
                                       raised_to=None, warned=[], held_since=held_since,
                                       held_use=round(used, 2) if held_since is not None else None,
                                       released_at=None, released_by=None, updated_at=now - 30)
        unit.put_counter(counter("fleet-daily", "fleet", day.key, day.end, "usd", sum(today.values())))
        for session_id, used in sorted(today.items()):
            held = now - DEMO_HELD_FOR if used >= DEMO_SESSION_LIMIT else None
            unit.put_counter(counter("session-daily", session_id, day.key, day.end, "usd", used, held))
        resets = float(hour + 2 * 3600)
        unit.put_window(BudgetWindowRecord(bucket="fleet", window="window-5h", used_percent=DEMO_WINDOW_PERCENT,
                                           resets_at=resets, session_id="claude-7f3a", at=now - 60))
        unit.put_counter(counter("max-5h", "fleet", f"window-5h@{int(resets)}", resets, "percent",
                                 DEMO_WINDOW_PERCENT))


def seed_warrant(home: Home, *, now: float, target: str = "agent-silent") -> dict:
    from leash.core.store.select import backend_for

    warrants = backend_for(os.fspath(home)).warrants
    warrant, _ = warrants.file(target, reason="no output for 40 minutes", requester="ops@demo", now=now)
    return warrant.as_dict()


def agent_command(script: str | None) -> str:
    """The shell command of a demo agent's pane: its program on the command
    line (nothing written to disk), or an agent that never answers."""
    if script is None:
        return "cat > /dev/null"
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(AGENT_SCRIPTS[script])}"


def demo_socket(home: str) -> str:
    """The demo's tmux socket: in its home, unless that path is too long for a
    unix socket, then a short one in /tmp."""
    inside = os.path.join(home, "tmux.sock")
    if len(inside.encode()) < 80:  # sun_path is 108 bytes; tmux clients need room to spare
        return inside
    return os.path.join("/tmp", f"leash-demo-{os.getpid()}-{os.urandom(3).hex()}.sock")


def demo_home(given: str | None) -> str:
    """The demo's home: ``given`` (made if missing; it must be empty), else a
    new temporary folder. ``DemoHomeTaken`` for a folder with something in it."""
    if given is None:
        return tempfile.mkdtemp(prefix="leash-demo-")
    home = os.path.abspath(os.path.expanduser(given))
    if os.path.lexists(home) and (not os.path.isdir(home) or os.path.islink(home) or os.listdir(home)):
        raise DemoHomeTaken(f"the demo's --home must be a new or empty folder: {home} is not")
    os.makedirs(home, mode=0o700, exist_ok=True)
    os.chmod(home, 0o700)
    return home


class DemoHomeTaken(ValueError):
    """``leash demo --home DIR`` with a DIR that holds something (a real home, perhaps): one line."""


def write_config(home: str, socket: str) -> None:
    """The demo's config.toml, 0600 as leash doctor wants it."""
    limits = "".join(f"{key} = {value}\n" for key, value in DEMO_BREAKER_LIMITS.items())
    text = (f"[warrants]\ntimeouts = {DEMO_TIMEOUTS}\npoll_seconds = 0.5\n\n[tmux]\nsocket = \"{socket}\"\n\n"
            f"[loop.{DEMO_BREAKER}]\n{limits}\n{budget_config()}")
    descriptor = os.open(os.path.join(home, "config.toml"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)


def prepare_demo(home: str, socket: str, *, now: float) -> Tmux:
    """The live demo in ``home``: its config, its agents on a tmux server at
    ``socket``, the fleet, the warrant and the tripped breaker. Returns the ``Tmux``."""
    from leash.core.base.tmux import Tmux
    from leash.core.store.select import backend_for

    write_config(home, socket)
    tmux = Tmux(socket)
    for tmux_name, script, _, _ in DEMO_SESSIONS:
        tmux.new_session(tmux_name, agent_command(script), width=120, height=30)
    seed_fleet(home, now=now)
    seed_budget(home, now=now)
    seed_warrant(home, now=now)
    backend_for(home).breakers.check_and_record(DEMO_BREAKER, **DEMO_BREAKER_LIMITS, source="ops@demo", now=now)
    return tmux


def run_demo(*, keep: bool = False, home: str | None = None) -> int:
    """``DemoHomeTaken`` for a ``home`` that is not new or empty; a given home is kept."""
    import signal
    import time

    from leash.console.tui.app import LeashApp
    from leash.console.tui.ending import ENDING_SIGNALS

    keep = keep or home is not None
    home = demo_home(home)
    socket = demo_socket(home)
    tmux = prepare_demo(home, socket, now=time.time())

    def clean_up() -> None:
        tmux.kill_server()
        if not socket.startswith(home):
            try:
                os.unlink(socket)
            except FileNotFoundError:
                pass

    def hung_up(signum: int, frame: FrameType | None) -> None:  # the terminal went away before the console took over
        clean_up()
        if not keep:
            remove_home(home)
        os._exit(128 + signum)

    for sig in ENDING_SIGNALS:
        signal.signal(sig, hung_up)
    app = LeashApp(home, tmux=tmux, on_exit=clean_up,  # it ends on SIGHUP/SIGTERM as on q
                   on_hangup=None if keep else (lambda: remove_home(home)))
    try:
        app.run()
    finally:
        for sig in ENDING_SIGNALS:  # a second hang-up must not cut the clean-up short
            signal.signal(sig, signal.SIG_IGN)
        app.wait_for_kennel(KENNEL_STOP_SECONDS)  # its dogs write into the home until they stop
        clean_up()
        if not keep:
            remove_home(home)
    try:
        print(f"demo over; {'home kept at ' + home if keep else 'its home and tmux server are gone'}")
    except OSError:  # the terminal is gone
        pass
    return 0


def remove_home(home: str) -> None:
    """Remove the demo's home, again while something still writes into it."""
    import time

    for _ in range(REMOVE_ATTEMPTS):
        shutil.rmtree(home, ignore_errors=True)
        if not os.path.exists(home):
            return
        time.sleep(0.05)
