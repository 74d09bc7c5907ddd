"""Hook, tier 5 of the layers (docs/architecture.md): where an agent's call meets leash.

The gate (``gate``: may this call run, against stops, locks, halts and ask
rules), the in-process hooks (``hooks``, ``lifecycle``, ``replyguard``), holding
a call for an operator (``approvalhold``), the hook entry Claude Code runs
(``entry``, ``main``), and the wiring: ``install``, ``wiring``, ``separated``.
"""
