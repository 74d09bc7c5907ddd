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

(3) leashd's added time per hook with metering on: a PostToolUse answered
    by leashd's hook verb (``HookVerb.reply``, in process, a real home) with
    the spend meter told of it (``Meter.seen_hook``: the only part on the
    hook's path; the reading runs in the meter's own thread) and without;
    the medians, p99s and their difference (target: at most 50 us median).

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


def hook_overhead(folder: Path, calls: int) -> None:
    """(3): HookVerb.reply for one PostToolUse, with and without the meter told, in turn."""
    import os

    from leash.core.daemon.hookverb import HookVerb
    from leash.core.daemon.meter import Meter
    from leash.core.daemon.peers import Peer
    from leash.core.store.files import FileBackend

    home = folder / "home"
    home.mkdir(mode=0o700)
    backend = FileBackend(str(home))
    meter = Meter(str(home), backend)  # not started: its queue only fills, as the hook's side does
    peer = Peer(os.getpid(), os.getuid(), os.getgid())

    class Agents:
        def learn_from_hook(self, *args, **kwargs) -> None:
            pass

    metered = HookVerb(str(home), backend, Agents(), refuse=lambda *a, **k: None, seen=meter.seen_hook)
    bare = HookVerb(str(home), backend, Agents(), refuse=lambda *a, **k: None, seen=None)
    payload = json.dumps({"session_id": "bench", "transcript_path": str(folder / "session.jsonl"), "cwd": str(home),
                          "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"},
                          "tool_response": {"stdout": "a\nb\n"}})
    request = {"verb": "hook", "event": "post-tool-use", "payload": payload, "env": {}}
    samples: dict[str, list[float]] = {"on": [], "off": []}
    for verb in (metered, bare):  # warm
        verb.reply(request, peer)
    for _ in range(calls):
        for name, verb in (("on", metered), ("off", bare)):
            started = time.perf_counter()
            verb.reply(request, peer)
            samples[name].append(time.perf_counter() - started)
            meter.sessions.clear()
    on, off = (sorted(samples[k]) for k in ("on", "off"))
    p99 = max(0, int(len(on) * 0.99) - 1)
    print(f"(3) leashd's hook with metering on, n={calls}: median {statistics.median(on) * 1e6:.0f} us "
          f"(p99 {on[p99] * 1e6:.0f}), off {statistics.median(off) * 1e6:.0f} us (p99 {off[p99] * 1e6:.0f}); "
          f"added {(statistics.median(on) - statistics.median(off)) * 1e6:+.1f} us median (target <= 50)")
    parsed = json.loads(payload)
    alone = []
    for _ in range(calls * 20):
        started = time.perf_counter()
        meter.seen_hook("post-tool-use", parsed)
        alone.append(time.perf_counter() - started)
        meter.sessions.clear()
    print(f"    the meter's part alone (Meter.seen_hook), n={len(alone)}: "
          f"median {statistics.median(alone) * 1e6:.2f} us "
          f"(the rest of the difference above is the two runs' noise)")
    backend.close()


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
        hook_overhead(Path(folder), 50 if options.smoke else 2000)
    return 0


if __name__ == "__main__":
    sys.exit(main())
