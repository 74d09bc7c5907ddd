"""Which session a forked or resumed Claude Code session continues.

``claude --resume P --fork-session`` starts a session with a new id, and
Claude Code (2.1.197, 2.1.332) rewrites ``sessionId`` on every line it copies
into the fork's transcript, so the transcript never names P. Two signals name
it, and each counts only when it names a session leash's own records know
(``sessions.json``): nothing read from a transcript or a command line is
trusted beyond being matched against them.

* The command line: the Claude Code process behind the hook call
  (``core.agentproc``: the nearest ancestor of the hook process past the
  shells and ``timeout``, when it is Claude Code and the hook's user's) names
  the session it resumes (``--resume ID``, ``-r ID``). This holds from the fork's
  very first hook, which is what a stop or halt on P needs: Claude Code writes
  nothing of P into the fork's transcript until its first tool call is done.
* Shared messages: a fork's transcript begins with copies of its parent's
  messages, ``uuid`` kept. The known session in the same project directory of
  ``~/.claude/projects/`` whose transcript holds the most of them is the
  parent (ties go to the session that is not a descendant of another, then to
  the least recently seen: a fork is younger than what it copies). This links
  a fork whose command line names no session (``--continue --fork-session``,
  for one) from its first call after the copies are written, and a session
  leash first meets when it is resumed later.

``settle`` answers once per session: a parent, or "none" once the session's
transcript shows messages and no known session shares them. Until then (no
transcript yet, or no message in it) it answers nothing and is asked again at
the session's next hook.

Bounds: ``HEAD_BYTES`` of a transcript are read (the session's own and each
candidate's), at most ``MAX_UUIDS`` message ids are compared, and at most
``MAX_CANDIDATES`` transcripts are opened (the most recently seen sessions
first); the walk up to Claude Code is ``core.agentproc``'s (``MAX_ANCESTRY``
processes). A session is settled by at most one search of the transcripts.

Failure: a transcript or ``/proc`` entry that cannot be read or parsed is no
evidence: the search answers "" and never raises.

On the hook path: the standard library and ``core.agentproc`` only.
"""
from __future__ import annotations

import json
import os

HEAD_BYTES = 65536  # the copies start at the top of a fork's transcript
MAX_UUIDS = 64
MAX_CANDIDATES = 32
MAX_SESSION_ID_CHARS = 128
RESUME_OPTIONS = ("--resume", "-r")
# How a session's parent was settled (the record's ``parent_by``).
BY_COMMAND_LINE = "command line"
BY_TRANSCRIPT = "transcript"
BY_PANE = "pane"
BY_NONE = "none"


def settled(record) -> bool:
    """True when the session's lineage needs no more looking into."""
    return bool(record.get("parent") or record.get("parent_by"))


def settle(sessions, session_id: str, transcript_path: str, record, env, *,
           now: float | None = None) -> dict[str, str]:
    """The fields to record for the session's lineage: ``{"parent", "parent_by"}``
    once a parent is found, ``{"parent_by": "none"}`` once the transcript shows
    there is none, ``{}`` when settled already or when it is too early to say.
    ``sessions``: the session store; ``record``: the session's record as read."""
    if settled(record):
        return {}
    named = resumed_session(claude_command_line(env))
    if named and named != session_id and sessions.get(named, now=now) is not None:
        return {"parent": named, "parent_by": BY_COMMAND_LINE}
    if not transcript_path:
        return {"parent_by": BY_NONE}  # no transcript will ever say more
    uuids = message_uuids(_head(transcript_path))
    if not uuids:
        return {}  # Claude Code has not written a message yet: ask at the next hook
    parent = sharing_parent(sessions, session_id, os.path.dirname(transcript_path), uuids, now=now)
    return {"parent": parent, "parent_by": BY_TRANSCRIPT} if parent else {"parent_by": BY_NONE}


# ------------------------------------------------------------------ command line
def claude_command_line(env) -> list[str]:
    """The command line of the Claude Code process behind this hook call
    (``core.agentproc``); [] when there is none or it cannot be read."""
    from leash.core.base.agentproc import argv_of, hook_agent

    process = hook_agent(env)
    return argv_of(process["pid"]) if process is not None else []


def resumed_session(argv: list[str]) -> str:
    """The session id a Claude Code command line resumes ("" when none)."""
    for index, word in enumerate(argv):
        if word in RESUME_OPTIONS and index + 1 < len(argv):
            return argv[index + 1]
        if word.startswith("--resume="):
            return word.partition("=")[2]
    return ""


# ------------------------------------------------------------------ transcripts
def message_uuids(head: bytes) -> list[str]:
    """The ``uuid`` of each message line in a transcript's head, in order (at
    most ``MAX_UUIDS``); a torn last line is left out."""
    found: list[str] = []
    for raw in head.split(b"\n")[:-1]:
        if b'"uuid"' not in raw:
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        uuid = line.get("uuid") if isinstance(line, dict) else None
        if isinstance(uuid, str) and uuid and uuid not in found:
            found.append(uuid)
            if len(found) >= MAX_UUIDS:
                break
    return found


def sharing_parent(sessions, session_id: str, directory: str, uuids: list[str], *, now: float | None = None) -> str:
    """The known session, beside this one in ``directory``, whose transcript
    holds the most of ``uuids`` ("" when none holds any)."""
    known = {sid: _stored(record) for sid, record in sessions.all(now=now).items()}
    order = sorted(((str(record.get("last_seen") or ""), sid) for sid, record in known.items()
                    if sid != session_id and _plain_name(sid)), reverse=True)[:MAX_CANDIDATES]
    scores: dict[str, int] = {}
    for _, candidate in order:
        head = _head(os.path.join(directory, candidate + ".jsonl"))
        score = sum(1 for uuid in uuids if uuid.encode() in head) if head else 0
        if score and session_id not in sessions.lineage(candidate, now=now):  # never its own descendant
            scores[candidate] = score
    if not scores:
        return ""
    best = max(scores.values())
    tied = [candidate for candidate, score in scores.items() if score == best]
    return _eldest(sessions, tied, known, now=now)


def _eldest(sessions, tied: list[str], known: dict, *, now: float | None) -> str:
    """Of sessions holding the same messages, one that descends from none of
    the others (it has them first hand), then the least recently seen."""
    roots = [c for c in tied if not any(other in sessions.lineage(c, now=now) for other in tied if other != c)]
    return min(roots or tied, key=lambda sid: (str(known[sid].get("last_seen") or ""), sid))


def _stored(record) -> dict:
    """A session's stored fields: a registry's dict, or a session store's record (its ``as_dict``)."""
    return record if isinstance(record, dict) else record.as_dict()


def _plain_name(session_id: str) -> bool:
    """A session id that is a plain file name (it names ``<id>.jsonl``)."""
    return 0 < len(session_id) <= MAX_SESSION_ID_CHARS and os.sep not in session_id and \
        not session_id.startswith(".") and "\0" not in session_id


def _head(path: str) -> bytes:
    return _read(path, HEAD_BYTES)


def _read(path: str, limit: int) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(limit)
    except (OSError, ValueError):
        return b""
