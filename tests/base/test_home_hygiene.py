"""The state home is trusted only when it is safe: never writable by others,
never owned by someone else, no state file read or written through a link,
every directory 0700 whatever the umask."""
from __future__ import annotations

import json
import os
import stat

import pytest

from leash.core.base.statefile import CachedJSON, StateCorrupt, SymlinkedState, read_json
from leash.core.state.acklog import ACK_LOG_NAME, AckLog

from ..support.pretooluse import assert_denied, payload


def mode_of(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def one_line(text: str) -> bool:
    return text.count("\n") == 1 and text.startswith("leash: ") and "Traceback" not in text


# ---------------------------------------------------------------- the home itself
@pytest.mark.parametrize("mode, words", [(0o770, "group-writable"), (0o707, "world-writable"),
                                         (0o777, "group- and world-writable")])
def test_a_home_others_can_write_is_refused(cli, home, mode, words):
    home.mkdir(mode=0o700)
    home.chmod(mode)
    for args in (("status",), ("stop", "s1"), ("hands-off", "ezra")):
        result = cli(*args)
        assert result.code == 2, result
        assert one_line(result.err) and words in result.err and "leash doctor --repair" in result.err
    assert sorted(os.listdir(home)) == []  # nothing was written into it


def test_a_home_owned_by_another_user_is_refused(cli, leash, home):
    if os.geteuid() != 0:
        pytest.skip("only root can give a directory to another user")
    home.mkdir(mode=0o700)
    os.chown(home, 65534, 65534)
    result = cli("status")
    assert result.code == 2 and one_line(result.err) and "owned by uid 65534" in result.err
    doctor = cli("doctor", "--repair")  # doctor runs, and cannot mend someone else's home
    assert doctor.code == 3 and "fail  home" in doctor.out and "owned by uid 65534" in doctor.out
    assert os.stat(home).st_uid == 65534
    assert_denied(leash("hook", "pre-tool-use", stdin=payload()), "unsafe state home")


def test_doctor_reports_an_unsafe_home_and_repair_makes_it_private(cli, home):
    home.mkdir(mode=0o700)
    home.chmod(0o777)
    report = cli("doctor")
    assert report.code == 3
    assert "fail  home" in report.out and "leash doctor --repair" in report.out
    assert mode_of(home) == 0o777
    repaired = cli("doctor", "--repair")
    assert repaired.code == 0, repaired
    assert "fixed home" in repaired.out
    assert mode_of(home) == 0o700
    assert cli("stop", "--force", "s1").code == 0


def test_a_home_that_is_a_link_is_judged_by_its_target(cli, home, tmp_path):
    target = tmp_path / "real-home"
    target.mkdir(mode=0o700)
    home.symlink_to(target)
    assert cli("stop", "--force", "s1").code == 0
    assert (target / "stops.json").exists()
    target.chmod(0o777)
    result = cli("status")
    assert result.code == 2 and "world-writable" in result.err


def test_pre_tool_use_denies_on_an_unsafe_home_and_other_hooks_fail_open(leash, home):
    home.mkdir(mode=0o700)
    home.chmod(0o770)
    result = leash("hook", "pre-tool-use", stdin=payload())
    assert_denied(result, "unsafe state home", "leash doctor --repair")
    assert one_line(result.err)
    post = leash("hook", "post-tool-use", stdin=payload())
    assert post.code == 1 and post.out == "" and one_line(post.err)
    stop = leash("hook", "stop", stdin=payload())
    assert stop.code in (0, 1) and stop.out == "" and one_line(stop.err)


# ---------------------------------------------------------------- links are never followed
def test_a_linked_ack_log_is_never_appended_through(cli, home, tmp_path):
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_bytes(b"precious\n")
    home.mkdir(mode=0o700)
    (home / ACK_LOG_NAME).symlink_to(elsewhere)
    result = cli("stop", "--force", "s1", "--reason", "through the link?")
    assert result.code != 0 and one_line(result.err) and "symbolic link" in result.err
    assert elsewhere.read_bytes() == b"precious\n"
    assert "s1" not in json.loads((home / "stops.json").read_text())["sessions"] \
        if (home / "stops.json").exists() else True
    with pytest.raises(SymlinkedState):
        AckLog(home).append("stop_ack", source="t", session_id="s2")
    assert elsewhere.read_bytes() == b"precious\n"
    doctor = cli("doctor")
    assert doctor.code == 3 and f"fail  {ACK_LOG_NAME}" in doctor.out and "symbolic link" in doctor.out


def test_a_linked_torn_file_is_never_written_through(home, tmp_path):
    log = AckLog(home)
    log.append("stop_ack", source="t", session_id="s1")
    with open(log.path, "ab") as handle:
        handle.write(b'{"half a li')
    before = (home / ACK_LOG_NAME).read_bytes()
    elsewhere = tmp_path / "elsewhere.torn"
    elsewhere.write_bytes(b"")
    (home / (ACK_LOG_NAME + ".torn")).symlink_to(elsewhere)
    with pytest.raises(SymlinkedState):
        log.append("resume", source="t", session_id="s1")
    assert elsewhere.read_bytes() == b""
    assert (home / ACK_LOG_NAME).read_bytes() == before  # the torn tail stays until it can be kept safely


def test_a_linked_lock_sidecar_is_never_opened(home, tmp_path):
    from leash.core.base.statefile import locked

    home.mkdir(mode=0o700)
    elsewhere = tmp_path / "elsewhere.lock"
    (home / "stops.json.lock").symlink_to(elsewhere)
    with pytest.raises(SymlinkedState):
        with locked(home / "stops.json"):
            pass
    assert not elsewhere.exists()


def test_a_linked_stops_file_is_not_read_through(cli, leash, home, tmp_path):
    assert cli("stop", "--force", "sess_123", "--reason", "stays stopped").code == 0
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text('{"sessions": {}, "fleet": null}\n')
    (home / "stops.json").unlink()
    (home / "stops.json").symlink_to(elsewhere)
    with pytest.raises(StateCorrupt):
        read_json(home / "stops.json")
    with pytest.raises(StateCorrupt):
        CachedJSON(str(home / "stops.json"), lambda data: data).get()
    assert_denied(leash("hook", "pre-tool-use", stdin=payload("sess_123")))
    assert elsewhere.read_text() == '{"sessions": {}, "fleet": null}\n'


# ---------------------------------------------------------------- 0700 whatever the umask
def test_every_directory_is_private_under_umask_000(cli, home, tmp_path, monkeypatch):
    deep = tmp_path / "made" / "by" / "leash"
    deep.parent.mkdir(mode=0o700, parents=True)  # leash makes the home, never its parents
    (tmp_path / "made").chmod(0o700)
    monkeypatch.setenv("LEASH_HOME", str(deep))
    previous = os.umask(0)
    try:
        assert cli("warrant", "file", "agent-7", "--reason", "stuck").code == 0
        assert cli("loop", "check-and-record", "worker-1").code == 0
        assert cli("halts", "record", "--session", "s1", "--type", "security", "--severity", "high",
                   "--description", "d").code == 0
        assert cli("reply", "in", "--channel", "c", "--key", "k").code == 0
        assert cli("stop", "--force", "s1").code == 0
    finally:
        os.umask(previous)
    directories = [tmp_path / "made", tmp_path / "made" / "by"]
    for root, dirs, _files in os.walk(deep):
        directories += [os.path.join(root, d) for d in [""] + dirs]
    assert {os.fspath(d).rstrip("/") for d in directories} >= {str(deep / "dogs" / "active"), str(deep / "worker-1")}
    loose = {os.fspath(d): oct(mode_of(d)) for d in directories if mode_of(d) != 0o700}
    assert loose == {}
