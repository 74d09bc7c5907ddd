"""Just enough of the POSIX shell grammar to know what a command line runs.

The dangerous-command rules look at what would be *executed*, never at text
that is only data: ``echo 'rm -rf /' > notes.txt`` runs ``echo`` with one
argument and is harmless, while ``bash -c 'rm -rf /'``, ``sudo rm -rf /``,
``echo "$(rm -rf /)"`` and ``xargs rm -rf`` all run ``rm``.

``simple_commands(line)`` splits a line at unquoted ``;``, ``&&``, ``||``, ``|``,
``&``, newlines and parentheses into simple commands, each an argv (quotes
removed) plus its redirections, and adds — recursively — the commands found in
``$(...)`` and backquotes outside single quotes, in ``sh -c``/``bash -c``/
``eval`` strings, and behind wrappers (``sudo``, ``env``, ``nohup``, ``time``,
``xargs``, ``nice``, ``timeout``, ``exec``, ``command``). Unbalanced quotes
close at the end of the line. Nothing is expanded or executed.
"""
from __future__ import annotations

OPERATORS = ("&&", "||", ";;", ";", "|", "&", "\n", "(", ")")
REDIRECTS = (">>", ">|", "&>", ">&", "<<<", "<<", "<>", ">", "<")
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish"})
# Wrappers that run their argument words as a command; value = how many
# leading option words take a value (rough, but deterministic).
WRAPPERS = frozenset({"sudo", "doas", "env", "nohup", "time", "nice", "ionice", "timeout", "exec", "command",
                      "xargs", "stdbuf", "setsid", "chroot", "runuser", "watch", "strace", "unbuffer"})
MAX_DEPTH = 6
# Reserved words that may open a simple command ("then rm -rf x") and are dropped;
# headers of loops and case statements carry no command of their own.
_LEADING_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "fi", "done",
                               "esac"})
_HEADERS = frozenset({"for", "case", "select", "function", "in"})


class SimpleCommand:
    """One simple command: its words and its redirections ``(op, target)``."""

    __slots__ = ("argv", "redirects", "via", "line")

    def __init__(self, argv: list[str], redirects: list[tuple[str, str]], via: tuple[str, ...], line: str):
        self.argv = argv
        self.redirects = redirects
        self.via = via  # wrappers it was found behind, outermost first (e.g. ("sudo",))
        self.line = line

    @property
    def program(self) -> str:
        return self.argv[0].rsplit("/", 1)[-1] if self.argv else ""

    def __repr__(self) -> str:
        return f"SimpleCommand({self.argv!r}, redirects={self.redirects!r}, via={self.via!r})"


def _tokenize(line: str) -> tuple[list[list[tuple[str, str]]], list[str]]:
    """Segments of (kind, text) tokens, and the substitution bodies found.

    kind is "word", "redir" or "op"."""
    segments: list[list[tuple[str, str]]] = [[]]
    substitutions: list[str] = []
    word: list[str] = []
    in_word = False
    i, n = 0, len(line)

    def end_word():
        nonlocal word, in_word
        if in_word:
            segments[-1].append(("word", "".join(word)))
        word, in_word = [], False

    while i < n:
        c = line[i]
        if c == "\\" and i + 1 < n:
            word.append(line[i + 1])
            in_word = True
            i += 2
            continue
        if c == "'":
            close = line.find("'", i + 1)
            close = n if close == -1 else close
            word.append(line[i + 1:close])
            in_word = True
            i = close + 1
            continue
        if c == '"':
            j = i + 1
            buf = []
            while j < n and line[j] != '"':
                if line[j] == "\\" and j + 1 < n:
                    buf.append(line[j + 1])
                    j += 2
                    continue
                if line.startswith("$(", j):
                    body, j = _balanced(line, j + 2)
                    substitutions.append(body)
                    buf.append("$(" + body + ")")
                    continue
                if line[j] == "`":
                    close = line.find("`", j + 1)
                    close = n if close == -1 else close
                    substitutions.append(line[j + 1:close])
                    buf.append(line[j:close + 1])
                    j = close + 1
                    continue
                buf.append(line[j])
                j += 1
            word.append("".join(buf))
            in_word = True
            i = j + 1
            continue
        if line.startswith("$(", i):
            body, i = _balanced(line, i + 2)
            substitutions.append(body)
            word.append("$(" + body + ")")
            in_word = True
            continue
        if c == "`":
            close = line.find("`", i + 1)
            close = n if close == -1 else close
            substitutions.append(line[i + 1:close])
            word.append(line[i:close + 1])
            in_word = True
            i = close + 1
            continue
        if c == "#" and not in_word:
            newline = line.find("\n", i)
            i = n if newline == -1 else newline
            continue
        if c in " \t":
            end_word()
            i += 1
            continue
        redirect = next((r for r in REDIRECTS if line.startswith(r, i)), None)
        if redirect and not (redirect.startswith("&") and line.startswith("&&", i)):
            # a file-descriptor number written right before it belongs to it (2>)
            if in_word and "".join(word).isdigit():
                word, in_word = [], False
            end_word()
            segments[-1].append(("redir", redirect))
            i += len(redirect)
            continue
        operator = next((o for o in OPERATORS if line.startswith(o, i)), None)
        if operator:
            end_word()
            segments.append([])
            i += len(operator)
            continue
        word.append(c)
        in_word = True
        i += 1
    end_word()
    return [s for s in segments if s], substitutions


def _balanced(line: str, start: int) -> tuple[str, int]:
    """Body of ``$(...)`` starting after ``$(``, and the index after ``)``."""
    depth, i, quote = 1, start, ""
    while i < len(line):
        c = line[i]
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return line[start:i], i + 1
        i += 1
    return line[start:], len(line)


def _unwrap(argv: list[str]) -> tuple[list[str], str | None]:
    """Strip one wrapper (with its options and VAR=value words); returns the
    wrapped argv and the wrapper's name, or (argv, None)."""
    head = argv[0].rsplit("/", 1)[-1]
    if head not in WRAPPERS:
        return argv, None
    rest = argv[1:]
    while rest and (rest[0].startswith("-") or (head in ("env", "sudo") and "=" in rest[0]
                                                  and not rest[0].startswith("/"))):
        option = rest.pop(0)
        if head == "sudo" and option in ("-u", "-g", "-C", "-p", "-r", "-t", "-U", "-h") and rest:
            rest.pop(0)
        elif head == "timeout" and option in ("-s", "-k", "--signal", "--kill-after") and rest:
            rest.pop(0)
        elif head in ("nice", "ionice") and option in ("-n", "-c") and rest:
            rest.pop(0)
        elif head == "xargs" and option in ("-I", "-n", "-P", "-L", "-d", "-E", "-s") and rest:
            rest.pop(0)
    if head == "timeout" and rest and _is_number(rest[0]):
        rest = rest[1:]
    if head == "watch" and rest and _is_number(rest[0]):
        rest = rest[1:]
    return rest, head


def _is_number(word: str) -> bool:
    return word.rstrip("smhd").replace(".", "", 1).isdigit()


def simple_commands(line: str, *, _depth: int = 0, _via: tuple[str, ...] = ()) -> list[SimpleCommand]:
    """Every simple command the line would run, nested ones included."""
    if _depth > MAX_DEPTH or not line.strip():
        return []
    segments, substitutions = _tokenize(line)
    found: list[SimpleCommand] = []
    for segment in segments:
        argv: list[str] = []
        redirects: list[tuple[str, str]] = []
        pending = None
        for kind, text in segment:
            if kind == "redir":
                pending = text
            elif pending is not None:
                redirects.append((pending, text))
                pending = None
            else:
                argv.append(text)
        while argv and "=" in argv[0] and not argv[0].startswith(("=", "-", "/", ".")) \
                and argv[0].split("=", 1)[0].replace("_", "").isalnum():
            argv = argv[1:]  # leading VAR=value assignments
        while argv and argv[0] in _LEADING_KEYWORDS:
            argv = argv[1:]
        if argv and argv[0] in _HEADERS:
            continue
        via = _via
        while argv:
            inner, wrapper = _unwrap(argv)
            if wrapper is None:
                break
            via = via + (wrapper,)
            argv = inner
        if not argv and not redirects:
            continue
        found.append(SimpleCommand(argv, redirects, via, line))
        program = argv[0].rsplit("/", 1)[-1] if argv else ""
        if program in SHELLS and "-c" in argv[1:]:
            index = argv.index("-c", 1)
            if index + 1 < len(argv):
                found += simple_commands(argv[index + 1], _depth=_depth + 1, _via=via + (program,))
        elif program == "eval" and len(argv) > 1:
            found += simple_commands(" ".join(argv[1:]), _depth=_depth + 1, _via=via + ("eval",))
    for body in substitutions:
        found += simple_commands(body, _depth=_depth + 1, _via=_via)
    return found


def pipelines(line: str) -> list[list[SimpleCommand]]:
    """The top-level pipelines of a line (for rules such as ``curl | sh``)."""
    groups: list[list[SimpleCommand]] = []
    for chunk in _split_keep_pipes(line):
        groups.append([c for part in chunk for c in simple_commands(part)[:1]])
    return [g for g in groups if g]


def _split_keep_pipes(line: str) -> list[list[str]]:
    """Split at unquoted list operators into pipelines, each a list of parts
    split at single unquoted ``|``."""
    pipelines_found: list[list[str]] = [[]]
    current: list[str] = []
    quote = ""
    i = 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == quote:
                quote = ""
            current.append(c)
            i += 1
            continue
        if c in "'\"":
            quote = c
        elif c == "\\" and i + 1 < len(line):
            current.append(line[i:i + 2])
            i += 2
            continue
        elif line.startswith("||", i) or line.startswith("&&", i) or c in ";\n" or (c == "&" and not line.startswith("&>", i)):
            pipelines_found[-1].append("".join(current))
            pipelines_found.append([])
            current = []
            i += 2 if line.startswith(("||", "&&"), i) else 1
            continue
        elif c == "|" and not line.startswith("|&", i):
            pipelines_found[-1].append("".join(current))
            current = []
            i += 1
            continue
        current.append(c)
        i += 1
    pipelines_found[-1].append("".join(current))
    return [[p for p in pl if p.strip()] for pl in pipelines_found if any(p.strip() for p in pl)]
