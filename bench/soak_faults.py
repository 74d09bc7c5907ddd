"""The soak's faults, each at a known fraction of the run, and the fleet
budget cap reached and raised.

``Faults.due`` does the faults whose time has come, one at a time, each to
its end: PostgreSQL restarted (every host), one leashd SIGKILLed and started
again, one SIGSTOPped for a while, one host's veth to the database down for a
while, one home's disk (its tmpfs) filled and then freed. After each it asks
the hosts it touched, as the thin hook does, until they allow a call again
(``recovered``); the windows themselves are read from the probes later
(``soak_checks.fault_window``). ``Budget`` pushes the fleet's spend over the
cap with one model reply's usage on one agent, measures how long until every
host holds, then raises the cap and measures how long until every host lets
calls through again.

Failure: a fault that cannot be done (a command failing) is a line in
``problems`` and the run goes on; the invariants judge what it did to the fleet.
"""
from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import dataclass, field

from soak_hosts import STOPPING

RECOVER_GIVE_UP_SECONDS = 60.0
# One model reply whose output alone costs more than the cap (about $1,500 at the model's price).
OVER_THE_CAP = {"input_tokens": 1000, "output_tokens": 100_000_000}


@dataclass
class Fault:
    name: str
    at: float            # fraction of the run
    hosts: list          # the hosts it touches
    seconds: float = 0.0  # how long it lasts, where it lasts
    start: float = 0.0   # monotonic
    end: float = 0.0
    recovered: dict = field(default_factory=dict)   # host -> seconds from the end to an allowed call (None: never)
    problem: str = ""


def probe_decision(host, session: str) -> str:
    """allow | deny | down: a Bash call of ``session`` asked of ``host``'s leashd now."""
    from leash.core.wire.daemontrust import NotTheDaemon
    from leash.core.wire.thinhook import DaemonTooSlow, DaemonUnreachable, ask, hook_request

    payload = json.dumps({"session_id": session, "hook_event_name": "PreToolUse", "tool_name": "Bash",
                          "tool_input": {"command": "true"}, "cwd": "/"}).encode()
    try:
        reply = ask(host.agent_socket, hook_request("pre-tool-use", payload, None, env={}), home=str(host.home),
                    deadline=time.monotonic() + 3, acknowledged=True)
    except (DaemonTooSlow, DaemonUnreachable, NotTheDaemon):
        return "down"
    return "deny" if '"deny"' in reply.get("stdout", "") else "allow"


def until(host, session: str, wanted: str, since: float, give_up: float = RECOVER_GIVE_UP_SECONDS) -> float | None:
    """Seconds from ``since`` until ``host`` answers ``wanted``; None when it never did."""
    while time.monotonic() - since < give_up and not STOPPING.is_set():
        if probe_decision(host, session) == wanted:
            return time.monotonic() - since
        time.sleep(0.01)
    return None


class Faults:
    def __init__(self, fleet, scale: float):
        hosts = fleet.hosts
        pick = lambda n: hosts[n % len(hosts)]  # noqa: E731 - five faults over however many hosts
        disk = next(host for host in hosts if host.name == fleet.disk_host)
        self.fleet = fleet
        self.plan = [Fault("PostgreSQL restarted", 0.12, list(hosts)),
                     Fault(f"leashd {pick(1).name} SIGKILLed, restarted", 0.25, [pick(1)]),
                     Fault(f"leashd {pick(2).name} SIGSTOPped", 0.38, [pick(2)], 30 * scale),
                     Fault(f"host {pick(3).name}'s link to the database down", 0.64, [pick(3)], 20 * scale),
                     Fault(f"host {disk.name}'s home disk full", 0.78, [disk], 20 * scale)]
        self.done: list[Fault] = []

    def due(self, fraction: float) -> list[Fault]:
        now = [fault for fault in self.plan if fault.at <= fraction and fault not in self.done]
        for fault in now:
            self.inject(fault)
            self.done.append(fault)
        return now

    def inject(self, fault: Fault) -> None:
        fleet = self.fleet
        (host,) = fault.hosts[:1]
        fault.start = time.monotonic()
        try:
            if fault.name.startswith("PostgreSQL"):
                fleet.pg_stop("fast")
                fleet.pg_start()
            elif "SIGKILL" in fault.name:
                host.daemon.kill()
                host.daemon.wait(timeout=20)
                fleet.start_daemon(host)
            elif "SIGSTOP" in fault.name:
                os.kill(host.daemon.pid, signal.SIGSTOP)
                STOPPING.wait(fault.seconds)
                os.kill(host.daemon.pid, signal.SIGCONT)
            elif "link" in fault.name:
                fleet.link(host, up=False)
                try:
                    STOPPING.wait(fault.seconds)
                finally:
                    fleet.link(host, up=True)
            else:
                fleet.fill_disk(host)
                try:
                    STOPPING.wait(fault.seconds)
                finally:
                    fleet.free_disk()
        except Exception as exc:  # noqa: BLE001 - said, and the run goes on
            fault.problem = f"{type(exc).__name__}: {exc}"
        fault.end = time.monotonic()
        for touched in fault.hosts:
            fault.recovered[touched.name] = until(touched, f"probe-{touched.name}", "allow", fault.end)


@dataclass
class Budget:
    reached: dict = field(default_factory=dict)   # host -> seconds from the spend's PostToolUse to a hold there
    released: dict = field(default_factory=dict)  # host -> seconds from the raise's acknowledgement to an allow
    problem: str = ""


def budget_cap(fleet, agent, operator, cap: str, hold_seconds: float) -> Budget:
    """Push the fleet over ``cap`` through ``agent``'s transcript, then raise it."""
    result = Budget()
    agent.spend(OVER_THE_CAP)
    post = agent.call("post-tool-use", "PostToolUse", tool_name="Bash", tool_input={"command": "make"},
                      tool_response={"stdout": "ok", "stderr": "", "interrupted": False}, tool_use_id="toolu_over")
    for host in fleet.hosts:
        result.reached[host.name] = until(host, f"probe-{host.name}", "deny", post.returned, give_up=30)
    STOPPING.wait(hold_seconds)
    ack = operator.raise_cap(fleet.hosts[-1], cap, 1e9)
    if ack is None:
        result.problem = "leash budget raise failed"
        return result
    for host in fleet.hosts:
        result.released[host.name] = until(host, f"probe-{host.name}", "allow", ack.acked, give_up=30)
    return result
