"""Health-check messages and epitaphs: gastown's texts, word for word.

The message is typed into a pane that may hold a shell as easily as an agent,
so it is one printable line, and nothing in it is shell syntax:

* it has no newline (typed literally, a newline is Enter) and no control
  character (``\x03`` would be Ctrl-C): the seed's four lines are joined by
  `` -- `` and each field's whitespace becomes a space, other control and
  format characters (escape sequences, bidi overrides) are dropped;
* each field (target, reason, requester) keeps only letters, digits, spaces
  and ``- _ . , : / @ + = % #``; every other character becomes ``_`` — so
  ``$(...)``, backquotes, ``;``, ``|``, ``&``, redirections, quotes and
  backslashes never reach a shell's prompt line, whatever the shell (a
  leading ``#`` would not do: zsh and csh do not read comments at an
  interactive prompt, and an agent such as Claude Code reads ``#`` as "add to
  memory");
* each field is cut to ``MESSAGE_FIELD_LIMITS`` characters (``...`` marks a cut).

A shell that receives it runs ``[DOG]`` (not found) with inert words. The
stored warrant keeps its fields as filed; only the typed text is cleaned.

The message contains the word ALIVE (it asks for it), so ``answered`` never
looks at the message's own lines: only a line that is the token ALIVE on its
own — ``ALIVE``, ``ALIVE.``, ``> ALIVE`` — written after the message counts as
an answer. With ``pardon_on_activity`` any new line that is not an echo of the
message counts too (gastown's "implicit activity").
"""
from __future__ import annotations

import re

ALIVE_ALONE = re.compile(r"^\W*ALIVE\W*$")
MESSAGE_FIELD_LIMITS = {"target": 128, "reason": 200, "requester": 80, "warrant": 64}
FIELD_PUNCTUATION = frozenset(" -_.,:/@+=%#")
FIELD_REPLACEMENT = "_"
LINE_JOIN = " -- "
CUT_MARK = "..."


def health_check(target: str, timeout: float, reason: str, requester: str, attempt: int, attempts: int,
                 warrant_id: str = "") -> str:
    """The seed's health check as one line a shell cannot run (module
    docstring). With ``warrant_id`` the line names its warrant, so the echo of
    this warrant's check is never confused with an earlier warrant's check
    still on the screen (and the answer that followed it)."""
    target, reason, requester, warrant = (
        message_field(value, MESSAGE_FIELD_LIMITS[name]) for name, value in
        (("target", target), ("reason", reason), ("requester", requester), ("warrant", warrant_id)))
    return LINE_JOIN.join([
        f"[DOG] HEALTH CHECK: Session {target}, respond ALIVE within {timeout:g}s or face termination.",
        f"Warrant reason: {reason}",
        f"Filed by: {requester}"] + ([f"Warrant: {warrant}"] if warrant else []) + [
        f"Attempt: {attempt}/{attempts}"])


def message_field(value, limit: int) -> str:
    """``value`` as inert text on one line, at most ``limit`` characters."""
    kept = []
    for char in str(value or ""):
        if char.isspace():
            kept.append(" ")
        elif not char.isprintable():
            continue  # control and format characters: nothing of them is typed
        elif char.isalnum() or char in FIELD_PUNCTUATION:
            kept.append(char)
        else:
            kept.append(FIELD_REPLACEMENT)
    text = " ".join("".join(kept).split())
    if len(text) > limit:
        text = text[:max(0, limit - len(CUT_MARK))].rstrip() + CUT_MARK
    return text


def _without_echo(line: str, message_lines: list[str]) -> str | None:
    """The part of a pane line that is not an echo of the message; None when
    the whole line is (a piece of) the message."""
    text = line.strip()
    rest = text
    for sent in sorted(message_lines, key=len, reverse=True):
        rest = rest.replace(sent, " ")
    if rest != text:  # the line held an echoed message line; judge what is left
        return rest.strip()
    if len(text) >= 6 and any(text in sent for sent in message_lines):
        return None  # a fragment of a message line
    return text


def answered(lines: list[str], message: str, *, pardon_on_activity: bool = False) -> str | None:
    """"alive", "activity" or None for what the pane showed after the message.

    An echoed message line is cut out of the pane line it appears in, so an
    answer printed on the same line as the echo still counts, and the echo's
    own "respond ALIVE within" never does."""
    sent = [m.strip() for m in message.splitlines() if m.strip()]
    activity = False
    for line in lines:
        rest = _without_echo(line, sent)
        if not rest:
            continue
        if ALIVE_ALONE.match(rest):
            return "alive"
        activity = True
    return "activity" if activity and pardon_on_activity else None


def epitaph(outcome: str, state: dict, *, at: str, timeouts: list[float], by: str | None = None) -> str:
    warrant = state.get("warrant") or {}
    head = (f"EPITAPH: {warrant.get('target')}\n"
            f"Verdict: {outcome.upper()}\n"
            f"Warrant: {warrant.get('id')}\n"
            f"Reason: {warrant.get('reason')}\n"
            f"Filed by: {warrant.get('requester')}\n")
    attempt = state.get("attempt") or 0
    if outcome == "pardoned":
        if by:
            return head + f"Pardoned by: {by} (attempt {attempt})\nPardoned at: {at}"
        return head + f"Response: Attempt {attempt}, after {state.get('wait_seconds', 0):g}s\nPardoned at: {at}"
    if outcome == "executed":
        parts = " + ".join(f"{t:g}s" for t in timeouts)
        return head + f"Attempts: {len(timeouts)} ({parts} = {sum(timeouts):g}s total)\nExecuted at: {at}"
    if outcome == "already_dead":
        return head + "Note: Target session not found at warrant processing"
    if outcome == "undelivered":
        why = (state.get("delivery") or {}).get("why", "")
        return head + f"Note: The health check could not be delivered ({why}); not killed\nGiven up at: {at}"
    if outcome == "blocked_hands_off":
        return head + f"Note: Target is hands-off ({state.get('blocked_by', '')}); not killed\nBlocked at: {at}"
    if state.get("error"):
        return head + f"Note: The dog could not work the target ({state['error']})\nFailed at: {at}"
    return head + f"Note: Kill did not take: the session survived\nFailed at: {at}"
