"""The shell reader: what a command line would run, read the way bash reads it.

Every rule that looks at a shell command (path locks, halt conditions,
supervisor tampering) reads it through ``read_shell``, which returns the
simple commands the line would run, in order, each with its argv (quotes
removed, variables, ``~``, braces and globs expanded), its redirections and
the working directory it runs in. Nothing is executed.

What it follows: ``;``, ``&&``, ``||``, ``|``, ``&``, newlines, ``( ... )``
and ``{ ...; }``; ``$(...)``, backquotes and ``<(...)`` (their commands run
first, their output is unknown); ``bash -c``/``sh -c`` strings, ``eval``,
here-documents and here-strings fed to a shell, ``echo ... | sh``; wrappers
(``sudo``, ``env``, ``xargs``, ``nohup``, ``timeout``, ``nice`` ...), with
``env -C``/``sudo -D`` changing the directory; ``find -exec``/``-delete``;
``cd``/``pushd``/``popd`` carried across the list (a subshell or a nested
shell keeps its own); assignments (``D=~/x; rm -r $D``, ``export``);
``$HOME``, ``$PWD``, ``$LEASH_HOME`` and the variables of the given
environment; ``$'...'`` quoting; globs and braces expanded against the
working tree.

Bounds, so a huge or hostile line costs linear time: nesting deeper than
``MAX_DEPTH``, more than ``MAX_SIMPLE_COMMANDS`` commands or ``MAX_WORDS``
words stop the reading and set ``Reading.incomplete`` (rules fail closed on
it); brace and glob expansion share a budget of ``MAX_EXPANDED_WORDS`` words
and ``MAX_GLOB_ENTRIES`` directory entries, past which the word is kept as
written and its directory is reported as touched as a whole
(``SimpleCommand.overflow_dirs``). What the reader cannot know (a computed
word, a script file it would run) is listed in ``Reading.unseen``. It never
raises on any input.
"""
from __future__ import annotations

import os
import re

TYPE_CHECKING = False  # ``typing`` is for the type checker only: the hook path does not import it
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Literal

MAX_DEPTH = 8
MAX_SIMPLE_COMMANDS = 1_000
MAX_WORDS = 16_000
MAX_EXPANDED_WORDS = 4096
MAX_GLOB_ENTRIES = 20_000
MAX_PATTERN_CHARS = 4096  # longer words are never brace- or glob-expanded
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "busybox"})
WRAPPERS = frozenset({"sudo", "doas", "env", "nohup", "time", "nice", "ionice", "timeout", "exec", "command",
                      "xargs", "stdbuf", "setsid", "chroot", "runuser", "watch", "strace", "unbuffer", "builtin",
                      "flock", "caffeinate", "chrt", "taskset", "unshare", "nsenter"})
# Options of wrappers that take the next word as their value.
_VALUE_OPTIONS = {
    "sudo": {"-u", "-g", "-C", "-p", "-r", "-t", "-U", "-h", "-D", "--chdir", "--user", "--group"},
    "timeout": {"-s", "-k", "--signal", "--kill-after"}, "nice": {"-n"}, "ionice": {"-n", "-c", "-p"},
    "xargs": {"-I", "-n", "-P", "-L", "-d", "-E", "-s", "-a", "--arg-file", "--delimiter", "--max-args"},
    "env": {"-u", "-C", "--unset", "--chdir", "-S"}, "stdbuf": {"-i", "-o", "-e"}, "watch": {"-n", "-d"},
    "runuser": {"-u", "-g", "-l"}, "strace": {"-o", "-e", "-p", "-s"}, "flock": {"-w", "-E"},
    "chrt": {"-p"}, "taskset": {"-p", "-c"},
}
_CHDIR_OPTIONS = {("env", "-C"), ("env", "--chdir"), ("sudo", "-D"), ("sudo", "--chdir")}
_LEADING_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "fi", "done",
                               "esac", "time", "coproc"})
_HEADERS = frozenset({"for", "case", "select", "function", "in"})
_ASSIGNERS = frozenset({"export", "declare", "typeset", "local", "readonly"})
_LITERAL_ECHO = frozenset({"echo", "printf"})

# segment kinds of a word as written
_BARE, _QUOTED, _VAR, _SUBST = 0, 1, 2, 3
_PLAIN = re.compile(r"[^\s'\"\\$`;&|<>()]+")
_BLANK = re.compile(r"[ \t\r\f\v]+")
_DQ_PLAIN = re.compile(r'[^"\\$`]+')
_REDIRECT = re.compile(r"(\d{0,3})(&>>|&>|>>|>\||>&|<<<|<<-|<<|<>|<&|>|<)")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPECIAL_PARAM = re.compile(r"[0-9@*#?$!-]")
_ANSI_C = re.compile(r"\$'((?:[^'\\]|\\.)*)'?", re.DOTALL)
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+?=")
_MAGIC = re.compile(r"(?<!\\)(?:\\\\)*[*?\[]")
_SEQUENCE = re.compile(r"(-?\d{1,9})\.\.(-?\d{1,9})(?:\.\.(-?\d{1,9}))?\Z|([A-Za-z])\.\.([A-Za-z])\Z")
_ESCAPED = re.compile(r"\\(.)", re.DOTALL)
_SPECIAL_CHARS = re.compile(r"([\\*?\[\]{},])")
_EXPANDABLE = re.compile(r"[*?\[{\\]")
_OPERATOR = re.compile(r"&&|\|\||;;&|;;|;&|\|&|[;&|\n)]")


class SimpleCommand:
    """One simple command as it would run.

    ``argv``: words after expansion; ``dynamic``: per word, True when part of
    it is computed (an unknown variable, a command's output); ``redirects``:
    ``(op, target)`` with ``op`` normalised (``>``, ``>>``, ``<``, ``<>``,
    ``<<``, ``<<<``); ``via``: wrappers and shells it was found behind,
    outermost first; ``cwd``: where it runs (None when not known);
    ``pipeline``: commands joined by ``|`` share it; ``within``: the id of the
    command substitution it runs in (0 at top level) and ``feeds``: the ids of
    the substitutions in its own words; ``stdin_args``: xargs adds words it
    cannot see; ``overflow_dirs``: directories whose glob or brace expansion
    was cut short; ``heredoc``: the text of a here-document on its stdin;
    ``written``: the words as written (``~``, ``$HOME``, ``*`` unexpanded),
    leading assignments and wrappers included."""

    __slots__ = ("argv", "dynamic", "redirects", "via", "cwd", "pipeline", "within", "feeds", "stdin_args",
                 "overflow_dirs", "heredoc", "substitutions", "line", "written")

    def __init__(self, argv, dynamic, redirects, via, cwd, pipeline, within, feeds, substitutions, line=""):
        self.argv, self.dynamic, self.redirects, self.via = argv, dynamic, redirects, via
        self.cwd, self.pipeline, self.within, self.feeds = cwd, pipeline, within, feeds
        self.substitutions = substitutions
        self.stdin_args = False
        self.overflow_dirs: list[str] = []
        self.heredoc: str | None = None
        self.line = line
        self.written: list[str] = list(argv)  # the words as written, before expansion (quotes removed)

    @property
    def program(self) -> str:
        return self.argv[0].rsplit("/", 1)[-1] if self.argv else ""

    def __repr__(self) -> str:
        return f"SimpleCommand({self.argv!r}, redirects={self.redirects!r}, via={self.via!r}, cwd={self.cwd!r})"


class Reading:
    """The result of reading one or more command lines."""

    __slots__ = ("commands", "unseen", "incomplete", "listed_files")

    def __init__(self):
        self.commands: list[SimpleCommand] = []
        self.unseen: list[str] = []
        self.incomplete: str | None = None
        self.listed_files = False  # a glob was matched against the file system

    def pipelines(self) -> list[list[SimpleCommand]]:
        """Commands grouped by pipeline, in order (nested pipelines included)."""
        groups: dict[int, list[SimpleCommand]] = {}
        for command in self.commands:
            groups.setdefault(command.pipeline, []).append(command)
        return list(groups.values())


class _Scope:
    """What a running shell knows: its directory, variables and depth."""

    __slots__ = ("cwd", "vars", "depth", "via", "within", "dirs")

    def __init__(self, cwd, variables, depth, via, within, dirs=()):
        self.cwd, self.vars, self.depth, self.via, self.within = cwd, variables, depth, via, within
        self.dirs = list(dirs)

    def subshell(self, *, via=None, within=None) -> "_Scope":
        return _Scope(self.cwd, dict(self.vars), self.depth + 1, self.via if via is None else via,
                      self.within if within is None else within, self.dirs)


def read_shell(lines, *, cwd: str | None = None, env: Mapping[str, str] | None = None,
               home: str | None = None) -> Reading:
    """Read one command line (or a list of them) into a ``Reading``."""
    reader = _Reader(env or {}, home)
    for line in [lines] if isinstance(lines, str) else lines:
        if reader.reading.incomplete:
            break
        scope = _Scope(os.path.normpath(cwd) if cwd else None, {}, 0, (), 0)
        reader.read(line, scope)
    return reader.reading


def simple_commands(line: str, *, cwd: str | None = None,
                    env: Mapping[str, str] | None = None) -> list[SimpleCommand]:
    """Every simple command ``line`` would run, nested ones included."""
    return read_shell(line, cwd=cwd, env=env).commands


class _Reader:
    def __init__(self, env: Mapping[str, str], home: str | None):
        self.env = env
        self.home = home
        self.reading = Reading()
        self.words = 0
        self.expanded = 0
        self.entries = 0
        self.next_id = 0

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def stop(self, why: str) -> None:
        if self.reading.incomplete is None:
            self.reading.incomplete = why

    def unseen(self, what: str) -> None:
        if len(self.reading.unseen) < 50 and what not in self.reading.unseen:
            self.reading.unseen.append(what)

    def read(self, text: str, scope: _Scope) -> None:
        if scope.depth > MAX_DEPTH:
            self.stop(f"nested deeper than {MAX_DEPTH} levels")
            return
        _Parser(self, text).parse(0, "", scope)

    # ------------------------------------------------------------ variables
    def lookup(self, name: str, scope: _Scope) -> str | None:
        if name in scope.vars:
            return scope.vars[name]
        if name == "PWD":
            return scope.cwd
        if name == "LEASH_HOME":
            return self.env.get(name) or self.home
        value = self.env.get(name)
        if value is None and name == "HOME":
            value = os.path.expanduser("~")
        return value if isinstance(value, str) else None

    # ------------------------------------------------------------ expansion
    def expand(self, word: list, scope: _Scope, overflow: list[str]) -> list[tuple[str, bool]]:
        """The words ``word`` becomes: (text, dynamic)."""
        if len(word) == 1 and word[0][0] == _QUOTED:
            return [(word[0][1], False)]
        if len(word) == 1 and word[0][0] == _BARE and not _needs_expansion(word[0][1]):
            return [(word[0][1], False)]
        dynamic, magic, pieces = False, False, []
        for index, segment in enumerate(word):
            kind, text = segment[0], segment[1]
            if kind == _BARE:
                if index == 0 and text.startswith("~") and (len(text) == 1 or text[1] == "/"):
                    text = _escape(self.lookup("HOME", scope) or "~") + text[1:]
                magic = magic or any(c in text for c in "*?[{")
                pieces.append(text)
            elif kind == _QUOTED:
                pieces.append(_escape(text))
            elif kind == _VAR:
                value = self.lookup(text, scope) if len(segment) < 3 else segment[2](self, scope)
                if value is None:
                    dynamic = True
                    self.unseen(f"the value of ${text}")
                    value = "$" + text
                pieces.append(_escape(value))
            else:
                dynamic = True
                pieces.append(_escape("$(" + text + ")"))
        pattern = "".join(pieces)
        if not magic or len(pattern) > MAX_PATTERN_CHARS:
            return [(_unescape(pattern), dynamic)]
        budget = MAX_EXPANDED_WORDS - self.expanded
        alternatives = _braces(pattern, budget) if "{" in pattern else [pattern]
        if alternatives is None:
            overflow.append(_literal_dir(pattern))
            return [(_unescape(pattern), dynamic)]
        out: list[tuple[str, bool]] = []
        for alternative in alternatives:
            matches = self.glob(alternative, scope.cwd, overflow) if _MAGIC.search(alternative) else None
            if matches:
                out += [(m, dynamic) for m in matches]
            else:
                out.append((_unescape(alternative), dynamic))
        self.expanded += len(out)
        return out

    def glob(self, pattern: str, cwd: str | None, overflow: list[str]) -> list[str]:
        """Paths matching ``pattern`` (escapes kept) under ``cwd``, sorted."""
        self.reading.listed_files = True
        absolute = pattern.startswith("/")
        base_dir = "/" if absolute else (cwd or "")
        if not base_dir:
            return []
        found = [""]
        for part in pattern.split("/"):
            if not part:
                continue
            if not _MAGIC.search(part):
                literal = _unescape(part)
                found = [os.path.join(f, literal) if f else literal for f in found]
                continue
            matcher = _segment_regex(part)
            hidden = part.startswith(".")
            grown: list[str] = []
            for prefix in found:
                directory = os.path.join(base_dir, prefix)
                try:
                    entries = os.listdir(directory)
                except OSError:
                    continue
                self.entries += len(entries)
                if self.entries > MAX_GLOB_ENTRIES or len(grown) + len(entries) > MAX_EXPANDED_WORDS:
                    overflow.append(_literal_dir(pattern))
                    return []
                grown += [os.path.join(prefix, e) if prefix else e for e in sorted(entries)
                          if matcher.match(e) and (hidden or not e.startswith("."))]
            found = grown
        lead = "/" if absolute else ""
        return [lead + f for f in found if os.path.lexists(os.path.join(base_dir, f))]


def _needs_expansion(text: str) -> bool:
    return text.startswith("~") or _EXPANDABLE.search(text) is not None


def _escape(text: str) -> str:
    return _SPECIAL_CHARS.sub(r"\\\1", text)


def _unescape(text: str) -> str:
    return _ESCAPED.sub(r"\1", text) if "\\" in text else text


def _literal_dir(pattern: str) -> str:
    """The directory part of ``pattern`` before its first glob or brace."""
    cut = len(pattern)
    for match in re.finditer(r"(?<!\\)[*?\[{]", pattern):
        cut = match.start()
        break
    head = _unescape(pattern[:cut])
    return head.rsplit("/", 1)[0] if "/" in head else "."


def _segment_regex(part: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(part):
        c = part[i]
        if c == "\\" and i + 1 < len(part):
            out.append(re.escape(part[i + 1]))
            i += 2
            continue
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[":
            close = part.find("]", i + 2)
            if close == -1:
                out.append(r"\[")
            else:
                inner = part[i + 1:close]
                inner = "^" + inner[1:] if inner[:1] in "!^" else inner
                out.append("[" + inner.replace("\\", "\\\\") + "]")
                i = close
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def _braces(pattern: str, budget: int) -> list[str] | None:
    """Bash brace expansion of ``pattern`` (escapes kept); None past ``budget``."""
    depth, start = 0, -1
    commas: list[int] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            if depth == 0:
                start, commas = i, []
            depth += 1
        elif c == "}" and depth:
            depth -= 1
            if depth == 0:
                inner = pattern[start + 1:i]
                alternatives = _alternatives(inner, [p - start - 1 for p in commas], budget)
                if alternatives is None:
                    return None
                if alternatives is not False:
                    prefix, suffix = pattern[:start], pattern[i + 1:]
                    out: list[str] = []
                    for alternative in alternatives:
                        rest = _braces(alternative + suffix, budget - len(out))
                        if rest is None:
                            return None
                        out += [prefix + r for r in rest]
                        if len(out) > budget:
                            return None
                    return out
        elif c == "," and depth == 1:
            commas.append(i)
        i += 1
    return [pattern]


def _alternatives(inner: str, commas: list[int], budget: int) -> list[str] | None | Literal[False]:
    if commas:
        if len(commas) + 1 > budget:
            return None
        bounds = [-1] + commas + [len(inner)]
        return [inner[bounds[k] + 1:bounds[k + 1]] for k in range(len(bounds) - 1)]
    match = _SEQUENCE.match(inner)
    if not match:
        return False  # not an expansion: the braces are literal
    if match.group(4):
        low, high = ord(match.group(4)), ord(match.group(5))
        step = 1 if high >= low else -1
        return [chr(c) for c in range(low, high + step, step)]
    low, high = int(match.group(1)), int(match.group(2))
    step = abs(int(match.group(3) or 1)) or 1
    if abs(high - low) // step + 1 > budget:
        return None
    return [str(n) for n in (range(low, high + 1, step) if high >= low else range(low, high - 1, -step))]


def _matched(match: re.Match[str] | None) -> re.Match[str]:
    """A match the caller's own test already established (the character at the
    position starts one); None here would be a fault in the reader itself."""
    if match is None:
        raise AssertionError("the shell reader lost its place")
    return match


def _decode_ansi_c(body: str) -> str:
    simple = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f",
              "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}

    def one(match: re.Match[str]) -> str:
        escape = match.group(1)
        if escape[0] in simple:
            return simple[escape[0]]
        try:
            if escape[0] in "xuU":
                return chr(int(escape[1:], 16))
            return chr(int(escape, 8))
        except ValueError:
            return escape
    return re.sub(r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|.)", one, body,
                  flags=re.DOTALL)



class _Parser:
    """One pass over one text; a nested text (``bash -c``, ``eval``) gets its own."""

    def __init__(self, reader: _Reader, text: str):
        self.r, self.text, self.n = reader, text, len(text)
        self.heredocs: list[dict] = []

    def parse(self, pos: int, stop: str, scope: _Scope) -> int:
        """Commands from ``pos`` up to ``stop`` (")", "`" or "" for the end);
        returns the position after it."""
        text, n, r = self.text, self.n, self.r
        state: dict[str, Any] = {"words": [], "redirects": [], "word": None, "pending": None, "feeds": [], "subs": [],
                                 "pipeline": r.new_id(), "last": None}

        def end_word():
            word = state["word"]
            if word:
                r.words += 1
                if r.words > MAX_WORDS:
                    r.stop(f"more than {MAX_WORDS} words")
                if state["pending"] is not None:
                    op = state["pending"]
                    state["redirects"].append((op, word))
                    if op in ("<<", "<<-"):
                        delimiter = "".join(s[1] for s in word if s[0] in (_BARE, _QUOTED))
                        self.heredocs.append({"delimiter": delimiter, "tabs": op == "<<-", "command": None,
                                              "quoted": any(s[0] == _QUOTED for s in word), "scope": scope})
                    state["pending"] = None
                else:
                    state["words"].append(word)
            state["word"] = None

        def finish(op: str):
            end_word()
            command = None
            if state["words"] or state["redirects"]:
                command = self.command(state, scope)
            state["words"], state["redirects"], state["feeds"], state["subs"] = [], [], [], []
            state["pending"] = None
            if op in ("|", "|&"):
                state["last"] = command
            else:
                state["pipeline"], state["last"] = r.new_id(), None

        def word():
            if state["word"] is None:
                state["word"] = []
            return state["word"]

        while pos < n:
            if r.reading.incomplete:
                return n
            c = text[pos]
            if c in " \t\r\f\v":
                end_word()
                pos = _matched(_BLANK.match(text, pos)).end()
            elif stop and c == stop:
                finish(";")
                return pos + 1
            elif c == "\\":
                if text.startswith("\n", pos + 1):
                    pos += 2
                    continue
                word().append((_QUOTED, text[pos + 1:pos + 2]))
                pos += 2
            elif c == "'":
                close = text.find("'", pos + 1)
                close = n if close == -1 else close
                word().append((_QUOTED, text[pos + 1:close]))
                pos = close + 1
            elif c == '"':
                pos = self.double(pos + 1, word(), scope, state)
            elif c == "$":
                pos = self.dollar(pos, word(), scope, state)
            elif c == "`":
                pos = self.substitution(pos + 1, "`", word(), scope, state)
            elif c == "#" and state["word"] is None:
                newline = text.find("\n", pos)
                pos = n if newline == -1 else newline
            elif c in "<>" and text.startswith("(", pos + 1):
                pos = self.substitution(pos + 2, ")", word(), scope, state)
            elif (c in "<>&" or (c.isdigit() and state["word"] is None)) and self._redirect(pos):
                match = _matched(_REDIRECT.match(text, pos))
                end_word()
                state["pending"] = match.group(2)
                pos = match.end()
            elif c == "(":
                end_word()
                if text.startswith(")", pos + 1):  # name() { ...; }: a function's header, its body follows
                    state["words"], state["redirects"] = [], []
                    pos += 2
                elif not state["words"]:
                    pos = self.parse(pos + 1, ")", scope.subshell())
                else:
                    pos += 1
            elif c in ";&|\n)":
                op = _matched(_OPERATOR.match(text, pos)).group()
                finish(op)
                pos += len(op)
                if op == "\n" and self.heredocs:
                    pos = self.heredoc_bodies(pos)
            else:
                plain = _PLAIN.match(text, pos)
                end = plain.end() if plain else pos + 1
                word().append((_BARE, text[pos:end]))
                pos = end
        finish(";")
        if self.heredocs and stop == "":
            self.heredoc_bodies(n)
        return n

    def _redirect(self, pos: int) -> bool:
        match = _REDIRECT.match(self.text, pos)
        return match is not None and not (self.text[pos] == "&" and not match.group(2).startswith("&"))

    def double(self, pos: int, word: list, scope: _Scope, state: dict) -> int:
        text, n = self.text, self.n
        while pos < n:
            c = text[pos]
            if c == '"':
                return pos + 1
            if c == "\\":
                following = text[pos + 1:pos + 2]
                if following == "\n":
                    pos += 2
                    continue
                word.append((_QUOTED, following if following in '$`"\\' else "\\" + following))
                pos += 2
            elif c == "$":
                pos = self.dollar(pos, word, scope, state, quoted=True)
            elif c == "`":
                pos = self.substitution(pos + 1, "`", word, scope, state)
            else:
                end = _matched(_DQ_PLAIN.match(text, pos)).end()
                word.append((_QUOTED, text[pos:end]))
                pos = end
        return n

    def dollar(self, pos: int, word: list, scope: _Scope, state: dict, *, quoted: bool = False) -> int:
        text = self.text
        following = text[pos + 1:pos + 2]
        if text.startswith("$((", pos):
            end = self.parse(pos + 3, ")", scope.subshell())
            end = end + 1 if text.startswith(")", end) else end
            word.append((_SUBST, text[pos + 3:end - 2]))
            return end
        if following == "(":
            return self.substitution(pos + 2, ")", word, scope, state)
        if following == "{":
            close = text.find("}", pos + 2)
            close = self.n if close == -1 else close
            word.append(_parameter(text[pos + 2:close]))
            return close + 1
        if following == "'" and not quoted:
            match = _matched(_ANSI_C.match(text, pos))
            word.append((_QUOTED, _decode_ansi_c(match.group(1))))
            return match.end()
        if following == '"' and not quoted:
            return self.double(pos + 2, word, scope, state)
        variable = _NAME.match(text, pos + 1)
        if variable:
            word.append((_VAR, variable.group()))
            return variable.end()
        if _SPECIAL_PARAM.match(following or " "):
            word.append((_VAR, following))
            return pos + 2
        word.append((_QUOTED if quoted else _BARE, "$"))
        return pos + 1

    def substitution(self, pos: int, close: str, word: list, scope: _Scope, state: dict) -> int:
        """A command substitution (or ``<(...)``) starting at ``pos``: its commands
        run in a subshell before the command whose word holds it."""
        ident = self.r.new_id()
        inner = scope.subshell(within=ident)
        if inner.depth > MAX_DEPTH:
            self.r.stop(f"nested deeper than {MAX_DEPTH} levels")
            return self.n
        end = self.parse(pos, close, inner)
        word.append((_SUBST, self.text[pos:max(pos, end - 1)]))
        state["feeds"].append(ident)
        return end

    def heredoc_bodies(self, pos: int) -> int:
        """Skip the here-documents that start at ``pos``; a shell reading one
        runs it, and an unquoted one still runs its substitutions."""
        pending, self.heredocs = self.heredocs, []
        for doc in pending:
            lead = r"[\t]*" if doc["tabs"] else ""
            end = re.compile(r"^" + lead + re.escape(doc["delimiter"]) + r"$", re.MULTILINE).search(self.text, pos)
            body_end, after = (end.start(), end.end() + 1) if end else (self.n, self.n)
            body = self.text[pos:body_end]
            if not doc["quoted"] and ("$(" in body or "`" in body):
                self.r.read(_substitutions_only(body), doc["scope"].subshell())
            command = doc["command"]
            if command is not None:
                command.heredoc = body
                if _reads_stdin_script(command):
                    self.r.read(body, _child(doc["scope"], command))
            pos = min(after, self.n)
        return pos

    # ------------------------------------------------------------ one simple command
    def command(self, state: dict, scope: _Scope) -> SimpleCommand | None:
        r = self.r
        words, redirects = state["words"], state["redirects"]
        if r.reading.incomplete:
            return None
        if len(r.reading.commands) >= MAX_SIMPLE_COMMANDS:
            r.stop(f"more than {MAX_SIMPLE_COMMANDS} commands")
            return None
        overflow: list[str] = []
        count = 0
        while count < len(words) and words[count][0][0] == _BARE and _ASSIGNMENT.match(words[count][0][1]):
            count += 1
        if count == len(words):  # plain assignments: they stay, one after the other
            for word in words:
                match = _matched(_ASSIGNMENT.match(word[0][1]))
                value, computed = r.expand([(_BARE, word[0][1][match.end():])] + word[1:], scope, overflow)[0]
                scope.vars[match.group(1)] = None if computed else value
            if not redirects:
                return None
        written_words, words = words, words[count:]
        argv, dynamic = [], []
        for word in words:
            for value, computed in r.expand(word, scope, overflow):
                argv.append(value)
                dynamic.append(computed)
        targets = []
        for op, word in redirects:
            value, computed = r.expand(word, scope, overflow)[0]
            if computed:
                r.unseen(f"a computed redirection target ({value[:60]})")
            targets.append((_REDIRECT_KIND.get(op, op), value))
        targets = [(op, t) for op, t in targets if not (op in (">", "<") and (t.isdigit() or t == "-"))]
        while argv and argv[0] in _LEADING_KEYWORDS and not dynamic[0]:
            argv, dynamic = argv[1:], dynamic[1:]
        if argv and argv[0] in _HEADERS:
            if argv[0] in ("for", "select") and len(argv) > 1:
                scope.vars[argv[1]] = None
            return None
        cwd, via, stdin_args = scope.cwd, scope.via, False
        while argv and not dynamic[0]:
            program = argv[0].rsplit("/", 1)[-1]
            if program not in WRAPPERS or len(argv) == 1:
                break  # a wrapper with nothing to run is itself the command (env prints the environment)
            argv, dynamic, chdir = _unwrap(program, argv, dynamic)
            if chdir:
                cwd = _join(cwd, chdir)
            via += (program,)
            stdin_args = stdin_args or program == "xargs"
        if not argv and not targets:
            return None
        substitutions = [s[1] for w in words for s in w if s[0] == _SUBST]
        command = SimpleCommand(argv, dynamic, targets, via, cwd, state["pipeline"], scope.within,
                                list(state["feeds"]), substitutions, self.text)
        command.stdin_args = stdin_args
        command.overflow_dirs = overflow
        command.written = [_as_written(w) for w in written_words]
        for doc in self.heredocs:
            if doc["command"] is None:
                doc["command"] = command
        r.reading.commands.append(command)
        self.effects(command, scope, state["last"])
        return command

    def effects(self, command: SimpleCommand, scope: _Scope, fed_by: SimpleCommand | None) -> None:
        """What running the command changes for the reader: the directory,
        variables, and commands it runs in turn."""
        r, argv, program = self.r, command.argv, command.program
        if not argv:
            return
        if program in ("cd", "pushd", "popd") and command.via == scope.via:
            _change_dir(r, command, scope)
        elif program in _ASSIGNERS:
            for index, word in enumerate(argv[1:], 1):
                match = _ASSIGNMENT.match(word)
                if match:
                    scope.vars[match.group(1)] = None if command.dynamic[index] else word[match.end():]
        elif program == "unset":
            for name in argv[1:]:
                scope.vars[name] = None
        elif program in SHELLS:
            script = _dash_c(argv)
            if script is not None:
                if command.dynamic[script]:
                    r.unseen(f"a computed script run by {program}")
                else:
                    r.read(argv[script], _child(scope, command))
            elif _reads_stdin_script(command):
                here = next((t for op, t in command.redirects if op == "<<<"), None)
                if here is not None:
                    r.read(here, _child(scope, command))
                elif fed_by is not None and fed_by.program in _LITERAL_ECHO and not any(fed_by.dynamic[1:]):
                    words = fed_by.argv[1:]
                    while words and fed_by.program == "echo" and words[0] in ("-n", "-e", "-E", "-ne", "-en"):
                        words = words[1:]
                    r.read(" ".join(words).replace("\\n", "\n"), _child(scope, command))
                elif fed_by is not None:
                    r.unseen(f"what {fed_by.program} prints, run by {program}")
            else:
                r.unseen(f"the script {next(a for a in argv[1:] if not a.startswith('-'))} run by {program}")
        elif program == "eval" and len(argv) > 1:
            inner = _Scope(scope.cwd, scope.vars, scope.depth + 1, scope.via + ("eval",), scope.within, scope.dirs)
            if any(command.dynamic[1:]):
                r.unseen("a computed string run by eval")
            r.read(" ".join(argv[1:]), inner)
            scope.cwd = inner.cwd
        elif program in ("source", "."):
            r.unseen(f"the script {argv[1] if len(argv) > 1 else ''} sourced into the shell")
        elif program == "find":
            for synthetic in _find_actions(command):
                r.reading.commands.append(synthetic)
                self.effects(synthetic, scope, None)


_REDIRECT_KIND = {">": ">", ">|": ">", "&>": ">", ">&": ">", ">>": ">>", "&>>": ">>", "<": "<", "<&": "<",
                  "<>": "<>", "<<": "<<", "<<-": "<<", "<<<": "<<<"}


def _as_written(word: list) -> str:
    out = []
    for segment in word:
        kind, text = segment[0], segment[1]
        out.append("$" + text if kind == _VAR else "$(" + text + ")" if kind == _SUBST else text)
    return "".join(out)


def _substitutions_only(body: str) -> str:
    """The command substitutions of an unquoted here-document, as a script."""
    found: list[str] = []
    pos = 0
    while True:
        start = min((i for i in (body.find("$(", pos), body.find("`", pos)) if i != -1), default=-1)
        if start == -1:
            return " ; ".join(found)
        if body.startswith("$(", start):
            end = body.find(")", start)
            end = len(body) if end == -1 else end
            found.append(body[start:end + 1])
        else:
            end = body.find("`", start + 1)
            end = len(body) if end == -1 else end
            found.append(body[start:end + 1])
        pos = end + 1


def _parameter(inner: str) -> tuple:
    """``${...}``: a plain name, or ``${NAME:-word}`` / ``${NAME-word}``."""
    match = _NAME.match(inner)
    if match and match.end() == len(inner):
        return (_VAR, inner)
    if match and inner[match.end():match.end() + 2] in (":-", ":=") or (match and inner[match.end():][:1] in "-="):
        name = match.group()
        default = inner[match.end():].lstrip(":")[1:]

        def resolve(reader, scope, name=name, default=default):
            value = reader.lookup(name, scope)
            return value if value else (default if "$" not in default else None)
        return (_VAR, name, resolve)
    return (_VAR, "{" + inner + "}", lambda reader, scope: None)


def _join(cwd: str | None, path: str) -> str | None:
    if os.path.isabs(path):
        return os.path.normpath(path)
    return os.path.normpath(os.path.join(cwd, path)) if cwd else None


def _child(scope: _Scope, command: SimpleCommand) -> _Scope:
    inner = scope.subshell(via=command.via + (command.program,))
    inner.cwd = command.cwd
    return inner


def _change_dir(reader: _Reader, command: SimpleCommand, scope: _Scope) -> None:
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
    scope.cwd = _join(scope.cwd, target) or scope.cwd


def _unwrap(program: str, argv: list[str], dynamic: list[bool]) -> tuple[list[str], list[bool], str | None]:
    """The command a wrapper runs, and the directory it runs it in (``env -C``)."""
    rest, computed, chdir = argv[1:], dynamic[1:], None
    values = _VALUE_OPTIONS.get(program, ())
    while rest:
        word = rest[0]
        if word == "--":
            rest, computed = rest[1:], computed[1:]
            break
        if word.startswith("-") and len(word) > 1:
            rest, computed = rest[1:], computed[1:]
            option, _, value = word.partition("=")
            if value and (program, option) in _CHDIR_OPTIONS:
                chdir = value
            elif word in values and rest:
                if (program, word) in _CHDIR_OPTIONS:
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


def _reads_stdin_script(command: SimpleCommand) -> bool:
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
