"""How `nexus serve` (and the other commands that run servers) log: one format, on stderr.

stdout is never used for it: with `--stdio` it belongs to the MCP protocol, and a gateway's
output should read the same whichever mode it runs in. Every line after the banner is a log
record in this one format, a server joining or failing included (logger `mcp_nexus.serve`), so
nothing is printed between log lines in another shape. `--quiet` keeps warnings and errors;
`--verbose` adds debug messages.
"""

from __future__ import annotations

import logging
import sys

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Libraries that log every request at INFO: their warnings and errors are kept.
_CHATTY = ("httpx2", "httpx", "mcp", "uvicorn.access", "websockets")


def setup_logging(*, verbose: bool = False, quiet: bool = False) -> None:
    """The root logger writes LOG_FORMAT to stderr at DEBUG (verbose), WARNING (quiet) or INFO."""
    level = logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO
    logging.basicConfig(level=level, format=LOG_FORMAT, stream=sys.stderr)
    logging.getLogger().setLevel(level)  # basicConfig leaves an already configured root as it was
    for chatty in _CHATTY:
        logging.getLogger(chatty).setLevel(max(level, logging.WARNING))
