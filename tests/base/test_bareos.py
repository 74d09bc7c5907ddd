"""``core.base.bareos``, the thin hook's ``os`` without ``os``: its path
functions give what ``posixpath``'s give, and its environment is the process's."""
from __future__ import annotations

import os
import posixpath
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from leash.core.base import bareos

from ..support.checkout import ROOT

# Paths made of the pieces that change what path functions answer.
PIECES = st.sampled_from(["", "/", "//", "///", ".", "..", "a", "b.c", "~", "~x", "é", "\udcff"])
PATHS = st.lists(PIECES, max_size=8).map("".join)


@given(PATHS)
def test_path_functions_answer_as_posixpath(path):
    assert bareos.normpath(path) == posixpath.normpath(path)
    assert bareos.dirname(path) == posixpath.dirname(path)
    assert bareos.basename(path) == posixpath.basename(path)
    assert bareos.abspath(path) == posixpath.abspath(path)
    assert bareos.expanduser(path) == posixpath.expanduser(path)


@given(PATHS, st.lists(PATHS, max_size=3))
def test_join_answers_as_posixpath(first, rest):
    assert bareos.join(first, *rest) == posixpath.join(first, *rest)


def test_exists_and_fsencode(tmp_path):
    assert bareos.exists(str(tmp_path)) and not bareos.exists(str(tmp_path / "none"))
    assert not bareos.exists("nul\0byte")
    assert bareos.fsencode("a\udcffb") == os.fsencode("a\udcffb")


def test_expanduser_without_home_or_for_another_user_asks_the_password_database(monkeypatch):
    monkeypatch.delenv("HOME")
    assert bareos.expanduser("~/x") == posixpath.expanduser("~/x")
    assert bareos.expanduser("~root/x") == posixpath.expanduser("~root/x")


def test_in_a_process_without_os_the_environment_is_decoded_as_os_decodes_it():
    """Under -S nothing imports ``os``: ``environ`` is read from ``posix``,
    bytes that are not UTF-8 included."""
    program = ("import sys; bareos = {}; exec(compile(open(sys.argv[1]).read(), sys.argv[1], 'exec'), bareos); "
               "assert 'os' not in sys.modules, 'os was imported'; "
               "print(ascii(bareos['environ']['LEASH_X']), ascii(bareos['environ'].get('HOME')))")
    env = {b"LEASH_X": b"caf\xc3\xa9-\xff", b"HOME": b"/h", b"PATH": os.environb.get(b"PATH", b"/usr/bin")}
    source = str(ROOT / "core" / "base" / "bareos.py")
    done = subprocess.run([sys.executable, "-S", "-c", program, source], env=env, capture_output=True,
                          check=True, timeout=30)
    assert done.stdout.decode().split() == [ascii("café-\udcff"), ascii("/h")]
