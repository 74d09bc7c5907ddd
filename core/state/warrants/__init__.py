"""Death warrants: the queue, the dogs and the kennel (gastown's shutdown dance)."""
from leash.core.state.warrants.queue import WarrantError, WarrantQueue

__all__ = ["WarrantQueue", "WarrantError"]
