"""The soak's operator: what a person at the fleet does, timed, and the list
of what was acknowledged, which the invariants hold the run to.

``Operator`` acts through the ``leash`` CLI with ``--home`` (each command a
process, as typed), on every host in turn: a session stopped (filed through
another host than the session's, so the stop crosses the store) and resumed,
a fleet stop and resume, a path lock and its release; an approval thread
answers every held call with ``leash approvals allow`` / ``deny``. An action
is *acknowledged* when its command exits 0; its time is taken then
(``Ack``). After a stop is acknowledged the operator asks every host's agent
socket, as the thin hook does, until it denies: the propagation figure.

Failure: a command that fails is recorded as not acknowledged (and counted),
never raised; the invariants decide what that means.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from soak_hosts import STOPPING

PROPAGATION_GIVE_UP_SECONDS = 10.0
APPROVAL_POLL_SECONDS = 0.25
FLEET_STOPPED = "FLEET STOPPED"  # the console's summary line during a fleet stop


@dataclass
class Ack:
    kind: str                 # stop | fleet_stop | lock | approval | budget_raise
    target: str               # the session, "*" for the fleet, the lock's glob, the approval id, the cap
    reason: str               # unique text the log must hold
    acked: float              # monotonic, when the command returned 0
    lifted: float = float("inf")  # monotonic, when its resume/release began
    host: str = ""            # the host it was filed through
    extra: dict = field(default_factory=dict)


def leash_argv() -> list[str]:
    return [sys.executable, "-m", "leash.console.cli"]


class Operator:
    def __init__(self, fleet, agents, *, env: dict[str, str]):
        self.fleet, self.agents, self.env = fleet, agents, env
        self.acks: list[Ack] = []
        self.failures: list[str] = []
        self.propagation: list[float] = []     # seconds, stop acknowledged -> a host's hook denies
        self.approval_answers: dict[str, float] = {}  # session -> when its answer began
        self.answered: list[tuple[str, str, float]] = []  # (approval id, session, answer began)
        self.counter = 0
        self.said = ""  # what the last action's command printed
        self.mutex = threading.Lock()
        self.screens = None            # soak_screens.Screens: the console to watch, when it runs
        self.console: list[float] = []  # seconds, a fleet stop or resume acknowledged -> the console shows it
        self.console_missed: list[str] = []
        self.broken: list[str] = []  # invariants broken as the operator saw them

    # -- the CLI -------------------------------------------------------------
    def leash(self, host, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
        try:
            return subprocess.run(leash_argv() + ["--home", str(host.home), *argv], env=self.env,
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(argv, 124, "", f"timed out after {timeout} s")

    def act(self, host, kind: str, target: str, *argv: str) -> Ack | None:
        with self.mutex:
            self.counter += 1
            reason = f"soak op {self.counter}"
        done = self.leash(host, *argv, "--reason", reason) if kind != "release" else self.leash(host, *argv)
        self.said = (done.stdout + done.stderr).strip()
        if done.returncode != 0:
            self.failures.append(f"{kind} {target} on {host.name}: exit {done.returncode} "
                                 f"{(done.stderr or done.stdout).strip()[:200]}")
            return None
        ack = Ack(kind, target, reason, time.monotonic(), host=host.name)
        with self.mutex:
            self.acks.append(ack)
        return ack

    def lift(self, ack: Ack, host, *argv: str) -> bool:
        ack.lifted = time.monotonic()  # calls sent from now on may be allowed again
        done = self.leash(host, *argv)
        if done.returncode != 0:
            self.failures.append(f"lifting {ack.kind} {ack.target}: exit {done.returncode} "
                                 f"{(done.stderr or done.stdout).strip()[:200]}")
        return done.returncode == 0

    # -- propagation ---------------------------------------------------------
    def until_denied(self, host, session: str, since: float) -> float | None:
        """Ask ``host``'s leashd about a Bash call of ``session`` until it denies; seconds since ``since``."""
        from leash.core.wire.daemontrust import NotTheDaemon
        from leash.core.wire.thinhook import DaemonTooSlow, DaemonUnreachable, ask, hook_request

        payload = json.dumps({"session_id": session, "hook_event_name": "PreToolUse", "tool_name": "Bash",
                              "tool_input": {"command": "ls"}, "cwd": "/"}).encode()
        request = hook_request("pre-tool-use", payload, None, env={})
        while time.monotonic() - since < PROPAGATION_GIVE_UP_SECONDS:
            try:
                reply = ask(host.agent_socket, request, home=str(host.home), deadline=time.monotonic() + 5)
            except (DaemonTooSlow, DaemonUnreachable, NotTheDaemon):
                return None  # the host is down: no figure, the invariants judge its calls
            if '"deny"' in reply.get("stdout", ""):
                return time.monotonic() - since
            time.sleep(0.002)
        return None

    def measure(self, ack: Ack, hosts) -> None:
        for host in hosts:
            session = ack.target if ack.target != "*" else f"probe-{host.name}"
            delay = self.until_denied(host, session, ack.acked)
            if delay is not None:
                self.propagation.append(delay)

    # -- one round -----------------------------------------------------------
    def round(self, rng, *, skip: set[str], hold_seconds: float, fleet_stop: bool) -> None:
        """Per host not in ``skip``: a session stopped through the next host, then resumed; a path lock;
        with ``fleet_stop``, a fleet stop and resume."""
        hosts = [host for host in self.fleet.hosts if host.name not in skip]
        if not hosts:
            return
        for number, host in enumerate(hosts):
            mine = [agent for agent in self.agents if agent.host is host and agent.calls]  # known to leash
            if not mine:
                continue
            agent = rng.choice(mine)
            through = hosts[(number + 1) % len(hosts)]
            ack = self.act(through, "stop", agent.session, "stop", agent.session)
            if ack is not None:
                self.measure(ack, [host])
        lock = None
        glob = f"path:{self.fleet.root}/projects/*/locked/**"
        if rng.random() < 0.5:
            lock = self.act(hosts[0], "lock", glob, "hands-off", glob, "--hours", "1")
        stop = self.act(hosts[-1], "fleet_stop", "*", "stop", "--all") if fleet_stop else None
        if stop is not None:
            self.measure(stop, hosts)
            self.watch_console(True, stop.acked, stop.reason)
            if self.screens is not None and self.screens.agents and not self.screens.during_stop:
                self.broken += self.screens.stopped_turns(stop.reason)  # the real TUIs too, once a run
        STOPPING.wait(hold_seconds)
        if stop is not None and self.lift(stop, hosts[-1], "resume", "--all"):
            self.watch_console(False, time.monotonic(), stop.reason + " lifted")
        if lock is not None:
            self.lift(lock, hosts[-1], "release", glob)
        for ack in [a for a in self.acks if a.kind == "stop" and a.lifted == float("inf")]:
            through = next((h for h in self.fleet.hosts if h.name == ack.host), hosts[0])
            self.lift(ack, through, "resume", ack.target)

    def watch_console(self, stopped: bool, since: float, what: str) -> None:
        """How long until the console's summary shows the fleet stop (or no longer does)."""
        if self.screens is None or self.screens.console is None:
            return
        delay = self.screens.until_console(FLEET_STOPPED, stopped, since)
        if delay is None:
            top = " | ".join(line.strip() for line in self.screens.console.lines()[:3])[:200]
            self.console_missed.append(f"the console did not show {what} within 5 s (its top lines: {top})")
        else:
            self.console.append(delay)

    # -- approvals -----------------------------------------------------------
    def answer_approvals(self, done: threading.Event, host) -> None:
        """Answer every approval waiting, allow and deny in turn, with ``leash approvals`` on ``host``."""
        from leash.core.store.remote import RemoteBackend

        remote = RemoteBackend(host.operator_socket)  # the console's way to list them: no process per look
        turn = 0
        while not done.is_set():
            try:
                pending = [{"id": record.id, "session_id": record.session_id}
                           for record in remote.approvals.pending()]
            except Exception:  # noqa: BLE001 - leashd restarting or stopped: look again
                pending = []
            for approval in pending:
                approval_id, session = approval.get("id", ""), approval.get("session_id", "")
                verb = "allow" if turn % 2 == 0 else "deny"
                turn += 1
                began = time.monotonic()
                done_cmd = self.leash(host, "approvals", verb, approval_id, timeout=20)
                if done_cmd.returncode == 0:
                    with self.mutex:
                        self.answered.append((approval_id, session, began))
                        event = "approval_allowed" if verb == "allow" else "approval_denied"
                        self.acks.append(Ack("approval", approval_id, event, time.monotonic(),
                                             host=host.name, extra={"verb": verb, "session": session}))
            done.wait(APPROVAL_POLL_SECONDS)

    # -- budget --------------------------------------------------------------
    def raise_cap(self, host, cap: str, to: float) -> Ack | None:
        return self.act(host, "budget_raise", cap, "budget", "raise", cap, "--to", f"{to:g}")


def environment() -> dict[str, str]:
    """The operator's environment: none of leash's own settings of the shell that started the run."""
    return {name: value for name, value in os.environ.items()
            if not name.startswith("LEASH_") and name not in ("TMUX", "TMUX_PANE")}
