"""Views, tier 6 of the layers (docs/architecture.md): what the operator reads, over a ``Backend``.

The fleet view (``fleet``), ``leash status`` (``status``), ``leash why``
(``why``), ``leash doctor`` (``doctor``) and the Python API's facade
(``protocol``: ``StopProtocol``).
"""
