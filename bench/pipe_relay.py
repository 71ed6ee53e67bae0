"""The floor of any stdio relay: a process that only copies bytes, never parses them.

    python bench/pipe_relay.py COMMAND [ARGS...]

Starts COMMAND, copies stdin -> its stdin and its stdout -> stdout as the bytes arrive
(so every JSON-RPC line passes through whole and unread), exits when either side closes.
bench/overhead.py and bench/peers.py put it where Nexus would sit: whatever Nexus costs
above it is Nexus's own work, the rest is the extra process hop.
"""

import os
import selectors
import subprocess
import sys

child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
assert child.stdin is not None and child.stdout is not None
routes = {sys.stdin.fileno(): child.stdin.fileno(), child.stdout.fileno(): sys.stdout.fileno()}
selector = selectors.DefaultSelector()
for source in routes:
    selector.register(source, selectors.EVENT_READ)
try:
    while True:
        for key, _ in selector.select():
            data = os.read(key.fd, 1 << 16)
            if not data:  # one side closed: the session is over
                raise SystemExit(0)
            view = memoryview(data)
            while view:
                view = view[os.write(routes[key.fd], view) :]
finally:
    child.stdin.close()
    try:
        child.wait(timeout=5)
    except subprocess.TimeoutExpired:
        child.kill()
