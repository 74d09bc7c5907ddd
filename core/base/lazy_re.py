"""Regular expressions compiled on first use.

The rules hold dozens of patterns, and the pre-tool-use hook is a fresh
process for every tool call: compiling them all at import would cost more than
the rest of the hook. ``lazy(pattern, flags)`` returns an object that behaves
like the compiled pattern (``search``, ``match``, ``finditer``, ``findall``,
``sub``) and compiles the first time one of those is used, so a call pays only
for the patterns its rules actually reach.
"""
from __future__ import annotations

import re


class lazy:
    __slots__ = ("pattern", "flags", "_compiled")

    def __init__(self, pattern: str, flags: int = 0):
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self.pattern, self.flags)
        return compiled

    # The methods the rules call, defined here: an attribute found on the class
    # costs a lookup, one that falls through to ``__getattr__`` a raised miss first.
    def search(self, *args):
        return (self._compiled or self.compiled()).search(*args)

    def match(self, *args):
        return (self._compiled or self.compiled()).match(*args)

    def finditer(self, *args):
        return (self._compiled or self.compiled()).finditer(*args)

    def findall(self, *args):
        return (self._compiled or self.compiled()).findall(*args)

    def split(self, *args):
        return (self._compiled or self.compiled()).split(*args)

    def sub(self, *args):
        return (self._compiled or self.compiled()).sub(*args)

    def __getattr__(self, name: str):
        return getattr(self.compiled(), name)
