"""A secret inside a URL is masked and the URL's host and path stay readable:
``git push https://x-access-token:<token>@github.com/acme/app.git main``
reaches the operator as ``…x-access-token:[REDACTED:github-pat]@github.com/
acme/app.git main``, whichever rule found the token, and nothing that a rule
had swallowed past the ``@`` escapes the scan.

Tokens are assembled at run time from fixed seeds, so this file holds no
credential-shaped string.
"""
from __future__ import annotations

import random
import string

import pytest

from leash.core.base.secrets import find_secrets, mask
from leash.core.notify.events import clean
from leash.core.policy.approvalsummary import detail, one_line

ALNUM = string.ascii_letters + string.digits


def chars(alphabet: str, count: int, seed: str) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(count))


GHP = "gh" + "p_" + chars(ALNUM, 36, "url-ghp")
FINE_GRAINED = "github" + "_pat_" + chars(ALNUM + "_", 82, "url-ghfg")
SHORT_FINE_GRAINED = "github" + "_pat_" + chars(ALNUM + "_", 40, "url-ghfg-short")
PASSWORD = chars(ALNUM, 18, "url-password")
SLACK = "xo" + "xb-" + chars(string.digits, 12, "url-sb1") + "-" + chars(string.digits, 13, "url-sb2") + "-" + \
    chars(ALNUM, 24, "url-sb3")
AWS_ID = "AK" + "IA" + chars("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16, "url-aws")
AWS_SECRET = chars(ALNUM, 40, "url-aws-secret")

# (what the agent runs, what the operator must read, the secrets it held)
CASES = {
    "GitHub PAT": (f"git push https://x-access-token:{GHP}@github.com/acme/app.git main",
                   "git push https://x-access-token:[REDACTED:github-pat]@github.com/acme/app.git main", [GHP]),
    "GitHub fine-grained PAT": (
        f"git push https://x-access-token:{FINE_GRAINED}@github.com/acme/app.git main",
        "git push https://x-access-token:[REDACTED:github-fine-grained-pat]@github.com/acme/app.git main",
        [FINE_GRAINED]),
    "github_pat_ of no known length": (
        f"git push https://x-access-token:{SHORT_FINE_GRAINED}@github.com/acme/app.git main",
        "git push https://x-access-token:[REDACTED:{}]@github.com/acme/app.git main", [SHORT_FINE_GRAINED]),
    "user:password URL": (f"git clone https://deploy:{PASSWORD}@git.example.com/acme/app.git",
                          "git clone https://deploy:[REDACTED:url-credentials]@git.example.com/acme/app.git",
                          [PASSWORD]),
    "Slack token as a URL password": (
        f"curl https://bot:{SLACK}@hooks.example.com/services/x",
        "curl https://bot:[REDACTED:slack-bot-token]@hooks.example.com/services/x", [SLACK]),
    "AWS key pair in a URL": (
        f"duplicity /srv s3://{AWS_ID}:{AWS_SECRET}@s3.amazonaws.com/backups/srv",
        "duplicity /srv s3://[REDACTED:aws-access-token]:[REDACTED:url-credentials]@s3.amazonaws.com/backups/srv",
        [AWS_ID, AWS_SECRET]),
    "token-named user": (f"git push https://token:{PASSWORD}@git.example.com/acme/app.git HEAD:main",
                         "git push https://token:[REDACTED:{}]@git.example.com/acme/app.git HEAD:main", [PASSWORD]),
}


def expected_shape(masked: str, expected: str) -> bool:
    """``expected`` with ``{}`` standing for any one rule id."""
    if "{}" not in expected:
        return masked == expected
    before, after = expected.split("{}")
    middle = masked[len(before):len(masked) - len(after)]
    return masked.startswith(before) and masked.endswith(after) and middle.replace("-", "").isalnum()


@pytest.mark.parametrize("command, expected, secrets", CASES.values(), ids=list(CASES))
def test_the_secret_is_masked_and_host_and_path_stay(command, expected, secrets):
    masked = mask(command)
    assert expected_shape(masked, expected), masked
    assert not any(secret in masked for secret in secrets)
    assert find_secrets(masked) == [] and mask(masked) == masked


@pytest.mark.parametrize("command, expected, secrets", CASES.values(), ids=list(CASES))
def test_the_operator_reads_where_the_push_goes(command, expected, secrets):
    """The approval summary, its detail line and a notification's text."""
    for shown in (one_line("Bash", {"command": command}), detail("Bash", {"command": command}),
                  clean(command, 300)):
        assert "@" in shown and expected.split("@", 1)[1] in shown, shown
        assert not any(secret in shown for secret in secrets)


def test_a_secret_after_the_host_is_still_found():
    """A rule whose value ran on past the ``@`` looks again from there: a
    second credential later in the same word is masked too."""
    later = chars(ALNUM, 20, "url-later")
    command = f"curl https://x-access-token:{GHP}@api.example.com/v1/items?access_token={later}"
    masked = mask(command)
    assert GHP not in masked and later not in masked
    assert "@api.example.com/v1/items?access_token=[REDACTED:" in masked


def test_a_password_holding_a_raw_at_sign_is_masked_whole():
    """The credentials end at the authority's last ``@``."""
    command = f"git push https://x-access-token:{GHP}@x{PASSWORD}@github.com/acme/app.git main"
    masked = mask(command)
    assert GHP not in masked and PASSWORD not in masked
    assert masked.endswith("@github.com/acme/app.git main")


def test_a_secret_not_in_a_url_is_masked_as_before():
    command = f"export GITHUB_TOKEN={GHP}@github.com/acme"
    masked = mask(command)
    assert GHP not in masked
