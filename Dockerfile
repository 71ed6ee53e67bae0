# Nexus in a container: a Debian slim base with Debian's Python (python_sandbox runs code with
# /usr/bin/python3, the only interpreter its sandbox can see), bubblewrap for that sandbox, and
# the gateway in a venv, run by a non-root user.
#
#   docker build -t mcp-nexus .
#   docker run -d -p 127.0.0.1:8787:8787 -e NEXUS_TOKEN=<16+ characters> -v nexus-data:/data mcp-nexus
#
# `BASE` may name any Debian 12 (bookworm) image, e.g. one imported from `debootstrap` where no
# registry can be reached; both stages must use the same one (the venv links its Python).
ARG BASE=debian:bookworm-slim

FROM ${BASE} AS build
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
       python3 python3-venv ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml README.md LICENSE MANIFEST.in /src/
COPY docs /src/docs
COPY src /src/src
# The runtime dependencies only (no dev extra), installed as a normal (non-editable) package.
RUN python3 -m venv /opt/nexus \
    && /opt/nexus/bin/pip install --no-cache-dir --upgrade pip \
    && /opt/nexus/bin/pip install --no-cache-dir /src

FROM ${BASE}
# bubblewrap + libseccomp2: python_sandbox; tini: reaps the stdio servers' orphans as PID 1
# and passes signals on, so `docker stop` is the gateway's graceful SIGTERM.
# /shared/nexus-offload: where compose.yaml mounts the offload folder the replicas share (a new
# named volume takes its owner and mode from the image's folder).
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
       python3 bubblewrap libseccomp2 ca-certificates tini \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --uid 10001 --user-group --home-dir /data --no-create-home --shell /usr/sbin/nologin nexus \
    && install -d -o nexus -g nexus -m 0700 /data \
    && install -d -o nexus -g nexus -m 0700 /shared/nexus-offload
COPY --from=build /opt/nexus /opt/nexus
COPY docker/entrypoint.sh /usr/local/bin/nexus-entrypoint
ENV PATH=/opt/nexus/bin:$PATH \
    HOME=/data \
    NEXUS_DATA_DIR=/data \
    NEXUS_HOST=0.0.0.0 \
    NEXUS_PORT=8787 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# Everything Nexus writes (offloaded results, Cortex knowledge, the tool index, the task queue).
VOLUME ["/data"]
USER nexus
WORKDIR /data
EXPOSE 8787
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 CMD ["nexus-entrypoint", "healthcheck"]
ENTRYPOINT ["/usr/bin/tini", "--", "nexus-entrypoint"]
CMD ["serve"]
