#!/usr/bin/env bash
# Builds the image with Podman where no image registry can be reached (only Debian's and
# PyPI's mirrors): the Debian base is made with debootstrap and imported, then the Dockerfile
# is built on it. Root; Debian packages podman, runc and debootstrap.
#
#   docker/build-without-registry.sh [TAG]      (default localhost/mcp-nexus:dev)
set -euo pipefail
cd "$(dirname "$0")/.."
TAG=${1:-localhost/mcp-nexus:dev}
BASE=localhost/debian:bookworm-slim
# crun cannot run under a hybrid cgroup v1/v2 host, and a container may not raise the host's
# rlimits: runc with explicit ones works on both kinds of host.
RUN_OPTS=(--runtime "$(command -v runc)" --ulimit nofile=1024:1024 --ulimit nproc=4096:4096)

if ! podman image exists "$BASE"; then
  rootfs=$(mktemp -d /tmp/nexus-rootfs.XXXXXX)
  trap 'rm -rf "$rootfs"' EXIT
  debootstrap --variant=minbase bookworm "$rootfs"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -c --numeric-owner -C "$rootfs" . | podman import - "$BASE"
fi

# pip inside the build trusts the host's certificate bundle (a proxy's CA, where there is one).
certs=$(mktemp -d /tmp/nexus-build-certs.XXXXXX)
cp /etc/ssl/certs/ca-certificates.crt "$certs/host-ca.crt"
printf '[global]\ncert = /etc/nexus-build-certs/host-ca.crt\n' >"$certs/pip.conf"
podman build --format docker "${RUN_OPTS[@]}" --network host \
  -v "$certs:/etc/nexus-build-certs:ro" -v "$certs/pip.conf:/etc/pip.conf:ro" \
  --build-arg BASE="$BASE" -t "$TAG" .
rm -rf "$certs"
echo "built $TAG; run it with: podman run ${RUN_OPTS[*]} -p 127.0.0.1:8787:8787 -e NEXUS_TOKEN $TAG"
