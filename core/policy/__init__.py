"""Policy, tier 2 of the layers (docs/architecture.md): reading a tool call and judging it, with no state.

A tool call parsed once (``toolcall``) through the shell reader (``shell*``)
and the argument readers (``argroles``, ``copyroles``, ``gitroles``); which
calls only read (``readonly``); the halt conditions and their engine
(``halts/``); what an operator reads of a waiting call (``approvalsummary``).
Given the same call, every function here answers the same way; nothing is
read from or written to a home.
"""
