"""Undetected ack-log tampering: which tamper cases ``leash log verify`` and
``leash doctor`` miss, and which ones lift the stop they aim at.

Each case starts from a fresh home whose log holds a hands-off lock, a stop on
``other`` and a stop on ``victim``, then does one thing an agent that can
write the home (the single-user profile) or use the shared store's role could
do: forge a ``resume victim`` line with a correct seq, prev and hash, cut,
empty, edit, reorder or re-chain the log, delete ``acklog.head``, write a line
with a repeated key; on PostgreSQL, insert a forged row, switch the log's
trigger off, delete or edit rows. A case is *detected* when ``leash log
verify`` fails or ``leash doctor`` blames the log itself (the log, its head,
the store) with a failure the untampered home does not have: a finding that
only calls a state file out of step, whose repair would replay the tampered
log, is not a detection. *Prevented*: the database refused it. Then two
columns say whether the gate allows the victim's next call as it is, and
after ``leash doctor --repair`` (what an operator runs after a finding).

The file cases run twice when this leash has MAC keys (``core.logkey``): with
no key (the single-user profile as it starts) and with the key ``leash
daemon`` makes, which the forger has not read (the separated profile, where
only leashd's user can read it). The PostgreSQL cases run with one role for
both owner and runtime, and, when this leash has them, with a separate owner
role (``[store] owner_url``), without and with the MAC key. A throwaway PostgreSQL is started (as
the tests start one) unless ``--no-postgres``.

Prints figures; asserts nothing. Run it against another tree's leash with
``PYTHONPATH=<dir holding a leash package>`` to compare before and after.
``--smoke``: the first two cases of each kind, in every profile: it shows the
audit works, its totals mean nothing.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# bench/ holds scripts named like standard modules (secrets.py): not on the path first.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

NOW = 1_900_000_000.0
LOG, HEAD = "stop_ack_log.jsonl", "acklog.head"
HEADER = f"  {'outcome':<9} {'gate':<7} {'repaired':<8} {'case':<46} said"
CASES_EACH: int | None = None   # --smoke: this many cases of each kind


# ------------------------------------------------------------------ helpers
def chain_hash(prev: str, record: dict) -> str:
    from leash.core.state.acklog import chain_hash as hashed

    return hashed(prev, record)


def forged_line(last: dict, event: str, session: str, **extra) -> dict:
    """The next line after ``last`` with a correct seq, prev and hash (no key: no mac)."""
    record = {"timestamp": "2030-03-17T17:46:41.000000Z", "event": event, "source": "ops@host",
              "session_id": session, "reason": "looks fine", **extra, "seq": last["seq"] + 1, "prev": last["hash"]}
    record["hash"] = chain_hash(record["prev"], record)
    return record


def rechain(lines: list[dict]) -> list[dict]:
    """``lines`` with seq, prev and hash made right again (macs dropped: the forger has no key)."""
    prev, out = "0" * 64, []
    for seq, line in enumerate(lines, 1):
        record = {k: v for k, v in line.items() if k not in ("seq", "prev", "hash", "mac")}
        record.update(seq=seq, prev=prev)
        record["hash"] = prev = chain_hash(prev, record)
        out.append(record)
    return out


def dump(lines: list[dict]) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def read_lines(home: Path) -> list[dict]:
    return [json.loads(raw) for raw in (home / LOG).read_bytes().splitlines()]


def consistent_head(home: Path, lines: list[dict]) -> None:
    """``acklog.head`` rewritten to agree with ``lines`` as the log now holds them."""
    stores: dict = {}
    kinds = {"stop_ack": "stops", "resume": "stops", "hands_off": "hands_off", "release": "hands_off"}
    for line in lines:
        if line["event"] in kinds:
            stores[kinds[line["event"]]] = {"seq": line["seq"], "hash": line["hash"]}
    last = lines[-1] if lines else {"seq": 0, "hash": "0" * 64}
    (home / HEAD).write_text(json.dumps({"seq": last["seq"], "hash": last["hash"],
                                         "size": (home / LOG).stat().st_size, "stores": stores}))


# ------------------------------------------------------------------ file cases
def _forge(home, *, head: str = "stale", mac: str | None = None, duplicate: bool = False, state: bool = False):
    lines = read_lines(home)
    line = forged_line(lines[-1], "resume", "victim")
    text = json.dumps(line)
    if mac is not None:
        text = text[:-1] + f', "mac": "{mac}"}}'
    if duplicate:  # json keeps the last "event": the hash is over the resume; a first-wins reader sees a stop
        line = forged_line(lines[-1], "resume", "victim")
        text = json.dumps(line).replace('"event": "resume"', '"event": "stop_ack", "event": "resume"', 1)
    with open(home / LOG, "ab") as handle:
        handle.write(text.encode() + b"\n")
    if head == "fixed":
        consistent_head(home, lines + [line])
    elif head == "deleted":
        (home / HEAD).unlink()
    if state:  # stops.json as the forged line leaves it, naming it as its head
        stops = json.loads((home / "stops.json").read_text())
        stops["sessions"].pop("victim", None)
        stops["head"] = {"seq": line["seq"], "hash": line["hash"]}
        (home / "stops.json").write_text(json.dumps(stops))


def _cut(home, *, keep: int | None = None, head: str = "kept"):
    lines = read_lines(home)
    kept = lines[:len(lines) - 1] if keep is None else lines[:keep]
    (home / LOG).write_bytes(dump(kept))
    if head == "deleted":
        (home / HEAD).unlink()
    elif head == "fixed":
        consistent_head(home, kept)


def _edit(home, *, rechained: bool):
    lines = read_lines(home)
    victim = next(i for i, line in enumerate(lines) if line.get("session_id") == "victim")
    if rechained:  # the victim's stop rewritten as another session's, every hash made right, the head too
        lines[victim]["session_id"] = "nobody"
        lines = rechain(lines)
        (home / LOG).write_bytes(dump(lines))
        consistent_head(home, lines)
        return
    raw = (home / LOG).read_bytes().splitlines(keepends=True)
    raw[victim] = raw[victim].replace(b'"victim"', b'"nobody"')
    (home / LOG).write_bytes(b"".join(raw))


def _reorder(home):
    raw = (home / LOG).read_bytes().splitlines(keepends=True)
    raw[-1], raw[-2] = raw[-2], raw[-1]
    (home / LOG).write_bytes(b"".join(raw))


def _delete_middle(home):
    raw = (home / LOG).read_bytes().splitlines(keepends=True)
    del raw[len(raw) // 2]
    (home / LOG).write_bytes(b"".join(raw))


def _everything(home):
    for name in (LOG, HEAD, "stops.json", "hands_off_registry.json"):
        (home / name).unlink(missing_ok=True)


def _rewritten(home):
    """The whole log written again without the victim's stop, re-chained, with a head and state to match."""
    lines = rechain([line for line in read_lines(home) if line.get("session_id") != "victim"])
    (home / LOG).write_bytes(dump(lines))
    consistent_head(home, lines)
    for name in ("stops.json", "hands_off_registry.json"):
        (home / name).unlink(missing_ok=True)


FILE_CASES = {
    "forged resume appended (head stale)": lambda h: _forge(h),
    "forged resume appended, head rewritten": lambda h: _forge(h, head="fixed"),
    "forged resume appended, head deleted": lambda h: _forge(h, head="deleted"),
    "forged resume, head and stops.json made to match": lambda h: _forge(h, head="fixed", state=True),
    "forged resume with a made-up mac": lambda h: _forge(h, mac="0" * 64),
    "acklog.head deleted": lambda h: (h / HEAD).unlink(),
    "log emptied": lambda h: _cut(h, keep=0),
    "log emptied, head deleted": lambda h: _cut(h, keep=0, head="deleted"),
    "last line cut": lambda h: _cut(h),
    "last line cut, head deleted": lambda h: _cut(h, head="deleted"),
    "last line cut, head rewritten": lambda h: _cut(h, head="fixed"),
    "line edited": lambda h: _edit(h, rechained=False),
    "line edited and re-chained, head rewritten": lambda h: _edit(h, rechained=True),
    "duplicate key line appended": lambda h: _forge(h, duplicate=True),
    "two lines swapped": _reorder,
    "a middle line deleted": _delete_middle,
    "log, head and state files all deleted": _everything,
    "whole log rewritten and re-chained": _rewritten,
}


def seeded_home(root: Path, *, key: bool) -> Path:
    from leash.core.views.protocol import StopProtocol

    home = root / f"home-{os.urandom(4).hex()}"
    home.mkdir(mode=0o700)
    if key:
        from leash.core.base.logkey import ensure_key

        ensure_key(str(home), next_seq=1)
    protocol = StopProtocol(home)
    protocol.hands_off("ezra", hours=4, reason="deploy", source="ops", now=NOW)
    protocol.acknowledge_stop("ops", "other", "look first", now=NOW + 1)
    protocol.acknowledge_stop("ops", "victim", "explicit halt", now=NOW + 2)
    return home


# Doctor's subjects that are the log itself: a failure there says the log was tampered with.
LOG_SUBJECTS = {LOG, HEAD, "acklog", "store"}


def file_failures(home: Path, *, repair: bool = False) -> set[str]:
    from leash.core.views.doctor import examine

    with contextlib.redirect_stderr(io.StringIO()):
        return {f.subject for f in examine(str(home), repair=repair, now=NOW + 3) if f.level == "fail"}


def gate(home: Path, backend=None) -> str:
    """Whether the gate now lets the victim's next call through."""
    from leash.core.hook.gate import Gate

    try:
        verdict = Gate(home, backend=backend).check("victim", "Bash", {"command": "touch x"}, now=NOW + 4)
    except Exception as exc:  # noqa: BLE001 - an audit reports whatever happens
        return f"error {exc.__class__.__name__}"
    return "LIFTED" if verdict.allow else "held"


def run_file_case(root: Path, tamper, *, key: bool) -> tuple[str, str, str, str]:
    """(detected or MISSED, what said so, the gate now, the gate after doctor --repair)."""
    from leash.core.state.acklog import AckLog

    home = seeded_home(root, key=key)
    before = file_failures(home)
    tamper(home)
    report = AckLog(home).verify()
    found = sorted((file_failures(home) - before) & LOG_SUBJECTS)
    detected = not report.ok or bool(found)
    said = report.problem if not report.ok else (", ".join(found) or "-")
    now = gate(home)
    file_failures(home, repair=True)
    return ("detected" if detected else "MISSED"), said, now, gate(home)


# ------------------------------------------------------------------ PostgreSQL cases
class Store:
    """One schema of the throwaway server, with the roles a case uses."""

    def __init__(self, cluster, *, two_roles: bool):
        import psycopg

        self.cluster = cluster
        tag = os.urandom(4).hex()
        self.schema = f"audit_{tag}"
        self.owner = "leash" if not two_roles else f"owner_{tag}"
        self.runtime = "leash" if not two_roles else f"runtime_{tag}"
        with psycopg.connect(cluster.url(), autocommit=True) as conn:
            if two_roles:
                conn.execute(f"CREATE ROLE {self.owner} LOGIN")
                conn.execute(f"CREATE ROLE {self.runtime} LOGIN")
            conn.execute(f"CREATE SCHEMA {self.schema} AUTHORIZATION {self.owner}")

    def url(self, role: str) -> str:
        return (f"postgresql://{role}@/postgres?host={self.cluster.root}"
                f"&options=-csearch_path%3D{self.schema}")


def pg_seed(store: Store, home: Path, *, two_roles: bool, key: bool):
    from leash.core.store.postgres import PostgresBackend

    if key:  # the key every host's leashd holds ([acklog] mac_key_file); the forger has not read it
        from leash.core.base.logkey import ensure_key

        home.mkdir(mode=0o700)
        ensure_key(str(home), next_seq=1)
    options = {"owner_url": store.url(store.owner)} if two_roles else {}
    backend = PostgresBackend(store.url(store.runtime), home=home, host="a", **options)
    backend.locks.lock("ezra", hours=4, reason="deploy", source="ops", now=NOW)
    backend.stops.stop("other", source="ops", reason="look first", now=NOW + 1)
    backend.stops.stop("victim", source="ops", reason="explicit halt", now=NOW + 2)
    return backend


def _pg_last(conn) -> dict:
    return json.loads(conn.execute("SELECT line FROM acklog ORDER BY seq DESC LIMIT 1").fetchone()[0])


def _pg_insert(conn, line: dict) -> None:
    conn.execute("INSERT INTO acklog (seq, ts, event, session_id, source, line) VALUES (%s, %s, %s, %s, %s, %s)",
                 (line["seq"], line["timestamp"], line["event"], line["session_id"], line["source"],
                  json.dumps(line)))


def _pg_forge_with_state(conn) -> None:
    """A forged resume row and the stops' row rewritten to have applied it: both the runtime role may write."""
    line = forged_line(_pg_last(conn), "resume", "victim")
    _pg_insert(conn, line)
    conn.execute("UPDATE log_state SET state = state #- '{sessions,victim}', head_seq = %s WHERE store = 'stops'",
                 (line["seq"],))


PG_CASES = {
    "pg: forged resume row inserted": lambda c: _pg_insert(c, forged_line(_pg_last(c), "resume", "victim")),
    "pg: forged row and the state made to match": _pg_forge_with_state,
    "pg: the log's trigger switched off": lambda c: c.execute("ALTER TABLE acklog DISABLE TRIGGER USER"),
    "pg: last row deleted": lambda c: (c.execute("ALTER TABLE acklog DISABLE TRIGGER USER"),
                                      c.execute("DELETE FROM acklog WHERE seq = (SELECT max(seq) FROM acklog)")),
    "pg: every row deleted": lambda c: (c.execute("ALTER TABLE acklog DISABLE TRIGGER USER"),
                                       c.execute("DELETE FROM acklog")),
    "pg: a row edited": lambda c: (c.execute("ALTER TABLE acklog DISABLE TRIGGER USER"),
                                  c.execute("UPDATE acklog SET line = replace(line, 'victim', 'nobody')")),
}


def run_pg_case(cluster, root: Path, tamper, *, two_roles: bool, key: bool) -> tuple[str, str, str, str]:
    import psycopg

    store = Store(cluster, two_roles=two_roles)
    home = root / f"pg-{os.urandom(4).hex()}"
    backend = pg_seed(store, home, two_roles=two_roles, key=key)
    try:
        before = {f.subject for f in backend.examine(now=NOW + 3) if f.level == "fail"}
        try:
            with psycopg.connect(store.url(store.runtime)) as conn:  # the agent holds the runtime role's credentials
                tamper(conn)
        except psycopg.Error as exc:
            return "prevented", " ".join(str(exc).split())[:70], gate(home, backend), "-"
        report = backend.acklog.verify()
        found = sorted(({f.subject for f in backend.examine(now=NOW + 3) if f.level == "fail"} - before)
                       & LOG_SUBJECTS)
        detected = not report.ok or bool(found)
        said = report.problem if not report.ok else (", ".join(found) or "-")
        now = gate(home, backend)
        list(backend.examine(repair=True, now=NOW + 3))
        return ("detected" if detected else "MISSED"), said, now, gate(home, backend)
    finally:
        backend.close()


# ------------------------------------------------------------------ report
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-postgres", action="store_true", help="skip the shared-store cases")
    parser.add_argument("--smoke", action="store_true", help="two cases of each kind (totals mean nothing)")
    args = parser.parse_args()
    if args.smoke:
        global CASES_EACH
        CASES_EACH = 2
    from leash.core.state.acklog import AckLog

    keyed = hasattr(AckLog, "mac_key")  # this leash signs lines (a tree from before MAC keys does not)
    root = Path(tempfile.mkdtemp(prefix="leash-tamper-audit-"))
    os.chmod(root, 0o700)
    totals: dict[str, list[int]] = {}
    try:
        profiles = [("no key", False)] + ([("key (forger has none)", True)] if keyed else [])
        for label, key in profiles:
            print(f"\nfile log, {label}:\n{HEADER}")
            for name, tamper in itertools.islice(FILE_CASES.items(), CASES_EACH):
                outcome, said, now, repaired = run_file_case(root, tamper, key=key)
                count(totals, f"file, {label}", outcome, (now, repaired))
                print(f"  {outcome:<9} {now:<7} {repaired:<8} {name:<46} {said[:80]}")
        if not args.no_postgres:
            run_postgres(root, args, totals)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("\nundetected ack-log tampering (missed of cases; prevented; cases that lift the victim's stop "
          "as they are / after doctor --repair):")
    for label, (missed, cases, prevented, lifted, lifted_after) in totals.items():
        print(f"  {label:<34} {missed} of {cases} missed; {prevented} prevented; lifted {lifted} / {lifted_after}")


def count(totals: dict, label: str, outcome: str, gates: tuple[str, str]) -> None:
    row = totals.setdefault(label, [0, 0, 0, 0, 0])
    row[0] += outcome == "MISSED"
    row[1] += 1
    row[2] += outcome == "prevented"
    row[3] += gates[0] == "LIFTED"
    row[4] += gates[1] == "LIFTED"


def run_postgres(root: Path, args, totals: dict) -> None:
    from tests.support.postgres import Cluster, binaries

    if binaries() is None:
        print("\nPostgreSQL cases skipped: initdb/pg_ctl not installed")
        return
    import inspect

    from leash.core.store.postgres import PostgresBackend

    two = "owner_url" in inspect.signature(PostgresBackend.__init__).parameters
    runs = [("one role", False, False)]
    if two:
        runs += [("owner and runtime roles", True, False), ("owner and runtime roles, key", True, True)]
    cluster = Cluster()
    try:
        for label, two_roles, key in runs:
            print(f"\nPostgreSQL, {label}:\n{HEADER}")
            for name, tamper in itertools.islice(PG_CASES.items(), CASES_EACH):
                outcome, said, now, repaired = run_pg_case(cluster, root, tamper, two_roles=two_roles, key=key)
                count(totals, f"postgres, {label}", outcome, (now, repaired))
                print(f"  {outcome:<9} {now:<7} {repaired:<8} {name:<46} {said[:80]}")
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
