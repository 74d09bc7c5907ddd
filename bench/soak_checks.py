"""The soak's invariants and figures, read from what the run recorded.

Each invariant is a function returning the lines that break it (empty: it
holds). ``stop_held``: no PreToolUse sent more than ``bound`` seconds after a
stop, fleet stop or path lock was acknowledged (and before it was lifted) was
allowed; ``calls_answered``: every simulated call answered or refused, none
raised, none past its deadline; ``log_holds_acks``: every acknowledged
operation is in the shared ack log; ``chains_verify``: ``leash log verify``
exits 0 on every host. Figures are percentiles over the recorded times.

Failure: none raised; an unreadable log is a broken invariant, said in one line.
"""
from __future__ import annotations

import fnmatch
import json
import statistics

# A thin client may take its deadline; a thread's own scheduling on a loaded
# 2-core machine a little more.
DEADLINE_MARGIN_SECONDS = 3.0


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def spread(values: list[float], unit: float = 1000.0, suffix: str = "ms") -> str:
    if not values:
        return "no samples"
    return (f"p50 {statistics.median(values) * unit:.1f} {suffix}, p99 {percentile(values, 0.99) * unit:.1f} "
            f"{suffix}, max {max(values) * unit:.1f} {suffix} (n={len(values)})")


def stop_held(calls, acks, *, bound: float) -> tuple[list[str], list[float]]:
    """(violations, lags): a lag is how long after an acknowledgement a call
    was still allowed (within the bound)."""
    broken, lags = [], []
    for ack in acks:
        if ack.kind not in ("stop", "fleet_stop", "lock"):
            continue
        pattern = ack.target[len("path:"):] if ack.kind == "lock" else ""
        for call in calls:
            if call.event != "pre-tool-use" or call.outcome != "allow":
                continue
            if not ack.acked < call.sent < ack.lifted:
                continue
            if ack.kind == "stop" and call.session != ack.target:
                continue
            if ack.kind == "lock" and not (call.tool == "Edit" and fnmatch.fnmatch(call.subject, pattern)):
                continue
            lag = call.sent - ack.acked
            if lag > bound:
                broken.append(f"stop held: {call.tool} of {call.session[:8]} on host {call.host} allowed "
                              f"{lag:.2f} s after {ack.kind} {ack.target[:40]!r} ({ack.reason}) was acknowledged")
            else:
                lags.append(lag)
    return broken, lags


def calls_answered(calls, in_flight: int) -> list[str]:
    broken = [f"calls answered: {call.event} of {call.session[:8]} on host {call.host} raised: {call.detail}"
              for call in calls if call.outcome == "error"]
    broken += [f"calls answered: {call.event} of {call.session[:8]} on host {call.host} took "
               f"{call.returned - call.sent:.1f} s (its deadline {call.limit:g} s)"
               for call in calls if call.returned - call.sent > call.limit + DEADLINE_MARGIN_SECONDS]
    if in_flight:
        broken.append(f"calls answered: {in_flight} agent thread(s) still inside a call at the end")
    return broken


def log_holds_acks(lines: list[dict], acks) -> list[str]:
    text = [json.dumps(line) for line in lines]
    everything = "\n".join(text)
    broken = []
    for ack in acks:
        if ack.kind == "approval":
            found = any(ack.target in line and ack.reason in line for line in text)
        else:
            found = ack.reason in everything
        if not found:
            broken.append(f"log holds acks: {ack.kind} {ack.target[:40]!r} ({ack.reason}) acknowledged on host "
                          f"{ack.host} is not in the log")
    return broken


def approval_delays(calls, answered) -> list[float]:
    """Seconds from an answer's command starting to the held call's hook returning."""
    delays = []
    for _approval, session, began in answered:
        for call in calls:
            if call.session == session and call.sent < began < call.returned and \
                    call.event in ("pre-tool-use", "permission-request"):
                delays.append(call.returned - began)
                break
    return delays


def round_trips(calls, held_command: str) -> list[float]:
    """Every hook call's time but those an approval may hold (they wait for a person)."""
    return [call.returned - call.sent for call in calls
            if call.outcome != "error" and call.event != "permission-request"
            and not (call.event == "pre-tool-use" and call.subject == held_command)]


def fault_window(probes, host: str, start: float, end: float, *, settle: float) -> tuple[float, int]:
    """(seconds ``host``'s PreToolUse hooks refused, from the first refused to the
    last refused one's answer, and how many were refused) between the fault's
    start and ``settle`` seconds after its end."""
    refused = sorted((call for call in probes if call.host == host and start <= call.sent <= end + settle
                      and call.outcome != "allow" and not operators(call.detail)), key=lambda c: c.sent)
    return (refused[-1].returned - refused[0].sent if refused else 0.0), len(refused)


def operators(reason: str) -> bool:
    """A refusal the operator's own stop or lock made, not a fault (its reason names the soak's operation)."""
    return "soak op " in reason


def during(calls, host: str, start: float, end: float) -> list:
    """The PreToolUse calls to ``host`` answered while a fault lasted."""
    return [call for call in calls if call.host == host and call.event == "pre-tool-use"
            and call.returned >= start and call.sent <= end]


def outside(calls, windows: list[tuple[float, float]]) -> list:
    return [call for call in calls if not any(call.returned >= start and call.sent <= end for start, end in windows)]


def said(reason: str) -> str:
    """A refusal's reason on one short line, control characters escaped (it is a daemon's text)."""
    flat = " ".join(reason.split())
    return flat.encode("unicode_escape").decode("ascii")[:110]
