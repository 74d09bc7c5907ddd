"""The halt engine: the seed's "Halt Conditions Design" on SQLite.

    from leash.core.halts import check_halt_conditions, record_halt, acknowledge_halt, \\
        get_session_halts, update_halt_config
"""
from leash.core.halts.api import (
                            HaltRefused,
                            acknowledge_halt,
                            check_halt_conditions,
                            get_session_halts,
                            record_halt,
                            session_state,
                            update_halt_config,
)
from leash.core.halts.context import HaltInputError
from leash.core.halts.store import HaltStoreUnavailable

__all__ = ["check_halt_conditions", "record_halt", "acknowledge_halt", "get_session_halts", "update_halt_config",
           "session_state", "HaltInputError", "HaltRefused", "HaltStoreUnavailable"]
