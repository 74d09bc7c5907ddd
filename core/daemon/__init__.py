"""leashd: one control daemon per host (``leash daemon``).

It holds the state home, the halt engine warm and the kennel, and answers two
Unix sockets of newline-delimited JSON: the agent socket (``hook`` only, the
thin hook client of ``core.thinhook``) and the operator socket (the CLI's
actions, ``ping``, ``subscribe``). ``core.daemon.wire`` reads and writes lines
with their limits, ``core.daemon.peers`` decides who may do what from the
peer's credentials, ``core.daemon.service`` runs it all.

Layer ``daemon``, tier 7 of the layers (docs/architecture.md).
"""
