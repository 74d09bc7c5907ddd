"""Layer 7, views: what the operator reads, over a ``Backend``.

The fleet view (``fleet``), ``leash status`` (``status``), ``leash why``
(``why``), ``leash doctor`` (``doctor``) and the Python API's facade
(``protocol``: ``StopProtocol``).
"""
