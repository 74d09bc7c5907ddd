"""The reply-send stop guard (atlas's stop hook), as ``leash hook stop``.

On an interactive channel the agent must run the channel's send command to
answer; the prose of its turn is never delivered. When the agent is about to
stop while the correspondent still waits, the guard blocks the stop ONCE with a
reminder; Claude Code then sets ``stop_hook_active`` on the next stop, and the
guard lets it through, so there is never a hard gate.

Channel and conversation come from the agent's environment:
``LEASH_TRIGGER_CHANNEL`` and ``LEASH_TRIGGER_SESSION_KEY``. A channel with a
``needs_reply`` command in ``[reply_guard.channels.NAME]`` asks that command
(``{key}`` replaced; exit 0 means a reply is pending, anything else — another
exit, a crash, a timeout — means allow). Any other channel name uses the
built-in ledger (``core.replyledger``).

Never blocks when: ``stop_hook_active`` is true, ``LEASH_REPLY_GUARD=off``, no
channel is set, the session is stopped by an operator (the stop is what the
operator wants), or on any error — fail open, one line on stderr.
"""
from __future__ import annotations

import json
import os

TYPE_CHECKING = False  # ``typing`` and its kin are for the type checker only: the hook path does not import them
if TYPE_CHECKING:
    from collections.abc import Mapping

    from leash.core.store.protocols import Backend

KILL_SWITCH = "LEASH_REPLY_GUARD"
CHANNEL_ENV = "LEASH_TRIGGER_CHANNEL"
KEY_ENV = "LEASH_TRIGGER_SESSION_KEY"
COMMAND_TIMEOUT_SECONDS = 5.0


def reminder(channel: str, key: str, send_hint: str) -> str:
    return (
        f"A reply on {channel} to {key} is still pending: the newest message in that conversation came from "
        f"them, and nothing has been sent back. The correspondent sees only what you send with `{send_hint}`, "
        f"not the prose of this turn. If a reply is owed, send it now with `{send_hint}`. If no reply is needed "
        f"(already answered, triaged or archived, or only an acknowledgement), you may stop: this reminder "
        f"fires only once."
    )


def _command_says_pending(argv: list[str], key: str) -> bool:
    import subprocess

    command = [part.replace("{key}", key) for part in argv]
    try:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=COMMAND_TIMEOUT_SECONDS)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def decide(payload: dict, *, home: str, env: Mapping[str, str], config_loader=None,
           backend: Backend | None = None) -> tuple[str, str]:
    """(stdout, stderr) of the stop hook for a parsed payload; never raises
    for the allow cases it knows, leaves the rest to ``stop_hook``'s fail-open."""
    if payload.get("stop_hook_active") is True:
        return "", ""
    if env.get(KILL_SWITCH, "").strip().lower() in ("off", "0", "false", "no"):
        return "", ""
    channel = env.get(CHANNEL_ENV, "").strip()
    if not channel:
        return "", ""
    key = env.get(KEY_ENV, "").strip()
    if not key:
        return "", f"leash: {CHANNEL_ENV}={channel} but {KEY_ENV} is not set; stop allowed\n"
    if backend is None:
        from leash.core.store.files import FileBackend

        backend = FileBackend(home)
    session_id = payload.get("session_id")
    if isinstance(session_id, str) and session_id:
        from leash.core.hook.gate import Gate

        if Gate(home, backend=backend).stopped_reason(session_id) is not None:
            return "", ""
    if config_loader is None:
        from leash.core.base.config import load_config as config_loader
    channels = config_loader(home)["reply_guard"]["channels"]
    settings = channels.get(channel, {})
    if settings.get("needs_reply"):
        pending = _command_says_pending(settings["needs_reply"], key)
    else:
        pending = backend.replies.pending(channel, key)
    if not pending:
        return "", ""
    hint = (settings.get("send_hint")
            or f"your {channel} send command (then: leash reply out --channel {channel} --key {key})")
    return json.dumps({"decision": "block", "reason": reminder(channel, key, hint)}) + "\n", ""


def _note_idle(backend: Backend, payload: dict, *, now: float | None = None) -> str:
    """Record that the session's turn ended (best effort: never holds the stop)."""
    session_id = payload.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        return ""
    from leash.core.state.sessions import STATUS_IDLE

    try:
        backend.sessions.observe(session_id, now=now, status=STATUS_IDLE)
    except Exception as exc:  # noqa: BLE001 - the reply guard fails open, and so does its bookkeeping
        return f"leash: could not record session ({exc.__class__.__name__})\n"
    return ""


def stop_hook(raw: bytes, *, home, env: Mapping[str, str] | None = None, input_error: Exception | None = None,
              backend: Backend | None = None, now: float | None = None, **_ignored) -> tuple[str, str, int]:
    """(stdout, stderr, exit code) of ``leash hook stop``: fail open on anything."""
    from leash.core.base.home import ensure_home

    env = os.environ if env is None else env
    try:
        if input_error is not None:
            raise input_error
        from leash.core.wire.hookio import parse_payload

        payload = parse_payload(raw, need_session=False)
        home = ensure_home(home)
        if backend is None:
            from leash.core.store.files import FileBackend

            backend = FileBackend(home)
        out, err = decide(payload, home=home, env=env, backend=backend)
        if not out:  # the turn ends here: the session is idle until its next prompt
            err += _note_idle(backend, payload, now=now)
        return out, err, 0
    except Exception as exc:
        return "", f"leash: reply guard skipped ({exc.__class__.__name__}: {exc}); stop allowed\n", 0
