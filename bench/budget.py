"""The spend meter's file reading (``core.state.meterread.read_new``).

(1) First read of a Claude Code transcript of 200 MiB (lines shaped as the
    captured ``tests/fixtures/claude_code_transcript``: user lines with tool
    results of 2-16 KB, each assistant message in two lines): the whole read
    (``read_new`` called until it says no ``more``), its rate, and its peak
    Python memory (tracemalloc, in a second pass) against the file's size.
(2) Incremental reads: 10 KB appended, then ``read_new`` from the cursor, 20
    times; then 100 KB and 1 MB appends, to show the time follows the new
    bytes, not the file's size. Each read also has a fixed part that grows
    with the message keys the cursor keeps (copied and made a set per read,
    at most ``MAX_SEEN``, 20,000: under a millisecond).

Prints figures only; asserts nothing. Run: ``.venv/bin/python bench/budget.py``.
``--smoke``: a 4 MiB file and a few appends (about a second): it shows the
bench works, its figures mean nothing.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from leash.core.state.meterread import read_new  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "claude_code_transcript" / "session.jsonl"
FULL_BYTES, SMOKE_BYTES = 200 << 20, 4 << 20
APPENDS, SMOKE_APPENDS = 20, 3


def templates() -> tuple[bytes, bytes]:
    """An assistant line and a tool-result user line of the capture, with
    ``%(n)d`` where the message's number goes and ``%(pad)s`` for the result."""
    lines = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    assistant = next(line for line in lines if line["type"] == "assistant")
    assistant = dict(assistant, requestId="req_%(n)d", message=dict(assistant["message"], id="msg_%(n)d"))
    user = next(line for line in lines if line["type"] == "user" and isinstance(line["message"]["content"], list))
    content = [dict(block, content="%(pad)s") for block in user["message"]["content"]]
    user = dict(user, message=dict(user["message"], content=content))
    return json.dumps(assistant).encode() + b"\n", json.dumps(user).encode() + b"\n"


class Writer:
    """Appends turns (two assistant lines, one user line) to a transcript."""

    def __init__(self, path: Path) -> None:
        self.path, self.turns = path, 0
        self.assistant, self.user = templates()

    def turn_bytes(self) -> bytes:
        self.turns += 1
        n = self.turns
        pad = b"x" * (2048 + (n * 7919) % 14336)  # 2-16 KB of tool output
        line = self.assistant.replace(b"%(n)d", str(n).encode())
        return line + line + self.user.replace(b"%(pad)s", pad)

    def append(self, size: int) -> int:
        chunk, written = [], 0
        while written < size:
            chunk.append(self.turn_bytes())
            written += len(chunk[-1])
        with self.path.open("ab") as handle:
            handle.write(b"".join(chunk))
        return written

    def fill(self, size: int) -> None:
        written = 0
        while written < size:
            written += self.append(min(8 << 20, size - written))


def read_whole(path: Path):
    cursor, usages, calls = None, 0, 0
    while True:
        read = read_new(path, cursor, cli="claude")
        cursor, usages, calls = read.cursor, usages + len(read.usages), calls + 1
        if not read.more:
            return cursor, usages, calls


def first_read(path: Path) -> None:
    size = path.stat().st_size
    started = time.perf_counter()
    cursor, usages, calls = read_whole(path)
    seconds = time.perf_counter() - started
    tracemalloc.start()
    read_whole(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"(1) first read of {size / 2 ** 20:.0f} MiB: {seconds:.2f} s ({size / 1e6 / seconds:.0f} MB/s), "
          f"{usages} messages in {calls} call(s), peak Python memory {peak / 1e6:.1f} MB "
          f"({100 * peak / size:.1f} % of the file), cursor {len(json.dumps(cursor.to_json())) / 1e3:.0f} KB as JSON")


def incremental(path: Path, writer: Writer, appends: int) -> None:
    cursor, _, _ = read_whole(path)
    for size, times in ((10_000, appends), (100_000, max(appends // 4, 2)), (1_000_000, max(appends // 10, 2))):
        samples, counted = [], 0
        for _ in range(times):
            writer.append(size)
            started = time.perf_counter()
            read = read_new(path, cursor, cli="claude")
            samples.append(time.perf_counter() - started)
            cursor, counted = read.cursor, counted + len(read.usages)
        median = statistics.median(samples)
        print(f"(2) incremental read after a {size / 1e3:.0f} KB append, n={times}: median {median * 1e3:.2f} ms, "
              f"max {max(samples) * 1e3:.2f} ms, {median * 1e6 / (size / 1e3):.1f} us per KB, "
              f"{counted} messages, file {path.stat().st_size / 1e6:.0f} MB")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="the smallest form: shows the bench runs")
    options = parser.parse_args()
    size, appends = (SMOKE_BYTES, SMOKE_APPENDS) if options.smoke else (FULL_BYTES, APPENDS)
    with tempfile.TemporaryDirectory(prefix="bench-budget-") as folder:
        path = Path(folder) / "session.jsonl"
        writer = Writer(path)
        started = time.perf_counter()
        writer.fill(size)
        print(f"a transcript of {path.stat().st_size / 2 ** 20:.0f} MiB, {writer.turns} turns, "
              f"written in {time.perf_counter() - started:.1f} s")
        first_read(path)
        incremental(path, writer, appends)
    return 0


if __name__ == "__main__":
    sys.exit(main())
