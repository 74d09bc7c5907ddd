"""The budget store on every backend: spend rows that add up, cap counters
(read-modify-write in turn across processes and hosts), meter states,
subscription windows, and the holds the gate reads (the file backend's
``budget-holds.json`` mirror: written before the commit that adds a hold,
never an answer of "none" when it cannot be read)."""
import json
import os
import subprocess
import sys
import threading

import pytest

from leash.core.store.budget import BudgetUnreadable
from leash.core.store.records import Change
from leash.core.store.records_budget import BudgetCounterRecord, BudgetWindowRecord, MeterState, SpendRecord

from ..support.backends import make_backend
from ..support.changes import changes_after

NOW = 1_900_000_000.0
HOUR = 3_600.0
T0 = NOW - NOW % 86_400  # a UTC day's start
KINDS = ["file", "postgres"]


@pytest.fixture(params=KINDS)
def budget_backend(request, home):
    """A file or PostgreSQL backend; ``make`` gives another client of the same store."""
    if request.param == "file":
        made = make_backend("file", home)
    else:
        cluster = request.getfixturevalue("postgres_cluster")
        made = make_backend("postgres", home, url=cluster.url(cluster.fresh_schema()))
    yield made
    made.close()


def another(backend):
    return make_backend(backend.name, backend.home, url=getattr(backend, "url", None))


def spend(hour: float, session: str = "s1", model: str = "claude-sonnet-4-5", usd: float = 0.25, **fields):
    values = dict(hour=hour, session_id=session, model=model, host="h1", entity="ezra", cli="claude", usd=usd,
                  estimated=False, input=100, output=10, cache_write=5, cache_read=50, reasoning=0, requests=1)
    values.update(fields)
    return SpendRecord.of(values)


def counter(cap: str = "daily", bucket: str = "fleet", period: str = "day:2030-03-17", *, used: float = 1.0,
            held: bool = False, **fields) -> BudgetCounterRecord:
    values = dict(cap=cap, bucket=bucket, period=period, period_end=NOW + 86_400, unit="usd", used=used,
                  estimated=False, raised_to=None, warned=[0.75], held_since=NOW if held else None,
                  held_use=used if held else None, released_at=None, released_by=None, updated_at=NOW)
    values.update(fields)
    return BudgetCounterRecord.of(values)


def fields_of(record) -> dict:
    return {field: getattr(record, field) for field in type(record).FIELDS}


# ------------------------------------------------------------------ every method
def test_a_store_never_written_reads_empty_and_creates_nothing(budget_backend, home):
    before = sorted(os.listdir(home))
    store = budget_backend.budget
    assert store.holds() == [] and store.counters() == [] and store.spend() == []
    assert store.totals("model") == [] and store.windows() == [] and store.meters() == {}
    assert sorted(os.listdir(home)) == before


def test_a_unit_reads_and_writes_each_table(budget_backend):
    store = budget_backend.budget
    with store.unit(now=NOW) as unit:
        assert unit.meter("s1", "/t/main.jsonl") is None and unit.counter("daily", "fleet", "d") is None
        unit.set_meter("s1", "/t/main.jsonl", MeterState.of({"cursor": {"offset": 10}, "totals": {"input": 3},
                                                            "read_at": NOW}))
        unit.set_meter("s1", "gemini", MeterState.of({"cursor": None}))
        unit.charge(spend(T0))
        unit.put_counter(counter(period="d", used=2.5))
        unit.put_window(BudgetWindowRecord.of(dict(bucket="fleet", window="window-5h", used_percent=41.0,
                                                   resets_at=NOW + 600, session_id="s1", at=NOW)))
        assert unit.meter("s1", "gemini") == MeterState.of({"cursor": None})
        assert unit.counter("daily", "fleet", "d").used == 2.5
        assert unit.window("fleet", "window-5h").used_percent == 41.0
    with store.unit(now=NOW) as unit:
        unit.set_meter("s1", "gemini", MeterState.of({"cursor": 7}))
        unit.put_counter(counter(period="d", used=3.5, warned=[0.75, 0.95], raised_to=10.0))
        unit.put_counter(counter(cap="weekly", period="w", used=9.0, held=True))
        assert [c.cap for c in unit.counters(held=True)] == ["weekly"]
        assert [c.cap for c in unit.counters(held=False)] == ["daily"]
        assert [c.period for c in unit.counters(cap="daily")] == ["d"]
    kept = {"/t/main.jsonl": {"cursor": {"offset": 10}, "totals": {"input": 3}, "read_at": NOW},
            "gemini": {"cursor": 7}}
    assert store.meters() == {"s1": {source: MeterState.of(state) for source, state in kept.items()}}
    daily, weekly = store.counters()
    assert fields_of(daily) == fields_of(counter(period="d", used=3.5, warned=[0.75, 0.95], raised_to=10.0))
    assert weekly.held and [c.cap for c in store.counters(cap="weekly")] == ["weekly"]
    assert fields_of(store.windows()[0])["resets_at"] == NOW + 600
    assert [fields_of(row) for row in store.spend()] == [fields_of(spend(T0))]


def test_charges_of_one_hour_session_and_model_add_up(budget_backend):
    store = budget_backend.budget
    with store.unit(now=NOW) as unit:
        unit.charge(spend(T0, usd=0.1))
        unit.charge(spend(T0, usd=0.2, estimated=True, host="h2", entity="lena", input=1))
        unit.charge(spend(T0, usd=0.3, estimated=False, host="h3", entity="mara", cli="codex"))
        unit.charge(spend(T0 + HOUR, session="s2", usd=1.0))
    first, second = store.spend()
    assert first.usd == 0.6 and first.estimated and (first.host, first.entity, first.cli) == ("h3", "mara", "codex")
    assert (first.input, first.output, first.requests) == (201, 30, 3)
    assert [row.session_id for row in store.spend(session_id="s2")] == ["s2"] == [second.session_id]
    assert [row.hour for row in store.spend(since=T0 + HOUR)] == [T0 + HOUR]
    assert [row.hour for row in store.spend(until=T0 + HOUR)] == [T0]


def test_totals_group_spend_by_each_key(budget_backend):
    store = budget_backend.budget
    with store.unit(now=NOW) as unit:
        unit.charge(spend(T0, usd=1.0))
        unit.charge(spend(T0 + HOUR, model="gpt-5", cli="codex", usd=3.0, estimated=True))
        unit.charge(spend(T0 + 86_400, session="s2", host="h2", entity="lena", usd=0.5))
    by_model = store.totals("model")
    assert [(row.key, row.usd, row.estimated) for row in by_model] == [
        ("gpt-5", 3.0, True), ("claude-sonnet-4-5", 1.5, False)]
    assert by_model[1].sessions == 2 and by_model[1].input == 200 and by_model[1].requests == 2
    assert [(row.key, row.usd) for row in store.totals("session")] == [("s1", 4.0), ("s2", 0.5)]
    assert [row.key for row in store.totals("entity")] == ["ezra", "lena"]
    assert [row.key for row in store.totals("host")] == ["h1", "h2"]
    assert [row.key for row in store.totals("cli")] == ["codex", "claude"]
    assert [(row.key, row.usd) for row in store.totals("day")] == [(T0, 4.0), (T0 + 86_400, 0.5)]
    assert [row.key for row in store.totals("hour")] == [T0, T0 + HOUR, T0 + 86_400]
    assert [row.key for row in store.totals("hour", since=T0 + HOUR, until=T0 + 86_400)] == [T0 + HOUR]
    with pytest.raises(ValueError, match="one of session"):
        store.totals("week")


def test_a_unit_that_raises_writes_nothing(budget_backend):
    store = budget_backend.budget
    with pytest.raises(RuntimeError):
        with store.unit(now=NOW) as unit:
            unit.charge(spend(T0))
            unit.put_counter(counter(held=True))
            raise RuntimeError("meter failed")
    assert store.spend() == [] and store.counters() == [] and store.holds() == []


def test_the_runtime_role_may_write_and_read_the_budget_tables(postgres_cluster, home):
    runtime, owner = postgres_cluster.two_roles()
    backend = make_backend("postgres", home, url=runtime, owner_url=owner)
    try:
        with backend.budget.unit(now=NOW) as unit:
            assert unit.counter("daily", "fleet", "d") is None  # the placeholder: insert and delete
            unit.charge(spend(T0))
            unit.set_meter("s1", "gemini", MeterState.of({"cursor": 1}))
            unit.put_window(BudgetWindowRecord.of(dict(bucket="fleet", window="window-5h", used_percent=1.0)))
            unit.put_counter(counter(held=True))
        assert [c.cap for c in backend.budget.holds()] == ["daily"] and backend.budget.meters()
    finally:
        backend.close()


# ------------------------------------------------------------------ holds
def test_holds_are_the_held_counters(budget_backend):
    store = budget_backend.budget
    with store.unit(now=NOW) as unit:
        unit.put_counter(counter(cap="daily", held=True, used=10.0))
        unit.put_counter(counter(cap="weekly", used=3.0))
    assert [(c.cap, c.held_use) for c in store.holds()] == [("daily", 10.0)]
    with store.unit(now=NOW) as unit:
        released = unit.counter("daily", "fleet", "day:2030-03-17")
        released.released_at, released.released_by = NOW + 60, "raise"
        unit.put_counter(released)
    assert store.holds() == [] and not store.counters(cap="daily")[0].held
    assert another(budget_backend).budget.holds() == []


@pytest.fixture
def file_backend(home):
    return make_backend("file", home)


def test_an_unreadable_holds_mirror_raises(file_backend, home):
    store = file_backend.budget
    with store.unit(now=NOW) as unit:
        unit.put_counter(counter(held=True))
    with open(os.path.join(home, "budget-holds.json"), "w") as handle:
        handle.write('{"holds": [')
    with pytest.raises(BudgetUnreadable, match="budget-holds.json"):
        store.holds()
    with open(os.path.join(home, "budget-holds.json"), "w") as handle:
        json.dump({"holds": "none"}, handle)
    with pytest.raises(BudgetUnreadable):
        another(file_backend).budget.holds()


def test_a_missing_mirror_is_rebuilt_from_the_database(file_backend, home):
    with file_backend.budget.unit(now=NOW) as unit:
        unit.put_counter(counter(held=True, used=7.0))
    os.unlink(os.path.join(home, "budget-holds.json"))
    assert [c.held_use for c in another(file_backend).budget.holds()] == [7.0]
    with open(os.path.join(home, "budget-holds.json")) as handle:
        assert [row["cap"] for row in json.load(handle)["holds"]] == ["daily"]
    assert oct(os.stat(os.path.join(home, "budget.db")).st_mode & 0o777) == "0o600"


KILLED_AFTER_MIRROR = """
import os, signal, sys
from leash.core.store.budget import FileBudget
from leash.core.store.records_budget import BudgetCounterRecord
written = FileBudget.write_mirror
def write_then_die(self, holds):
    if not RELEASED:
        written(self, holds)
    os.kill(os.getpid(), signal.SIGKILL)  # the power goes at the mirror's first write (a hold: right after it)
FileBudget.write_mirror = write_then_die
store = FileBudget(sys.argv[1])
with store.unit() as unit:
    unit.put_counter(BudgetCounterRecord.of(dict(cap="daily", bucket="fleet", period="d", used=12.0,
                                                 held_since=1.0, held_use=12.0, released_at=RELEASED, warned=[])))
"""


def die_at_the_mirror(home, *, released: float | None) -> None:
    program = KILLED_AFTER_MIRROR.replace("RELEASED", repr(released))
    killed = subprocess.run([sys.executable, "-c", program, str(home)], capture_output=True)
    assert killed.returncode == -9, killed.stderr


def test_a_hold_is_mirrored_before_its_commit(file_backend, home):
    with file_backend.budget.unit(now=NOW):
        pass  # budget.db made, and its empty mirror with it
    die_at_the_mirror(home, released=None)
    store = file_backend.budget
    assert store.counters() == []  # the unit never committed
    assert [(c.cap, c.held_use) for c in store.holds()] == [("daily", 12.0)]  # yet the gate holds


def test_a_release_is_mirrored_after_its_commit(file_backend, home):
    with file_backend.budget.unit(now=NOW) as unit:
        unit.put_counter(counter(cap="daily", bucket="fleet", period="d", held=True, used=12.0))
    die_at_the_mirror(home, released=NOW + 5)
    store = another(file_backend).budget
    assert [c.released_at for c in store.counters()] == [NOW + 5]  # committed
    assert [c.cap for c in store.holds()] == ["daily"]  # the mirror went last: the hold was never lost early


HOLDS_READER = ("import sys; from leash.core.store.files import FileBackend; "
                "print([c.cap for c in FileBackend(sys.argv[1]).budget.holds()], 'sqlite3' in sys.modules)")


def test_the_gate_reads_holds_without_sqlite(file_backend, home):
    with file_backend.budget.unit(now=NOW) as unit:  # a new budget.db, and no hold ever
        unit.charge(spend(T0))
    read = subprocess.run([sys.executable, "-c", HOLDS_READER, str(home)], capture_output=True, text=True)
    assert read.stdout.split() == ["[]", "False"], read.stderr
    with file_backend.budget.unit(now=NOW) as unit:
        unit.put_counter(counter(held=True))
    read = subprocess.run([sys.executable, "-c", HOLDS_READER, str(home)], capture_output=True, text=True)
    assert read.stdout.split() == ["['daily']", "False"], read.stderr


# ------------------------------------------------------------------ many writers
CHARGER = """
import sys
from leash.core.store.select import backend_for
from leash.core.store.records_budget import SpendRecord
store = backend_for(sys.argv[1]).budget
row = dict(hour=1.0, session_id="s1", model="m", host="h", entity="e", cli="c", usd=0.001, estimated=False,
           input=1, output=2, cache_write=0, cache_read=0, reasoning=0, requests=1)
for _ in range(500):
    with store.unit() as unit:
        unit.charge(SpendRecord.of(row))
"""


def test_two_processes_charging_one_row_sum_exactly(budget_backend, home):
    env = dict(os.environ, LEASH_STORE_URL=getattr(budget_backend, "url", "") or "")
    chargers = [subprocess.Popen([sys.executable, "-c", CHARGER, str(home)], env=env, stderr=subprocess.PIPE)
                for _ in range(2)]
    for charger in chargers:
        assert charger.wait(timeout=60) == 0, charger.stderr.read()
    (row,) = budget_backend.budget.spend()
    assert (row.usd, row.input, row.output, row.requests) == (1.0, 1000, 2000, 1000)


def test_two_clients_adding_to_one_counter_add_in_turn(budget_backend):
    clients = [budget_backend, another(budget_backend)]
    failures: list[Exception] = []

    def add(store, times: int) -> None:
        try:
            for _ in range(times):
                with store.unit() as unit:
                    found = unit.counter("fleet-day", "fleet", "d") or counter(cap="fleet-day", period="d", used=0)
                    found.used = found.used + 1
                    unit.put_counter(found)
        except Exception as exc:  # seen by the test, not lost in the thread
            failures.append(exc)

    workers = [threading.Thread(target=add, args=(client.budget, 200)) for client in clients]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert failures == []
    assert [c.used for c in budget_backend.budget.counters()] == [400.0]
    clients[1].close()


# ------------------------------------------------------------------ the change feed
def test_a_write_elsewhere_is_a_change_of_the_budget_store(budget_backend):
    program = ("import sys; from leash.core.store.select import backend_for; "
               "from leash.core.store.records_budget import SpendRecord\n"
               "with backend_for(sys.argv[1]).budget.unit() as unit:\n"
               "    unit.charge(SpendRecord.of(dict(hour=0.0, session_id='s', model='m', usd=1.0)))")
    assert Change("budget") in changes_after(budget_backend, program, "budget")


# ------------------------------------------------------------------ leash store copy
def test_a_home_copied_to_the_shared_store_carries_its_budget(cli, home, postgres_cluster):
    from leash.core.store.postgres import PostgresBackend

    source = make_backend("file", home)
    source.acklog.append("stop_ack", source="ops", session_id="s1", now=NOW)  # a home to copy has a log
    with source.budget.unit(now=NOW) as unit:
        unit.charge(spend(T0, usd=1.25))
        unit.charge(spend(T0 + HOUR, session="s2", usd=0.5, estimated=True))
        unit.put_counter(counter(held=True, used=12.0, warned=[0.75, 0.95]))
        unit.set_meter("s1", "/t/main.jsonl", MeterState.of({"cursor": {"offset": 99}}))
        unit.put_window(BudgetWindowRecord.of(dict(bucket="fleet", window="window-7d", used_percent=88.5,
                                                   resets_at=NOW + 60, session_id="s1", at=NOW)))
    url = postgres_cluster.url(postgres_cluster.fresh_schema())
    copied = cli("store", "copy", "--from", str(home), "--to", url)
    assert copied.code == 0 and "budget: 5 copied" in copied.out, copied.err
    shared = PostgresBackend(url, home=home, host="h1")
    try:
        assert [fields_of(row) for row in shared.budget.spend()] == [fields_of(row) for row in source.budget.spend()]
        assert shared.budget.totals("session") == source.budget.totals("session")
        assert [fields_of(c) for c in shared.budget.holds()] == [fields_of(c) for c in source.budget.holds()]
        assert shared.budget.meters() == source.budget.meters()
        assert [fields_of(w) for w in shared.budget.windows()] == [fields_of(w) for w in source.budget.windows()]
    finally:
        shared.close()


# ------------------------------------------------------------------ through leashd's operator socket
def test_the_remote_backend_reads_the_budget_store(daemon, home):
    from leash.core.store.remote import RemoteBackend, RemoteStoreError

    from ..support.daemon import sockets

    with make_backend("file", home).budget.unit(now=NOW) as unit:
        unit.charge(spend(T0, usd=2.5))
        unit.put_counter(counter(held=True, used=12.0))
    remote = RemoteBackend(sockets(home)[1]).budget
    assert [(c.cap, c.held_use) for c in remote.holds()] == [("daily", 12.0)]
    assert isinstance(remote.counters()[0], BudgetCounterRecord) and remote.counters(cap="none") == []
    assert [row.usd for row in remote.spend(session_id="s1")] == [2.5]
    assert [(row.key, row.usd) for row in remote.totals("entity")] == [("ezra", 2.5)]
    assert remote.windows() == [] and remote.meters() == {}
    with pytest.raises(ValueError, match="one of session"):
        remote.totals("week")
    with pytest.raises(RemoteStoreError, match="runs where the store is held"):
        remote.unit(now=NOW)


def test_the_shared_store_offline_comes_back_to_a_remote_client_as_unreadable():
    from leash.core.daemon.storeverb import raised_as
    from leash.core.store.pgbudget import BudgetStoreOffline

    assert raised_as(BudgetStoreOffline("PostgreSQL store: gone")) == "BudgetUnreadable"
    assert raised_as(KeyError("x")) == "KeyError" and raised_as(OSError("x")) == "OSError"


# ------------------------------------------------------------------ leash doctor
def budget_findings(backend, *, repair: bool = False) -> list[tuple[str, str, str]]:
    return [(f.level, f.subject, f.message) for f in backend.examine(repair=repair, now=NOW)
            if f.subject.startswith("budget")]


def test_doctor_mends_a_holds_mirror_out_of_step_with_the_database(file_backend, home):
    assert [level for level, *_ in budget_findings(file_backend)] == ["ok", "ok"]  # absent, nothing created
    assert not os.path.exists(os.path.join(home, "budget.db"))
    with file_backend.budget.unit(now=NOW) as unit:
        unit.put_counter(counter(held=True))
    assert [level for level, *_ in budget_findings(file_backend)] == ["ok", "ok"]
    with open(os.path.join(home, "budget-holds.json"), "w") as handle:
        json.dump({"holds": []}, handle)
    (db, mirror), = [budget_findings(file_backend)]
    assert db[0] == "ok" and mirror[:2] == ("fail", "budget-holds.json") and "out of step" in mirror[2]
    assert budget_findings(file_backend, repair=True)[1][0] == "fixed"
    assert [c.cap for c in another(file_backend).budget.holds()] == ["daily"]
    with open(os.path.join(home, "budget-holds.json"), "w") as handle:
        handle.write("{")
    assert budget_findings(file_backend)[1][0] == "fail"
    assert budget_findings(file_backend, repair=True)[1][0] == "fixed"
    assert [c.cap for c in another(file_backend).budget.holds()] == ["daily"]


def test_doctor_names_an_unreadable_budget_database(file_backend, home):
    with open(os.path.join(home, "budget.db"), "wb") as handle:
        handle.write(b"not a database at all, " * 100)
    (level, subject, message), = budget_findings(file_backend, repair=True)
    assert (level, subject) == ("fail", "budget.db") and "unreadable" in message
    with pytest.raises(BudgetUnreadable):
        file_backend.budget.counters()


def test_doctor_reads_the_shared_budget_tables(postgres_cluster, home):
    backend = make_backend("postgres", home, url=postgres_cluster.url(postgres_cluster.fresh_schema()))
    try:
        with backend.budget.unit(now=NOW) as unit:
            unit.put_counter(counter(held=True))
            unit.put_counter(counter(cap="weekly"))
        assert budget_findings(backend) == [("ok", "budget", "2 cap counters, 1 held")]
        with backend.db.owner_session() as conn, conn.transaction():
            conn.execute("ALTER TABLE budget_counters RENAME TO budget_counters_gone")
        (level, subject, message), = budget_findings(backend)
        assert (level, subject) == ("fail", "budget") and "cannot be read" in message
        with pytest.raises(BudgetUnreadable):
            backend.budget.holds()
    finally:
        backend.close()
