"""The CLI over leashd's operator socket: the same output and exit codes as
on the home directly, the peer's user as ``source``, an unreachable daemon,
and ``leash daemon`` as a process (a second one refuses, SIGTERM ends it)."""
from __future__ import annotations

import os
import pwd
import signal
import socket
import stat
import subprocess

from leash.core.state.acklog import AckLog

from ..support.daemon import daemon_process, exchange, sockets, start_daemon, stop

SAME_EITHER_WAY = [
    ("status",), ("resume", "nobody-here"), ("log", "verify"), ("why", "s1"),
    ("stop", "--all", "--reason", "x", "extra"),
]


def same_clock(text: str) -> str:
    """Ages shown relative to now ("15s ago") differ between two runs."""
    import re

    return re.sub(r"\b\d+[smhd]( \d+[smh])? ago\b", "… ago", text)


def me() -> str:
    return pwd.getpwuid(os.getuid()).pw_name


def test_the_cli_gives_the_same_answers_through_the_daemon(home, leash_proc):
    """Each command run on the home directly, then through a daemon: same
    stdout, stderr and exit code (the state is the same for both runs)."""
    assert leash_proc("stop", "--force", "s1", "--reason", "hold").code == 0
    direct = {argv: leash_proc(*argv) for argv in SAME_EITHER_WAY}
    running = start_daemon(home)
    try:
        through = {argv: leash_proc(*argv) for argv in SAME_EITHER_WAY}
        served = sum("verb=cli" in line for line in running.log_stream.lines)
    finally:
        running.close()
    assert served == len(SAME_EITHER_WAY)
    for argv in SAME_EITHER_WAY:
        assert (through[argv].code, same_clock(through[argv].out), through[argv].err) == \
               (direct[argv].code, same_clock(direct[argv].out), direct[argv].err), argv
    assert {direct[argv].code for argv in SAME_EITHER_WAY} >= {0, 1, 2}  # successes, refusals, usage errors


def test_the_source_is_the_peer_never_the_clients_claim(daemon, home, leash_proc):
    done = leash_proc("stop", "--force", "s1", "--reason", "hold", "--source", "mallory@elsewhere")
    assert done.code == 0, done.err
    (line,) = AckLog(home).read(event="stop_ack").entries
    assert line["source"] == f"{me()}@{daemon.host}"


def test_a_command_that_runs_where_you_are_is_refused_by_the_daemon(daemon, home):
    replies = exchange(sockets(home)[1], {"verb": "cli", "argv": ["kennel", "--until-idle"]}, replies=2)
    assert "runs where you are" in replies[0]["err"] and replies[1] == {"exit": 2}


def test_an_unreachable_daemon_named_by_the_environment_is_an_error(home, leash_proc, tmp_path):
    done = leash_proc("status", env={"LEASH_OPERATOR_SOCKET": str(tmp_path / "gone.sock")})
    assert done.code == 1 and done.out == ""
    assert done.err.startswith("leash: error: leash daemon not reachable at ") and done.err.count("\n") == 1


def test_a_stale_default_socket_means_the_home_directly(home, leash_proc):
    from leash.core.base.home import ensure_home, private_dir

    private_dir(os.path.join(ensure_home(home), "run"))
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(sockets(home)[1])
    stale.close()
    done = leash_proc("stop", "--force", "s1", "--reason", "hold")
    assert done.code == 0 and "stopped s1" in done.out


def test_the_daemon_process_refuses_a_second_and_ends_on_sigterm(home, leash_proc):
    first = daemon_process(home, "--no-kennel")
    try:
        second = leash_proc("daemon", "--no-kennel", timeout=30)
        assert second.code == 1 and second.err.count("\n") == 1 and "already runs" in second.err
        assert leash_proc("stop", "--force", "s1", "--reason", "through the daemon").code == 0
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=20) == 0
        log = first.stderr.read().decode()
    finally:
        stop(first)
    assert not any(os.path.exists(path) for path in sockets(home))
    lines = log.splitlines()
    assert lines[0].startswith("leashd ") and " started " in lines[0] and lines[-1].endswith(" stopped")
    assert any(" operator verb=cli " in line for line in lines)
    assert AckLog(home).read(event="stop_ack").entries[0]["reason"] == "through the daemon"


def test_the_daemon_refuses_a_home_it_cannot_use(tmp_path):
    unsafe = tmp_path / "open-home"
    unsafe.mkdir(mode=0o777)
    os.chmod(unsafe, 0o777)
    done = subprocess.run(["sh", "-c", 'exec "$0" -m leash.console.cli --home "$1" daemon', os.sys.executable,
                           str(unsafe)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and done.stderr.startswith("leash: error: unsafe state home")


def test_a_bad_socket_mode_is_one_line_and_the_strictest_mode(home):
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / "config.toml").write_text('[daemon]\nagent_socket_mode = "rw-rw-rw-"\n')
    proc = daemon_process(home, "--no-kennel")
    try:
        said = proc.stderr.readline().decode()
        assert " config_broken " in said and "agent_socket_mode" in said and "octal" in said, said
        assert stat.S_IMODE(os.stat(sockets(home)[0]).st_mode) == 0o600
    finally:
        stop(proc)
