"""Ask rules: the floor of calls that always need a human.

``[approvals] ask`` lists patterns; a call matching any of them is held at
PreToolUse as an approval until an operator answers, whatever Claude Code's
permission mode (``bypassPermissions`` and headless runs included):

* ``"Bash(git push*)"`` — a tool and a glob: for Bash, on each simple command
  the shell reader found (its words joined by single spaces, so ``git   push``
  and ``bash -c 'git push'`` match too) and on the command text as written;
  for a file tool, on the path it names; for other tools, on the input's JSON;
* ``"path:deploy/**"`` — a path lock's glob (``core.globs``, relative to the
  project root like the locks): any file the call may write, by any tool;
* ``"tool:mcp__*"`` — a glob on the tool's name alone.

``parse_rule`` reads one pattern or raises ``ValueError`` with one line (the
config loader reports it with the file and key); ``matching_rule`` returns the
first rule a call matches, or None.

What it cannot see: a command the shell reader could not read to its end is
matched on its text as written only; a path the reader could not resolve
(``computed``) matches no ``path:`` rule (the path locks deny such writes while
a lock is in force; an ask rule does not, since it would hold every such call).

Failure: never raises on a call; a malformed rule is refused when the
configuration is loaded.
"""
from __future__ import annotations

import fnmatch
import json

TOOL_RULE_PREFIX = "tool:"
PATH_RULE_PREFIX = "path:"
FILE_TOOL_KEYS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path", "Read": "file_path",
                  "NotebookEdit": "notebook_path"}


class AskRule:
    """One ``[approvals] ask`` pattern, read once."""

    __slots__ = ("text", "kind", "tool", "glob")

    def __init__(self, text: str, kind: str, tool: str, glob: str):
        self.text, self.kind, self.tool, self.glob = text, kind, tool, glob

    def __repr__(self) -> str:
        return f"AskRule({self.text!r})"


def parse_rule(text: object) -> AskRule:
    """``Tool(glob)``, ``path:glob`` or ``tool:glob``; ValueError says why not."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("an ask rule is a non-empty string")
    text = text.strip()
    if text.startswith(PATH_RULE_PREFIX):
        from leash.core.base.globs import check_glob

        glob = text[len(PATH_RULE_PREFIX):]
        check_glob(glob)
        return AskRule(text, "path", "", glob)
    if text.startswith(TOOL_RULE_PREFIX):
        glob = text[len(TOOL_RULE_PREFIX):]
        if not glob:
            raise ValueError(f"{text!r}: tool: needs a name or a glob")
        return AskRule(text, "tool", glob, "")
    if text.endswith(")") and "(" in text:
        tool, _, glob = text[:-1].partition("(")
        if not tool.strip() or not glob:
            raise ValueError(f"{text!r}: expected Tool(glob), path:glob or tool:glob")
        return AskRule(text, "call", tool.strip(), glob)
    raise ValueError(f"{text!r}: expected Tool(glob), path:glob or tool:glob")


def parse_rules(texts: list) -> list[AskRule]:
    return [parse_rule(text) for text in texts]


def _command_texts(call, tool_input: dict) -> list[str]:
    texts = [" ".join(str(word) for word in getattr(command, "argv", []) or []) for command in call.commands]
    given = tool_input.get("command")
    if isinstance(given, str):
        texts.append(given)
        texts.append(" ".join(given.split()))
    return [text for text in texts if text]


def _call_texts(rule: AskRule, call, tool: str, tool_input: dict) -> list[str]:
    if tool == "Bash":
        return _command_texts(call, tool_input)
    key = FILE_TOOL_KEYS.get(tool)
    if key and isinstance(tool_input.get(key), str):
        return [tool_input[key]]
    try:
        return [json.dumps(tool_input, sort_keys=True)]
    except (TypeError, ValueError):
        return []


def _matches_path(rule: AskRule, call, root: str | None) -> bool:
    from leash.core.base.globs import compile_glob, path_candidates

    pattern = compile_glob(rule.glob)
    for target in call.may_write:
        if target.computed:
            continue
        absolute, relative = path_candidates(target.path, root or call.cwd)
        if pattern.fullmatch(absolute) or (relative is not None and pattern.fullmatch(relative)):
            return True
    return False


def matches(rule: AskRule, call, tool: str, tool_input: dict, *, root: str | None = None) -> bool:
    """Whether the call (``call``: its ``ToolCall``) needs a human by ``rule``."""
    if rule.kind == "tool":
        return fnmatch.fnmatchcase(tool, rule.tool)
    if rule.kind == "path":
        return _matches_path(rule, call, root)
    if not fnmatch.fnmatchcase(tool, rule.tool):
        return False
    return any(fnmatch.fnmatchcase(text, rule.glob) for text in _call_texts(rule, call, tool, tool_input))


def matching_rule(rules: list[AskRule], call, tool: str | None, tool_input: object, *,
                  root: str | None = None) -> AskRule | None:
    """The first rule the call matches, or None."""
    if not rules or not tool:
        return None
    given = tool_input if isinstance(tool_input, dict) else {}
    return next((rule for rule in rules if matches(rule, call, tool, given, root=root)), None)
