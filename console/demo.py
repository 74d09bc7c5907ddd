"""``leash demo``: a throwaway home and a private tmux server with a small fleet.

The fleet: an agent that answers health checks, one that never does (its pane
only echoes), one that keeps printing, and an agent session seen by the hooks
in each; a critical and a high halt; a hands-off lock; a warrant in
interrogation with demo-length timeouts; a restart-loop breaker one boot
short of tripping; an Edit waiting for an operator's approval. ``seed_fleet``
is also what the snapshot tests and the screenshots use (with a fixed clock
and no tmux).
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile

DEMO_TIMEOUTS = [20, 40, 60]
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


def seed_fleet(home, *, now: float, source: str = "ops@demo", tmux_names=None) -> None:
    """Write a small, believable fleet into ``home`` (deterministic for a fixed ``now``)."""
    from leash.core.store.select import backend_for

    backend = backend_for(home)
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


def seed_warrant(home, *, now: float, target: str = "agent-silent") -> dict:
    from leash.core.store.select import backend_for

    warrant, _ = backend_for(home).warrants.file(target, reason="no output for 40 minutes", requester="ops@demo",
                                                 now=now)
    return warrant.as_dict()


def write_agents(home) -> dict[str, str]:
    directory = os.path.join(home, "demo-agents")
    from leash.core.base.home import private_dir

    private_dir(directory)
    paths = {}
    for name, body in AGENT_SCRIPTS.items():
        paths[name] = os.path.join(directory, f"{name}.py")
        with open(paths[name], "w") as handle:
            handle.write(body)
    return paths


def demo_socket(home: str) -> str:
    """The demo's tmux socket: in its home, unless that path is too long for a
    unix socket, then a short one in /tmp."""
    inside = os.path.join(home, "tmux.sock")
    if len(inside.encode()) < 80:  # sun_path is 108 bytes; tmux clients need room to spare
        return inside
    return os.path.join("/tmp", f"leash-demo-{os.getpid()}-{os.urandom(3).hex()}.sock")


def run_demo(*, keep: bool = False) -> int:
    import signal
    import time

    from leash.console.app import LeashApp
    from leash.console.ending import ENDING_SIGNALS
    from leash.core.base.tmux import Tmux

    home = tempfile.mkdtemp(prefix="leash-demo-")
    socket = demo_socket(home)
    with open(os.path.join(home, "config.toml"), "w") as handle:
        handle.write(f"[warrants]\ntimeouts = {DEMO_TIMEOUTS}\npoll_seconds = 0.5\n\n[tmux]\nsocket = \"{socket}\"\n")
    tmux = Tmux(socket)
    scripts = write_agents(home)
    for tmux_name, script, _, _ in DEMO_SESSIONS:
        command = f"{sys.executable} {scripts[script]}" if script else "cat > /dev/null"
        tmux.new_session(tmux_name, command, width=120, height=30)
    now = time.time()
    seed_fleet(home, now=now)
    seed_warrant(home, now=now)

    def clean_up() -> None:
        tmux.kill_server()
        if not socket.startswith(home):
            try:
                os.unlink(socket)
            except FileNotFoundError:
                pass

    def hung_up(signum, frame) -> None:  # the terminal went away before the console took over
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
