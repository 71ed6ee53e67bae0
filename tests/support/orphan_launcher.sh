#!/bin/sh
# A launcher like npx, uvx or `sh -c` with more than one command: it forks the real server
# (its arguments) instead of exec'ing it, and waits. SIGTERM ends this shell but not a server
# that ignores it, and the parent-death signal reaches only this shell: the server is a
# grandchild of the gateway, in the same process group. Stdin is handed on through fd 3: a
# background command of a non-interactive shell gets /dev/null on fd 0 before its redirections.
exec 3<&0
"$@" <&3 3<&- &
exec 3<&-
wait $!
