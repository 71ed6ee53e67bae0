"""Runs a step-list chain: each step's arguments filled from the input and earlier results, then
called through the gateway's whole pipeline as the chain's own caller.

Every inner call is an ordinary call of that client: validated, cached, rate limited, timed,
retried, routed with fallback, counted in metrics (docs/CHAINS.md). The chain stops at the first
step that fails (an error result, a refused or timed-out call, a template that cannot be
filled) and answers with an error naming the chain, the step and why; nothing after it runs.

Before the first step runs, every step's tool is looked up: a chain never half-runs because a
later step names a tool nobody lists. A chain that is already running in this call (a chain
called from code, or through call_tool, that reaches itself again) is refused.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import json
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from rapidfuzz import process

from mcp_nexus.config.chain_template import TemplateError, render
from mcp_nexus.config.chains import ChainConfig
from mcp_nexus.errors import GatewayError
from mcp_nexus.pipeline.call import Caller, ToolOutcome
from mcp_nexus.pipeline.result_value import ReadOffloaded, UnreadableResult, result_text, step_value
from mcp_nexus.pipeline.steps.offload import offloaded_success

CHAIN_META_KEY = "nexus/chain"
CHAIN_VIA = "chain"
"""`Caller.via` of a call a step-list chain makes."""
MAX_DEPTH = 8  # chains calling chains: deep enough for any composition, shallow enough to stop a runaway

CallThrough = Callable[[str, dict[str, Any], Caller], Awaitable[ToolOutcome]]

# The chains running in this task, outermost first: inner calls are awaited in the same task,
# so a chain reached again through another chain (or code) finds itself here.
_RUNNING: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("nexus_chains_running", default=())


@dataclass(frozen=True, slots=True)
class ChainContext:
    """What a running chain uses of the gateway (given as functions: chains never import the gateway)."""

    call: CallThrough  # one call through the whole pipeline (Gateway.call_tool)
    callable_now: Callable[[str], bool]  # listed, or a server still connecting may list it
    known_names: Callable[[], Iterable[str]]  # every listed name, for "did you mean"
    read_offloaded: ReadOffloaded | None  # an offloaded result's payload by file name


class StepFailed(Exception):
    """A step that ends the chain; the message names the step and why."""


def chain_error(name: str, message: str, step: dict[str, Any] | None = None) -> types.CallToolResult:
    meta: dict[str, Any] = {"chain": name}
    if step is not None:
        meta["failed_step"] = step
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"chain {name}: {message}")],
        is_error=True,
        _meta={CHAIN_META_KEY: meta},
    )


def answer_of(value: Any) -> types.CallToolResult:
    """A chain's `result` value as a tool result: a string as its text, anything else as JSON
    (and as structured content when it is an object)."""
    if isinstance(value, str):
        return types.CallToolResult(content=[types.TextContent(type="text", text=value)])
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    structured = value if isinstance(value, dict) else None
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured
    )


def _missing_tools(chain: ChainConfig, ids: list[str], context: ChainContext) -> str | None:
    for index, step in enumerate(chain.steps):
        if context.callable_now(step.tool):
            continue
        close = [
            match for match, _score, _i in process.extract(step.tool, list(context.known_names()), limit=3)
        ]
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        return (
            f"step {index + 1} ({ids[index]}) calls {step.tool!r}, which no server lists now{hint} "
            "(no step was run)"
        )
    return None


@contextlib.contextmanager
def enter_chain(name: str) -> Iterator[types.CallToolResult | None]:
    """Marks `name` as running in this task for the block; yields the refusal instead (the block
    must return it) when `name` is running already or chains are nested too deep."""
    running = _RUNNING.get()
    if name in running:
        yield chain_error(
            name, f"it is already running ({' -> '.join((*running, name))}): a chain cannot call itself"
        )
        return
    if len(running) >= MAX_DEPTH:
        yield chain_error(name, f"chains nested deeper than {MAX_DEPTH} ({' -> '.join(running)})")
        return
    token = _RUNNING.set((*running, name))
    try:
        yield None
    finally:
        _RUNNING.reset(token)


async def run_chain(
    name: str, chain: ChainConfig, arguments: dict[str, Any], caller: Caller, context: ChainContext
) -> types.CallToolResult:
    """Run `chain` for `caller`; a failure is an error result naming the step, never an exception."""
    with enter_chain(name) as refused:
        if refused is not None:
            return refused
        ids = chain.step_ids()
        missing = _missing_tools(chain, ids, context)
        if missing is not None:
            return chain_error(name, missing)
        # The caller's own identity (limits, cache scope, files), marked as a chain's call in
        # metrics, the recent-calls log and traces.
        inner = dataclasses.replace(caller, via=CHAIN_VIA)
        return await _run_steps(name, chain, ids, arguments, inner, context)


async def _run_steps(
    name: str,
    chain: ChainConfig,
    ids: list[str],
    arguments: dict[str, Any],
    caller: Caller,
    context: ChainContext,
) -> types.CallToolResult:
    results: dict[str, types.CallToolResult] = {}
    values: dict[str, Any] = {}
    scope = {"input": arguments, "steps": _LazyValues(results, values, context.read_offloaded)}
    ran: list[dict[str, Any]] = []
    last: types.CallToolResult | None = None
    for index, step in enumerate(chain.steps):
        step_id = ids[index]
        shown = {"step": index + 1, "id": step_id, "tool": step.tool}
        started = time.perf_counter()
        try:
            filled = render(step.arguments, scope)
            last = await _call(step.tool, filled, caller, context)
        except (StepFailed, TemplateError) as exc:
            return chain_error(name, f"step {index + 1} ({step_id}, {step.tool}): {exc}", shown)
        ran.append({**shown, "ms": round((time.perf_counter() - started) * 1000, 1)})
        results[step_id] = last
    try:
        answer = last if chain.result is None or last is None else answer_of(render(chain.result, scope))
    except (StepFailed, TemplateError) as exc:
        return chain_error(name, f"result: {exc}")
    assert answer is not None  # a chain has at least one step (config/chains.py)
    meta = dict(answer.meta or {})
    meta[CHAIN_META_KEY] = {"chain": name, "steps": ran}
    return answer.model_copy(update={"meta": meta})


async def _call(tool: str, arguments: Any, caller: Caller, context: ChainContext) -> types.CallToolResult:
    if not isinstance(arguments, dict):
        raise StepFailed(f"its arguments must be an object, got {type(arguments).__name__}")
    try:
        outcome = await context.call(tool, arguments, caller)
    except GatewayError as exc:
        raise StepFailed(exc.message) from None
    except MCPError as exc:
        raise StepFailed(exc.error.message) from None
    if not isinstance(outcome, types.CallToolResult):
        raise StepFailed("the tool asks the caller for input, which a chain cannot give")
    if outcome.is_error and not offloaded_success(outcome):
        raise StepFailed(f"the tool failed: {result_text(outcome) or '(no message)'}")
    return outcome


class _LazyValues(dict[str, Any]):
    """`steps.<id>` for templates: a step's data is read (and an offloaded file opened) only when
    a template asks for it, once."""

    def __init__(
        self,
        results: dict[str, types.CallToolResult],
        values: dict[str, Any],
        read_offloaded: ReadOffloaded | None,
    ) -> None:
        super().__init__()
        self._results = results
        self._values = values
        self._read = read_offloaded

    def __contains__(self, key: object) -> bool:
        return key in self._results

    def __getitem__(self, key: str) -> Any:
        if key not in self._values:
            try:
                self._values[key] = step_value(self._results[key], self._read)
            except UnreadableResult as exc:
                raise StepFailed(f"step {key!r} cannot be read: {exc}") from None
            except OSError as exc:
                raise StepFailed(f"step {key!r}: its offloaded result cannot be read: {exc}") from None
        return self._values[key]

    def __iter__(self) -> Any:
        return iter(self._results)

    def __len__(self) -> int:
        return len(self._results)
