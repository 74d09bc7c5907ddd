"""Whether a process carries an agent CLI's mark in its environment.

The agent CLIs set variables in the environment of every tool they run, and a
process inherits them whatever it does to its ancestry: a tool that detaches
(``setsid -f``, a double fork) is reparented to init, so its ancestry names no
agent (``core.daemon.agents``), but it still holds, for instance, Claude
Code's ``CLAUDECODE=1`` and ``CLAUDE_CODE_SESSION_ID``. leashd's operator
socket refuses such a peer.

Found with the real clients (Claude Code 2.1.197 and 2.1.332: ``env`` in a
Bash call and in a ``setsid -f`` child of it both hold ``CLAUDECODE``,
``CLAUDE_CODE_SESSION_ID``, ``CLAUDE_CODE_ENTRYPOINT`` and ``AI_AGENT``).
Gemini CLI's shell tool sets ``GEMINI_CLI=1``.

Failure: an environment that cannot be read (another user's process, one
that ended) is no mark. What this cannot see: a tool that scrubs its
environment (``env -i``) before it detaches; the separated profile, or the
agent CLI's sandbox (``leash install --sandbox``), is the boundary then.
"""
from __future__ import annotations

AGENT_MARKS = (b"CLAUDECODE", b"CLAUDE_CODE_SESSION_ID", b"CLAUDE_CODE_ENTRYPOINT", b"AI_AGENT", b"GEMINI_CLI")
ENVIRON_LIMIT_BYTES = 1 << 20


def agent_mark(pid: int) -> str:
    """The first agent CLI variable set (not empty) in process ``pid``'s
    environment ("" when none or unreadable)."""
    if pid <= 0:
        return ""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            raw = handle.read(ENVIRON_LIMIT_BYTES)
    except OSError:
        return ""
    names = {entry.split(b"=", 1)[0] for entry in raw.split(b"\0") if b"=" in entry and not entry.endswith(b"=")}
    return next((name.decode() for name in AGENT_MARKS if name in names), "")
