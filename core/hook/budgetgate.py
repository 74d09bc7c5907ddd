"""The gate's spend rule, once a cap is held: does the hold cover this
session, is the ``budget`` condition on, and the one ``budget`` halt it records.

``held_by`` answers the deny's text (``core.policy.budgethold.refusal``) or
None. The session's host is named as the meter names it: its record's, else
the store's host, else this machine's (``core.base.config.host_name``).

Failure: a halt store that cannot be read leaves the condition on (its
default) and the halt unrecorded until the next call; the deny stands either
way. Imported by the gate only while a counter is held.
"""
from __future__ import annotations

import os

from leash.core.base.statefile import locked
from leash.core.policy import budgethold
from leash.core.state.halts.store import HaltStoreUnavailable
from leash.core.state.loghead import HeadMismatch

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.protocols import Backend
    from leash.core.store.records_halts import HaltConditionConfig

# The halt a spend hold records (``core.policy.halts.conditions.budget``): its
# type and severity when the condition's settings cannot be read.
BUDGET_CONDITION = "budget"
BUDGET_HALT_TYPE = "execution"
BUDGET_SEVERITY = "high"
PENDING_READ = 1000  # a session's pending halts read to find its budget halt
RECORDING_LOCK = "budget-halt"  # (its flock: budget-halt.lock in the home)


def held_by(gate, session_id: str, record: dict, holds: list, budget: dict, *, now: float | None) -> str | None:
    """The deny's text when a hold of ``holds`` covers the session (``record``:
    its record, with ``lineage`` when it continues another), else None."""
    found = budgethold.covering(holds, budget["cap"], budget["accounts"],
                                session_ids=(session_id, *record.get("lineage", ())),
                                entity=str(record.get("entity") or ""), host=host_of_session(gate, record))
    if found is None:
        return None
    condition = budget_condition(gate.backend)
    if condition is not None and condition.enabled is False:
        return None  # the operator switched the condition off: caps warn, never hold
    hold, cap = found
    record_halt(gate.backend, gate.home, session_id, hold, cap, condition, now=now)
    return budgethold.refusal(hold, cap)


def host_of_session(gate, record: dict) -> str:
    from leash.core.state.sessions import host_of

    found = host_of(record) or gate.sessions.host
    if found:
        return found
    from leash.core.base.config import host_name

    return host_name(gate.home)


def budget_condition(backend: Backend) -> HaltConditionConfig | None:
    """The ``budget`` halt condition's settings; None when the halt store cannot say."""
    try:
        rows = backend.halts.config()
    except (HaltStoreUnavailable, HeadMismatch, OSError):
        return None
    return next((row for row in rows if row.condition_name == BUDGET_CONDITION), None)


def record_halt(backend: Backend, home: str, session_id: str, hold, cap: dict,
                condition: HaltConditionConfig | None, *,
                now: float | None) -> None:
    """One ``budget`` halt per session and cap (its ``task_id``: ``budget:CAP``):
    recorded unless one of the same cap is still pending."""
    task = f"{BUDGET_CONDITION}:{hold.cap}"
    try:
        # A batch of parallel calls asks at once: one of them records, in turn
        # (a session's hooks all run on its host, so a lock in the home suffices).
        with locked(os.path.join(home, RECORDING_LOCK)):
            from leash.core.policy.halts.outcomes import HaltQuery

            query = HaltQuery(session=session_id, pending=True, limit=PENDING_READ)
            pending = backend.halts.listing(query, now=now).halts
            if any(h.condition_name == BUDGET_CONDITION and h.task_id == task for h in pending):
                return
            backend.halts.record({"session_token": session_id, "task_id": task, "condition_name": BUDGET_CONDITION,
                                  "halt_type": (condition and condition.halt_type) or BUDGET_HALT_TYPE,
                                  "severity": (condition and condition.severity) or BUDGET_SEVERITY,
                                  "description": budgethold.halt_description(hold, cap),
                                  "context": budgethold.halt_context(hold, cap)}, now=now)
    except (HaltStoreUnavailable, HeadMismatch, OSError):
        pass  # recorded at a later call; a full disk must not turn the deny into an allow
