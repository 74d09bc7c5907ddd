"""Secrets: find them (``secrets_exposure``) and mask them before anything is stored.

The rules are gitleaks' default ruleset, generated as data into
``core/base/gitleaks_rules.py`` by ``contrib/gitleaks/generate.py``, plus a
small hand table of what gitleaks lacks (``PGPASSWORD=``, ``password=``-style
assignments, ``--password VALUE`` options, credentials in URLs, AWS key ids
outside base32, Twilio ``AC…:token`` pairs, OpenAI project keys without
gitleaks' marker, private key blocks of any length). A finding
follows gitleaks: the rule's regex matches, its secret (the secret group, else
the first non-empty group) is above the rule's entropy, and no allowlist
(gitleaks' global one, the rule's own, leash's placeholders such as
``$PASSWORD`` or ``<your-key>``) excuses it.

Cost, for a hook that runs on every tool call:
* nothing is compiled at import; the rule data is imported on the first scan
  of a non-empty text, and a rule's regex is compiled the first time it runs;
* a rule runs only where one of its keywords occurs in the lowercased text
  (one pass finds them: ``in`` checks for a short text, one combined regex for
  a long one);
* every rule sees at most ``WINDOW`` characters at once: a longer text is
  scanned in windows of that size, each overlapping the next by ``OVERLAP``,
  so a regex's backtracking is bounded by the window and the total work grows
  linearly with the text. A secret up to ``OVERLAP`` characters long always
  lies whole in some window; a longer one (other than a private key block,
  which is found without windows) may be seen only in part, or not at all.

A secret found inside a URL's credentials (``scheme://user:secret@host/path``)
ends at their ``@``, whichever rule found it, so the masked URL still shows
where it goes; the rule then looks again from the ``@``, so what its match
had run on over is scanned too.

``mask`` replaces each secret with ``[REDACTED:<rule id>]``; overlapping
findings merge, so a secret is never left half shown. It never fails on a
string: anything not a string is returned as it is.
"""
from __future__ import annotations

import math
import re
from bisect import bisect_left

from leash.core.base.lazy_re import lazy

WINDOW = 8192          # characters a rule's regex sees at once
OVERLAP = 2048         # shared by consecutive windows: the longest secret always seen whole
SMALL_TEXT = 16384     # up to this length keywords are found with `in` checks, no regex to compile
# At most this many (rule, window) regex runs per scan, plus RUNS_PER_WINDOW for
# each window: ordinary text needs a few per window; only text packed with the
# keywords of dozens of providers needs more, and is then treated as secret.
RUN_BUDGET = 512
RUNS_PER_WINDOW = 2
UNSCANNED = "unscanned-keyword-dense"
REDACTED = "[REDACTED:{}]"
# Rules that find a secret by what surrounds it; where one overlaps a rule that
# knows the secret's own shape, the mask is named after the latter.
CONTEXT_RULES = frozenset({"generic-api-key", "curl-auth-header", "curl-auth-user", "password-assignment",
                           "aws-access-key-id", "url-credentials"})

# Leash's own rules, in the generated rules' shape: (id, description, regex,
# secret group, keywords, entropy, allowlists, lead).
HAND_RULES: tuple[tuple, ...] = (
    ("pgpassword", "A PostgreSQL password in PGPASSWORD.",
     r"(?i:\bPGPASSWORD\b[\"']?\s*[=:]\s*([\"']?)(?![$<*{%])([^\s\"'&;|]{1,200})\1)", 2, ("pgpassword",), 0.0, (), 0),
    ("password-assignment", "A password, secret, API key or token assigned a literal value.",
     r"(?i:(?:\b|_)(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret"
     r"|private[_-]?key)\b[\"']?\s*[=:]\s*([\"']?)(?![$<*{%])([^\s\"'&;|]{4,200})\1)", 2,
     ("api", "passw", "private", "pwd", "secret", "token"), 0.0, (), 0),
    ("aws-access-key-id", "An AWS access key id with any of the 16 characters IAM allows (gitleaks takes base32 only).",
     r"\b((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z0-9]{16})\b", 1,
     ("a3t", "abia", "acca", "agpa", "aida", "aipa", "akia", "anpa", "anva", "aroa", "asia"), 3.0,
     (("secret", (r".+EXAMPLE$",), ()),), 0),
    ("url-credentials", "A password inside a URL (scheme://user:password@host).",
     r"\b[a-zA-Z][a-zA-Z0-9+.\-]{0,30}://[^\s:/@'\"\[\]]{1,200}:([^\s@/'\"]{1,200})@", 1, ("://",), 0.0, (), 0),
    ("password-option", "A password, secret or token given to a command-line option (--password VALUE).",
     r"(?i:--(?:password|passwd|pass|secret|token|api-key|apikey|access-token|auth-token|client-secret)"
     r"(?:=|\s+)([\"']?)(?![-$<*{%])([^\s\"'&;|]{4,200})\1)", 2,
     ("--pass", "--secret", "--token", "--api", "--access", "--auth", "--client"), 0.0, (), 0),
    ("twilio-account-credentials", "A Twilio account SID with its auth token (AC...:token).",
     r"\b(AC[0-9a-fA-F]{32}):([0-9a-fA-F]{32})\b", 2, ("ac",), 2.5, (), 0),
    ("openai-project-key", "An OpenAI project, service-account or admin key of any length (gitleaks wants its marker).",
     r"\b(sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,300})", 1, ("sk-proj-", "sk-svcacct-", "sk-admin-"), 3.0, (),
     0),
)
PLACEHOLDER = lazy(r"^(?:x+|\*+|\.+|changeme|password|secret|example|none|null|true|false|redacted.*)$",
                   re.IGNORECASE)
# A URL's authority ends at the first of these; its credentials before its last "@".
AUTHORITY_STOP = lazy(r"[\s/?#'\"`<>]")
URL_LOOKBACK = 512     # how far around a secret its URL's "://" and authority's end are looked for
PRIVATE_KEY_ID = "private-key"
PRIVATE_KEY_BEGIN = lazy(r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----", re.IGNORECASE)
PRIVATE_KEY_END = lazy(r"-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----", re.IGNORECASE)


class _Rule:
    """One rule, its regexes compiled on first use."""

    __slots__ = ("id", "regex", "group", "entropy", "allowlists", "lead")

    def __init__(self, rule_id, regex, group, entropy, allowlists, lead):
        self.id, self.group, self.entropy, self.lead = rule_id, group, entropy, lead
        self.regex = lazy(regex, re.ASCII)
        self.allowlists = tuple((target, tuple(lazy(r, re.ASCII) for r in regexes), stopwords)
                                for target, regexes, stopwords in allowlists)


class _Ruleset:
    """Every rule, indexed by keyword; built on the first scan."""

    def __init__(self):
        from leash.core.base import gitleaks_rules

        self.version = gitleaks_rules.GITLEAKS_VERSION
        rows = gitleaks_rules.RULES + HAND_RULES
        self.rules = [_Rule(r[0], r[2], r[3], r[5], r[6], r[7]) for r in rows]
        self.by_keyword: dict[str, list[int]] = {}
        for index, row in enumerate(rows):
            for keyword in row[4]:
                self.by_keyword.setdefault(keyword, []).append(index)
        self.keywords = tuple(sorted(self.by_keyword))
        self._implied: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        target, regexes, stopwords = gitleaks_rules.GLOBAL_ALLOWLIST
        self.global_allowlist = (target, tuple(lazy(r, re.ASCII) for r in regexes), stopwords)
        self._keyword_regex = None

    def keyword_regex(self) -> re.Pattern[str]:
        """The longest keyword at each position, in one pass (a trie, so ``re``
        tests a handful of first characters per position, not every keyword)."""
        if self._keyword_regex is None:
            self._keyword_regex = re.compile(_trie_pattern(self.keywords))
        return self._keyword_regex

    def found(self, low: str, start: int, end: int) -> set[str]:
        """The keywords in ``low[start:end]``. The regex reports the longest
        keyword at a position and resumes after it, so add those inside each
        match and those that begin inside one and run past its end."""
        found: set[str] = set()
        straddling: set[str] = set()
        for longest in set(self.keyword_regex().findall(low, start, end)):
            if longest not in self._implied:
                self._implied[longest] = self._around(longest)
            inside, overlapping = self._implied[longest]
            found.update(inside)
            straddling.update(overlapping)
        found.update(k for k in straddling - found if low.find(k, start, end) >= 0)
        return found

    def _around(self, longest: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        inside = tuple(k for k in self.keywords if k in longest)
        straddling = tuple(k for k in self.keywords if k not in inside
                           and any(k.startswith(longest[i:]) for i in range(1, len(longest))))
        return inside, straddling

    def rules_for(self, found: set[str]) -> list[int]:
        return sorted({i for keyword in found for i in self.by_keyword[keyword]})


def _trie_pattern(words) -> str:
    trie: dict = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def emit(node: dict) -> str:
        branches = [re.escape(char) + emit(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 and "" not in node else "(?:" + "|".join(branches) + ")"
        return body + ("?" if "" in node else "")

    return emit(trie)


_RULESET: _Ruleset | None = None
_LAST_SCAN: tuple[str, list] | None = None


def ruleset() -> _Ruleset:
    global _RULESET
    if _RULESET is None:
        _RULESET = _Ruleset()
    return _RULESET


def rule_count() -> int:
    """How many rules run (gitleaks' and leash's own)."""
    return len(ruleset().rules)


# ------------------------------------------------------------------ finding
def _entropy(value: str) -> float:
    counts: dict[str, int] = {}
    for char in value:
        counts[char] = counts.get(char, 0) + 1
    return -sum(c / len(value) * math.log2(c / len(value)) for c in counts.values())


def _allowed(allowlist, secret: str, targets: dict[str, str]) -> bool:
    target, regexes, stopwords = allowlist
    text = targets[target] if target in targets else targets["secret"]
    if any(regex.search(text) for regex in regexes):
        return True
    low = secret.lower()
    return any(word in low for word in stopwords)


def _match_targets(rule: _Rule, text: str, match: re.Match[str], start: int, end: int) -> dict[str, str]:
    """What "match" and "line" allowlists read: the match (with the identifier
    characters gitleaks' lazy prefix would have taken) and its line."""
    begin = match.start()
    floor = max(start, begin - rule.lead)
    while begin > floor and (text[begin - 1].isalnum() or text[begin - 1] in "_.-"):
        begin -= 1
    line_start = max(start, text.rfind("\n", start, match.start()) + 1)
    line_end = text.find("\n", match.end(), end)
    return {"match": text[begin:match.end()], "line": text[line_start:end if line_end < 0 else line_end]}


def _secret_span(rule: _Rule, match: re.Match[str]) -> tuple[int, int] | None:
    if rule.group:
        span = match.span(rule.group)
        return span if span[0] >= 0 else match.span()
    for index in range(1, (match.re.groups or 0) + 1):
        if match.group(index):
            return match.span(index)
    return match.span()


def _is_finding(ruleset_: _Ruleset, rule: _Rule, text: str, match, span, start: int, end: int) -> bool:
    secret = text[span[0]:span[1]]
    if not secret or secret.startswith("[REDACTED") or PLACEHOLDER.match(secret):
        return False
    if rule.entropy and _entropy(secret) <= rule.entropy:
        return False
    if _allowed(ruleset_.global_allowlist, secret, {"secret": secret}):
        return False
    if rule.allowlists:
        targets = {"secret": secret, **_match_targets(rule, text, match, start, end)}
        if any(_allowed(allowlist, secret, targets) for allowlist in rule.allowlists):
            return False
    return True


def _windows(length: int):
    start = 0
    while True:
        end = min(length, start + WINDOW)
        yield start, end
        if end == length:
            return
        start = end - OVERLAP


def _keywords_in(ruleset_: _Ruleset, low: str, start: int, end: int, whole: bool) -> set[str]:
    if whole:
        return {k for k in ruleset_.keywords if k in low}
    return ruleset_.found(low, start, end)


def _private_key_blocks(text: str, low: str) -> list[tuple[int, int, str]]:
    """Each private key block, from BEGIN to its END (or the end of the text),
    found without windows: a 4096-bit key is longer than ``OVERLAP``."""
    if "private key" not in low:
        return []
    ends = [m.end() for m in PRIVATE_KEY_END.finditer(text)]
    spans, covered = [], 0
    for begin in PRIVATE_KEY_BEGIN.finditer(text):
        if begin.start() < covered:
            continue
        after = bisect_left(ends, begin.end() + 1)
        covered = ends[after] if after < len(ends) else len(text)
        spans.append((begin.start(), covered, PRIVATE_KEY_ID))
    return spans


def scan(text: str) -> list[tuple[int, int, str]]:
    """Every secret in ``text``: (start, end, rule id), sorted by start. The
    last text scanned is remembered, so finding then masking it scans once."""
    global _LAST_SCAN
    if not isinstance(text, str) or not text:
        return []
    last = _LAST_SCAN  # one read: leashd's threads replace it between two reads of the global
    if last is not None and (last[0] is text or last[0] == text):
        return list(last[1])
    findings = _scan(text)
    _LAST_SCAN = (text, findings)
    return list(findings)


def _scan(text: str) -> list[tuple[int, int, str]]:
    rules = ruleset()
    low = text.lower()
    whole = len(text) <= SMALL_TEXT
    present = _keywords_in(rules, low, 0, len(text), True) if whole else None
    findings = _private_key_blocks(text, low)
    budget = RUN_BUDGET + RUNS_PER_WINDOW * (len(text) // (WINDOW - OVERLAP) + 1)
    for start, end in _windows(len(text)):
        found = present if whole else _keywords_in(rules, low, start, end, False)
        if not found:
            continue
        indexes = rules.rules_for(found)
        budget -= len(indexes)
        if budget < 0:
            findings.append((start, end, UNSCANNED))
            continue
        for index in indexes:
            findings += _run(rules, rules.rules[index], text, start, end)
    findings.sort()
    return findings


def _userinfo_end(text: str, begin: int, finish: int) -> int | None:
    """Where the credentials end (their last ``@``) when ``text[begin:finish]``
    starts inside a URL's ``user:password@`` and runs on past them into the
    host, else None. The authority of ``scheme://user:password@host/path``
    ends at the first ``/ ? #``, blank or quote, so its last ``@`` is where
    the credentials end even when a password holds a raw ``@``."""
    if text.find("@", begin, finish) < 0:
        return None
    scheme_end = text.rfind("://", max(0, begin - URL_LOOKBACK), begin)
    if scheme_end < 0 or AUTHORITY_STOP.search(text, scheme_end + 3, begin):
        return None
    limit = min(len(text), finish + URL_LOOKBACK)
    stop = AUTHORITY_STOP.search(text, begin, limit)
    if stop is None and limit < len(text):
        return None  # an authority this long is no URL's: the whole finding stays masked
    at = text.rfind("@", begin, stop.start() if stop else limit)
    return at if begin < at < finish else None


def _run(rules: _Ruleset, rule: _Rule, text: str, start: int, end: int) -> list[tuple[int, int, str]]:
    """One rule's findings in one window. A secret found inside a URL's
    credentials ends at their ``@``, so the host and path stay readable, and
    the rule looks again from there: what it had swallowed is scanned too."""
    found, next_start, position = [], end - OVERLAP, start
    while position <= end:
        match = rule.regex.search(text, position, end)
        if match is None:
            break
        position = match.end() if match.end() > match.start() else match.end() + 1
        if match.end() == end < len(text) and match.start() >= next_start:
            continue  # cut by the window's end; the next window sees it whole
        span = _secret_span(rule, match)
        if not span:
            continue
        at = _userinfo_end(text, span[0], span[1])
        if at is not None:
            span, position = (span[0], at), at
        if _is_finding(rules, rule, text, match, span, start, end):
            found.append((span[0], span[1], rule.id))
    return found


def find_secrets(text: str) -> list[str]:
    """The rule ids of the secrets in ``text``, each once, in order of appearance."""
    kinds: list[str] = []
    for _, _, kind in scan(text):
        if kind not in kinds:
            kinds.append(kind)
    return kinds


def _merged(findings: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Overlapping findings as one span, named by a rule that knows its shape."""
    merged: list[list] = []
    for start, end, kind in findings:
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
            if merged[-1][2] in CONTEXT_RULES and kind not in CONTEXT_RULES:
                merged[-1][2] = kind
        else:
            merged.append([start, end, kind])
    return [tuple(m) for m in merged]


def mask(text: str) -> str:
    """``text`` with every secret replaced by ``[REDACTED:<rule id>]``."""
    findings = scan(text)
    if not findings:
        return text
    parts, last = [], 0
    for start, end, kind in _merged(findings):
        parts += [text[last:start], REDACTED.format(kind)]
        last = end
    parts.append(text[last:])
    return "".join(parts)


mask_secrets = mask


def mask_deep(value: object) -> object:
    """Mask every string inside a JSON-shaped value (keys included)."""
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {mask(str(k)): mask_deep(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [mask_deep(v) for v in value]
    return value
