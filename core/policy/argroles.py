"""What a program does with its arguments: the role of each path a simple command names.

``roles(command, reading, call)`` gives (path as written, role, subtree) for
every path one ``core.shellread.SimpleCommand`` reaches, from a table of small
functions by program (``HANDLERS``):

* written: redirection targets (``>``, ``>>``, ``<>``); the operands of
  ``rm``, ``mv``, ``touch``, ``mkdir``, ``chmod``, ``tee``, ``truncate``,
  editors, ``sed -i``; the destination of ``cp``/``install``/``ln``/``rsync``;
  ``dd of=``, ``curl -o``, ``tar -x``/``unzip`` (the target directory: ``-C``,
  ``--directory``, anywhere on the line), and the git verbs that rewrite the
  work tree (``core.gitroles``). A written directory — an existing one, a
  recursive operation, or a whole tree — is a subtree. ``xargs`` feeding a
  writing command writes under the directories the pipeline lists;
* read: redirections from files, the operands of read-only programs, the
  sources of a copy, what ``tar -c`` packs;
* touched, role unknown: path-like operands of any other program (and of a
  program word that is computed and does not resolve), and the path-like
  string literals of ``python -c``/``node -e``/``perl -e`` code.

A word is path-like when it has no whitespace and contains ``/``, has a
``.ext`` or names an existing file relative to where the command runs. Never
raises on any input.
"""
from __future__ import annotations

import os
import re

from leash.core.policy.argwords import VALUE_OPTIONS, absolute, is_dir, operands, path_like
from leash.core.policy.copyroles import archive_roles, copy_roles
from leash.core.policy.gitroles import git_roles

__all__ = ["absolute", "is_dir", "operands", "path_like", "roles", "is_writer", "READ_ONLY_PROGRAMS",
           "DATA_ONLY_PROGRAMS", "CODE_FLAGS"]

TYPE_CHECKING = False  # for the type checker only: the hook path does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable

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
CODE_FLAGS = {"python": ("-c",), "python3": ("-c",), "python2": ("-c",), "pypy3": ("-c",),
              "node": ("-e", "-p", "--eval", "--print"), "deno": ("eval",), "bun": ("-e", "--eval"),
              "perl": ("-e", "-E"), "ruby": ("-e",), "php": ("-r",), "Rscript": ("-e",), "osascript": ("-e",)}
_SCRIPT_OPTIONS = ("-e", "-f", "--expression", "--file")
_RECURSIVE = re.compile(r"^-[A-Za-z]*[rRa]|^--recursive$|^--archive$")
_RECURSIVE_PROGRAMS = frozenset({"rm", "cp", "chmod", "chown", "chgrp", "rsync", "scp", "shred", "setfacl"})
_STRING_LITERAL = re.compile(r"'([^'\\\n]+)'|\"([^\"\\\n]+)\"")


def is_writer(program: str) -> bool:
    return program in _OPERANDS_WRITTEN or program in _FIRST_OPERAND_IS_DATA or program in _LAST_OPERAND_WRITTEN \
        or program in _IN_PLACE


class Args:
    """One command's words as its program's handler reads them, and what it found."""

    __slots__ = ("argv", "program", "cwd", "recursive", "found")

    def __init__(self, argv: list[str], program: str, cwd: str | None):
        self.argv, self.program, self.cwd = argv, program, cwd
        self.recursive = program in _RECURSIVE_PROGRAMS and any(_RECURSIVE.match(w) for w in argv[1:]
                                                                 if w.startswith("-"))
        self.found: list[tuple[str, str, bool]] = []

    def write(self, paths, *, tree: bool = False) -> None:
        self.found.extend((p, "write", tree or self.recursive or is_dir(p, self.cwd)) for p in paths)

    def read(self, paths) -> None:
        self.found.extend((p, "read", False) for p in paths)

    def operands(self, values: tuple = ()) -> list[str]:
        return operands(self.argv, values or VALUE_OPTIONS.get(self.program, ()))


# ------------------------------------------------------------ handlers: each returns whether the program is known
def _operands_written(args: Args) -> bool:
    args.write(args.operands())
    return True


def _mode_then_files(args: Args) -> bool:
    found = args.operands()
    args.write(found if any(w.startswith("--reference") for w in args.argv) else found[1:])
    return True


def _copied(args: Args) -> bool:
    copy_roles(args)
    return True


def _in_place(argv: list[str], program: str) -> bool:
    for word in argv[1:]:
        if word.startswith("--in-place") or word.startswith("-i"):
            return True
        if program != "sed" and word.startswith("-") and not word.startswith("--") and "i" in word[1:]:
            return True
    return False


def _scripted(argv: list[str]) -> bool:
    """The program's script came from -e/-f, so every operand is a file."""
    return any(w in _SCRIPT_OPTIONS or (w.startswith("-") and not w.startswith("--") and w[-1:] in ("e", "E"))
               for w in argv[1:])


def _edited_in_place(args: Args) -> bool:
    if not _in_place(args.argv, args.program):
        return _read_operands(args) if args.program == "sed" else False
    found = operands(args.argv, _SCRIPT_OPTIONS)
    args.write(found if _scripted(args.argv) else found[1:])
    return True


def _dd(args: Args) -> bool:
    for word in args.argv[1:]:
        if word.startswith("of="):
            args.write([word[3:]])
        elif word.startswith("if="):
            args.read([word[3:]])
    return True


def _git(args: Args) -> bool:
    args.found += git_roles(args.argv, args.cwd)
    return True


def _downloaded(args: Args) -> bool:
    argv = args.argv
    for index, word in enumerate(argv[1:-1], 1):
        value = argv[index + 1]
        if word in ("-o", "--output", "--output-document") or (args.program == "wget" and word == "-O"):
            args.found.append((value, "write", False))
        elif word in ("-P", "--directory-prefix"):
            args.found.append((value, "write", True))
        elif word in ("-T", "--upload-file", "-K", "--config"):
            args.read([value])
    return False  # its other words (a URL, headers) have effects leash does not know


def _sorted(args: Args) -> bool:
    if "-o" in args.argv[:-1]:
        args.write([args.argv[args.argv.index("-o") + 1]])
        return True
    return False


def _read_operands(args: Args) -> bool:
    args.read(w for w in operands(args.argv) if path_like(w, args.cwd))
    return True


def _archive(args: Args) -> bool:
    archive_roles(args)
    return True


HANDLERS: dict[str, Callable[[Args], bool]] = {
    **{p: _operands_written for p in _OPERANDS_WRITTEN},
    **{p: _mode_then_files for p in _FIRST_OPERAND_IS_DATA},
    **{p: _copied for p in _LAST_OPERAND_WRITTEN},
    **{p: _read_operands for p in READ_ONLY_PROGRAMS},
    **{p: _edited_in_place for p in _IN_PLACE},
    "dd": _dd, "git": _git, "curl": _downloaded, "wget": _downloaded, "sort": _sorted,
    "tar": _archive, "bsdtar": _archive, "unzip": _archive, "7z": _archive, "patch": _archive,
}


def roles(command, reading, call) -> list[tuple[str, str, bool]]:
    """(path as written, role, subtree) for every path the command reaches."""
    argv, program, cwd = command.argv, command.program, command.cwd or call.cwd
    found = _redirect_roles(command)
    if not argv:
        return found
    if command.dynamic[0] and command.resolved is None:  # a program leash cannot name: its effect is unknown
        return found + [(w, "touch", False) for w in path_words(argv, cwd)]
    args = Args(argv, program, cwd)
    handler = HANDLERS.get(program)
    known = handler(args) if handler is not None else program in DATA_ONLY_PROGRAMS
    if program in CODE_FLAGS:
        args.found += code_literals(argv, program, cwd)
    if command.stdin_args and is_writer(program):
        _fed_by_xargs(args, command, reading)
        call.unseen.append(f"the words xargs gives {program}")
    if not known:
        args.found += [(w, "touch", False) for w in path_words(argv, cwd)]
    return found + args.found


def _fed_by_xargs(args: Args, command, reading) -> None:
    """A writer behind ``xargs`` writes under the directories its pipeline lists, or the cwd."""
    cwd = args.cwd
    listed = [t for other in reading.commands if other.pipeline == command.pipeline and other is not command
              for t in other.argv[1:] if path_like(t, other.cwd or cwd) and is_dir(t, other.cwd or cwd)]
    args.write(listed or ["."], tree=True)


def _redirect_roles(command) -> list[tuple[str, str, bool]]:
    found = []
    for op, target in command.redirects:
        if op in (">", ">>", "<>"):
            found.append((target, "write", False))
        elif op == "<":
            found.append((target, "read", False))
    return found


def path_words(argv: list[str], cwd: str | None) -> list[str]:
    out = []
    for word in argv[1:]:
        if word.startswith("-") and "=" in word:
            word = word.split("=", 1)[1]
        if path_like(word, cwd):
            out.append(word)
    return out


def _code_flag(word: str, flags: tuple) -> bool:
    return word in flags or (word.startswith("-") and not word.startswith("--") and len(word) <= 4
                             and word[-1:] in {f[-1] for f in flags if len(f) == 2})


def code_literals(argv: list[str], program: str, cwd: str | None) -> list[tuple[str, str, bool]]:
    """The path-like string literals of the code given to an interpreter (``python -c``)."""
    flags = CODE_FLAGS[program]
    found: list[tuple[str, str, bool]] = []
    for index, word in enumerate(argv[1:-1], 1):
        if not _code_flag(word, flags):
            continue
        for match in _STRING_LITERAL.finditer(argv[index + 1]):
            literal = match.group(1) or match.group(2)
            if path_like(literal, cwd):
                found.append((os.path.expanduser(literal) if literal.startswith("~") else literal, "touch", False))
                if len(found) >= MAX_CODE_LITERALS:
                    return found
    return found
