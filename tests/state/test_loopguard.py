"""The restart-loop breaker: hermes's cases, the gap chain, concurrency, fail open."""
from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from leash.core.state import loopguard
from leash.core.state.acklog import AckLog

from ..support.checkout import ROOT


def test_state_lives_where_hermes_keeps_it(home):
    loopguard.record_restart_interrupted_boot(now=1000)
    assert json.loads((home / "gateway" / "restart_loop.json").read_text()) == {"boots": [1000]}


def test_three_quick_boots_trip_on_the_third(home):
    assert loopguard.check_and_record(3, 60, now=1000) is False
    assert loopguard.check_and_record(3, 60, now=1005) is False
    assert loopguard.check_and_record(3, 60, now=1010) is True
    assert loopguard.is_restart_loop_tripped(3, 60, now=1010) is True
    (line,) = AckLog(home).read().entries
    assert line["event"] == "loop_tripped" and line["name"] == "gateway"


def test_slow_boots_never_trip_in_the_sliding_window(home):
    for t in (1000, 1070, 1140):
        assert loopguard.check_and_record(3, 60, now=t) is False
    assert loopguard.is_restart_loop_tripped(3, 60, now=1140) is False


def test_max_gap_chains_slow_crash_cycles(home):
    results = [loopguard.check_and_record(3, 60, now=t, max_gap_seconds=300) for t in (1000, 1150, 1300)]
    assert results == [False, False, True]


def test_a_gap_over_max_gap_breaks_the_chain(home):
    results = [loopguard.check_and_record(3, 60, now=t, max_gap_seconds=300) for t in (1000, 1150, 1500, 1650)]
    assert results == [False, False, False, False]
    assert loopguard.is_restart_loop_tripped(3, 60, now=1700, max_gap_seconds=300) is False


def test_the_window_moves_on(home):
    for t in (1000, 1005, 1010):
        loopguard.record_restart_interrupted_boot(60, now=t)
    assert loopguard.is_restart_loop_tripped(3, 60, now=1060) is True
    assert loopguard.is_restart_loop_tripped(3, 60, now=1066) is False


def test_zero_or_negative_max_disables(home):
    for t in (1000, 1001, 1002, 1003):
        assert loopguard.check_and_record(0, 60, now=t) is False
    assert loopguard.is_restart_loop_tripped(-1, 60, now=1003) is False


def test_at_most_50_boots_are_kept(home):
    for i in range(80):
        boots = loopguard.record_restart_interrupted_boot(10_000, now=1000 + i)
    assert len(boots) == 50 and boots[-1] == 1079


def test_a_boot_from_the_future_counts_once(home):
    for t in (1000, 1005):
        loopguard.record_restart_interrupted_boot(60, now=t)
    # the clock is set back by ten minutes: the stored boots count as "now"...
    boots = loopguard.record_restart_interrupted_boot(60, now=400)
    assert boots == [400, 400, 400]
    assert loopguard.is_restart_loop_tripped(3, 60, now=400) is True
    # ...and leave the window like any other boot instead of lingering until 1065
    assert loopguard.is_restart_loop_tripped(3, 60, now=461) is False


def test_clear_and_reset(home):
    for t in (1000, 1001, 1002):
        loopguard.record_restart_interrupted_boot(now=t)
    loopguard.clear()
    assert loopguard.is_restart_loop_tripped(3, 60, now=1002) is False
    loopguard.record_restart_interrupted_boot(now=1003)
    assert loopguard.reset(source="ops", reason="false positive") is True
    assert AckLog(home).read().entries[-1]["event"] == "loop_reset"
    assert loopguard.reset() is False


def test_names_and_homes_are_separate(home, tmp_path):
    for t in (1000, 1001, 1002):
        loopguard.record_restart_interrupted_boot(now=t, name="worker-a")
    assert loopguard.is_restart_loop_tripped(now=1002, name="worker-a")
    assert not loopguard.is_restart_loop_tripped(now=1002, name="worker-b")
    assert not loopguard.is_restart_loop_tripped(now=1002, name="worker-a", home=tmp_path / "other")
    with pytest.raises(ValueError):
        loopguard.record_restart_interrupted_boot(now=1000, name="../../escape")
    assert not (tmp_path.parent / "escape").exists()
    assert sorted(loopguard.breaker_names()) == ["worker-a"]


@pytest.mark.parametrize("garbage", [b"{nope", b"[1, 2, 3]", b'{"boots": "many"}', b"\xff"])
def test_corrupt_state_fails_open_with_one_warning_and_is_quarantined(home, caplog, garbage):
    path = home / "gateway" / "restart_loop.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(garbage)
    with caplog.at_level(logging.WARNING, logger="leash.loopguard"):
        assert loopguard.is_restart_loop_tripped(1, 60, now=1000) is False
    assert len([r for r in caplog.records if "unreadable" in r.message]) == 1
    (kept,) = list(path.parent.glob("restart_loop.json.corrupt-*"))
    assert kept.read_bytes() == garbage
    assert loopguard.check_and_record(2, 60, now=1000) is False  # starts again from nothing


def test_concurrent_records_are_all_kept(home):
    script = ("import sys\nfrom core import loopguard\n"
              "for i in range(5):\n"
              "    loopguard.record_restart_interrupted_boot(10_000)\n")
    procs = [subprocess.Popen([sys.executable, "-c", script, str(n)], cwd=ROOT) for n in range(8)]
    assert [p.wait(timeout=60) for p in procs] == [0] * 8
    boots = json.loads((home / "gateway" / "restart_loop.json").read_text())["boots"]
    assert len(boots) == 40  # none lost to a concurrent read-modify-write


# ---------------------------------------------------------------- the CLI
def test_cli_exit_codes_and_config_thresholds(cli, home):
    assert cli("loop", "check-and-record").code == 0
    assert cli("loop", "check-and-record").code == 0
    assert cli("loop", "check-and-record").code == 3
    status = cli("loop", "status", "--json").json()
    assert status[0]["name"] == "gateway" and status[0]["tripped"] is True
    assert cli("loop", "reset", "gateway").code == 0
    assert cli("loop", "reset", "gateway").code == 1
    (home / "config.toml").write_text("[loop.gateway]\nmax_restarts = 1\n")
    assert cli("loop", "check-and-record").code == 3
    assert cli("loop", "check-and-record", "--max", "5").code == 0
    assert cli("loop", "check-and-record", "--window", "-3").code == 2
    events = [line["event"] for line in AckLog(home).read().entries]
    assert events == ["loop_tripped", "loop_reset", "loop_tripped"]


def test_status_json_includes_loops(cli):
    cli("loop", "check-and-record", "svc")
    loops = cli("status", "--json").json()["loops"]
    assert loops[0]["name"] == "svc" and loops[0]["boots"]


# ---------------------------------------------------------------- model check
class Breaker(RuleBasedStateMachine):
    """Random boots (clock jumps included) against a simple model of the rules."""

    @initialize(home=st.just(None), max_restarts=st.integers(-1, 5), window=st.integers(1, 200),
                max_gap=st.sampled_from([0, 0, 30, 150]))
    def setup(self, home, max_restarts, window, max_gap):
        import tempfile

        self.dir = tempfile.mkdtemp(prefix="leash-breaker-")
        self.max, self.window, self.gap = max_restarts, window, max_gap
        self.clock = 10_000.0
        self.model: list[float] = []

    def teardown(self):
        import shutil

        shutil.rmtree(self.dir, ignore_errors=True)  # each example's home goes with it

    def _model_chain(self, boots, moment):
        chain, later = 0, moment
        if self.gap > 0:
            for t in reversed(boots):
                if later - t >= self.gap:
                    break
                chain, later = chain + 1, t
        return chain

    def _model_size(self, moment):
        boots = sorted(min(t, moment) for t in self.model)
        in_window = sum(1 for t in boots if t >= moment - self.window)
        return max(in_window, self._model_chain(boots, moment))

    def _model_keep(self, moment):
        boots = sorted(min(t, moment) for t in self.model)
        chain = self._model_chain(boots, moment)
        kept = [t for i, t in enumerate(boots) if t >= moment - self.window or i >= len(boots) - chain]
        self.model = kept[-50:]

    @rule(step=st.floats(0, 400, allow_nan=False), back=st.booleans())
    def boot(self, step, back):
        self.clock = self.clock - step / 4 if back else self.clock + step
        self.model.append(self.clock)
        self._model_keep(self.clock)
        tripped = loopguard.check_and_record(self.max, self.window, now=self.clock, home=self.dir,
                                             max_gap_seconds=self.gap)
        assert tripped == (self.max > 0 and self._model_size(self.clock) >= self.max)

    @rule(step=st.floats(0, 400, allow_nan=False))
    def wait(self, step):
        self.clock += step

    @invariant()
    def tripped_matches_the_model(self):
        if not hasattr(self, "dir"):
            return
        expected = self.max > 0 and self._model_size(self.clock) >= self.max
        assert loopguard.is_restart_loop_tripped(self.max, self.window, now=self.clock, home=self.dir,
                                                 max_gap_seconds=self.gap) == expected
        stored = json.loads(open(f"{self.dir}/gateway/restart_loop.json").read())["boots"] if self.model else []
        assert len(stored) <= 50


TestBreakerModel = Breaker.TestCase
TestBreakerModel.settings = settings(max_examples=120, stateful_step_count=15, deadline=None)
