"""The hook side of approvals: holding a call for an operator, and what the
hook answers once the approval is closed.

Two events hold a call, and only through leashd (``hold=True`` from
``core.daemon.hookverb``), which waits for the answer
(``core.daemon.approvaldesk``):

* ``permission-request`` (Claude Code's PermissionRequest: it would show its
  permission dialog) of a session nothing holds: an approval of kind
  "permission". Without leashd the hook answers nothing and Claude Code shows
  its own dialog, as before;
* ``pre-tool-use`` of a call an ``[approvals] ask`` rule matches
  (``core.approvals.rules``), whatever the permission mode: kind "ask".
  Without leashd such a call is denied, saying that an operator's approval
  needs ``leash daemon`` (fail closed).

The answers: allowed is ``behavior: "allow"`` (PermissionRequest) or
``permissionDecision: "allow"`` (PreToolUse); denied is ``"deny"`` with the
operator's message; a timeout denies, saying so, unless ``[approvals]
on_timeout = "ask"`` on a PermissionRequest (then nothing: Claude Code's own
dialog shows). A withdrawn approval has nobody to answer.

What Claude Code does with PermissionRequest, found with the real binaries
(tests/e2e/test_approvals.py, test_approvals_tui.py), headless (``claude -p --permission-mode
default``, no allow rule, a Bash call that needs permission): 2.1.332 runs
the hook, holds the call while it waits, runs the tool on ``allow`` and gives
the model a ``deny``'s message as the tool's result; the pinned 2.1.197 never
runs the hook headless and refuses the call itself ("This command requires
approval"), so no approval is opened there. In an interactive session (both
versions) the hook and the on-screen dialog race: the first answer wins.
Escape in the pane ends the hook call (Claude Code kills the hook process),
which leashd sees as its connection closing; "Yes" in the pane does not (the
hook runs on until its timeout): leashd sees the call go on (its PostToolUse,
the batch's end, the turn's end) and withdraws the approval then, ``via``
"pane". An ask rule holds a call at PreToolUse in every mode and version,
``bypassPermissions`` included.

Failure: this module never raises on a call; an approval that cannot be opened
(the store unreadable) is the hook's failure, which the gating events answer
by denying (``core.hooks.answer``).
"""
from __future__ import annotations

import json

from leash.core.wire.hookio import deny_output

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.protocols import Backend
    from leash.core.store.records import ApprovalRecord


PERMISSION_EVENT = "permission-request"
PRE_TOOL_EVENT = "pre-tool-use"
HOLDING_EVENTS = (PRE_TOOL_EVENT, PERMISSION_EVENT)
NEEDS_DAEMON = ("leash: this call needs an operator's approval ({rule}, an [approvals] ask rule) and only `leash "
                "daemon` can hold a call until an operator answers: start it; until then such calls are denied")
CONFIG_BROKEN = ("leash: this call is denied because config.toml cannot be used: {problem}. Until the operator "
                 "mends that line (`leash doctor` shows it), every tool call needs an operator's approval; ask "
                 "them to fix config.toml")

UNREAD_NOTE = "held unread"  # a call held because leash could not read whether the rule matches it

_parsed_rules: dict[tuple, list] = {}  # the configured texts -> their rules, read once per process


def ask_rules(texts: list) -> list:
    key = tuple(texts)
    found = _parsed_rules.get(key)
    if found is None:
        from leash.core.base.askrules import parse_rules

        found = _parsed_rules.setdefault(key, parse_rules(list(texts)))
    return found


def matching_ask_rule(settings: dict, tool: str | None, tool_input: object, *, cwd: str | None, env,
                      home: str | None = None) -> str:
    """The text of the first ``[approvals] ask`` rule the call matches ("" when
    none); a call held for what leash could not read of it says so after the
    rule: ``Bash(git push*), held unread: its program is computed (...)``."""
    texts = settings.get("ask") or []
    if not texts or not tool:
        return ""
    from leash.core.base.askrules import holding_rule
    from leash.core.base.project import project_root
    from leash.core.policy.toolcall import read_tool_call

    call = read_tool_call(tool, tool_input, cwd=cwd, env=env, home=home)
    found = holding_rule(ask_rules(texts), call, tool, tool_input, root=project_root(cwd, env))
    if found is None:
        return ""
    rule, why = found
    return f"{rule.text}, {UNREAD_NOTE}: {why}" if why else rule.text


class Held:
    """A call held as an approval: leashd waits for it to close, then
    answers the hook with ``reply(record)``."""

    __slots__ = ("approval", "event", "on_timeout", "deadline", "opened", "agent_event")

    def __init__(self, approval, event: str, *, on_timeout: str, opened: float):
        """``opened``: ``time.monotonic()`` before the approval was opened."""
        from leash.core.base.clock import parse_iso

        self.approval, self.event, self.on_timeout = approval, event, on_timeout
        self.deadline = parse_iso(approval.deadline)
        self.opened = opened
        self.agent_event: str | None = None  # another CLI's verb: answers go out in its form

    def reply(self, record: ApprovalRecord) -> tuple[str, str, int]:
        """(stdout, stderr, exit code) for the hook, from the closed ``record``."""
        return self._in_form(self._reply(record))

    def _reply(self, record: ApprovalRecord) -> tuple[str, str, int]:
        status = record.status
        if status == "allowed":
            return _allow(self.event, record), "", 0
        if status == "timeout" and self.on_timeout == "ask" and self.event == PERMISSION_EVENT:
            return "", "", 0  # Claude Code's own dialog decides
        if status == "withdrawn" and self.event == PERMISSION_EVENT:
            return "", "", 0  # the dialog was answered (or will be): leash has nothing to add
        return _deny(self.event, _deny_reason(record)), "", 0

    def deny(self, reason: str) -> tuple[str, str, int]:
        """(stdout, stderr, exit code) refusing the call with ``reason``."""
        return self._in_form((_deny(self.event, reason), "", 0))

    def _in_form(self, answer: tuple[str, str, int]) -> tuple[str, str, int]:
        if self.agent_event is None:
            return answer
        from leash.core.wire.hookevents import BY_VERB, in_form_of

        return in_form_of(BY_VERB[self.agent_event], *answer)

    def status_after(self, record: ApprovalRecord) -> str:
        """What the session does once ``record`` closed."""
        from leash.core.state.sessions import STATUS_THINKING, STATUS_WAITING_APPROVAL, STATUS_WORKING

        status = record.status
        if status == "allowed":
            return STATUS_WORKING
        if status == "timeout" and self.on_timeout == "ask" and self.event == PERMISSION_EVENT:
            return STATUS_WAITING_APPROVAL  # Claude Code's own dialog now waits for the human
        return STATUS_THINKING


def hold(backend: Backend, event: str, session_id: str, tool: str | None, tool_input: object, *, kind: str, rule: str,
         settings: dict, now: float | None = None) -> Held:
    """Open the approval (the session "waiting for approval") and say how to answer once it closes."""
    import time

    from leash.core.state.sessions import STATUS_WAITING_APPROVAL

    opened = time.monotonic()
    try:  # first: whoever sees the approval sees the session waiting for it
        backend.sessions.observe(session_id, now=now, status=STATUS_WAITING_APPROVAL)
    except OSError:
        pass  # what it does is shown best effort; the approval holds either way
    approval = backend.approvals.request(session_id, str(tool or ""), tool_input, kind=kind, rule=rule,
                                         timeout_s=settings["timeout_s"], now=now)
    return Held(approval, event, on_timeout=settings["on_timeout"], opened=opened)


def _allow(event: str, record: ApprovalRecord) -> str:
    reason = f"leash: allowed by {record.by} via {record.via}" + (f": {record.note}" if record.note else "")
    if event == PERMISSION_EVENT:
        output = {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}
    else:
        output = {"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": reason}
    return json.dumps({"hookSpecificOutput": output}) + "\n"


def _deny(event: str, reason: str) -> str:
    if event == PERMISSION_EVENT:
        decision = {"behavior": "deny", "message": reason, "interrupt": False}
        return json.dumps({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}) + "\n"
    return deny_output(reason) + "\n"


def _deny_reason(record: ApprovalRecord) -> str:
    summary = record.summary or "this call"
    if record.status == "denied":
        said = f": {record.message}" if record.message else ""
        return f"leash: an operator ({record.by}) denied {summary}{said}"
    if record.status == "timeout":
        return f"leash: no operator answered the approval of {summary} in time (approval {record.id}): denied"
    return f"leash: the approval of {summary} was {record.status}: denied"
