"""A log the agent cannot forge: ``acklog.head`` deleted beside a log is
reported and never silently written again; an emptied or cut log lifts no
stop, its head gone with it or not; a line with a repeated key fails verify;
with leashd's MAC key (``core.logkey``) every line carries a mac, and a line
added without the key (no mac, a made-up one, a whole log re-chained) is
named by ``leash log verify`` and rebuilds nothing."""
from __future__ import annotations

import hashlib
import hmac
import json
import os

import pytest

from leash.core.base.logkey import KEY_NAME, ensure_key, key_of, load
from leash.core.base.logverify import check_line
from leash.core.hook.gate import Gate
from leash.core.state.acklog import AckLog, chain_hash
from leash.core.views.protocol import StopProtocol

NOW = 1_800_000_000.0
LOG, HEAD = "stop_ack_log.jsonl", "acklog.head"


def stopped_home(home, *, key: bool = False) -> StopProtocol:
    protocol = StopProtocol(home)
    if key:
        ensure_key(str(home), next_seq=1)
    protocol.hands_off("ezra", hours=4, reason="deploy", source="ops", now=NOW)
    protocol.acknowledge_stop("ops", "other", "look first", now=NOW + 1)
    protocol.acknowledge_stop("ops", "agent-1", "explicit halt", now=NOW + 2)
    return protocol


def lines(home) -> list[dict]:
    return [json.loads(raw) for raw in (home / LOG).read_bytes().splitlines()]


def forged(last: dict, **changes) -> dict:
    """The line after ``last``, ``resume agent-1``, with a correct seq, prev and hash (no key: no mac)."""
    record = {"timestamp": "2027-01-15T08:00:00.000000Z", "event": "resume", "source": "ops@host",
              "session_id": "agent-1", "reason": "fine", **changes, "seq": last["seq"] + 1, "prev": last["hash"]}
    record["hash"] = chain_hash(record["prev"], record)
    return record


def append_raw(home, text: str) -> None:
    with open(home / LOG, "a") as handle:
        handle.write(text + "\n")


def held(home, session: str = "agent-1") -> str:
    """The gate's reason for denying ``session`` a call ("" when it allows it)."""
    verdict = Gate(home).check(session, "Bash", {"command": "touch x"}, now=NOW + 5)
    return "" if verdict.allow else verdict.reason


# ------------------------------------------------------------------ the head
def test_a_deleted_head_is_reported_holds_everything_and_only_repair_writes_it(home, cli):
    stopped_home(home)
    (home / HEAD).unlink()
    verify = cli("log", "verify")
    assert verify.code == 3 and "acklog.head is missing beside a log of 3 lines" in verify.err, verify
    assert not (home / HEAD).exists()  # reading did not write it again
    assert "leash doctor" in held(home, "someone-else")  # nothing holds the log to its length: fail closed
    AckLog(home).append("loop_reset", source="ops", session_id="", now=NOW + 3)  # an append does not either
    assert not (home / HEAD).exists()
    assert cli("stop", "agent-2").code != 0  # the stop state cannot be established until doctor has looked
    found = cli("doctor")
    assert found.code == 3 and "fail  acklog.head: acklog.head is missing" in found.out, found.out
    fixed = cli("doctor", "--repair")
    assert "fixed acklog.head: was missing; written again from the log as it is now (line 4)" in fixed.out, fixed.out
    assert cli("log", "verify").code == 0
    assert held(home) and not held(home, "someone-else")


@pytest.mark.parametrize("head", ["kept", "deleted"])
def test_an_emptied_log_is_tampering_and_lifts_no_stop(home, cli, head):
    stopped_home(home)
    (home / LOG).write_bytes(b"")
    if head == "deleted":
        (home / HEAD).unlink()
    verify = cli("log", "verify")
    assert verify.code == 3 and "names line 3 (deleted)" in verify.err, verify
    for session in ("agent-1", "someone-else"):  # not rebuilt to "nothing stopped": every call is held
        reason = held(home, session)
        assert "the ack log is shorter than its head" in reason and "leash doctor" in reason, reason
    assert cli("doctor", "--repair").code == 3  # nothing to rebuild the stops from: it stays a failure
    assert held(home)


def test_a_cut_log_with_a_head_made_to_match_is_caught_by_the_state_files(home, cli):
    stopped_home(home)
    kept = lines(home)[:-1]  # the stop on agent-1 cut off
    (home / LOG).write_text("".join(json.dumps(line) + "\n" for line in kept))
    marks = {"hands_off": kept[0], "stops": kept[1]}
    (home / HEAD).write_text(json.dumps({"seq": kept[-1]["seq"], "hash": kept[-1]["hash"],
                                         "size": (home / LOG).stat().st_size,
                                         "stores": {store: {"seq": line["seq"], "hash": line["hash"]}
                                                    for store, line in marks.items()}}))
    verify = cli("log", "verify")
    assert verify.code == 3 and "stops.json names line 3 (cut)" in verify.err, verify
    assert "shorter than its head" in held(home)


# ------------------------------------------------------------------ lines
def test_a_line_with_a_repeated_key_fails_verify(home, cli):
    stopped_home(home)
    line = forged(lines(home)[-1])  # its hash is over the line json reads: the last "event" wins
    append_raw(home, json.dumps(line).replace('"event": "resume"', '"event": "stop_ack", "event": "resume"'))
    verify = cli("log", "verify")
    assert verify.code == 3 and "line 4" in verify.err and "'event' appears twice" in verify.err, verify
    assert held(home)  # nothing is rebuilt from a log that does not verify
    assert "appears twice" in check_line(b'{"seq": 1, "seq": 2}', "0" * 64, None)


# ------------------------------------------------------------------ macs
def test_with_the_key_every_line_carries_a_mac_outside_its_hash(home, cli):
    stopped_home(home, key=True)
    key, problem = key_of(home)
    assert key is not None and problem == "" and key.since == 1
    for line in lines(home):
        without = {name: value for name, value in line.items() if name not in ("hash", "mac")}
        assert line["hash"] == chain_hash(line["prev"], without)  # hash as defined, mac not in it
        assert list(line)[-1] == "mac"
        assert line["mac"] == hmac.new(key.secret, line["hash"].encode(), hashlib.sha256).hexdigest()
    verify = cli("log", "verify")
    assert verify.code == 0 and "ok: 3 lines, hash chain intact (macs checked (3 lines carry one))" in verify.out
    assert "mac" not in cli("log").out  # shown as a line's extra keys: never


@pytest.mark.parametrize("mac", [None, "0" * 64])
def test_a_line_added_without_the_key_is_named_and_lifts_nothing(home, cli, mac):
    stopped_home(home, key=True)
    line = forged(lines(home)[-1])
    if mac is not None:
        line["mac"] = mac
    append_raw(home, json.dumps(line))
    verify = cli("log", "verify")
    said = "has no mac" if mac is None else "its mac is wrong"
    assert verify.code == 3 and "chain broken at line 4" in verify.err and said in verify.err, verify
    assert "does not verify" in held(home)  # the stops are not rebuilt from it: agent-1 stays held
    assert cli("doctor", "--repair").code == 3 and held(home)


def test_a_log_rewritten_without_the_key_is_named_from_the_keys_first_line(home, cli):
    stopped_home(home, key=True)
    prev, rewritten = "0" * 64, []
    for seq, line in enumerate([line for line in lines(home) if line["session_id"] != "agent-1"], 1):
        record = {k: v for k, v in line.items() if k not in ("seq", "prev", "hash", "mac")}
        record.update(seq=seq, prev=prev)
        record["hash"] = prev = chain_hash(prev, record)
        rewritten.append(record)
    (home / LOG).write_text("".join(json.dumps(line) + "\n" for line in rewritten))
    for name in (HEAD, "stops.json"):
        (home / name).unlink()
    verify = cli("log", "verify")
    assert verify.code == 3 and "every line from 1 on is written with the key" in verify.err, verify


def test_lines_from_before_the_key_need_no_mac_and_a_cut_below_its_start_is_named(home, cli):
    protocol = StopProtocol(home)
    protocol.acknowledge_stop("ops", "agent-1", "before the key", now=NOW)
    protocol.acknowledge_stop("ops", "agent-2", "before the key", now=NOW + 1)
    ensure_key(str(home), next_seq=AckLog(home).next_seq())
    protocol.acknowledge_stop("ops", "agent-3", "with the key", now=NOW + 2)
    assert ["mac" in line for line in lines(home)] == [False, False, True]
    assert cli("log", "verify").code == 0
    (home / LOG).write_text("".join(json.dumps(line) + "\n" for line in lines(home)[:1]))
    (home / HEAD).unlink()
    verify = cli("log", "verify")
    assert verify.code == 3 and "it had reached line 2 when its mac key was made (cut)" in verify.err, verify


def test_without_the_key_the_macs_are_not_checked_rather_than_failing(home, cli, monkeypatch):
    stopped_home(home, key=True)
    key_path = home / "run" / KEY_NAME
    moved = home.parent / "the-key-elsewhere"
    os.rename(key_path, moved)  # an operator who cannot read it
    verify = cli("log", "verify")
    assert verify.code == 0 and "macs not checked: no key readable" in verify.out, verify
    os.rename(moved, key_path)

    def refuse(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr("leash.core.base.logkey.os.open", refuse)
    assert load(str(key_path)) == (None, "macs not checked: no key readable")


def test_a_key_others_may_read_is_not_used(home, cli):
    stopped_home(home)
    path, created = ensure_key(str(home), next_seq=4)
    assert created and oct(os.stat(path).st_mode & 0o777) == "0o600"
    assert ensure_key(str(home), next_seq=9) == (path, False)  # made once, never replaced
    os.chmod(path, 0o640)
    assert key_of(home)[0] is None and "may be read by others" in key_of(home)[1]
    found = cli("doctor")
    assert "warn  stop_ack_log.jsonl: macs not checked: key file" in found.out, found.out


def test_the_key_file_can_be_named_in_the_config(home, tmp_path):
    home.mkdir(mode=0o700, parents=True)
    elsewhere = tmp_path / "keys" / "leash.key"
    (home / "config.toml").write_text(f'[acklog]\nmac_key_file = "{elsewhere}"\n')
    ensure_key(str(home), next_seq=1)
    assert elsewhere.exists() and not (home / "run" / KEY_NAME).exists()
    StopProtocol(home).acknowledge_stop("ops", "agent-1", "x", now=NOW)
    assert "mac" in lines(home)[0] and AckLog(home).verify().ok


def test_leash_daemon_makes_the_key_when_it_is_missing(home):
    from leash.core.store.select import daemon_backend

    stopped_home(home)
    backend = daemon_backend(str(home))
    key_path = home / "run" / KEY_NAME
    assert oct(key_path.stat().st_mode & 0o777) == "0o600" and json.loads(key_path.read_text())["since"] == 4
    line = backend.acklog.append("stop_ack", source="ops", session_id="agent-9", now=NOW + 3)
    assert line.extra["mac"] and AckLog(home).verify().ok
