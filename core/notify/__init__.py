"""Notifications: leashd tells people away from the screen who needs them.

``events`` says what an event is and words each kind; ``sources`` reads the
stores into events; ``routes`` is the ``[[notify.route]]`` tables as objects;
``sender`` delivers one message through one route; ``dispatch`` decides what a
route sends when (once per event, rate limited, reminders, retries with
backoff); ``state`` keeps what was sent and each route's health in
``<home>/run/notify.json`` and words it for ``leash doctor``; ``runner`` is the
thread leashd starts. Nothing on the hook path imports this package.

Layer ``notify``, tier 5 of the layers (docs/architecture.md).
"""
