"""Wire, tier 1 of the layers (docs/architecture.md): the bytes on leashd's sockets.

A hook's bounded stdin and its answer (``hookio``), the thin hook client that
forwards a call to leashd (``thinhook``), the operator's client (``operator``)
and the daemon's line reader (``lines``). Standard library only: the hook path
starts here and must stay fast.
"""
