"""From a Claude Code tool call to the halt engine's check input, and back.

``check_input`` builds the seed's ``CheckHaltConditionsInput`` for one tool call:

* Bash -> ``commands``; its task is the command itself (whitespace folded), so
  three strikes count failures of the same command;
* Edit / Write / MultiEdit / NotebookEdit -> the file to change: an existing
  file goes to ``target_files``, a new one to ``new_files``; the replaced and
  written text go to ``edits`` (for breaking changes and secrets);
* apply_patch -> every file it changes, as for an Edit, and the patch itself
  to ``patch`` (the tampering rule applies it in memory);
* ``files_read``: what the session's PostToolUse hook has reported (the gate
  adds its ancestors' reads, and gives an empty list to a session whose
  settings wire leash's PostToolUse hook before any report has come). Sessions
  leash cannot see the reads of have no record: they get ``reads_unknown`` and
  ``modifying_unread_code`` stays quiet for them — absence of evidence is not
  evidence of an unread file (scope and production rules still see the files);
* the agent's environment may add ``LEASH_ENVIRONMENT`` (dev/test/prod),
  ``LEASH_SCOPE`` (the scope boundary globs) and ``LEASH_PRODUCTION_APPROVED=1``.

Read, Grep and any other tool that names paths (an MCP tool) give only the
``operation`` and the call itself: the tampering rule judges what they read
or write (a serve token, leash's installed code). Tools that name no path
give None: there is nothing for the conditions to check. ``outcome`` reads
a PostToolUse payload: what was read, and whether a command failed.
"""
from __future__ import annotations

import os

from leash.core.policy.patchread import patch_text
from leash.core.policy.toolcall import FILE_EDITING_TOOLS, edited_files, shell_command

TYPE_CHECKING = False  # for the type checker only: the hook path does not import typing
if TYPE_CHECKING:
    from collections.abc import Mapping

READ_TOOLS = {"Read": "file_path", "NotebookRead": "notebook_path"}
MAX_WRITE_COMPARE = 256 * 1024
ERROR_TEXT_KEPT = 2000
TASK_TEXT_READ = 4096  # a task key is 300 characters; masking more of a huge command buys nothing
OPERATION_PATHS = 5
EXIT_CODE_KEYS = ("exit_code", "exitCode", "returnCode", "return_code")


def task_of(command: str) -> str:
    """The command with whitespace folded and secrets masked: the key of its
    failure counter (stored, so it must never hold a secret)."""
    from leash.core.base.secrets import mask

    return "bash: " + mask(" ".join(command[:TASK_TEXT_READ].split()))[:300]


def _absolute(path: str, cwd: str | None) -> str:
    return os.path.normpath(os.path.join(cwd or os.getcwd(), path))


def _old_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(MAX_WRITE_COMPARE)
    except OSError:
        return ""


def _edits(tool: str, tool_input: dict, path: str) -> list[dict]:
    if tool == "Edit":
        return [{"file": path, "old": tool_input.get("old_string") or "", "new": tool_input.get("new_string") or ""}]
    if tool == "MultiEdit":
        return [{"file": path, "old": e.get("old_string") or "", "new": e.get("new_string") or ""}
                for e in tool_input.get("edits") or [] if isinstance(e, dict)]
    if tool == "Write":
        return [{"file": path, "old": _old_text(path), "new": tool_input.get("content") or ""}]
    if tool == "NotebookEdit":
        return [{"file": path, "old": "", "new": tool_input.get("new_source") or ""}]
    return []


def check_input(session_id: str, tool: str | None, tool_input: object, *, cwd: str | None,
                env: Mapping[str, str], files_read: list[str] | None, call=None,
                home: str | None = None) -> dict | None:
    """``call``: the ``core.toolcall.ToolCall`` already read for this call
    (handed to the rules as ``_tool_call``); ``home``: the state home."""
    if not isinstance(tool_input, dict):
        return None
    context: dict = {"cwd": cwd} if cwd else {}
    if home:
        context["leash_home"] = home
    data: dict = {"session_token": session_id, "current_context": context}
    if call is not None:
        data["_tool_call"] = call
    if not _described(data, tool, tool_input, cwd, files_read, call):
        return None
    _declared(context, env)
    return data


def _described(data: dict, tool: str | None, tool_input: dict, cwd: str | None, files_read: list[str] | None,
               call) -> bool:
    """Fill in what the tool does (False: nothing for the conditions to check)."""
    context = data["current_context"]
    command = shell_command(tool, tool_input)
    if command is not None:
        context["operation"] = f"Bash: {command[:200]}"
        context["commands"] = [command]
        data["task_id"] = task_of(command)
        return True
    if tool in FILE_EDITING_TOOLS:
        return _edit_described(context, tool, tool_input, cwd, files_read)
    patch = patch_text(tool, tool_input)
    if patch is not None:
        return _patch_described(context, patch, cwd, files_read)
    if call is not None and call.targets:  # a read, an MCP tool: only the paths it names
        context["operation"] = f"{tool}: {', '.join(t.path for t in call.targets[:OPERATION_PATHS])}"[:200]
        return True
    return False


def _edit_described(context: dict, tool: str, tool_input: dict, cwd: str | None,
                    files_read: list[str] | None) -> bool:
    paths = [_absolute(p, cwd) for p in edited_files(tool, tool_input)]
    if not paths:
        return False
    existing = [p for p in paths if os.path.exists(p)]
    context["operation"] = f"{tool}: {', '.join(paths)}"
    context["target_files"] = paths
    context["new_files"] = [p for p in paths if p not in existing]
    if files_read is None:
        context["reads_unknown"] = True
    else:
        context["files_read"] = files_read
    context["edits"] = [e for p in paths for e in _edits(tool, tool_input, p)]
    return True


def _patch_described(context: dict, text: str, cwd: str | None, files_read: list[str] | None) -> bool:
    """An apply_patch call: each file it adds, updates, moves or deletes, with
    the lines it removes and adds as that file's edit."""
    from leash.core.policy.patchread import read_patch

    changes = read_patch(text).files
    if not changes:
        return False
    paths = [_absolute(p, cwd) for change in changes for p in change.paths()]
    context["operation"] = f"apply_patch: {', '.join(paths[:OPERATION_PATHS])}"[:200]
    context["target_files"] = paths
    context["new_files"] = [p for p in paths if not os.path.exists(p)]
    if files_read is None:
        context["reads_unknown"] = True
    else:
        context["files_read"] = files_read
    context["edits"] = [{"file": _absolute(change.path, cwd), "old": "\n".join(change.removed),
                         "new": "\n".join(change.added)} for change in changes]
    context["patch"] = text  # the whole patch: a rule may apply it in memory
    return True


def _declared(context: dict, env: Mapping[str, str]) -> None:
    """What the agent's environment declares: its environment, scope, production approval."""
    if env.get("LEASH_ENVIRONMENT"):
        context["environment"] = env["LEASH_ENVIRONMENT"]
    if env.get("LEASH_SCOPE"):
        context["scope_boundary"] = env["LEASH_SCOPE"]
    if env.get("LEASH_PRODUCTION_APPROVED", "").strip().lower() in ("1", "true", "yes"):
        context["production_approved"] = True


def _failed(payload: dict, response: object) -> bool:
    failed = payload.get("hook_event_name") == "PostToolUseFailure" or bool(payload.get("error"))
    if isinstance(response, dict):
        code = next((response[k] for k in EXIT_CODE_KEYS if k in response), None)
        failed = failed or response.get("is_error") is True or (isinstance(code, int) and code != 0)
    return failed


def _known(tool: object, tool_input: dict, cwd: str | None) -> list[str]:
    """The files a successful call shows the session: what it read or wrote."""
    known: list[str] = []
    if tool in READ_TOOLS and isinstance(tool_input.get(READ_TOOLS[tool]), str):
        known.append(_absolute(tool_input[READ_TOOLS[tool]], cwd))
    if tool in FILE_EDITING_TOOLS:
        known += [_absolute(p, cwd) for p in edited_files(tool, tool_input)]
    patch = patch_text(tool if isinstance(tool, str) else None, tool_input)
    if patch is not None:
        from leash.core.policy.patchread import read_patch

        known += [_absolute(p, cwd) for change in read_patch(patch).files for p in change.paths()]
    if shell_command(tool if isinstance(tool, str) else None, tool_input) is not None:
        # What a command read (``cat``, ``sed -n``, ``grep`` of a file ...): Codex
        # CLI reads only this way. What the reader could not see stays unknown.
        from leash.core.policy.toolcall import read_tool_call

        call = read_tool_call(str(tool), tool_input, cwd=cwd)
        known += [target.path for target in call.targets if target.role == "read" and not target.subtree]
    return known


def _error(payload: dict, response: object) -> str:
    error = payload.get("error") if isinstance(payload.get("error"), str) else ""
    if not error and isinstance(response, dict):
        error = str(response.get("stderr") or response.get("stdout") or "")
    return (error or "command failed").strip()[-ERROR_TEXT_KEPT:]


def outcome(payload: dict) -> tuple[list[str], str | None, str | None]:
    """(files now known to the session, task of a command, its error or None)."""
    if payload.get("is_interrupt") is True:
        return [], None, None  # the user stopped it: not a failure, and nothing was read
    tool = payload.get("tool_name")
    given = payload.get("tool_input")
    tool_input = given if isinstance(given, dict) else {}
    response = payload.get("tool_response")
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
    failed = _failed(payload, response)
    known = [] if failed else _known(tool, tool_input, cwd)
    command = shell_command(tool, tool_input)
    if command is None:
        return known, None, None
    return known, task_of(command), _error(payload, response) if failed else None
