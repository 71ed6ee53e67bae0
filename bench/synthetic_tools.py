"""A real MCP server with many made-up tools, for bench/index.py (embedded: `synthetic_tools:create_server`).

Names, descriptions (one in five in Chinese) and input schemas are drawn from small word lists
with a fixed seed, so every run indexes the same tools.
"""

from __future__ import annotations

import random
from typing import Any

import mcp_types as types
from mcp.server import Server

VERBS = [
    "get",
    "set",
    "list",
    "create",
    "delete",
    "update",
    "search",
    "move",
    "open",
    "close",
    "send",
    "read",
]
OBJECTS = [
    "light", "door", "camera", "robot", "file", "message", "calendar", "order", "ticket", "user",
    "sensor", "map", "route", "alarm", "report", "invoice", "playlist", "thermostat", "repository", "branch",
]  # fmt: skip
DOMAINS = ["home", "office", "factory", "garden", "kitchen", "warehouse", "car", "cloud", "shop", "lab"]
ZH = ["打开", "关闭", "查询", "设置", "导航到", "发送通知", "拍照识别", "紧急停止", "读取", "删除"]
ZH_OBJECTS = ["客厅的灯", "卧室的空调", "机器人", "摄像头", "门锁", "窗帘", "厨房", "仓库", "传感器", "订单"]
PROPERTIES = ["id", "name", "room", "level", "position", "text", "query", "limit", "target", "mode", "speed"]


def synthetic_tools(count: int, seed: int) -> list[types.Tool]:
    rng = random.Random(seed)
    tools = []
    for i in range(count):
        verb, obj, domain = rng.choice(VERBS), rng.choice(OBJECTS), rng.choice(DOMAINS)
        if rng.random() < 0.2:
            description = f"{rng.choice(ZH)}{rng.choice(ZH_OBJECTS)}（{domain}）"
        else:
            description = f"{verb.capitalize()} the {obj} of the {domain}; returns the {obj}'s state."
        properties = {p: {"type": "string", "description": f"the {p}"} for p in rng.sample(PROPERTIES, 3)}
        hints = rng.choice(
            [None, {"readOnlyHint": True}, {"destructiveHint": True}, {"idempotentHint": True}]
        )
        tools.append(
            types.Tool(
                name=f"{verb}_{domain}_{obj}_{i}",
                description=description,
                input_schema={"type": "object", "properties": properties},
                annotations=types.ToolAnnotations.model_validate(hints) if hints else None,
            )
        )
    return tools


def create_server(count: int = 100, seed: int = 0) -> Server[Any]:
    tools = synthetic_tools(count, seed)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"{params.name}: ok")])

    return Server(f"synthetic-{seed}", on_list_tools=list_tools, on_call_tool=call_tool)
