"""Chains with a Python body (`code:`): run by code mode in the sandbox, the chain's arguments as
`input`, the tools callable from the code as from python_sandbox (docs/CHAINS.md, docs/SANDBOX.md).

Each call the code makes runs the whole pipeline as the chain's caller (marked via sandbox). The
answer is the value of a top-level `return` (a string as its text, anything else as JSON, an
object also as structured content) when the code printed nothing; otherwise what python_sandbox
would answer (its output, the returned value, notes on how the run ended). The chain's own
`tool_config.timeout`, when set, is the run's wall-clock limit (else `sandbox_timeout`).
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from mcp_nexus.chains.runner import CHAIN_META_KEY, answer_of, chain_error, enter_chain
from mcp_nexus.chains.serving import CodeRunner
from mcp_nexus.config.chains import ChainConfig
from mcp_nexus.pipeline.call import Caller
from mcp_nexus.pipeline.code_mode import CodeMode
from mcp_nexus.pipeline.sandbox_tool import sandbox_answer
from mcp_nexus.sandbox import SandboxError, SandboxUnavailableError


def code_chain_runner(code_mode: CodeMode) -> CodeRunner:
    """How `ChainTools` runs a chain whose body is Python."""

    async def run(
        name: str, chain: ChainConfig, arguments: dict[str, Any], caller: Caller
    ) -> types.CallToolResult:
        assert chain.code is not None
        timeout = chain.tool_config.get("timeout")
        with enter_chain(name) as refused:
            if refused is not None:
                return refused
            try:
                run = await code_mode.run(
                    chain.code, caller, inputs=arguments, timeout_s=float(timeout) if timeout else None
                )
            except SandboxUnavailableError as exc:
                return chain_error(name, f"its Python body cannot run here: {exc}")
            except SandboxError as exc:
                return chain_error(name, str(exc))
        if run.ok and run.returned and not run.result.stdout.strip():
            answer = answer_of(run.value)
        else:
            answer = sandbox_answer(run, code_mode.sandbox, chain.code)
            if answer.is_error:
                first = answer.content[0]
                assert isinstance(first, types.TextContent)
                first.text = f"chain {name}: its Python body failed:\n{first.text.lstrip()}"
        meta = dict(answer.meta or {})
        meta[CHAIN_META_KEY] = {"chain": name, "code": True, "tool_calls": run.tool_calls}
        return answer.model_copy(update={"meta": meta})

    return run
