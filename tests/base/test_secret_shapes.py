"""Secret shapes gitleaks' default rules miss, masked before anything is
stored: a password given to a command-line option, a Twilio account SID with
its auth token, an OpenAI project key without gitleaks' marker. A failed
command holding one is recorded in halts.db's ``attempts`` masked."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from leash.core.base.secrets import mask
from leash.core.hook.hooks import answer

FIXTURES = Path(__file__).parent.parent / "fixtures" / "claude_code"
TWILIO = "AC0123456789abcdef0123456789abcdef:9f8e7d6c5b4a39281706f5e4d3c2b1a0"
OPENAI = "sk-proj-Zq8xR2vN7mK4pL9wT3yB6cF1hJ5dG0sAe2Uu"
SHAPES = {
    "mysql -u root --password hunter2sekrit db": "hunter2sekrit",
    "psql --password=s3cr3tV4lue": "s3cr3tV4lue",
    f"curl -u {TWILIO} https://api.twilio.com/2010-04-01/Accounts": TWILIO.split(":")[1],
    f"export OPENAI_API_KEY={OPENAI}": OPENAI,
}


@pytest.mark.parametrize("command, secret", SHAPES.items())
def test_each_shape_is_masked(command, secret):
    masked = mask(command)
    assert secret not in masked and "[REDACTED:" in masked


@pytest.mark.parametrize("command", ["cmd --token $TOKEN", "ls --password-file /etc/pw", "git --pass-through x",
                                     "deploy --secret <your-secret>"])
def test_what_is_no_secret_stays(command):
    assert mask(command) == command


def test_a_failed_command_is_recorded_masked(home):
    data = json.loads((FIXTURES / "PostToolUseFailure.json").read_text())
    for command in SHAPES:
        payload = dict(data, tool_input={"command": command}, error=f"failed: {command}")
        answer("post-tool-use-failure", json.dumps(payload).encode(), home=str(home), env={}, now=1_800_000_000.0)
    with sqlite3.connect(Path(home) / "halts.db") as db:
        stored = json.dumps(db.execute("SELECT * FROM attempts").fetchall())
    assert stored.count("REDACTED") >= len(SHAPES)
    for secret in SHAPES.values():
        assert secret not in stored
