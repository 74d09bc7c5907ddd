"""The one table of hook events: for every agent CLI leash is wired into, each
event's name there, the ``leash hook VERB`` that answers it, its fail policy
and how it refuses.

``leash install`` writes hooks from this table, the hook's failure output
(``core.wire.hookio.failed_closed``) reads it, and docs/hook-events.md is
checked against it by a test.

Verbs: Claude Code's events keep their plain verbs (``pre-tool-use``); another
CLI's are prefixed with its name (``gemini-before-tool``, ``codex-pre-tool-use``)
and are answered by the Claude Code verb named in ``judged_as`` once its
payload has been read into Claude Code's shape (``core.wire.agentpayloads``);
the answer is then written in that CLI's own form (``render``). Gemini CLI's
model hooks have no Claude Code event: ``BeforeModel`` is judged by leash's own
``model-request`` (only a spend cap's hold refuses it: exit 2, which aborts the
turn before the request is sent) and ``AfterModel`` by ``model-response``,
which answers nothing (leashd's meter reads the response's usage).

Refusal forms (``refusal``):

* ``deny``: a tool call refused. Claude Code: ``permissionDecision: "deny"``
  JSON, exit 0. Gemini CLI and Codex CLI: the reason on stderr and exit 2, the
  one form both read as a refusal (Gemini CLI also reads its
  ``{"decision": "deny"}`` JSON; Codex CLI needs stderr non-empty).
* ``block``: a prompt refused (``{"decision": "block"}``, exit 0 for Claude
  Code; exit 2 with the reason on stderr for the others).
* ``end-turn``: the agent's loop ends (``{"continue": false}``). Gemini CLI's
  BeforeTool can end it too: a call refused for a stop or a blocking halt
  ([gate] end_turn_on_halt) is answered ``continue: false`` there, as Claude
  Code's PostToolBatch would.
* ``permission``: a permission dialog answered ``deny``.
* ``exit-2``: exit 2, which the CLI reads as "refuse the change".
* None: the event only feeds evidence or records a session; it fails open.

This module is on the hook path, the thin client's too: standard library only.
"""
from __future__ import annotations

from collections import namedtuple

CLAUDE = "claude"
GEMINI = "gemini"
CODEX = "codex"
AGENTS = (CLAUDE, GEMINI, CODEX)

DENY = "deny"
BLOCK = "block"
END_TURN = "end-turn"
PERMISSION = "permission"
EXIT_2 = "exit-2"
# Claude Code's onFailure value (2.1.295+): a hook that cannot run, times out
# or answers badly blocks the call (install writes it on the refusing events).
ON_FAILURE_BLOCK = "block"

# agent: the CLI; event: its name there; verb: ``leash hook VERB``; judged_as:
# the Claude Code verb that answers it; refusal: how it refuses (None: it fails
# open); matcher: the CLI filters the event by tool name; answers: what it is
# for, in a few words (the docs' table). (A namedtuple, not a dataclass: the
# hook path does not pay for ``inspect``.)
HookEvent = namedtuple("HookEvent", "agent event verb judged_as refusal matcher answers")

EVENTS = (
    HookEvent(CLAUDE, "PreToolUse", "pre-tool-use", "pre-tool-use", DENY, True,
              "may this tool call run: stops, locks, halts, ask rules"),
    HookEvent(CLAUDE, "PostToolUse", "post-tool-use", "post-tool-use", None, True,
              "what the call read and whether it failed (halt evidence)"),
    HookEvent(CLAUDE, "PostToolUseFailure", "post-tool-use-failure", "post-tool-use-failure", None, True,
              "a failed call (halt evidence)"),
    HookEvent(CLAUDE, "PostToolBatch", "post-tool-batch", "post-tool-batch", END_TURN, False,
              "end the turn when a blocking halt or a stop stands"),
    HookEvent(CLAUDE, "UserPromptSubmit", "user-prompt-submit", "user-prompt-submit", BLOCK, False,
              "refuse a prompt to a stopped or held session"),
    HookEvent(CLAUDE, "Stop", "stop", "stop", None, False, "the reply-send guard; the session is idle"),
    HookEvent(CLAUDE, "SessionStart", "session-start", "session-start", None, False, "record the session"),
    HookEvent(CLAUDE, "SessionEnd", "session-end", "session-end", None, False, "the session is gone"),
    HookEvent(CLAUDE, "Notification", "notification", "notification", None, False,
              "the session waits for input or permission"),
    HookEvent(CLAUDE, "PermissionRequest", "permission-request", "permission-request", PERMISSION, True,
              "answer a permission dialog from the console"),
    HookEvent(CLAUDE, "ConfigChange", "config-change", "config-change", EXIT_2, False,
              "refuse a change to leash's hooks"),
    HookEvent(GEMINI, "BeforeTool", "gemini-before-tool", "pre-tool-use", DENY, True,
              "may this tool call run: stops, locks, halts, ask rules"),
    HookEvent(GEMINI, "AfterTool", "gemini-after-tool", "post-tool-use", None, True,
              "what the call read and whether it failed (halt evidence)"),
    HookEvent(GEMINI, "BeforeAgent", "gemini-before-agent", "user-prompt-submit", BLOCK, False,
              "refuse a prompt to a stopped or held session"),
    HookEvent(GEMINI, "BeforeModel", "gemini-before-model", "model-request", DENY, False,
              "refuse a model request of a session a spend cap holds"),
    HookEvent(GEMINI, "AfterModel", "gemini-after-model", "model-response", None, False,
              "a model response's token usage, for the spend meter"),
    HookEvent(GEMINI, "SessionStart", "gemini-session-start", "session-start", None, False, "record the session"),
    HookEvent(GEMINI, "SessionEnd", "gemini-session-end", "session-end", None, False, "the session is gone"),
    HookEvent(CODEX, "PreToolUse", "codex-pre-tool-use", "pre-tool-use", DENY, True,
              "may this tool call run: stops, locks, halts, ask rules"),
    HookEvent(CODEX, "PostToolUse", "codex-post-tool-use", "post-tool-use", None, True,
              "what the call read and whether it failed (halt evidence)"),
    HookEvent(CODEX, "PermissionRequest", "codex-permission-request", "permission-request", PERMISSION, True,
              "answer an approval request from the console"),
    HookEvent(CODEX, "UserPromptSubmit", "codex-user-prompt-submit", "user-prompt-submit", BLOCK, False,
              "refuse a prompt to a stopped or held session"),
    HookEvent(CODEX, "SessionStart", "codex-session-start", "session-start", None, False, "record the session"),
    HookEvent(CODEX, "SessionEnd", "codex-session-end", "session-end", None, False, "the session is gone"),
    HookEvent(CODEX, "Stop", "codex-stop", "stop", None, False, "the reply-send guard; the session is idle"),
)
BY_VERB = {spec.verb: spec for spec in EVENTS}
# The verbs that judge events Claude Code does not have (Gemini CLI's model
# hooks): a spend cap's hold on a model request, and a response that only
# feeds the meter (leashd reads its usage; the hook answers nothing).
MODEL_REQUEST = "model-request"
MODEL_RESPONSE = "model-response"
OWN_VERBS = (MODEL_REQUEST, MODEL_RESPONSE)


def events_of(agent: str) -> tuple:
    """The table's rows for one agent CLI, in the table's order."""
    return tuple(spec for spec in EVENTS if spec.agent == agent)


def refusal_output(verb: str, message: str, *, form: str | None = None) -> tuple[str, str, int] | None:
    """(stdout, stderr, exit code) refusing the event of ``verb`` with
    ``message`` in its CLI's own form; None for an event that fails open (and
    for a verb the table does not know). ``form=END_TURN`` for Gemini CLI's
    BeforeTool: the call refused and the agent's loop ended
    (``{"continue": false}``, which Gemini CLI obeys before ``decision``)."""
    spec = BY_VERB.get(verb)
    if spec is None or spec.refusal is None:
        return None
    if form == END_TURN and spec.agent == GEMINI:
        return _json({"decision": "deny", "reason": message, "continue": False, "stopReason": message}), \
            message + "\n", 0
    if spec.agent == CODEX and spec.refusal == DENY:
        # Codex CLI adds ". Command: …" after the reason: one full stop, not two.
        return "", message.rstrip().rstrip(".") + "\n", 2
    if spec.agent != CLAUDE:
        if spec.refusal == PERMISSION:
            return _json({"hookSpecificOutput": {"hookEventName": spec.event,
                                                 "decision": {"behavior": "deny", "message": message}}}), \
                message + "\n", 0
        return "", message + "\n", 2
    if spec.refusal == DENY:
        return _json({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                             "permissionDecisionReason": message}}), message + "\n", 0
    if spec.refusal == BLOCK:
        return _json({"decision": "block", "reason": message}), message + "\n", 0
    if spec.refusal == END_TURN:
        return _json({"continue": False, "stopReason": message}), message + "\n", 0
    if spec.refusal == PERMISSION:
        return _json({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                             "decision": {"behavior": "deny", "message": message}}}), \
            message + "\n", 0
    return "", message + "\n", 2


def in_form_of(spec, out: str, err: str, code: int) -> tuple[str, str, int]:
    """Claude Code's answer to ``spec.judged_as`` as ``spec``'s CLI reads it:
    a refusal in the CLI's form (``core.wire.hookevents``), anything else as it is."""
    refusal = _refusal_reason(out, err, code)
    if refusal is None:
        return ("", err, code) if spec.agent == "gemini" else (out, err, code)
    return refusal_output(spec.verb, refusal) or (out, err, code)


def _refusal_reason(out: str, err: str, code: int) -> str | None:
    """The reason when Claude Code's answer ``out`` refuses, else None."""
    import json

    if code == 2:
        return err.strip() or "leash refused this"
    if not out.strip():
        return None
    try:
        answer = json.loads(out)
    except ValueError:
        return None
    if not isinstance(answer, dict):
        return None
    specific = _object(answer.get("hookSpecificOutput"))
    if specific.get("permissionDecision") == "deny":
        return str(specific.get("permissionDecisionReason") or "leash refused this call")
    decision = _object(specific.get("decision"))
    if decision.get("behavior") == "deny":
        return str(decision.get("message") or "leash refused this call")
    if answer.get("decision") == "block":
        return str(answer.get("reason") or "leash refused this prompt")
    if answer.get("continue") is False:
        return str(answer.get("stopReason") or "leash ended this turn")
    return None


def _object(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _json(value: dict) -> str:
    import json  # json imports re: only when a refusal is written

    return json.dumps(value) + "\n"
