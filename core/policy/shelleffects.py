"""What running a simple command changes for the shell reader, and the commands it runs in turn.

``effects(reader, command, scope, fed_by)``, from a table by program
(``EFFECTS``): ``cd``/``pushd``/``popd`` move the scope's directory (not
behind a wrapper, which runs them in a child); ``export``/``declare`` ...
assign and ``unset`` forgets; a shell reads its ``-c`` script, its
here-string, or what ``echo``/``printf`` of plain words pipes into it;
``eval`` reads its words; ``tmux`` what it runs under its server
(``core.tmuxcommands``); ``source`` is noted as unseen; ``find -delete`` /
``-exec`` become the commands they run. ``Words.unwrap`` takes the
keywords and wrappers (``sudo``, ``env``, ``xargs``, ``timeout`` ...) off a
command's words, with the directory ``env -C``/``sudo -D`` set, resolving a
computed program word on the way. What cannot be seen is noted on the
reading (``unseen``); nothing here raises.
"""
from __future__ import annotations

import os
import re

from leash.core.policy.shellcommand import Scope, SimpleCommand
from leash.core.policy.shellresolve import Substitutions, program_name
from leash.core.policy.tmuxcommands import tmux_scripts

TYPE_CHECKING = False  # for the type checker only: the hook path does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "busybox"})
WRAPPERS = frozenset({"sudo", "doas", "env", "nohup", "time", "nice", "ionice", "timeout", "exec", "command",
                      "xargs", "stdbuf", "setsid", "chroot", "runuser", "watch", "strace", "unbuffer", "builtin",
                      "flock", "caffeinate", "chrt", "taskset", "unshare", "nsenter"})
# Options of wrappers that take the next word as their value.
WRAPPER_VALUES = {
    "sudo": {"-u", "-g", "-C", "-p", "-r", "-t", "-U", "-h", "-D", "--chdir", "--user", "--group"},
    "timeout": {"-s", "-k", "--signal", "--kill-after"}, "nice": {"-n"}, "ionice": {"-n", "-c", "-p"},
    "xargs": {"-I", "-n", "-P", "-L", "-d", "-E", "-s", "-a", "--arg-file", "--delimiter", "--max-args"},
    "env": {"-u", "-C", "--unset", "--chdir", "-S"}, "stdbuf": {"-i", "-o", "-e"}, "watch": {"-n", "-d"},
    "runuser": {"-u", "-g", "-l"}, "strace": {"-o", "-e", "-p", "-s"}, "flock": {"-w", "-E"},
    "chrt": {"-p"}, "taskset": {"-p", "-c"},
}
LEADING_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "fi", "done",
                              "esac", "time", "coproc"})
CHDIR_OPTIONS = {("env", "-C"), ("env", "--chdir"), ("sudo", "-D"), ("sudo", "--chdir")}
_ASSIGNERS = frozenset({"export", "declare", "typeset", "local", "readonly"})
_LITERAL_ECHO = frozenset({"echo", "printf"})
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+?=")
_ECHO_OPTIONS = frozenset({"-n", "-e", "-E", "-ne", "-en"})


def _cd(r, command: SimpleCommand, scope: Scope, fed_by) -> None:
    if command.via == scope.via:  # behind a wrapper it runs in a child: the shell stays where it is
        _change_dir(r, command, scope)


def _assigned(r, command: SimpleCommand, scope: Scope, fed_by) -> None:
    for index, word in enumerate(command.argv[1:], 1):
        match = _ASSIGNMENT.match(word)
        if match:
            scope.vars[match.group(1)] = None if command.dynamic[index] else word[match.end():]


def _unset(r, command: SimpleCommand, scope: Scope, fed_by) -> None:
    for name in command.argv[1:]:
        scope.vars[name] = None


def _shell(r, command: SimpleCommand, scope: Scope, fed_by) -> None:
    argv, program = command.argv, command.program
    script = _dash_c(argv)
    if script is not None:
        if command.dynamic[script]:
            r.unseen(f"a computed script run by {program}")
        else:
            r.read(argv[script], child(scope, command))
    elif reads_stdin_script(command):
        _stdin_script(r, command, scope, fed_by)
    else:
        r.unseen(f"the script {next(a for a in argv[1:] if not a.startswith('-'))} run by {program}")


def _stdin_script(r, command: SimpleCommand, scope: Scope, fed_by: SimpleCommand | None) -> None:
    """A shell reading its script from stdin: a here-string, or what a plain echo pipes in."""
    here = next((t for op, t in command.redirects if op == "<<<"), None)
    if here is not None:
        r.read(here, child(scope, command))
    elif fed_by is not None and fed_by.program in _LITERAL_ECHO and not any(fed_by.dynamic[1:]):
        words = fed_by.argv[1:]
        while words and fed_by.program == "echo" and words[0] in _ECHO_OPTIONS:
            words = words[1:]
        r.read(" ".join(words).replace("\\n", "\n"), child(scope, command))
    elif fed_by is not None:
        r.unseen(f"what {fed_by.program} prints, run by {command.program}")


def _eval(r, command: SimpleCommand, scope: Scope, fed_by) -> None:
    if len(command.argv) < 2:
        return
    inner = Scope(scope.cwd, scope.vars, scope.depth + 1, scope.via + ("eval",), scope.within, scope.dirs)
    if any(command.dynamic[1:]):
        r.unseen("a computed string run by eval")
    r.read(" ".join(command.argv[1:]), inner)
    scope.cwd = inner.cwd


def _sourced(r, command: SimpleCommand, scope: Scope, fed_by) -> None:
    r.unseen(f"the script {command.argv[1] if len(command.argv) > 1 else ''} sourced into the shell")


def _find(r, command: SimpleCommand, scope: Scope, fed_by) -> None:
    for synthetic in _find_actions(command):
        r.reading.commands.append(synthetic)
        effects(r, synthetic, scope, None)


def _tmux(r, command: SimpleCommand, scope: Scope, fed_by) -> None:
    """What tmux runs under its server, outside the caller's process tree, is
    read as a nested command (``core.tmuxcommands``); keys typed into another
    pane run where that pane's shell stands, which is not known."""
    found = tmux_scripts(command.argv, command.dynamic, own_pane=r.lookup("TMUX_PANE", scope))
    for what in found.unseen:
        r.unseen(what)
    if found.incomplete:
        r.stop(found.incomplete)
    for text, computed, directory, here in found.scripts:
        if computed:
            r.unseen("a computed command run by tmux")
        inner = child(scope, command)
        inner.cwd = (join(command.cwd, directory) if directory else command.cwd) if here else None
        r.read(text, inner)


EFFECTS: dict[str, Callable[..., None]] = {
    "tmux": _tmux, "cd": _cd, "pushd": _cd, "popd": _cd, "unset": _unset, "eval": _eval, "source": _sourced,
    ".": _sourced, "find": _find, **{name: _assigned for name in _ASSIGNERS}, **{name: _shell for name in SHELLS},
}


def effects(r, command: SimpleCommand, scope: Scope, fed_by: SimpleCommand | None) -> None:
    """What running the command changes for the reader: the directory,
    variables, and commands it runs in turn (``r``: the reader)."""
    handler = EFFECTS.get(command.program) if command.argv else None
    if handler is not None:
        handler(r, command, scope, fed_by)


def join(cwd: str | None, path: str) -> str | None:
    if os.path.isabs(path):
        return os.path.normpath(path)
    return os.path.normpath(os.path.join(cwd, path)) if cwd else None


def child(scope: Scope, command: SimpleCommand) -> Scope:
    inner = scope.subshell(via=command.via + (command.program,))
    inner.cwd = command.cwd
    return inner


def _change_dir(reader, command: SimpleCommand, scope: Scope) -> None:
    words = zip(command.argv[1:], command.dynamic[1:], strict=True)
    args = [(a, d) for a, d in words if not (a.startswith("-") and a != "-")]
    if command.program == "popd":
        scope.cwd = scope.dirs.pop() if scope.dirs else scope.cwd
        return
    target, computed = args[0] if args else (reader.lookup("HOME", scope) or "~", False)
    if computed or target == "-":
        reader.unseen("a computed cd target: later relative paths are read against the last known directory")
        return
    if command.program == "pushd" and scope.cwd:
        scope.dirs.append(scope.cwd)
    scope.cwd = join(scope.cwd, target) or scope.cwd


def unwrap(program: str, argv: list[str], dynamic: list[bool]) -> tuple[list[str], list[bool], str | None]:
    """The command a wrapper runs, and the directory it runs it in (``env -C``)."""
    rest, computed, chdir = argv[1:], dynamic[1:], None
    values = WRAPPER_VALUES.get(program, ())
    while rest:
        word = rest[0]
        if word == "--":
            rest, computed = rest[1:], computed[1:]
            break
        if word.startswith("-") and len(word) > 1:
            rest, computed = rest[1:], computed[1:]
            option, _, value = word.partition("=")
            if value and (program, option) in CHDIR_OPTIONS:
                chdir = value
            elif word in values and rest:
                if (program, word) in CHDIR_OPTIONS:
                    chdir = rest[0]
                rest, computed = rest[1:], computed[1:]
            continue
        if program in ("env", "sudo") and _ASSIGNMENT.match(word):
            rest, computed = rest[1:], computed[1:]
            continue
        break
    # wrappers whose first operand is theirs: a duration, a new root, a lock file, a CPU mask
    takes_operand = program in ("timeout", "chroot", "flock", "taskset", "chrt")
    if rest and (takes_operand or (program == "watch" and _is_number(rest[0]))):
        rest, computed = rest[1:], computed[1:]
    return rest, computed, chdir


def _is_number(word: str) -> bool:
    return word.rstrip("smhd").replace(".", "", 1).isdigit()


def _dash_c(argv: list[str]) -> int | None:
    """Index of the script of ``sh -c SCRIPT``, or None."""
    seen_c = False
    index = 1
    while index < len(argv):
        word = argv[index]
        if word == "--":
            index += 1
            break
        if word in ("-o", "+o", "-O", "+O"):
            index += 2
            continue
        if word[:1] in "-+" and len(word) > 1 and not word.startswith("--"):
            seen_c = seen_c or "c" in word[1:]
            index += 1
            continue
        if word.startswith("--"):
            index += 1
            continue
        break
    return index if seen_c and index < len(argv) else None


def reads_stdin_script(command: SimpleCommand) -> bool:
    if command.program not in SHELLS or _dash_c(command.argv) is not None:
        return False
    options = [a for a in command.argv[1:] if a.startswith("-")]
    operands = [a for a in command.argv[1:] if not a.startswith("-")]
    return not operands or any("s" in o[1:] for o in options if not o.startswith("--"))


def _find_actions(command: SimpleCommand) -> list[SimpleCommand]:
    """``find P -delete`` and ``find P -exec CMD {} ;`` as the commands they run."""
    args = command.argv[1:]
    starts = []
    for word in args:
        if word.startswith("-") or word in ("(", "!", ")"):
            break
        starts.append(word)
    starts = starts or ["."]
    actions, index = [], 0
    while index < len(args):
        word = args[index]
        if word == "-delete":
            actions.append(["rm", "-rf", *starts])
        elif word in ("-exec", "-execdir", "-ok", "-okdir"):
            inner = []
            index += 1
            while index < len(args) and args[index] not in (";", "+"):
                inner.append(args[index])
                index += 1
            expanded = []
            for part in inner:
                expanded += starts if part == "{}" else [part]
            if expanded:
                actions.append(expanded + ([] if "{}" in inner else list(starts)))
        index += 1
    return [SimpleCommand(argv, [False] * len(argv), [], command.via + ("find",), command.cwd, command.pipeline,
                          command.within, [], [], command.line) for argv in actions]


class Words:
    """A command's words while the reader takes keywords and wrappers off
    their front: ``argv``, ``dynamic`` and ``sources`` stay aligned."""

    __slots__ = ("argv", "dynamic", "sources")

    def __init__(self, argv: list[str], dynamic: list[bool], sources: list[int]):
        self.argv, self.dynamic, self.sources = argv, dynamic, sources

    def drop(self, count: int) -> None:
        self.argv, self.dynamic, self.sources = self.argv[count:], self.dynamic[count:], self.sources[count:]

    def drop_keywords(self) -> None:
        while self.argv and self.argv[0] in LEADING_KEYWORDS and not self.dynamic[0]:
            self.drop(1)

    def name(self, subs: Substitutions) -> str | None:
        return program_name(self.argv[0], self.dynamic[0], self.sources[0], subs)

    def resolved(self, subs: Substitutions) -> str | None:
        """The program a computed program word resolves to (None: not computed, or unknown)."""
        return self.name(subs) if self.argv and self.dynamic[0] else None

    def unwrap(self, cwd: str | None, via: tuple, subs: Substitutions) -> tuple[str | None, tuple, bool]:
        """Take the wrappers off (``sudo``, ``env``, ``xargs`` ...): (the
        directory the command runs in, the wrappers, whether xargs adds words)."""
        stdin_args = False
        while self.argv:
            program = self.name(subs)
            if program not in WRAPPERS or len(self.argv) == 1 or _looks_up(program, self.argv):
                break  # a wrapper with nothing to run is itself the command (env prints the environment)
            rest, _, chdir = unwrap(program, self.argv, self.dynamic)
            self.drop(len(self.argv) - len(rest))
            if chdir:
                cwd = join(cwd, chdir)
            via += (program,)
            stdin_args = stdin_args or program == "xargs"
        return cwd, via, stdin_args


def _looks_up(program: str, argv: list[str]) -> bool:
    """``command -v NAME`` / ``command -V NAME`` only print what NAME is: nothing runs."""
    return program == "command" and any(w in ("-v", "-V") for w in argv[1:3])
