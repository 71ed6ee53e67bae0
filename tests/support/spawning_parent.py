"""A stand-in gateway for the parent-death tests: spawns servers through `child_process`, then waits.

Run: `python -m support.spawning_parent METHOD THEN ARGV_JSON...` where METHOD is how the
parent-death signal is set (setpriv, preexec, none) and each ARGV_JSON is one server's
argv as a JSON list. Prints one line per server (`pid <pid>`), then `watchdog <pid>`, then
THEN: `sleep` until killed (the test kills it the hard way and watches what survives),
`exit` at once without stopping the servers, or `raise` an exception out of asyncio.run.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import cast

from mcp_nexus.upstream import child_process
from mcp_nexus.upstream.child_process import ParentDeath, StopGrace


async def main(method: ParentDeath, then: str, argvs: list[list[str]]) -> None:
    for argv in argvs:
        process = await child_process.spawn(
            argv, env=None, cwd=None, stderr=None, grace=StopGrace(0.2, 0.3), parent_death=method
        )
        print(f"pid {process.pid}", flush=True)
    print(f"watchdog {child_process.watchdog_pid()}", flush=True)
    if then == "raise":
        raise RuntimeError("startup failed (on purpose)")
    if then == "sleep":
        await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main(cast(ParentDeath, sys.argv[1]), sys.argv[2], [json.loads(arg) for arg in sys.argv[3:]]))
