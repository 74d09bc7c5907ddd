"""The shell reader's parser: one pass over a command line, the way bash splits it.

``Reader.read(text, scope)`` parses ``text`` into simple commands appended to
its ``Reading``: words and their segments (bare, quoted, ``$VAR``,
``$(...)``), redirections, ``;``/``&&``/``||``/``|``/``&``/newlines,
subshells, here-documents, ``$(...)``, backquotes and ``<(...)`` (their
commands read first, in a scope of their own). Each character class has a
small handler (``_Parser.HANDLERS``). A simple command is then expanded
(``core.shellexpand``), its wrappers taken off and its program word resolved
when computed (``core.shellresolve``), and its effects applied
(``core.shelleffects``). Bounds (``core.shellcommand``) stop the reading with
``Reading.incomplete`` set; nothing here raises.
"""
from __future__ import annotations

import re

from leash.core.policy.shellcommand import MAX_DEPTH, MAX_SIMPLE_COMMANDS, MAX_WORDS, Scope, SimpleCommand
from leash.core.policy.shelleffects import Words, child, effects, reads_stdin_script
from leash.core.policy.shellexpand import BARE, QUOTED, SUBST, VAR, Expander, decode_ansi_c, parameter

TYPE_CHECKING = False  # for the type checker only: the hook path does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable

_HEADERS = frozenset({"for", "case", "select", "function", "in"})
_PLAIN = re.compile(r"[^\s'\"\\$`;&|<>()]+")
_BLANK = re.compile(r"[ \t\r\f\v]+")
_DQ_PLAIN = re.compile(r'[^"\\$`]+')
_REDIRECT = re.compile(r"(\d{0,3})(&>>|&>|>>|>\||>&|<<<|<<-|<<|<>|<&|>|<)")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPECIAL_PARAM = re.compile(r"[0-9@*#?$!-]")
_ANSI_C = re.compile(r"\$'((?:[^'\\]|\\.)*)'?", re.DOTALL)
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+?=")
_OPERATOR = re.compile(r"&&|\|\||;;&|;;|;&|\|&|[;&|\n)]")
_REDIRECT_KIND = {">": ">", ">|": ">", "&>": ">", ">&": ">", ">>": ">>", "&>>": ">>", "<": "<", "<&": "<",
                  "<>": "<>", "<<": "<<", "<<-": "<<", "<<<": "<<<"}
BLANKS = " \t\r\f\v"


class Reader(Expander):
    """Reads texts into one ``Reading`` (nested texts share it and its budgets)."""

    def read(self, text: str, scope: Scope) -> None:
        if scope.depth > MAX_DEPTH:
            self.stop(f"nested deeper than {MAX_DEPTH} levels")
            return
        _Parser(self, text).parse(0, "", scope)


def _matched(match: re.Match[str] | None) -> re.Match[str]:
    """A match the caller's own test already established (the character at the
    position starts one); None here would be a fault in the reader itself."""
    if match is None:
        raise AssertionError("the shell reader lost its place")
    return match


class _Line:
    """The simple command being read: its words so far, the word being
    built, a redirection waiting for its target, the pipeline it is in."""

    __slots__ = ("parser", "scope", "words", "redirects", "word", "pending", "feeds", "pipeline", "last")

    def __init__(self, parser: _Parser, scope: Scope):
        self.parser, self.scope = parser, scope
        self.words: list = []
        self.redirects: list = []
        self.word: list | None = None
        self.pending: str | None = None
        self.feeds: list[int] = []
        self.pipeline = parser.r.new_id()
        self.last: SimpleCommand | None = None

    def current(self) -> list:
        if self.word is None:
            self.word = []
        return self.word

    def end_word(self) -> None:
        word, r = self.word, self.parser.r
        self.word = None
        if not word:
            return
        r.words += 1
        if r.words > MAX_WORDS:
            r.stop(f"more than {MAX_WORDS} words")
        if self.pending is None:
            self.words.append(word)
            return
        op, self.pending = self.pending, None
        self.redirects.append((op, word))
        if op in ("<<", "<<-"):
            delimiter = "".join(s[1] for s in word if s[0] in (BARE, QUOTED))
            self.parser.heredocs.append({"delimiter": delimiter, "tabs": op == "<<-", "command": None,
                                         "quoted": any(s[0] == QUOTED for s in word), "scope": self.scope})

    def finish(self, op: str) -> None:
        self.end_word()
        command = self.parser.command(self) if self.words or self.redirects else None
        self.words, self.redirects, self.feeds, self.pending = [], [], [], None
        if op in ("|", "|&"):
            self.last = command
        else:
            self.pipeline, self.last = self.parser.r.new_id(), None


class _Parser:
    """One pass over one text; a nested text (``bash -c``, ``eval``) gets its own."""

    HANDLERS: dict[str, Callable[[_Parser, int, _Line], int]] = {}

    def __init__(self, reader: Reader, text: str):
        self.r, self.text, self.n = reader, text, len(text)
        self.heredocs: list[dict] = []

    def parse(self, pos: int, stop: str, scope: Scope) -> int:
        """Commands from ``pos`` up to ``stop`` (")", "`" or "" for the end);
        returns the position after it."""
        line = _Line(self, scope)
        while pos < self.n:
            if self.r.reading.incomplete:
                return self.n
            c = self.text[pos]
            if stop and c == stop:
                line.finish(";")
                return pos + 1
            pos = self.HANDLERS.get(c, _Parser._plain)(self, pos, line)
        line.finish(";")
        if self.heredocs and stop == "":
            self.heredoc_bodies(self.n)
        return self.n

    # ------------------------------------------------------------ one handler per kind of character
    def _blank(self, pos: int, line: _Line) -> int:
        line.end_word()
        return _matched(_BLANK.match(self.text, pos)).end()

    def _escape(self, pos: int, line: _Line) -> int:
        if not self.text.startswith("\n", pos + 1):  # a backslash-newline joins the lines
            line.current().append((QUOTED, self.text[pos + 1:pos + 2]))
        return pos + 2

    def _single(self, pos: int, line: _Line) -> int:
        close = self.text.find("'", pos + 1)
        close = self.n if close == -1 else close
        line.current().append((QUOTED, self.text[pos + 1:close]))
        return close + 1

    def _double(self, pos: int, line: _Line) -> int:
        return self.double(pos + 1, line.current(), line)

    def _dollar(self, pos: int, line: _Line) -> int:
        return self.dollar(pos, line.current(), line)

    def _backquote(self, pos: int, line: _Line) -> int:
        return self.substitution(pos + 1, "`", line.current(), line)

    def _hash(self, pos: int, line: _Line) -> int:
        if line.word is not None:  # inside a word, "#" is a character
            return self._plain(pos, line)
        newline = self.text.find("\n", pos)
        return self.n if newline == -1 else newline

    def _angle(self, pos: int, line: _Line) -> int:
        if self.text.startswith("(", pos + 1):  # <(...) and >(...): a process substitution
            return self.substitution(pos + 2, ")", line.current(), line)
        return self._redirection(pos, line) if self._redirect(pos) else self._plain(pos, line)

    def _ampersand(self, pos: int, line: _Line) -> int:
        return self._redirection(pos, line) if self._redirect(pos) else self._operator(pos, line)

    def _digit(self, pos: int, line: _Line) -> int:
        if line.word is None and self._redirect(pos):  # 2>file
            return self._redirection(pos, line)
        return self._plain(pos, line)

    def _paren(self, pos: int, line: _Line) -> int:
        line.end_word()
        if self.text.startswith(")", pos + 1):  # name() { ...; }: a function's header, its body follows
            line.words, line.redirects = [], []
            return pos + 2
        if not line.words:
            return self.parse(pos + 1, ")", line.scope.subshell())
        return pos + 1

    def _operator(self, pos: int, line: _Line) -> int:
        op = _matched(_OPERATOR.match(self.text, pos)).group()
        line.finish(op)
        pos += len(op)
        return self.heredoc_bodies(pos) if op == "\n" and self.heredocs else pos

    def _plain(self, pos: int, line: _Line) -> int:
        plain = _PLAIN.match(self.text, pos)
        end = plain.end() if plain else pos + 1
        line.current().append((BARE, self.text[pos:end]))
        return end

    def _redirection(self, pos: int, line: _Line) -> int:
        match = _matched(_REDIRECT.match(self.text, pos))
        line.end_word()
        line.pending = match.group(2)
        return match.end()

    def _redirect(self, pos: int) -> bool:
        match = _REDIRECT.match(self.text, pos)
        return match is not None and not (self.text[pos] == "&" and not match.group(2).startswith("&"))

    # ------------------------------------------------------------ quotes, $ and substitutions
    def double(self, pos: int, word: list, line: _Line) -> int:
        text, n = self.text, self.n
        while pos < n:
            c = text[pos]
            if c == '"':
                return pos + 1
            if c == "\\":
                following = text[pos + 1:pos + 2]
                if following != "\n":
                    word.append((QUOTED, following if following in '$`"\\' else "\\" + following))
                pos += 2
            elif c == "$":
                pos = self.dollar(pos, word, line, quoted=True)
            elif c == "`":
                pos = self.substitution(pos + 1, "`", word, line)
            else:
                end = _matched(_DQ_PLAIN.match(text, pos)).end()
                word.append((QUOTED, text[pos:end]))
                pos = end
        return n

    def dollar(self, pos: int, word: list, line: _Line, *, quoted: bool = False) -> int:
        text = self.text
        following = text[pos + 1:pos + 2]
        if text.startswith("$((", pos):
            end = self.parse(pos + 3, ")", line.scope.subshell())
            end = end + 1 if text.startswith(")", end) else end
            word.append((SUBST, text[pos + 3:end - 2]))
            return end
        if following == "(":
            return self.substitution(pos + 2, ")", word, line)
        if following == "{":
            close = text.find("}", pos + 2)
            close = self.n if close == -1 else close
            word.append(parameter(text[pos + 2:close]))
            return close + 1
        if following in ("'", '"') and not quoted:
            return self._dollar_quote(pos, following, word, line)
        return self._variable(pos, following, word, quoted)

    def _dollar_quote(self, pos: int, quote: str, word: list, line: _Line) -> int:
        """``$'...'`` (C escapes decoded) and ``$"..."`` (a double-quoted string)."""
        if quote == '"':
            return self.double(pos + 2, word, line)
        match = _matched(_ANSI_C.match(self.text, pos))
        word.append((QUOTED, decode_ansi_c(match.group(1))))
        return match.end()

    def _variable(self, pos: int, following: str, word: list, quoted: bool) -> int:
        variable = _NAME.match(self.text, pos + 1)
        if variable:
            word.append((VAR, variable.group()))
            return variable.end()
        if _SPECIAL_PARAM.match(following or " "):
            word.append((VAR, following))
            return pos + 2
        word.append((QUOTED if quoted else BARE, "$"))
        return pos + 1

    def substitution(self, pos: int, close: str, word: list, line: _Line) -> int:
        """A command substitution (or ``<(...)``) starting at ``pos``: its commands
        run in a subshell before the command whose word holds it."""
        ident = self.r.new_id()
        inner = line.scope.subshell(within=ident)
        if inner.depth > MAX_DEPTH:
            self.r.stop(f"nested deeper than {MAX_DEPTH} levels")
            return self.n
        first = len(self.r.reading.commands)
        end = self.parse(pos, close, inner)
        self.r.reading.subs.spans[ident] = (first, len(self.r.reading.commands))
        word.append((SUBST, self.text[pos:max(pos, end - 1)], ident))
        line.feeds.append(ident)
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
                if reads_stdin_script(command):
                    self.r.read(body, child(doc["scope"], command))
            pos = min(after, self.n)
        return pos

    # ------------------------------------------------------------ one simple command
    def command(self, line: _Line) -> SimpleCommand | None:
        r, scope, words = self.r, line.scope, line.words
        if not self._room():
            return None
        overflow: list[str] = []
        count = _leading_assignments(words)
        if count == len(words):  # plain assignments: they stay, one after the other
            self._assign(words, scope, overflow)
            if not line.redirects:
                return None
        run = Words(*self._expanded(words[count:], scope, overflow))
        targets, computed_targets = self._redirect_targets(line.redirects, scope, overflow)
        run.drop_keywords()
        if run.argv and run.argv[0] in _HEADERS:
            if run.argv[0] in ("for", "select") and len(run.argv) > 1:
                scope.vars[run.argv[1]] = None
            return None
        cwd, via, stdin_args = run.unwrap(scope.cwd, scope.via, r.reading.subs)
        if not run.argv and not targets:
            return None
        substitutions = [s[1] for w in words[count:] for s in w if s[0] == SUBST]
        command = SimpleCommand(run.argv, run.dynamic, targets, via, cwd, line.pipeline, scope.within,
                                list(line.feeds), substitutions, self.text)
        command.sources, command.computed_redirects = run.sources, computed_targets
        command.resolved = run.resolved(r.reading.subs)
        command.stdin_args = stdin_args
        command.overflow_dirs = overflow
        command.written = [_as_written(w) for w in words]
        for doc in self.heredocs:
            if doc["command"] is None:
                doc["command"] = command
        r.reading.commands.append(command)
        effects(r, command, scope, line.last)
        return command

    def _room(self) -> bool:
        """Whether another command may be read (the reader's bounds)."""
        r = self.r
        if r.reading.incomplete:
            return False
        if len(r.reading.commands) >= MAX_SIMPLE_COMMANDS:
            r.stop(f"more than {MAX_SIMPLE_COMMANDS} commands")
            return False
        return True

    def _assign(self, words: list, scope: Scope, overflow: list[str]) -> None:
        for word in words:
            match = _matched(_ASSIGNMENT.match(word[0][1]))
            value, computed = self.r.expand([(BARE, word[0][1][match.end():])] + word[1:], scope, overflow)[0]
            scope.vars[match.group(1)] = None if computed else value

    def _expanded(self, words: list, scope: Scope, overflow: list[str]) -> tuple[list, list, list]:
        """(argv, dynamic, sources): each word's expansions, and the command
        substitution a word is wholly made of (for ``core.shellresolve``)."""
        argv: list[str] = []
        dynamic: list[bool] = []
        sources: list[int] = []
        for word in words:
            source = word[0][2] if len(word) == 1 and word[0][0] == SUBST and len(word[0]) > 2 else 0
            for value, computed in self.r.expand(word, scope, overflow):
                argv.append(value)
                dynamic.append(computed)
                sources.append(source)
        return argv, dynamic, sources

    def _redirect_targets(self, redirects: list, scope: Scope, overflow: list[str]) -> tuple[list, list[str]]:
        """((op, target) with ``op`` normalised, file descriptors left out;
        the targets that are computed)."""
        targets, computed_targets = [], []
        for op, word in redirects:
            value, computed = self.r.expand(word, scope, overflow)[0]
            if computed:
                self.r.unseen(f"a computed redirection target ({value[:60]})")
                computed_targets.append(value)
            targets.append((_REDIRECT_KIND.get(op, op), value))
        return [(op, t) for op, t in targets if not (op in (">", "<") and (t.isdigit() or t == "-"))], computed_targets


_Parser.HANDLERS = {
    **{c: _Parser._blank for c in BLANKS}, "\\": _Parser._escape, "'": _Parser._single, '"': _Parser._double,
    "$": _Parser._dollar, "`": _Parser._backquote, "#": _Parser._hash, "<": _Parser._angle, ">": _Parser._angle,
    "&": _Parser._ampersand, "(": _Parser._paren, **{c: _Parser._operator for c in ";|\n)"},
    **{c: _Parser._digit for c in "0123456789"},
}


def _leading_assignments(words: list) -> int:
    count = 0
    while count < len(words) and words[count][0][0] == BARE and _ASSIGNMENT.match(words[count][0][1]):
        count += 1
    return count


def _as_written(word: list) -> str:
    out = []
    for segment in word:
        kind, text = segment[0], segment[1]
        out.append("$" + text if kind == VAR else "$(" + text + ")" if kind == SUBST else text)
    return "".join(out)


def _substitutions_only(body: str) -> str:
    """The command substitutions of an unquoted here-document, as a script."""
    found: list[str] = []
    pos = 0
    while True:
        start = min((i for i in (body.find("$(", pos), body.find("`", pos)) if i != -1), default=-1)
        if start == -1:
            return " ; ".join(found)
        closing = ")" if body.startswith("$(", start) else "`"
        end = body.find(closing, start + (0 if closing == ")" else 1))
        end = len(body) if end == -1 else end
        found.append(body[start:end + 1])
        pos = end + 1
