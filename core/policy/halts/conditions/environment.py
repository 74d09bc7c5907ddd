"""Environment: test/production mix, credential confusion, shared instances."""
from __future__ import annotations

import re

from leash.core.base.lazy_re import lazy
from leash.core.policy.halts.conditions.registry import Finding, condition

# Environment tags found in words: a tag stands alone or is delimited by
# = : / @ . _ - (so "prod-db", "--env=staging", "db.test.internal" count).
_TAGS = {
    "production": ("prod", "production", "prd", "live"),
    "staging": ("staging", "stage", "stg", "preprod"),
    "test": ("test", "testing", "qa", "uat", "sandbox"),
    "development": ("dev", "development", "local"),
}
_TAG_OF = {t: env for env, tags in _TAGS.items() for t in tags}
# A credential named in a command: an env var whose name says what it is (its
# value too, for variables that select an account), a --profile flag, or a file.
_CREDENTIAL = lazy(
    r"(?i)(?P<var>\b[A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|PROFILE|KUBECONFIG)[A-Z0-9_]*)"
    r"(?:=(?P<value>\S+))?"
    r"|--profile[= ](?P<profile>\S+)"
    r"|(?P<file>(?<![^\s=\"'])[^\s=\"']*(?:\.env\.\w+|credentials[\w.-]*|\.(?:pem|key|p12|pfx|kubeconfig))(?![\w.-]))")
# Variables whose value, not name, says which account is used.
_SELECTORS = ("PROFILE", "KUBECONFIG", "CREDENTIALS")


_DELIMITERS = lazy(r"[\s=:/@._-]+")
# Text holding none of these substrings holds no tag (one search instead of ten ``in`` tests).
_TAG_HINT = lazy("pr|liv|stag|stg|test|qa|uat|sandbox|dev|local")
# Tags and credential names are short words: longer words (code, data) are
# not searched for them, and at most WORD_CHARS_READ characters of words per
# check are, so these rules cost a bounded amount of work on any command.
MAX_TAGGED_WORD = 256
WORD_CHARS_READ = 64 * 1024


def environment_of(text: str) -> set[str]:
    """Environments whose tags stand alone in ``text`` (between ``= : / @ . _ -``
    or whitespace); split, then looked up, so the cost is one pass."""
    lowered = text.lower()
    if not _TAG_HINT.search(lowered):
        return set()
    return {_TAG_OF[w] for w in _DELIMITERS.split(lowered) if w in _TAG_OF}


def short_words(ctx, *, written: bool = False) -> list:
    """(command, its short words) for every command, within WORD_CHARS_READ
    (read once per check: three rules ask)."""
    return ctx.derived(("short_words", written), lambda: _short_words(ctx, written))


def _short_words(ctx, written: bool) -> list:
    found = []
    budget = WORD_CHARS_READ
    for command in ctx.simple_commands():
        words = [w for w in (command.written if written else command.argv[1:]) if len(w) <= MAX_TAGGED_WORD]
        budget -= len(words) + sum(map(len, words))
        if budget < 0:
            break
        found.append((command, words))
    return found


def declared_environment(ctx) -> str | None:
    found = environment_of(f" {ctx.environment} ") if ctx.environment else set()
    return next(iter(found)) if len(found) == 1 else None


_TEST_RUNNERS = frozenset({"pytest", "tox", "nox", "jest", "vitest", "mocha", "go", "cargo", "npm", "make"})
_CODE_FILES = (".py", ".js", ".ts")


def command_environments(ctx) -> dict[str, list[str]]:
    """Environment -> commands that name it (program names and test runners aside)."""
    found: dict[str, list[str]] = {}
    for command, words in short_words(ctx):
        words = [w for w in words if not w.startswith("tests/") and not w.endswith(_CODE_FILES)]
        if command.program in _TEST_RUNNERS:
            words = [w for w in words if "=" in w or "@" in w or ":" in w]  # "npm test" is not an environment
        for env in environment_of(" ".join(words)):
            found.setdefault(env, []).append(" ".join(command.argv))
    return found


@condition("test_production_mix", "environment", "critical", pure=True, write_or_exec=True)
def test_production_mix(ctx, threshold):
    """Fires when environment boundaries cannot be verified: production and a
    non-production environment (test, staging, development) are named together
    — in ``environment`` and the commands, or within the commands — e.g.
    environment "test" and ``psql -h prod-db``, or ``pg_dump prod-db | psql
    test-db``. Environment tags are words like prod/production/live,
    staging/stage, test/qa/uat/sandbox, dev/local, standing alone or between
    ``= : / @ . _ -``."""
    declared = declared_environment(ctx)
    named = command_environments(ctx)
    environments = set(named) | ({declared} if declared else set())
    if "production" not in environments or len(environments) < 2:
        return None
    others = sorted(environments - {"production"})
    evidence = [c for env in sorted(named) for c in named[env]]
    return Finding(f"Cannot verify environment boundaries: production mixed with {', '.join(others)}"
                   + (f" ({'; '.join(sorted(set(evidence)))})" if evidence else ""))


def _may_name_credential(word: str) -> bool:
    upper = word.upper()
    return any(k in upper for k in ("KEY", "TOKEN", "SECRET", "PASSW", "CREDENTIAL", "PROFILE", ".ENV.", ".PEM",
                                    ".P12", ".PFX"))


@condition("credential_confusion", "environment", "high", pure=True, write_or_exec=True)
def credential_confusion(ctx, threshold):
    """Fires when a credential named in the commands — an env var or flag
    whose name holds KEY/TOKEN/SECRET/PASSWORD/CREDENTIAL/PROFILE, a
    ``.env.<env>`` file, a key file, ``AWS_PROFILE=``/``--profile`` — carries an
    environment tag that differs from the declared ``environment`` (e.g.
    ``PROD_DB_PASSWORD`` while the environment is "test")."""
    declared = declared_environment(ctx)
    if declared is None:
        return None
    mismatched = []
    for _, words in short_words(ctx, written=True):
        text = " ".join(words)
        for match in _CREDENTIAL.finditer(text) if _may_name_credential(text) else ():
            var, value = match.group("var"), match.group("value") or ""
            if var:
                named = var.replace("_", "-")
                if value and any(s in var.upper() for s in _SELECTORS):
                    named += f" {value}"
                word = f"{var}={value}" if value else var
            else:
                named = word = match.group("profile") or match.group("file")
            tags = environment_of(f" {named} ")
            if tags and declared not in tags:
                mismatched.append(word)
    if not mismatched:
        return None
    return Finding(f"Credentials do not match environment {declared!r}: {', '.join(sorted(set(mismatched)))}")


@condition("shared_instances", "environment", "medium")
def shared_instances(ctx, threshold):
    """Fires when ``service_endpoints`` (environment -> endpoints such as
    "db.internal:5432") lists the same endpoint, compared case-insensitively
    without scheme and trailing slash, under two environments — test and
    production sharing a database or queue."""
    owners: dict[str, set[str]] = {}
    for env, endpoints in ctx.service_endpoints.items():
        for endpoint in endpoints:
            key = re.sub(r"^[a-z][a-z0-9+.-]*://", "", endpoint.strip().lower()).rstrip("/")
            owners.setdefault(key, set()).add(env)
    shared = {k: sorted(v) for k, v in owners.items() if len(v) > 1}
    if not shared:
        return None
    shown = "; ".join(f"{k} used by {' and '.join(v)}" for k, v in sorted(shared.items()))
    return Finding(f"Environments share service instances: {shown}")
