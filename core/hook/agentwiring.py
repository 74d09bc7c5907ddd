"""Which agent CLI's wiring a session's hooks come through, and whether it
reports reads: ``wiring(cli, project=)`` for ``core.hook.installcheck.wiring``'s
question asked of Gemini CLI's and Codex CLI's settings too
(``core.hook.geminiwiring``, ``core.hook.codexwiring``).
"""
from __future__ import annotations

from leash.core.wire.hookevents import CODEX, GEMINI


def wiring(cli: str, *, project: str | None = None) -> str:
    """``installcheck.wiring``'s answer for a session of ``cli``: whether its CLI's
    settings wire leash's gate (``WIRED_GATE``) and the hook that reports what
    each call read (``WIRED_READS``) without a fault, or ``WIRED_NOTHING``."""
    from leash.core.hook.install import WIRED_GATE, WIRED_NOTHING, WIRED_READS
    from leash.core.hook.installcheck import wiring as claude_wiring

    if cli not in (GEMINI, CODEX):
        return claude_wiring(project=project)
    if cli == GEMINI:
        from leash.core.hook.geminiwiring import check_gemini

        findings, gate, reads = check_gemini(project=project), "gemini BeforeTool", "gemini AfterTool"
    else:
        from leash.core.hook.codexwiring import check_codex

        findings, gate, reads = check_codex(project=project), "codex PreToolUse", "codex PostToolUse"
    failing = {subject for level, subject, _ in findings if level == "fail"}
    if cli in failing:  # the CLI runs no hook at all (switched off, folder untrusted)
        return WIRED_NOTHING
    words = [word for subject, word in ((gate, WIRED_GATE), (reads, WIRED_READS)) if subject not in failing]
    return " ".join(words) or WIRED_NOTHING
