"""Budget: a spend cap that is reached holds the sessions it covers.

The 22nd condition, ``budget`` (type ``execution``, severity high). Its
evidence is not in a tool call but in the budget store: leashd's meter
charges each session's spend to its caps (``core.views.metering``) and a cap
at 100 % leaves a held counter; the gate (``core.hook.budgetgate``) denies
every call of a session that counter covers and records one ``budget`` halt
for it (``task_id`` ``budget:CAP``, context ``{cap, bucket, period, used,
limit, unit}``), so ``leash halts list`` and the console show it.
``leash budget raise CAP`` lifts the hold and acknowledges those halts.

The condition is registered so that ``leash halts config`` lists it and can
switch it off: ``leash halts config budget --enabled false`` keeps the caps'
warnings and stops their holds. Never raises.
"""
from __future__ import annotations

from leash.core.policy.halts.conditions.registry import condition


@condition("budget", "execution", "high", pure=True)
def budget(ctx, threshold):
    """Fires when a spend cap ([[budget.cap]]) that covers the session is
    reached: the gate finds the held counter in the budget store and records
    this halt itself, once per session and cap. A tool call's input carries
    no spend, so a check of the call alone finds nothing here."""
    return None
