"""A stdio MCP server that prints its secrets on stderr, as careless servers do.

At start it writes one `NAME=value` line on stderr for each variable of its environment
(`echo "API_TOKEN=$API_TOKEN" >&2`) and one line with its arguments, then serves:
`hello` (a plain answer), `leak_and_crash` (prints everything again, then exits 3 in the
middle of the call). With `--crash-at-start` it prints and exits 3 before serving, so its
last stderr line is what the gateway reports as the server's error.

Run by path: `python leaky_server.py [--crash-at-start] [any arguments...]`.
"""

from __future__ import annotations

import os
import sys

# What the gateway always gives a child; not planted by the tests.
_INHERITED = {"PATH", "HOME", "LANG", "LANGUAGE", "TERM", "TZ", "USER", "SHELL", "LOGNAME", "PWD"}


def confess() -> None:
    for name, value in sorted(os.environ.items()):
        if name not in _INHERITED and not name.startswith("LC_"):
            sys.stderr.write(f"{name}={value}\n")
    sys.stderr.write(f"started with arguments: {' '.join(sys.argv[1:])}\n")
    sys.stderr.flush()


def main() -> None:
    confess()
    if "--crash-at-start" in sys.argv:
        # The last line is the one the gateway keeps as this server's last words.
        sys.stderr.write(f"fatal: cannot log in with API_TOKEN={os.environ.get('API_TOKEN', '')}\n")
        sys.stderr.flush()
        os._exit(3)

    from mcp.server.mcpserver import MCPServer

    server = MCPServer("leaky")

    @server.tool(description="Say hello.", structured_output=False)
    def hello() -> str:
        return "hello from leaky"

    @server.tool(description="Print every secret on stderr, then die mid-call.", structured_output=False)
    def leak_and_crash() -> str:
        confess()
        sys.stderr.write(f"fatal: token {os.environ.get('API_TOKEN', '')} was refused\n")
        sys.stderr.flush()
        os._exit(3)

    server.run("stdio")


if __name__ == "__main__":
    main()
