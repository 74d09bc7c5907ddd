"""``leash statusline``, Claude Code's status line, run as Claude Code runs it:
the command ``leash install`` writes, a real shell process with the status
JSON on stdin, a real leashd on the test's home.

The user's own status line comes first, byte for byte; without leashd (or
with a status that is not JSON) the line is the user's alone and the exit code
0; the windows a status reports land in the budget store and in leash's line;
install chains the user's statusLine once however often it runs, uninstall
puts it back exactly; nothing leash prints of its own carries a control
character; an agent removing leash's statusLine is tampering."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from leash.core.hook import install
from leash.core.hook.statuswiring import STATUS_MARK
from leash.core.policy.halts import settingsguard
from leash.core.wire.thinstatus import status_text

from ..support.checkout import ROOT

USER_LINE = b"\x1b[1mmy branch\x1b[0m \xe2\x9c\x93"  # the user's colours and bytes, no newline at its end
# A user's command that reads the status JSON (as a real one does) and prints a line of its own.
USER_COMMAND = "cat >/dev/null; printf '\\033[1mmy branch\\033[0m \\342\\234\\223'"
STATUS = {"session_id": "s-status", "transcript_path": "/nonexistent/transcript.jsonl", "cwd": "/",
          "model": {"id": "claude-opus-4-1", "display_name": "Opus"}, "cost": {"total_cost_usd": 0.5},
          "rate_limits": {"five_hour": {"used_percentage": 42, "resets_at": 1_900_000_000},
                          "seven_day": {"used_percentage": 13.4, "resets_at": 1_900_300_000}}}


@pytest.fixture(autouse=True)
def patient_client(monkeypatch):
    """leashd's answer is waited for longer than a live status line waits
    (300 ms): a loaded test machine must not drop leash's part."""
    monkeypatch.setenv("LEASH_STATUSLINE_DEADLINE", "10")


def installed_command(tmp_path, home, settings: dict | None = None) -> str:
    """The statusLine command ``leash install`` writes into a project whose
    settings hold ``settings``."""
    path = tmp_path / "project" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings or {}))
    install.install(str(path), home=str(home))
    return json.loads(path.read_text())["statusLine"]["command"]


def status_line(command: str, stdin: bytes, *, env: dict | None = None) -> subprocess.CompletedProcess:
    """``command`` as Claude Code runs a statusLine: a shell, the status JSON on stdin."""
    return subprocess.run(["/bin/sh", "-c", command], input=stdin, capture_output=True, cwd=ROOT, timeout=60,
                          env=dict(os.environ, **(env or {})))


def leash_part(done: subprocess.CompletedProcess) -> bytes:
    """What leash printed after the user's line."""
    assert done.stdout.startswith(USER_LINE)
    return done.stdout[len(USER_LINE):]


def direct(*options: str, stdin: bytes, env: dict | None = None) -> subprocess.CompletedProcess:
    entry = os.path.join(ROOT, "core", "hook", "hookentry.py")
    return subprocess.run([sys.executable, "-P", entry, "statusline", *options], input=stdin, capture_output=True,
                          cwd=ROOT, timeout=60, env=dict(os.environ, **(env or {})))


def test_the_users_line_comes_first_unchanged_then_leashs(daemon, home, tmp_path):
    command = installed_command(tmp_path, home, {"statusLine": {"type": "command", "command": USER_COMMAND}})
    done = status_line(command, json.dumps(STATUS).encode())
    assert done.returncode == 0, done.stderr
    assert leash_part(done) == "\nleash · 5h 42% · 7d 13%\n".encode()


def test_without_leashd_the_line_is_the_users_alone(home, tmp_path):
    command = installed_command(tmp_path, home, {"statusLine": {"type": "command", "command": USER_COMMAND}})
    stdin = json.dumps(STATUS).encode()
    alone = status_line(command, stdin)  # no socket at all
    assert (alone.returncode, alone.stdout, alone.stderr) == (0, USER_LINE, b"")
    run = home / "run"
    run.mkdir(parents=True, exist_ok=True)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(run / "agent.sock"))  # a socket file no one listens on: refused
    stale.close()
    refused = status_line(command, stdin)
    assert (refused.returncode, refused.stdout) == (0, USER_LINE)
    os.unlink(run / "agent.sock")
    impostor = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    impostor.bind(str(run / "agent.sock"))
    impostor.listen(4)  # answers, but holds no leashd lock: never asked
    try:
        mute = status_line(command, stdin)
    finally:
        impostor.close()
    assert (mute.returncode, mute.stdout) == (0, USER_LINE)
    nothing = direct(stdin=stdin)  # no user command, no leashd: nothing at all
    assert (nothing.returncode, nothing.stdout) == (0, b"")


def test_the_windows_land_in_the_store_and_on_the_line(daemon, home):
    done = direct(stdin=json.dumps(STATUS).encode())
    assert (done.returncode, done.stdout) == (0, "leash · 5h 42% · 7d 13%\n".encode())
    windows = {record.window: record for record in daemon.backend.budget.windows()}
    assert windows["window-5h"].used_percent == 42 and windows["window-7d"].used_percent == 13.4
    assert windows["window-5h"].resets_at == 1_900_000_000 and windows["window-5h"].session_id == "s-status"


def test_a_status_that_is_not_json_shows_the_users_line(daemon, home, tmp_path):
    command = installed_command(tmp_path, home, {"statusLine": {"type": "command", "command": USER_COMMAND}})
    for garbage in (b"not json", b"[1, 2]", b"", b"\xff\xfe{"):
        done = status_line(command, garbage)
        assert (done.returncode, done.stdout) == (0, USER_LINE), garbage
    assert not daemon.backend.budget.windows()


def test_leashs_part_never_prints_a_control_character(daemon, home, tmp_path):
    hostile = dict(STATUS, session_id="s-\x1b[2J\x07", model={"display_name": "\x1b]0;owned\x07"},
                   rate_limits={"five_hour": {"used_percentage": "\x1b[31m99", "resets_at": "\x9b2J"},
                                "seven_day": {"used_percentage": 7, "resets_at": 1_900_300_000}})
    command = installed_command(tmp_path, home, {"statusLine": {"type": "command", "command": USER_COMMAND}})
    done = status_line(command, json.dumps(hostile).encode())
    ours = leash_part(done).decode()
    assert ours == "\nleash · 7d 7%\n"
    # leashd's reply is data too: names from it lose what is not printable
    shown = status_text({"usd": 1.5, "estimated": True, "windows": [["5h\x1b[2J", 3], ["7d", "\x1b"]],
                         "held": ["daily\x1b]0;x\x07", "\u202eweekly"]})
    assert shown == "leash ~$1.50 · 5h[2J 3% · HELD: cap daily]0;x, cap weekly"
    assert all(char.isprintable() for char in shown)


def test_install_chains_the_users_statusline_once_and_uninstall_restores_it(home, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    path = tmp_path / "project" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    tricky = "bash -c 'echo \"it'\\''s $(echo ok) \\\\ \n two\"'  # theirs"
    original = {"model": "opus", "statusLine": {"padding": 2, "type": "command", "command": tricky,
                                                "refreshInterval": 5}}
    path.write_text(json.dumps(original))
    assert install.install(str(path), home=str(home))
    first = json.loads(path.read_text())
    assert not install.install(str(path), home=str(home))  # twice: nothing changes, leash never chains itself
    assert json.loads(path.read_text()) == first
    line = first["statusLine"]
    assert line["command"].endswith(STATUS_MARK) and line["command"].count(" statusline ") == 1
    assert {key: value for key, value in line.items() if key != "command"} == \
        {"padding": 2, "type": "command", "refreshInterval": 5}
    assert status_line(line["command"], b"{}").stdout == subprocess.run(
        ["/bin/sh", "-c", tricky], capture_output=True).stdout  # their line, as their command prints it
    assert install.install(str(path), uninstall=True)
    assert json.loads(path.read_text()) == original
    # none before: leash's goes again on uninstall
    path.write_text(json.dumps({"model": "opus"}))
    install.install(str(path), home=str(home))
    assert "--user-command" not in json.loads(path.read_text())["statusLine"]["command"]
    install.install(str(path), uninstall=True)
    assert json.loads(path.read_text()) == {"model": "opus"}


def test_a_project_install_chains_the_users_own_statusline(home, tmp_path, monkeypatch):
    user_home = tmp_path / "user-home"
    monkeypatch.setenv("HOME", str(user_home))
    user = user_home / ".claude" / "settings.json"
    user.parent.mkdir(parents=True)
    user.write_text(json.dumps({"statusLine": {"type": "command", "command": USER_COMMAND, "padding": 0}}))
    project = tmp_path / "project" / ".claude" / "settings.json"
    project.parent.mkdir(parents=True)
    project.write_text("{}")
    install.install(str(project), home=str(home))
    line = json.loads(project.read_text())["statusLine"]
    assert line["padding"] == 0 and line["command"].endswith(f"--inherited {STATUS_MARK}")
    assert status_line(line["command"], json.dumps(STATUS).encode()).stdout == USER_LINE
    install.install(str(user), home=str(home))  # leash at the user's level too: still their command, once
    install.install(str(project), home=str(home))
    again = json.loads(project.read_text())["statusLine"]["command"]
    assert again == line["command"]
    install.install(str(project), uninstall=True)
    install.install(str(user), uninstall=True)
    assert json.loads(project.read_text()) == {}
    assert json.loads(user.read_text()) == {"statusLine": {"type": "command", "command": USER_COMMAND,
                                                           "padding": 0}}


def test_an_agent_removing_leashs_statusline_is_tampering(home, tmp_path):
    path = tmp_path / "project" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"statusLine": {"type": "command", "command": USER_COMMAND}}))
    install.install(str(path), home=str(home))
    before = path.read_text()
    wired = json.loads(before)
    for after in ({**wired, "statusLine": {"type": "command", "command": USER_COMMAND}},
                  {key: value for key, value in wired.items() if key != "statusLine"}):
        found = settingsguard.settings_change([{"old": before, "new": json.dumps(after)}], str(path))
        assert "removes or changes leash's status line" in found
    unchanged = {**wired, "model": "opus"}
    assert settingsguard.settings_change([{"old": before, "new": json.dumps(unchanged)}], str(path)) == []


def test_leash_statusline_reads_its_options_as_the_full_parser_does(home, tmp_path):
    from leash.core.wire.thinstatus import parse

    assert parse(["--user-c", "echo hi", "--home=/h", "--inh"]) == ("echo hi", True, "/h")
    assert parse(["--user-command", "a", "--user-command=b"]) == ("b", False, None)  # the last counts
    for unknown in (["--help"], ["--bogus"], ["--user-command"], ["--inherited=1"], ["x"]):
        assert parse(unknown) is None
    cli = [sys.executable, "-c", "import sys; from leash.console.cli import main; sys.exit(main(sys.argv[1:]))"]
    done = subprocess.run([*cli, "statusline", "--home", str(tmp_path / "elsewhere"), "--user-command", "echo hi"],
                          input=b"{}", capture_output=True, cwd=ROOT, timeout=60)
    assert (done.returncode, done.stdout) == (0, b"hi\n")
    wrong = subprocess.run([*cli, "statusline", "--bogus"], input=b"{}", capture_output=True, cwd=ROOT, timeout=60)
    assert wrong.returncode == 2 and b"unrecognized arguments: --bogus" in wrong.stderr


def test_configchange_and_check_see_leashs_statusline_removed_or_changed(home, tmp_path):
    from leash.core.hook import wiring

    project = tmp_path / "project"
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"statusLine": {"type": "command", "command": USER_COMMAND}}))
    cli = [sys.executable, "-c", "import sys; from leash.console.cli import main; sys.exit(main(sys.argv[1:]))"]
    env = dict(os.environ, HOME=str(tmp_path / "user-home"))
    done = subprocess.run([*cli, "install", "--project", str(project)], capture_output=True, cwd=ROOT, env=env,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert wiring.changed_file_problem(str(path), home=str(home)) == ""
    wired = json.loads(path.read_text())
    path.write_text(json.dumps({**wired, "statusLine": {"type": "command", "command": USER_COMMAND}}))
    assert "leash's status line, which leash install wrote here, is gone" in \
        wiring.changed_file_problem(str(path), home=str(home))
    moved = wired["statusLine"]["command"].replace(str(home), str(tmp_path / "other-home"))
    path.write_text(json.dumps({**wired, "statusLine": {"type": "command", "command": moved}}))
    assert wiring.changed_file_problem(str(path), home=str(home)).startswith(
        f"statusLine: the command has `{tmp_path / 'other-home'}` where leash install writes `{home}`")
    path.write_text(json.dumps(wired))
    check = subprocess.run([*cli, "install", "--project", str(project), "--check"], capture_output=True, cwd=ROOT,
                           env=env, timeout=60)
    assert b"statusLine" not in check.stdout, check.stdout


def test_the_installed_statusline_imports_only_what_the_thin_hook_does(daemon, home):
    """It runs as often as Claude Code redraws: besides a bare interpreter's
    modules, the thin client's, ``select``, ``_signal`` and leash's thin
    status module; never ``subprocess`` (it imports ``re``) or the console."""
    from leash.core.hook.install import hook_runner

    def imported(argv: list[str]) -> set[str]:
        done = subprocess.run([sys.executable, "-X", "importtime", *argv], input=json.dumps(STATUS).encode(),
                              capture_output=True, cwd=ROOT, timeout=60)
        return {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines()
                if line.startswith("import time:") and "|" in line} - {"package"}

    bare = imported(["-c", "pass"])
    status = imported(hook_runner()[1:] + ["statusline", "--user-command", "cat >/dev/null; echo mine"])
    thin = {"leash", "leash.core", "leash.core.base", "leash.core.wire", "leash.core.hook", "leash.core.hook.main",
            "leash.core.wire.thinhook", "leash.core.wire.daemontrust", "leash.core.wire.thinstatus",
            "leash.core.wire.hookio", "leash.core.base.wellknown", "leash.core.base.bareos"}
    assert status - bare - thin <= {"_json", "_socket", "select", "time", "_signal"}, sorted(status - bare)


def test_the_line_shows_the_sessions_spend_and_the_cap_that_holds_it(daemon, home):
    import time

    from leash.core.store.records_budget import BudgetCounterRecord, SpendRecord

    (home / "config.toml").write_text('[[budget.cap]]\nname = "daily"\nscope = "session"\nperiod = "day"\n'
                                      'limit_usd = 5\n')
    now = time.time()
    hour = now - now % 3600
    with daemon.backend.budget.unit(now=now) as unit:
        unit.charge(SpendRecord.of(dict(hour=hour, session_id="s-status", model="claude-opus-4-1", host="", entity="",
                                        cli="claude", usd=6.5, estimated=False, input=1000, output=100,
                                        cache_write=0, cache_read=0, reasoning=0, requests=3)))
        unit.put_counter(BudgetCounterRecord.of(dict(
            cap="daily", bucket="s-status", period=time.strftime("%Y-%m-%d", time.gmtime(now)),
            period_end=hour + 86_400, unit="usd", used=6.5, estimated=False, raised_to=None, warned=[0.75, 0.95],
            held_since=now, held_use=6.5, released_at=None, released_by=None, updated_at=now)))
    done = direct(stdin=json.dumps(STATUS).encode())
    assert done.stdout == "leash $6.50 · 5h 42% · 7d 13% · HELD: cap daily\n".encode()
    other = direct(stdin=json.dumps(dict(STATUS, session_id="s-other")).encode())
    assert other.stdout == "leash · 5h 42% · 7d 13%\n".encode()  # another session: neither its spend nor its hold
