"""compose.yaml, docker/haproxy.cfg and docker/nexus-replica.yaml fit together as docs/SCALING.md
describes (Redis, three replicas of the image, HAProxy in front); HAProxy itself (Debian's,
the version of the haproxy:2.6 image) accepts its config."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from mcp_nexus.config.load import load_config
from support.processes import ROOT

REPLICAS = ("nexus-1", "nexus-2", "nexus-3")


def compose() -> dict[str, Any]:
    document = yaml.safe_load((ROOT / "compose.yaml").read_text())
    assert isinstance(document, dict)
    return document


def mounts(service: dict[str, Any]) -> dict[str, str]:
    """Each volume's target -> its source."""
    pairs = (entry.split(":")[:2] for entry in service.get("volumes", []))
    return {target: source for source, target in pairs}


def test_compose_runs_redis_three_replicas_of_the_image_and_a_balancer() -> None:
    services = compose()["services"]
    assert set(services) == {"redis", *REPLICAS, "balancer"}
    for name in REPLICAS:
        replica = services[name]
        assert replica["build"] == "." and replica["image"] == "mcp-nexus"
        assert replica["environment"]["NEXUS_TOKEN"].startswith("${NEXUS_TOKEN:?"), (
            "the token must be required"
        )
        config_path = replica["environment"]["NEXUS_CONFIG"]
        assert (ROOT / mounts(replica)[config_path]).is_file()
    assert set(services["balancer"]["depends_on"]) == set(REPLICAS)
    assert "allkeys-lru" in services["redis"]["command"]


def test_the_replica_config_shares_the_stores_and_the_offload_volume() -> None:
    replica = compose()["services"]["nexus-1"]
    config, problems = load_config(ROOT / "docker" / "nexus-replica.yaml")
    assert not problems, problems
    assert config.stores.default == "redis://redis:6379/0"
    assert config.gateway.offload_dir in mounts(replica), "offload_dir must be the shared volume"
    assert mounts(replica)[config.gateway.offload_dir] in compose()["volumes"]
    # the balancer's health check sends this Host
    assert "nexus.internal" in config.gateway.allowed_hosts


def test_haproxy_balances_the_compose_replicas_and_accepts_its_config() -> None:
    balancer = compose()["services"]["balancer"]
    config_file = ROOT / mounts(balancer)["/usr/local/etc/haproxy/haproxy.cfg"]
    text = config_file.read_text()
    servers = re.findall(r"^\s*server \S+ (\S+):8787", text, re.MULTILINE)
    assert servers == list(REPLICAS)
    assert "hdr Host nexus.internal" in text and "stick match req.hdr(mcp-session-id)" in text
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    assert Path(haproxy).exists(), "haproxy is missing: run scripts/setup.sh (Debian package haproxy)"
    checked = subprocess.run(
        [haproxy, "-c", "-f", str(config_file)], capture_output=True, text=True, timeout=10, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Configuration file is valid" in checked.stdout


def test_the_dockerfile_runs_the_entrypoint_as_a_user_with_a_volume_and_a_healthcheck() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert "COPY docker/entrypoint.sh /usr/local/bin/nexus-entrypoint" in text
    assert (ROOT / "docker" / "entrypoint.sh").stat().st_mode & 0o111, "the entrypoint must be executable"
    assert re.search(r"^USER nexus$", text, re.MULTILINE)
    assert re.search(r'^VOLUME \["/data"\]$', text, re.MULTILINE)
    assert re.search(r'^HEALTHCHECK .*CMD \["nexus-entrypoint", "healthcheck"\]$', text, re.MULTILINE)
    assert "bubblewrap" in text and "pip install --no-cache-dir /src" in text  # no dev extra
