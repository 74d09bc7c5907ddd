"""What one line of an agent CLI's record says it spent, in tokens.

Each reader takes one parsed JSON value (a transcript line, a hook payload)
and returns a ``TokenUsage``, ``None`` (not a usage line), or ``MALFORMED``
(shaped like a usage line, but its counts are not counts: the caller counts
it as a skipped line and reports it). None of them raises, whatever it is
given. They read; they keep no state: counting a message once and turning
running totals into spend are the caller's (``core.state.meterread``).

``TokenUsage``'s four counts are disjoint, so a price is their weighted sum:
``input`` (read at the full input rate), ``cache_write`` (written to the
prompt cache), ``cache_read`` (read from it), ``output`` (every output token,
reasoning included). ``reasoning`` is the part of ``output`` that was
reasoning, for display: never add it again.

Claude Code (``claude_code_usage``): a transcript line ``{"type":
"assistant", "requestId", "isSidechain", "message": {"id", "model",
"usage": {"input_tokens", "output_tokens", "cache_creation_input_tokens",
"cache_read_input_tokens"}}}``. ``input_tokens`` already leaves out the
cached tokens. One API message is written as one line per content block,
each with the same ``message.id`` and ``requestId`` and the usage repeated
(some versions write a growing ``output_tokens``, the last line the final
one; some leave ``requestId`` out): ``key`` names the message, so the
caller counts it once, at the largest figures it sees. Thinking tokens are
inside ``output_tokens``; Claude Code does not say how many (``reasoning``
is 0). Cannot see: a subagent's lines (``isSidechain``) are a file of their
own from 2.1 on (``<session>/subagents/agent-<id>.jsonl``, beside the
``transcript_path``), which the caller must read too; a forked or resumed
session's file that copies earlier lines (same keys, another file); usage
of requests Claude Code does not record (a title, a quota probe); a line
the agent itself edited or removed.

Codex CLI (``codex_totals``, ``codex_model``, ``codex_delta``): the session
rollout ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`` holds one
``RolloutLine`` per line, ``{"timestamp", "type", "payload"}``
(``codex-rs/protocol/src/protocol.rs``: ``RolloutLine`` flattens
``RolloutItem``, tagged ``type``/``payload``, snake case). A ``turn_context``
line's ``payload.model`` is the model of the turns that follow. An
``event_msg`` line whose ``payload.type`` is ``token_count``
(``TokenCountEvent {info: Option<TokenUsageInfo>, rate_limits}``) carries
``info.total_token_usage``: the session's running totals ``{input_tokens,
cached_input_tokens, output_tokens, reasoning_output_tokens,
total_tokens}``, where ``cached_input_tokens`` is part of ``input_tokens``
and ``reasoning_output_tokens`` part of ``output_tokens`` (Codex's own
``TokenUsage::non_cached_input`` and ``blended_total`` say so);
``last_token_usage`` is the latest response's. ``info`` is null on an event
that only updates rate limits; the same totals are written again at times.
``codex_totals`` reads the running totals; ``codex_delta(before, now)`` is
the spend between two of them: nothing for a repeated total, and ``now``
whole when a count went back (a new process writing to the file from zero,
or Codex's ``fill_to_context_window``, which zeroes every count but
``total_tokens``). Cannot see: which model a total belongs to when no
``turn_context`` came before it (``model`` is ""); spend between the last
total and a crash; a subagent's spend, which is in its own rollout file.
Codex does not cache-write separately (``cache_write`` is 0).

Gemini CLI (``gemini_usage``): the ``AfterModel`` hook payload. Gemini CLI
calls the hook once per chunk of a streamed response, each with that
chunk's ``usageMetadata`` as the SDK gave it; the CLI itself keeps only the
last chunk's figures as the response's (``geminiChat.ts``:
``bufferedUsageMetadata = chunk.usageMetadata``, recorded once the stream
ends): they are running figures for the whole response, not per chunk. So
only a payload whose response has a ``finishReason`` (the last chunk) is a
usage line, and the earlier ones are ``None``. The hook's payload is cut
down by Gemini CLI's ``hookTranslator.toHookLLMResponse`` to
``{promptTokenCount, candidatesTokenCount, totalTokenCount}``: the cached
and thinking counts are not passed on (read here when a version passes
them). Without them, ``cache_read`` is 0 and cached tokens count as full
input (an overestimate), and the thinking tokens are taken as what
``totalTokenCount`` holds beyond prompt and candidates (reasoning, priced as
output; that remainder also holds tool-use prompt tokens, so it may
overestimate, never under). The model is the request's
(``llm_request.model``). Cannot see: a stream cut off before its last chunk
(its usage is never counted); a response whose hook call failed or timed
out; requests Gemini CLI makes without the hook (none known).
"""
from __future__ import annotations

from dataclasses import dataclass

from leash.core.base.agentprograms import CLAUDE, CODEX, GEMINI

CLAUDE_CODE_CLI, CODEX_CLI, GEMINI_CLI = CLAUDE.cli, CODEX.cli, GEMINI.cli
MAX_COUNT = 10 ** 12  # beyond any real count, even a long session's running total
COUNTS = ("input", "output", "cache_write", "cache_read", "reasoning")


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens one model call spent (or, from ``codex_totals``, a session's
    running totals). ``key`` names what it counts, for the caller to count it
    once ("" when nothing names it); ``sidechain`` is a subagent's call."""
    cli: str
    model: str = ""
    input: int = 0
    output: int = 0
    cache_write: int = 0
    cache_read: int = 0
    reasoning: int = 0
    key: str = ""
    sidechain: bool = False

    @property
    def tokens(self) -> int:
        """Every token counted once (``reasoning`` is inside ``output``)."""
        return self.input + self.output + self.cache_write + self.cache_read

    def counts(self) -> list[int]:
        """The counts, in ``COUNTS`` order (how a cursor keeps them)."""
        return [self.input, self.output, self.cache_write, self.cache_read, self.reasoning]

    def with_counts(self, counts: list[int]) -> TokenUsage:
        """This usage with other counts (``COUNTS`` order)."""
        given, output, cache_write, cache_read, reasoning = counts
        return TokenUsage(self.cli, self.model, given, output, cache_write, cache_read, reasoning, key=self.key,
                          sidechain=self.sidechain)


class Malformed:
    """A line shaped like a usage line whose counts cannot be read."""

    _instance: Malformed | None = None

    def __new__(cls) -> Malformed:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "MALFORMED"


MALFORMED = Malformed()
Reading = TokenUsage | Malformed | None


class _Bad(Exception):
    """A count that is no count (internal: the readers never raise)."""


def _count(mapping: dict, name: str, *, required: bool = False) -> int:
    value = mapping.get(name)
    if value is None and not required:
        return 0
    if type(value) is not int or not 0 <= value <= MAX_COUNT:
        raise _Bad(name)
    return value


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


# ----------------------------------------------------------------- Claude Code
def claude_code_usage(line: object) -> Reading:
    """A Claude Code transcript line's usage: one per content block of an API
    message, ``key`` the same for all of them."""
    if not isinstance(line, dict) or line.get("type") != "assistant":
        return None
    message = line.get("message")
    if not isinstance(message, dict) or "usage" not in message:
        return None
    usage = message["usage"]
    if not isinstance(usage, dict):
        return MALFORMED
    try:
        given, output = _count(usage, "input_tokens", required=True), _count(usage, "output_tokens", required=True)
        cache_write, cache_read = _count(usage, "cache_creation_input_tokens"), _count(usage, "cache_read_input_tokens")
    except _Bad:
        return MALFORMED
    return TokenUsage(CLAUDE_CODE_CLI, _text(message.get("model")), given, output, cache_write, cache_read,
                      key=_claude_key(line, message), sidechain=line.get("isSidechain") is True)


def _claude_key(line: dict, message: dict) -> str:
    """(``message.id``, ``requestId``); a line with no message id is its own
    (its ``uuid``); one with neither, nothing (counted each time it is read)."""
    message_id = _text(message.get("id"))
    if message_id:
        return f"{message_id}\x1f{_text(line.get('requestId'))}"
    uuid = _text(line.get("uuid"))
    return f"uuid\x1f{uuid}" if uuid else ""


# ------------------------------------------------------------------- Codex CLI
def codex_model(line: object) -> str | None:
    """The model a Codex ``turn_context`` line names (None: not one)."""
    if not isinstance(line, dict) or line.get("type") != "turn_context":
        return None
    payload = line.get("payload")
    model = payload.get("model") if isinstance(payload, dict) else None
    return model if isinstance(model, str) and model else None


def codex_totals(line: object) -> Reading:
    """The running totals a Codex ``token_count`` line carries, as counts
    (not spend: see ``codex_delta``). ``model`` is ""; ``key`` names the line
    by its time."""
    if not isinstance(line, dict) or line.get("type") != "event_msg":
        return None
    payload = line.get("payload")
    if not isinstance(payload, dict) or payload.get("type") != "token_count":
        return None
    info = payload.get("info")
    if info is None:
        return None  # a rate-limit update only
    totals = info.get("total_token_usage") if isinstance(info, dict) else None
    if not isinstance(totals, dict):
        return MALFORMED
    try:
        given, cached = _count(totals, "input_tokens", required=True), _count(totals, "cached_input_tokens")
        output, reasoning = _count(totals, "output_tokens", required=True), _count(totals, "reasoning_output_tokens")
    except _Bad:
        return MALFORMED
    return TokenUsage(CODEX_CLI, "", input=max(given - cached, 0), output=output, cache_read=min(cached, given),
                      reasoning=min(reasoning, output), key=f"codex\x1f{_text(line.get('timestamp'))}")


def codex_delta(before: TokenUsage | None, now: TokenUsage) -> TokenUsage:
    """The spend from running totals ``before`` to ``now`` (``now``'s model and
    key): each count's growth; all of ``now`` when any count went back (the
    totals started again from zero); zero counts for a repeated total."""
    if before is None:
        return now
    old, new = before.counts(), now.counts()
    if any(n < o for n, o in zip(new, old, strict=True)):
        return now
    return now.with_counts([n - o for n, o in zip(new, old, strict=True)])


# ------------------------------------------------------------------ Gemini CLI
def gemini_usage(payload: object) -> Reading:
    """A Gemini CLI ``AfterModel`` payload's usage, for the last chunk of a
    response only (one with a ``finishReason``); ``key`` is the session and
    the payload's time."""
    if not isinstance(payload, dict):
        return None
    response = payload.get("llm_response")
    if not isinstance(response, dict) or "usageMetadata" not in response:
        return None
    candidates = response.get("candidates")
    if not isinstance(candidates, list) or not any(
            isinstance(candidate, dict) and _text(candidate.get("finishReason")) for candidate in candidates):
        return None  # a chunk before the last: its figures are the last one's so far
    usage = response["usageMetadata"]
    if not isinstance(usage, dict):
        return MALFORMED
    try:
        prompt, candidate = _count(usage, "promptTokenCount"), _count(usage, "candidatesTokenCount")
        total, cached = _count(usage, "totalTokenCount"), _count(usage, "cachedContentTokenCount")
        thoughts = _count(usage, "thoughtsTokenCount") if "thoughtsTokenCount" in usage \
            else max(total - prompt - candidate, 0)
    except _Bad:
        return MALFORMED
    request = payload.get("llm_request")
    model = _text(request.get("model")) if isinstance(request, dict) else ""
    key = f"{_text(payload.get('session_id'))}\x1f{_text(payload.get('timestamp'))}"
    return TokenUsage(GEMINI_CLI, model, input=max(prompt - cached, 0), output=candidate + thoughts,
                      cache_read=min(cached, prompt), reasoning=thoughts, key=key)

