"""config.toml: defaults, validation, one-line errors naming file, line and key."""
from __future__ import annotations

import pytest

from leash.core.base.config import DEFAULTS, ConfigError, load_config


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
    ("[hands_off]\ndefualt_hours = 3\n", 2, "hands_off.defualt_hours"),
    ("[nonsense]\nx = 1\n", 1, "nonsense"),
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
