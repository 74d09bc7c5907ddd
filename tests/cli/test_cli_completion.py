"""Shell completion offers names from the store — session names for the
commands that take a session, warrant ids for ``warrant pardon``, locked
entities for ``release`` — read cheaply and never loudly; and fish is served
as bash and zsh are."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from leash.core.state.sessions import SessionRegistry
from leash.core.views.protocol import StopProtocol

from ..support.checkout import ROOT, leash_argv

NOW = 1_800_000_000.0
BIN = os.path.dirname(sys.executable)  # where the `leash` the scripts run is


@pytest.fixture
def seeded(home, cli):
    protocol = StopProtocol(home)
    sessions = SessionRegistry(protocol.home, protocol.acklog)
    sessions.observe("sess-a1", now=NOW, tool="Bash", tmux_session="agent-1", tmux_pane="%1")
    sessions.observe("sess-b2", now=NOW, tool="Read")
    protocol.stops.stop("gone-one", source="ops@test", reason="r", now=NOW)
    protocol.hands_off("ezra", hours=2, now=NOW + 0)
    warrant_id = cli("warrant", "file", "agent-7", "--reason", "quiet", "--json").json()["warrant"]["id"]
    return warrant_id


def names(cli, kind: str, *more: str) -> list[str]:
    result = cli(*more, "completion", "names", kind)
    assert result.code == 0 and result.err == "", result
    return result.out.split()


def test_names_come_from_the_store(cli, seeded, monkeypatch, tmp_path):
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path / "no-tmux"))  # no tmux server to add names
    assert names(cli, "sessions") == ["agent-1", "gone-one", "sess-a1", "sess-b2"]
    assert names(cli, "warrants") == sorted(["agent-7", seeded])
    assert "ezra" in names(cli, "entities") and "@head" not in names(cli, "entities")


def test_names_follow_the_home_on_the_line(cli, seeded, tmp_path):
    assert names(cli, "sessions", "--home", str(tmp_path / "elsewhere")) == []
    assert not (tmp_path / "elsewhere").exists()  # completing never creates a home


def test_sessions_of_the_tmux_server_leash_uses(cli, home, tmux_socket):
    subprocess.run(["tmux", "-S", str(tmux_socket), "new-session", "-d", "-s", "pane-side", "sleep 600"], check=True)
    StopProtocol(home)
    (home / "config.toml").write_text(f'[tmux]\nsocket = "{tmux_socket}"\n')
    assert "pane-side" in names(cli, "sessions")


def test_a_broken_store_or_an_unknown_kind_completes_nothing_quietly(cli, home, seeded):
    (home / "sessions.json").write_text("{torn")
    (home / "hands_off_registry.json").write_text("[]")
    assert "sess-a1" not in names(cli, "sessions")
    assert names(cli, "entities") == []
    assert names(cli, "nonsense") == []
    (home / "config.toml").write_text('[store]\nurl = "postgresql://db/leash"\n')
    assert names(cli, "warrants") == []  # the shared store is never asked from a completion


def test_names_import_neither_argparse_nor_the_console(home, seeded):
    done = subprocess.run([sys.executable, "-X", "importtime"] + leash_argv()[1:] + ["completion", "names", "sessions"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0 and "sess-a1" in done.stdout
    modules = {line.split("|")[-1].strip() for line in done.stderr.splitlines()}
    assert not {"argparse", "leash.console.cli.parser", "leash.console.cli.handlers", "textual", "rich"} & modules


def script(shell: str) -> str:
    done = subprocess.run(leash_argv() + ["completion", shell], capture_output=True, text=True, cwd=ROOT,
                          timeout=60, check=True)
    return done.stdout


def bash_complete(text: str, *words: str) -> list[str]:
    words_text = " ".join(f"'{w}'" for w in words)
    program = f"""{text}
COMP_WORDS=({words_text}); COMP_CWORD=$((${{#COMP_WORDS[@]}}-1)); _leash; printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}")
    return subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True, env=env,
                          timeout=60).stdout.split()


def test_bash_offers_sessions_warrants_and_entities(seeded, home, monkeypatch, tmp_path):
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path / "no-tmux"))
    text = script("bash")
    assert set(bash_complete(text, "leash", "stop", "sess")) == {"sess-a1", "sess-b2"}
    assert bash_complete(text, "leash", "resume", "gone") == ["gone-one"]
    assert bash_complete(text, "leash", "warrant", "pardon", "w-") == [seeded]
    assert bash_complete(text, "leash", "release", "ez") == ["ezra"]
    assert bash_complete(text, "leash", "halts", "list", "--session", "agent") == ["agent-1"]
    assert bash_complete(text, "leash", "--home", str(tmp_path / "none"), "stop", "sess") == []


def test_fish_script_is_printed(cli):
    result = cli("completion", "fish")
    assert result.code == 0
    assert "complete -c leash -n '__leash_at \\'.\\'' -a 'console " in result.out
    assert "(__leash_names warrants)" in result.out and "(__leash_names sessions)" in result.out


def fish_complete(text: str, tmp_path, line: str) -> list[str]:
    (tmp_path / "leash.fish").write_text(text)
    env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}", XDG_CONFIG_HOME=str(tmp_path / "fish-config"),
               XDG_DATA_HOME=str(tmp_path / "fish-data"))
    program = f"source {tmp_path / 'leash.fish'}; complete -C {json.dumps(line)}"
    done = subprocess.run(["fish", "--no-config", "-c", program], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return [row.split("\t")[0] for row in done.stdout.splitlines()]


def test_fish_completes_commands_options_and_names(seeded, tmp_path, monkeypatch):
    if shutil.which("fish") is None:
        pytest.skip("fish is not installed")
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path / "no-tmux"))
    text = script("fish")
    assert set(fish_complete(text, tmp_path, "leash st")) == {"status", "stop", "store"}
    assert fish_complete(text, tmp_path, "leash halts ac") == ["ack"]
    assert fish_complete(text, tmp_path, "leash stop --rea") == ["--reason"]
    assert set(fish_complete(text, tmp_path, "leash stop ")) == {"agent-1", "gone-one", "sess-a1", "sess-b2"}
    assert set(fish_complete(text, tmp_path, "leash warrant pardon ")) == {"agent-7", seeded}
    assert fish_complete(text, tmp_path, "leash release ") == ["ezra"]
    assert fish_complete(text, tmp_path, "leash completion ") == ["bash", "fish", "names", "zsh"]
    assert set(fish_complete(text, tmp_path, "leash halts list --session ")) >= {"sess-a1", "agent-1"}
