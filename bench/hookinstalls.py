"""leash installed as the hook benches measure it, and its daemon.

Two ways (``INSTALLS``): from its wheel in a fresh virtualenv, as users run
it, and editable, as a checkout's developer runs it. ``Leash.install`` runs
``leash install --project`` and keeps the hook commands it wrote, read back
from the project's ``.claude/settings.json``, never copied by hand.
``daemon_of`` starts that leash's daemon and waits for its socket.

Used by ``hook_latency.py`` (and, through it, ``daemon.py`` and
``shared_store.py``); not a bench of its own.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = "import sys; from leash.console.cli import main; sys.exit(main())"
MARK = "# leash-hook"
DAEMON_START_SECONDS = 30


class Leash:
    """One installed leash: its interpreter, and the hooks it wired into a project."""

    def __init__(self, python: str, label: str):
        self.python, self.label = python, label
        self.hooks: dict[str, str] = {}  # Claude Code's event -> the command leash install wrote

    def cli(self, *words: str) -> list[str]:
        return [self.python, "-c", CLI, *words]

    def console_script(self) -> str:
        return str(Path(self.python).parent / "leash")

    def install(self, home: str, project: str) -> None:
        """``leash install`` into ``project``, and the commands it wrote."""
        subprocess.run(self.cli("--home", home, "install", "--project", project), check=True,
                       stdout=subprocess.DEVNULL, env=agent_env(project))
        settings = json.loads(Path(project, ".claude", "settings.json").read_text())
        self.hooks = {event: hook["command"] for event, groups in settings["hooks"].items() for group in groups
                      for hook in group["hooks"] if hook.get("command", "").rstrip().endswith(MARK)}


def source_copy(checkout: Path, where: str) -> Path:
    """The checkout without what a build must not see or write into."""
    copy = Path(where, "source")
    shutil.copytree(checkout, copy, ignore=shutil.ignore_patterns(
        ".git", ".venv", ".cache", "build", "*.egg-info", "__pycache__", "node_modules", "snapshot_report.html"))
    return copy


def fresh_venv(where: str) -> tuple[str, str]:
    """(its interpreter, its site-packages), this venv's dependencies on its path."""
    venv = os.path.join(where, "venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = os.path.join(venv, "bin", "python")
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python, purelib


def from_wheel(checkout: Path, where: str) -> str:
    """leash as a user installs it: its wheel in a fresh venv."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", where,
                    str(source_copy(checkout, where))], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    python, purelib = fresh_venv(where)
    [wheel] = Path(where).glob("leash-*.whl")
    zipfile.ZipFile(wheel).extractall(purelib)
    subprocess.run([python, "-m", "compileall", "-q", purelib], stdout=subprocess.DEVNULL, check=False)
    script = Path(python).parent / "leash"  # what pip writes for the console script
    script.write_text(f"#!{python}\nimport re\nimport sys\nfrom leash.console.cli import main\n"
                      "if __name__ == '__main__':\n"
                      "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
                      "    sys.exit(main())\n")
    script.chmod(0o755)
    return python


def editable(checkout: Path, where: str) -> str:
    """leash as a developer runs it: this venv for this checkout, else a
    fresh venv with the checkout installed editable."""
    python = sys.executable
    if checkout != ROOT:
        python, _ = fresh_venv(where)
        subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps",
                        "--no-build-isolation", "-e", str(checkout)], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    for folder in ("core", "console"):  # as a developer's checkout has them (PYTHONDONTWRITEBYTECODE or not)
        subprocess.run([python, "-m", "compileall", "-q", str(checkout / folder)], stdout=subprocess.DEVNULL,
                       check=False)
    return python


INSTALLS = {False: [("wheel", from_wheel), ("editable", editable)], True: [("editable", editable)]}  # by --smoke


def agent_env(project: str, **extra: str) -> dict[str, str]:
    """The environment Claude Code gives a hook: its own, with the project folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEASH_") and k not in ("TMUX", "TMUX_PANE")}
    return {**env, "CLAUDE_PROJECT_DIR": project, **extra}


def commit_of(checkout: Path) -> str:
    done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=False)
    return done.stdout.strip() or "unknown"


def daemon_of(leash: Leash, home: str, **extra: str) -> subprocess.Popen:
    return _daemon(leash.cli("daemon", "--no-kennel"), dict(os.environ, LEASH_HOME=home, **extra), home)


def _daemon(command: list[str], env: dict[str, str], home: str) -> subprocess.Popen:
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + DAEMON_START_SECONDS
    while not os.path.exists(os.path.join(home, "run", "operator.sock")):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("leash daemon did not start")
        time.sleep(0.05)
    return proc


def stop_daemon(proc: subprocess.Popen) -> None:
    proc.terminate()
    proc.wait(timeout=30)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
