"""Which tool calls only look: what a halted session may still run.

A halted session may run the tools in ``[gate] read_only_tools`` (Claude Code's
Read) and Bash commands that, read by the shell reader, only look: every simple
command is a read-only program (``ls``, ``cat``, ``grep``, ``rg``, ``find``
without ``-exec``/``-delete``, ``git status|log|diff|show|...``) or a harmless
builtin (``echo``, ``pwd``, ``true``), nothing is written (no redirection but to
``/dev/null``), nothing runs through a shell string, a substitution or
``xargs``, and the reader saw the whole command.

What it cannot see: a read-only program can still leak what it reads (that is
the secrets rule's job), and ``git`` with an alias or an external diff tool
configured runs whatever that configuration says.
"""
from __future__ import annotations

from leash.core.policy.toolcall import READ_ONLY_PROGRAMS

HARMLESS_BUILTINS = frozenset({"echo", "printf", "true", "false", "pwd", "test", "[", "date", "whoami", "id",
                               "uname", "hostname", "nproc", "env", "printenv", "sleep"})
READ_ONLY_GIT_VERBS = frozenset({"status", "log", "diff", "show", "blame", "shortlog", "describe", "rev-parse",
                                 "ls-files", "ls-tree", "cat-file", "grep", "reflog", "whatchanged"})
_FIND_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprintf", "-fls"})
_BRANCH_LISTING = frozenset({"-l", "--list", "-a", "--all", "-r", "--remotes", "-v", "-vv", "--show-current"})


def is_read_only_call(call) -> bool:
    """True when a Bash ``ToolCall`` only looks (see the module docstring)."""
    if call is None or call.incomplete or call.unseen or not call.commands:
        return False
    if any(target.path != "/dev/null" for target in call.writes):
        return False
    return all(_looks_only(command) for command in call.commands)


def _looks_only(command) -> bool:
    if command.via or command.substitutions or any(command.dynamic) or command.stdin_args:
        return False  # run through a wrapper, a shell string or a substitution: judged as unknown
    if any(target != "/dev/null" for op, target in _written_redirects(command)):
        return False
    program, args = command.program, command.argv[1:]
    if program == "git":
        return _git_reads(args)
    if program == "find":
        return not any(arg in _FIND_ACTIONS for arg in args)
    if program == "env":
        return not args
    return program in READ_ONLY_PROGRAMS or program in HARMLESS_BUILTINS


def _git_reads(args: list[str]) -> bool:
    words = [a for a in args if not a.startswith("-")]
    if any(a.startswith(("-c", "--exec-path", "--git-dir", "--work-tree")) for a in args[:2]):
        return False
    if not words:
        return False
    verb = words[0]
    if verb == "branch":
        return all(a in _BRANCH_LISTING for a in args[1:] if a.startswith("-")) and len(words) == 1
    return verb in READ_ONLY_GIT_VERBS and "--output" not in " ".join(args) and "--ext-diff" not in args


def _written_redirects(command) -> list[tuple[str, str]]:
    return [(op, target) for op, target in _redirects(command) if ">" in op]


def _redirects(command) -> list[tuple[str, str]]:
    found = []
    for redirect in command.redirects or ():
        if isinstance(redirect, (tuple, list)) and len(redirect) >= 2:
            found.append((str(redirect[0]), str(redirect[-1])))
    return found
