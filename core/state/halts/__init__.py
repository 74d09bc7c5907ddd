"""The halt engine: the seed's "Halt Conditions Design".

Halts are read and written through a backend's halt store, never by a state
home's path: ``backend.halts.check``, ``record``, ``acknowledge``, ``listing``,
``configure``, ``record_reads``, ``record_attempt`` (``leash.core.store``),
so a halt lands where every gate reads halts, the shared store included. This
package exports only what those stores raise; what a check, a record or an
acknowledgement decides is ``core.policy.halts.decision`` for every backend,
and the functions over one home's ``halts.db`` (``core.state.halts.api``) are
the file backend's own.

    from leash.core.state.halts import HaltInputError, HaltRefused, HaltStoreUnavailable
"""
from leash.core.policy.halts.outcomes import HaltInputError, HaltRefused, HaltStoreUnavailable

__all__ = ["HaltInputError", "HaltRefused", "HaltStoreUnavailable"]
