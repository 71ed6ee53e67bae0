"""`McpExecutor`: carries a `UnifiedTask` out, step by step, in the design's two modes.

Plan-driven (default): no plan -> the LLM writes a `TaskPlan`; take the current `PlanStep`;
route it; call the tool through the gateway's pipeline; record the result; ask whether the
rest of the plan needs revising; next step; done when every step is done.
Goal-driven: route the goal; call; record; ask whether the goal is achieved; if not, the
LLM's next goal becomes the goal of the next step.

Bounded: `max_steps` routed steps (attempts included), `max_revisions` plan revisions, a
per-task deadline. A failed step is tried again `step_retries` times, after a backoff, routed
again with the failure in its history (so a model can correct its arguments). The task is
saved after every step (the queue resumes it there after a restart) and every step and LLM
exchange is recorded on it. Bad model output (invalid JSON, an unknown tool, invented
arguments) becomes a failed step with a message saying what was wrong; it never raises.

Without an LLM (rule router), a plan is the goal as its one step and a goal is done after
its first successful call.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import mcp_types as types

from mcp_nexus.config.control import ControlSettings
from mcp_nexus.control.decision import RouterContext, RouterDecision
from mcp_nexus.control.llm_json import BadAnswerError, json_object, string_list
from mcp_nexus.control.llm_protocol import LLMClientProtocol, LLMError
from mcp_nexus.control.recording_llm import RecordingLLM
from mcp_nexus.control.router import select_tools
from mcp_nexus.control.task import PlanStep, StepRecord, TaskPlan, TaskStatus, UnifiedTask
from mcp_nexus.control.task_queue import TaskQueue
from mcp_nexus.control.tool_source import ToolSource
from mcp_nexus.errors import GatewayError

logger = logging.getLogger(__name__)

MAX_RESULT_CHARS = 4000
MAX_PLAN_STEPS = 20


class Router(Protocol):
    async def route(self, context: RouterContext) -> RouterDecision: ...


ToolCaller = Callable[[str, dict[str, Any], UnifiedTask], Awaitable[types.CallToolResult]]
"""Calls a tool for a task; the control plane's one goes through `gateway.call_tool_result` (the pipeline)."""
RouterFactory = Callable[[LLMClientProtocol | None], Router]
"""A router for one task, given the task's recording LLM (None when no LLM is configured)."""
EventListener = Callable[[UnifiedTask, str], Awaitable[None] | None]

PLAN_PROMPT = """You plan tool use for an MCP gateway. Break the goal into the fewest steps, each one
tool call that a router will choose later. Available tools:
{tools}
Answer only with JSON: {{"steps": ["first step", "second step", ...]}} (at most {max_steps} steps)."""

REVISE_PROMPT = """You check a running plan. Goal: {goal}
Steps so far:
{steps}
{event}
Does the rest of the plan still fit? Answer only with JSON: {{"revise": false}}, or
{{"revise": true, "steps": ["step", ...]}} with the steps that replace every step not yet done."""

EVALUATE_PROMPT = """You judge whether a goal is achieved. Goal: {goal}
Steps so far:
{history}
Answer only with JSON: {{"done": true, "answer": "what was achieved, for the user"}} or
{{"done": false, "next_goal": "the goal of the next step"}}."""


class TaskCancelledError(Exception):
    """The task's cancel flag was found set between two steps."""


def result_text(result: types.CallToolResult) -> str:
    """A tool result as the text a model and a person read: its text parts, else its structured content."""
    texts = [part.text for part in result.content if isinstance(part, types.TextContent)]
    if texts:
        return "\n".join(texts)
    if result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return json.dumps(
        [part.model_dump(mode="json", exclude_none=True) for part in result.content], ensure_ascii=False
    )


def _history_view(record: StepRecord) -> dict[str, Any]:
    return {
        "index": record.index,
        "goal": record.goal,
        "tool": record.tool,
        "arguments": record.arguments,
        "ok": record.ok,
        "result": (record.result or "")[:600],
        "error": record.error,
    }


class McpExecutor:
    def __init__(
        self,
        *,
        make_router: RouterFactory,
        call_tool: ToolCaller,
        queue: TaskQueue,
        settings: ControlSettings,
        llm: LLMClientProtocol | None = None,
        tools: ToolSource | None = None,
        on_event: EventListener | None = None,
    ) -> None:
        self.make_router = make_router
        self.call_tool = call_tool
        self.queue = queue
        self.settings = settings
        self.llm = llm
        self.tools = tools
        self.on_event = on_event

    # -- the loop -------------------------------------------------------------------------

    async def execute(self, task: UnifiedTask) -> UnifiedTask:
        """Run `task` (RUNNING, claimed from the queue) until it finishes; saves it after every step."""
        settings = self.settings
        task.status = TaskStatus.RUNNING
        task.started_at = task.started_at or time.time()
        if task.deadline_at is None:
            task.deadline_at = task.started_at + settings.task_deadline
        llm = RecordingLLM(self.llm, task) if self.llm is not None else None
        router = self.make_router(llm)
        await self.emit(
            task, f"started ({task.mode}-driven)" + (f", resumed #{task.resumed}" if task.resumed else "")
        )
        try:
            while not task.status.finished:
                await self._check_bounds(task)
                if task.status.finished:
                    await self.queue.save(task)
                    break
                remaining = (task.deadline_at or 0) - time.time()
                try:
                    async with asyncio.timeout(remaining):
                        if task.mode == "plan":
                            await self._plan_iteration(task, router, llm)
                        else:
                            await self._goal_iteration(task, router, llm)
                except TimeoutError:
                    self._finish(
                        task,
                        TaskStatus.FAILED,
                        error=f"the task passed its deadline of {settings.task_deadline:g} s",
                    )
                await self.queue.save(task)
        except TaskCancelledError:
            self._finish(task, TaskStatus.CANCELLED, error="cancelled")
            await self.queue.save(task)
        await self.emit(task, f"{task.status}: {task.result or task.error or ''}".rstrip(": "))
        return task

    async def _check_bounds(self, task: UnifiedTask) -> None:
        if task.cancel_requested or await self.queue.cancel_requested(task.id):
            raise TaskCancelledError
        if task.deadline_at is not None and time.time() >= task.deadline_at:
            self._finish(
                task,
                TaskStatus.FAILED,
                error=f"the task passed its deadline of {self.settings.task_deadline:g} s",
            )
            return
        if len(task.history) >= self.settings.max_steps:
            self._finish(
                task,
                TaskStatus.FAILED,
                error=f"the task used its {self.settings.max_steps} steps (control.max_steps) without finishing",
            )

    @staticmethod
    def _finish(
        task: UnifiedTask, status: TaskStatus, *, result: str | None = None, error: str | None = None
    ) -> None:
        if task.status.finished:
            return
        task.status = status
        task.result = result if result is not None else task.result
        task.error = error
        task.finished_at = time.time()

    async def emit(self, task: UnifiedTask, message: str) -> None:
        if self.on_event is None:
            return
        try:
            outcome = self.on_event(task, message)
            if inspect.isawaitable(outcome):
                await outcome
        except Exception:  # a listener's failure must not fail the task
            logger.exception("task event listener failed")

    # -- plan-driven ------------------------------------------------------------------------

    async def _plan_iteration(self, task: UnifiedTask, router: Router, llm: RecordingLLM | None) -> None:
        if task.status.finished:
            return
        if task.plan is None:
            try:
                task.plan = await self._make_plan(task, llm)
            except (BadAnswerError, LLMError) as exc:
                self._finish(task, TaskStatus.FAILED, error=f"no plan: {exc}")
                return
            await self.emit(
                task,
                f"plan: {len(task.plan.steps)} steps: " + " | ".join(s.description for s in task.plan.steps),
            )
            return
        plan = task.plan
        step = plan.current_step
        if step is None:
            self._finish(task, TaskStatus.SUCCEEDED, result=self._plan_result(plan))
            return
        step.status = "running"
        record = await self._run_step(task, router, step.description, plan_step=step.index)
        step.attempts += 1
        if record.ok and record.tool is None and llm is None:
            # Only a model may judge a step done without a call: the rule router found nothing that fits.
            record.ok, record.error = False, f"no tool fits this step: {record.reasoning}"
        if record.ok:
            step.status = "done" if record.tool else "skipped"
            step.result = record.result if record.tool else record.reasoning
            step.error = None
            plan.current += 1
            await self.emit(task, self._step_message(record, plan))
            if plan.all_done:
                self._finish(task, TaskStatus.SUCCEEDED, result=self._plan_result(plan))
            elif llm is not None and plan.revisions < self.settings.max_revisions:
                await self._revise(
                    task, llm, f"Step {step.index + 1} just succeeded with: {(record.result or '')[:600]}"
                )
            return
        step.error = record.error
        await self.emit(task, self._step_message(record, plan))
        if step.attempts <= self.settings.step_retries:
            await asyncio.sleep(self.settings.retry_backoff * 2 ** (step.attempts - 1))
            return  # the same step again, routed with its failure in the history
        step.status = "failed"
        revisable = llm is not None and plan.revisions < self.settings.max_revisions
        event = f"Step {step.index + 1} failed {step.attempts} time(s): {record.error}"
        if revisable and llm is not None and await self._revise(task, llm, event, failed=True):
            return
        self._finish(
            task,
            TaskStatus.FAILED,
            error=f"step {step.index + 1} ({step.description}) failed: {record.error}",
        )

    async def _make_plan(self, task: UnifiedTask, llm: RecordingLLM | None) -> TaskPlan:
        if llm is None:
            return TaskPlan(steps=[PlanStep(index=0, description=task.goal)])
        # The same narrowing as the router's (search when there are many), so the plan names real tools.
        tools = select_tools(self.tools, task.goal, self.settings.max_tools) if self.tools is not None else []
        listing = "\n".join(
            f"- {t.tool_name}: {(t.description or '').splitlines()[0][:160] if t.description else ''}"
            for t in tools
        )
        llm.purpose = "plan"
        text = await llm.chat_completion(
            [
                {
                    "role": "system",
                    "content": PLAN_PROMPT.format(tools=listing or "(none)", max_steps=MAX_PLAN_STEPS),
                },
                {"role": "user", "content": task.goal},
            ]
        )
        llm.purpose = "route"
        steps = string_list(json_object(text, "plan").get("steps"), "steps", "plan")[:MAX_PLAN_STEPS]
        return TaskPlan(steps=[PlanStep(index=i, description=s) for i, s in enumerate(steps)])

    async def _revise(
        self, task: UnifiedTask, llm: RecordingLLM, event: str, *, failed: bool = False
    ) -> bool:
        """Ask whether the rest of the plan needs changing; True when it was revised."""
        plan = task.plan
        assert plan is not None
        steps = "\n".join(f"{s.index + 1}. [{s.status}] {s.description}" for s in plan.steps)
        llm.purpose = "revise"
        try:
            text = await llm.chat_completion(
                [{"role": "user", "content": REVISE_PROMPT.format(goal=task.goal, steps=steps, event=event)}]
            )
            answer = json_object(text, "revision")
            if not answer.get("revise"):
                return False
            new_steps = string_list(answer.get("steps"), "steps", "revision")
        except (BadAnswerError, LLMError) as exc:
            # The plan stays as it was: a bad revision answer must not stop a plan that works.
            task.exchanges[-1].error = task.exchanges[-1].error or str(exc)
            await self.emit(task, f"revision ignored: {exc}")
            return False
        finally:
            llm.purpose = "route"
        # Steps already run stay as they were (a failed one stays recorded as failed); the rest is replaced.
        kept = plan.steps[: plan.current + 1] if failed else plan.steps[: plan.current]
        plan.steps = kept + [PlanStep(index=len(kept) + i, description=d) for i, d in enumerate(new_steps)]
        plan.current = len(kept)
        plan.revisions += 1
        await self.emit(task, f"plan revised (#{plan.revisions}): " + " | ".join(new_steps))
        return True

    @staticmethod
    def _plan_result(plan: TaskPlan) -> str:
        done = [s for s in plan.steps if s.status == "done"]
        last = " ".join(done[-1].result.split()) if done and done[-1].result else None  # one line
        return f"{len(done)} of {len(plan.steps)} steps done" + (
            f"; last result: {last[:1000]}" if last else ""
        )

    @staticmethod
    def _step_message(record: StepRecord, plan: TaskPlan | None = None) -> str:
        where = (
            f"step {record.plan_step + 1}/{len(plan.steps)}"
            if plan is not None and record.plan_step is not None
            else f"step {record.index + 1}"
        )
        if not record.ok:
            return f"{where} failed (attempt {record.attempt}): {record.error}"
        if record.tool is None:
            return f"{where}: no tool needed ({record.reasoning})"
        return f"{where}: {record.tool} ok"

    # -- goal-driven ------------------------------------------------------------------------

    async def _goal_iteration(self, task: UnifiedTask, router: Router, llm: RecordingLLM | None) -> None:
        if task.status.finished:
            return
        goal = task.current_goal or task.goal
        record = await self._run_step(task, router, goal)
        await self.emit(task, self._step_message(record))
        if not record.ok:
            failures = 0
            for past in reversed(task.history):
                if past.ok or past.goal != goal:
                    break
                failures += 1
            if failures <= self.settings.step_retries:
                await asyncio.sleep(self.settings.retry_backoff * 2 ** (failures - 1))
                return
            self._finish(
                task, TaskStatus.FAILED, error=f"step {record.index + 1} ({goal}) failed: {record.error}"
            )
            return
        if record.tool is None:
            if any(r.ok and r.tool for r in task.history):
                self._finish(task, TaskStatus.SUCCEEDED, result=record.reasoning)
            else:
                self._finish(task, TaskStatus.FAILED, error=f"no tool fits the goal: {record.reasoning}")
            return
        if llm is None:
            self._finish(task, TaskStatus.SUCCEEDED, result=record.result)
            return
        history = "\n".join(
            f"- {r.tool or '(no tool)'} {json.dumps(r.arguments, ensure_ascii=False)} -> "
            + (f"ok: {(r.result or '')[:500]}" if r.ok else f"failed: {r.error}")
            for r in task.history[-self.settings.history or None :]
        )
        llm.purpose = "evaluate"
        try:
            text = await llm.chat_completion(
                [{"role": "user", "content": EVALUATE_PROMPT.format(goal=task.goal, history=history)}]
            )
            answer = json_object(text, "completion check")
            if answer.get("done"):
                self._finish(
                    task, TaskStatus.SUCCEEDED, result=str(answer.get("answer") or record.result or "done")
                )
                return
            next_goal = answer.get("next_goal")
            if not isinstance(next_goal, str) or not next_goal.strip():
                raise BadAnswerError(
                    f"the model's completion check says not done but gives no 'next_goal': {text[:200]!r}"
                )
        except (BadAnswerError, LLMError) as exc:
            self._finish(task, TaskStatus.FAILED, error=str(exc))
            return
        finally:
            llm.purpose = "route"
        task.current_goal = next_goal.strip()
        await self.emit(task, f"next goal: {task.current_goal}")

    # -- one step: route, call, record ---------------------------------------------------------

    async def _run_step(
        self, task: UnifiedTask, router: Router, goal: str, *, plan_step: int | None = None
    ) -> StepRecord:
        environment = {**self.settings.environment, **(task.context.get("environment") or {})}
        history = (
            [_history_view(r) for r in task.history[-self.settings.history :]]
            if self.settings.history
            else []
        )
        if task.mode == "plan" and task.goal != goal:
            environment = {"overall_goal": task.goal, **environment}
        attempt = 1 + sum(1 for r in task.history if r.goal == goal and r.plan_step == plan_step and not r.ok)
        record = StepRecord(index=len(task.history), goal=goal, plan_step=plan_step, attempt=attempt)
        task.history.append(record)
        started = time.monotonic()
        try:
            decision = await router.route(RouterContext(goal, record.index, history, environment))
        except LLMError as exc:
            record.error = f"the model could not be asked: {exc}"
            record.duration = round(time.monotonic() - started, 4)
            return record
        record.server_id, record.tool, record.arguments = (
            decision.server_id,
            decision.tool,
            decision.arguments,
        )
        record.confidence, record.reasoning = decision.confidence, decision.reasoning
        if decision.error is not None:
            record.error = decision.error
        elif decision.tool is None:
            record.ok = True
        else:
            await self._call(task, decision, record)
        record.duration = round(time.monotonic() - started, 4)
        return record

    async def _call(self, task: UnifiedTask, decision: RouterDecision, record: StepRecord) -> None:
        assert decision.tool is not None
        try:
            result = await self.call_tool(decision.tool, decision.arguments, task)
        except GatewayError as exc:
            record.error = f"{decision.tool}: {exc} (JSON-RPC {exc.code})"
            return
        text = result_text(result)
        if result.is_error:
            record.error = f"{decision.tool} answered an error: {text[:MAX_RESULT_CHARS]}"
            return
        record.ok = True
        record.result = text[:MAX_RESULT_CHARS]
