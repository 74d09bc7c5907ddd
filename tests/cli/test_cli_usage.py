"""Usage errors: every misuse of the command line exits 2 with one clear line
naming what to read; a config.toml leash cannot use is ``<path>:<line>: ...``
wherever its key is written (a table, a dotted key, an inline table, a quoted
key): doctor and status exit 2 on it, every other command warns and runs
(tests/cli/test_cli_config_broken.py)."""
from __future__ import annotations

import pytest

from leash.core.base.config import ConfigError, load_config


def one_line(result, code: int) -> str:
    assert result.code == code, result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("leash: error: "), result
    assert "Traceback" not in result.err
    return lines[0]


@pytest.mark.parametrize("argv, said", [
    (["stop", "s1", "--bogus"], "unrecognized arguments: --bogus (see 'leash stop --help')"),
    (["stop", "s1", "extra"], "unrecognized arguments: extra (see 'leash stop --help')"),
    (["halts", "list", "--since", "x"], "(see 'leash halts list --help')"),
    (["warrant", "file", "agent-1"], "the following arguments are required: --reason"),
    (["hands-off"], "the following arguments are required: entity"),
    (["hands-off", "ezra", "--hours", "-3"], "--hours"),
    (["log", "--since", "yesterday"], "ISO-8601"),
    (["kennel", "--dogs", "many"], "whole number"),
    (["completion", "tcsh"], "invalid choice: 'tcsh'"),
    (["completion", "bash", "sessions"], "takes no KIND"),
    (["nosuch"], "invalid choice: 'nosuch'"),
    (["--home"], "expected one argument"),
    (["stop"], "stop needs a SESSION"),
    (["stop", "--all"], "needs --reason"),
])
def test_every_misuse_exits_2_with_one_line(cli, argv, said):
    line = one_line(cli(*argv), 2)
    assert said in line, line


def test_words_left_over_name_the_subcommand_they_follow(cli):
    line = one_line(cli("status", "--json", "now"), 2)
    assert line == "leash: error: unrecognized arguments: now (see 'leash status --help')"


def write(home, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


@pytest.mark.parametrize("text, line, key", [
    ("# settings\ngate.read_only_tools = 3\n", 2, "gate.read_only_tools"),  # a dotted key
    ("\ngate = { read_only_tools = 3 }\n", 2, "gate.read_only_tools"),  # an inline table
    ("[tmux]\n'socket' = 3\n", 2, "tmux.socket"),  # a literal key
    ('[ "tmux" ]\n"socket" = 3\n', 2, "tmux.socket"),  # quoted names
    ("[warrants]\ndogs = 5\n\n[warrants.timeouts]\n", 4, "warrants.timeouts"),  # a table where a list goes
])
def test_a_bad_value_names_the_line_its_key_is_on(tmp_path, text, line, key):
    write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert str(caught.value).startswith(f"{tmp_path}/config.toml:{line}: key '{key}'"), caught.value


def test_a_bare_word_as_a_value_says_what_is_missing(cli, home):
    write(home, "[halts]\nrecord_high = yes\n")
    result = cli("hands-off", "ezra")
    assert result.code == 0 and result.err.startswith("leash: warning: config.toml cannot be used: "), result
    assert f"{home}/config.toml:2: key 'halts.record_high': Invalid value" in result.err
    assert "a string needs quotes" in result.err


def test_a_byte_order_mark_is_not_an_error(tmp_path):
    (tmp_path / "config.toml").write_bytes("\ufeff[hands_off]\ndefault_hours = 2\n".encode())
    assert load_config(tmp_path)["hands_off"]["default_hours"] == 2


def test_text_that_is_not_utf8_names_its_line(tmp_path):
    (tmp_path / "config.toml").write_bytes(b"[tmux]\nsocket = \"\xff\"\n")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert str(caught.value) == f"{tmp_path}/config.toml:2: not UTF-8 text"


def test_every_command_names_a_bad_config(cli, home):
    write(home, "[sessions]\nforget_after_days = 0\n")
    for argv, code in ((["stop", "--force", "s1"], 0), (["resume", "s1"], 0), (["release", "ezra"], 1),
                       (["doctor"], 2), (["status"], 2)):
        result = cli(*argv)
        assert result.code == code, (argv, result)
        said = result.out + result.err  # the doctor says it as one of its findings
        assert f"{home}/config.toml:2: key 'sessions.forget_after_days'" in said, (argv, result)
