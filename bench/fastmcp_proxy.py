"""fastmcp's proxy in front of one stdio server, as fastmcp's docs build it: a peer to measure.

    bench/.venv-peers/bin/python bench/fastmcp_proxy.py COMMAND [ARGS...]

Runs with the python of the throwaway venv made by bench/fastmcp_venv.py (never the
project's .venv). `create_proxy` with its defaults, served over stdio; the upstream
COMMAND inherits this process's environment.
"""

import os
import sys

from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy

upstream = StdioTransport(command=sys.argv[1], args=sys.argv[2:], env=dict(os.environ))
create_proxy(upstream, name="fastmcp-proxy").run(transport="stdio", show_banner=False)
