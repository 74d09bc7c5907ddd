"""The file after an edit, worked out in memory: Edit/Write replacements and
Codex CLI's apply_patch as Codex applies it (context header, loose matches,
end of file, add, delete, move), and the patches that do not apply."""
from __future__ import annotations

import pytest

from leash.core.policy.editresult import EditFailed, files_after_patch, replaced

CONFIG = """model = "gpt-5.5"

[[hooks.PreToolUse.hooks]]
timeout = 330

[[hooks.PermissionRequest.hooks]]
timeout = 330
"""


def patch(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", *lines, "*** End Patch"]) + "\n"


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(CONFIG)
    return path


def test_replacements_apply_in_order_and_a_write_replaces_the_whole_file():
    assert replaced("a b a", [{"old": "a", "new": "c"}, {"old": "c b", "new": "d"}]) == "d c"
    assert replaced("old", [{"old": "old", "new": "new text"}]) == "new text"
    assert replaced("", [{"old": "", "new": "created"}]) == "created"
    assert replaced("a b", [{"old": "z", "new": "y"}]) is None


def test_a_chunk_is_found_after_its_context_line(config, tmp_path):
    text = patch("*** Update File: config.toml", "@@ [[hooks.PermissionRequest.hooks]]", "-timeout = 330",
                 "+timeout = 1")
    after = files_after_patch(text, cwd=str(tmp_path))[str(config)]
    assert after == CONFIG.replace("PermissionRequest.hooks]]\ntimeout = 330", "PermissionRequest.hooks]]\ntimeout = 1")


def test_lines_are_matched_as_codex_matches_them_ignoring_spaces_and_typographic_quotes(config, tmp_path):
    text = patch("*** Update File: config.toml", "@@", "-  model = \u201cgpt-5.5\u201d   ", '+model = "o4"')
    assert files_after_patch(text, cwd=str(tmp_path))[str(config)].startswith('model = "o4"\n\n')


def test_a_chunk_without_old_lines_is_added_at_the_end_and_the_file_ends_in_a_newline(tmp_path):
    (tmp_path / "f.toml").write_text("a = 1")
    text = patch("*** Update File: f.toml", "@@", "+[features]", "+hooks = false")
    assert files_after_patch(text, cwd=str(tmp_path))[str(tmp_path / "f.toml")] == "a = 1\n[features]\nhooks = false\n"


def test_end_of_file_looks_at_the_end_first(config, tmp_path):
    text = patch("*** Update File: config.toml", "@@", "-timeout = 330", "+timeout = 2", "*** End of File")
    after = files_after_patch(text, cwd=str(tmp_path))[str(config)]
    assert after.endswith("PermissionRequest.hooks]]\ntimeout = 2\n") and "PreToolUse.hooks]]\ntimeout = 330" in after


def test_add_delete_and_move_give_each_path_its_text_or_none(config, tmp_path):
    text = patch("*** Add File: new.toml", "+x = 1", "*** Delete File: config.toml")
    assert files_after_patch(text, cwd=str(tmp_path)) == {str(tmp_path / "new.toml"): "x = 1\n", str(config): None}
    (tmp_path / "notes.toml").write_text("y = 2\n")
    moved = patch("*** Update File: notes.toml", "*** Move to: config.toml", "@@", "-y = 2", "+y = 3")
    assert files_after_patch(moved, cwd=str(tmp_path)) == {str(tmp_path / "notes.toml"): None, str(config): "y = 3\n"}


def test_a_later_change_of_the_same_file_sees_the_earlier_one(config, tmp_path):
    text = patch("*** Update File: config.toml", "@@", '-model = "gpt-5.5"', '+model = "o4"',
                 "*** Update File: config.toml", "@@", '-model = "o4"', '+model = "o5"')
    assert files_after_patch(text, cwd=str(tmp_path))[str(config)].startswith('model = "o5"\n')


@pytest.mark.parametrize("lines", [
    ["*** Update File: config.toml", "@@", "-model = \"gpt-4\"", "+model = \"o4\""],  # not in the file
    ["*** Update File: config.toml", "@@ [no such table]", "-timeout = 330", "+timeout = 1"],
    ["*** Update File: missing.toml", "@@", "-a", "+b"],
    ["*** Delete File: missing.toml"],
    ["*** Update File: config.toml"],  # changes nothing
    ["*** Rename File: config.toml"],  # a header the format does not know
])
def test_a_patch_that_does_not_apply_fails(config, tmp_path, lines):
    with pytest.raises(EditFailed):
        files_after_patch(patch(*lines), cwd=str(tmp_path))


def test_only_the_paths_asked_about_are_worked_out(config, tmp_path):
    text = patch("*** Update File: elsewhere.py", "@@", "-gone", "+x", "*** Update File: config.toml", "@@",
                 '-model = "gpt-5.5"', '+model = "o4"')
    after = files_after_patch(text, cwd=str(tmp_path), only=lambda path: path == str(config))
    assert list(after) == [str(config)]
