"""A hook's input and output: stdin read with a time and size limit, the JSON
payload parsed, and the deny answer pre-tool-use prints.

Failure: everything wrong with the input is a ``HookInputError`` (one line to
show); more than ``STDIN_LIMIT_BYTES`` is ``HookInputTooLarge``, on which
pre-tool-use denies. This module is on the hook path: standard library only.
"""
from __future__ import annotations

import json
import os
import select
import sys

STDIN_TIMEOUT_SECONDS = 5.0
# Claude Code's payloads (a tool's input and response) stay far below this;
# anything larger is refused on pre-tool-use rather than judged in part.
STDIN_LIMIT_BYTES = 16 * 1024 * 1024


class HookInputError(Exception):
    pass


class HookInputTooLarge(HookInputError):
    """More than ``STDIN_LIMIT_BYTES`` on stdin: pre-tool-use denies."""

    def __init__(self) -> None:
        super().__init__(f"hook input larger than {STDIN_LIMIT_BYTES // (1024 * 1024)} MiB")


def read_stdin(stream=None, *, timeout: float = STDIN_TIMEOUT_SECONDS) -> bytes:
    """All of stdin, or HookInputError when nothing complete arrives in time."""
    stream = stream if stream is not None else sys.stdin.buffer
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        raw = stream.read(STDIN_LIMIT_BYTES + 1)
        if len(raw) > STDIN_LIMIT_BYTES:
            raise HookInputTooLarge()
        return raw
    chunks, total = [], 0
    import time

    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise HookInputError(f"no complete hook input on stdin within {timeout:g} s")
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > STDIN_LIMIT_BYTES:
            raise HookInputTooLarge()


def parse_payload(raw: bytes, *, need_session: bool = True) -> dict[str, object]:
    if not raw.strip():
        raise HookInputError("empty hook input (expected Claude Code's JSON on stdin)")
    try:
        payload = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise HookInputError(f"hook input is not JSON ({exc.__class__.__name__}: {str(exc)[:80]})") from None
    if not isinstance(payload, dict):
        raise HookInputError("hook input must be a JSON object")
    session_id = payload.get("session_id")
    if need_session and (not isinstance(session_id, str) or not session_id):
        raise HookInputError("hook input has no session_id")
    return payload


def deny_output(reason: str) -> str:
    return json.dumps({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    })
