"""Death warrants: the queue, the dogs and the kennel (gastown's shutdown dance)."""
from leash.core.warrants.queue import WarrantError, WarrantQueue

__all__ = ["WarrantQueue", "WarrantError"]
