"""What a Claude Code tool call would touch, read from its ``tool_input``.

Edit, Write, MultiEdit and NotebookEdit name the file they change. A Bash
command may touch anything, so every word of it that looks like a path (after
shell-style splitting, option values included: ``--out=dist/x``) is a
candidate; a word is path-like when it contains ``/`` or a ``.`` extension, or
names an existing file or directory relative to the session's cwd. Read-only
tools (Read, Grep, Glob, LS) touch nothing.
"""
from __future__ import annotations

import os

FILE_EDITING_TOOLS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path",
                      "NotebookEdit": "notebook_path"}
SHELL_TOOLS = {"Bash"}
_SHELL_OPERATORS = {"|", "||", "&&", ";", "&", ">", ">>", "<", "2>", "2>&1", "(", ")"}


def edited_files(tool: str | None, tool_input: object) -> list[str]:
    """Files a file-editing tool would change."""
    if not isinstance(tool_input, dict) or tool not in FILE_EDITING_TOOLS:
        return []
    value = tool_input.get(FILE_EDITING_TOOLS[tool])
    return [value] if isinstance(value, str) and value else []


def shell_command(tool: str | None, tool_input: object) -> str | None:
    if tool in SHELL_TOOLS and isinstance(tool_input, dict) and isinstance(tool_input.get("command"), str):
        return tool_input["command"]
    return None


def shell_words(command: str) -> list[str]:
    import shlex

    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|<>()")
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:  # unbalanced quotes: fall back to plain splitting
        return command.split()


def path_words(command: str, cwd: str | None) -> list[str]:
    """Words of a shell command that look like paths."""
    found = []
    for word in shell_words(command):
        if word in _SHELL_OPERATORS or not word:
            continue
        if word.startswith("-") and "=" in word:
            word = word.split("=", 1)[1]
        elif word.startswith("-"):
            continue
        if "/" in word or _has_extension(word) or (cwd and os.path.exists(os.path.join(cwd, word))):
            found.append(word)
    return found


def _has_extension(word: str) -> bool:
    stem, dot, ext = word.rpartition(".")
    return bool(dot and stem and ext and ext.isalnum())


def touched_paths(tool: str | None, tool_input: object, cwd: str | None) -> list[str]:
    """Every path the call may touch: edited files, or path-like shell words."""
    paths = edited_files(tool, tool_input)
    command = shell_command(tool, tool_input)
    if command:
        paths.extend(path_words(command, cwd))
    return paths
