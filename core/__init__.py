"""leash core: every rule and every piece of state; no UI.

The-nexus's names are kept at the top level::

    from leash.core import StopProtocol, StopInterrupt, HandsOffError
"""
from leash.core.handsoff import HandsOffError
from leash.core.protocol import StopProtocol
from leash.core.stop import StopInterrupt

__all__ = ["StopProtocol", "StopInterrupt", "HandsOffError"]
