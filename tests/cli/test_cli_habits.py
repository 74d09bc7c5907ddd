"""Operator habits: ``leash --version``, shell completion, colour only on a
terminal (``NO_COLOR`` honoured), session states in ``leash status``, short
halt ID prefixes refused with a reason, ``warrant pardon`` by target name."""
from __future__ import annotations

import os
import pty
import select
import shutil
import subprocess
import sys
import time

import pytest

from leash.core import StopProtocol
from leash.core.state.halts import api as halts
from leash.core.state.sessions import SessionRegistry

from ..support.checkout import ROOT, leash_argv

NOW = time.time()


def test_version(leash_proc):
    done = leash_proc("--version")
    assert done.code == 0 and done.out.startswith("leash ") and done.out.split()[1][0].isdigit()


def test_only_version_reads_the_packages_metadata(tmp_path):
    """Reading the installed version costs a command about 17 ms of its start:
    ``--version`` reads it when asked, and ``halts list`` never does."""
    (tmp_path / "home").mkdir(mode=0o700)
    env = {**os.environ, "LEASH_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-X", "importtime", *leash_argv()[1:], "halts", "list"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "leash.console.cli.parser" in imported and "importlib.metadata" not in imported


def _bash_complete(script: str, *words: str) -> list[str]:
    words_text = " ".join(f"'{w}'" for w in words)
    program = f"""{script}
COMP_WORDS=({words_text}); COMP_CWORD=$((${{#COMP_WORDS[@]}}-1)); _leash; printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    return subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True).stdout.split()


def test_bash_completion(leash_proc):
    script = leash_proc("completion", "bash").out
    assert "complete -F _leash leash" in script
    assert set(_bash_complete(script, "leash", "st")) == {"status", "statusline", "stop", "store"}
    assert _bash_complete(script, "leash", "store", "co") == ["copy"]
    assert _bash_complete(script, "leash", "why", "--j") == ["--json"]
    assert _bash_complete(script, "leash", "halts", "ac") == ["ack"]
    assert _bash_complete(script, "leash", "--home", "/tmp", "warrant", "pa") == ["pardon"]
    assert set(_bash_complete(script, "leash", "completion", "")) >= {"bash", "zsh"}


def test_zsh_completion_in_a_real_shell(leash_proc, tmux_socket, tmp_path):
    if shutil.which("zsh") is None:
        pytest.skip("zsh is not installed")
    (tmp_path / "_leash").write_text(leash_proc("completion", "zsh").out)
    rc = tmp_path / ".zshrc"
    rc.write_text(f"autoload -U compinit && compinit -u\nsource {tmp_path}/_leash\nPS1='> '\n")
    bin_dir = os.path.dirname(sys.executable)
    subprocess.run(["tmux", "-S", str(tmux_socket), "new-session", "-d", "-s", "shell", "-x", "100", "-y", "20",
                    f"env ZDOTDIR={tmp_path} PATH={bin_dir}:/usr/bin:/bin zsh -i"], check=True)
    time.sleep(1.0)
    subprocess.run(["tmux", "-S", str(tmux_socket), "send-keys", "-t", "shell", "leash halts ac", "Tab"], check=True)
    deadline = time.monotonic() + 10
    screen = ""
    while time.monotonic() < deadline:
        screen = subprocess.run(["tmux", "-S", str(tmux_socket), "capture-pane", "-p", "-t", "shell"],
                                capture_output=True, text=True).stdout
        if "leash halts ack" in screen:
            break
        time.sleep(0.2)
    assert "leash halts ack" in screen, screen


def _run_in_a_terminal(args: list[str], env: dict[str, str]) -> str:
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(ROOT)
        os.execve(sys.executable, leash_argv() + args, env)
    output = b""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
    os.waitpid(pid, 0)
    os.close(fd)
    return output.decode(errors="replace")


def test_colour_on_a_terminal_only_and_never_with_no_color(home, leash_proc):
    StopProtocol(home).stops.stop_fleet(source="ops@test", reason="evil\x1b[31m reason", now=NOW)
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    on_terminal = _run_in_a_terminal(["status"], env)
    assert "\x1b[1;37;41mSTOPPED\x1b[0m" in on_terminal
    assert "evil\\x1b[31m reason" in on_terminal  # agent text stays escaped between the colours
    assert "\x1b[" not in _run_in_a_terminal(["status"], {**env, "NO_COLOR": "1"})
    piped = leash_proc("status", env={"NO_COLOR": ""})
    assert "\x1b" not in piped.out and "STOPPED" in piped.out


def test_status_shows_each_sessions_state(cli, home):
    protocol = StopProtocol(home)
    sessions = SessionRegistry(protocol.home, protocol.acklog)
    for name in ("claude-run", "claude-halt", "claude-stop"):
        sessions.observe(name, now=NOW - 5, tool="Bash")
    halts.record_halt({"session_token": "claude-halt", "halt_type": "security", "severity": "critical",
                       "description": "x"}, home=home, now=NOW - 1)
    protocol.stops.stop("claude-stop", source="ops@test", now=NOW)
    out = cli("status").out
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("  claude-")}
    assert lines["claude-run"].split()[1] == "running"
    assert lines["claude-halt"].split()[1] == "halted"
    assert "stopped" in lines["claude-stop"].split()[1]
    assert {s["session_id"]: s["state"] for s in cli("status", "--json").json()["sessions"]}["claude-halt"] == "halted"


def test_a_halt_id_prefix_shorter_than_8_says_so(cli, home):
    halt_id = halts.record_halt({"session_token": "s1", "halt_type": "security", "severity": "high",
                                 "description": "x"}, home=home, now=NOW)["halt_id"]
    short = cli("halts", "ack", halt_id[:6])
    assert short.code == 2 and "shorter than 8 characters" in short.err
    assert cli("halts", "ack", halt_id[:8]).code == 0


def test_warrant_pardon_by_id_prefix_or_target_name(cli, home):
    filed = cli("warrant", "file", "agent-7", "--reason", "quiet")
    assert filed.code == 0
    assert cli("warrant", "pardon", "agent-7").code == 0
    assert cli("warrant", "list", "--json").json()["completed"][0]["outcome"] == "pardoned"
    warrant_id = cli("warrant", "file", "agent-8", "--reason", "quiet").out.split()[1]
    assert cli("warrant", "pardon", warrant_id[:-2]).code == 0  # an id prefix
    assert cli("warrant", "pardon", "nobody-at-all").code == 1
