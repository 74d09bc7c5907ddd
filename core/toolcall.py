"""A Claude Code tool call, read once into one ``ToolCall`` that every rule reads.

``read_tool_call(tool, tool_input, cwd=, env=, home=)`` is called once per
tool call by the gate; path locks, the halt conditions and the tampering rule
all read the same object. Edit, Write, MultiEdit and NotebookEdit write the
file they name. A Bash command is read by the shell reader
(``core.shellread``) into simple commands, and each command's arguments get a
role from what the program is known to do with them:

* written: redirection targets (``>``, ``>>``, ``<>``); the operands of
  ``rm``, ``mv``, ``touch``, ``mkdir``, ``chmod``, ``tee``, ``truncate``,
  editors, ``sed -i``; the destination of ``cp``/``install``/``ln``/``rsync``;
  ``dd of=``, ``curl -o``, ``tar -x``/``unzip`` (the target directory), and
  the git verbs that rewrite the work tree (``clean``, ``checkout``,
  ``restore``, ``reset --hard``, ``stash``, ``switch``, ``merge``, ``pull``
  ...: their pathspecs, else the work tree, or the cwd for ``clean`` and
  ``apply``). A written directory — an existing one, a recursive operation,
  or a whole tree — covers everything under it (``Target.subtree``).
  ``xargs`` feeding a writing command writes under the directories the
  pipeline lists;
* read: redirections from files, the operands of read-only programs;
* touched, role unknown: path-like operands of any other program, and the
  path-like string literals of ``python -c``/``node -e``/``perl -e`` code. A
  word is path-like when it has no whitespace and contains ``/``, has a
  ``.ext`` or names an existing file relative to where the command runs.
Read-only tools (Read, Grep, Glob, LS) touch nothing.

Never raises on any input; what the reader could not see is in ``unseen``,
and ``incomplete`` says when a command was too large to read to its end.
"""
from __future__ import annotations

import os
import re

TYPE_CHECKING = False  # imported for the type checker only: a call with no shell command never loads the reader
if TYPE_CHECKING:
    from collections.abc import Mapping

    from leash.core.shellread import Reading

FILE_EDITING_TOOLS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path",
                      "NotebookEdit": "notebook_path"}
SHELL_TOOLS = {"Bash"}
MAX_CODE_LITERALS = 200
READ_ONLY_PROGRAMS = frozenset("""
ls cat head tail less more wc uniq cut tr grep egrep fgrep rg ag fd diff cmp comm pwd which whereis type
basename dirname realpath readlink stat file du df jq yq sha256sum md5sum sha1sum cksum nl tac column xxd od
strings base64 tree cd pushd find
""".split())
DATA_ONLY_PROGRAMS = frozenset("""
echo printf true false test [ [[ sleep date export unset set alias unalias command expr seq yes exit return
shift read wait jobs : let local declare typeset readonly trap umask ulimit hash history tput clear kill
pkill pgrep killall popd env nproc whoami id hostname uname uptime ps
""".split())
_OPERANDS_WRITTEN = frozenset("rm rmdir unlink shred touch mkdir mv tee truncate vi vim nvim nano emacs ed ex code "
                              "subl chattr mkfifo mknod srm wipe".split())
_FIRST_OPERAND_IS_DATA = frozenset({"chmod", "chown", "chgrp", "setfacl"})
_LAST_OPERAND_WRITTEN = frozenset({"cp", "install", "ln", "rsync", "scp", "rcp"})
_IN_PLACE = frozenset({"sed", "perl", "ruby"})
_CODE_FLAGS = {"python": ("-c",), "python3": ("-c",), "python2": ("-c",), "pypy3": ("-c",),
               "node": ("-e", "-p", "--eval", "--print"), "deno": ("eval",), "bun": ("-e", "--eval"),
               "perl": ("-e", "-E"), "ruby": ("-e",), "php": ("-r",), "Rscript": ("-e",), "osascript": ("-e",)}
_VALUE_OPTIONS = {
    "rm": (), "mkdir": ("-m", "--mode"), "touch": ("-d", "-t", "-r", "--date", "--reference"),
    "truncate": ("-s", "--size", "-r", "--reference"), "cp": ("-S", "--suffix"), "mv": ("-S", "--suffix"),
    "install": ("-m", "-o", "-g", "--mode", "--owner", "--group", "-S", "--suffix"),
    "ln": ("-S", "--suffix"), "chmod": ("--reference",), "chown": ("--reference",), "sed": ("-l", "--line-length"),
    "rsync": ("-e", "--rsh", "--exclude", "--include", "--filter", "-f", "--exclude-from", "--include-from",
              "--files-from", "--log-file", "--partial-dir", "-T", "--temp-dir", "--backup-dir", "--chmod",
              "--chown", "--port", "--password-file", "--rsync-path", "--timeout", "--bwlimit", "--max-size",
              "--min-size", "--compare-dest", "--copy-dest", "--link-dest"),
    "scp": ("-P", "-i", "-o", "-F", "-c", "-l", "-S", "-J"), "tee": (), "shred": ("-n", "-s", "--iterations"),
}
_RECURSIVE = re.compile(r"^-[A-Za-z]*[rRa]|^--recursive$|^--archive$")
_RECURSIVE_PROGRAMS = frozenset({"rm", "cp", "chmod", "chown", "chgrp", "rsync", "scp", "shred", "setfacl"})
_GIT_WHOLE_TREE = frozenset({"switch", "merge", "pull", "rebase", "cherry-pick", "revert", "am", "bisect"})
_GIT_GLOBAL_VALUES = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"})
_STRING_LITERAL = re.compile(r"'([^'\\\n]+)'|\"([^\"\\\n]+)\"")
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,10}$")


class Target:
    """A path a tool call reaches: absolute, normalised; ``subtree`` when the
    call reaches everything under it; ``role`` is write, read or touch;
    ``command`` is the SimpleCommand that reaches it (None for Edit/Write)."""

    __slots__ = ("path", "role", "subtree", "program", "command")

    def __init__(self, path: str, role: str, subtree: bool = False, program: str = "", command=None):
        self.path, self.role, self.subtree, self.program, self.command = path, role, subtree, program, command

    def __repr__(self) -> str:
        return f"Target({self.path!r}, {self.role!r}, subtree={self.subtree})"


class ToolCall:
    """One tool call as every rule reads it (plain slots: the hook path does
    not pay for ``dataclasses``)."""

    __slots__ = ("tool", "cwd", "commands", "targets", "unseen", "incomplete", "lines", "reading", "env",
                 "reading_kept", "_real_paths")

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

    def real(self, path: str) -> str:
        """``os.path.realpath(path)``, resolved once per call: the path locks and
        the tampering rule ask about the same paths within one check."""
        found = self._real_paths.get(path)
        if found is None:
            found = self._real_paths[path] = os.path.realpath(path)
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
    for path in edited_files(tool, tool_input):
        call.targets.append(Target(_absolute(path, cwd), "write", program=tool or ""))
    command = shell_command(tool, tool_input)
    if command is not None:
        _read_commands(call, [command], env or {}, home)
    return call


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
    from leash.core.shellread import read_shell

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
        for path, role, subtree in roles(command, reading, call):
            call.targets.append(Target(_absolute(path, where), role, subtree, command.program, command))
        for directory in command.overflow_dirs:
            call.targets.append(Target(_absolute(directory, where), "touch", True, command.program, command))


def _absolute(path: str, cwd: str | None) -> str:
    if os.path.isabs(path) or not cwd:
        return os.path.normpath(path)
    return os.path.normpath(os.path.join(cwd, path))


def path_like(word: str, cwd: str | None) -> bool:
    if not word or len(word) > 4096 or word.startswith("-") or "://" in word or any(c.isspace() for c in word):
        return False
    if "/" in word or word in (".", "..") or _EXTENSION.search(word):
        return True
    return cwd is not None and cwd != "" and os.path.lexists(os.path.join(cwd, word))


def _operands(argv: list[str], values: tuple = ()) -> list[str]:
    """Non-option words, skipping the values of options that take one."""
    out, skip, ended = [], False, False
    for word in argv[1:]:
        if skip:
            skip = False
            continue
        if ended or not word.startswith("-") or word == "-":
            out.append(word)
        elif word == "--":
            ended = True
        elif word in values:
            skip = True
    return out


def _is_dir(path: str, cwd: str | None) -> bool:
    return os.path.isdir(_absolute(path, cwd)) if (cwd or os.path.isabs(path)) else False


def roles(command, reading, call: ToolCall) -> list[tuple[str, str, bool]]:
    """(path as written, role, subtree) for every path the command reaches."""
    argv, program, cwd = command.argv, command.program, command.cwd or call.cwd
    found: list[tuple[str, str, bool]] = []
    for op, target in command.redirects:
        if op in (">", ">>", "<>"):
            found.append((target, "write", False))
        elif op == "<":
            found.append((target, "read", False))
    if not argv or command.dynamic[0]:
        return found
    recursive = program in _RECURSIVE_PROGRAMS and any(_RECURSIVE.match(w) for w in argv[1:] if w.startswith("-"))

    def write(paths, *, tree=False):
        found.extend((p, "write", tree or recursive or _is_dir(p, cwd)) for p in paths)

    values = _VALUE_OPTIONS.get(program, ())
    known = True
    if program in _OPERANDS_WRITTEN:
        write(_operands(argv, values))
    elif program in _FIRST_OPERAND_IS_DATA:
        operands = _operands(argv, values)
        write(operands if any(w.startswith("--reference") for w in argv) else operands[1:])
    elif program in _LAST_OPERAND_WRITTEN:
        _copy_roles(argv, program, values, write, found, cwd)
    elif program in _IN_PLACE and _in_place(argv, program):
        operands = _operands(argv, ("-e", "-f", "--expression", "--file"))
        write(operands if _scripted(argv) else operands[1:])
    elif program == "dd":
        for word in argv[1:]:
            if word.startswith("of="):
                write([word[3:]])
            elif word.startswith("if="):
                found.append((word[3:], "read", False))
    elif program == "git":
        found += _git_roles(argv, cwd)
    elif program in ("tar", "bsdtar", "unzip", "7z", "patch"):
        found += _archive_roles(argv, program, cwd)
    elif program in ("curl", "wget"):
        found += _download_roles(argv, program)
        known = False
    elif program == "sort" and "-o" in argv[:-1]:
        write([argv[argv.index("-o") + 1]])
    elif program in READ_ONLY_PROGRAMS or program == "sed":
        found += [(w, "read", False) for w in _operands(argv) if path_like(w, cwd)]
    else:
        known = program in DATA_ONLY_PROGRAMS
    if program in _CODE_FLAGS:
        found += _code_literals(argv, program, cwd)
    if command.stdin_args and is_writer(program):
        listed = [t for other in reading.commands if other.pipeline == command.pipeline and other is not command
                  for t in other.argv[1:] if path_like(t, other.cwd or cwd) and _is_dir(t, other.cwd or cwd)]
        write(listed or ["."], tree=True)
        call.unseen.append(f"the words xargs gives {program}")
    if not known:
        found += [(w, "touch", False) for w in _path_words(argv, cwd)]
    return found


def _in_place(argv: list[str], program: str) -> bool:
    for word in argv[1:]:
        if word.startswith("--in-place") or word.startswith("-i"):
            return True
        if program != "sed" and word.startswith("-") and not word.startswith("--") and "i" in word[1:]:
            return True
    return False


def _scripted(argv: list[str]) -> bool:
    """The program's script came from -e/-f, so every operand is a file."""
    return any(w in ("-e", "-f", "--expression", "--file") or (w.startswith("-") and not w.startswith("--")
                                                              and w[-1:] in ("e", "E")) for w in argv[1:])


def _download_roles(argv: list[str], program: str) -> list[tuple[str, str, bool]]:
    found = []
    for index, word in enumerate(argv[1:-1], 1):
        value = argv[index + 1]
        if word in ("-o", "--output", "--output-document") or (program == "wget" and word == "-O"):
            found.append((value, "write", False))
        elif word in ("-P", "--directory-prefix"):
            found.append((value, "write", True))
        elif word in ("-T", "--upload-file", "-K", "--config"):
            found.append((value, "read", False))
    return found


def is_writer(program: str) -> bool:
    return program in _OPERANDS_WRITTEN or program in _FIRST_OPERAND_IS_DATA or program in _LAST_OPERAND_WRITTEN \
        or program in _IN_PLACE


def _path_words(argv: list[str], cwd: str | None) -> list[str]:
    out = []
    for word in argv[1:]:
        if word.startswith("-") and "=" in word:
            word = word.split("=", 1)[1]
        if path_like(word, cwd):
            out.append(word)
    return out


def _copy_roles(argv, program, values, write, found, cwd) -> None:
    operands = _operands(argv, values + ("-t", "--target-directory"))
    target_dir = next((argv[i + 1] for i, w in enumerate(argv[:-1]) if w in ("-t", "--target-directory")), None)
    target_dir = target_dir or next((w.split("=", 1)[1] for w in argv if w.startswith("--target-directory=")),
                                    None)
    if program == "install" and any(w in ("-d", "--directory") for w in argv):
        write(operands, tree=True)
        return
    if target_dir is not None:
        destination, sources = target_dir, operands
    elif program == "ln" and len(operands) == 1:
        destination, sources = os.path.basename(operands[0].rstrip("/")) or ".", operands
    elif len(operands) >= 2:
        destination, sources = operands[-1], operands[:-1]
    else:
        found.extend((w, "read", False) for w in operands)
        return
    if ":" in destination.split("/")[0] and program in ("rsync", "scp", "rcp"):
        found.extend((w, "read", False) for w in sources)
        return  # a remote destination
    found.extend((w, "read", False) for w in sources)
    write([destination])
    if _is_dir(destination, cwd):
        write([os.path.join(destination, os.path.basename(s.rstrip("/"))) for s in sources if s.strip("/")])
    if program == "rsync" and "--remove-source-files" in argv:
        write(sources)


def git_toplevel(cwd: str | None) -> str | None:
    """The work tree holding ``cwd`` (the nearest directory with ``.git``)."""
    path = cwd
    for _ in range(64):
        if not path:
            return None
        if os.path.lexists(os.path.join(path, ".git")):
            return path
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent
    return None


def _git_roles(argv: list[str], cwd: str | None) -> list[tuple[str, str, bool]]:
    index, tree = 1, None
    while index < len(argv) and argv[index].startswith("-"):
        word = argv[index]
        if word in _GIT_GLOBAL_VALUES and index + 1 < len(argv):
            if word == "-C":
                cwd = _absolute(argv[index + 1], cwd)
            elif word == "--work-tree":
                tree = _absolute(argv[index + 1], cwd)
            index += 2
            continue
        if word.startswith("--work-tree="):
            tree = _absolute(word.split("=", 1)[1], cwd)
        index += 1
    if index >= len(argv):
        return []
    verb, rest = argv[index], argv[index + 1:]
    whole = tree or git_toplevel(cwd) or cwd or "."
    here = cwd or "."
    after = rest[rest.index("--") + 1:] if "--" in rest else None
    operands = [w for w in _operands([verb] + rest, ("-e", "--exclude", "-b", "-B", "--orphan", "-s", "--source",
                                                     "-m", "--message", "-C", "-c", "-X"))]
    paths = [_absolute(p, cwd) for p in (after if after is not None else operands)]

    def written(items):
        return [(p, "write", True) for p in items]

    if verb == "clean":
        return written(paths or [here])
    if verb == "checkout":
        if after is not None:
            return written(paths)
        existing = [p for p in paths if os.path.lexists(p)]
        if existing:
            return written(existing)
        only_new_branch = any(w in ("-b", "-B", "--orphan") for w in rest) and not operands
        return [] if only_new_branch or (not operands and not rest) else written([whole])
    if verb == "restore":
        return written(paths)
    if verb == "reset":
        return written([whole]) if any(w in ("--hard", "--merge", "--keep") for w in rest) else []
    if verb == "stash":
        if rest[:1] and rest[0] in ("list", "show", "branch"):
            return []
        return written(paths if after else [whole])
    if verb in ("rm", "mv"):
        return [] if "--cached" in rest else written(paths)
    if verb == "apply":
        return [] if any(w in ("--check", "--stat", "--numstat", "--summary", "--cached") for w in rest) \
            else written([here])
    if verb in _GIT_WHOLE_TREE or (verb == "submodule" and "update" in rest) or (verb == "worktree" and
                                                                                  "remove" in rest):
        return written([whole])
    return [(p, "read", False) for p in paths if path_like(os.path.relpath(p, cwd) if cwd else p, cwd)]


def _archive_roles(argv: list[str], program: str, cwd: str | None) -> list[tuple[str, str, bool]]:
    directory = None
    for index, word in enumerate(argv[:-1]):
        if word in ("-C", "--directory", "-d"):
            directory = argv[index + 1]
    found: list[tuple[str, str, bool]] = []
    if program == "patch":
        files = _operands(argv, ("-i", "--input", "-o", "--output", "-p", "-d", "-D", "-r", "-F", "-B", "-V", "-z"))
        return [(f, "write", False) for f in files[:1]] or [(directory or ".", "write", True)]
    if program == "unzip":
        if "-l" in argv or "-t" in argv:
            return []
        return [(directory or ".", "write", True)]
    if program == "7z":
        return [(directory or ".", "write", True)] if argv[1:2] in (["x"], ["e"]) else []
    mode = argv[1] if len(argv) > 1 else ""
    flags = mode.lstrip("-") if not mode.startswith("--") else ""
    extract = "x" in flags or "--extract" in argv or "--get" in argv
    create = "c" in flags or "r" in flags or "u" in flags or "--create" in argv
    archive = next((argv[i + 1] for i, w in enumerate(argv[:-1]) if w in ("-f", "--file") or
                    (w.startswith("-") and not w.startswith("--") and w.endswith("f"))), None)
    if archive is None and len(argv) > 2 and "f" in flags and not mode.startswith("-"):
        archive = argv[2]
    if extract:
        found.append((directory or ".", "write", True))
    if archive:
        found.append((archive, "write" if create else "read", False))
    return found


def _code_literals(argv: list[str], program: str, cwd: str | None) -> list[tuple[str, str, bool]]:
    flags = _CODE_FLAGS[program]
    found = []
    for index, word in enumerate(argv[1:-1], 1):
        if word in flags or (word.startswith("-") and not word.startswith("--") and word[-1:] in
                             {f[-1] for f in flags if len(f) == 2} and len(word) <= 4):
            for match in _STRING_LITERAL.finditer(argv[index + 1]):
                literal = match.group(1) or match.group(2)
                if path_like(literal, cwd):
                    found.append((os.path.expanduser(literal) if literal.startswith("~") else literal, "touch",
                                  False))
                    if len(found) >= MAX_CODE_LITERALS:
                        return found
    return found
