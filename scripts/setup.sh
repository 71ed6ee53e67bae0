#!/usr/bin/env bash
# Installs everything Nexus's tests need on a fresh Debian/Ubuntu machine, and nothing twice:
# Debian packages (bubblewrap, libseccomp2, pulseaudio, ...), the Python venv, the npm test peers
# (with Node 22 from the npm registry) and the v1-SDK peer venv. Each step is idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

# libseccomp2 builds python_sandbox's syscall filter (through PyPI's pyseccomp); python3-seccomp
# gives the system Python the same API (a test runs the sandbox library from it as uid 65534).
# chromium: the dashboard's browser tests (Playwright drives the system browser; it never downloads one).
# redis-server and haproxy: the shared store and the load balancer of the scale-out tests (tests/scale).
APT_PACKAGES=(bubblewrap libseccomp2 python3-seccomp pulseaudio pulseaudio-utils alsa-utils chromium redis-server haproxy)
PY=${PYTHON:-python3}

need_apt=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need_apt+=("$pkg")
done
if ((${#need_apt[@]})); then
  echo "setup: installing Debian packages: ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  # Several setups may run at once on one machine: wait for the dpkg lock instead of failing.
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

stamp=.venv/.installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setup: creating the Python venv (.venv)"
  [ -x .venv/bin/python ] || "$PY" -m venv .venv
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e '.[dev]'
  touch "$stamp"
fi

if [ "${1:-}" = "--run-only" ]; then exit 0; fi

nstamp=tools/node/node_modules/.installed
if [ ! -f "$nstamp" ] || [ tools/node/package.json -nt "$nstamp" ]; then
  echo "setup: installing npm test peers (tools/node)"
  (cd tools/node && npm install --no-audit --no-fund --loglevel=error)
  touch "$nstamp"
fi

# A v1-SDK peer: mcp-server-sqlite needs mcp<2, so it lives in a venv of its own.
if [ ! -x .venv-v1/bin/mcp-server-sqlite ]; then
  echo "setup: creating the v1-SDK peer venv (.venv-v1)"
  "$PY" -m venv .venv-v1
  .venv-v1/bin/pip install -q --upgrade pip
  .venv-v1/bin/pip install -q 'mcp<2' mcp-server-sqlite
fi
