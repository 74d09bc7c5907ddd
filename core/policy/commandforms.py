"""What each simple command of a shell call runs, as the ask rules read it.

``command_forms(call)`` gives one ``Form`` per simple command the shell reader
found in a ``ToolCall`` (``core.policy.toolcall``), in order: its words as
they run — the program by its base name (``/usr/bin/git`` is ``git``, a
``$(which git)`` that resolves is ``git``), a word made wholly of a command
substitution leash can read replaced by what it prints, and a git line in
``core.policy.gitroles``' form (global options off, aliases the call sets
expanded, ``send-pack`` as ``push``) — and how many of the leading words are
read. The rest is unread, and ``why`` says so:

* a program word that is computed and does not resolve (``$(printf 'git
  push')``), or a shell alias or function the command defines (``alias
  p='git push'; p``): nothing of it is read;
* a shell running a script file, a computed ``-c`` script, or a script from
  an input leash does not see (``bash push.sh``, ``cat x | sh``,
  ``source x.sh``); an interpreter given code (``python3 -c``, ``perl -e``,
  ``node script.js``, ``python3 -m mod``, code on its input); a program
  named by its path that is a script (``./push.sh``: its first bytes are
  ``#!``) or a file leash cannot open; ``su -c``, ``script -c`` and ``ssh
  HOST COMMAND``: nothing read;
* a computed word (``git $(cat verb)``), or words ``xargs`` adds from its
  input (``echo push | xargs git``): read up to that word.

A rule reads ``Form.text`` when the whole command is read, and asks whether
it could match a command starting with ``Form.prefix`` when it is not
(``core.base.askrules``). Programs that run code of their own from files
(``make``, ``npm run``, a compiled program, git's hooks) are read by their
own words only: so is a program found on PATH. Never raises.
"""
from __future__ import annotations

import os
import re
import shutil

from leash.core.policy.gitroles import COMPUTED_WORD, GitAliases, git_command_form, git_config_sets
from leash.core.policy.shelleffects import SHELLS, reads_stdin_script

INTERPRETERS = frozenset({"python", "python2", "python3", "pypy", "pypy3", "perl", "ruby", "node", "nodejs", "deno",
                          "bun", "php", "lua", "luajit", "Rscript", "tclsh", "wish", "pwsh", "powershell", "osascript",
                          "julia", "groovy", "jshell", "irb", "elixir", "escript", "guile", "racket", "tsx", "ts-node"})
_VERSIONED_PYTHON = re.compile(r"python\d(?:\.\d+)?\Z")
INFO_ONLY = frozenset({"--version", "-V", "--help", "-h"})  # an interpreter given only these runs no code
SOURCING = frozenset({"source", "."})
COMMAND_STRINGS = frozenset({"su", "script"})  # programs whose -c (--command) runs a command string
SSH_VALUES = frozenset({"-B", "-b", "-c", "-D", "-E", "-e", "-F", "-I", "-i", "-J", "-L", "-l", "-m", "-O", "-o", "-p",
                        "-Q", "-R", "-S", "-W", "-w"})
SCRIPT_MARK = b"#!"
PLAIN_PRINTERS = frozenset({"echo", "printf"})
XARGS_REPLACE = "{}"  # xargs -I's usual replace string: a word holding it is filled in from the input
# `name()` and `function name`: a shell function the command defines (read from the text itself).
_FUNCTION = re.compile(r"(?:^|[\s;&|(){}])(?:function\s+([^\s(){};&|<>'\"]+)|([A-Za-z_][\w.:+-]*)\s*\(\s*\))")
_GIT_VERB = re.compile(r"[A-Za-z0-9][\w.+-]*\Z")
GIT_EXEC_DIRS = ("/usr/lib/git-core", "/usr/libexec/git-core", "/usr/local/libexec/git-core",
                 "/opt/homebrew/opt/git/libexec/git-core")
SHOWN_WORD = 60
WHY_LIMIT = 200


class Form:
    """One simple command as the ask rules read it: ``words`` as it runs;
    ``known``: how many leading words leash read (``len(words)`` when all);
    ``why``: why the rest is not read ("" when all is)."""

    __slots__ = ("words", "known", "why")

    def __init__(self, words: list[str], known: int, why: str = ""):
        self.words, self.known, self.why = words, known, why

    @property
    def read(self) -> bool:
        return self.known >= len(self.words) and not self.why

    @property
    def text(self) -> str:
        return " ".join(self.words)

    @property
    def prefix(self) -> str:
        """What a command it may be starts with: the read words and a space."""
        return "".join(word + " " for word in self.words[:self.known])

    def __repr__(self) -> str:
        return f"Form({self.words!r}, known={self.known}, why={self.why!r})"


class _Seen:
    """What the commands before this one set: git aliases, shell aliases and functions."""

    __slots__ = ("git", "shell_names", "env", "cwd", "_external")

    def __init__(self, call):
        self.git, self.cwd = GitAliases(), call.cwd
        self.shell_names = {m.group(1) or m.group(2) for line in call.lines for m in _FUNCTION.finditer(line)}
        self.env = call.env or {}
        self._external: dict[str, bool] = {}

    def external(self, verb: str) -> bool:
        """Whether git would run a ``git-VERB`` program (on PATH or in git's own directory)."""
        found = self._external.get(verb)
        if found is None:
            path = os.pathsep.join(filter(None, (self.env.get("GIT_EXEC_PATH"), *GIT_EXEC_DIRS,
                                                 self.env.get("PATH", os.environ.get("PATH", "")))))
            found = bool(_GIT_VERB.match(verb)) and shutil.which(f"git-{verb}", path=path) is not None
            self._external[verb] = found
        return found

    def learn(self, command, form: Form) -> None:
        if command.program == "alias":
            self.shell_names.update(w.partition("=")[0] for w in command.argv[1:] if "=" in w)
        elif form.words[:2] == ["git", "config"] and form.known >= 2:
            git_config_sets(form.words, form.known, self.git)


def command_forms(call) -> list[Form]:
    """A ``Form`` per simple command of the call (empty for a call that is no shell command)."""
    reading = call.reading
    if reading is None:
        return []
    seen, forms = _Seen(call), []
    for position, command in enumerate(call.commands):
        if not command.argv:
            continue
        fed_by = call.commands[position - 1] if position else None
        if fed_by is not None and fed_by.pipeline != command.pipeline:
            fed_by = None
        form = _form(command, seen, reading.subs, fed_by)
        forms.append(form)
        seen.learn(command, form)
    return forms


def _shown(word: str, limit: int = SHOWN_WORD) -> str:
    """The agent's text, escaped and cut: it is data."""
    from leash.core.base.text import printable

    return printable(word, limit=limit)


def _words(command, subs) -> tuple[list[str], list[bool]]:
    """The words as they run, and per word whether leash knows it."""
    words, readable = [], []
    behind_xargs = "xargs" in command.via
    for index, word in enumerate(command.argv):
        known: str | None = word
        if index == 0:
            known = command.program if not command.dynamic[0] or command.resolved else None
        elif command.dynamic[index]:
            known = subs.word(command, index)
        if known is not None and behind_xargs and XARGS_REPLACE in known:
            known = None
        words.append(known if known is not None else word)
        readable.append(known is not None)
    if command.stdin_args:
        words.append("…")
        readable.append(False)
    return words, readable


def _form(command, seen: _Seen, subs, fed_by) -> Form:
    words, readable = _words(command, subs)
    program = words[0]
    if not readable[0]:
        return Form([], 0, f"its program is computed ({_shown(command.argv[0])})")
    if program in seen.shell_names:
        return Form([], 0, f"{_shown(program)} is a shell alias or function the command defines")
    unread = _code_unread(command, program, words, readable, fed_by) or _program_file_unread(command, seen.cwd)
    if unread:
        return Form([], 0, unread)
    if program == "git":
        form, known, why = git_command_form(words, readable, seen.git, external=seen.external)
        return Form(form, known, _unread_word(command, readable) if why == COMPUTED_WORD else _shown(why, WHY_LIMIT))
    known = next((i for i, r in enumerate(readable) if not r), len(words))
    return Form(words, known, _unread_word(command, readable) if known < len(words) else "")


def _unread_word(command, readable: list[bool]) -> str:
    known = readable.index(False)
    if known >= len(command.argv):
        return "xargs adds words from its input"
    return f"{COMPUTED_WORD} ({_shown(command.argv[known])})"


def _code_unread(command, program: str, words: list[str], readable: list[bool], fed_by) -> str:
    """Why the code the program runs is not read ("" when it is, or it runs none)."""
    if program in SOURCING:
        return f"it sources {_shown(words[1]) if len(words) > 1 else 'a script'} into the shell"
    if program in SHELLS:
        return _shell_unread(command, program, words, readable, fed_by)
    if program in INTERPRETERS or _VERSIONED_PYTHON.match(program):
        if all(word in INFO_ONLY for word in words[1:]) and len(words) > 1:
            return ""
        return f"{program} runs code leash does not read"
    if program in COMMAND_STRINGS and any(_gives_command(word) for word in words[1:]):
        return f"{program} runs a command string leash does not read"
    if program == "ssh" and _ssh_runs_a_command(words):
        return "ssh runs a command on another host"
    return ""


def _gives_command(word: str) -> bool:
    if word.startswith("--"):
        return word.partition("=")[0] == "--command"
    return word.startswith("-") and "c" in word[1:]


def _ssh_runs_a_command(words: list[str]) -> bool:
    index, operands = 1, 0
    while index < len(words):
        word = words[index]
        if word.startswith("-") and operands == 0:
            index += 2 if word in SSH_VALUES else 1
            continue
        operands += 1
        index += 1
    return operands > 1


def _program_file_unread(command, cwd: str | None) -> str:
    """A program named by its path is read by its words when it is a compiled
    program; a script (``#!``), or a file leash cannot open, is not read."""
    written = command.argv[0]
    if "/" not in written or command.dynamic[0]:
        return ""
    base = command.cwd or cwd
    path = written if os.path.isabs(written) else os.path.join(base, written) if base else None
    try:
        if path is not None:
            with open(path, "rb") as program:
                if program.read(len(SCRIPT_MARK)) != SCRIPT_MARK:
                    return ""
    except OSError:
        return f"it runs {_shown(written)}, which leash cannot open"
    return f"it runs the script {_shown(written)}"


def _script_index(words: list[str]) -> int | None:
    """Index of the script of ``sh -c SCRIPT`` (as the shell reader finds it), or None."""
    index, seen_c = 1, False
    while index < len(words):
        word = words[index]
        if word == "--":
            index += 1
            break
        if word in ("-o", "+o", "-O", "+O"):
            index += 2
            continue
        if word[:1] in "-+" and len(word) > 1:
            seen_c = seen_c or (not word.startswith("--") and "c" in word[1:])
            index += 1
            continue
        break
    return index if seen_c and index < len(words) else None


def _shell_unread(command, program: str, words: list[str], readable: list[bool], fed_by) -> str:
    script = _script_index(words)
    if script is not None:
        return "" if readable[script] else f"{program} runs a computed script"
    if not reads_stdin_script(command):
        operand = next((w for w in words[1:] if not w.startswith("-")), "")
        return f"{program} runs the script {_shown(operand)}"
    if command.heredoc is not None or any(op == "<<<" for op, _ in command.redirects):
        return ""
    if fed_by is not None and fed_by.program in PLAIN_PRINTERS and not any(fed_by.dynamic[1:]):
        return ""
    return f"{program} runs a script from its input"
