"""leash core: every rule and every piece of state; no UI.

The-nexus's names are kept at the top level::

    from leash.core import StopProtocol, StopInterrupt, HandsOffError

They are imported when first asked for (PEP 562), so importing one small core
module (the thin hook client) does not pay for the stop protocol.
"""
from __future__ import annotations

__all__ = ["StopProtocol", "StopInterrupt", "HandsOffError"]

_HOMES = {"StopProtocol": "leash.core.protocol", "StopInterrupt": "leash.core.stop",
          "HandsOffError": "leash.core.handsoff"}


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'leash.core' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value
    return value
