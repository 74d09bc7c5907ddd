"""A Claude Code tool call, read once into one ``ToolCall`` that every rule reads.

``read_tool_call(tool, tool_input, cwd=, env=, home=)`` is called once per
tool call by the gate; path locks, the halt conditions and the tampering rule
all read the same object. Each path the call reaches is a ``Target`` with a
role:

* Edit, Write, MultiEdit and NotebookEdit write the file they name;
* Read, NotebookRead and Grep read the path they name (Glob and LS only list
  names: they reach nothing);
* an apply_patch call (Codex CLI) writes every file its patch names
  (``core.policy.patchread``);
* a Bash command is read by the shell reader (``core.shellread``) into simple
  commands, and each command's words get a role from what its program is
  known to do with them (``core.argroles``); a word the reader could not
  resolve (a command's output, an unknown variable) is a ``computed`` target;
* any other tool — an MCP tool (``mcp__filesystem__write_file``), a tool
  leash does not know — writes every path its input names under a key that
  names a path (``path``, ``file_path``, ``filePath``, ``destination``,
  ``source``, ``paths`` ...; in nested objects and lists too, up to
  ``MAX_INPUT_DEPTH`` levels and ``MAX_INPUT_PATHS`` paths): a tool leash
  does not know may write.

``ToolCall.forms`` gives each simple command as the ask rules read it: the
program by its base name, git's options and aliases read
(``core.policy.commandforms``), and what of it leash cannot read.

Never raises on any input; what the reader could not see is in ``unseen``,
and ``incomplete`` says when a command was too large to read to its end.
"""
from __future__ import annotations

import os

from leash.core.base.project import git_toplevel
from leash.core.policy.argroles import READ_ONLY_PROGRAMS, absolute, is_dir, path_like, roles
from leash.core.policy.patchread import patch_text

TYPE_CHECKING = False  # imported for the type checker only: a call with no shell command never loads the reader
if TYPE_CHECKING:
    from collections.abc import Mapping

    from leash.core.policy.shellread import Reading

__all__ = ["READ_ONLY_PROGRAMS", "FILE_EDITING_TOOLS", "READ_TOOLS", "Target", "ToolCall", "edited_files",
           "git_toplevel", "path_like", "read_commands", "read_tool_call", "shell_command"]

FILE_EDITING_TOOLS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path",
                      "NotebookEdit": "notebook_path"}
READ_TOOLS = {"Read": "file_path", "NotebookRead": "notebook_path", "Grep": "path"}
LISTING_TOOLS = frozenset({"Glob", "LS"})
SHELL_TOOLS = {"Bash"}
# Keys of a tool's input that name a path (lower case, without "_" and "-"),
# and the endings that do when the value also looks like a path.
PATH_KEYS = frozenset({"path", "paths", "filepath", "filepaths", "file", "files", "filename", "filenames",
                       "destination", "dest", "target", "targetpath", "source", "sourcepath", "sources", "src",
                       "dir", "directory", "dirpath", "folder", "newpath", "oldpath", "notebookpath", "output",
                       "outputpath", "inputpath", "root", "location"})
PATH_KEY_ENDINGS = ("path", "paths", "file", "files", "dir", "directory", "filename", "folder")
MAX_INPUT_DEPTH = 4
MAX_INPUT_PATHS = 256
FILE_URI = "file://"


class Target:
    """A path a tool call reaches: absolute, normalised; ``subtree`` when the
    call reaches everything under it; ``role`` is write, read or touch;
    ``program`` the program or tool that reaches it; ``command`` the
    SimpleCommand that does (None for other tools); ``computed`` when the
    path is a word the shell reader could not resolve (its value is not the
    path the command will use)."""

    __slots__ = ("path", "role", "subtree", "program", "command", "computed")

    def __init__(self, path: str, role: str, subtree: bool = False, program: str = "", command=None,
                 computed: bool = False):
        self.path, self.role, self.subtree, self.program, self.command = path, role, subtree, program, command
        self.computed = computed

    def __repr__(self) -> str:
        return f"Target({self.path!r}, {self.role!r}, subtree={self.subtree})"


class ToolCall:
    """One tool call as every rule reads it (plain slots: the hook path does
    not pay for ``dataclasses``)."""

    __slots__ = ("tool", "cwd", "commands", "targets", "unseen", "incomplete", "lines", "reading", "env",
                 "reading_kept", "_real_paths", "_forms", "_roots")

    def __init__(self, tool: str | None, cwd: str | None):
        self.tool, self.cwd = tool, cwd
        self.commands: list = []
        self.targets: list[Target] = []
        self.unseen: list[str] = []
        self.incomplete: str | None = None
        self.lines: list[str] = []
        self.reading: Reading | None = None
        self.reading_kept = False  # the reading is the one kept for its inputs (``read_shell_kept``)
        self.env: Mapping[str, str] = {}
        self._real_paths: dict[str, str] = {}
        self._roots: dict[tuple[str | None, str | None], str | None] = {}
        self._forms: list | None = None

    @property
    def forms(self) -> list:
        """Each simple command as the ask rules read it (``core.policy.commandforms``),
        worked out the first time a rule asks: most calls are never asked."""
        if self._forms is None:
            from leash.core.policy.commandforms import command_forms

            self._forms = command_forms(self)
        return self._forms

    def project(self, cwd: str | None, env: Mapping[str, str] | None) -> str | None:
        """``core.base.project.project_root(cwd, env)``, found once per call: the
        path locks and the tampering rule both match from it."""
        from leash.core.base.project import PROJECT_DIR_ENV, project_root

        key = (cwd, env.get(PROJECT_DIR_ENV) if env is not None else None)
        if key not in self._roots:
            self._roots[key] = project_root(cwd, env)
        return self._roots[key]

    def real(self, path: str) -> str:
        """``os.path.realpath(path)`` (asked of the kernel: ``core.base.realpaths``),
        resolved once per call: the path locks and the tampering rule ask
        about the same paths within one check."""
        found = self._real_paths.get(path)
        if found is None:
            from leash.core.base.realpaths import realpath

            found = self._real_paths[path] = realpath(path)
        return found

    def __repr__(self) -> str:
        return f"ToolCall({self.tool!r}, cwd={self.cwd!r}, {len(self.commands)} commands, {len(self.targets)} paths)"

    @property
    def writes(self) -> list[Target]:
        return [t for t in self.targets if t.role == "write"]

    @property
    def reads(self) -> list[Target]:
        return [t for t in self.targets if t.role == "read"]

    @property
    def may_write(self) -> list[Target]:
        """Written, or touched by a program whose effect on it is unknown."""
        return [t for t in self.targets if t.role != "read"]

    def pipelines(self) -> list[list]:
        return self.reading.pipelines() if self.reading is not None else []


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


def read_tool_call(tool: str | None, tool_input: object, *, cwd: str | None = None,
                   env: Mapping[str, str] | None = None,
                   home: str | None = None) -> ToolCall:
    """The tool call as one ``ToolCall`` (see the module's docstring)."""
    call = ToolCall(tool, cwd)
    command = shell_command(tool, tool_input)
    if command is not None:
        _read_commands(call, [command], env or {}, home)
        return call
    call.env = env or {}
    patch = patch_text(tool, tool_input)
    if patch is not None:
        _read_patch(call, patch, cwd)
        return call
    for path, role, subtree in input_paths(tool, tool_input, cwd):
        call.targets.append(Target(absolute(path, cwd), role, subtree, program=tool or ""))
    return call


def _read_patch(call: ToolCall, text: str, cwd: str | None) -> None:
    """An apply_patch call writes every file its headers name (``core.policy.patchread``)."""
    from leash.core.policy.patchread import MAX_PATCH_FILES, read_patch

    patch = read_patch(text)
    if patch.incomplete:
        call.incomplete = f"a patch of more than {MAX_PATCH_FILES} files"
    for change in patch.files:
        for path in change.paths():
            call.targets.append(Target(absolute(path, cwd), "write", False, program=call.tool or ""))


def input_paths(tool: str | None, tool_input: object, cwd: str | None) -> list[tuple[str, str, bool]]:
    """(path, role, subtree) for the paths a tool other than Bash names."""
    if not isinstance(tool_input, dict) or tool is None or tool in LISTING_TOOLS or tool in SHELL_TOOLS:
        return []
    if tool in FILE_EDITING_TOOLS:
        return [(p, "write", False) for p in edited_files(tool, tool_input)]
    if tool in READ_TOOLS:
        value = tool_input.get(READ_TOOLS[tool])
        return [(value, "read", False)] if isinstance(value, str) and value and "\x00" not in value else []
    found: list[str] = []
    _named_paths(tool_input, cwd, found, 0)
    return [(p, "write", is_dir(p, cwd)) for p in found]


def _path_key(key: object) -> int:
    """2: the key names a path; 1: it may (its value must look like one); 0: it does not."""
    if not isinstance(key, str):
        return 0
    folded = key.lower().replace("_", "").replace("-", "")
    return 2 if folded in PATH_KEYS else 1 if folded.endswith(PATH_KEY_ENDINGS) else 0


def _as_path(value: object, strength: int, cwd: str | None) -> str | None:
    if not isinstance(value, str) or not value or "\x00" in value or "\n" in value or len(value) > 4096:
        return None
    if value.startswith(FILE_URI):
        value = value[len(FILE_URI):] or "/"
    if strength == 2 and "://" not in value:
        return value
    return value if path_like(value, cwd) else None


def _named_paths(value: object, cwd: str | None, found: list[str], depth: int, strength: int = 0) -> None:
    """Collect the paths under path-naming keys of a tool's input (bounded)."""
    if depth > MAX_INPUT_DEPTH or len(found) >= MAX_INPUT_PATHS:
        return
    if isinstance(value, dict):
        for key, item in list(value.items())[:MAX_INPUT_PATHS]:
            _named_paths(item, cwd, found, depth + 1, _path_key(key))
    elif isinstance(value, list):
        for item in value[:MAX_INPUT_PATHS]:
            _named_paths(item, cwd, found, depth + 1, strength)
    elif strength:
        path = _as_path(value, strength, cwd)
        if path is not None:
            found.append(path)


def read_commands(commands: list[str], *, cwd: str | None = None, env: Mapping[str, str] | None = None,
                  home: str | None = None) -> ToolCall:
    """Command lines given as text (the halt engine's ``commands``)."""
    call = ToolCall("Bash", cwd)
    _read_commands(call, commands, env or {}, home)
    return call


# The shell reader's readings kept by what they were read from (a daemon judges
# the same commands again and again). Only readings that depend on nothing else
# are kept: one that matched a glob against the file system is read every time.
READINGS_KEPT = 256
READING_KEPT_CHARS = 16 * 1024  # longer commands are read every time: memory stays bounded
_readings: dict = {}


def _reading_key(lines: list[str], cwd: str | None, env: Mapping[str, str], home: str | None):
    if sum(len(line) for line in lines) > READING_KEPT_CHARS:
        return None
    # ``~`` and ``$HOME`` fall back to this process's own HOME when the call's environment has none.
    own_home = None if "HOME" in env else os.environ.get("HOME")
    return tuple(lines), cwd, home, own_home, frozenset(env.items())


def read_shell_kept(lines: list[str], *, cwd: str | None, env: Mapping[str, str],
                    home: str | None) -> tuple[Reading, bool]:
    """(``core.shellread.read_shell``'s reading, or the same reading of the same
    text, place, environment and home read before — never mutated by its
    readers; whether it is that kept one)."""
    from leash.core.policy.shellread import read_shell

    try:
        key = _reading_key(lines, cwd, env, home)
    except TypeError:  # an environment value that cannot be a key: nothing kept
        key = None
    reading = _readings.get(key) if key is not None else None
    if reading is not None:
        return reading, True
    reading = read_shell(lines, cwd=cwd, env=env, home=home)
    if key is None or reading.listed_files:
        return reading, False
    if len(_readings) >= READINGS_KEPT:
        _readings.clear()
    _readings[key] = reading
    return reading, True


def _read_commands(call: ToolCall, lines: list[str], env: Mapping[str, str], home: str | None) -> None:
    reading, call.reading_kept = read_shell_kept(lines, cwd=call.cwd, env=env, home=home)
    call.reading, call.lines, call.env = reading, list(lines), env
    call.commands = reading.commands
    call.unseen, call.incomplete = list(reading.unseen), reading.incomplete
    for command in reading.commands:
        where = command.cwd or call.cwd
        computed = _computed_words(command)
        for path, role, subtree in roles(command, reading, call):
            call.targets.append(Target(absolute(path, where), role, subtree, command.program, command,
                                       computed=path in computed))
        for directory in command.overflow_dirs:
            call.targets.append(Target(absolute(directory, where), "touch", True, command.program, command))


def _computed_words(command) -> set[str]:
    """The words and redirection targets of ``command`` the reader could not resolve."""
    if not command.computed_redirects and not any(command.dynamic):
        return set()
    return {w for w, d in zip(command.argv, command.dynamic, strict=False) if d} | set(command.computed_redirects)
