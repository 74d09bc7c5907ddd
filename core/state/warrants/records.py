"""What a warrant and a dog state must hold to be worked, and what a target may be.

``validate_target`` refuses what no tmux session can be called and nothing
may type: empty text, control or format characters, more than
``MAX_TARGET_LENGTH`` characters (``ValueError`` with a one-line message).
``reason_problem`` says why a reason will not do (a warrant needs one).
``warrant_problem`` and ``dog_problem`` say what makes a record unworkable
(None when it is fine); the queue quarantines such records.

Failure: these only read; a file that cannot be opened is ``UNOPENABLE``,
which is not corruption and is never quarantined.
"""
from __future__ import annotations

import os

from leash.core.base.statefile import StateCorrupt, read_json

MAX_TARGET_LENGTH = 128
RECORD_PREFIX = "w-"
RECORD_SUFFIX = ".json"
DOG_STATES = ("received", "interrogating", "evaluating", "pardoned", "executing", "complete")

UNOPENABLE = "cannot be opened"


def configured_attempts(home) -> int:
    """How many attempts a dog makes: the length of ``[warrants] timeouts``
    (the default's when config.toml cannot be read)."""
    from leash.core.base.config import DEFAULTS, ConfigError, load_config

    try:
        return len(load_config(home)["warrants"]["timeouts"])
    except (ConfigError, KeyError, TypeError):
        return len(DEFAULTS["warrants"]["timeouts"])


def attempt_label(record: dict, attempts: int | None = None) -> str:
    """``n/N``: the dog's attempt of the ``N`` it makes. A dog records its own
    ``N`` (``attempts``, from the timeouts it runs with); ``attempts`` is the
    fallback for a warrant no dog has taken yet (``configured_attempts``)."""
    from leash.core.base.config import DEFAULTS

    total = record.get("attempts") or attempts or len(DEFAULTS["warrants"]["timeouts"])
    return f"{record.get('attempt', 0)}/{total}"


def validate_target(target) -> None:
    """A target leash may file: printable text of at most ``MAX_TARGET_LENGTH``."""
    if not isinstance(target, str) or not target.strip():
        raise ValueError("a warrant needs a target: a tmux session name or id")
    if len(target) > MAX_TARGET_LENGTH:
        raise ValueError(f"a warrant target is at most {MAX_TARGET_LENGTH} characters, got {len(target)}")
    if not target.isprintable():
        raise ValueError(f"a warrant target must be printable text without control characters, got {target!r}")


def reason_problem(reason) -> str | None:
    """Why ``reason`` cannot be a warrant's, or None: every warrant says why it was filed."""
    if not isinstance(reason, str) or not reason.strip():
        return "a warrant needs a reason"
    return None


def is_record(name: str) -> bool:
    return name.startswith(RECORD_PREFIX) and name.endswith(RECORD_SUFFIX)


def warrant_problem(warrant, name: str) -> str | None:
    """What makes a pending warrant unworkable, or None."""
    if not isinstance(warrant, dict):
        return f"expected a JSON object, found {type(warrant).__name__}"
    if warrant.get("id") != name[:-len(RECORD_SUFFIX)]:
        return f"its id {warrant.get('id')!r} is not its file name"
    if not isinstance(warrant.get("target"), str) or not warrant["target"]:
        return "it names no target"
    target_id = warrant.get("target_id")
    if target_id is not None and not isinstance(target_id, str):
        return "its target_id is not text"
    return None


def dog_problem(state, name: str) -> str | None:
    """What makes a dog state unworkable, or None."""
    if not isinstance(state, dict):
        return f"expected a JSON object, found {type(state).__name__}"
    if state.get("id") != name[:-len(RECORD_SUFFIX)]:
        return f"its id {state.get('id')!r} is not its file name"
    if state.get("state") not in DOG_STATES:
        return f"its state {state.get('state')!r} is not one of {', '.join(DOG_STATES)}"
    warrant = state.get("warrant")
    return "its warrant: " + problem if (problem := warrant_problem(warrant, name)) else None


def file_problem(path: str, check) -> str | None:
    try:
        data = read_json(path, None)
    except StateCorrupt as exc:
        return exc.detail
    except OSError:
        return UNOPENABLE
    return None if data is None else check(data, os.path.basename(path))
