"""``core.base.realpaths.realpath``: the kernel's answer for a path that
exists, ``os.path.realpath``'s otherwise; always the same string as
``os.path.realpath`` gives, over a tree of links, loops, dangling links,
``..`` through links, missing tails and an unsearchable folder."""
from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leash.core.base.realpaths import realpath

PARTS = st.sampled_from(["a", "b", "link-a", "link-up", "dangling", "loop", "missing", "..", ".", "", "f",
                         "locked", "abs-link"])


def _tree(root: str) -> None:
    os.makedirs(os.path.join(root, "a", "b"), exist_ok=True)
    os.makedirs(os.path.join(root, "locked", "inside"), exist_ok=True)
    with open(os.path.join(root, "a", "f"), "w"):
        pass
    links = {"link-a": "a", "a/b/link-up": "../..", "dangling": "nowhere/at/all", "loop": "loop",
             "a/abs-link": os.path.join(root, "a", "b")}
    for name, target in links.items():
        where = os.path.join(root, name)
        if not os.path.lexists(where):
            os.symlink(target, where)


@settings(max_examples=300, deadline=None)
@given(st.lists(PARTS, min_size=0, max_size=6), st.booleans())
def test_it_answers_as_os_path_realpath(tmp_path_factory, parts, absolute):
    root = str(tmp_path_factory.getbasetemp() / "realpaths")
    _tree(root)
    path = os.path.join(root, *parts) if absolute else os.path.join(*parts) if parts else ""
    here = os.getcwd()
    os.chdir(root)
    try:
        assert realpath(path) == os.path.realpath(path), path
    finally:
        os.chdir(here)


def test_a_folder_without_search_permission_a_link_to_a_file_and_a_nul(tmp_path):
    locked = tmp_path / "locked"
    (locked / "inside").mkdir(parents=True)
    locked.chmod(0o000)
    try:
        path = str(locked / "inside" / "x")
        assert realpath(path) == os.path.realpath(path)
    finally:
        locked.chmod(0o700)
    link = tmp_path / "to-file"
    link.symlink_to(tmp_path / "file")
    (tmp_path / "file").write_text("")
    assert realpath(str(link)) == str(tmp_path / "file") == os.path.realpath(link)
    for resolve in (realpath, os.path.realpath):  # a NUL is refused by both alike
        with pytest.raises(ValueError):
            resolve(str(tmp_path / "nul\0byte"))
