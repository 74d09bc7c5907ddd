"""How long each of leash's hooks may take, as ``leash install`` wires them.

Every hook has Claude Code's ``timeout`` (``HOOK_TIMEOUT_SECONDS``); a gating
one also has a shorter deadline of its own (``OWN_DEADLINE_SECONDS``, the
entry's ``--deadline``: ``core.wire.hookio.armed``), so it is leash, not
Claude Code's timeout (which lets the call run), that ends it — and the thin
client's deadline (``core.thinhook``) is shorter still.

The events an approval may hold (``APPROVAL_EVENTS``: PreToolUse,
PermissionRequest) wait for a person up to ``[approvals] timeout_s``: their
command pins that wait (``LEASH_APPROVAL_WAIT=N``, from which the thin client
takes its own deadline), their own deadline is
``APPROVAL_DEADLINE_MARGIN_SECONDS`` past it and Claude Code's hook timeout
``APPROVAL_TIMEOUT_MARGIN_SECONDS`` past it (never less than the others').

Failure: a config that cannot be read gives the default wait (300 s), as the
gate reads it then.
"""
from __future__ import annotations

from leash.core.wire.thinhook import APPROVAL_EVENTS, APPROVAL_WAIT_ENV, DEFAULT_APPROVAL_WAIT_SECONDS

# Seconds Claude Code waits for the hook; leash's own deadline is shorter so it
# is leash, not Claude Code's timeout (which lets the call run), that ends it.
HOOK_TIMEOUT_SECONDS = 30
OWN_DEADLINE_SECONDS = 25
# For the events an approval may hold: the command's own deadline and Claude
# Code's hook timeout, past the approval's wait (``[approvals] timeout_s``).
APPROVAL_DEADLINE_MARGIN_SECONDS = 15
APPROVAL_TIMEOUT_MARGIN_SECONDS = 30


def seconds_text(value: float) -> str:
    """``300`` for a whole number of seconds, ``2.5`` otherwise."""
    return f"{value:g}" if value != int(value) else str(int(value))


def approval_wait(home: str | None) -> float:
    """``[approvals] timeout_s`` of ``home``'s config (the default when there is none or it cannot be read)."""
    if home is None:
        return DEFAULT_APPROVAL_WAIT_SECONDS
    from leash.core.base.config import ConfigError, load_config

    try:
        return float(load_config(home)["approvals"]["timeout_s"])
    except ConfigError:
        return DEFAULT_APPROVAL_WAIT_SECONDS


def deadlines(verb: str, wait: float | None = None) -> tuple[str, int]:
    """(the hook's own deadline in seconds, as its command says it, Claude
    Code's hook ``timeout``) for ``leash hook VERB``."""
    if verb not in APPROVAL_EVENTS:
        return str(OWN_DEADLINE_SECONDS), HOOK_TIMEOUT_SECONDS
    wait = DEFAULT_APPROVAL_WAIT_SECONDS if wait is None else wait
    import math

    return (seconds_text(max(wait + APPROVAL_DEADLINE_MARGIN_SECONDS, OWN_DEADLINE_SECONDS)),
            max(math.ceil(wait + APPROVAL_TIMEOUT_MARGIN_SECONDS), HOOK_TIMEOUT_SECONDS))


def pinned_wait(verb: str, wait: float | None = None) -> str:
    """``LEASH_APPROVAL_WAIT=N `` for the command of an event an approval may hold, else ""."""
    if verb not in APPROVAL_EVENTS:
        return ""
    return f"{APPROVAL_WAIT_ENV}={seconds_text(DEFAULT_APPROVAL_WAIT_SECONDS if wait is None else wait)} "
