"""The unified task, as the controller design has it: `UnifiedTask(task_type=MCP_CALL, execution_data, context)`,
its `TaskPlan` of `PlanStep`s, and the record of every step and LLM exchange.

Everything is a pydantic model so a task is saved whole (sqlite_queue.py) after every step
and resumes at its current step after a restart.
"""

from __future__ import annotations

import time
import uuid
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field


class TaskType(StrEnum):
    MCP_CALL = "mcp_call"


class TaskStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self in (TaskStatus.SUCCEEDED, TaskStatus.FAILED, TaskStatus.CANCELLED)


StepStatus = Literal["pending", "running", "done", "skipped", "failed"]


class PlanStep(BaseModel):
    index: int
    description: str
    status: StepStatus = "pending"
    attempts: int = 0
    result: str | None = None
    error: str | None = None


class TaskPlan(BaseModel):
    steps: list[PlanStep]
    current: int = 0  # index of the step to run next
    revisions: int = 0

    @property
    def all_done(self) -> bool:
        return self.current >= len(self.steps)

    @property
    def current_step(self) -> PlanStep | None:
        return None if self.all_done else self.steps[self.current]


class StepRecord(BaseModel):
    """One routed step: what was decided, what the call answered (a preview), how long it took."""

    index: int
    goal: str
    plan_step: int | None = None
    attempt: int = 1
    server_id: str | None = None
    tool: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)
    confidence: float = 0.0
    reasoning: str = ""
    ok: bool = False
    result: str | None = None
    error: str | None = None
    started_at: float = Field(default_factory=time.time)
    duration: float = 0.0


class LLMExchange(BaseModel):
    """One question to the model and its answer (or why there was none)."""

    purpose: Literal["plan", "route", "revise", "evaluate"]
    messages: list[dict[str, Any]]
    response: dict[str, Any] | None = None
    error: str | None = None
    started_at: float = Field(default_factory=time.time)
    duration: float = 0.0


class ExecutionData(BaseModel):
    goal: str = Field(min_length=1)
    user_intent: str | None = None


class UnifiedTask(BaseModel):
    id: str = Field(default_factory=lambda: uuid.uuid4().hex[:16])
    task_type: TaskType = TaskType.MCP_CALL
    execution_data: ExecutionData
    context: dict[str, Any] = Field(default_factory=dict)  # e.g. {"environment": {"devices": [...]}}
    mode: Literal["plan", "goal"] = "plan"
    status: TaskStatus = TaskStatus.PENDING
    plan: TaskPlan | None = None
    current_goal: str | None = None  # goal-driven mode: the goal of the next step
    history: list[StepRecord] = Field(default_factory=list)
    exchanges: list[LLMExchange] = Field(default_factory=list)
    result: str | None = None
    error: str | None = None
    cancel_requested: bool = False
    created_at: float = Field(default_factory=time.time)
    updated_at: float = Field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None
    deadline_at: float | None = None
    resumed: int = 0  # times the task was picked up again after a restart
    owner: str | None = None  # the caller identity that started it (frontend:client), e.g. "http:claude"
    profile: str | None = None  # the starter's profile (config `profiles:`): the task's calls stay in it

    @property
    def goal(self) -> str:
        return self.execution_data.goal

    def summary(self) -> dict[str, Any]:
        """What a list shows: no step details."""
        plan = self.plan
        return {
            "id": self.id,
            "goal": self.goal,
            "mode": self.mode,
            "owner": self.owner,
            "status": str(self.status),
            "steps": len(self.history),
            "plan": None
            if plan is None
            else {"current": plan.current, "total": len(plan.steps), "revisions": plan.revisions},
            "result": self.result,
            "error": self.error,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "finished_at": self.finished_at,
        }

    def view(self, *, exchanges: bool = True) -> dict[str, Any]:
        data = self.model_dump(mode="json")
        if not exchanges:
            data.pop("exchanges", None)
        return data
