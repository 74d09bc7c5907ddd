"""leashd judges every call by config.toml as it is now, though it reads the
file only when it changes: the gate keeps the judged config per home while
the file keeps its inode, size and times. A rewrite (even to the same size),
a broken file, a removed file and a file put back are each seen by the next
check."""
from __future__ import annotations

import os

from leash.core.base.config import strictest_config
from leash.core.hook.gate import Gate, judged


def write(path, text: str) -> None:
    path.write_text(text)
    os.chmod(path, 0o600)


def test_the_judged_config_is_kept_while_the_file_is_unchanged(home):
    home.mkdir(parents=True, exist_ok=True)
    write(home / "config.toml", '[gate]\nread_only_tools = ["Read"]\n')
    first, problem = judged(str(home))
    assert problem is None and first["gate"]["read_only_tools"] == ["Read"]
    assert judged(str(home))[0] is first  # one stat, no read
    assert Gate(home).config() is first


def test_every_change_to_the_file_is_seen_by_the_next_check(home):
    home.mkdir(parents=True, exist_ok=True)
    config = home / "config.toml"
    write(config, '[gate]\nread_only_tools = ["Read"]\n')
    assert Gate(home).config()["gate"]["read_only_tools"] == ["Read"]
    write(config, '[gate]\nread_only_tools = ["Grep"]\n')  # the same size
    assert Gate(home).config()["gate"]["read_only_tools"] == ["Grep"]

    write(config, "[gate\n")
    broken = Gate(home)
    assert broken.config() == strictest_config()  # the floor: the hook holds every call until it is mended
    assert "config.toml" in broken.config_problem

    config.unlink()
    gone = Gate(home)
    assert gone.config()["gate"]["read_only_tools"] != ["Grep"] and gone.config_problem is None
    write(config, '[gate]\nread_only_tools = ["Glob"]\n')
    assert Gate(home).config()["gate"]["read_only_tools"] == ["Glob"]
