"""config.toml: defaults, validation, one-line errors naming file, line and
key; an unknown key is a warning naming them too, the rest of the file used."""
from __future__ import annotations

import pytest

from leash.core.base.config import (
    DEFAULTS,
    ConfigError,
    config_notices,
    config_problem,
    config_warnings,
    load_config,
    strictest_config,
    strictest_when_broken,
)


def write(home, text):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


def test_absent_file_gives_defaults(tmp_path):
    assert load_config(tmp_path) == DEFAULTS


def test_values_override_defaults(tmp_path):
    write(tmp_path, '[gate]\nread_only_tools = ["Read"]\n[loop.gateway]\nmax_restarts = 5\n'
                    '[reply_guard.channels.signal]\nneeds_reply = ["signal", "needs-reply", "{key}"]\n'
                    'send_hint = "signal send"\n[tmux]\nsocket = "/tmp/s"\n')
    config = load_config(tmp_path)
    assert config["gate"]["read_only_tools"] == ["Read"]
    assert config["loop"]["gateway"] == {"max_restarts": 5}
    assert config["reply_guard"]["channels"]["signal"]["send_hint"] == "signal send"
    assert config["warrants"]["timeouts"] == [60, 120, 240]


@pytest.mark.parametrize("text, line, key", [
    ("[gate]\nread_only_tools = [\"Read\"\n", 2, "gate.read_only_tools"),
    ("[gate]\nread_only_tools = [\"Read\", 3x]\n", 2, "gate.read_only_tools"),
    ("[warrants]\ndogs = 0\n", 2, "warrants.dogs"),
    ("[warrants]\n\ntimeouts = [60, \"x\"]\n", 3, "warrants.timeouts"),
    ("[tmux]\nsocket = 3\n", 2, "tmux.socket"),
    ("[loop.gateway]\nmax_restarts = true\n", 2, "loop.gateway.max_restarts"),
    ("x = = 1\n", 1, "x"),
])
def test_errors_name_file_line_and_key(tmp_path, text, line, key):
    write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{tmp_path}/config.toml:{line}: key '{key}'"), message


@pytest.mark.parametrize("text, line, key, meant", [
    ("[warrants]\ntimeout = 5\n", 2, "warrants.timeout", "timeouts"),
    ("[hands_off]\ndefualt_hours = 3\n", 2, "hands_off.defualt_hours", "default_hours"),
    ("[nonsense]\nx = 1\n", 1, "nonsense", ""),
    ("[gate]\nread_only_tools = []\n\n[aprovals]\nask = []\n", 4, "aprovals", "approvals"),
    ("[loop.gateway]\nmax_restart = 5\n", 2, "loop.gateway.max_restart", "max_restarts"),
    ("[reply_guard.channels.signal]\nsend_hnt = \"x\"\n", 2, "reply_guard.channels.signal.send_hnt", "send_hint"),
    ("[console]\nkey = {stop = \"x\"}\n", 2, "console.key", "keys"),
    ('[[notify.route]]\nkind = "desktop"\nevnts = ["halt"]\n', 3, "notify.route[1].evnts", "events"),
    ("gate.read_only_tool = []\n", 1, "gate.read_only_tool", "read_only_tools"),
])
def test_an_unknown_key_is_a_warning_naming_file_line_and_key_and_the_rest_is_used(tmp_path, text, line, key,
                                                                                    meant):
    write(tmp_path, text + "[warrants]\ndogs = 2\n" if "[warrants]" not in text else text + "dogs = 2\n")
    config = load_config(tmp_path)  # no error: the file is understood
    assert config["warrants"]["dogs"] == 2  # the known keys are used
    assert config_problem(tmp_path) is None
    (warning,) = config_warnings(tmp_path)
    assert warning.startswith(f"{tmp_path}/config.toml:{line}: key '{key}': unknown "), warning
    assert "ignored" in warning and "\n" not in warning
    assert (f"(did you mean '{meant}'?)" in warning) if meant else ("did you mean" not in warning)
    assert config_notices(tmp_path) == [warning]


def test_an_unknown_key_is_left_out_of_the_config(tmp_path):
    write(tmp_path, "[warrants]\ntimeout = 5\n[nonsense]\nx = 1\n")
    config = load_config(tmp_path)
    assert "timeout" not in config["warrants"] and "nonsense" not in config
    assert config == DEFAULTS


def test_warnings_come_in_the_order_of_their_lines(tmp_path):
    write(tmp_path, '[console.keys]\nstop = "q"\nfocus_acklg = "x"\n[warrants]\ntimout = 5\n')
    lines = [int(warning.split(":")[1]) for warning in config_warnings(tmp_path)]
    assert lines == [2, 3, 5]


def test_a_broken_file_raises_unless_the_floor_is_held_and_then_none_of_its_values_is_used(tmp_path):
    write(tmp_path, "[hands_off]\ndefault_hours = 2\n[warrants]\ndogs = 0\n")
    with pytest.raises(ConfigError):
        load_config(tmp_path)
    with strictest_when_broken():
        config = load_config(tmp_path)
    assert config == strictest_config() and config["hands_off"]["default_hours"] == 24  # not the file's 2
    with pytest.raises(ConfigError):  # released
        load_config(tmp_path)
    (notice,) = config_notices(tmp_path)
    assert notice.startswith(f"config.toml cannot be used: {tmp_path}/config.toml:4: key 'warrants.dogs'")
    assert config_warnings(tmp_path) == []


def test_a_valid_file_is_the_same_with_the_floor_held(tmp_path):
    write(tmp_path, "[hands_off]\ndefault_hours = 2\n")
    with strictest_when_broken():
        assert load_config(tmp_path)["hands_off"]["default_hours"] == 2
