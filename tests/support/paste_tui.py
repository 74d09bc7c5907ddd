"""A small full-screen program that reads its keys the way Claude Code's TUI
does, for the tests of speaking into a pane (run in a real tmux pane).

    python paste_tui.py LOG MODE

It redraws the whole screen on every change (a transcript, a ``────`` rule,
the input line ``❯ TEXT``, a rule, a status line), so an answer appears above
the row the cursor was on when a message was sent. Its keys:

* a read of several bytes that holds a carriage return is a paste: the
  return becomes a newline in the input, nothing is submitted (Claude Code's
  behaviour that left every health check unsent);
* a carriage return alone submits the input: it is shown as ``❯ TEXT`` in the
  transcript and appended to LOG as one JSON line ``{"prompt": TEXT}``;
* ``C-u`` cuts the input's last line (with the newline before it) into a
  kill buffer that consecutive cuts extend; ``C-y`` pastes
  it back; ``C-e`` is accepted; Backspace deletes a character; Escape alone
  is written to the transcript as ``Interrupted``.

MODE: ``healthy`` answers ``● ALIVE`` to a prompt holding ``HEALTH CHECK``;
``silent`` shows what was submitted and never answers; ``dialog`` draws a
permission dialog instead of an input line and only logs the keys it gets
(``{"keys": ...}``), as a dialog would take them.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import termios
import tty

RULE = "─"
GLYPH = "❯ "


def wrap(text: str, width: int, first: str) -> list[str]:
    rows, line = [], first
    for char in text:
        if len(line) >= width:
            rows.append(line)
            line = "  "
        line += char
    rows.append(line)
    return rows


class Screen:
    def __init__(self, log: str, mode: str):
        self.log, self.mode = log, mode
        self.transcript: list[str] = ["paste_tui ready"]
        self.input = ""
        self.kill = ""
        self.last_was_kill = False

    def record(self, entry: dict) -> None:
        with open(self.log, "a") as handle:
            handle.write(json.dumps(entry) + "\n")

    def draw(self) -> None:
        width, height = shutil.get_terminal_size((80, 24))
        if self.mode == "dialog":
            body = self.transcript + ["", "Do you want to proceed?", "  1. Yes", "  2. No"]
            rows = body[-(height - 1):]
            sys.stdout.write("\x1b[H\x1b[2J" + "\r\n".join(rows))
            sys.stdout.flush()
            return
        box: list[str] = []
        for index, part in enumerate(self.input.split("\n")):
            box += wrap(part, width - 1, GLYPH if index == 0 else "  ")
        rows = self.transcript[-max(1, height - len(box) - 3):] + [RULE * width] + box + [RULE * width, "  status"]
        sys.stdout.write("\x1b[H\x1b[2J" + "\r\n".join(row[:width] for row in rows))
        cursor_row = len(rows) - 2  # the last input row (1-based: rows - 2)
        sys.stdout.write(f"\x1b[{cursor_row};{len(box[-1]) + 1}H")
        sys.stdout.flush()

    def submit(self) -> None:
        if not self.input:
            return
        width = shutil.get_terminal_size((80, 24))[0]
        self.record({"prompt": self.input})
        self.transcript += [""] + wrap(self.input.replace("\n", " "), width - 1, GLYPH)
        if self.mode == "healthy" and "HEALTH CHECK" in self.input:
            self.transcript += ["", "● ALIVE"]
        self.input = ""

    def cut(self) -> None:
        """The input's last line, with the newline before it, into the kill buffer."""
        head, newline, last = self.input.rpartition("\n")
        piece = newline + last
        self.input = head
        self.kill = piece + self.kill if self.last_was_kill else piece

    def key(self, chunk: bytes) -> None:
        if self.mode == "dialog":
            self.record({"keys": chunk.decode("utf-8", "replace")})
            return
        if len(chunk) > 1 and b"\r" in chunk:  # a paste: its returns are newlines
            self.input += chunk.decode("utf-8", "replace").replace("\r", "\n")
            self.last_was_kill = False
            return
        for byte in chunk.decode("utf-8", "replace"):
            was_kill = False
            if byte == "\r":
                self.submit()
            elif byte == "\x15":
                self.cut()
                was_kill = True
            elif byte == "\x19":
                self.input += self.kill
            elif byte == "\x7f":
                self.input = self.input[:-1]
            elif byte == "\x1b" and len(chunk) == 1:
                self.transcript.append("Interrupted")
            elif byte == "\x05":
                pass
            elif byte.isprintable():
                self.input += byte
            self.last_was_kill = was_kill


def main(argv: list[str]) -> int:
    screen = Screen(argv[1], argv[2] if len(argv) > 2 else "healthy")
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setraw(fd)
    try:
        screen.draw()
        while True:
            chunk = os.read(fd, 4096)
            if not chunk:
                return 0
            screen.key(chunk)
            screen.draw()
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
