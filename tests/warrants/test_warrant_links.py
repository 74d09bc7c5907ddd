"""``warrants/`` (or ``dogs/``) made a symbolic link out of the home: a warrant
is never written there, and nothing is read from there."""
from __future__ import annotations

import os

import pytest

from leash.core.state.warrants import WarrantError, WarrantQueue
from leash.core.views.protocol import StopProtocol


@pytest.mark.parametrize("linked", ["warrants", "dogs"])
def test_a_linked_queue_directory_is_refused(home, tmp_path, cli, linked):
    StopProtocol(home)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, home / linked)
    with pytest.raises(WarrantError, match="symbolic link"):
        WarrantQueue(home).file("agent-1", reason="r", requester="ops")
    result = cli("warrant", "file", "agent-1", "--reason", "r")
    assert result.code == 1 and "symbolic link" in result.err
    assert list(outside.rglob("*.json")) == []


def test_warrants_placed_outside_are_never_read(home, tmp_path):
    StopProtocol(home)
    queue = WarrantQueue(home)
    queue.file("agent-1", reason="r", requester="ops")
    os.rename(home / "warrants", tmp_path / "elsewhere")
    os.symlink(tmp_path / "elsewhere", home / "warrants")
    assert queue.pending() == []


def test_an_ambiguous_id_prefix_says_so(home, cli):
    """Ids begin with their filing time (``w-20261126T...``): two filed the same
    day share ``w-YYYYMMDD``, a prefix that names neither alone."""
    StopProtocol(home)
    queue = WarrantQueue(home)
    first, _ = queue.file("agent-1", reason="r", requester="ops")
    second, _ = queue.file("agent-2", reason="r", requester="ops")
    prefix = first["id"][:len("w-YYYYMMDD")]
    assert second["id"].startswith(prefix)
    result = cli("warrant", "pardon", prefix)
    assert result.code == 1 and "ambiguous: 2 warrants begin with" in result.err
    assert cli("warrant", "pardon", first["id"]).code == 0
