"""Lines that lift control written into leashd's home behind its back (the
single-user profile: the agent's own script using leash's Python API): leashd
answers each as supervisor_tampering. A forged resume leaves the session held
by a critical halt; a forged lock release is filed again; a forged fleet
resume stops the fleet again. The same actions through leashd lift as asked."""
from __future__ import annotations

import subprocess
import sys

from leash.core.policy.halts.outcomes import HaltQuery
from leash.core.store.files import FileBackend

from ..support.checkout import ROOT, leash_argv
from ..support.daemon import daemon_process, stop
from ..support.waiting import wait_for

FORGE = "import sys; from leash.core.store.files import FileBackend; b = FileBackend(sys.argv[1]); {}"


def forge(home, action: str) -> None:
    done = subprocess.run([sys.executable, "-c", FORGE.format(action), str(home)], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr


def leash(home, *args: str) -> None:
    done = subprocess.run(leash_argv() + ["--home", str(home), *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)
    assert done.returncode == 0, done.stderr


def tampering(home) -> list[str]:
    return [h.session_id for h in FileBackend(home).halts.listing(HaltQuery.of({"pending": True})).halts
            if h.condition_name == "supervisor_tampering"]


def test_forged_lifts_are_answered_and_lifts_through_leashd_are_not(home):
    home.mkdir(parents=True, exist_ok=True)
    daemon = daemon_process(home, "--no-kennel")
    try:
        leash(home, "stop", "s1", "--force", "--reason", "review")
        leash(home, "hands-off", "path:infra/**", "--reason", "freeze")
        forge(home, "b.stops.resume('s1', source='ops@elsewhere', reason='go on')")
        wait_for(lambda: tampering(home) == ["s1"], what="a supervisor_tampering halt on s1")
        forge(home, "b.locks.release('path:infra/**', source='ops@elsewhere')")
        wait_for(lambda: FileBackend(home).locks.lock_of("path:infra/**") is not None, what="the lock filed again")
        leash(home, "stop", "--all", "--reason", "everyone")
        forge(home, "b.stops.resume_fleet(source='ops@elsewhere')")
        wait_for(lambda: FileBackend(home).stops.fleet() is not None, what="the fleet stopped again")
        blocked = [line for line in FileBackend(home).acklog.read() if line.event == "tamper_blocked"]
        assert len(blocked) == 3 and all("outside leash daemon" in line.reason for line in blocked)

        leash(home, "stop", "s2", "--force", "--reason", "review")
        leash(home, "resume", "s2", "--reason", "reviewed")  # through leashd: a lift, not tampering
        leash(home, "release", "path:infra/**")
    finally:
        stop(daemon)
    assert tampering(home) == ["s1"]
    assert FileBackend(home).locks.lock_of("path:infra/**") is None
