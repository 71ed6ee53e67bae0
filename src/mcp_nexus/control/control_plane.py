"""The control plane's composition root: LLM client, tool source, router, queue, executor and worker
for one gateway, and the operations the MCP tools, the admin API and the CLI share.

Built only when `llm.base_url` is set or `control.enabled` is true (`ControlPlane.wanted`).
Every tool call it makes goes through `gateway.call_tool_result`, i.e. the gateway's
pipeline (cache, limits, offload, timeouts, fallback, metrics), as caller "executor" with
the task id as its client. LLM and control settings apply at start (a reload does not
rebuild the control plane).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mcp_types as types

from mcp_nexus.config.config_applied import ConfigApplied
from mcp_nexus.config.schema import NexusConfig
from mcp_nexus.config.secrets import SecretRedactor, config_secrets, install_log_redaction
from mcp_nexus.control.decision_cache import DecisionCache
from mcp_nexus.control.executor import McpExecutor, Router
from mcp_nexus.control.llm_protocol import LLMClientProtocol
from mcp_nexus.control.router import McpRouter
from mcp_nexus.control.rule_router import RuleRouter
from mcp_nexus.control.task import ExecutionData, TaskStatus, UnifiedTask
from mcp_nexus.control.task_queue import TaskQueue
from mcp_nexus.control.task_queues import open_task_queue
from mcp_nexus.control.task_tools import task_tools
from mcp_nexus.control.tool_source import IndexToolSource, ToolSource
from mcp_nexus.control.worker import TaskWorker
from mcp_nexus.paths import data_subdir
from mcp_nexus.pipeline.call import Caller

if TYPE_CHECKING:
    from mcp_nexus.gateway import Gateway

logger = logging.getLogger(__name__)

TaskListener = Callable[[UnifiedTask, str], None]
WAIT_POLL = 1.0
CONTROL_TOOL_PREFIX = "nexus."
"""The control plane's own tools: never offered to the router (a goal must not start goals)."""


def default_queue_path() -> Path:
    return data_subdir("control") / "tasks.sqlite"


class ControlPlane:
    def __init__(
        self,
        gateway: Gateway,
        *,
        llm: LLMClientProtocol | None = None,
        queue: TaskQueue | None = None,
        tools: ToolSource | None = None,
    ) -> None:
        config = gateway.config
        self.gateway = gateway
        self.settings = config.control
        if llm is None and config.llm.base_url:
            from mcp_nexus.control.openai_client import OpenAICompatibleClient

            llm = OpenAICompatibleClient(config.llm)
        self.llm = llm
        # Every text of a task (errors, step results, the model's answers and errors) may hold a
        # secret someone else wrote: an endpoint answering 401 echoes the key it was sent.
        self.redactor = SecretRedactor([*config_secrets(config), *_llm_keys(config)])
        self._unredact_logs: Callable[[], None] | None = None
        path = (
            Path(self.settings.queue_path).expanduser() if self.settings.queue_path else default_queue_path()
        )
        self.queue: TaskQueue = queue or open_task_queue(
            gateway.stores, path
        )  # sqlite, or Redis (stores.tasks)
        self.tools: ToolSource = tools or IndexToolSource(gateway.index, gateway.catalog)
        self.cache = DecisionCache() if self.settings.decision_cache else None
        self._listeners: dict[str, list[TaskListener]] = {}
        self.executor = McpExecutor(
            make_router=self._router,
            call_tool=self._call_tool,
            queue=self.queue,
            settings=self.settings,
            llm=llm,
            tools=_WithoutControlTools(self.tools),
            on_event=self._on_event,
        )
        self.worker = TaskWorker(self.queue, self.executor, concurrency=self.settings.workers)

    @staticmethod
    def wanted(config: NexusConfig) -> bool:
        return bool(config.llm.base_url) or config.control.enabled

    # -- lifetime ---------------------------------------------------------------------------

    def install(self) -> None:
        """Add the nexus.* task tools to the gateway and make this control plane reachable from it."""
        for tool in task_tools(self):
            self.gateway.add_local_tool(tool)
        self.gateway.control = self
        self.gateway.events.subscribe(ConfigApplied, self._on_config)
        self._unredact_logs = install_log_redaction(self.redactor)

    def _on_config(self, event: ConfigApplied) -> None:
        old, new = event.old, event.new
        if old.llm != new.llm or old.control != new.control:
            logger.warning("the llm/control settings changed: they apply when nexus serve restarts")
        # Old secrets stay redacted too: tasks and logs written before the reload may hold them.
        self.redactor = self.redactor.with_secrets(config_secrets(new))
        if self._unredact_logs is not None:
            self._unredact_logs()
            self._unredact_logs = install_log_redaction(self.redactor)

    async def start(self) -> None:
        await self.worker.start()

    async def stop(self) -> None:
        await self.worker.stop()
        close = getattr(self.llm, "close", None)
        if close is not None:
            await close()
        await self.queue.close()
        if self._unredact_logs is not None:
            self._unredact_logs()
            self._unredact_logs = None

    # -- parts -------------------------------------------------------------------------------

    def _router(self, llm: LLMClientProtocol | None) -> Router:
        tools = _WithoutControlTools(self.tools)
        if llm is None:
            return RuleRouter(tools)
        return McpRouter(llm, tools, max_tools=self.settings.max_tools, cache=self.cache)

    async def _call_tool(
        self, name: str, arguments: dict[str, Any], task: UnifiedTask
    ) -> types.CallToolResult:
        # In the starter's profile: a task reaches no tool its starter could not (profiles/resolve.py).
        caller = Caller("executor", client=task.id, profile=task.profile)
        return await self.gateway.call_tool_result(name, arguments, caller=caller)

    def redacted(self, task: UnifiedTask) -> UnifiedTask:
        """A copy of `task` with every configured secret masked in all of its text: what leaves Nexus."""
        if not self.redactor:
            return task
        return UnifiedTask.model_validate(self.redactor.redact_data(task.model_dump(mode="json")))

    def _on_event(self, task: UnifiedTask, message: str) -> None:
        message = self.redactor.redact(message)
        logger.info("task %s: %s", task.id, message)
        for listener in list(self._listeners.get(task.id, ())):
            try:
                listener(task, message)
            except Exception:
                logger.exception("task listener failed")

    # -- operations ---------------------------------------------------------------------------

    async def submit(
        self,
        goal: str,
        *,
        mode: str | None = None,
        context: dict[str, Any] | None = None,
        user_intent: str | None = None,
        owner: str | None = None,
        profile: str | None = None,
    ) -> UnifiedTask:
        task = UnifiedTask(
            owner=owner,
            profile=profile,
            execution_data=ExecutionData(goal=goal, user_intent=user_intent or goal),
            context=context or {},
            mode=mode or self.settings.mode,  # type: ignore[arg-type]
        )
        await self.queue.enqueue(task)
        self.worker.wake.set()
        return self.redacted(task)

    async def get(self, task_id: str) -> UnifiedTask:
        return self.redacted(await self.queue.get(task_id))

    async def list(self, status: TaskStatus | None = None, limit: int = 100) -> list[UnifiedTask]:
        return [self.redacted(task) for task in await self.queue.list(status, limit)]

    async def cancel(self, task_id: str) -> UnifiedTask:
        task = await self.queue.cancel(task_id)
        if self.worker.cancel(task_id):
            # Wait (briefly) for the worker to record the cancellation, so the answer shows it.
            for _ in range(50):
                if not self.worker.is_running(task_id):
                    break
                await asyncio.sleep(0.02)
            task = await self.queue.get(task_id)
        return self.redacted(task)

    def tool_timeout(self, name: str) -> float | None:
        """The call timeout the pipeline applies to one of the gateway's tools (None: not listed)."""
        policy = self.gateway.governance.policies.resolve(name)
        return None if policy is None else float(policy.timeout)

    def subscribe(self, task_id: str, listener: TaskListener) -> Callable[[], None]:
        self._listeners.setdefault(task_id, []).append(listener)

        def unsubscribe() -> None:
            listeners = self._listeners.get(task_id, [])
            if listener in listeners:
                listeners.remove(listener)
            if not listeners:
                self._listeners.pop(task_id, None)

        return unsubscribe

    async def wait(self, task_id: str, timeout: float, listener: TaskListener | None = None) -> UnifiedTask:
        """The task once finished, or as it is after `timeout` seconds; `listener` hears each event meanwhile."""
        finished = asyncio.Event()

        def on_event(task: UnifiedTask, message: str) -> None:
            if listener is not None:
                listener(task, message)
            if task.status.finished:
                finished.set()

        unsubscribe = self.subscribe(task_id, on_event)
        try:
            task = await self.queue.get(task_id)
            deadline = asyncio.get_running_loop().time() + timeout
            while not task.status.finished:
                left = deadline - asyncio.get_running_loop().time()
                if left <= 0:
                    break
                # Events come from this replica's worker; with a shared queue (stores.tasks) another
                # replica may run the task, so the queue is looked at too, every WAIT_POLL seconds.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(finished.wait(), min(left, WAIT_POLL))
                task = await self.queue.get(task_id)
        finally:
            unsubscribe()
        return self.redacted(await self.queue.get(task_id))


def _llm_keys(config: NexusConfig) -> list[str]:
    """The key the model endpoint is sent, wherever it came from (the file, `$<api_key_env>`, `$OPENAI_API_KEY`)."""
    if not config.llm.base_url:
        return []
    from mcp_nexus.control.openai_client import NO_KEY, resolve_api_key

    key = resolve_api_key(config.llm)
    return [] if key == NO_KEY else [key]


class _WithoutControlTools:
    """The tool source minus the control plane's own tools."""

    def __init__(self, source: ToolSource) -> None:
        self.source = source

    def tools(self) -> list[Any]:
        return [t for t in self.source.tools() if not t.tool_name.startswith(CONTROL_TOOL_PREFIX)]

    def version(self) -> str:
        return self.source.version()

    def search(self, query: str, limit: int) -> list[Any]:
        search = getattr(self.source, "search", None)
        if search is None:
            return []
        return [t for t in search(query, limit + 4) if not t.tool_name.startswith(CONTROL_TOOL_PREFIX)][
            :limit
        ]
