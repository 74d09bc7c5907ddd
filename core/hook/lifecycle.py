"""Claude Code's lifecycle hooks beyond the tool gate (docs/claude-code.md).

Each handler takes the hook's stdin and returns ``(stdout, stderr, exit code)``:

* ``session-start``: registers the session before its first tool call (pane,
  cwd, transcript path, and what the settings wire: ``wired``). A fork
  (``--resume X --fork-session`` gets a new id) records X as its ``parent``
  (``core.lineage``; the prompt and tool hooks settle it too, since Claude
  Code 2.1.197 sends SessionStart under X's id); a session resumed into the
  pane of another records that one. The gate holds a session whose ancestor
  is stopped or halted.
* ``session-end``: the session is marked ``ended``.
* ``notification``: ``idle_prompt`` / ``permission_prompt`` make the session
  "waiting for input" / "waiting for approval" (Claude Code's own dialog);
  its next prompt or tool call clears that.
* ``user-prompt-submit``: a stopped or paused session's prompt, or one a spend
  cap holds, is blocked with the reason; a hands-off entity's prompt gets
  ``additionalContext``.
* ``post-tool-batch``: while the whole session is held (a stop, the fleet
  stop, a hands-off lock on the session, a reached spend cap, a paused
  session — and, unless
  ``[gate] end_turn_on_halt = false``, a halted one) the turn ends:
  ``{"continue": false, "stopReason": ...}``, so the model does not argue with
  the deny.
* ``permission-request``: a held session's permission dialog is denied; through
  leashd (``hold``) any other is an approval an operator answers
  (``core.approvals.hold``), without it Claude Code shows its own dialog.
* ``model-request`` / ``model-response``: Gemini CLI's ``BeforeModel`` (a
  session a spend cap holds sends no model request) and ``AfterModel``
  (answers nothing: leashd meters it).
* ``config-change``: a settings change that disables, removes or alters
  leash's hooks, or sets an ``env`` name the hook reads, is blocked (exit 2)
  and recorded as a ``supervisor_tampering`` halt (``core.wiring``).

Failure: input that cannot be read blocks only where the gate's policy fails
closed (the stop state cannot be read, the fleet is stopped); everything else
answers with one stderr line and exit 1, which Claude Code shows without
blocking. Registering is best effort; judging is not.
"""
from __future__ import annotations

import json
import os

from leash.core.state.sessions import (
    STATUS_IDLE,
    STATUS_THINKING,
    STATUS_WAITING_APPROVAL,
    STATUS_WAITING_INPUT,
)

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.protocols import Backend


# Verdict rules that hold the whole session (a path lock holds one file only).
SESSION_WIDE_RULES = frozenset({"stop_unreadable", "fleet_stop", "session_stop", "hands_off", "locks_unreadable",
                                "budget_unreadable", "budget_hold", "session_paused", "halts_unreadable"})
# A halted session may still run read-only tools, so a halt holds only its turn.
HALTED_RULES = frozenset({"session_halted"})


def _read(raw: bytes, home, input_error, *, need_session: bool = True, backend: Backend | None = None):
    """(the gate, the payload or None, the input problem or None)."""
    from leash.core.base.home import ensure_home
    from leash.core.hook.gate import Gate
    from leash.core.wire.hookio import HookInputError, parse_payload

    gate = Gate(ensure_home(home), backend=backend)
    try:
        if input_error is not None:
            raise input_error
        return gate, parse_payload(raw, need_session=need_session), None
    except HookInputError as exc:
        return gate, None, exc


def _register(gate, payload: dict, env, *, now=None, status: str | None = None, wired: str = "") -> dict:
    """Record the session (and, until it is settled, which session it continues)."""
    from leash.core.hook.whereabouts import whereabouts
    from leash.core.wire.agentpayloads import cli_of

    session_id = payload["session_id"]
    found = gate.sessions.get(session_id, now=now)
    known = found.as_dict() if found is not None else {}  # its stored fields, as the registry's readers take them
    where = whereabouts(gate.sessions, env, known)
    return gate.sessions.observe(
        session_id, now=now, status=status, tmux_pane=where.pane, tmux_session=where.tmux_session,
        tmux_session_id=where.tmux_session_id, entity=env.get("LEASH_ENTITY", ""), cwd=_text(payload, "cwd"),
        transcript_path=_text(payload, "transcript_path"), wired=wired, cli=cli_of(payload),
        agent_process=where.process, **_parent_of(gate, payload, env, known, now=now))


def _text(payload: dict, key: str) -> str:
    value = payload.get(key)
    return value if isinstance(value, str) else ""


def _session_hold(gate, session_id: str, *, now=None, env=None, rules=SESSION_WIDE_RULES):
    """The verdict that holds the whole session now (by one of ``rules``), or None."""
    verdict = gate.check_stops_and_locks(session_id, now=now)
    if not verdict.allow and verdict.rule in rules:
        return verdict
    verdict = gate.check_budget(session_id, now=now)
    if not verdict.allow and verdict.rule in rules:
        return verdict
    verdict = gate.check_halts(session_id, None, None, now=now, env=env)
    if not verdict.allow and verdict.rule in rules:
        return verdict
    return None


def _unreadable_input(gate, exc) -> tuple[str, str, int]:
    """No session to judge: only the rules that hold everyone may block."""
    verdict = gate._stop_verdict([])
    if verdict is not None:
        return "", f"{verdict.reason}\n", 2
    return "", f"leash: {exc}\n", 1


# ------------------------------------------------------------------ handlers
def session_start(raw: bytes, *, home, env=None, now=None, input_error=None,
                  backend: Backend | None = None) -> tuple[str, str, int]:
    env = os.environ if env is None else env
    gate, payload, problem = _read(raw, home, input_error, backend=backend)
    if problem is not None:
        return "", f"leash: {problem}\n", 1
    session_id = payload["session_id"]
    from leash.core.hook.agentwiring import wiring
    from leash.core.wire.agentpayloads import cli_of

    # Remembered so that a later settings change that unwires leash is seen as
    # one, and so that the gate knows whether this session's reads are reported
    # (judged in the settings of the session's own CLI).
    wired = wiring(cli_of(payload), project=_text(payload, "cwd") or None)
    # A session that starts (or is resumed or cleared) waits for its prompt; a
    # compaction happens inside a turn, so it changes nothing of what it does.
    status = None if payload.get("source") == "compact" else STATUS_IDLE
    _register(gate, payload, env, now=now, status=status, wired=wired)
    held = _session_hold(gate, session_id, now=now, env=env)
    if held is None:
        return "", "", 0
    context = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": held.reason}}
    return json.dumps(context) + "\n", "", 0


def _parent_of(gate, payload: dict, env, known, *, now=None) -> dict[str, str]:
    """The lineage fields to record: the session this one continues, named on
    Claude Code's command line or sharing its transcript's messages
    (``core.lineage``), else the one that last ran in the same tmux pane when
    Claude Code says it resumed; {} when there is nothing new to record."""
    from leash.core.state.lineage import BY_PANE, settle, settled

    session_id = payload["session_id"]
    found = settle(gate.sessions, session_id, _text(payload, "transcript_path"), known, env, now=now)
    if found.get("parent") or settled(known) or payload.get("source") != "resume":
        return found
    pane = gate.sessions.hosted(env.get("TMUX_PANE", ""))  # Claude Code's resume: no shared server
    predecessor = gate.sessions.predecessor_in_pane(session_id, pane, now=now)
    return {"parent": predecessor, "parent_by": BY_PANE} if predecessor else found


def session_end(raw: bytes, *, home, env=None, now=None, input_error=None,
                backend: Backend | None = None) -> tuple[str, str, int]:
    env = os.environ if env is None else env
    gate, payload, problem = _read(raw, home, input_error, backend=backend)
    if problem is not None:
        return "", f"leash: {problem}\n", 1
    from leash.core.state.sessions import STATUS_ENDED

    _register(gate, payload, env, now=now, status=STATUS_ENDED)
    return "", "", 0


# Claude Code's own permission dialog is a call waiting for a human's approval,
# as one leash holds is: the operator sees one state for both.
NOTIFICATION_STATUS = {"idle_prompt": STATUS_WAITING_INPUT, "permission_prompt": STATUS_WAITING_APPROVAL}


def notification(raw: bytes, *, home, env=None, now=None, input_error=None,
                 backend: Backend | None = None) -> tuple[str, str, int]:
    env = os.environ if env is None else env
    gate, payload, problem = _read(raw, home, input_error, backend=backend)
    if problem is not None:
        return "", f"leash: {problem}\n", 1
    status = NOTIFICATION_STATUS.get(_text(payload, "notification_type"))
    if status is not None:
        _register(gate, payload, env, now=now, status=status)
    return "", "", 0


def user_prompt_submit(raw: bytes, *, home, env=None, now=None, input_error=None,
                       backend: Backend | None = None) -> tuple[str, str, int]:
    env = os.environ if env is None else env
    gate, payload, problem = _read(raw, home, input_error, backend=backend)
    if problem is not None:
        return _unreadable_input(gate, problem)
    session_id = payload["session_id"]
    _register(gate, payload, env, now=now, status=STATUS_THINKING)
    held = _session_hold(gate, session_id, now=now, env=env)
    if held is not None and held.rule != "hands_off":
        return json.dumps({"decision": "block", "reason": held.reason}) + "\n", "", 0
    if held is not None:  # a hands-off entity may still talk; it is told what it must not touch
        context = {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": held.reason}}
        return json.dumps(context) + "\n", "", 0
    return "", "", 0


def post_tool_batch(raw: bytes, *, home, env=None, now=None, input_error=None,
                    backend: Backend | None = None) -> tuple[str, str, int]:
    env = os.environ if env is None else env
    gate, payload, problem = _read(raw, home, input_error, backend=backend)
    if problem is not None:
        return _unreadable_input(gate, problem)
    # A halt at a blocking severity ends the turn too ([gate] end_turn_on_halt):
    # the model should not go on proposing calls a human must first look at.
    rules = SESSION_WIDE_RULES | HALTED_RULES if gate.config()["gate"]["end_turn_on_halt"] else SESSION_WIDE_RULES
    held = _session_hold(gate, payload["session_id"], now=now, env=env, rules=rules)
    if held is None:
        return "", "", 0
    return json.dumps({"continue": False, "stopReason": held.reason}) + "\n", "", 0


def permission_request(raw: bytes, *, home, env=None, now=None, input_error=None,
                       backend: Backend | None = None, hold: bool = False):
    env = os.environ if env is None else env
    gate, payload, problem = _read(raw, home, input_error, backend=backend)
    if problem is not None:
        return _unreadable_input(gate, problem)
    tool = payload.get("tool_name") if isinstance(payload.get("tool_name"), str) else None
    verdict = gate.check(payload["session_id"], tool, payload.get("tool_input"), cwd=_text(payload, "cwd") or None,
                         now=now, env=env)
    if verdict.allow and hold:  # leashd waits for the first answer: an operator's, or the pane's
        from leash.core.hook import approvalhold as holding

        _register(gate, payload, env, now=now)
        return holding.hold(gate.backend, holding.PERMISSION_EVENT, payload["session_id"], tool,
                            payload.get("tool_input"), kind="permission", rule="",
                            settings=gate.config()["approvals"], now=now)
    if verdict.allow:  # Claude Code shows its dialog: the session waits for a human's approval
        _register(gate, payload, env, now=now, status=STATUS_WAITING_APPROVAL)
        return "", "", 0
    decision = {"behavior": "deny", "message": verdict.reason}
    reply = {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}
    return json.dumps(reply) + "\n", "", 0


def config_change(raw: bytes, *, home, env=None, now=None, input_error=None,
                  backend: Backend | None = None) -> tuple[str, str, int]:
    """Block a settings change that switches leash's hooks off or changes
    them: Claude Code reads exit 2 on ConfigChange as "do not apply". The
    changed file's leash hooks must be what ``leash install`` wrote, to the
    byte, and its ``env`` may not set a name the hook reads (``core.wiring``)."""
    env = os.environ if env is None else env
    gate, payload, problem = _read(raw, home, input_error, backend=backend)
    if problem is not None:
        return "", f"leash: {problem}\n", 1
    from leash.core.hook.install import WIRED_GATE
    from leash.core.hook.installcheck import disabling_change
    from leash.core.hook.wiring import changed_file_problem

    record = gate.sessions.get(payload["session_id"], now=now)
    path = _text(payload, "file_path")
    problem = disabling_change(path, project=_text(payload, "cwd") or None,
                               was_wired=record is not None and WIRED_GATE in str(record.wired or "").split())
    if not problem and path:
        problem = changed_file_problem(path, home=gate.home)
    if not problem:
        return "", "", 0
    reason = (f"leash: this settings change would switch leash's hooks off or change them ({problem}); blocked "
              "and recorded as supervisor_tampering. Only a human can lift the halt.")
    _record_tampering(gate, payload, problem, now=now)
    return "", reason + "\n", 2


def _record_tampering(gate, payload: dict, problem: str, *, now=None) -> None:
    """The ``tamper_blocked`` line and the critical halt, both in the gate's
    own backend: on a shared store the halt must be where every leashd's gate
    reads halts, never in this host's files."""
    from leash.core.base.text import printable

    session_id = payload["session_id"]
    summary = printable(f"ConfigChange {_text(payload, 'file_path')}: {problem}", limit=300)
    gate.backend.acklog.append("tamper_blocked", source="leash", session_id=session_id, reason=summary, now=now)
    gate.backend.halts.record({"session_token": session_id, "halt_type": "security", "severity": "critical",
                               "condition_name": "supervisor_tampering", "description": summary}, now=now)


def model_request(raw: bytes, *, home, env=None, now=None, input_error=None,
                  backend: Backend | None = None) -> tuple[str, str, int]:
    """Gemini CLI's ``BeforeModel``: a session a spend cap holds (or whose
    budget store cannot be read) sends no model request — exit 2 with the
    reason, which aborts the turn before anything is spent. Nothing else is
    judged here: a stop or a halt ends the loop at the next tool call."""
    gate, payload, problem = _read(raw, home, input_error, backend=backend)
    if problem is not None:
        return _unreadable_input(gate, problem)
    verdict = gate.check_budget(payload["session_id"], now=now)
    if verdict.allow:
        return "", "", 0
    return "", verdict.reason + "\n", 2


def model_response(raw: bytes, *, home, env=None, now=None, input_error=None,
                   backend: Backend | None = None) -> tuple[str, str, int]:
    """Gemini CLI's ``AfterModel`` (every response chunk): nothing to judge
    and nothing answered; leashd's meter reads the chunk's usage before this
    runs. Input that cannot be read is one stderr line, exit 1 (fails open)."""
    if input_error is not None:
        return "", f"leash: {input_error}\n", 1
    return "", "", 0


HANDLERS = {
    "session-start": session_start, "session-end": session_end, "notification": notification,
    "user-prompt-submit": user_prompt_submit, "post-tool-batch": post_tool_batch,
    "permission-request": permission_request, "config-change": config_change,
    "model-request": model_request, "model-response": model_response,
}
