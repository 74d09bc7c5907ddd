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
config loader reports it with the file and key); ``holding_rule`` returns the
first rule a call matches and why it holds it ("" for a plain match, else what
leash could not read), ``matching_rule`` the rule alone, or None.

A Bash rule reads each command as it runs (``ToolCall.forms``): the program by
its base name (``/usr/bin/git push``), git's global options taken off (``git
-C . -c k=v --no-pager push``), an alias the command sets expanded (``git -c
alias.p=push p``, ``git config alias.p push && git p``), ``git send-pack`` as
``git push``. What leash cannot read is held while the rule could match it,
as the path locks deny a write they cannot resolve: a computed program
(``$(printf 'git push')``), a shell alias or function the command defines, a
shell's script file or an interpreter's code (``bash push.sh``, ``python3 -c
...``) hold under any Bash rule; a computed word or the words ``xargs`` adds
(``git $(cat verb)``, ``echo push | xargs git``) hold when a command starting
with the words read could match (``git `` could be ``git push``; ``git commit
-m `` could not). ``path:`` rules hold a write to a path the reader could not
resolve and a command whose program leash cannot read (it may write
anywhere), and read a write to a whole directory (``git checkout .``, ``git
reset --hard``, ``rm -rf src``) as the path locks do. A command too large to
read to its end holds under any Bash or ``path:`` rule.

Failure: never raises on a call; a malformed rule is refused when the
configuration is loaded.
"""
from __future__ import annotations

import fnmatch
import json
import os

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
        return _command_texts(call, tool_input) + [form.text for form in call.forms if form.read]
    key = FILE_TOOL_KEYS.get(tool)
    if key and isinstance(tool_input.get(key), str):
        return [tool_input[key]]
    try:
        return [json.dumps(tool_input, sort_keys=True)]
    except (TypeError, ValueError):
        return []


def _glob_parts(glob: str) -> list[str]:
    """The glob's parts: ``*``, ``?``, a ``[...]`` class, or one character."""
    parts, index = [], 0
    while index < len(glob):
        end = index + 1
        if glob[index] == "[":
            close = glob.find("]", index + 2 if glob.startswith(("[!", "[^"), index) else index + 1)
            end = close + 1 if close != -1 else end
        parts.append(glob[index:end])
        index = end
    return parts


def could_start(glob: str, prefix: str) -> bool:
    """Whether some text starting with ``prefix`` matches ``glob``: the prefix
    matches the glob's first parts, or them and a ``*`` that goes on."""
    parts = _glob_parts(glob)
    return any(fnmatch.fnmatchcase(prefix, "".join(parts[:count]) + ("*" if "*" in parts[count:count + 1] else ""))
               for count in range(len(parts) + 1))


def _unread_call(rule: AskRule, call) -> str | None:
    """Why a Bash rule holds what leash could not read of the call ("" when
    the words it read match whatever follows them), or None."""
    unread = [form for form in call.forms if not form.read]
    if rule.glob.endswith("*") and any(fnmatch.fnmatchcase(form.prefix, rule.glob) for form in unread if form.known):
        return ""  # `git push $(cat args)` is a push whatever the word is
    if call.incomplete:
        return f"the command is too large to read ({call.incomplete})"
    return next((form.why for form in unread if could_start(rule.glob, form.prefix)), None)


def _path_matches(pattern, rule: AskRule, target, base: str | None, real) -> bool:
    from leash.core.base.globs import path_candidates, subtree_may_match

    for path in dict.fromkeys((target.path, real(target.path))):
        absolute, relative = path_candidates(path, base)
        if pattern.fullmatch(absolute) or (relative is not None and pattern.fullmatch(relative)):
            return True
        if target.subtree and subtree_may_match(rule.glob, path, base):
            return True
    return False


def _path_hold(rule: AskRule, call, root: str | None) -> str | None:
    """"" when the call writes a path the rule names, why it holds a write it
    cannot resolve, else None."""
    from leash.core.base.globs import compile_glob

    pattern, base = compile_glob(rule.glob), root or call.cwd
    written = call.may_write
    real = getattr(call, "real", lambda path: path)
    if any(not t.computed and _path_matches(pattern, rule, t, base, real) for t in written):
        return ""
    unresolved = next((t for t in written if t.computed), None)
    if unresolved is not None:
        from leash.core.base.text import printable

        shown = os.path.relpath(unresolved.path, base) if base and unresolved.path.startswith(base + "/") \
            else unresolved.path
        return f"it writes a path leash cannot resolve ({printable(shown, limit=60)})"
    if call.incomplete:
        return f"the command is too large to read ({call.incomplete})"
    # a program leash cannot read (a script, an interpreter's code) may write anywhere
    return next((form.why for form in call.forms if not form.known and form.why), None)


def hold(rule: AskRule, call, tool: str, tool_input: dict, *, root: str | None = None) -> str | None:
    """Whether the call (``call``: its ``ToolCall``) needs a human by ``rule``:
    "" when it matches, why when it holds what leash could not read, None when not."""
    if rule.kind == "tool":
        return "" if fnmatch.fnmatchcase(tool, rule.tool) else None
    if rule.kind == "path":
        return _path_hold(rule, call, root)
    if not fnmatch.fnmatchcase(tool, rule.tool):
        return None
    if any(fnmatch.fnmatchcase(text, rule.glob) for text in _call_texts(rule, call, tool, tool_input)):
        return ""
    return _unread_call(rule, call) if tool == "Bash" else None


def matches(rule: AskRule, call, tool: str, tool_input: dict, *, root: str | None = None) -> bool:
    return hold(rule, call, tool, tool_input, root=root) is not None


def holding_rule(rules: list[AskRule], call, tool: str | None, tool_input: object, *,
                 root: str | None = None) -> tuple[AskRule, str] | None:
    """(the first rule the call matches, "" or why it holds what leash could
    not read), or None. A plain match anywhere wins over an unread one."""
    if not rules or not tool:
        return None
    given = tool_input if isinstance(tool_input, dict) else {}
    found = [(rule, why) for rule in rules if (why := hold(rule, call, tool, given, root=root)) is not None]
    return next((pair for pair in found if not pair[1]), found[0] if found else None)


def matching_rule(rules: list[AskRule], call, tool: str | None, tool_input: object, *,
                  root: str | None = None) -> AskRule | None:
    """The first rule the call matches, or None."""
    found = holding_rule(rules, call, tool, tool_input, root=root)
    return found[0] if found is not None else None
