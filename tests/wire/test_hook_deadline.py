"""The installed hook's own deadline (``--deadline SECONDS``, which took the
place of ``timeout -k 2 SECONDS`` in the command): past it the kernel ends the
hook whatever it is doing, even when its parent ignored ``SIGALRM``, and the
command's ``|| exit 2`` refuses the call; a deadline that is not a number
refuses at once."""
from __future__ import annotations

import json
import shlex
import signal
import subprocess
import time

from leash.core.hook.install import hook_runner

from ..support.thin_hook import BASH


def _ignoring_alarms():
    signal.signal(signal.SIGALRM, signal.SIG_IGN)  # inherited across exec: the hook must undo it


def test_a_hook_past_its_deadline_is_ended_by_the_kernel_and_the_command_refuses(home):
    words = [*hook_runner(), "--deadline", "0.3", "--home", str(home), "hook", "pre-tool-use"]
    started = time.monotonic()
    # stdin left open with half a payload: the hook waits on it (its own read
    # deadline is 5 s), as a hook stuck anywhere would.
    hook = subprocess.Popen(words, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=_ignoring_alarms)
    try:
        hook.stdin.write(b'{"session_id": "half')
        hook.stdin.flush()
        assert hook.wait(timeout=30) == -signal.SIGALRM
        assert time.monotonic() - started < 4
    finally:
        hook.stdin.close()
        hook.stdout.close()
        hook.stderr.close()
    command = f"trap '' ALRM; {shlex.join(words)} || exit 2"
    wrapped = subprocess.Popen(["sh", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
    try:
        wrapped.stdin.write(b'{"session_id": "half')
        wrapped.stdin.flush()
        assert wrapped.wait(timeout=30) == 2
    finally:
        wrapped.stdin.close()
        wrapped.stdout.close()


def test_a_hook_within_its_deadline_answers_as_without_one(home):
    from leash.core.views.protocol import StopProtocol

    StopProtocol(home).stop_fleet("maintenance", "ops")
    words = [*hook_runner(), "--deadline", "25", "--home", str(home), "hook", "pre-tool-use"]
    done = subprocess.run(words, input=json.dumps(BASH).encode(), capture_output=True, timeout=60)
    assert done.returncode == 0 and b"maintenance" in done.stdout, done.stderr


def test_a_deadline_that_is_not_a_number_refuses_with_one_line(home):
    for value in ("soon", "0", "-1", "nan", "inf"):
        words = [*hook_runner(), "--deadline", value, "--home", str(home), "hook", "pre-tool-use"]
        done = subprocess.run(words, input=json.dumps(BASH).encode(), capture_output=True, timeout=60)
        assert done.returncode == 2 and done.stderr.decode().count("\n") == 1 and b"--deadline" in done.stderr
