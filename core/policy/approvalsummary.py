"""What an operator reads of a call waiting for an answer.

``one_line(tool, tool_input)``: the tool and what it would do, on one line
of at most ``ONE_LINE_LIMIT`` characters — for the ack log, the approvals
list and notifications. ``detail(tool, tool_input)``: the whole of it for the
console's detail line and ``leash approvals list --json``: a Bash command as
written, an Edit or MultiEdit as a unified diff of what it replaces, a Write
as the lines it would write, anything else as its input's JSON — at most
``DETAIL_LIMIT`` characters, cut with a mark.

Both are masked (``core.halts.secrets.mask``) before anything else sees them,
and ``one_line`` is escaped (``core.text.printable``): the text is the agent's.

Failure: never raises; an input of an unexpected shape is shown as JSON.
"""
from __future__ import annotations

import difflib
import json

ONE_LINE_LIMIT = 300
DETAIL_LIMIT = 20000
CUT_MARK = "\n… (cut)"


def _mask(text: str) -> str:
    from leash.core.base.secrets import mask

    return mask(text)


def _json(value: object) -> str:
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _what(tool: str, tool_input: dict) -> str:
    if tool == "Bash" and isinstance(tool_input.get("command"), str):
        return tool_input["command"]
    for key in ("file_path", "notebook_path", "path", "url"):
        if isinstance(tool_input.get(key), str):
            return tool_input[key]
    return _json(tool_input)


def one_line(tool: str | None, tool_input: object) -> str:
    from leash.core.base.text import printable

    given = tool_input if isinstance(tool_input, dict) else {}
    text = f"{tool or '?'}: {' '.join(_what(tool or '', given).split())}"
    return printable(_mask(text), limit=ONE_LINE_LIMIT)


def _diff(path: str, old: str, new: str) -> str:
    # git's a/ and b/ for a relative path; an absolute one is shown as it is.
    before, after = (path, path) if path.startswith("/") else (f"a/{path}", f"b/{path}")
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 fromfile=before, tofile=after, n=2)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _edits(tool_input: dict) -> list[dict]:
    if isinstance(tool_input.get("edits"), list):
        return [edit for edit in tool_input["edits"] if isinstance(edit, dict)]
    return [tool_input]


def detail(tool: str | None, tool_input: object) -> str:
    given = tool_input if isinstance(tool_input, dict) else {}
    path = str(given.get("file_path") or given.get("notebook_path") or "")
    if tool in ("Edit", "MultiEdit"):
        text = "".join(_diff(path, str(edit.get("old_string", "")), str(edit.get("new_string", "")))
                       for edit in _edits(given))
    elif tool == "Write" and isinstance(given.get("content"), str):
        text = _diff(path, "", given["content"])
    else:
        text = _what(tool or "", given)
    text = _mask(text)
    return text if len(text) <= DETAIL_LIMIT else text[:DETAIL_LIMIT - len(CUT_MARK)] + CUT_MARK


def input_digest(tool: str | None, tool_input: object) -> str:
    """SHA-256 (hex) of the call as the agent made it: its tool and input,
    canonical JSON. An answer from afar is bound to it (``core.notify.answers``)."""
    import hashlib
    import json

    canonical = json.dumps({"tool": str(tool or ""), "input": tool_input}, sort_keys=True, separators=(",", ":"),
                           ensure_ascii=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()

