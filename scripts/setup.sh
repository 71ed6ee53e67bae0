#!/usr/bin/env bash
# Sets Nexus up on a fresh Debian/Ubuntu machine, and does nothing twice (each step is idempotent).
#
#   scripts/setup.sh --run-only   what `make run` needs: the Python venv (.venv) with the runtime
#                                 dependencies only; no root, no Debian package
#   scripts/setup.sh              what `make test` needs on top: the dev extra in the same venv,
#                                 Debian packages (bubblewrap, libseccomp2, chromium, redis-server,
#                                 ...; root or sudo), the npm test peers and the v1-SDK peer venv
#
# `make run` and `make test` share .venv: each install leaves its own stamp, so a venv that
# `make run` created is upgraded to the dev extra by the next `make test`, and a venv that
# `make test` set up already serves `make run`.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
RUN_STAMP=.venv/.installed-run # runtime dependencies (`pip install -e .`)
DEV_STAMP=.venv/.installed     # runtime + dev extra (`pip install -e '.[dev]'`); the name earlier setups used

fresh() { [ -f "$1" ] && [ ! pyproject.toml -nt "$1" ]; }

make_venv() {
  [ -x .venv/bin/python ] && return 0
  echo "setup: creating the Python venv (.venv)"
  if ! "$PY" -m venv .venv; then
    rm -rf .venv
    echo "setup: '$PY -m venv' failed: Debian/Ubuntu split venv out of Python (apt-get install python3-venv)," >&2
    echo "setup: or point PYTHON at another Python 3.11+ (PYTHON=python3.12 make run)" >&2
    exit 1
  fi
  .venv/bin/pip install -q --upgrade pip
}

if [ "${1:-}" = "--run-only" ]; then
  if ! fresh "$DEV_STAMP" && ! fresh "$RUN_STAMP"; then
    make_venv
    echo "setup: installing Nexus and its runtime dependencies into .venv"
    .venv/bin/pip install -q -e .
    touch "$RUN_STAMP"
  fi
  # No bubblewrap is no reason to stop: `nexus serve` says once how to get it, and python_sandbox
  # answers each call with the same hint.
  exit 0
fi

# -- everything below is for the tests (`make test`) -------------------------------------------

# libseccomp2 builds python_sandbox's syscall filter (through PyPI's pyseccomp); python3-seccomp
# gives the system Python the same API (a test runs the sandbox library from it as uid 65534).
# chromium: the dashboard's browser tests (Playwright drives the system browser; it never downloads one).
# redis-server and haproxy: the shared store and the load balancer of the scale-out tests (tests/scale).
APT_PACKAGES=(bubblewrap libseccomp2 python3-seccomp pulseaudio pulseaudio-utils alsa-utils chromium redis-server haproxy)

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

if ! fresh "$DEV_STAMP"; then
  make_venv
  echo "setup: installing Nexus with its test dependencies (the dev extra) into .venv"
  .venv/bin/pip install -q -e '.[dev]'
  touch "$DEV_STAMP"
fi
# The plugin tests/plugins uses: a separate distribution, installed as any plugin is (docs/PLUGINS.md).
.venv/bin/python -c "import nexus_test_plugin" 2>/dev/null || .venv/bin/pip install -q --no-deps --no-build-isolation -e tests/plugins/nexus_test_plugin

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
