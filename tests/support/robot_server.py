"""A small real MCP server shaped like a robot's: tools described in Chinese or English, some annotated.

Embedded (`support.robot_server:create_server`) or over stdio (`python -m support.robot_server`).
Its tools only answer with what they were asked: the tool index and search are what is tested.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations


def create_server() -> MCPServer:
    server = MCPServer("robot")

    @server.tool(
        description="导航到目标位置（地图坐标 x, y）", annotations=ToolAnnotations(destructiveHint=False)
    )
    def navigate_to(x: float, y: float) -> str:
        return f"arrived at {x},{y}"

    @server.tool(description="紧急停止机器人的所有运动")
    def emergency_stop() -> str:
        return "stopped"

    @server.tool(description="向用户发送通知消息")
    def send_notification(text: str) -> str:
        return f"sent: {text}"

    @server.tool(
        description="用摄像头拍照并识别画面中的物体",
        annotations=ToolAnnotations(readOnlyHint=True),
    )
    def capture_and_detect() -> str:
        return "a cup, a chair"

    @server.tool(description="打开或关闭房间里的灯 (turn a room's light on or off)")
    def set_light(room: str, on: bool) -> str:
        return f"{room} light {'on' if on else 'off'}"

    @server.tool(
        description="Read the battery level of the robot in percent.",
        annotations=ToolAnnotations(readOnlyHint=True, idempotentHint=True),
    )
    def battery_level() -> int:
        return 87

    return server


if __name__ == "__main__":
    create_server().run("stdio")
