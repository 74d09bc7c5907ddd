"""Secrets from gitleaks' ruleset: every provider's sample is found by the
``secrets_exposure`` condition and masked in everything leash stores.

Samples are built from the shape of each rule's regex (a prefix and random
characters from the rule's alphabet, fixed seeds), assembled at run time so
this file holds no credential-shaped string.
"""
from __future__ import annotations

import os
import random
import sqlite3
import string

import pytest

from leash.core.base.secrets import OVERLAP, UNSCANNED, WINDOW, find_secrets, mask, rule_count, scan
from leash.core.state.halts.api import check_halt_conditions

LOWER_ALNUM = string.ascii_lowercase + string.digits
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
WORD = ALNUM + "_"
URLSAFE = ALNUM + "_-"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def chars(alphabet: str, count: int, seed: str) -> str:
    """``count`` characters from ``alphabet``, the same for the same seed."""
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(count))


def joined(*parts: str) -> str:
    return "".join(parts)


def private_key_block() -> tuple[str, str]:
    body = "\n".join(chars(ALNUM + "+/", 64, f"pem{i}") for i in range(6))
    block = joined("-----BEGIN RSA ", "PRIVATE KEY-----\n", body, "\n-----END RSA ", "PRIVATE KEY-----")
    return block, body.splitlines()[2]


def samples() -> list[tuple[str, str, str, str]]:
    """(provider, the rule that must find it, a command holding it, the secret)."""
    s = {
        "npm": joined("npm", "_", chars(LOWER_ALNUM, 36, "npm")),
        "pypi": joined("pypi-", "AgEIcHlwaS5vcmc", chars(URLSAFE, 70, "pypi")),
        "huggingface": joined("hf", "_", chars(string.ascii_letters, 34, "hf")),
        "twilio": joined("S", "K", chars(HEX, 32, "twilio")),
        "azure": joined(chars(ALNUM, 3, "az1"), "8Q", "~", chars(ALNUM + "_~.-", 34, "az2")),
        "sendgrid": joined("SG", ".", chars(URLSAFE, 22, "sg1"), ".", chars(URLSAFE, 43, "sg2")),
        "shopify": joined("shpat", "_", chars(HEX, 32, "shopify")),
        "digitalocean": joined("dop_", "v1_", chars(HEX, 64, "do")),
        "stripe-test": joined("sk_", "test_", chars(ALNUM, 24, "stripe")),
        "github": joined("gh", "p_", chars(ALNUM, 36, "ghp")),
        "github-fine-grained": joined("github", "_pat_", chars(WORD, 82, "ghfg")),
        "gitlab": joined("gl", "pat-", chars(URLSAFE, 20, "glpat")),
        "slack-bot": joined("xo", "xb-", chars(string.digits, 12, "sb1"), "-", chars(string.digits, 13, "sb2"), "-",
                            chars(ALNUM, 24, "sb3")),
        "slack-webhook": joined("https://hooks.", "slack.com/services/T", chars(ALNUM, 10, "sw1"), "/B",
                                chars(ALNUM, 10, "sw2"), "/", chars(ALNUM, 24, "sw3")),
        "aws": joined("AK", "IA", chars("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16, "aws")),
        "gcp": joined("AI", "za", chars(URLSAFE, 35, "gcp")),
        "openai": joined("sk-", "proj-", chars(URLSAFE, 74, "oa1"), "T3Blbk", "FJ", chars(URLSAFE, 74, "oa2")),
        "anthropic": joined("sk-", "ant-api03-", chars(URLSAFE, 93, "ant"), "AA"),
        "jwt": joined("ey", chars(ALNUM, 30, "jwt1"), ".ey", chars(ALNUM, 60, "jwt2"), ".", chars(URLSAFE, 43, "jwt3")),
        "mailgun": joined("key", "-", chars(HEX, 32, "mailgun")),
        "mailchimp": joined(chars(HEX, 32, "mailchimp"), "-us12"),
        "heroku": joined("HRKU", "-AA", chars(URLSAFE, 58, "heroku")),
        "databricks": joined("da", "pi", chars(HEX, 32, "databricks")),
        "doppler": joined("dp.", "pt.", chars(ALNUM, 43, "doppler")),
        "dropbox": chars(LOWER_ALNUM, 15, "dropbox"),
        "discord": chars(HEX, 64, "discord"),
        "linear": joined("lin_", "api_", chars(ALNUM, 40, "linear")),
        "postman": joined("PM", "AK-", chars(HEX, 24, "pm1"), "-", chars(HEX, 34, "pm2")),
        "pulumi": joined("pul", "-", chars(HEX, 40, "pulumi")),
        "vault": joined("hv", "s.", chars(URLSAFE, 95, "vault")),
        "square": joined("sq0", "atp-", chars(URLSAFE, 30, "square")),
        "telegram": joined(chars(string.digits, 10, "tg1"), ":A", chars(URLSAFE, 34, "tg2")),
        "grafana": joined("gl", "sa_", chars(ALNUM, 32, "gf1"), "_", chars(HEX, 8, "gf2")),
        "new-relic": joined("NR", "AK-", chars(string.ascii_uppercase + string.digits, 27, "nr")),
        "sentry": joined("sntr", "yu_", chars(HEX, 64, "sentry")),
        "atlassian": joined("ATATT", "3", chars(URLSAFE, 186, "atl")),
        "age": joined("AGE-SECRET", "-KEY-1", chars(BECH32, 58, "age")),
        "alibaba": joined("LT", "AI", chars(ALNUM, 20, "alibaba")),
        "flyio": joined("fo", "1_", chars(URLSAFE, 43, "fly")),
        "rubygems": joined("ruby", "gems_", chars(HEX, 48, "gems")),
        "shippo": joined("shippo", "_live_", chars(HEX, 40, "shippo")),
        "planetscale": joined("pscale", "_pw_", chars(URLSAFE, 43, "pscale")),
        "notion": joined("nt", "n_", chars(string.digits, 11, "nt1"), chars(ALNUM, 35, "nt2")),
        "perplexity": joined("pp", "lx-", chars(ALNUM, 48, "pplx")),
        "easypost": joined("EZ", "AK", chars(ALNUM, 54, "ezak")),
        "pgpassword": chars(ALNUM, 14, "pg"),
        "url-password": chars(ALNUM, 16, "url"),
        "curl-user": chars(ALNUM, 14, "curl"),
    }
    block, key_line = private_key_block()
    return [
        ("npm", "npm-access-token", f"npm config set //registry.npmjs.org/:_authToken {s['npm']}", s["npm"]),
        ("PyPI", "pypi-upload-token", f"twine upload -u __token__ -p {s['pypi']} dist/*", s["pypi"]),
        ("Hugging Face", "huggingface-access-token", f"huggingface-cli login --token {s['huggingface']}",
         s["huggingface"]),
        ("Twilio", "twilio-api-key", f"export TWILIO_API_KEY={s['twilio']}", s["twilio"]),
        ("Azure", "azure-ad-client-secret", f"az login --service-principal -u app -p {s['azure']} --tenant t",
         s["azure"]),
        ("SendGrid", "sendgrid-api-token", f"export SENDGRID_API_KEY={s['sendgrid']}", s["sendgrid"]),
        ("Shopify", "shopify-access-token", f"curl -H 'X-Shopify-Access-Token: {s['shopify']}' https://x.myshopify.com",
         s["shopify"]),
        ("DigitalOcean", "digitalocean-pat", f"doctl auth init -t {s['digitalocean']}", s["digitalocean"]),
        ("Stripe", "stripe-access-token", f"stripe charges list --api-key {s['stripe-test']}", s["stripe-test"]),
        ("GitHub", "github-pat", f"git clone https://github.com/o/r.git --config token {s['github']}", s["github"]),
        ("GitHub fine-grained", "github-fine-grained-pat", f"gh auth login --with-token <<< {s['github-fine-grained']}",
         s["github-fine-grained"]),
        ("GitLab", "gitlab-pat", f"glab auth login --token {s['gitlab']}", s["gitlab"]),
        ("Slack", "slack-bot-token", f"export SLACK_BOT_TOKEN={s['slack-bot']}", s["slack-bot"]),
        ("Slack webhook", "slack-webhook-url", f"curl -X POST {s['slack-webhook']} -d '{{}}'",
         s["slack-webhook"].rsplit("/", 1)[1]),
        ("AWS", "aws-access-token", f"export AWS_ACCESS_KEY_ID={s['aws']}", s["aws"]),
        ("GCP", "gcp-api-key", f"curl 'https://maps.googleapis.com/x?key={s['gcp']}'", s["gcp"]),
        ("OpenAI", "openai-api-key", f"export OPENAI_API_KEY={s['openai']}", s["openai"]),
        ("Anthropic", "anthropic-api-key", f"export ANTHROPIC_API_KEY={s['anthropic']}", s["anthropic"]),
        ("JWT", "jwt", f"curl -H 'Authorization: Bearer {s['jwt']}' https://api.example.com", s["jwt"]),
        ("private key", "private-key", f"printf '%s' '{block}' > deploy_key", key_line),
        ("Mailgun", "mailgun-private-api-token", f"export MAILGUN_API_KEY={s['mailgun']}", s["mailgun"]),
        ("Mailchimp", "mailchimp-api-key", f"export MAILCHIMP_KEY={s['mailchimp']}", s["mailchimp"]),
        ("Heroku", "heroku-api-key-v2", f"heroku config --token {s['heroku']}", s["heroku"]),
        ("Databricks", "databricks-api-token", f"databricks configure --token {s['databricks']}", s["databricks"]),
        ("Doppler", "doppler-api-token", f"doppler configure set token {s['doppler']}", s["doppler"]),
        ("Dropbox", "dropbox-api-token", f"export DROPBOX_KEY={s['dropbox']}", s["dropbox"]),
        ("Discord", "discord-api-token", f"export DISCORD_TOKEN={s['discord']}", s["discord"]),
        ("Linear", "linear-api-key", f"curl -H 'Authorization: {s['linear']}' https://api.linear.app", s["linear"]),
        ("Postman", "postman-api-token", f"newman run c.json --postman-api-key {s['postman']}", s["postman"]),
        ("Pulumi", "pulumi-api-token", f"PULUMI_ACCESS_TOKEN={s['pulumi']} pulumi up", s["pulumi"]),
        ("Vault", "vault-service-token", f"vault login {s['vault']}", s["vault"]),
        ("Square", "square-access-token", f"export SQUARE_TOKEN={s['square']}", s["square"]),
        ("Telegram", "telegram-bot-api-token", f"export TELEGRAM_BOT_TOKEN={s['telegram']}", s["telegram"]),
        ("Grafana", "grafana-service-account-token", f"grafana-cli --token {s['grafana']}", s["grafana"]),
        ("New Relic", "new-relic-user-api-key", f"export NEW_RELIC_API_KEY={s['new-relic']}", s["new-relic"]),
        ("Sentry", "sentry-user-token", f"sentry-cli --auth-token {s['sentry']} releases list", s["sentry"]),
        ("Atlassian", "atlassian-api-token", f"curl -u me@example.com:{s['atlassian']} https://x.atlassian.net",
         s["atlassian"]),
        ("age", "age-secret-key", f"echo {s['age']} > key.txt", s["age"]),
        ("Alibaba", "alibaba-access-key-id", f"aliyun configure --access-key-id {s['alibaba']}", s["alibaba"]),
        ("Fly.io", "flyio-access-token", f"flyctl deploy --access-token {s['flyio']}", s["flyio"]),
        ("RubyGems", "rubygems-api-token", f"GEM_HOST_API_KEY={s['rubygems']} gem push x.gem", s["rubygems"]),
        ("Shippo", "shippo-api-token", f"export SHIPPO_TOKEN={s['shippo']}", s["shippo"]),
        ("PlanetScale", "planetscale-password", f"mysql -u app --password={s['planetscale']} -h aws.connect.psdb.cloud",
         s["planetscale"]),
        ("Notion", "notion-api-token", f"export NOTION_TOKEN={s['notion']}", s["notion"]),
        ("Perplexity", "perplexity-api-key", f"export PPLX_KEY={s['perplexity']}", s["perplexity"]),
        ("EasyPost", "easypost-api-token", f"export EASYPOST_API_KEY={s['easypost']}", s["easypost"]),
        ("curl user", "curl-auth-user", f"curl -u admin:{s['curl-user']} https://ci.example.com/api", s["curl-user"]),
        ("PGPASSWORD", "pgpassword", f"PGPASSWORD={s['pgpassword']} psql -h db -U app", s["pgpassword"]),
        ("URL password", "url-credentials", f"psql postgresql://app:{s['url-password']}@db.internal/app",
         s["url-password"]),
        ("password assignment", "password-assignment", f"DB_PASSWORD={s['pgpassword']}x ./manage.py migrate",
         s["pgpassword"] + "x"),
    ]


SAMPLES = samples()
IDS = [sample[0] for sample in SAMPLES]


def halt_input(command: str) -> dict:
    return {"session_token": "sess_secrets", "current_context": {"operation": "deploy", "commands": [command]}}


# ------------------------------------------------------------------ the ruleset
def test_the_ruleset_is_gitleaks_default_with_at_least_150_rules():
    from leash.core.base import gitleaks_rules

    assert len(gitleaks_rules.RULES) >= 150
    assert gitleaks_rules.GITLEAKS_VERSION.startswith("v8.")
    from leash.core.base.secrets import HAND_RULES

    assert rule_count() == len(gitleaks_rules.RULES) + len(HAND_RULES) == len(gitleaks_rules.RULES) + 7
    assert all(keywords and keywords == tuple(k.lower() for k in keywords)
               for _, _, _, _, keywords, *_ in gitleaks_rules.RULES)


def test_there_is_a_sample_for_at_least_42_providers():
    assert len({provider for provider, *_ in SAMPLES}) >= 42


@pytest.mark.parametrize("provider, rule, command, secret", SAMPLES, ids=IDS)
def test_each_sample_is_found_by_its_rule_and_halts(home, provider, rule, command, secret):
    assert rule in find_secrets(command)
    result = check_halt_conditions(halt_input(command), home=home, record=False, record_high=False)
    reasons = {r["condition_name"]: r["description"] for r in result["halt_reasons"]}
    assert result["should_halt"] is True
    assert rule in reasons["secrets_exposure"]
    assert secret not in repr(result)


@pytest.mark.parametrize("provider, rule, command, secret", SAMPLES, ids=IDS)
def test_each_sample_is_masked(provider, rule, command, secret):
    masked = mask(command)
    assert secret not in masked
    assert "[REDACTED:" in masked
    assert find_secrets(masked) == []
    assert mask(masked) == masked


# ------------------------------------------------------------------ nothing stored holds a secret
def stored_bytes(home) -> dict[str, bytes]:
    """Every file under the home, the database's WAL and journals included."""
    files = {}
    for directory, _, names in os.walk(home):
        for name in names:
            path = os.path.join(directory, name)
            with open(path, "rb") as handle:
                files[os.path.relpath(path, home)] = handle.read()
    return files


def assert_no_secret_stored(home, secrets: list[str]) -> None:
    files = stored_bytes(home)
    assert files, "nothing was stored"
    leaks = [(name, secret[:12]) for name, data in files.items() for secret in secrets
             if secret.encode() in data or secret.encode("utf-16-le") in data]
    assert leaks == []


def hook_input(session: str, command: str, cwd: str) -> bytes:
    import json

    return json.dumps({"session_id": session, "hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": command}, "cwd": cwd}).encode()


def test_a_hook_denies_every_sample_and_stores_none(cli, home, tmp_path):
    for index, (provider, _rule, command, secret) in enumerate(SAMPLES):
        result = cli("hook", "pre-tool-use", stdin=hook_input(f"agent-{index}", command, str(tmp_path)))
        assert result.code == 0 and "deny" in result.out, provider
        assert "secrets_exposure" in result.out and secret not in result.out
    assert os.path.exists(home / "halts.db")
    assert_no_secret_stored(home, [secret for *_, secret in SAMPLES])


def test_a_hook_process_stores_no_sample(leash_proc, home, tmp_path):
    command = " && ".join(command for _, _, command, _ in SAMPLES)
    result = leash_proc("hook", "pre-tool-use", stdin=hook_input("agent-all", command, str(tmp_path)))
    assert result.code == 0 and "deny" in result.out
    assert_no_secret_stored(home, [secret for *_, secret in SAMPLES])


def test_operator_reasons_never_store_a_sample(cli, home):
    for index, (provider, _rule, command, _secret) in enumerate(SAMPLES):
        reason = f"leaked {command}"
        assert cli("stop", "--force", f"sess-{index}", "--reason", reason).code == 0, provider
        assert cli("hands-off", f"entity-{index}", "--reason", reason).code == 0, provider
        assert cli("warrant", "file", f"target-{index}", "--reason", reason).code == 0, provider
    assert cli("stop", "--all", "--reason", SAMPLES[0][2]).code == 0
    assert_no_secret_stored(home, [secret for *_, secret in SAMPLES])
    status = cli("status", "--json")
    assert status.code == 0 and "[REDACTED:" in status.out
    assert all(secret not in status.out for *_, secret in SAMPLES)
    log = cli("log", "--json")
    assert all(secret not in log.out for *_, secret in SAMPLES)


def test_a_stopped_session_is_told_the_masked_reason(cli, home, tmp_path):
    provider, rule, command, secret = SAMPLES[0]
    assert cli("stop", "--force", "sess-told", "--reason", f"stop: {command}").code == 0
    result = cli("hook", "pre-tool-use", stdin=hook_input("sess-told", "ls", str(tmp_path)))
    assert "deny" in result.out and "[REDACTED:" in result.out and secret not in result.out


def test_the_ack_log_masks_reason_and_extras(home):
    from leash.core.state.acklog import AckLog

    provider, rule, command, secret = SAMPLES[1]
    line = AckLog(home).append("stop_ack", source="ops", session_id="s", reason=command, note=command,
                               details={"cmd": [command]}, count=3)
    assert secret not in repr(line) and line["count"] == 3
    assert AckLog(home).verify().ok
    assert_no_secret_stored(home, [secret])


# ------------------------------------------------------------------ large inputs
def test_a_secret_deep_in_a_one_mebibyte_command_is_found_and_masked():
    provider, rule, command, secret = SAMPLES[9]  # GitHub
    filler = "echo build step && make all -j4 && ls -la src/ && "
    text = filler * ((1 << 20) // len(filler)) + command + " && " + filler * 100
    kinds = find_secrets(text)
    masked = mask(text)
    assert rule in kinds
    assert secret not in masked and len(masked) < len(text)


def every_keyword_token(size: int) -> str:
    from leash.core.base import gitleaks_rules

    keywords = "".join(sorted({k for rule in gitleaks_rules.RULES for k in rule[4]}))
    return (keywords * (size // len(keywords) + 1))[:size]


def test_one_mebibyte_token_of_every_keyword_fails_safe_past_the_run_budget():
    """Every rule would run in every window: the scan stops at its budget, and
    what it could not scan counts as a secret (the halt fires) and is masked."""
    secret = SAMPLES[0][3]  # npm, at the very end of the token
    text = every_keyword_token(1 << 20) + " " + secret
    findings = scan(text)
    assert UNSCANNED in {kind for _, _, kind in findings}
    assert any(start <= len(text) - len(secret) and end >= len(text) for start, end, _ in findings)
    masked = mask(text)
    assert secret not in masked and len(masked) < len(text) // 2


def test_a_keyword_dense_text_within_the_budget_is_scanned_rule_by_rule():
    secret = SAMPLES[0][3]
    text = every_keyword_token(WINDOW // 2) + " " + secret
    kinds = find_secrets(text)
    assert "npm-access-token" in kinds and UNSCANNED not in kinds


def test_a_secret_across_a_window_edge_is_masked_whole():
    provider, rule, command, secret = SAMPLES[16]  # OpenAI, 164 characters
    for offset in range(WINDOW - OVERLAP - 170, WINDOW - OVERLAP + 10, 7):
        text = "x" * offset + " " + command + " " + "y" * WINDOW
        assert secret not in mask(text), offset
        assert rule in find_secrets(text), offset


def test_a_private_key_longer_than_the_overlap_is_masked_to_its_end():
    body = "\n".join(chars(ALNUM + "+/", 64, f"long{i}") for i in range(120))  # ~7.8 KB
    block = joined("-----BEGIN OPENSSH ", "PRIVATE KEY-----\n", body, "\n-----END OPENSSH ", "PRIVATE KEY-----")
    text = "filler " * 2000 + block + " tail"
    masked = mask(text)
    assert all(line not in masked for line in body.splitlines())
    assert masked.endswith("[REDACTED:private-key] tail")


@pytest.mark.parametrize("text", [
    "password=$PASSWORD",
    "export DB_PASSWORD=${DB_PASSWORD}",
    "api_key=<your-key>",
    "git commit -m 'rotate the api key'",
    "export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
    "curl -u user:$TOKEN https://example.com",
    "PGPASSWORD=$PGPASS psql",
])
def test_references_and_examples_are_not_secrets(text):
    assert find_secrets(text) == []
    assert mask(text) == text


def test_a_database_row_written_before_masking_is_visible_to_the_walk(home):
    """The walk reads the database's bytes, so a raw value in it is found."""
    os.makedirs(home, exist_ok=True)
    secret = SAMPLES[3][3]
    connection = sqlite3.connect(home / "probe.db")
    connection.execute("CREATE TABLE t (v TEXT)")
    connection.execute("INSERT INTO t VALUES (?)", (secret,))
    connection.commit()
    connection.close()
    with pytest.raises(AssertionError):
        assert_no_secret_stored(home, [secret])
