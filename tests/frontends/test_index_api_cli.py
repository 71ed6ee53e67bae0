"""The tool index over the admin API and `nexus index ...`, against a real `nexus serve`."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stores.test_index_stores import DESIGN_DOCUMENT
from support.polling import eventually_sync
from support.processes import VENV_BIN, child_env
from support.served_gateway import ServedGateway, served

ENTRY_FIELDS = {
    "server_id",
    "tool_name",
    "description",
    "input_schema",
    "tags",
    "blocking",
    "cost_estimate",
    "last_updated",
    "annotations",
    "name",
}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedGateway]:
    tmp = tmp_path_factory.mktemp("index-api")
    config = tmp / "nexus.json"
    config.write_text(
        json.dumps(
            {"servers": {"robot": {"transport": "embedded", "module": "support.robot_server:create_server"}}}
        )
    )
    with served(config, tmp) as running:
        running.wait_for("the index synced", lambda: running.get("/api/index").json()["source"] == "sync")
        yield running


def nexus(gateway: ServedGateway, *args: str, local: bool = False) -> subprocess.CompletedProcess[str]:
    target = ["--local"] if local else ["--url", gateway.base]
    env = child_env(COLUMNS="200", NEXUS_DATA_DIR=str(gateway.log.parent / "data"))
    return subprocess.run(
        [str(VENV_BIN / "nexus"), "index", *args, *target],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_status_says_where_the_index_came_from(gateway: ServedGateway) -> None:
    status = gateway.get("/api/index").json()
    assert (status["source"], status["stale"]) == ("sync", False)
    assert {s["server_id"]: s["state"] for s in status["servers"]} == {
        "robot": "synced",
        "cortex": "synced",
        "device": "synced",
    }
    assert status["saved_to"].endswith("data/index/tool_index.sqlite3")
    assert status["tags"]["navigation"] == 1 and status["ttl_seconds"] == 3600


def test_tools_by_tag_search_and_one_entry(gateway: ServedGateway) -> None:
    navigation = gateway.get("/api/index/tools?tag=navigation").json()["tools"]
    assert [row["name"] for row in navigation] == ["robot.navigate_to"]
    entry = navigation[0]
    assert set(entry) == ENTRY_FIELDS
    assert (entry["server_id"], entry["tool_name"], entry["blocking"], entry["cost_estimate"]) == (
        "robot",
        "navigate_to",
        True,
        "high",
    )
    assert entry["annotations"] == {"destructiveHint": False} and entry["last_updated"].endswith("Z")
    assert gateway.get("/api/index/tools/navigate_to").json() == entry
    found = gateway.get("/api/index/tools?q=%E7%B4%A7%E6%80%A5%E5%81%9C%E6%AD%A2&limit=1").json()[
        "tools"
    ]  # 紧急停止
    assert [row["name"] for row in found] == ["robot.emergency_stop"]
    missing = gateway.get("/api/index/tools/robot.navigate")
    assert missing.status_code == 404 and missing.json()["closest"][0] == "robot.navigate_to"
    bad = gateway.get("/api/index/tools?limit=0")
    assert bad.status_code == 400 and "'limit' must be a whole number" in bad.json()["error"]
    unknown = gateway.get("/api/index/tools?tags=navigation")
    assert unknown.status_code == 400 and "unknown query parameter 'tags'" in unknown.json()["error"]
    newline = gateway.get("/api/index/tools/a%0Ab")  # any name reaches the handler and gets JSON
    assert newline.status_code == 404 and "no tool named 'a\\nb'" in newline.json()["error"]


def test_sync_over_the_api_and_the_cli(gateway: ServedGateway) -> None:
    before = gateway.get("/api/index").json()["syncs"]
    answer = gateway.post("/api/index/sync").json()
    assert answer["syncs"] == before + 1 and answer["source"] == "sync"
    done = nexus(gateway, "sync")
    assert done.returncode == 0, done.stderr
    assert "synced 3 of 3 servers" in done.stdout


def test_cli_status_ls_and_show(gateway: ServedGateway) -> None:
    status = nexus(gateway, "status")
    assert status.returncode == 0, status.stderr
    assert "source sync" in status.stdout and "robot" in status.stdout and "synced" in status.stdout
    listed = nexus(gateway, "ls", "--tag", "navigation", "--json")
    assert [row["name"] for row in json.loads(listed.stdout)] == ["robot.navigate_to"]
    table = nexus(gateway, "ls", "--tag", "emergency")
    assert "robot.emergency_stop" in table.stdout and "navigate_to" not in table.stdout
    shown = nexus(gateway, "show", "robot.send_notification")
    assert json.loads(shown.stdout)["tags"] == ["notification"]
    missing = nexus(gateway, "show", "nope")
    assert missing.returncode == 1 and "no tool named 'nope' in the index" in missing.stderr


def test_export_and_import_the_design_document(gateway: ServedGateway, tmp_path: Path) -> None:
    exported = tmp_path / "index.json"
    done = nexus(gateway, "export", str(exported))
    assert done.returncode == 0, done.stderr
    document: dict[str, Any] = json.loads(exported.read_text())
    assert set(document) == {"version", "last_sync", "servers"}
    assert {server["server_id"] for server in document["servers"]} == {"robot", "cortex", "device"}

    design = tmp_path / "design.json"
    design.write_text(json.dumps(DESIGN_DOCUMENT))
    imported = nexus(gateway, "import", str(design))
    assert imported.returncode == 0, imported.stderr
    assert "1 tools: imported from the admin API" in imported.stdout
    listed = gateway.get("/api/index/tools?tag=navigation").json()["tools"]
    assert [(row["server_id"], row["name"]) for row in listed] == [("ros2_mcp", "ros2_mcp.navigate_to")]

    broken = tmp_path / "broken.json"
    broken.write_text(
        json.dumps({"servers": [{"server_id": "s", "tools": [{"tool_name": "t", "blocking": "maybe"}]}]})
    )
    refused = nexus(gateway, "import", str(broken))
    assert refused.returncode == 1 and "servers[0].tools[0].blocking" in refused.stderr

    # A name the catalog refuses could never be served: that entry is left out and reported.
    named = {"servers": [{"server_id": "s", "tools": [{"tool_name": "good"}, {"tool_name": "bad\x1b[2J"}]}]}
    answer = gateway.post("/api/index/import", named)
    assert answer.status_code == 200, answer.text
    assert answer.json()["tools"] == 1 and "servers[0].tools[1].tool_name" in answer.json()["skipped"][0]

    restored = gateway.post("/api/index/import", document)
    assert restored.status_code == 200, restored.text
    assert gateway.get("/api/index").json()["tools"] == sum(len(s["tools"]) for s in document["servers"])


def test_local_mode_reads_the_saved_file_without_a_gateway(gateway: ServedGateway) -> None:
    def saved_has_robot() -> bool:
        done = nexus(gateway, "ls", "--json", local=True)
        return done.returncode == 0 and "robot.navigate_to" in done.stdout

    eventually_sync(saved_has_robot, 10, "the saved index to hold the robot's tools")
    listed = nexus(gateway, "ls", "--tag", "perception", "--json", local=True)
    assert [row["name"] for row in json.loads(listed.stdout)] == ["robot.capture_and_detect"]
    assert json.loads(nexus(gateway, "show", "emergency_stop", local=True).stdout)["server_id"] == "robot"


def test_the_served_openapi_document_has_the_index_operations(gateway: ServedGateway) -> None:
    paths = gateway.get("/api/openapi.json").json()["paths"]
    assert {"/api/index", "/api/index/tools", "/api/index/tools/{name}", "/api/index/sync"} <= set(paths)
    assert {"/api/index/export", "/api/index/import"} <= set(paths)


def test_a_private_gateway_of_one_command_never_writes_the_index(tmp_path: Path) -> None:
    config = tmp_path / "nexus.json"
    config.write_text(json.dumps({"gateway": {"include_builtins": True}}))
    done = subprocess.run(
        [str(VENV_BIN / "nexus"), "tools", "--config", str(config), "--json"],
        capture_output=True,
        text=True,
        env=child_env(NEXUS_DATA_DIR=str(tmp_path / "data"), NEXUS_CORTEX_DIR=str(tmp_path / "kb")),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "get_system_info" in done.stdout
    assert not (tmp_path / "data" / "index").exists()
