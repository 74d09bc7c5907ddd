"""Path patterns of hands-off locks (``leash.core.base.globs``): what each part of a
glob matches, relative against absolute, and patterns refused at filing."""
from __future__ import annotations

import pytest

from leash.core.base.globs import check_glob, compile_glob, path_candidates, subtree_may_match


def matches(pattern: str, path: str) -> bool:
    return compile_glob(pattern).match(path) is not None


@pytest.mark.parametrize("pattern, path, expected", [
    ("src/*.py", "src/app.py", True),
    ("src/*.py", "src/.py", True),
    ("src/*.py", "src/pkg/app.py", False),  # one star stays inside one directory
    ("src/*", "src/", True),
    ("src/?.py", "src/a.py", True),
    ("src/?.py", "src/ab.py", False),
    ("src/?", "src//", False),  # a question mark is never a slash
    ("src/**", "src/a/b/c.py", True),
    ("src/**/*.py", "src/app.py", True),  # `**/` may stand for no directory at all
    ("src/**/*.py", "src/a/b/app.py", True),
    ("src/**/*.py", "src/a/b/app.txt", False),
    ("**/secret*", "secret.txt", True),
    ("**/secret*", "deep/down/secret.key", True),
    ("a**b", "a/x/b", True),  # `**` without a slash crosses directories too
    ("src/[ab].py", "src/a.py", True),
    ("src/[ab].py", "src/c.py", False),
    ("src/[!ab].py", "src/c.py", True),
    ("src/[!ab].py", "src/a.py", False),
    ("src/[^ab].py", "src/a.py", False),
    ("src/[a-c].py", "src/b.py", True),
    ("src/[x", "src/[x", True),  # an unclosed `[` is itself
    ("src/a.py", "src/a.py", True),
    ("src/a.py", "src/aXpy", False),  # a dot is a dot
    ("src/a+b(c).py", "src/a+b(c).py", True),
    ("src/a.py", "src/a.py/more", False),  # the whole path, not a prefix
    ("src/a.py", "x/src/a.py", False),
])
def test_glob_parts(pattern, path, expected):
    assert matches(pattern, path) is expected


def test_double_star_at_the_end_covers_the_directory_itself():
    assert matches("src/auth/**", "src/auth")
    assert matches("src/auth/**", "src/auth/")
    assert matches("src/auth/**", "src/auth/login.py")
    assert matches("src/auth/**", "src/auth/deep/er/file")
    assert not matches("src/auth/**", "src/authx")
    assert not matches("src/auth/**", "src/authx/file")
    assert not matches("src/auth/*", "src/auth")  # one star: the directory's entries only


def test_a_file_name_with_a_newline_is_still_one_path():
    assert matches("src/*", "src/a\nb")
    assert not matches("src/a", "src/a\n")


def test_relative_path_against_the_cwd():
    assert path_candidates("src/a.py", "/work/repo") == ("/work/repo/src/a.py", "src/a.py")
    assert path_candidates("/work/repo/src/a.py", "/work/repo") == ("/work/repo/src/a.py", "src/a.py")
    assert path_candidates("./src/../src/a.py", "/work/repo/") == ("/work/repo/src/a.py", "src/a.py")


def test_a_path_outside_the_cwd_has_no_relative_form():
    assert path_candidates("../other/a.py", "/work/repo") == ("/work/other/a.py", None)
    assert path_candidates("/etc/passwd", "/work/repo") == ("/etc/passwd", None)
    assert path_candidates("/work/repository/a.py", "/work/repo") == ("/work/repository/a.py", None)


def test_without_a_cwd_a_relative_path_stays_relative(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert path_candidates("src/./a.py", None) == (str(tmp_path / "src" / "a.py"), "src/a.py")
    assert path_candidates("/etc/passwd", None) == ("/etc/passwd", None)


def test_relative_pattern_matches_the_relative_form_and_absolute_the_absolute():
    absolute, relative = path_candidates("src/auth/login.py", "/work/repo")
    assert matches("src/auth/**", relative)
    assert not matches("src/auth/**", absolute)
    assert matches("/work/repo/src/auth/**", absolute)
    assert not matches("/work/repo/src/auth/**", relative)


@pytest.mark.parametrize("pattern", ["src/[]x", "[]", "src/[]].py", "src/[z-a].py"])
def test_check_glob_refuses_a_pattern_that_does_not_compile(pattern):
    with pytest.raises(ValueError, match="is not a valid glob") as caught:
        check_glob(pattern)
    assert "\n" not in str(caught.value)
    assert repr(pattern) in str(caught.value)


@pytest.mark.parametrize("pattern", ["src/auth/**", "**/*.py", "src/[ab].py", "src/[x", "/abs/*", "?"])
def test_check_glob_accepts_what_compiles(pattern):
    assert check_glob(pattern) is None


@pytest.mark.parametrize("pattern, directory, expected", [
    ("src/auth/**", "src", True),  # `rm -rf src` reaches the locked tree
    ("src/auth/**", "src/auth", True),
    ("src/auth/**", "src/auth/deep", True),
    ("src/auth/**", "docs", False),
    ("src/auth/**", "src/other", False),
    ("src/*/keys", "src/anything", True),
    ("src/a?/keys", "src/abc", False),
    ("**/keys", "anything/at/all", True),
    ("src/a.py", "src/a.py/inside", False),  # deeper than the pattern reaches
    ("/work/repo/src/**", "/work", True),
    ("/work/repo/src/**", "/elsewhere", False),
])
def test_subtree_may_match(pattern, directory, expected):
    assert subtree_may_match(pattern, directory, "/work/repo") is expected


def test_a_directory_above_the_cwd_holds_every_relative_match():
    assert subtree_may_match("src/auth/**", "/work", "/work/repo")
    assert subtree_may_match("src/auth/**", "/work/repo", "/work/repo")
    assert subtree_may_match("src/auth/**", "..", "/work/repo")
    assert not subtree_may_match("src/auth/**", "/work/other", "/work/repo")
    assert not subtree_may_match("src/auth/**", "/work/rep", "/work/repo")
