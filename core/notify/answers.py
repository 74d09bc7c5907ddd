"""Answers from afar: the Allow and Deny of an ntfy notification, each a
token bound to one pending call.

A token is ``ID.DECISION.EXPIRY.MAC``: the approval's id, ``allow`` or
``deny``, the last second it may be used (the approval's deadline), and
HMAC-SHA256 under ``<home>/run/answer.key`` (made by leashd, 0600, read by
nobody else) over the id, the SHA-256 of the call's tool and input
(``core.policy.approvalsummary.input_digest``, kept in the approval), the
decision and the expiry. Whoever holds the token can give that one answer to
that one call until it expires; nothing else.

``judge`` says what a tapped token may do: the decision, or why it is
refused: not a token, unknown approval, forged (its mac does not verify),
for another input, expired, already answered (a replay). leashd applies the
decision through the approvals store, so it is obeyed as any answer leashd
applied (``via`` ``ntfy:<route>``), and a stop filed meanwhile still wins
(``core.daemon.approvaldesk``).

Failure: ``answer_key`` raises ``OSError`` when the key cannot be read or
made (the caller sends no buttons); ``judge`` never raises.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets

from leash.core.base.clock import parse_iso

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.records import ApprovalRecord

KEY_NAME = "answer.key"
KEY_BYTES = 32
DECISIONS = ("allow", "deny")
TOKEN_LIMIT = 512  # characters: a token is far shorter; anything longer is not one


class Refused(Exception):
    """Why a tapped answer is not applied (one line)."""


def key_path(home: str) -> str:
    from leash.core.base.wellknown import RUN_DIR

    return os.path.join(home, RUN_DIR, KEY_NAME)


def answer_key(home: str, *, create: bool = False) -> bytes:
    """The key answers are signed under (made, 0600, when ``create`` and missing)."""
    path = key_path(home)
    try:
        with open(path, "rb") as handle:
            key = handle.read()
        if len(key) >= KEY_BYTES:
            return key
    except FileNotFoundError:
        if not create:
            raise
    if not create:
        raise OSError(f"{path} is too short to be an answer key")
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(secrets.token_bytes(KEY_BYTES))
    with open(path, "rb") as handle:
        return handle.read()


def _mac(key: bytes, approval_id: str, input_sha256: str, decision: str, expiry: int) -> str:
    message = f"{approval_id}|{input_sha256}|{decision}|{expiry}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def expiry_of(approval: ApprovalRecord) -> int:
    """The last second an answer to ``approval`` may be used: its deadline."""
    try:
        return int(parse_iso(str(approval.deadline)))
    except ValueError:
        return 0


def token(key: bytes, approval: ApprovalRecord, decision: str) -> str:
    """The token that gives ``decision`` to ``approval``."""
    if decision not in DECISIONS:
        raise ValueError(f"a decision is one of {', '.join(DECISIONS)}, not {decision!r}")
    approval_id, expiry = str(approval.id), expiry_of(approval)
    digest = str(approval.input_sha256 or "")
    return f"{approval_id}.{decision}.{expiry}.{_mac(key, approval_id, digest, decision, expiry)}"


def judge(key: bytes, text: str, approvals, *, now: float) -> tuple[str, str]:
    """(approval id, decision) a tapped ``text`` may apply; ``Refused`` with why otherwise.
    ``approvals``: the store (its ``get``)."""
    parts = text.strip().split(".")
    if len(text) > TOKEN_LIMIT or len(parts) != 4 or parts[1] not in DECISIONS or not parts[2].isdigit():
        raise Refused("not an answer token")
    approval_id, decision, expiry_text, mac = parts
    expiry = int(expiry_text)
    try:
        approval = approvals.get(approval_id)
    except Exception:  # unknown or ambiguous: a token names one approval by its whole id
        raise Refused(f"no approval {approval_id[:16]!r}") from None
    if approval.id != approval_id:
        raise Refused(f"no approval {approval_id[:16]!r}")
    digest = str(approval.input_sha256 or "")
    if not hmac.compare_digest(mac, _mac(key, approval_id, digest, decision, expiry)):
        # The same id and decision over another input's digest would verify
        # only with the key: a mac that fails names a forgery, or a call changed.
        raise Refused("its signature does not verify (forged, or for another call's input)")
    if expiry != expiry_of(approval):
        raise Refused("it is for another deadline of this approval")
    if now > expiry:
        raise Refused("it expired")
    if approval.status != "waiting":
        raise Refused(f"the approval was already {approval.status} (by {approval.by or 'leash'})")
    return approval_id, decision
