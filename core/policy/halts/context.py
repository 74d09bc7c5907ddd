"""The check context: the seed's ``CheckHaltConditionsInput``, normalised once.

Fields follow the seed (``operation``, ``target_files``, ``files_read``,
``attempt_number``, ``previous_errors``, ``uncertainty_score``, ``environment``,
``commands``, ``scope_boundary``, ``user_instructions`` and
``proposed_changes``). leash adds a few optional fields its hooks can fill and
its rules read (all documented in docs/halts.md):

* ``cwd`` — the session's working directory, for relative paths;
* ``edits`` — ``[{"file", "old", "new"}]``, the text an edit replaces and writes;
* ``new_files`` — files a write would create (they cannot be unread);
* ``patch`` — an ``apply_patch`` call's patch, as the agent sent it;
* ``reads_unknown`` — nobody reports what this session reads, so "not read"
  cannot be judged;
* ``production_approved`` — the operator approved production changes;
* ``new_information`` — the user gave new information (resets three strikes);
* ``service_endpoints`` — ``{"<environment>": ["host:port", ...]}``;
* ``leash_home`` — the state home the tampering rule guards (default: the
  resolved ``$LEASH_HOME``).

In process, the gate also hands over the tool call it has already read
(``data["_tool_call"]``, a ``core.toolcall.ToolCall``), so the command is read
once; without it the commands are read here, with this process's environment.

Invalid input raises ``HaltInputError`` with a one-line message.
"""
from __future__ import annotations

import os


class HaltInputError(ValueError):
    """The input does not have the seed's shape."""


def _strings(value: object, field: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise HaltInputError(f"{field} must be a list of strings")
    return list(value)


def _number(value: object, field: str, low: float, high: float) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise HaltInputError(f"{field} must be a number from {low:g} to {high:g}")
    return value


class CheckContext:
    def __init__(self, data: dict, *, stored_attempts: int = 0, stored_errors: list[str] | None = None):
        if not isinstance(data, dict):
            raise HaltInputError("input must be a JSON object")
        session = data.get("session_token")
        if not isinstance(session, str) or not session.strip():
            raise HaltInputError("session_token must be a non-empty string")
        task = data.get("task_id")
        if task is not None and not isinstance(task, str):
            raise HaltInputError("task_id must be a string")
        current = data.get("current_context", {})
        if not isinstance(current, dict):
            raise HaltInputError("current_context must be an object")
        operation = current.get("operation", "")
        if not isinstance(operation, str):
            raise HaltInputError("current_context.operation must be a string")
        self.session_id = session
        self.task_id = task
        self.operation = operation
        self.cwd = current.get("cwd") if isinstance(current.get("cwd"), str) else None
        self.target_files = _strings(current.get("target_files"), "current_context.target_files")
        self.files_read = _strings(current.get("files_read"), "current_context.files_read")
        self.new_files = _strings(current.get("new_files"), "current_context.new_files")
        attempt = _number(current.get("attempt_number"), "current_context.attempt_number", 0, 1e9)
        self.attempt_number = int(attempt) if attempt is not None else None
        self.previous_errors = _strings(current.get("previous_errors"), "current_context.previous_errors")
        self.uncertainty_score = _number(current.get("uncertainty_score"), "current_context.uncertainty_score", 0, 10)
        environment = current.get("environment")
        if environment is not None and not isinstance(environment, str):
            raise HaltInputError("current_context.environment must be a string")
        self.environment = (environment or "").strip().lower()
        self.commands = _strings(current.get("commands"), "current_context.commands")
        scope = current.get("scope_boundary")
        if scope is not None and not isinstance(scope, str):
            raise HaltInputError("current_context.scope_boundary must be a string")
        self.scope_boundary = scope or ""
        self.user_instructions = _strings(current.get("user_instructions"), "current_context.user_instructions")
        edits = current.get("edits") or []
        if not isinstance(edits, list) or not all(isinstance(e, dict) for e in edits):
            raise HaltInputError("current_context.edits must be a list of objects")
        self.edits = [{"file": str(e.get("file", "")), "old": str(e.get("old", "") or ""),
                       "new": str(e.get("new", "") or "")} for e in edits]
        patch = current.get("patch")
        if patch is not None and not isinstance(patch, str):
            raise HaltInputError("current_context.patch must be a string")
        self.patch = patch
        self.production_approved = current.get("production_approved") is True
        self.reads_unknown = current.get("reads_unknown") is True
        self.new_information = current.get("new_information") is True
        endpoints = current.get("service_endpoints") or {}
        if not isinstance(endpoints, dict):
            raise HaltInputError("current_context.service_endpoints must be an object")
        self.service_endpoints = {str(k).lower(): _strings(v, "service_endpoints values") for k, v in endpoints.items()}
        proposed = data.get("proposed_changes")
        if proposed is not None:
            if not isinstance(proposed, dict):
                raise HaltInputError("proposed_changes must be an object")
            proposed = {
                "files_to_modify": _strings(proposed.get("files_to_modify"), "proposed_changes.files_to_modify"),
                "has_tests": proposed.get("has_tests"),
                "has_rollback_plan": proposed.get("has_rollback_plan"),
            }
        self.proposed_changes = proposed
        home = current.get("leash_home")
        if home is not None and not isinstance(home, str):
            raise HaltInputError("current_context.leash_home must be a string")
        self.leash_home = home or None
        self.stored_attempts = stored_attempts
        self.stored_errors = list(stored_errors or [])
        from leash.core.policy.toolcall import ToolCall

        given = data.get("_tool_call")
        self._call = given if isinstance(given, ToolCall) else None
        self._derived: dict = {}

    def derived(self, key: tuple, compute):
        """``compute()``, once per check: what several rules read from the same input."""
        try:
            return self._derived[key]
        except KeyError:
            value = self._derived[key] = compute()
            return value

    # ----------------------------------------------------------- derived
    def norm(self, path: str) -> str:
        base = self.cwd or ""
        return os.path.normpath(os.path.join(base, path)) if base else os.path.normpath(path)

    @property
    def files_to_change(self) -> list[str]:
        """target_files and proposed_changes.files_to_modify, each once, in order."""
        seen, out = set(), []
        extra = self.proposed_changes["files_to_modify"] if self.proposed_changes else []
        for path in self.target_files + extra:
            key = self.norm(path)
            if key not in seen:
                seen.add(key)
                out.append(path)
        return out

    @property
    def all_errors(self) -> list[str]:
        return self.stored_errors + [e for e in self.previous_errors if e not in self.stored_errors]

    def home(self) -> str:
        if self.leash_home is None:
            from leash.core.base.home import resolve_home

            self.leash_home = resolve_home()
        return self.leash_home

    def tool_call(self):
        """The commands as one ``ToolCall`` (``core.toolcall``), read once."""
        if self._call is None:
            from leash.core.policy.toolcall import read_commands

            self._call = read_commands(self.commands, cwd=self.cwd, env=dict(os.environ), home=self.home())
        return self._call

    def simple_commands(self):
        """Every simple command the commands would run (``core.shellread``)."""
        return self.tool_call().commands

    def texts(self) -> list[str]:
        """Everything the agent is about to send out or write: commands and new edit text."""
        return self.commands + [e["new"] for e in self.edits]
