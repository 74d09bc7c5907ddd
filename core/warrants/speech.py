"""Speaking into a pane: how a dog delivers its health check, and where it
looks for the answer.

Most panes run an interactive agent, not a shell. Claude Code's TUI reads a
burst of text that ends in Enter as a paste and keeps the Enter as a newline,
so a check typed with its Enter in one go sits in the input box unsent — and a
dog that then hears nothing kills a healthy agent. ``deliver`` therefore:

1. looks at what runs in the pane (``program_of``): a Claude Code TUI, a
   shell, or a program it does not know (and says so);
2. clears the input line first (Claude Code: ``C-e C-u`` until its input box
   is empty; a shell: ``C-e C-u``), remembering whether that removed anything
   — an operator's draft goes to the program's own kill buffer;
3. types the check literally, waits ``ENTER_PAUSE_SECONDS`` and sends Enter as
   an event of its own;
4. confirms the check left the input line (Claude Code: the input box between
   its two rules no longer holds it; elsewhere: the cursor's row no longer
   ends with it), pressing Enter again up to ``ENTER_ATTEMPTS`` times;
5. leaves the input line as it found it: a check that never left is taken
   back with Backspace (which, unlike ``C-u``, keeps the kill buffer), and a
   draft that the clearing removed is put back with ``C-y``.

A check that could not be delivered is not silence: the result says
``delivered: False`` with why, and the dog ends that attempt ``undelivered``
without counting it towards a kill. A Claude Code pane that shows no input box
(a permission dialog or a menu is open) is never typed into at all: keys
there would answer the dialog.

What it cannot see: a program it does not know gets the check typed and Enter
pressed (separately), and no clearing or restoring — the keys that would do
it may mean something else there; a Claude Code or shell that rebinds
``C-u``/``C-y`` is not detected. The rule for "the check left the input line"
reads the screen, so a program that draws its input elsewhere than the
cursor's row (and is not Claude Code) may be judged delivered too early.

``answer_region`` is the other half: Claude Code redraws its screen in place,
so the answer to a check appears above the row where the cursor was when it
was sent. The dog therefore reads what follows the last echo of the check on
the screen (``after_echo``), the echo found as one run of rows however the
pane wrapped it, and ignores the input box.

Failure: tmux errors propagate (``TmuxError``); the caller (the dog) treats
them like any step error. Nothing here kills or waits longer than
``ENTER_PAUSE_SECONDS + ENTER_ATTEMPTS * CONFIRM_SECONDS`` in all.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

CLAUDE_CODE = "claude-code"
SHELL = "shell"
UNKNOWN = "unknown"
# What tmux names as the pane's foreground program for each kind. Claude Code's
# native installer runs a file named by its version (``2.1.332``); npm's runs
# ``claude`` or ``node`` (then told apart by the process's command line).
CLAUDE_COMMANDS = frozenset({"claude", "claude-code"})
NODE_COMMANDS = frozenset({"node", "nodejs"})
SHELL_COMMANDS = frozenset({"bash", "sh", "dash", "zsh", "fish", "ksh", "mksh", "ash", "tcsh", "csh", "busybox"})
PROMPT_GLYPHS = "❯>›$#%"
RULE_CHARS = frozenset("─━═-")
BOX_TOP, BOX_BOTTOM, BOX_SIDE = "╭", "╰", "│"
MIN_RULE_FRACTION = 0.6  # a rule spans most of the pane's width
MIN_RULE_CHARS = 20  # where the width is not known (rows read with history)
ENTER_PAUSE_SECONDS = 0.3  # between the text and its Enter: long enough not to be one burst
CONFIRM_SECONDS = 1.5  # how long one Enter gets to move the check out of the input line
CONFIRM_POLL_SECONDS = 0.1
ENTER_ATTEMPTS = 3
CLEAR_ROUNDS = 12  # C-e C-u rounds at most: one per line of a multi-line draft
TAIL_CHARS = 16  # the end of the check that marks it as still in the input line
PASTE_PLACEHOLDER = "[Pasted text"  # Claude Code folds a long paste into this


@dataclass
class Delivery:
    """What became of one check: ``delivered`` or not (``why``), the pane's
    program as the dog judged it, the Enters it took, and whether an
    operator's draft was found and put back."""
    delivered: bool
    program: str
    command: str
    enters: int = 0
    draft_restored: bool = False
    why: str = ""

    def as_dict(self) -> dict:
        return {"delivered": self.delivered, "program": self.program, "command": self.command,
                "enters": self.enters, "draft_restored": self.draft_restored, "why": self.why}


def program_of(view: dict) -> str:
    """``CLAUDE_CODE``, ``SHELL`` or ``UNKNOWN`` for the pane ``view`` shows
    (``Tmux.view``): by its foreground command, and for a node process or a
    version-named binary by whether the screen shows Claude Code's input box."""
    command = (view.get("command") or "").strip()
    if command in CLAUDE_COMMANDS:
        return CLAUDE_CODE
    if command in SHELL_COMMANDS or command.lstrip("-") in SHELL_COMMANDS:
        return SHELL
    looks_like_version = command.replace(".", "").isdigit() and command.count(".") == 2
    if (command in NODE_COMMANDS or looks_like_version) and input_box(view) is not None:
        return CLAUDE_CODE
    return UNKNOWN


def _is_rule(row: str, width: int) -> bool:
    text = row.strip()
    return bool(text) and set(text) <= RULE_CHARS and len(text) >= MIN_RULE_FRACTION * max(1, width)


def input_box(view: dict) -> tuple[int, int] | None:
    """(first, last) visible row of Claude Code's input box — the rows between
    its last two rules (or inside its older rounded box) — or None when the
    screen shows none (a dialog, a menu, or not Claude Code)."""
    rows, width = view["rows"], view.get("width") or 80
    rules = [i for i, row in enumerate(rows) if _is_rule(row, width)]
    if len(rules) >= 2 and rules[-1] - rules[-2] > 1:
        return rules[-2] + 1, rules[-1] - 1
    tops = [i for i, row in enumerate(rows) if row.lstrip().startswith(BOX_TOP)]
    bottoms = [i for i, row in enumerate(rows) if row.lstrip().startswith(BOX_BOTTOM)]
    if tops and bottoms and bottoms[-1] - tops[-1] > 1:
        return tops[-1] + 1, bottoms[-1] - 1
    return None


def _compact(text: str) -> str:
    return "".join(text.split())


def input_text(view: dict, program: str) -> str:
    """What the input line holds, without the prompt glyph and box sides:
    Claude Code's input box, or the cursor's row elsewhere."""
    if program == CLAUDE_CODE:
        box = input_box(view)
        if box is None:
            return ""
        lines = view["rows"][box[0]:box[1] + 1]
    else:
        y = view["cursor"][1]
        lines = [view["rows"][y]] if 0 <= y < len(view["rows"]) else []
    text = " ".join(line.strip().strip(BOX_SIDE).strip() for line in lines).strip()
    if program == CLAUDE_CODE:
        text = text.lstrip(PROMPT_GLYPHS).strip()
    return text


def still_typed(view: dict, program: str, message: str) -> bool:
    """Whether the check is still in the input line: the input line ends with
    the check's last characters, or holds nothing but a tail of it (a pane
    that wrapped it), or Claude Code folded it into a paste placeholder."""
    held = input_text(view, program)
    if not held:
        return False
    if program == CLAUDE_CODE and PASTE_PLACEHOLDER in held:
        return True
    compact, sent = _compact(held), _compact(message)
    return compact.endswith(sent[-TAIL_CHARS:]) or (len(compact) >= 3 and sent.endswith(compact))


class Speaker:
    """``deliver`` over a ``Tmux`` (``view``, ``type_text``, ``send_keys``);
    ``sleep`` is injected so a test can run it without waiting."""

    def __init__(self, tmux, *, sleep=time.sleep, clock=time.monotonic, enter_pause: float = ENTER_PAUSE_SECONDS,
                 confirm_seconds: float = CONFIRM_SECONDS):
        self.tmux = tmux
        self.sleep = sleep
        self.clock = clock
        self.enter_pause = enter_pause
        self.confirm_seconds = confirm_seconds

    def deliver(self, target: str, message: str) -> Delivery:
        view = self.tmux.view(target)
        program = program_of(view)
        command = view.get("command") or ""
        if program == CLAUDE_CODE and input_box(view) is None:
            return Delivery(False, program, command, why="Claude Code shows no input line (a dialog or menu is "
                                                          "open): nothing typed")
        draft = self._clear(target, program, view)
        self.tmux.type_text(target, message)
        self.sleep(self.enter_pause)
        enters = 0
        delivered = False
        while enters < ENTER_ATTEMPTS and not delivered:
            self.tmux.send_keys(target, "Enter")
            enters += 1
            delivered = self._left_input(target, program, message)
        why = ""
        if not delivered:
            # Backspace, not C-u: the kill buffer still holds the operator's draft.
            if program != UNKNOWN:
                self.tmux.send_keys(target, "BSpace", repeat=len(message) + enters)
            why = f"the check stayed in the input line after {enters} Enter(s)"
        if draft and program != UNKNOWN:
            self.tmux.send_keys(target, "C-y")
        if program == UNKNOWN and not why:
            why = (f"the pane runs {command or 'an unnamed program'}, which the dog does not know: the check was "
                   "typed with Enter, the input line neither cleared nor restored")
        return Delivery(delivered, program, command, enters=enters, draft_restored=bool(draft) and program != UNKNOWN,
                        why=why)

    def _clear(self, target: str, program: str, view: dict) -> bool:
        """Empty the input line; True when that removed something (a draft the
        program's kill buffer now holds)."""
        if program == UNKNOWN:
            return False
        before = input_text(view, program)
        now = before
        for _ in range(CLEAR_ROUNDS if program == CLAUDE_CODE else 1):
            self.tmux.send_keys(target, "C-e", "C-u")
            self.sleep(CONFIRM_POLL_SECONDS)
            after = input_text(self.tmux.view(target), program)
            if not after or after == now:
                now = after
                break
            now = after
        return now != before

    def _left_input(self, target: str, program: str, message: str) -> bool:
        deadline = self.clock() + self.confirm_seconds
        while True:
            self.sleep(CONFIRM_POLL_SECONDS)
            if not still_typed(self.tmux.view(target), program, message):
                return True
            if self.clock() >= deadline:
                return False


# ------------------------------------------------------------------ the answer
ECHO_HEAD_CHARS = 5  # "[DOG]": where an echo of the check begins on a row


def _echo_from(lines: list[str], start: int, offset: int, sent: str) -> tuple[int, str] | None:
    """(index after the echo, what its last row holds after it) for a run of
    rows from ``lines[start]`` at ``offset`` (compacted) that together spell
    the whole check, however the pane wrapped or indented it; None if not."""
    spelled = ""
    for index in range(start, len(lines)):
        piece = _compact(lines[index])[offset if index == start else 0:]
        if not piece:
            continue
        candidate = spelled + piece
        if candidate.startswith(sent):
            return index + 1, candidate[len(sent):]
        if not sent.startswith(candidate):
            return None
        spelled = candidate
    return None


def _echo_at(lines: list[str], start: int, sent: str) -> tuple[int, str] | None:
    """An echo of the check beginning on row ``start`` (see ``_echo_from``)."""
    row = _compact(lines[start])
    offset = row.find(sent[:ECHO_HEAD_CHARS])
    while offset >= 0:
        found = _echo_from(lines, start, offset, sent)
        if found is not None:
            return found
        offset = row.find(sent[:ECHO_HEAD_CHARS], offset + 1)
    return None


def after_echo(lines: list[str], message: str) -> list[str] | None:
    """The rows after the first whole echo of ``message`` in ``lines`` (what
    its last row holds after it first, compacted), with every later whole echo
    taken out too (a program's copy of it, re-wrapped or not: a piece of it
    reading ``ALIVE`` is no answer); None when no whole echo is there
    (scrolled away, or never shown). The first, because a check names its
    warrant and attempt: every echo of it is this check's, and an answer
    counts even when the screen shows the check again below it."""
    sent = _compact(message)
    if not sent:
        return None
    first = next((start for start in range(len(lines)) if _echo_at(lines, start, sent) is not None), None)
    if first is None:
        return None
    kept: list[str] = []
    index = first
    while index < len(lines):
        found = _echo_at(lines, index, sent)
        if found is None:
            kept.append(lines[index])
            index += 1
            continue
        end, rest = found
        if rest:
            kept.append(rest)
        index = end
    return kept


def without_input_box(lines: list[str], *, min_rule_chars: int = MIN_RULE_CHARS) -> list[str]:
    """``lines`` without Claude Code's input box and what is drawn below it
    (from its second-to-last rule on): an operator's draft there is not the
    agent's answer."""
    rules = [i for i, row in enumerate(lines)
             if len(row.strip()) >= min_rule_chars and set(row.strip()) <= RULE_CHARS]
    return lines[:rules[-2]] if len(rules) >= 2 else lines
