"""Tags from names and descriptions (English and Chinese), operator rules, annotations; blocking and cost."""

from __future__ import annotations

import pytest

from mcp_nexus.catalog.tags import Tagger
from mcp_nexus.catalog.tool_traits import tool_traits
from mcp_nexus.config.errors import ConfigError
from mcp_nexus.config.load import config_from_document
from mcp_nexus.config.schema import ServerConfig


@pytest.mark.parametrize(
    ("name", "description", "tag"),
    [
        ("navigate_to", "Navigate robot to target position", "navigation"),
        ("goto", "", "navigation"),
        ("move_base", "导航到目标位置", "navigation"),
        ("plan", "路径规划：计算到目标点的路线", "navigation"),
        ("send_email", "Send an email to a user", "notification"),
        ("remind", "", "notification"),
        ("tts", "在音箱上播报一条提醒", "notification"),
        ("stop_all", "Emergency stop: halt every motor", "emergency"),
        ("sos", "", "emergency"),
        ("halt", "紧急停止机器人", "emergency"),
        ("look", "Detect objects in the camera image", "perception"),
        ("see", "用摄像头拍照并识别物体", "perception"),
        ("lidarScan", "", "perception"),
    ],
)
def test_builtin_tags_in_both_languages(name: str, description: str, tag: str) -> None:
    assert tag in Tagger().tags_for(name, description)


@pytest.mark.parametrize(
    ("name", "description"),
    [
        ("git_commit", "Records changes to the repository with a commit message"),
        ("git_push", "Push commits to the remote"),
        ("read_file", "Read a file at the given path"),
        ("get_current_time", "Get current time in a specific timezone"),
        ("set_cover_position", "Set the position of a cover"),
    ],
)
def test_common_false_friends_get_no_builtin_tag(name: str, description: str) -> None:
    assert Tagger().tags_for(name, description) == []


def test_operator_rules_keywords_and_regex_add_tags_and_words() -> None:
    tagger = Tagger({"home": ["灯", "light", "/^ha_/"], "navigation": ["巡航"]})
    assert tagger.tags_for("ha_turn_on", "") == ["home"]
    assert tagger.tags_for("switch", "打开客厅的灯") == ["home"]
    assert tagger.tags_for("toggle", "Toggle a LIGHT") == ["home"]
    assert tagger.tags_for("lighthouse", "") == []  # a keyword is a whole word in Latin script
    assert tagger.tags_for("cruise", "开始巡航") == ["navigation"]


def test_annotation_hints_become_tags() -> None:
    hints = {"readOnlyHint": True, "idempotentHint": True, "destructiveHint": False, "openWorldHint": True}
    assert Tagger().tags_for("x", "", hints) == ["read-only", "idempotent", "open-world"]
    assert Tagger().tags_for("rm", "", {"destructiveHint": True}) == ["destructive"]


def test_a_bad_rule_in_the_config_names_the_tag_and_the_regex() -> None:
    with pytest.raises(ConfigError) as caught:
        config_from_document(
            {"gateway": {"index": {"tag_rules": {"home": ["/light(/"]}}}}, include_builtins=False
        )
    text = str(caught.value)
    assert "gateway.index.tag_rules" in text and "tag 'home'" in text and "/light(/" in text


def _server(**tool_config: dict[str, object]) -> ServerConfig:
    return ServerConfig.model_validate(
        {"name": "robot", "transport": "stdio", "command": "x", "tool_config": tool_config}
    )


def test_traits_from_annotations_and_words() -> None:
    server = _server()
    navigate = tool_traits(server, "navigate_to", "Navigate robot to target position", {})
    assert (navigate.blocking, navigate.cost_estimate) == (True, "high")
    chinese = tool_traits(server, "move_base", "导航到目标位置", {})
    assert (chinese.blocking, chinese.cost_estimate) == (True, "high")
    read = tool_traits(server, "battery_level", "Read the battery", {"readOnlyHint": True})
    assert (read.blocking, read.cost_estimate) == (False, "low")
    web = tool_traits(server, "fetch", "Fetch a URL", {"readOnlyHint": True, "openWorldHint": True})
    assert web.cost_estimate == "medium"
    delete = tool_traits(server, "delete_entities", "Delete entities", {"destructiveHint": True})
    assert (delete.blocking, delete.cost_estimate) == (False, "high")
    listing = tool_traits(server, "list_rooms", "List the rooms", {})
    assert (listing.blocking, listing.cost_estimate) == (False, "low")
    waits = tool_traits(server, "run_job", "Run a job", {}, {"properties": {"timeout": {"type": "number"}}})
    assert (waits.blocking, waits.cost_estimate) == (True, "medium")


def test_tool_config_overrides_traits_tool_first_then_server() -> None:
    server = _server(navigate_to={"cost": "low", "blocking": False}, battery_level={"cost": "high"})
    navigate = tool_traits(server, "navigate_to", "Navigate robot to target position", {})
    assert (navigate.blocking, navigate.cost_estimate) == (False, "low")
    battery = tool_traits(server, "battery_level", "Read the battery", {"readOnlyHint": True})
    assert (battery.blocking, battery.cost_estimate) == (False, "high")
    whole = ServerConfig.model_validate({"name": "s", "transport": "stdio", "command": "x", "blocking": True})
    assert tool_traits(whole, "anything", "", {"readOnlyHint": True}).blocking is True


def test_a_bad_cost_in_tool_config_is_a_clear_config_error() -> None:
    doc = {"servers": {"robot": {"command": "x", "tool_config": {"navigate_to": {"cost": "huge"}}}}}
    with pytest.raises(ConfigError) as caught:
        config_from_document(doc, include_builtins=False)
    assert "servers.robot.tool_config.navigate_to.cost" in str(caught.value)
    assert "'low', 'medium' or 'high'" in str(caught.value)
