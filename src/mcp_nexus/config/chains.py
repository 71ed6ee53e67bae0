"""`chains:` composite tools an operator writes in the config (docs/CHAINS.md).

    chains:
      commit_summary:
        description: The latest commit of a repository, with its diff.
        input_schema: {type: object, properties: {repo: {type: string}}, required: [repo]}
        steps:
          - id: log
            tool: git.git_log
            arguments: {repo_path: "{{ input.repo }}", max_count: 1}
          - tool: git.git_show
            arguments: {repo_path: "{{ input.repo }}", revision: "{{ steps.log.0.hash }}"}
        tool_config: {cache_ttl: 30, timeout: 20}

A chain is either `steps` (straight-line calls with argument templates, config/chain_template.py)
or `code` (a Python body run in the sandbox with the tools callable from it). What can be
checked without the servers running is checked here, at load: the name, each step's id,
every placeholder (its form, that `steps.<id>` names an earlier step, that `input.<key>` is
a property of the input schema when it declares properties) and that no chains call each
other in a cycle. Whether a step's tool exists is known only once the servers list their
tools: it is checked when the chain is called, for every step before the first one runs.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field, ValidationError, model_validator

from mcp_nexus.config.chain_template import TemplateError, placeholders
from mcp_nexus.config.schema_base import Strict

CHAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
STEP_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
# The gateway's own tools and namespace (catalog/tool_admission.py's GATEWAY_TOOL_NAMES; a test
# keeps the two in step): a chain may not take their names. Written out here because the
# config model must not import the catalog.
RESERVED_NAMES = frozenset({"python_sandbox", "find_tools", "call_tool"})
RESERVED_PREFIX = "nexus."


class ChainStep(Strict):
    """One call of a step-list chain: a tool (or another chain) and its arguments, templated."""

    tool: str = Field(min_length=1, description="the tool's exposed name, e.g. git.git_log, or a chain's")
    arguments: dict[str, Any] = Field(
        default_factory=dict,
        description="the tool's arguments; strings may hold {{ input.x }} / {{ steps.<id>.y }}",
    )
    id: str | None = Field(
        default=None, description="how later steps name this one's result; default step<N>"
    )


class ChainConfig(Strict):
    """A composite tool: listed and called like any tool, governed as a whole and per inner call."""

    description: str = Field(min_length=1, description="what the chain does, as a model reads it")
    input_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}, "additionalProperties": False},
        description="JSON Schema of the chain's arguments (validated before the chain runs)",
    )
    steps: list[ChainStep] = Field(default_factory=list, description="calls made in order")
    code: str | None = Field(
        default=None, description="a Python body run in the sandbox, with the tools callable from it"
    )
    result: Any = Field(
        default=None,
        description="what the chain answers, templated like arguments; default: the last step's result",
    )
    tool_config: dict[str, Any] = Field(
        default_factory=dict,
        description="governance of the chain call itself: cache_ttl, rate_limit, timeout, ... (CallPolicy keys)",
    )

    @model_validator(mode="after")
    def _check(self) -> ChainConfig:
        if bool(self.steps) == (self.code is not None):
            raise ValueError(
                "a chain needs 'steps' (a list of tool calls) or 'code' (a Python body): exactly one of them"
            )
        if self.input_schema.get("type", "object") != "object":
            raise ValueError(
                f"'input_schema' must describe an object (type: object), got type {self.input_schema.get('type')!r}"
            )
        ids = self.step_ids()
        declared = self.input_schema.get("properties")
        for index, step in enumerate(self.steps):
            _check_template(step.arguments, f"steps[{index}].arguments", ids[:index], declared)
        if self.result is not None:
            _check_template(self.result, "result", ids, declared)
        return self

    def step_ids(self) -> list[str]:
        """Each step's id: its own, else `step<N>` counted from 1; ValueError on a bad or repeated id."""
        ids: list[str] = []
        for index, step in enumerate(self.steps):
            given = step.id if step.id is not None else f"step{index + 1}"
            if not STEP_ID.fullmatch(given):
                raise ValueError(
                    f"steps[{index}].id: {given!r} is not an id (letters, digits and '_', not starting with a digit)"
                )
            if given in ids:
                raise ValueError(
                    f"steps[{index}].id: {given!r} is already the id of steps[{ids.index(given)}]"
                )
            ids.append(given)
        return ids


def _check_template(template: Any, where: str, earlier: list[str], declared: Any) -> None:
    try:
        found = list(placeholders(template))
    except TemplateError as exc:
        message = str(exc)  # "<where inside>: why", or "value: why" for a template that is one string
        inside = message.removeprefix("value: ")
        raise ValueError(f"{where}: {inside}" if inside != message else f"{where}.{message}") from None
    for inside, path in found:
        at = f"{where}.{inside}" if inside else where
        step = path.step
        if step is not None and step not in earlier:
            known = ", ".join(earlier) or "none yet"
            raise ValueError(
                f"{at}: {{{{ {path.text} }}}} names step {step!r}, which does not run before it "
                f"(earlier steps: {known})"
            )
        if path.root == "input" and path.segments and isinstance(declared, dict):
            key = path.segments[0]
            if key not in declared:
                keys = ", ".join(declared) or "none"
                raise ValueError(
                    f"{at}: {{{{ {path.text} }}}}: the input schema has no property {key!r} (it declares: {keys})"
                )


def check_chains(chains: dict[str, ChainConfig], policy_model: type[BaseModel]) -> dict[str, ChainConfig]:
    """Names usable as tool names, none of the gateway's own, each `tool_config` a valid
    `policy_model` (the schema's CallPolicy: passed in, as this module is imported by the schema),
    and no chains calling each other in a cycle."""
    for name, chain in chains.items():
        if not CHAIN_NAME.fullmatch(name):
            raise ValueError(
                f"chain {name!r}: a chain's name is its tool name: letters, digits, '_', '-' and '.', "
                "at most 128 characters, not starting with '.' or '-'"
            )
        if name in RESERVED_NAMES or name.startswith(RESERVED_PREFIX):
            raise ValueError(
                f"chain {name!r}: that name is the gateway's own (python_sandbox, find_tools, call_tool, nexus.*)"
            )
        try:
            policy_model.model_validate(chain.tool_config)
        except ValidationError as exc:
            problems = "; ".join(
                f"tool_config.{'.'.join(map(str, err['loc']))}: {err['msg'].replace('Value error, ', '')}"
                for err in exc.errors()
            )
            raise ValueError(f"chain {name!r}: {problems}") from None
    cycle = _cycle(chains)
    if cycle:
        raise ValueError(
            f"chains {' -> '.join(cycle)} call each other in a cycle: a chain may call another chain, never itself again"
        )
    return chains


def _cycle(chains: dict[str, ChainConfig]) -> list[str] | None:
    """The first cycle of chains calling chains (as a path that ends where it starts), or None."""
    calls = {name: [s.tool for s in chain.steps if s.tool in chains] for name, chain in chains.items()}
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> list[str] | None:
        if name in path:
            return [*path[path.index(name) :], name]
        if name in done:
            return None
        for callee in calls[name]:
            found = visit(callee, [*path, name])
            if found:
                return found
        done.add(name)
        return None

    for name in sorted(chains):
        found = visit(name, [])
        if found:
            return found
    return None
