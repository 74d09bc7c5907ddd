"""Which agent CLI a process is, on the command lines the real CLIs run with
(tests/e2e/agents/PROCESS_FACTS.md): Gemini CLI's first node and its
relaunched child, Codex CLI's npm wrapper, native binary and background
app-server, Claude Code's native binary and npm script."""
from __future__ import annotations

import pytest

from leash.core.base.agentprograms import is_headless, is_shared_server, name_of, program_of

G = "/work/.cache/gemini-cli/0.61.0/node_modules/.bin/gemini"
V = "/work/.cache/codex-cli/0.171.0/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
SERVER = "/root/.codex/packages/app-server-daemon/releases/0.171.0-x86_64-unknown-linux-musl/bin/codex"


@pytest.mark.parametrize("comm, argv, cli, headless", [
    ("node", ["node", G, "--approval-mode", "yolo"], "gemini", False),
    ("node", ["/usr/bin/node", "--max-old-space-size=12052", G, "--approval-mode", "yolo"], "gemini", False),
    ("node", ["/usr/bin/node", "--max-old-space-size=12052", G, "-p", "go", "--output-format", "stream-json"],
     "gemini", True),
    ("node", ["node", "/usr/lib/node_modules/@google/gemini-cli/bundle/gemini.js", "--prompt=go"], "gemini", True),
    ("codex", [V, "exec", "--json", "--skip-git-repo-check", "fix it"], "codex", True),
    ("codex", [V, "--dangerously-bypass-approvals-and-sandbox"], "codex", False),
    ("codex", [V, "--no-daemon"], "codex", False),
    ("node", ["node", "/x/node_modules/.bin/codex", "exec", "fix it"], "codex", True),
    ("codex", [SERVER, "app-server", "--listen", "unix://", "--managed-daemon"], "codex", False),
    ("claude", ["claude", "-p", "go"], "claude", True),
    ("claude", ["claude", "--resume", "abc"], "claude", False),
    ("node", ["node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js", "--print", "go"], "claude", True),
])
def test_each_cli_is_told_by_its_name_or_its_script(comm, argv, cli, headless):
    program = program_of(comm, argv)
    assert program is not None and program.cli == cli
    assert is_headless(argv, program) is headless
    assert is_headless(argv) is headless  # told from the command line alone too


@pytest.mark.parametrize("comm, argv", [
    ("node", ["node", "/srv/app/server.js"]),
    ("python3", ["python3", "gemini.py"]),  # a script named like a CLI, run by no JavaScript runtime
    ("bash", ["bash", "-c", "codex exec go"]),  # a shell about to run one is not the CLI
    ("node", ["node"]),
    ("", []),
])
def test_other_programs_are_no_agent(comm, argv):
    assert program_of(comm, argv) is None and not is_headless(argv)


def test_a_prompt_after_double_dash_is_not_read_as_a_flag():
    assert not is_headless(["claude", "--", "-p"])
    assert not is_headless([V, "--", "exec"])


def test_codex_app_server_serves_many_terminal_uis():
    assert is_shared_server([SERVER, "app-server", "--listen", "unix://", "--managed-daemon"])
    assert not is_shared_server([V, "exec", "go"]) and not is_shared_server([V, "--no-daemon"])
    assert not is_shared_server(["claude", "app-server"])  # not a word Claude Code knows


def test_names_as_people_say_them():
    assert [name_of(cli) for cli in ("claude", "gemini", "codex")] == ["Claude Code", "Gemini CLI", "Codex CLI"]
    assert name_of("aider") == name_of(None) == "its agent CLI"
