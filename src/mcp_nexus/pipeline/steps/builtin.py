"""Nexus's own governance steps, declared as plugins' are (pyproject.toml, `mcp_nexus.steps`).

`order` is each one's place, outermost first; why this order is in governance.py. A plugin's
step names one of these in `before`/`after` (docs/PLUGINS.md).
"""

from __future__ import annotations

import mcp_types as types

from mcp_nexus.pipeline.call import Middleware
from mcp_nexus.pipeline.step_context import StepContext
from mcp_nexus.pipeline.steps.cache import CacheStep
from mcp_nexus.pipeline.steps.classify import ErrorStep
from mcp_nexus.pipeline.steps.offload import OffloadStep, offloaded_file
from mcp_nexus.pipeline.steps.ratelimit import RateLimitStep
from mcp_nexus.pipeline.steps.retry import RetryStep
from mcp_nexus.pipeline.steps.size_limit import SizeLimitStep
from mcp_nexus.pipeline.steps.timeout import TimeoutStep
from mcp_nexus.pipeline.steps.validate import ValidateStep
from mcp_nexus.plugins.specs import StepSpec


def _errors(context: StepContext) -> Middleware:
    return ErrorStep()


def _size_limit(context: StepContext) -> Middleware:
    from mcp_nexus.pipeline.governance import memoised_limits

    return SizeLimitStep(context.policies, context.offloader, memoised_limits(context.current))


def _cache(context: StepContext) -> Middleware:
    offloader = context.offloader

    def still_valid(result: types.CallToolResult) -> bool:
        name = offloaded_file(result)
        return name is None or (offloader is not None and offloader.folder.exists(name))

    return CacheStep(
        context.policies,
        context.store,
        still_valid=still_valid,
        upstreams=context.upstreams,
        lock_ttl=context.config.stores.cache_lock_ttl,
    )


def _validate(context: StepContext) -> Middleware:
    return ValidateStep(context.catalog)


def _rate_limit(context: StepContext) -> Middleware:
    settings = context.config.gateway
    return RateLimitStep(
        context.policies, caller_limit=settings.caller_rate_limit, limiter=context.stores.rate_limiter()
    )


def _offload(context: StepContext) -> Middleware | None:
    if context.offloader is None:
        return None  # no level turns offload on
    current = context.current
    return OffloadStep(context.policies, context.offloader, lambda: current().gateway.offload_media_threshold)


def _retry(context: StepContext) -> Middleware:
    return RetryStep(context.policies, backoff=context.config.gateway.retry_backoff)


def _timeout(context: StepContext) -> Middleware:
    return TimeoutStep(context.policies)


ERRORS = StepSpec("errors", _errors, order=0, chains=("tools", "requests"), description="classifies failures")
SIZE_LIMIT = StepSpec("size_limit", _size_limit, order=10, description="per-frontend result size")
CACHE = StepSpec("cache", _cache, order=20, description="result cache, merges identical calls")
VALIDATE = StepSpec("validate", _validate, order=30, description="arguments against the input schema")
RATE_LIMIT = StepSpec("rate_limit", _rate_limit, order=40, description="per tool, server and caller")
OFFLOAD = StepSpec("offload", _offload, order=50, description="large results to a file")
RETRY = StepSpec("retry", _retry, order=60, description="idempotent calls after a timeout")
TIMEOUT = StepSpec("timeout", _timeout, order=70, chains=("tools", "requests"), description="per attempt")
