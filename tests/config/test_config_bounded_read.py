"""A config is read bounded: size cap, regular files only, text only, nesting capped.

Real `nexus config check` processes on every hostile file (each must answer exit 2 naming the
file and the problem, within a bound: a FIFO must not hang), and a real `nexus serve`
watching a config that is replaced by a symlink to `/dev/zero` (it used to read it until 6.8 GB
of RSS and could not be stopped): RSS stays flat, calls keep working, the refusal is logged,
the last good config stays in force and SIGTERM stops it within seconds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import httpx2
import pytest

from mcp_nexus.config.errors import ConfigError
from mcp_nexus.config.load import MAX_CONFIG_BYTES, MAX_CONFIG_DEPTH, load_config
from support.polling import eventually_sync
from support.processes import VENV_BIN, free_port, running, wait_for_http
from support.served_gateway import gateway_env

DEEP = 10_000


def _hostile_files(folder: Path) -> dict[str, tuple[Path, str]]:
    """name -> (file, what the error must say)."""
    files: dict[str, tuple[Path, str]] = {}
    zero = folder / "zero.json"
    zero.symlink_to("/dev/zero")
    files["/dev/zero symlink"] = (zero, "not a regular file (a character device)")
    fifo = folder / "fifo.json"
    os.mkfifo(fifo)
    files["FIFO"] = (fifo, "not a regular file (a FIFO)")
    big = folder / "big.json"
    big.write_bytes(b'{"servers": {}, "x": "' + b"a" * 10_000_000 + b'"}')
    files["10 MB"] = (big, f"more than the {MAX_CONFIG_BYTES:,}-byte limit")
    binary = folder / "binary.json"
    binary.write_bytes(b'{"servers": {}}\x00\x01\x02\xff' * 4)
    files["binary"] = (binary, "a binary file, not a config (a NUL byte at offset 15)")
    latin = folder / "latin1.yaml"
    latin.write_bytes("servers: {}\nname: caf\u00e9\n".encode("latin-1"))
    files["not UTF-8"] = (latin, "not UTF-8 text (byte 0xe9 at offset 21)")
    deep_json = folder / "deep.json"
    deep_json.write_text("[" * DEEP + "]" * DEEP)
    files["deep JSON"] = (deep_json, f"nested deeper than {MAX_CONFIG_DEPTH} levels")
    deep_yaml = folder / "deep.yaml"
    deep_yaml.write_text("servers: " + "[" * DEEP + "]" * DEEP + "\n")
    files["deep YAML"] = (deep_yaml, f"nested deeper than {MAX_CONFIG_DEPTH} levels")
    deep_objects = folder / "deep-objects.json"
    deep_objects.write_text('{"a":' * DEEP + "1" + "}" * DEEP)
    files["deep JSON objects"] = (deep_objects, f"nested deeper than {MAX_CONFIG_DEPTH} levels")
    laughs = folder / "laughs.yaml"
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]")
    laughs.write_text("\n".join(lines) + "\n")
    files["billion laughs"] = (laughs, "more than 1,000,000 values once its YAML aliases are expanded")
    cycle = folder / "cycle.yaml"
    cycle.write_text("servers: &a [*a]\n")
    files["self-referring alias"] = (cycle, "a YAML alias refers to a node that holds it")
    return files


def test_config_check_refuses_every_hostile_file_with_exit_2(tmp_path: Path) -> None:
    files = _hostile_files(tmp_path)
    procs = {
        name: subprocess.Popen(
            [str(VENV_BIN / "nexus"), "config", "check", str(path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "COLUMNS": "400"},
        )
        for name, (path, _) in files.items()
    }
    failures = []
    for name, proc in procs.items():
        path, expected = files[name]
        try:
            out, err = proc.communicate(timeout=60)  # a FIFO used to block here forever
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            failures.append(f"{name}: still running after 60 s")
            continue
        text = " ".join(err.decode().split())
        if proc.returncode != 2 or expected not in text or f"invalid config {path}" not in text:
            failures.append(f"{name}: exit {proc.returncode}, stderr {text[:600]!r}, stdout {out[:200]!r}")
        if "Traceback" in text:
            failures.append(f"{name}: traceback {text[:600]!r}")
    assert not failures, "\n".join(failures)


def test_limits_in_process(tmp_path: Path) -> None:
    """Just under every limit loads; just over is refused (the bounds are where the docs say)."""
    ok = tmp_path / "ok.json"
    nested: object = {}
    for _ in range(MAX_CONFIG_DEPTH - 2):  # 63 levels under "meta", 64 with the root object
        nested = {"x": nested}
    ok.write_text(json.dumps({"servers": {}, "gateway": {"include_builtins": False}}))
    load_config(ok)
    padded = tmp_path / "padded.json"
    body = json.dumps({"servers": {}})
    padded.write_text(body + " " * (MAX_CONFIG_BYTES - len(body)))
    load_config(padded)
    padded.write_text(body + " " * (MAX_CONFIG_BYTES - len(body) + 1))
    with pytest.raises(ConfigError, match="limit for a config"):
        load_config(padded)
    deep = tmp_path / "deep.json"
    deep.write_text(json.dumps({"servers": {}, "meta": nested}))  # MAX_CONFIG_DEPTH levels: the shape passes
    with pytest.raises(ConfigError) as caught:
        load_config(deep)
    assert "nested deeper" not in str(caught.value)  # refused for the unknown key, not for its depth
    deep.write_text(json.dumps({"servers": {}, "meta": {"y": nested}}))
    with pytest.raises(ConfigError, match="nested deeper than 64 levels"):
        load_config(deep)
    missing = tmp_path / "missing.json"
    with pytest.raises(ConfigError, match="cannot read the file: No such file or directory"):
        load_config(missing)
    with pytest.raises(ConfigError, match=r"not a regular file \(a directory\)"):
        load_config(tmp_path)


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _servers(base: str) -> dict[str, str]:
    rows = httpx2.get(base + "/api/servers", timeout=10).json()["servers"]
    return {row["name"]: row["state"] for row in rows}


def test_serve_watching_a_config_replaced_by_dev_zero(tmp_path: Path) -> None:
    config = tmp_path / "nexus.json"
    config.write_text(json.dumps({"servers": {}}))
    port = free_port()
    log = tmp_path / "gateway.log"
    args = [str(VENV_BIN / "nexus"), "serve", "--config", str(config), "--port", str(port)]  # watching
    with running(args, env=gateway_env(tmp_path), log=log) as proc:
        base = f"http://127.0.0.1:{port}"
        wait_for_http(base + "/api/servers", timeout=60, proc=proc)
        eventually_sync(lambda: "watching" in log.read_text(), 30, "the watcher to start", interval=0.1)

        def call() -> httpx2.Response:
            return httpx2.post(base + "/api/tools/get_system_info/call", json={"arguments": {}}, timeout=10)

        assert call().status_code == 200
        servers_before = _servers(base)
        time.sleep(0.5)
        rss_before = _rss_mb(proc.pid)

        link = tmp_path / "link"
        link.symlink_to("/dev/zero")
        os.replace(link, config)  # the file is now a symlink to /dev/zero

        eventually_sync(
            lambda: "not a regular file (a character device)" in log.read_text(),
            30,
            "the watcher to log the refusal",
            interval=0.1,
            detail=lambda: log.read_text()[-3000:],
        )
        peak = rss_before
        for _ in range(20):  # 4 s of calls after the refusal
            peak = max(peak, _rss_mb(proc.pid))
            assert call().status_code == 200
            time.sleep(0.2)
        assert peak - rss_before < 50, f"RSS grew from {rss_before:.0f} to {peak:.0f} MB"
        assert _servers(base) == servers_before  # the last good config stays in force
        assert "config change rejected, the running config stays in force" in log.read_text()

        started = time.monotonic()
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=15)
        took = time.monotonic() - started
        assert took < 5, f"SIGTERM took {took:.1f} s"
