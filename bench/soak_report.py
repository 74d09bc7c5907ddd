"""The soak's figures and the invariants read at its end, printed: what the
run recorded (calls, acknowledged operations, faults, the cap, the console,
the TUIs, the warrant) in lines, and the lines of what broke.

Failure: none raised; each function returns the broken invariants' lines.
"""
from __future__ import annotations

import json

import soak_checks as checks
from soak_agents import PUSH

PROPAGATION_BOUND_SECONDS = 1.0  # a call allowed later than this after a stop's acknowledgement breaks it


def report_screens(operator, screens, warrant) -> list[str]:
    print(f"console: fleet stop or resume acknowledged -> on screen: {checks.spread(operator.console)}")
    broken = [f"console keeps drawing: {line}" for line in operator.console_missed]
    if not operator.console and not operator.console_missed:
        broken.append("console keeps drawing: no fleet stop was seen on it")
    figures, tuis = screens.tui_lines()
    for line in figures:
        print(line)
    if screens.agents:
        print(f"TUI prompts typed: {screens.prompts}; not taken: {len(screens.problems)}")
        print(f"TUIs prompted during a fleet stop: {', '.join(screens.during_stop) or 'none'}")
    broken += operator.broken
    print(f"warrant on the silent agent: filed, pane gone after {seconds_or_never(warrant.gone_after)}")
    if warrant.gone_after is None:
        listed = operator.leash(operator.fleet.hosts[0], "warrant", "list")
        for line in (warrant.said + "\n" + listed.stdout + listed.stderr).strip().splitlines()[:12]:
            print(f"  {line}")
    if warrant.filed is None:
        broken.append("warrant: it could not be filed")
    elif warrant.gone_after is None:
        broken.append("warrant: the silent agent's pane was not killed")
    return broken + tuis


def seconds_or_never(value) -> str:
    return "never" if value is None else f"{value:.2f} s"


def report_faults(faults, budget, probes, calls) -> list[str]:
    broken = []
    for fault in faults.done:
        windows = []
        for host in fault.hosts:
            gated = probes + [call for call in calls if call.event == "pre-tool-use"]
            refused, count = checks.fault_window(gated, host.name, fault.start, fault.end, settle=1.0)
            normal = fault.recovered.get(host.name)
            hit = checks.during(calls, host.name, fault.start, fault.end)
            slowest = max((call.returned - call.sent for call in hit), default=0.0)
            windows.append(f"host {host.name} refused for {refused:.1f} s ({count} PreToolUse), normal "
                           f"{seconds_or_never(normal)} after its end; agents' calls {len(hit)}, "
                           f"{sum(c.outcome != 'allow' for c in hit)} refused, slowest {slowest:.1f} s")
            reasons = {checks.said(call.detail) for call in probes + hit if call.host == host.name
                       and fault.start <= call.sent <= fault.end + 1.0 and call.outcome != "allow"
                       and not checks.operators(call.detail)}
            windows += [f"  refused saying: {reason}" for reason in sorted(reasons)[:3]]
            if normal is None:
                broken.append(f"fault recovery: host {host.name} never allowed a call again after {fault.name}")
        print(f"fault {fault.name}: {fault.end - fault.start:.1f} s\n  " + "\n  ".join(windows)
              + (f" (could not be done: {fault.problem})" if fault.problem else ""))
        if fault.problem:
            broken.append(f"fault injection: {fault.name}: {fault.problem}")
    if budget is not None:
        print("budget cap reached -> each host holds: " + ", ".join(
            f"{h} {seconds_or_never(v)}" for h, v in budget.reached.items()))
        print("budget raise acknowledged -> each host allows: " + ", ".join(
            f"{h} {seconds_or_never(v)}" for h, v in budget.released.items()))
        broken += [f"budget cap: host {h} never held" for h, v in budget.reached.items() if v is None]
        broken += [f"budget cap: host {h} never released" for h, v in budget.released.items() if v is None]
        if budget.problem:
            broken.append(f"budget cap: {budget.problem}")
    return broken


def report(form, fleet, operator, calls, usage, wall, in_flight, rounds, faults) -> list[str]:
    broken, lags = checks.stop_held(calls, operator.acks, bound=PROPAGATION_BOUND_SECONDS)
    broken += checks.calls_answered(calls, in_flight)
    log = operator.leash(fleet.hosts[0], "log", "--json")
    try:
        lines = [json.loads(line) for line in log.stdout.splitlines() if line.strip()]
    except ValueError:
        lines = []
        broken.append("log holds acks: `leash log --json` printed something that is not JSON lines")
    broken += checks.log_holds_acks(lines, operator.acks)
    for host in fleet.hosts:
        verified = operator.leash(host, "log", "verify")
        if verified.returncode != 0:
            broken.append(f"chains verify: `leash log verify` on host {host.name} exit {verified.returncode}: "
                          f"{(verified.stdout + verified.stderr).strip()[-300:]}")
    counts = {outcome: sum(call.outcome == outcome for call in calls) for outcome in ("allow", "deny", "block",
                                                                                      "pass", "error")}
    print(f"calls: {len(calls)} from the simulated agents ({', '.join(f'{k} {v}' for k, v in counts.items())}), "
          f"{rounds} operator rounds, {len(operator.acks)} acknowledged operations, "
          f"{len(operator.failures)} refused or failed")
    print(f"hook round trip (simulated agents): {checks.spread(checks.round_trips(calls, PUSH))}")
    quiet = checks.outside(calls, [(fault.start, fault.end + 1.0) for fault in faults.done])
    print(f"hook round trip outside the faults: {checks.spread(checks.round_trips(quiet, PUSH))}")
    print(f"stop -> every host's hooks deny: {checks.spread(operator.propagation)}")
    print(f"allowed after a stop's acknowledgement, within the {PROPAGATION_BOUND_SECONDS:g} s bound: "
          f"{checks.spread(lags)}")
    print(f"approval answered -> hook returns: {checks.spread(checks.approval_delays(calls, operator.answered))}")
    for line in usage.lines(wall):
        print(f"usage: {line}")
    for line in operator.failures[:10]:
        print(f"operator: {line}")
    return broken
