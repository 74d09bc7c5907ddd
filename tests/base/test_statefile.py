"""The state-writing module: locks, atomic replace, JSONL append, cache."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from leash.core.base.statefile import (
    CachedJSON,
    StateCorrupt,
    append_line,
    last_lines,
    locked,
    quarantine,
    read_json,
    repair_torn_tail,
    write_json,
)


def test_write_json_is_0600_and_leaves_no_temp_files(tmp_path):
    target = tmp_path / "state.json"
    write_json(target, {"a": 1})
    write_json(target, {"a": 2})
    assert json.loads(target.read_text()) == {"a": 2}
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_read_json_policy_inputs(tmp_path):
    target = tmp_path / "x.json"
    assert read_json(target, "missing") == "missing"
    target.write_text("{oops")
    with pytest.raises(StateCorrupt):
        read_json(target)
    target.write_text("[1]")
    with pytest.raises(StateCorrupt, match="expected a JSON dict"):
        read_json(target)


def test_lock_is_reentrant_and_excludes_other_processes(tmp_path):
    target = tmp_path / "x.json"
    probe = ("import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT);"
             "\ntry:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB); print('free')"
             "\nexcept BlockingIOError:\n    print('held')")

    def check() -> str:
        return subprocess.run([sys.executable, "-c", probe, f"{target}.lock"], capture_output=True,
                              text=True).stdout.strip()

    with locked(target):
        with locked(target):  # the same thread may take it again
            assert check() == "held"
        assert check() == "held"
    assert check() == "free"


def test_quarantine_keeps_the_bytes_and_never_overwrites(tmp_path):
    target = tmp_path / "reg.json"
    target.write_bytes(b"\x00garbage")
    first = quarantine(target, now=1_800_000_000)
    target.write_bytes(b"more garbage")
    second = quarantine(target, now=1_800_000_000)
    assert first != second
    assert open(first, "rb").read() == b"\x00garbage" and open(second, "rb").read() == b"more garbage"
    assert ".corrupt-20270115T080000" in first
    assert quarantine(target) is None  # already gone


def test_append_repairs_a_torn_tail(tmp_path):
    target = tmp_path / "log.jsonl"
    append_line(target, lambda: b'{"n": 1}')
    with open(target, "ab") as handle:
        handle.write(b'{"n": 2, "tor')
    assert last_lines(target, 5) == [b'{"n": 1}']
    append_line(target, lambda: b'{"n": 3}')
    assert target.read_bytes() == b'{"n": 1}\n{"n": 3}\n'
    assert (tmp_path / "log.jsonl.torn").read_bytes() == b'{"n": 2, "tor\n'
    assert repair_torn_tail(target) == 0


def test_last_lines_reads_across_blocks(tmp_path):
    target = tmp_path / "log.jsonl"
    lines = [f'{{"n": {i}, "pad": "{"x" * (i % 97)}"}}'.encode() for i in range(500)]
    target.write_bytes(b"\n".join(lines) + b"\n")
    assert last_lines(target, 3, block=64) == lines[-3:]
    assert last_lines(target, 1000, block=128) == lines


def test_cached_json_rereads_only_on_change(tmp_path):
    target = tmp_path / "c.json"
    write_json(target, {"v": 1})
    calls = []
    cache = CachedJSON(target, lambda d: calls.append(d) or d)
    assert cache.get() == {"v": 1} and cache.get() == {"v": 1}
    assert len(calls) == 1
    write_json(target, {"v": 2})
    assert cache.get() == {"v": 2} and len(calls) == 2
    os.unlink(target)
    assert cache.get(missing="gone") == "gone"
