"""A real HTTP server on 127.0.0.1 in this process: an ASGI app behind uvicorn, on a port the kernel picked.

For tests of HTTP and SSE clients (the upstream sessions) that need real sockets but not
the seconds a separate process takes to import the SDK.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import uvicorn

from support.polling import eventually


@contextlib.asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """Serve `app` until the block ends; yields its base URL (`http://127.0.0.1:<port>`)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    # lifespan "on": the SDK's streamable HTTP app starts its session manager there.
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
    )
    task = asyncio.create_task(server.serve(sockets=[sock]), name=f"http-server-{port}")

    def started() -> bool:
        if task.done():
            task.result()  # raises what went wrong
            raise AssertionError("the HTTP server stopped while starting")
        return bool(server.started)

    try:
        await eventually(started, what=f"the HTTP server on port {port}")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(task, 10)
        sock.close()
