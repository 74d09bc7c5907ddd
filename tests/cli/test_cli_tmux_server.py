"""A tmux server leash cannot reach is said, not shown as a column of
sessions quietly outside tmux: ``core.base.tmux.server_problem`` tells "no
tmux server running" from "wrong tmux socket path", ``leash status`` prints
one warning line and ``leash doctor`` a finding. Real tmux servers on private
sockets."""
from __future__ import annotations

import socket as sockets
import subprocess

import pytest

from leash.core.base.tmux import NO_SERVER, WRONG_SOCKET, server_problem, socket_state
from leash.core.state.sessions import SessionRegistry
from leash.core.views.protocol import StopProtocol
from leash.core.views.status import tmux_problem

NOW = 1_800_000_000.0


@pytest.fixture(autouse=True)
def private_tmux(tmp_path, monkeypatch):
    """tmux's default server under tmp_path, no socket named by the environment."""
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path / "tmux-tmp"))
    monkeypatch.delenv("LEASH_TMUX_SOCKET", raising=False)
    monkeypatch.delenv("TMUX", raising=False)


def start_server(socket) -> None:
    subprocess.run(["tmux", "-S", str(socket), "new-session", "-d", "-s", "agent-1", "sleep 600"], check=True)


def stale_socket(path) -> None:
    """A socket file no server listens on (its server was killed)."""
    bound = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
    bound.bind(str(path))
    bound.close()


def test_a_live_server_is_no_problem(tmux_socket):
    start_server(tmux_socket)
    assert socket_state(str(tmux_socket)) == "live"
    assert server_problem(str(tmux_socket)) is None


def test_nothing_at_the_path_is_no_server_running(tmux_socket):
    said = server_problem(str(tmux_socket))
    assert said == f"{NO_SERVER} at {tmux_socket} (given)"


def test_a_socket_left_by_a_server_that_ended_is_no_server_running(tmp_path):
    path = tmp_path / "dead.sock"
    stale_socket(path)
    assert socket_state(str(path)) == "stale"
    said = server_problem(str(path))
    assert said.startswith(f"{NO_SERVER} at {path}") and "ended" in said


@pytest.mark.parametrize("make, words", [
    (lambda tmp: tmp / "no-such-folder" / "tmux.sock", "its folder does not exist"),
    (lambda tmp: (tmp / "file.txt").write_text("x") and tmp / "file.txt", "is not a socket"),
])
def test_a_path_that_cannot_be_a_server_is_a_wrong_socket(tmp_path, make, words):
    path = make(tmp_path)
    said = server_problem(str(path))
    assert said.startswith(f"{WRONG_SOCKET}: {path} (given)") and words in said, said


def test_a_configured_socket_with_nothing_there_while_tmux_runs_elsewhere_is_wrong(home, tmp_path, tmux_socket):
    start_server(tmux_socket)  # the agents' server
    StopProtocol(home)
    (home / "config.toml").write_text(f'[tmux]\nsocket = "{tmp_path / "typo.sock"}"\n')
    said = server_problem(home=home, seen_sockets=[str(tmux_socket)])
    typo = tmp_path / "typo.sock"
    assert said == f"{WRONG_SOCKET}: {typo} ([tmux] socket): nothing there; tmux runs at {tmux_socket}"
    assert server_problem(home=home) == f"{NO_SERVER} at {tmp_path / 'typo.sock'} ([tmux] socket)"


def test_the_environment_names_the_socket_first(tmp_path, monkeypatch, tmux_socket):
    start_server(tmux_socket)
    monkeypatch.setenv("LEASH_TMUX_SOCKET", str(tmux_socket))
    assert server_problem() is None
    monkeypatch.setenv("LEASH_TMUX_SOCKET", str(tmp_path / "gone"))
    assert server_problem().endswith("($LEASH_TMUX_SOCKET)")


def test_nothing_is_said_when_nothing_expects_tmux(home):
    StopProtocol(home)
    assert tmux_problem(home, []) is None  # no socket named, no session seen in tmux: tmux is not in use


def seen_in_tmux(home, name="s1", **fields):
    protocol = StopProtocol(home)
    SessionRegistry(protocol.home, protocol.acklog).observe(name, now=NOW, tool="Bash", tmux_pane="%3",
                                                            tmux_session="agent-1", **fields)


def test_status_warns_in_one_line_when_sessions_were_seen_in_tmux_and_no_server_runs(cli, home):
    seen_in_tmux(home)
    result = cli("status")
    assert result.code == 0, result
    warned = [line for line in result.out.splitlines() if "tmux_no_server" in line]
    assert len(warned) == 1 and NO_SERVER in warned[0], result.out
    assert cli("status", "--json").json()["problems"][0]["kind"] == "tmux_no_server"


def test_status_and_doctor_name_a_wrong_socket(cli, home, tmp_path, tmux_socket):
    start_server(tmux_socket)
    seen_in_tmux(home, agent_process={"pid": 4242, "started": 1, "uid": 0, "headless": False,
                                      "tmux_socket": str(tmux_socket)})
    (home / "config.toml").write_text(f'[tmux]\nsocket = "{tmp_path / "elsewhere" / "tmux.sock"}"\n')
    status = cli("status")
    (line,) = [line for line in status.out.splitlines() if "tmux_wrong_socket" in line]
    assert "its folder does not exist" in line and str(tmux_socket) in line  # where tmux does run
    doctor = cli("doctor")
    assert doctor.code == 3, doctor
    (finding,) = [line for line in doctor.out.splitlines() if "tmux_wrong_socket" in line]
    assert finding.startswith("fail  tmux_wrong_socket: ")


def test_doctor_says_the_server_answers(cli, home, tmux_socket):
    start_server(tmux_socket)
    StopProtocol(home)
    (home / "config.toml").write_text(f'[tmux]\nsocket = "{tmux_socket}"\n')
    assert f"ok    tmux: the server at {tmux_socket} answers" in cli("doctor").out
