"""State, tier 3 of the layers (docs/architecture.md): what leash remembers in one home's files.

The hash-chained ack log and its head, stops, hands-off locks, sessions,
breakers (``loopguard``), the reply ledger, fork lineage, halts as records
(``halts/``) and the warrant queue (``warrants/``). Every write is locked,
atomic and fsynced (``leash.core.base.statefile``); the store layer puts these
behind protocols.
"""
