"""leash core: every rule and every piece of state; no UI.

The-nexus's names are kept at the top level::

    from core import StopProtocol, StopInterrupt, HandsOffError
"""
from core.handsoff import HandsOffError
from core.stop import StopInterrupt, StopProtocol

__all__ = ["StopProtocol", "StopInterrupt", "HandsOffError"]
