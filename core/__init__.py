"""leash core: every rule and every piece of state; no UI.

Folders by layer, each importing only the layers below it
(``tests/project/test_layering.py`` holds the order): ``base``, ``wire``,
``policy``, ``state``, ``store``, then ``hook``, ``notify``, ``views``,
``warrants`` and, on top, ``daemon``.

The-nexus's names are kept at the top level::

    from leash.core import StopProtocol, StopInterrupt, HandsOffError
    from leash.core import loopguard

They are imported when first asked for (PEP 562), so importing one small core
module (the thin hook client) does not pay for the stop protocol.
"""

__all__ = ["StopProtocol", "StopInterrupt", "HandsOffError", "loopguard"]

# name -> (module, attribute); attribute None: the module itself.
_HOMES = {"StopProtocol": ("leash.core.views.protocol", "StopProtocol"),
          "StopInterrupt": ("leash.core.state.stop", "StopInterrupt"),
          "HandsOffError": ("leash.core.state.handsoff", "HandsOffError"),
          "loopguard": ("leash.core.state.loopguard", None)}


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'leash.core' has no attribute {name!r}")
    import importlib

    module_name, attribute = _HOMES[name]
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value
