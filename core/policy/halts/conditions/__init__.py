"""The registry of halt conditions.

Each condition is a small function registered with ``@condition(name,
halt_type, severity)``; it receives the ``CheckContext`` and the threshold
object from ``halt_conditions_config`` and returns a ``Finding`` when it fires
(None otherwise). Its docstring states its rule. ``budget`` is the one whose
evidence is outside the call (the budget store): the gate records it. A finding may raise the
severity above the configured one (a destructive command is critical whatever
its condition's default), never lower it.

A condition declared ``write_or_exec`` fires only on a call that writes,
edits or runs something; ``conditions_for(ctx)`` leaves those out for a call
of a read-only tool (Read, NotebookRead, Grep, Glob, LS, as the hook parsed
it) whose check holds no command, edit, file to change or proposed change,
and gives every condition for any other check.
"""
from __future__ import annotations

from leash.core.policy.halts.conditions.registry import REGISTRY, SEVERITY_RANK, Condition, Finding, condition

__all__ = ["REGISTRY", "SEVERITY_RANK", "Condition", "Finding", "condition", "conditions_for", "load_all",
           "reads_only"]

# Claude Code's tools that only read or list: a call of one writes, edits and runs nothing.
READ_ONLY_TOOLS = frozenset({"Read", "NotebookRead", "Grep", "Glob", "LS"})


_loaded = False


def load_all() -> dict[str, Condition]:
    """Import every rule module once; returns the registry."""
    global _loaded
    if _loaded:  # (every check asks: seven import statements each time cost more than some rules)
        return REGISTRY
    from leash.core.policy.halts.conditions import (  # noqa: F401
        budget,
        code_safety,
        environment,
        execution,
        scope,
        security,
        supervisor,
        uncertainty,
    )

    _loaded = True
    return REGISTRY


def reads_only(ctx) -> bool:
    """Whether the check ``ctx`` is of a call that can change nothing: the
    tool call it judges (``ctx.tool_call()``, the hook's parsed call) is of a
    read-only tool, reaches paths only to read them and runs no command, and
    the context declares no command, edit, file to change or proposed change."""
    call = ctx.tool_call()
    if call.tool not in READ_ONLY_TOOLS or call.commands or any(t.role != "read" for t in call.targets):
        return False
    return not (ctx.commands or ctx.edits or ctx.target_files or ctx.new_files or ctx.proposed_changes)


def conditions_for(ctx) -> dict[str, Condition]:
    """The conditions to run for the check ``ctx``, in registry order: every
    one, but those declared ``write_or_exec`` for a call that only reads."""
    every = load_all()
    if not reads_only(ctx):
        return every
    return {name: rule for name, rule in every.items() if not rule.write_or_exec}
