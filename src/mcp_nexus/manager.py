"""`McpManager`: the controller design's facade (3.1), for programs that embed Nexus as a library.

    manager = McpManager()                                   # one per process (singleton)
    await manager.initialize("nexus.yaml", llm_client=my_llm)  # servers, tool view, router, task queue
    await manager.task_queue.enqueue(UnifiedTask(task_type=TaskType.MCP_CALL,
                                                 execution_data={"goal": "打开客厅的灯", "user_intent": "打开客厅的灯"}))
    await manager.close()

It sits beside runtime.py (it runs one) rather than in control/, which the runtime itself
builds on. It runs the same `Runtime` as `nexus serve`, without frontends: every call still goes
through the gateway's pipeline. `llm_client` is any `LLMClientProtocol` (None: the
config's `llm` section, or the rule router). The design's deprecated task methods
(submit_task, get_task_status, cancel_task, list_all_tasks) are the queue's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp_nexus.config.load import load_config
from mcp_nexus.control.control_plane import ControlPlane
from mcp_nexus.control.llm_protocol import LLMClientProtocol
from mcp_nexus.control.task_queue import TaskQueue
from mcp_nexus.runtime import Runtime, RuntimeOptions


class McpManager:
    _instance: McpManager | None = None

    runtime: Runtime | None
    agent: Any

    def __new__(cls) -> McpManager:
        if cls._instance is None:
            instance = super().__new__(cls)
            instance.runtime = None
            instance.agent = None
            cls._instance = instance
        return cls._instance

    @property
    def initialized(self) -> bool:
        return self.runtime is not None

    async def initialize(
        self, config_path: str | Path, llm_client: LLMClientProtocol | None = None, agent: Any = None
    ) -> None:
        """Load the config, connect every server, build the tool view and router, start the task worker."""
        if self.runtime is not None:
            return
        config, _warnings = load_config(Path(config_path))
        options = RuntimeOptions(http=False, stdio=False, bridge=False, watch=False, wait_ready=True)
        runtime = Runtime(config, options, llm=llm_client if llm_client is not None else None)
        if runtime.control is None:  # neither llm nor control configured: the rule router
            runtime.control = ControlPlane(runtime.gateway)
            runtime.control.install()
        await runtime.__aenter__()
        self.runtime, self.agent = runtime, agent

    @property
    def control(self) -> ControlPlane:
        if self.runtime is None or self.runtime.control is None:
            raise RuntimeError(
                "McpManager is not initialized: await manager.initialize(config_path, llm_client) first"
            )
        control: ControlPlane = self.runtime.control
        return control

    @property
    def task_queue(self) -> TaskQueue:
        """The unified task queue; tasks enqueued here are run by the executor."""
        return _WakingQueue(self.control)  # type: ignore[return-value]

    async def close(self) -> None:
        """Stop the worker and every server; a later `McpManager()` starts afresh."""
        runtime, self.runtime = self.runtime, None
        if runtime is not None:
            await runtime.__aexit__(None, None, None)
        McpManager._instance = None


class _WakingQueue:
    """The control plane's queue, waking its worker on enqueue (no wait for the next poll)."""

    def __init__(self, control: ControlPlane) -> None:
        self._control = control

    def __getattr__(self, name: str) -> Any:
        return getattr(self._control.queue, name)

    async def enqueue(self, task: Any) -> Any:
        queued = await self._control.queue.enqueue(task)
        self._control.worker.wake.set()
        return queued
