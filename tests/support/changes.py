"""What ``Backend.changes()`` reports while another process writes: shared by
the store contract suites (stops, approvals, ...)."""
from __future__ import annotations

import asyncio
import os
import sys

WATCHER_SETTLE_SECONDS = 0.3  # the watcher is in place before the other process writes
CHANGE_WITHIN_SECONDS = 5


def changes_after(backend, program: str, store: str) -> list:
    """Every change ``backend.changes()`` reported until one of ``store``, while a
    separate Python process ran ``program`` (its ``sys.argv[1]``: the home)."""
    async def watch() -> list:
        stop = asyncio.Event()
        seen: list = []

        async def collect():
            async for change in backend.changes(stop_event=stop):
                seen.append(change)
                if change.store == store:
                    return

        task = asyncio.create_task(collect())
        await asyncio.sleep(WATCHER_SETTLE_SECONDS)
        env = dict(os.environ, LEASH_STORE_URL=getattr(backend, "url", ""))
        process = await asyncio.create_subprocess_exec(sys.executable, "-c", program, backend.home, env=env)
        assert await process.wait() == 0
        try:
            await asyncio.wait_for(task, timeout=CHANGE_WITHIN_SECONDS)
        finally:
            stop.set()
        return seen

    return asyncio.run(watch())
