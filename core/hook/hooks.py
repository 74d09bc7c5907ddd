"""Claude Code hook commands: ``leash hook pre-tool-use`` and ``leash hook stop``
(the reply-send guard, ``core.replyguard``).

Protocol: the hook reads one JSON object on stdin (``session_id``,
``hook_event_name``, ``tool_name``, ``tool_input``, ``cwd`` ...). To deny a tool
call, pre-tool-use prints::

    {"hookSpecificOutput": {"hookEventName": "PreToolUse",
     "permissionDecision": "deny", "permissionDecisionReason": "..."}}

and exits 0; to allow it prints nothing and exits 0.

Failure: stdin that is not a JSON object with a ``session_id`` gets one line on
stderr and no traceback. The hook then denies only where the policy fails
closed — the stop state cannot be read, the whole fleet is stopped (which
applies whoever is asking), or the input is over ``STDIN_LIMIT_BYTES`` (what
cannot be read cannot be judged allowed) — and otherwise exits 1, which Claude
Code shows as a non-blocking error. An unsafe state home (``UnsafeHome``)
denies on pre-tool-use and is one line on stderr, exit 1, for the other hooks.
Any unexpected error also ends as one line on stderr.

This module is on the hook path: it imports the standard library and the core
modules it needs, nothing else.
"""
from __future__ import annotations

import os
import sys

from leash.core.base.home import UnsafeHome
from leash.core.base.onereading import judging
from leash.core.wire.hookio import (  # noqa: F401
    STDIN_LIMIT_BYTES,
    STDIN_TIMEOUT_SECONDS,
    HookInputError,
    HookInputTooLarge,
    deny_output,
    emit,
    failed_closed,
    parse_payload,
    read_stdin,
)

TYPE_CHECKING = False  # for the type checker only: the hook path does not import typing
if TYPE_CHECKING:
    from collections.abc import Mapping

    from leash.core.store.protocols import Backend


def pre_tool_use(raw: bytes, *, home, env: Mapping[str, str] | None = None, now: float | None = None,
                 input_error: HookInputError | None = None, backend: Backend | None = None,
                 parsed: dict | None = None, hold: bool = False):
    """(stdout, stderr, exit code) of ``leash hook pre-tool-use`` for ``raw``
    stdin (``parsed``: its JSON object, when the caller has parsed it already).
    A call an ``[approvals] ask`` rule matches is held: with ``hold`` (leashd)
    the answer is a ``core.approvals.hold.Held`` to wait on, without it a deny."""
    from leash.core.base.home import ensure_home
    from leash.core.hook.gate import Gate

    env = os.environ if env is None else env
    home = ensure_home(home)
    gate = Gate(home, backend=backend)
    try:
        if input_error is not None:
            raise input_error
        payload = parse_payload(raw) if parsed is None else _with_session(parsed)
    except HookInputError as exc:
        if isinstance(exc, HookInputTooLarge):
            reason = f"leash: {exc}: denied unread (a tool call leash cannot read is not allowed)"
            return deny_output(reason) + "\n", f"leash: {exc}\n", 0
        # No session to judge; only the rules that apply to everyone can deny.
        verdict = gate._stop_verdict([])
        if verdict is not None:
            return deny_output(verdict.reason) + "\n", f"leash: {exc}\n", 0
        return "", f"leash: {exc}\n", 1

    session_id = payload["session_id"]
    tool = payload.get("tool_name") if isinstance(payload.get("tool_name"), str) else None
    tool_input = payload.get("tool_input")
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
    warning = ""
    seen = None
    try:
        seen = _observe(gate.sessions, payload, tool=tool, cwd=cwd, env=env, now=now)
    except OSError as exc:  # registering is best effort; judging is not
        warning = f"leash: could not record session ({exc.strerror})\n"
    verdict = gate.check(session_id, tool, tool_input, cwd=cwd, now=now, env=env, session=seen)
    if not verdict.allow:
        return deny_output(verdict.reason) + "\n", warning, 0
    held = _held_by_ask_rule(gate, session_id, tool, tool_input, cwd=cwd, env=env, hold=hold, now=now)
    if held is None:
        return "", warning, 0
    return held if hold else (held, warning, 0)


def _held_by_ask_rule(gate, session_id: str, tool: str | None, tool_input: object, *, cwd: str | None, env,
                      hold: bool, now: float | None):
    """An ``[approvals] ask`` rule's hold on the call (the floor no permission
    mode lifts): through leashd the ``Held`` approval, without it the deny's
    stdout line; None when no rule matches."""
    settings = gate.config()["approvals"]
    if gate.config_problem is not None and tool:
        # The ask rules cannot be read: the floor they set is unknown, so every
        # call needs a human until config.toml is mended (never a looser rule).
        if not hold:  # the file is what must be mended, whether or not a leashd runs to hold the call
            from leash.core.hook.approvalhold import CONFIG_BROKEN

            return deny_output(CONFIG_BROKEN.format(problem=gate.config_problem)) + "\n"
        rule = f"config.toml cannot be used ({gate.config_problem}): every call needs an operator; leash doctor"
    elif not settings["ask"]:
        return None
    else:
        rule = ""
    from leash.core.hook import approvalhold as holding

    rule = rule or holding.matching_ask_rule(settings, tool, tool_input, cwd=cwd, env=env, home=gate.home)
    if not rule:
        return None
    if not hold:
        return deny_output(holding.NEEDS_DAEMON.format(rule=rule)) + "\n"
    return holding.hold(gate.backend, holding.PRE_TOOL_EVENT, session_id, tool, tool_input, kind="ask", rule=rule,
                        settings=settings, now=now)


def _observe(registry, payload: dict, *, tool: str | None, cwd: str | None, env, now: float | None) -> dict:
    """Record the session's call: working, with its tmux pane and session, its
    agent process, its CLI and lineage; the record as stored now."""
    from leash.core.hook.whereabouts import whereabouts
    from leash.core.state.sessions import STATUS_WORKING
    from leash.core.wire.agentpayloads import cli_of

    session_id = payload["session_id"]
    stored = registry.get(session_id, now=now)
    known = stored.as_dict() if stored is not None else {}
    where = whereabouts(registry, env, known)  # the process kept so `leash stop --interrupt` can reach it
    agent = payload.get("agent_type") if isinstance(payload.get("agent_type"), str) else ""
    transcript = payload.get("transcript_path")
    transcript = transcript if isinstance(transcript, str) else ""
    return registry.observe(session_id, now=now, tool=tool, status=STATUS_WORKING, tmux_pane=where.pane,
                            tmux_session=where.tmux_session, tmux_session_id=where.tmux_session_id,
                            entity=env.get("LEASH_ENTITY", ""), cwd=cwd, agent=agent, transcript_path=transcript,
                            known=known, cli=cli_of(payload), agent_process=where.process,
                            **_lineage(registry, session_id, transcript, known, env, now=now))


def _lineage(registry, session_id: str, transcript: str, known: dict, env, *, now: float | None) -> dict:
    """Which session this one continues, until that is settled (``core.lineage``):
    a fork's first call is held by a stop or halt on its parent."""
    if known.get("parent") or known.get("parent_by"):
        return {}  # settled: the common call imports nothing more
    from leash.core.state.lineage import settle

    return settle(registry, session_id, transcript, known, env, now=now)


def _with_session(payload: dict) -> dict:
    """``parse_payload``'s check of an object parsed elsewhere."""
    session_id = payload.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        raise HookInputError("hook input has no session_id")
    return payload


def post_tool_use(raw: bytes, *, home, env: Mapping[str, str] | None = None, now: float | None = None,
                  input_error: HookInputError | None = None, backend: Backend | None = None) -> tuple[str, str, int]:
    """(stdout, stderr, exit code) of ``leash hook post-tool-use``: record what
    the session read and which commands failed, for the execution conditions.
    Registered for both PostToolUse and PostToolUseFailure. Prints nothing;
    a problem is one line on stderr and exit 1 (non-blocking)."""
    from leash.core.base.home import ensure_home

    try:
        if input_error is not None:
            raise input_error
        payload = parse_payload(raw)
    except HookInputError as exc:
        return "", f"leash: {exc}\n", 1
    from leash.core.policy.halts.hookcontext import outcome

    if backend is None:
        from leash.core.store.files import FileBackend

        backend = FileBackend(ensure_home(home))
    session_id = payload["session_id"]
    known, task, error = outcome(payload)
    backend.halts.record_reads(session_id, known, now=now)
    if task is not None:
        backend.halts.record_attempt(session_id, task, error=error, now=now)
    from leash.core.state.sessions import STATUS_THINKING  # between tools within a turn

    return "", _note_status(backend, session_id, STATUS_THINKING, now=now), 0


def _note_status(backend: Backend, session_id: str, status: str, *, now: float | None = None) -> str:
    """Record what the session is doing now (best effort: a warning, never a block)."""
    try:
        backend.sessions.observe(session_id, now=now, status=status)
    except OSError as exc:
        return f"leash: could not record session ({exc.strerror})\n"
    return ""


def _lifecycle_handlers(event: str) -> dict:
    """The lifecycle handlers, imported only for their events (or to name them)."""
    if event in ("pre-tool-use", "post-tool-use", "post-tool-use-failure", "stop"):
        return {}
    from leash.core.hook.lifecycle import HANDLERS

    return HANDLERS


def answer(event: str, raw: bytes, *, home=None, env=None, input_error: HookInputError | None = None,
           now: float | None = None, backend: Backend | None = None, parsed: dict | None = None, hold: bool = False):
    """(stdout, stderr, exit code) of ``leash hook EVENT`` for stdin ``raw``:
    what the in-process hook prints and what leashd replies to a thin client
    (which keeps one ``backend`` for every call; ``parsed``: ``raw``'s JSON
    object when leashd has parsed it already). With ``hold`` (leashd, which
    can wait for an operator) a call held as an approval is answered by a
    ``core.approvals.hold.Held`` instead. Never raises."""
    def stop_hook(raw, **kwargs):
        from leash.core.hook.replyguard import stop_hook as reply_guard

        return reply_guard(raw, **kwargs)

    from leash.core.wire.hookevents import BY_VERB, CLAUDE

    spec = BY_VERB.get(event)
    if spec is not None and spec.agent != CLAUDE:
        return _answer_for(spec, raw, home=home, env=env, input_error=input_error, now=now, backend=backend,
                           parsed=parsed, hold=hold)
    handlers = {"pre-tool-use": pre_tool_use, "post-tool-use": post_tool_use, "post-tool-use-failure": post_tool_use,
                "stop": stop_hook, **_lifecycle_handlers(event)}
    if event not in handlers:
        # Exit 1, never 2: Claude Code reads 2 as "block" on most events.
        return "", f"leash: unknown hook {event!r} (known: {', '.join(sorted(handlers))})\n", 1
    try:
        extra: dict = {"parsed": parsed} if parsed is not None and event == "pre-tool-use" else {}
        if hold and event in ("pre-tool-use", "permission-request"):
            extra["hold"] = True
        with judging():  # one reading of the home's safety and the log's end (core.base.onereading)
            said = handlers[event](raw, home=home, input_error=input_error, env=env, now=now, backend=backend,
                                   **extra)
            return _noting_config(said, home)
    except UnsafeHome as exc:
        message = f"leash: {exc}"
        if event != "pre-tool-use":
            return "", message + "\n", 1
        # Whoever can write the home can lift any stop: nothing is allowed until it is safe.
        return deny_output(f"{message} (every tool call is denied until it is safe)") + "\n", message + "\n", 0
    except Exception as exc:
        # We could not establish that the call is allowed: the gating events
        # fail closed, as for an unreadable stop state; the others fail open.
        return failed_closed(event,
                             f"leash: hook {event} failed ({exc.__class__.__name__}: {exc}) — run `leash doctor`")


def _answer_for(spec, raw: bytes, *, parsed: dict | None, **kwargs):
    """Another CLI's event: its payload read into Claude Code's shape, judged as
    ``spec.judged_as``, answered in the CLI's own form."""
    from leash.core.wire.agentpayloads import claude_shaped
    from leash.core.wire.hookevents import MODEL_RESPONSE

    if spec.judged_as == MODEL_RESPONSE and kwargs["input_error"] is None:
        return "", "", 0  # every response chunk: nothing to judge (leashd has metered it), nothing to parse
    if kwargs["input_error"] is None:
        try:
            payload = parse_payload(raw) if parsed is None else _with_session(parsed)
        except HookInputError as exc:
            kwargs["input_error"] = exc
        else:
            import json

            parsed = claude_shaped(spec, payload)
            raw = json.dumps(parsed).encode()
    answered = answer(spec.judged_as, raw, parsed=parsed, **kwargs)
    if not isinstance(answered, tuple):
        answered.agent_event = spec.verb  # held: the answer, when it comes, in the CLI's form
        return answered
    from leash.core.wire.hookevents import END_TURN, GEMINI, in_form_of, refusal_output

    out, err, code = in_form_of(spec, *answered)
    if spec.agent == GEMINI and spec.judged_as == "pre-tool-use" and code == 2 and parsed is not None:
        # Gemini CLI has no PostToolBatch, but its BeforeTool may end the loop
        # itself: asked the same question, a stop or a blocking halt ends it.
        ended, _, _ = answer("post-tool-batch", raw, parsed=None, **{**kwargs, "hold": False})
        if '"continue": false' in ended:
            return refusal_output(spec.verb, err.strip(), form=END_TURN) or (out, err, code)
    return out, err, code


def _noting_config(said, home):
    """The hook's answer with one stderr line when config.toml is broken
    (``core.base.config.config_problem``, parsed once per process): the file
    and line, and that every rule is kept at its strictest meanwhile."""
    if not isinstance(said, tuple):
        return said  # an approval to wait on (leashd): it says nothing on stderr
    from leash.core.base.config import config_problem
    from leash.core.base.home import resolve_home

    problem = config_problem(resolve_home(home))
    if problem is None:
        return said
    out, err, code = said
    note = (f"leash: config_broken: {problem} (every rule is kept at its strictest and every tool call needs "
            "an operator until it is mended; leash doctor)\n")
    return out, note + err, code


def run(event: str, *, home=None, stdin=None, stdout=None, stderr=None, raw: bytes | None = None,
        input_error: HookInputError | None = None) -> int:
    """Entry point of ``leash hook EVENT`` in-process (stdin read here unless
    ``raw`` was read already); never raises, never prints a traceback."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    if raw is None:
        raw = b""
        try:
            raw = read_stdin(stdin)
        except HookInputError as exc:
            input_error = exc
    out, err, code = answer(event, raw, home=home, input_error=input_error)
    return emit(out, err, code, stdout=stdout, stderr=stderr)
