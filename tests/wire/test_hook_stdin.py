"""How a hook reads its stdin: a pipe whose writer is done is read at once
(no ``select`` loaded), one whose writer is still at it is waited for, and the
descriptor is left as blocking as it was."""
from __future__ import annotations

import os
import threading

import pytest

from leash.core.wire.hookio import STDIN_LIMIT_BYTES, HookInputTooLarge, read_stdin


def _stream(fd: int):
    return os.fdopen(fd, "rb", closefd=False)


def test_a_pipe_the_writer_closed_is_read_whole_and_left_blocking():
    reader, writer = os.pipe()
    try:
        os.write(writer, b'{"session_id": "s1"}')
        os.close(writer)
        assert read_stdin(_stream(reader), timeout=5) == b'{"session_id": "s1"}'
        assert os.get_blocking(reader)
    finally:
        os.close(reader)


def test_a_pipe_still_being_written_is_waited_for_to_its_end(monkeypatch):
    import select

    reader, writer = os.pipe()
    waited = threading.Event()
    original = select.select

    def select_noting_the_wait(*args):
        waited.set()
        return original(*args)

    monkeypatch.setattr(select, "select", select_noting_the_wait)

    def write_the_rest():  # only once the reader waits: the first pass saw half
        if waited.wait(5):
            os.write(writer, b' "end"}')
        os.close(writer)

    try:
        os.write(writer, b'{"start":')
        later = threading.Thread(target=write_the_rest)
        later.start()
        got = read_stdin(_stream(reader), timeout=5)
        later.join(5)
        assert got == b'{"start": "end"}' and waited.is_set()
        assert os.get_blocking(reader)
    finally:
        os.close(reader)


def test_a_descriptor_that_was_non_blocking_stays_so(tmp_path):
    reader, writer = os.pipe()
    try:
        os.set_blocking(reader, False)
        os.write(writer, b"{}")
        os.close(writer)
        assert read_stdin(_stream(reader), timeout=5) == b"{}"
        assert not os.get_blocking(reader)
    finally:
        os.close(reader)


def test_a_regular_file_is_read_whole_and_too_much_is_refused(tmp_path):
    payload = tmp_path / "payload.json"
    payload.write_bytes(b'{"a": 1}')
    with payload.open("rb") as stream:
        assert read_stdin(stream, timeout=5) == b'{"a": 1}'
    payload.write_bytes(b" " * (STDIN_LIMIT_BYTES + 1))
    with payload.open("rb") as stream, pytest.raises(HookInputTooLarge):
        read_stdin(stream, timeout=5)
