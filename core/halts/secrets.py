"""Secret patterns: find them (``secrets_exposure``) and mask them before storage.

A curated, deterministic list — each pattern is a known credential format or
an assignment that names itself a secret. ``mask`` replaces every match with
``[REDACTED:<kind>]`` so the secret's bytes never reach halts.db or the ack
log; ``mask_deep`` does it for every string inside a JSON-shaped value.

Values that are clearly references, not secrets (``$PASSWORD``,
``${TOKEN}``, ``<your-key>``, ``****``), are left alone.
"""
from __future__ import annotations

import re

from core.halts.lazy_re import lazy

# kind, pattern, the group holding the secret (0: the whole match), and a
# cheap test that must pass before the pattern is worth compiling and running.
_PATTERNS: tuple[tuple[str, str, int], ...] = (
    ("private_key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
                    r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)", 0),
    ("aws_access_key_id", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[0-9A-Z]{16}\b", 0),
    ("aws_secret_access_key", r"(?i)\baws_?secret_?access_?key\b\s*[=:]\s*[\"']?([A-Za-z0-9/+=]{40})\b", 1),
    ("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b", 0),
    ("gitlab_token", r"\bglpat-[A-Za-z0-9_\-]{20,}", 0),
    ("slack_token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", 0),
    ("slack_webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9_/]{20,}", 0),
    ("anthropic_api_key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}", 0),
    ("openai_api_key", r"\bsk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", 0),
    ("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}\b", 0),
    ("stripe_key", r"\b[rs]k_live_[0-9A-Za-z]{20,}\b", 0),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", 0),
    ("url_credentials", r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@'\"]+:([^\s@/'\"]+)@", 1),
    ("password_assignment",
     r"(?i)(?:\b|_)(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret"
     r"|private[_-]?key)\b[\"']?\s*[=:]\s*([\"']?)(?![$<*{%])([^\s\"'&;|]{4,})\1", 2),
)
_HINTS = {
    "private_key": lambda t, low: "PRIVATE KEY" in t,
    "aws_access_key_id": lambda t, low: any(p in t for p in ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA",
                                                             "ANVA")),
    "aws_secret_access_key": lambda t, low: "aws" in low and "secret" in low,
    "github_token": lambda t, low: "gh" in t or "github_pat_" in t,
    "gitlab_token": lambda t, low: "glpat-" in t,
    "slack_token": lambda t, low: "xox" in t,
    "slack_webhook": lambda t, low: "hooks.slack.com" in t,
    "anthropic_api_key": lambda t, low: "sk-ant-" in t,
    "openai_api_key": lambda t, low: "sk-" in t,
    "google_api_key": lambda t, low: "AIza" in t,
    "stripe_key": lambda t, low: "_live_" in t,
    "jwt": lambda t, low: "eyJ" in t,
    "url_credentials": lambda t, low: "://" in t and "@" in t,
    "password_assignment": lambda t, low: any(w in low for w in ("pass", "pwd", "secret", "key", "token")),
}
_COMPILED: list[tuple[str, re.Pattern[str], int]] | None = None
_PLACEHOLDERS = lazy(r"^(?:x+|\*+|\.+|changeme|password|secret|example|none|null|true|false|redacted.*)$",
                           re.IGNORECASE)


def _compiled() -> list[tuple[str, re.Pattern[str], int]]:
    global _COMPILED
    if _COMPILED is None:
        _COMPILED = [(kind, lazy(pattern), group) for kind, pattern, group in _PATTERNS]
    return _COMPILED


def _is_placeholder(value: str) -> bool:
    return bool(_PLACEHOLDERS.match(value)) or value.startswith("[REDACTED")


def find_secrets(text: str) -> list[str]:
    """The kinds of secret found in ``text`` (each kind once, in list order)."""
    if not text:
        return []
    kinds = []
    low = text.lower()
    for kind, pattern, group in _compiled():
        if not _HINTS[kind](text, low):
            continue
        for match in pattern.finditer(text):
            if not _is_placeholder(match.group(group)):
                kinds.append(kind)
                break
    return kinds


def mask(text: str) -> str:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]``."""
    if not isinstance(text, str) or not text:
        return text
    low = text.lower()
    for kind, pattern, group in _compiled():
        if not _HINTS[kind](text, low):
            continue

        def replace(match: re.Match[str], kind=kind, group=group) -> str:
            secret = match.group(group)
            if _is_placeholder(secret):
                return match.group(0)
            start, end = match.start(group) - match.start(0), match.end(group) - match.start(0)
            whole = match.group(0)
            return whole[:start] + f"[REDACTED:{kind}]" + whole[end:]

        text = pattern.sub(replace, text)
    return text


def mask_deep(value: object) -> object:
    """Mask every string inside a JSON-shaped value (keys included)."""
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {mask(str(k)): mask_deep(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [mask_deep(v) for v in value]
    return value
