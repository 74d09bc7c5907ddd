"""The distribution: one import package ``leash`` (``leash.core`` from core/,
``leash.console`` from console/), a wheel that holds everything the program
reads at run time, and a console and a hook that start from that wheel alone."""
from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import time
import tomllib
import zipfile
from pathlib import Path

import pytest

from ..support.checkout import ROOT

CONSOLE_CHECK = """
import asyncio, sys
from leash.console.tui.app import LeashApp

async def main():
    app = LeashApp(sys.argv[1], run_kennel=False, watch=False, list_tmux=lambda: [])
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        print("drawn", type(app.screen).__name__)

asyncio.run(main())
"""


def test_every_package_folder_is_in_the_distribution():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    mapped = {source: package for package, source in config["package-dir"].items()}
    found = set()
    for folder in ("core", "console"):
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT).parts
            found.add(".".join([mapped[relative[0]], *relative[1:]]))
    assert found == listed


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of the source: setuptools builds in the
    tree it is given (``build/``, ``*.egg-info``), and two test workers building
    in the same tree at once would trip over each other."""
    import shutil

    source = tmp_path_factory.mktemp("source") / "leash"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", ".cache", "build", "*.egg-info", "__pycache__", "node_modules", "snapshot_report.html"))
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(out), str(source)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    [built] = out.glob("leash-*.whl")
    return built


def test_the_wheel_holds_only_leash_and_what_it_reads_at_run_time(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert all(n.startswith(("leash/", "leash-")) for n in names), [n for n in names if not n.startswith("leash")]
    for needed in ("leash/console/tui/leash.tcss", "leash/console/serve/assets/index.html",
                   "leash/core/base/gitleaks_rules.py", "leash/console/cli/__init__.py"):
        assert needed in names


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh virtualenv holding the wheel; the dependencies come from this
    one's site-packages (added as a path, so its editable leash is not)."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    zipfile.ZipFile(wheel).extractall(purelib)
    (purelib / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def test_the_hook_and_the_console_start_from_the_wheel(installed, tmp_path):
    env = {"PATH": "/usr/bin:/bin", "LEASH_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)}
    where = subprocess.run([str(installed), "-c", "import leash.core, sys; print(leash.core.__file__); "
                            "print('core' in sys.modules or 'console' in sys.modules)"],
                           capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert where.returncode == 0, where.stderr
    assert str(installed.parent.parent) in where.stdout and where.stdout.split()[-1] == "False"

    payload = json.dumps({"session_id": "from-wheel", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                          "tool_input": {"command": "ls"}, "cwd": str(tmp_path)}).encode()
    hook = subprocess.run([str(installed), "-m", "leash.console.cli", "hook", "pre-tool-use"], input=payload,
                          capture_output=True, cwd=tmp_path, env=env, timeout=60)
    assert (hook.returncode, hook.stdout) == (0, b""), hook.stderr
    subprocess.run([str(installed), "-m", "leash.console.cli", "stop", "--all", "--reason", "from the wheel"],
                   check=True, capture_output=True, cwd=tmp_path, env=env, timeout=60)
    hook = subprocess.run([str(installed), "-m", "leash.console.cli", "hook", "pre-tool-use"], input=payload,
                          capture_output=True, cwd=tmp_path, env=env, timeout=60)
    assert b"fleet is stopped" in hook.stdout

    drawn = subprocess.run([str(installed), "-c", CONSOLE_CHECK, str(tmp_path / "home")], capture_output=True,
                           text=True, cwd=tmp_path, env=env, timeout=120)
    assert drawn.returncode == 0 and drawn.stdout.startswith("drawn"), drawn.stderr[-2000:]


MARK_ENV = "LEASH_TEST_PTH_MARK"
# A .pth file as anyone who can write to a site-packages could leave one: site runs its import line.
MARKING_PTH = "import os; p = os.environ.get('" + MARK_ENV + "'); p and open(p, 'a').write('site ran\\n')\n"


# What the thin hook loads besides a bare interpreter under -S and leash's own
# modules: C modules only, not ``os`` (core.base.bareos) nor ``select``.
THIN_HOOK_STDLIB = {"_json", "_socket", "time", "posix"}


def _imported(stderr: bytes) -> set[str]:
    return {line.split("|")[-1].strip() for line in stderr.decode().splitlines()
            if line.startswith("import time:") and "|" in line} - {"package"}


def test_the_installed_hook_runs_no_site_while_leashd_answers(installed, tmp_path):
    """The command ``leash install`` writes runs the wheel's hook entry under
    ``-S``: while leashd answers, no ``.pth`` file runs in the hook (the thin
    client needs only the standard library's C modules and leash, not even
    ``os``); without leashd, the in-process hook gets ``site`` as usual. The
    answers are the same."""
    home, project, mark = tmp_path / "home", tmp_path / "project", tmp_path / "site-ran"
    project.mkdir()
    env = {"PATH": "/usr/bin:/bin", "LEASH_HOME": str(home), "HOME": str(tmp_path), MARK_ENV: str(mark)}
    cli = [str(installed), "-m", "leash.console.cli"]
    subprocess.run([*cli, "install", "--project", str(project)], check=True, capture_output=True, env=env, timeout=60)
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    [command] = [hook["command"] for group in settings["hooks"]["PreToolUse"] for hook in group["hooks"]]
    assert " -S " in command, command
    subprocess.run([*cli, "stop", "--all", "--reason", "held"], check=True, capture_output=True, env=env, timeout=60)
    payload = json.dumps({"session_id": "no-site", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                          "tool_input": {"command": "ls"}, "cwd": str(project)}).encode()
    purelib = Path(subprocess.run([str(installed), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    pth = purelib / "zz-marking.pth"
    pth.write_text(MARKING_PTH)
    daemon = subprocess.Popen([*cli, "daemon", "--no-kennel"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        socket = home / "run" / "agent.sock"
        deadline = time.monotonic() + 30
        while not socket.exists():
            assert daemon.poll() is None and time.monotonic() < deadline, "leashd did not start"
            time.sleep(0.02)
        mark.unlink(missing_ok=True)  # the CLI's own starts ran site
        thin = subprocess.run(["sh", "-c", command], input=payload, capture_output=True, cwd=project,
                              env={**env, "PYTHONPROFILEIMPORTTIME": "1"}, timeout=60)
        assert b"fleet is stopped" in thin.stdout, thin.stderr
        assert not mark.exists(), "a .pth file ran in the hook while leashd answered"
        bare = subprocess.run([str(installed), "-S", "-X", "importtime", "-c", "pass"], capture_output=True,
                              timeout=60)
        extra = _imported(thin.stderr) - _imported(bare.stderr)
        assert {name for name in extra if not name.startswith("leash")} <= THIN_HOOK_STDLIB, sorted(extra)
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)
        in_process = subprocess.run(["sh", "-c", command], input=payload, capture_output=True, cwd=project, env=env,
                                    timeout=60)
        pth.unlink()
    assert b"fleet is stopped" in in_process.stdout, in_process.stderr
    assert mark.read_text().startswith("site ran")  # without leashd: site, as without -S (once per site dir)
