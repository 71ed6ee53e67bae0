#!/bin/sh
# The container's entrypoint (Dockerfile): `nexus serve` on every interface of the container,
# which the gateway allows only with a bearer token, taken from the environment.
#
#   (no arguments) | serve [OPTIONS]   nexus serve --host $NEXUS_HOST --port $NEXUS_PORT [OPTIONS]
#   healthcheck                        exit 0 when the gateway's /healthz answers "ok" (HEALTHCHECK)
#   anything else                      run as given (`nexus tools`, `nexus config check`, `sh`, ...)
#
# Environment: NEXUS_TOKEN (required; at least 16 characters) or NEXUS_TOKEN_FILE (a file
# holding it: a Docker/compose secret), NEXUS_HOST (0.0.0.0), NEXUS_PORT (8787), NEXUS_CONFIG
# (a config file; default: the built-in servers only), NEXUS_DATA_DIR (/data, the volume).
set -eu

NEXUS_HOST=${NEXUS_HOST:-0.0.0.0}
NEXUS_PORT=${NEXUS_PORT:-8787}

healthcheck() {
  # The check runs inside the container: a wildcard bind answers on loopback, whose Host the
  # gateway always accepts; /healthz needs no token.
  case "$NEXUS_HOST" in
    0.0.0.0 | :: | "[::]") address=127.0.0.1 ;;
    *:*) address="[$NEXUS_HOST]" ;;
    *) address=$NEXUS_HOST ;;
  esac
  exec python3 - "http://$address:$NEXUS_PORT/healthz" <<'PY'
import json
import sys
import urllib.request

url = sys.argv[1]
try:
    with urllib.request.urlopen(url, timeout=4) as answer:
        status = json.load(answer).get("status")
except (OSError, ValueError) as error:
    sys.exit(f"unhealthy: {url}: {error}")
if status != "ok":
    sys.exit(f"unhealthy: {url} says status={status!r}")
print(f"healthy: {url}")
PY
}

serve() {
  if [ -z "${NEXUS_TOKEN:-}" ] && [ -n "${NEXUS_TOKEN_FILE:-}" ]; then
    if [ ! -r "$NEXUS_TOKEN_FILE" ]; then
      echo "nexus-entrypoint: NEXUS_TOKEN_FILE=$NEXUS_TOKEN_FILE cannot be read" >&2
      exit 2
    fi
    NEXUS_TOKEN=$(tr -d '\r\n' <"$NEXUS_TOKEN_FILE")
  fi
  if [ -z "${NEXUS_TOKEN:-}" ]; then
    echo "nexus-entrypoint: set NEXUS_TOKEN (or NEXUS_TOKEN_FILE): the gateway listens on $NEXUS_HOST," \
      "where every client must send it as a bearer token; make one with" \
      "python3 -c 'import secrets; print(secrets.token_urlsafe(24))'" >&2
    exit 2
  fi
  export NEXUS_TOKEN
  exec nexus serve --host "$NEXUS_HOST" --port "$NEXUS_PORT" "$@"
}

case "${1:-serve}" in
  serve)
    [ $# -gt 0 ] && shift
    serve "$@"
    ;;
  -*) serve "$@" ;;
  healthcheck) healthcheck ;;
  *) exec "$@" ;;
esac
