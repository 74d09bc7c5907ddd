"""A home that does not exist: a command that only reads never creates it (one
line, exit 2, naming the path and how to make it); a command that changes
state creates it only inside an existing parent, and says so."""
from __future__ import annotations

import os
import stat

import pytest

READ_ONLY = [("status",), ("why", "agent-1"), ("log",), ("log", "verify"), ("halts", "list"), ("approvals",),
             ("approvals", "list"), ("warrant", "list"), ("loop", "status"), ("doctor",), ("console",),
             ("serve", "--port", "0")]


@pytest.mark.parametrize("command", READ_ONLY, ids=" ".join)
def test_a_read_only_command_never_creates_a_home(tmp_path, cli, command):
    misspelt = tmp_path / "leahs"
    result = cli(*command, "--home", str(misspelt))
    assert result.code == 2, result
    (line,) = result.err.splitlines()
    assert line == (f"leash: error: no state home at {misspelt}: it does not exist, and a command that only reads "
                    f"never creates one; check --home and $LEASH_HOME, or create it with "
                    f"`leash doctor --repair --home {misspelt}` (or `leash install`, `leash demo`, `leash daemon`)")
    assert not misspelt.exists()


def test_the_same_through_leash_home(home, cli):
    result = cli("status")
    assert result.code == 2 and f"no state home at {home}" in result.err and not home.exists()


def test_a_stop_into_a_home_whose_parent_is_missing_is_refused(tmp_path, cli):
    misspelt = tmp_path / "no-such-dir" / "home"
    result = cli("stop", "agent-1", "--force", "--home", str(misspelt))
    assert result.code == 2, result
    assert result.err == (f"leash: error: no state home at {misspelt}: it does not exist, nor does its parent "
                          f"{misspelt.parent} (leash creates no parents); check --home and $LEASH_HOME, or make its "
                          "parent directory first\n")
    assert not misspelt.parent.exists()


def test_the_first_change_creates_the_home_and_says_so(home, cli):
    first = cli("stop", "agent-1", "--force", "--reason", "before it starts")
    assert first.code == 0, first
    assert first.err.splitlines()[-1] == f"leash: created state home {home} (its first use)"
    assert stat.S_IMODE(os.stat(home).st_mode) == 0o700
    again = cli("stop", "agent-2", "--force")
    assert "created state home" not in again.err
    assert cli("status").code == 0


def test_a_refused_first_command_says_nothing_of_a_home(home, cli):
    result = cli("stop", "--all")
    assert result.code == 2 and result.err == "leash: error: stop --all needs --reason (every agent will read it)\n"
    assert not home.exists()  # made for the command, and empty: taken away again
    typo = cli("stop", "agent-1")  # nothing knows it in a new home
    assert typo.code == 1 and "created state home" not in typo.err


def test_completion_needs_no_home(home, cli):
    result = cli("completion", "bash")
    assert result.code == 0 and "complete -F _leash leash" in result.out and not home.exists()


def test_doctor_repair_creates_the_home(home, cli):
    result = cli("doctor", "--repair")
    assert home.is_dir() and f"created state home {home}" in result.err
