"""What a ``tmux`` command line makes the tmux server run: the shell reader's view of tmux.

A command given to tmux runs under the tmux server, outside the process tree
of whoever typed it, so the shell reader reads it as a nested command, the
way it reads ``bash -c SCRIPT``. ``tmux_scripts(argv, dynamic, own_pane=...)``
walks tmux's own command line (its global options, then commands separated
by ``;`` words) and returns a ``TmuxScripts``: the shell texts tmux would run
(``new-window``/``split-window``/``new-session``/``respawn-pane``/
``respawn-window``/``display-popup``/``run-shell``/``pipe-pane``/``if-shell``
and ``tmux -c``), with the directory a ``-c``/``-d`` option names, and the
keys ``send-keys`` types into a pane other than the caller's own, joined
into the line they make (and the text ``set-buffer`` puts where
``paste-buffer`` types it). tmux commands that run other tmux commands
(``if-shell``, ``run-shell -C``, ``confirm-before``, ``set-hook``,
``bind-key``, ``display-menu``) are parsed with tmux's own quoting and
walked the same way. What cannot be known (``source-file``, a computed
tmux command) is listed in ``unseen``. Command names may be aliases
(``neww``) or unique prefixes (``new-w``), as tmux accepts. Nothing here
raises; nesting deeper than ``MAX_TMUX_DEPTH`` is not read, and says so in
``incomplete`` (the reader then stops, as for a line too deep to read).
"""
from __future__ import annotations

import re

MAX_TMUX_DEPTH = 6

# tmux's global options that take a value: -c shell-command, -f file, -L name, -S path, -T features.
_GLOBAL_VALUES = frozenset("cfLST")
# Per command: the option letters that take a value, and what runs.
#   shell: its arguments are a shell command (one word: a script; more: a program and its arguments)
#   dir: the option naming the directory it starts in
_COMMANDS: dict[str, dict] = {
    "new-window": {"values": "ceFnt", "shell": True, "dir": "c"},
    "split-window": {"values": "ceFlpt", "shell": True, "dir": "c"},
    "new-session": {"values": "ceFfnstxy", "shell": True, "dir": "c"},
    "respawn-pane": {"values": "cet", "shell": True, "dir": "c"},
    "respawn-window": {"values": "cet", "shell": True, "dir": "c"},
    "display-popup": {"values": "bcdehsStTwxy", "shell": True, "dir": "d"},
    "run-shell": {"values": "cdt", "shell": True, "dir": "c"},
    "pipe-pane": {"values": "t", "shell": True, "dir": ""},
    "if-shell": {"values": "t"},
    "send-keys": {"values": "cNt"},
    "confirm-before": {"values": "cpt"},
    "set-hook": {"values": "t"},
    "bind-key": {"values": "NT"},
    "display-menu": {"values": "bcCHsStTxy"},
    "source-file": {"values": ""},
    "set-buffer": {"values": "bnt"},
    "paste-buffer": {"values": "bst"},
    "load-buffer": {"values": "bt"},
}
_ALIASES = {"neww": "new-window", "splitw": "split-window", "new": "new-session", "respawnp": "respawn-pane",
            "respawnw": "respawn-window", "popup": "display-popup", "run": "run-shell", "pipep": "pipe-pane",
            "if": "if-shell", "send": "send-keys", "confirm": "confirm-before", "bind": "bind-key",
            "menu": "display-menu", "source": "source-file", "setb": "set-buffer", "pasteb": "paste-buffer",
            "loadb": "load-buffer"}
# Every tmux command (tmux 3.3), so a prefix is taken only where tmux would take it: when it is unique.
_ALL = ("attach-session bind-key break-pane capture-pane choose-buffer choose-client choose-tree clear-history "
        "clear-prompt-history clock-mode command-prompt confirm-before copy-mode customize-mode delete-buffer "
        "detach-client display-menu display-message display-popup display-panes find-window has-session if-shell "
        "join-pane kill-pane kill-server kill-session kill-window last-pane last-window link-window list-buffers "
        "list-clients list-commands list-keys list-panes list-sessions list-windows load-buffer lock-client "
        "lock-server lock-session move-pane move-window new-session new-window next-layout next-window "
        "paste-buffer pipe-pane previous-layout previous-window refresh-client rename-session rename-window "
        "resize-pane resize-window respawn-pane respawn-window rotate-window run-shell save-buffer select-layout "
        "select-pane select-window send-keys send-prefix server-access set-buffer set-environment set-hook "
        "set-option set-window-option show-buffer show-environment show-hooks show-messages show-options "
        "show-prompt-history show-window-options source-file split-window start-server suspend-client swap-pane "
        "swap-window switch-client unbind-key unlink-window wait-for").split()
# send-keys: key names that type a character into the pane's line; other key names type nothing.
_TYPED_KEYS = {"enter": "\n", "kpenter": "\n", "space": " ", "tab": "\t"}
_MODIFIERS = re.compile(r"^(?:[CMScms]-|\^)+")
_CONTROL = re.compile(r"^(?:[Cc]-|\^)(.)$")
_FUNCTION_KEY = re.compile(r"^(?:F\d{1,2}|KP\w+)$", re.IGNORECASE)
# Keys that move, erase or signal: they type nothing the line would keep.
_SILENT_KEYS = frozenset({"escape", "bspace", "btab", "dc", "delete", "end", "home", "ic", "insert", "npage",
                          "pagedown", "pgdn", "ppage", "pageup", "pgup", "up", "down", "left", "right", "any"})
# Control keys that end the line: C-m and C-j run it, C-c and C-u drop it (what follows starts a new one).
_CONTROL_TYPED = {"m": "\n", "j": "\n", "c": "\n", "u": "\n", "i": "\t"}
_SAFE_WORD = re.compile(r"^[\w@%+=:,./-]+$")


class TmuxScripts:
    """What a tmux command line runs: ``scripts`` as (shell text, computed,
    directory or None, whether it runs where the caller stands), ``unseen``,
    and ``incomplete`` (why the line was not read to its end, else None)."""

    __slots__ = ("scripts", "unseen", "incomplete")

    def __init__(self) -> None:
        self.scripts: list[tuple[str, bool, str | None, bool]] = []
        self.unseen: list[str] = []
        self.incomplete: str | None = None


def tmux_scripts(argv: list[str], dynamic: list[bool], *, own_pane: str | None = None) -> TmuxScripts:
    """The shell texts the tmux command line ``argv`` makes tmux run (see the module)."""
    found = TmuxScripts()
    words = list(zip(argv[1:], dynamic[1:], strict=False))
    other_server = False
    while words and words[0][0].startswith("-") and len(words[0][0]) > 1:
        word, computed = words.pop(0)
        if word == "--":
            break
        letters = word[1:]
        for index, letter in enumerate(letters):
            if letter not in _GLOBAL_VALUES:
                continue
            value, value_computed = (letters[index + 1:], computed) if letters[index + 1:] else (
                words.pop(0) if words else ("", False))
            other_server = other_server or letter in "LS"
            if letter == "c":  # tmux -c COMMAND: run by the shell, as a login shell would
                found.scripts.append((value, value_computed, None, True))
            break
    _walk(found, words, own_pane=None if other_server else own_pane, depth=0)
    return found


def command_name(word: str) -> str | None:
    """The tmux command a word names (an alias or a unique prefix), else None."""
    if word in _ALIASES:
        return _ALIASES[word]
    matches = [name for name in _ALL if name.startswith(word)] if word else []
    return word if word in _ALL else matches[0] if len(matches) == 1 else None


def _walk(found: TmuxScripts, words: list[tuple[str, bool]], *, own_pane: str | None, depth: int) -> None:
    """Each tmux command of a ``;``-separated list of (word, computed)."""
    if depth > MAX_TMUX_DEPTH:
        found.incomplete = f"tmux commands nested deeper than {MAX_TMUX_DEPTH} levels"
        return
    for command in _split_commands(words):
        name, computed = command[0]
        if computed:
            found.unseen.append(f"a computed tmux command ({name[:60]})")
            continue
        program = command_name(name)
        if program in _COMMANDS:
            _one(found, program, command[1:], own_pane=own_pane, depth=depth)


def _split_commands(words: list[tuple[str, bool]]) -> list[list[tuple[str, bool]]]:
    """tmux's ``;`` separators: a ``;`` word, or a word ending in ``;`` (``\\;`` keeps it);
    ``{`` ... ``}`` words are one operand (a command list), as newer tmux reads them."""
    commands: list[list[tuple[str, bool]]] = [[]]
    for word, computed in _braced(words):
        if word == ";":
            commands.append([])
        elif word.endswith(";") and not word.endswith("\\;"):
            commands[-1].append((word[:-1], computed))
            commands.append([])
        else:
            commands[-1].append((word[:-2] + ";" if word.endswith("\\;") else word, computed))
    return [c for c in commands if c]


def _braced(words: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    out: list[tuple[str, bool]] = []
    group: list[tuple[str, bool]] = []
    depth = 0
    for word, computed in words:
        if word == "{" or (depth and word == "}"):
            depth += 1 if word == "{" else -1
            if depth == 0:
                out.append((" ".join(_quoted(w) for w, _ in group[1:]), any(c for _, c in group)))
                group = []
                continue
        (group if depth else out).append((word, computed))
    return out + group


def _options(program: str, words: list[tuple[str, bool]]) -> tuple[dict[str, str], list[tuple[str, bool]]]:
    """tmux's getopt over one command's words: ({letter: value or ""}, operands)."""
    takes = _COMMANDS[program]["values"]
    options: dict[str, str] = {}
    rest = list(words)
    while rest and rest[0][0].startswith("-") and len(rest[0][0]) > 1:
        word = rest.pop(0)[0]
        if word == "--":
            break
        letters = word[1:]
        for index, letter in enumerate(letters):
            if letter in takes:
                options[letter] = letters[index + 1:] or (rest.pop(0)[0] if rest else "")
                break
            options[letter] = ""
    return options, rest


def _one(found: TmuxScripts, program: str, words: list[tuple[str, bool]], *, own_pane: str | None,
         depth: int) -> None:
    options, operands = _options(program, words)
    spec = _COMMANDS[program]
    if program == "source-file":
        found.unseen.append("the tmux commands of a file given to source-file")
    elif program in ("paste-buffer", "load-buffer"):
        found.unseen.append(f"what a tmux buffer holds ({program})")
    elif program == "set-buffer":  # text put where paste-buffer types it into a pane: read as that line
        _typed(found, {"l": ""}, operands[:1], None)
    elif program == "send-keys":
        _typed(found, options, operands, own_pane)
    elif program == "run-shell" and "C" in options:
        _nested(found, operands[:1], own_pane=own_pane, depth=depth)
    elif spec.get("shell"):
        _script(found, operands, options.get(spec["dir"]) if spec["dir"] else None)
    elif program == "if-shell":
        if "F" not in options:  # with -F the first operand is a format, not a shell command
            _script(found, operands[:1], None)
        _nested(found, operands[1:3], own_pane=own_pane, depth=depth)
    elif program == "bind-key":
        _walk(found, operands[1:], own_pane=own_pane, depth=depth + 1)
    elif program == "display-menu":  # name, key, command triples: names and keys name no command tmux runs
        _nested(found, operands, own_pane=own_pane, depth=depth)
    else:  # confirm-before COMMAND, set-hook HOOK COMMAND
        _nested(found, operands[-1:] if program == "confirm-before" else operands[1:2], own_pane=own_pane,
                depth=depth)


def _script(found: TmuxScripts, operands: list[tuple[str, bool]], directory: str | None) -> None:
    """One operand is a shell script; more are a program and its arguments, run without a shell."""
    if not operands:
        return
    computed = any(c for _, c in operands)
    text = operands[0][0] if len(operands) == 1 else " ".join(_quoted(w) for w, _ in operands)
    found.scripts.append((text, computed, directory or None, True))


def _nested(found: TmuxScripts, operands: list[tuple[str, bool]], *, own_pane: str | None, depth: int) -> None:
    """Operands that are tmux command lists of their own, in tmux's quoting."""
    for text, computed in operands:
        words = [(w, computed) for w in parse_tmux_line(text)]
        _walk(found, words, own_pane=own_pane, depth=depth + 1)


def _typed(found: TmuxScripts, options: dict[str, str], keys: list[tuple[str, bool]], own_pane: str | None) -> None:
    """send-keys: the line typed into a pane other than the caller's own, read as a command there."""
    if "X" in options or not keys:
        return  # copy-mode commands type nothing
    target = options.get("t")
    if own_pane and target in (None, own_pane):
        return  # the caller's own pane: whatever runs there is the caller's own
    typed: list[str] = []
    for key, _ in keys:
        typed.append(_key_text(key, literal="l" in options, hexadecimal="H" in options))
    text = "".join(typed)
    if text.strip():
        found.scripts.append((text, any(c for _, c in keys), None, False))


def _key_text(key: str, *, literal: bool, hexadecimal: bool) -> str:
    """What one send-keys argument types: a key name its character (Enter a
    newline, C-c a new line), an unknown name its letters, as tmux sends them."""
    if hexadecimal:
        try:
            return bytes([int(key, 16)]).decode("latin-1")
        except ValueError:
            return ""
    if literal or len(key) == 1:
        return key
    if not _MODIFIERS.match(key):
        lowered = key.lower()
        if lowered in _TYPED_KEYS:
            return _TYPED_KEYS[lowered]
        return "" if lowered in _SILENT_KEYS or _FUNCTION_KEY.match(key) else key
    control = _CONTROL.match(key)
    return _CONTROL_TYPED.get(control.group(1).lower(), "") if control else ""


def _quoted(word: str) -> str:
    return word if _SAFE_WORD.match(word) else "'" + word.replace("'", "'\\''") + "'"


def parse_tmux_line(text: str) -> list[str]:
    """A tmux command string split into words, its ``;`` separators kept as ``;`` words.

    tmux's quoting: ``'...'`` literal, ``"..."`` with backslash escapes,
    ``\\`` escapes one character, ``{ ... }`` is one word (a command list),
    ``#`` starts a comment at a word's start."""
    words: list[str] = []
    word: list[str] | None = None
    pos, n = 0, len(text)
    while pos < n:
        c = text[pos]
        if c in " \t\n":
            if word is not None:
                words.append("".join(word))
                word = None
            if c == "\n":
                words.append(";")
            pos += 1
        elif c == ";":  # unquoted, it ends the command even inside a word
            if word is not None:
                words.append("".join(word))
                word = None
            words.append(";")
            pos += 1
        elif c == "#" and word is None:
            end = text.find("\n", pos)
            pos = n if end == -1 else end
        elif c == "{" and word is None:
            end = _closing_brace(text, pos)
            words.append(text[pos + 1:end])
            pos = end + 1
        else:
            word = word if word is not None else []
            pos = _word_part(text, pos, word)
    if word is not None:
        words.append("".join(word))
    return words


def _word_part(text: str, pos: int, word: list[str]) -> int:
    c = text[pos]
    if c == "'":
        end = text.find("'", pos + 1)
        end = len(text) if end == -1 else end
        word.append(text[pos + 1:end])
        return end + 1
    if c == '"':
        pos += 1
        while pos < len(text) and text[pos] != '"':
            if text[pos] == "\\" and pos + 1 < len(text):
                pos += 1
            word.append(text[pos])
            pos += 1
        return pos + 1
    if c == "\\" and pos + 1 < len(text):
        word.append(text[pos + 1])
        return pos + 2
    word.append(c)
    return pos + 1


def _closing_brace(text: str, pos: int) -> int:
    depth = 0
    for index in range(pos, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return index
    return len(text)
