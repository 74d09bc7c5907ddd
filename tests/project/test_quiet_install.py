"""Installing leash is quiet: building it prints no setuptools warning, and
``make demo`` installs leash alone (no test extras), with pip kept quiet."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from ..support.checkout import ROOT


def test_building_leash_prints_no_warning(tmp_path):
    source = tmp_path / "leash"   # setuptools builds in the tree it is given: a copy of it
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", ".cache", "build", "*.egg-info", "__pycache__", "node_modules", "snapshot_report.html",
        "tests", "screenshots", "bench", "contrib"))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                           "--disable-pip-version-check", "-w", str(tmp_path / "wheel"), str(source)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    said = done.stdout + done.stderr
    assert "Warning" not in said and "!!" not in said, said[-3000:]


def test_make_demo_installs_leash_alone_and_quietly():
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    quiet = {key: value for key, value in os.environ.items() if key not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    planned = subprocess.run(["make", "--no-print-directory", "-n", "-B", "demo"], cwd=ROOT, env=quiet,
                             capture_output=True, text=True, timeout=30)  # as a user runs it, not under make test
    assert planned.returncode == 0, planned.stderr
    installs = [line for line in planned.stdout.splitlines() if "pip install" in line]
    assert installs, planned.stdout
    for line in installs:
        assert "[test" not in line, line
        assert "--quiet" in line, line
    assert planned.stdout.rstrip().splitlines()[-1].endswith("leash demo")
