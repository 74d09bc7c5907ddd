"""bench/warrant_delivery.py in its smallest form, on the Claude Code under
test: one warrant on a healthy interactive TUI is pardoned, and the bench
leaves nothing in its temporary folder.

Run by ``make e2e``, not by ``make test``: it drives a real interactive Claude
Code in tmux (ten seconds and a node process of CPU), which ``make e2e``
installs."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ..support.e2e.harness import ROOT, VERSION_ENV

RUN_SECONDS = 180


@pytest.fixture
def scratch():
    """The bench's TMPDIR, short (the tmux socket is made in it)."""
    path = Path(tempfile.mkdtemp(prefix="bench-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_one_warrant_on_a_healthy_tui_is_pardoned(claude, scratch, tmp_path):
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    env = {name: value for name, value in os.environ.items() if not name.startswith(("LEASH_", "TMUX"))}
    env.update(TMPDIR=str(scratch), TMUX_TMPDIR=str(tmp_path), PYTHONUNBUFFERED="1")
    version = os.environ.get(VERSION_ENV)
    versions = ["--versions", version] if version else []
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "warrant_delivery.py"), "--smoke", *versions],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=RUN_SECONDS,
                          stdin=subprocess.DEVNULL)
    said = f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.returncode == 0 and "Traceback" not in done.stderr, said
    assert "1/1 pardoned" in done.stdout, said
    assert [path.name for path in scratch.iterdir()] == [], "the bench left files behind"
