"""The reports the store protocols type as ``object``, as the console reads them.

``AckLogStore.verify`` reports on the ack log's hash chain: a
``core.base.logverify.ChainReport``, or its attributes as they come through
leashd (``core.store.remote``); ``leash log verify`` and the ack-log screen
read these.
"""
from __future__ import annotations

from typing import Protocol


class ChainStatus(Protocol):
    ok: bool
    lines: int
    first_broken_line: int | None
    problem: str
    torn_bytes: int  # a final line without its newline, skipped
    torn_file_bytes: int  # bytes set aside in the .torn file
    macs: str  # what was found of the lines' MACs ("" when there is nothing to say)
