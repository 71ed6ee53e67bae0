"""What a gateway process builds at startup, kept out of the cyclic garbage collector's walks."""

from __future__ import annotations

import gc


def freeze_startup_heap() -> None:
    """Move every object alive now to the collector's permanent generation (`gc.freeze()`).

    Called once a process's gateway serves (the CLI's `nexus serve`; never in a process that
    runs several gateways, such as the tests). Nothing is copied or collected: the call is
    constant-time, and the objects stay alive as before (reference counting still frees
    them; a reference cycle among them would now outlive the process's need for it: a
    collection right after startup finds a few dozen such objects, so none is run first).

    Why: a full collection walks every tracked object, and what startup leaves is ~135,000
    of them (the imported modules, the MCP SDK's pydantic-core schemas, the config, the
    built-in servers) and costly to walk: the SDK's type schemas take ~3 µs per object
    against ~0.1 µs for plain ones, so one full collection paused the gateway for tens to
    hundreds of milliseconds. Paths that leave reference cycles per request (the
    2026-07-28 path through the SDK's server runner) triggered one every ~3000 calls.
    Frozen, a full collection walks only what was made since (docs/PERFORMANCE.md).
    """
    gc.freeze()
